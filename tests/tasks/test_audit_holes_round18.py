"""The eighteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round18.jsonl``,
a default run at ``8d572b5``, seed 18), each verifier synthesized again by this checkout:

* helper VC: the asked timeline entry written by hand with a made-up 2019 time, or put above the
  entry it follows, scored 1.0: the file check compares lines with their times taken out. A
  timeline or log the golden run appends dated lines to is now checked in time order, each new
  entry no earlier than the last one there (``runtime.in_time_order``);
* helper VA: a look-alike action item's due date read "2026-03-04 5": dates that differ across
  every record were taken for handles that a copy must not repeat (``distractors._unique_strings``);
  and a worklist of owners per new item listed, as the decoy row, the title of the item the job
  had just completed ("the owner that the CSV gives for that action item" pointed at both);
* helper VA: a true extra key in the asked JSON report, the new draft's subject, scored 0.8: the
  draft's own record keeps its subject in its file (empty in the state), so the thread's subject
  read as a contradiction (``runtime.object_matches``: one asked record holding the value is
  enough, and an empty field tells nothing).
"""

from __future__ import annotations

import json

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.world.distractors import _unique_strings
from envcraft.tasks.world.hiding import _row_of

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference

TIMELINE = "ops/incident-INC-2041.md"
OPENED = "- 2026-02-17T02:04:00Z opened by on-call: error rate alert\n"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round18.jsonl")


@pytest.mark.parametrize(
    ("new", "paid"),
    [
        (OPENED + "- 2026-02-17T02:12:00Z Priority for this week.\n", True),  # appended now, by hand
        (OPENED + "- 2019-01-01T00:00:00Z Priority for this week.\n", False),  # back-dated
        ("- 2026-02-17T02:12:00Z Priority for this week.\n" + OPENED, False),  # above the entry it follows
    ],
)
def test_a_timeline_entry_written_by_hand_keeps_time(tasks: dict[str, Task], new: str, paid: bool) -> None:
    """infra_recovery-ec632a6a92b2: "Add the note “Priority for this week.” to the incident that
    the escalation note flags" (append_ops_note appends a dated line to the timeline)."""
    task = tasks["infra_recovery-ec632a6a92b2"]
    assert score(task, reference(task)) == 1.0
    assert OPENED in task.workspace[TIMELINE]
    edit = {"path": TIMELINE, "old": OPENED, "new": new}
    turns = [[{"env": "infra_recovery", "tool": "read_file", "args": {"path": "shift/escalation.md"}}]]
    turns[0].append({"env": "infra_recovery", "tool": "edit_file", "args": edit})
    assert (score(task, turns) == 1.0) is paid


def test_dates_that_differ_across_records_are_no_handles(tasks: dict[str, Task]) -> None:
    items = tasks["notes_desk-e2b8808706f0"].initial_state["notes_desk"]["items"]
    originals = {k: v for k, v in items.items() if k != "AI-584"}  # without the round's look-alike
    assert len({v["due"] for v in originals.values()}) == len(originals)  # every due date differs
    assert "due" not in _unique_strings(originals)


def test_a_worklist_of_new_items_lists_no_item_the_job_names(tasks: dict[str, Task]) -> None:
    """notes_desk-e2b8808706f0: turn 1 completes AI-003 ("Add a dashboard panel for queue
    latency"); turn 2's new item takes its owner from a worklist by title, whose other row was
    AI-003's title."""
    task = tasks["notes_desk-e2b8808706f0"]
    state = task.initial_state["notes_desk"]
    add = next(c for c in task.reference.calls if c.tool == "add_action_item")
    call = GoldenCall(add.env, add.tool, dict(add.args), {k: "user" for k in add.args}, {})
    book = phrasebook(load_package("notes_desk"))
    keyed = _row_of(call, book, state, named={"AI-003", *map(str, add.args.values())})
    assert keyed is not None
    row, field, collection, rows = keyed
    assert (row, field, collection) == ("Onboarding checklist", "title", "items")
    assert state["items"]["AI-003"]["title"] not in rows and rows


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({}, True),
        ({"subject": "Ops sync moved to Wednesday"}, True),  # the draft's subject, as it is
        ({"subject": "Ops sync cancelled"}, False),  # another subject: a claim
        ({"new_message_2": "MSG-0002"}, False),  # a second id of the asked kind
    ],
)
def test_a_true_extra_key_in_the_asked_report_is_paid(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    """mail_triage-d031ce925e4c: "Draft a new message to Operations ... with the subject “Ops
    sync moved to Wednesday” ... save a JSON object in handover/summary.json with “new_message”
    ... and “new_conversation” ..."."""
    task = tasks["mail_triage-d031ce925e4c"]
    turns = reference(task)
    write = next(c for c in turns[-1] if c["tool"] == "write_file")
    asked = json.loads(write["args"]["content"])
    write["args"]["content"] = json.dumps({**asked, **extra})
    assert (score(task, turns) == 1.0) is paid
