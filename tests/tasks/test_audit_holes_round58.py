"""Classes found by the fifty-eighth blind audit (a run at ``659d0a6``, seed 58; the real tasks in
``tests/fixtures/audit_tasks_round58.jsonl``, stored without their verifiers):

* An aside was read by its words, not by what it says (R1, R2: 1.0): a memo's "(Columbus DC to
  Reno Overflow)" of a transfer out of Reno Overflow (the route reversed), "(Reno DC)" (the
  words of two warehouses' names mixed), a pause reason's "(payments partition 2)" on
  partition 1 (another record's number); where two calls passed the same reason, both checks
  read it with the first call's records, as the partition is a number and no text argument.
  The seek's own "(partition 0)" and "(offset 13)" scored 0.857.
* A new record's optional link was free (R3: 1.0): a to-do linked to a message the turn never
  named.
* "Answer that message, ..., and flag it" (R4: 0.179): "it" could be the message answered; and
  a draft flagged, then sent, lost its flag (``send_draft`` set the flags to ``["seen"]``).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, call, planned, score

LEDGER = "inventory_ledger-d75e6bf492f7"  # 1 unit from Reno Overflow (WH-RNX) to Columbus DC (WH-CMH)
STREAM = "event_stream-d43b1ad5f8ac"  # seek p0 to offset 13; pause p1, then p2, one reason
TODO = "mail_triage-547b518f71c6"  # a reply to MSG-0003; turn 2 adds a to-do of its own
REPLY = "itinerary_rebooking-a68d226edd44"  # answer MSG-0008 (the reply MSG-0010), flag the reply
MEMO = "Rebalance between warehouses"
PAUSED = "upstream schema change in progress"
SOUGHT = "reprocess the batch that failed"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round58.jsonl")


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        (MEMO, True),
        (f"{MEMO} (Reno Overflow to Columbus DC)", True),
        (f"{MEMO} (WH-RNX to WH-CMH)", True),
        (f"{MEMO} (from Reno Overflow)", True),
        (f"{MEMO} (Safety Glasses Tinted)", True),
        (f"{MEMO} (Columbus DC to Reno Overflow)", False),  # the route reversed
        (f"{MEMO} (WH-CMH to WH-RNX)", False),
        (f"{MEMO} (from Columbus DC)", False),
        (f"{MEMO} (Reno DC to Columbus DC)", False),  # no warehouse is Reno DC
        (f"{MEMO} (from Reno DC)", False),
        (f"{MEMO} - Reno Overflow -> Columbus DC", True),
        (f"{MEMO} - Columbus DC -> Reno Overflow", False),
        (f"{MEMO} (WH-CMH → WH-RNX)", False),
    ],
)
def test_an_aside_says_the_route_and_the_names_as_they_are(
    tasks: dict[str, Task], memo: str, paid: bool
) -> None:
    assert (said(tasks[LEDGER], "begin_transaction", "memo", memo) == 1.0) is paid


@pytest.mark.parametrize(
    ("nth", "reason", "paid"),
    [
        (0, f"{PAUSED} (payments partition 1)", True),
        (1, f"{PAUSED} (partition 2)", True),
        (0, f"{PAUSED} (payments partition 2)", False),  # partition 1's reason naming partition 2
        (0, f"{PAUSED} (payments partition 0)", False),
        (1, f"{PAUSED} (partition 1)", False),
    ],
)
def test_a_number_in_an_aside_is_its_own_records(
    tasks: dict[str, Task], nth: int, reason: str, paid: bool
) -> None:
    assert (said(tasks[STREAM], "set_partition_paused", "reason", reason, nth=nth) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        (f"{SOUGHT} (partition 0)", True),
        (f"{SOUGHT} (offset 13)", True),
        (f"{SOUGHT} (offset 12)", False),
        (f"{SOUGHT} (partition 1)", False),
    ],
)
def test_an_aside_may_number_the_record_by_the_calls_own_arguments(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (said(tasks[STREAM], "seek", "reason", reason) == 1.0) is paid


@pytest.mark.parametrize(("link", "paid"), [("", True), ("MSG-0009", False), ("MSG-0003", False)])
def test_a_new_records_link_names_a_record_of_its_turn_or_none(
    tasks: dict[str, Task], link: str, paid: bool
) -> None:
    task = tasks[TODO]
    i = [i for i, c in enumerate(task.reference.calls) if c.tool == "add_todo"][1]  # turn 2's own to-do
    assert (score(task, reference(task, {i: {"message_id": link}})) == 1.0) is paid


def test_a_flag_after_a_reply_names_the_reply(tasks: dict[str, Task]) -> None:
    texts = [" ".join(goal.text for goal in goals) for goals in planned(tasks[REPLY], pointed=True).turns]
    assert "flag your new message" in texts[2], texts
    assert "flag it" not in texts[2], texts


def test_a_draft_flagged_then_sent_stays_flagged(tasks: dict[str, Task]) -> None:
    task = tasks[REPLY]
    turns = reference(task, {})
    send, flag = turns[2][-2], turns[2][-1]
    assert (send["tool"], flag["tool"]) == ("send_draft", "flag_message")
    turns[2][-2:] = [call("mail_triage", "flag_message", **flag["args"]), send]
    assert score(task, turns) == 1.0
