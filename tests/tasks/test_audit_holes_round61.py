"""Classes found by the sixty-first blind audit (a run at ``8109613``, seed 61; the real task in
``tests/fixtures/audit_tasks_round61.jsonl``, stored without its verifier):

* "draft a forward of the flagged message to the same address as before" after a forward to two
  addresses (R3: the blind play forwarded to both, 0.8): either address was "the one before".
* A status written with a capital to start its cell ("Cancelled" of a cancelled run; R2: 0.875).
* A key of an asked JSON object that says what happened in the user's words, where the world
  times it (``"closed_action_item"`` of the item ``complete_action_item`` closed, which has a
  ``closed_at``; R1: 0.833), and one naming a record the asked one leads to by its kind
  (``"rider": "Fatima Silva"`` beside the new trip, whose request is hers; R3: 0.833).
* A forward's cover note nobody dictated, "Hi team, forwarding this again for visibility." (R3:
  0.8), and ``tasks score --explain`` reading the second draft's file where the check does (it
  blamed the first draft's "To:" line, which names two recipients).
* The report of a trip proposed again after the first proposal lapsed names the new trip, which
  the world numbered TRP-40500 (R3: 0.833: the driver's active trip was read back unrenamed).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier.explain import explain_trajectory

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, planned, score

FORWARD = "mail_triage-b6ccccc23bee"  # forward MSG-0004 to ops@ and cs-team@, then again to cs-team@ alone
STATUS = "job_scheduler-0bcbeb00cd5f"  # RUN-7478 cancelled; its status in handover/handover.csv
CLOSED = "notes_desk-6e187a660bd4"  # close AI-003, add AI-005; {"new_action_item": "AI-005"}
RIDER = "rideshare_dispatch-6bbca8143253"  # trip TRP-40499 for REQ-5406 of RID-3242 (Fatima Silva)


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round61.jsonl")


def test_an_address_said_again_is_the_same_address_only_where_one_was_said(tasks: dict[str, Task]) -> None:
    texts = [" ".join(goal.text for goal in goals) for goals in planned(tasks[FORWARD], pointed=True).turns]
    assert "the same address as before" not in texts[1], texts
    assert "cs-team@northwind.example" in texts[1], texts


@pytest.mark.parametrize(("status", "paid"), [("cancelled", True), ("Cancelled", True), ("Running", False)])
def test_a_status_may_start_its_cell_with_a_capital(tasks: dict[str, Task], status: str, paid: bool) -> None:
    content = f"item,value\nrun_status,{status}\n"
    assert (said(tasks[STATUS], "write_file", "content", content) == 1.0) is paid


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({"closed_action_item": "AI-003"}, True),
        ({"done_action_item": "AI-003"}, True),
        ({"closed_item": "AI-003"}, True),
        ({"completed_action_item": "AI-003"}, True),
        ({"closed_action_item": "AI-005"}, False),  # the new item is open
        ({"closed_action_item": "AI-001"}, False),  # never closed by the run
        ({"open_action_item": "AI-003"}, False),
    ],
)
def test_a_key_may_say_what_happened_in_the_users_words(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    content = json.dumps({"new_action_item": "AI-005", **extra})
    assert (said(tasks[CLOSED], "write_file", "content", content) == 1.0) is paid


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({"rider": "Fatima Silva"}, True),
        ({"rider": "RID-3242"}, True),
        ({"driver": "Kenji Chen"}, True),
        ({"request": "REQ-5406"}, True),
        ({"rider": "Fatima Chen"}, False),  # another rider
        ({"rider": "RID-5002"}, False),
        ({"driver": "Fatima Silva"}, False),  # the rider is no driver
    ],
)
def test_a_key_may_name_a_record_the_asked_one_leads_to(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    content = json.dumps({"new_trip": "TRP-40499", "driver_active_trip_id": "TRP-40499", **extra})
    assert (said(tasks[RIDER], "write_file", "content", content) == 1.0) is paid


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Hi team, forwarding this again for visibility.", True),
        ("FYI, for your awareness.", True),
        ("Hi team, forwarding this again: please refund the customer.", False),
        ("Please ignore this one, sent by mistake.", False),
    ],
)
def test_a_cover_note_nobody_dictated_may_pass_a_forward_on_again(
    tasks: dict[str, Task], note: str, paid: bool
) -> None:
    assert (said(tasks[FORWARD], "draft_forward", "body", note, nth=1) == 1.0) is paid


def test_explain_reads_the_draft_the_check_reads(tasks: dict[str, Task]) -> None:
    task = tasks[FORWARD]
    second = [i for i, c in enumerate(task.reference.calls) if c.tool == "draft_forward"][1]
    run = reference(task, {second: {"body": "Forwarding this for the zebra."}})
    score, why = explain_trajectory(task, run)
    assert score.score < 1.0
    failed = [c for c in why.checks or [] if not c["passed"]]
    assert [c["name"] for c in failed] == ["file mail/drafts/MSG-0011.eml written"], failed
    assert "zebra" in failed[0]["had"] and "To:" not in failed[0]["expected"], failed


def lapsed_and_proposed_again(task: Task, content: str) -> list[list[dict[str, Any]]]:
    """The reference with the proposal left to lapse (reads until the hold is over), the
    confirmation refused, the proposal made again (TRP-40500) and confirmed, and ``content``
    written as the report."""
    turns = reference(task, {})
    first = turns[0]
    propose = next(c for c in first if c["tool"] == "propose_match")
    at = first.index(propose)
    wait = [{"env": "rideshare_dispatch", "tool": "get_trip", "args": {"trip_id": "TRP-40499"}}] * 8
    again = [
        {"env": "rideshare_dispatch", "tool": "confirm_match", "args": {"trip_id": "TRP-40499"}},
        propose,
        {"env": "rideshare_dispatch", "tool": "confirm_match", "args": {"trip_id": "TRP-40500"}},
    ]
    turns[0] = first[: at + 1] + wait + again
    turns[1] = [{**turns[1][0], "args": {**turns[1][0]["args"], "content": content}}]
    return turns


@pytest.mark.parametrize(
    ("trip", "active", "paid"),
    [
        ("TRP-40500", "TRP-40500", True),
        ("TRP-40499", "TRP-40499", False),  # the proposal that lapsed
        ("TRP-40500", "TRP-40499", False),
    ],
)
def test_a_report_names_the_trip_proposed_again_by_its_new_id(
    tasks: dict[str, Task], trip: str, active: str, paid: bool
) -> None:
    task = tasks[RIDER]
    content = json.dumps({"new_trip": trip, "driver_active_trip_id": active})
    assert (score(task, lapsed_and_proposed_again(task, content)) == 1.0) is paid
