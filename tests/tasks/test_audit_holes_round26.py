"""The twenty-sixth round's findings on their real tasks (``tests/fixtures/audit_tasks_round26.jsonl``,
a default run at ``9c7a4f3``, seed 26, stored without verifiers):

* helper DD, rideshare_dispatch-4c9202380efe: a trip cancelled at the rider's request with the
  reason "plans changed (per Aisha Reyes)" (the trip's driver), "Plans changed, Child Seat" or
  "plans changed. Dispatched" scored 1.0: the words of the trip's records passed as names of an
  attribution, a sign-off or the addressee. "(per Chloe Silva)", the rider who asked, scored 0.67,
  since a driver of another trip is a Silva too.
* helpers DB and DC, notes_desk-07f84a97bfa1: a new action item linked to a meeting note that
  never lists it scored 1.0 (the link was the agent's to make); the desk now refuses the link.
* helpers DB and DC, returns_desk-94dbe3d0f3b8: the dictated reason "ordered the wrong size"
  given as "Customer ordered the wrong size" or "Wei ordered the wrong size" (the customer is Wei
  Larsen) scored 0.67.
* helper DC, notes_desk-fde6352b7053: a JSON note with the true ``"previous_owner": "hana"``
  beside the asked new item's id, as the reassignment answered it, scored 0.8.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

CANCEL = "rideshare_dispatch-4c9202380efe"  # cancel the trip a colleague's mail names, at the rider's request
ITEM = "notes_desk-07f84a97bfa1"  # track an item, hand it over, note its id
RESULT = "item,value\nnew_action_item,AI-006\n"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round26.jsonl")


def _cancelled(reason: str) -> list[list[dict[str, Any]]]:
    return [
        [
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call(
                "rideshare_dispatch", "cancel_trip", trip_id="TRP-40642", cancelled_by="rider", reason=reason
            ),
        ]
    ]


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("plans changed", True),
        ("Plans changed.", True),
        ("plans changed (Chloe Silva)", True),  # the rider who asked
        ("plans changed (per Chloe Silva)", True),
        ("plans changed (per Ximena)", True),  # someone the world does not hold: a colleague
        ("plans changed (per Aisha Reyes)", False),  # the trip's driver did not ask
        ("plans changed (per Amara Silva)", False),  # another trip's driver
        ("Plans changed, Child Seat", False),  # the vehicle's feature is no one
        ("plans changed. Dispatched", False),  # the trip's status is no signature
        ("plans changed, Economy Comfort Available", False),
    ],
)
def test_an_attribution_names_who_asked_and_no_word_of_the_records(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (score(tasks[CANCEL], _cancelled(reason)) == 1.0) is paid


def _tracked(*, meeting: str | None) -> list[list[dict[str, Any]]]:
    linked = {"meeting": meeting} if meeting else {}
    return [
        [
            call("notes_desk", "read_file", path="inbox/shift-notes.md"),
            call("notes_desk", "add_action_item", title="Weekly sync notes", owner="bruno", due="2026-03-08",
                 **linked),
        ],
        [call("notes_desk", "reassign_action_item", item_id="AI-006", owner="goran")],
        [call("notes_desk", "write_file", path="handover/result.csv", content=RESULT)],
    ]  # fmt: skip


def test_an_item_linked_to_a_note_that_never_lists_it_is_not_the_work(tasks: dict[str, Task]) -> None:
    assert score(tasks[ITEM], _tracked(meeting=None)) == 1.0
    assert score(tasks[ITEM], _tracked(meeting="notes/2026-02-23-launch-review.md")) < 1.0


def _refunded(reason: str) -> list[list[dict[str, Any]]]:
    return [
        [
            call("returns_desk", "list_orders", customer_id="CUS-1002"),
            call("returns_desk", "cancel_order", order_id="ORD-100002", reason=reason),
        ]
    ]


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("ordered the wrong size", True),
        ("Customer ordered the wrong size", True),
        ("Wei ordered the wrong size", True),
        ("Wei Larsen ordered the wrong size", True),
        ("We ordered the wrong size", False),  # says the shop did
        ("Warehouse ordered the wrong size", False),
        ("Customer never ordered the wrong size", False),
    ],
)
def test_a_reason_may_say_the_customer_did_it(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    assert (score(tasks["returns_desk-94dbe3d0f3b8"], _refunded(reason)) == 1.0) is paid


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({}, True),
        ({"previous_owner": "hana"}, True),  # what the reassignment answered
        ({"previous_owner": "bruno"}, False),
        ({"owner": "goran"}, True),
        ({"owner": "hana"}, False),  # it was handed over
    ],
)
def test_a_note_may_say_what_a_call_on_the_asked_record_answered(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    note = json.dumps({"new_action_item": "AI-006", **extra})
    turns = [
        [
            call("notes_desk", "read_file", path="worklists/action-item-followups.csv"),
            call("notes_desk", "add_action_item", title="Budget draft", owner="hana", due="2026-03-08"),
        ],
        [call("notes_desk", "reassign_action_item", item_id="AI-006", owner="goran")],
        [call("notes_desk", "write_file", path="reports/handover.json", content=note)],
    ]
    assert (score(tasks["notes_desk-fde6352b7053"], turns) == 1.0) is paid
