"""Classes found by the sixty-second blind audit (a run at ``300308f``, seed 62; the real tasks in
``tests/fixtures/audit_tasks_round62.jsonl``, stored without their verifiers):

* A note written into a new incident's timeline by hand, dated an hour before the incident was
  opened (R2: 1.0 for the wrong run): a timeline the run made keeps time as one it extends does.
* Dictated words joined by a hyphen where the user set them apart, or the other way round
  ("Month end stock correction" of "Month-end ..."; "in-progress" of "in progress"; R1: 0.8,
  R4: 0.5), in a dictated reason and in a composed memo alike.
* The id of the record a memo is about after the dictated words with a space or a colon
  ("Inbound delivery PO-4939"; R3: 0.875), as "(PO-4939)" and "- PO-4939" already were.
* A composed to-do naming the message it is linked to ("..., re MSG-0009"; R3: 0.75), and one
  given a due date nobody asked for, which the to-do's file renders (R3: 0.875).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said, score
from .test_created_records import audit_tasks

TIMELINE = "infra_recovery-0097bfe18343"  # open INC-2042 at 02:11, then note "Support reports ..."
MEMO = "returns_desk-dca7df5a72f4"  # journal memo "Return RMA-00002: Month-end stock correction"
REASON = "event_stream-ea931a2a2130"  # pause refunds p0: "upstream schema change in progress"
RECEIPT = "inventory_ledger-4addba4c83e1"  # journal memo "Inbound delivery", a receipt against PO-4939
TODO = "notes_desk-cf0ee065c095"  # to-do "Item AI-006: Check the invoice totals" linked to MSG-0009
NOTE = "Support reports customers seeing checkout errors."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round62.jsonl")


@pytest.mark.parametrize(
    ("moment", "paid"),
    [
        ("2026-02-17T02:15:00Z", True),  # now: the file the tool writes
        ("2026-02-17T01:00:00Z", False),  # before the incident was opened
        ("2026-02-16T23:59:00Z", False),
    ],
)
def test_a_note_written_into_a_new_timeline_keeps_its_time(
    tasks: dict[str, Task], moment: str, paid: bool
) -> None:
    task = tasks[TIMELINE]
    turns = reference(task, {})
    [(turn, at)] = [
        (t, k) for t, calls in enumerate(turns) for k, c in enumerate(calls) if c["tool"] == "append_ops_note"
    ]
    turns[turn][at] = {
        "env": "infra_recovery",
        "tool": "edit_file",
        "args": {
            "path": "ops/incident-INC-2042.md",
            "old": "\n\n## Root cause",
            "new": f"\n- {moment} {NOTE}\n\n## Root cause",
        },
    }
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        ("Return RMA-00002: Month end stock correction", True),
        ("Month end stock correction RMA-00002", True),
        ("Month-end stock correction (RMA-00002)", True),
        ("Return RMA-00002: Month end stock count", False),
        ("Return RMA-00002: Year end stock correction", False),
        ("Return RMA-00002: No month end stock correction", False),
    ],
)
def test_a_hyphen_between_dictated_words_changes_nothing_in_a_composed_memo(
    tasks: dict[str, Task], memo: str, paid: bool
) -> None:
    assert (said(tasks[MEMO], "begin_transaction", "memo", memo) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("upstream schema change in-progress", True),
        ("Upstream schema-change in progress", True),
        ("upstream schema change not in-progress", False),
        ("upstream schema change done", False),
    ],
)
def test_a_hyphen_between_dictated_words_changes_nothing_in_a_reason(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (said(tasks[REASON], "set_partition_paused", "reason", reason) == 1.0) is paid


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        ("Inbound delivery PO-4939", True),
        ("Inbound delivery: PO-4939", True),
        ("Inbound delivery (PO-4939)", True),
        ("Inbound delivery PO-4940", False),  # no record of the call's
        ("Inbound delivery SO-20551", False),  # another turn's order
        ("Inbound delivery cancelled", False),
        ("Inbound delivery PO-4939 PO-4939", False),
    ],
)
def test_the_id_a_memo_is_about_may_follow_the_dictated_words(
    tasks: dict[str, Task], memo: str, paid: bool
) -> None:
    assert (said(tasks[RECEIPT], "begin_transaction", "memo", memo) == 1.0) is paid


@pytest.mark.parametrize(
    ("args", "paid"),
    [
        ({"text": "Check the invoice totals - action item AI-006, re MSG-0009"}, True),
        ({"text": "Check the invoice totals (AI-006)", "due_date": "2026-03-02"}, True),
        ({"text": "Check the invoice totals - action item AI-006, re MSG-0003"}, False),  # another message
        ({"text": "Check the invoice totals - action item AI-006, approved by finance"}, False),
    ],
)
def test_a_to_do_may_name_its_message_and_carry_a_due_date(
    tasks: dict[str, Task], args: dict[str, Any], paid: bool
) -> None:
    task = tasks[TODO]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "add_todo"]
    assert (score(task, reference(task, {i: args})) == 1.0) is paid
