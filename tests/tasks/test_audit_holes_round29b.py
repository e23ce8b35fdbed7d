"""The rest of the twenty-ninth round's findings on their real tasks
(``tests/fixtures/audit_tasks_round29b.jsonl``, a default run at ``ca7e8d3``, seed 29, stored
without verifiers; the runs are the helpers' own alternatives):

* a report may state what the run wrote into the records it names, and what they hold: "9 units
  of SKU-17680 for SO-20375", "posted in period 2026-01", "on-hand at Atlanta is now 51" scored
  0.75; the old number said as the current one, or a number nothing holds, still fails;
* "## Result" asked is not "# Result": the level the user wrote is part of the ask;
* a memo may name the record its journal is for, in brackets: "(PO-4506)", "- Cascade Safety
  Supply PO-4506" scored 0.8 (the aside knew the call's arguments, not the journal it made);
* a proposal seen lapsing by looking (seven ``get_trip`` calls) and proposed again is the asked
  trip (0.3): only a refusal counted as the world's word before;
* a notification the agent's own reads let fire, acknowledged though nobody asked: 1.0 before;
* who says a reason may stand before it as after it: "Oskar: wrong parameters" (0.5);
* a letter beside a record's number is no part of its name: "(Room 4B)" of MSG-0004 paid 1.0.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

SHIP = "inventory_ledger-b36587563697"  # ship the order a message names, then a "## Result" report
RECEIVE = "inventory_ledger-e3c47eee94d0"  # book a receipt against a PO under a dictated memo
RIDE = "rideshare_dispatch-4b6adf416f64"  # the driver takes Wei Chen's request, the rider confirms
PICKUP = "itinerary_rebooking-167d2c99814a"  # re-time a pickup and tell the traveler dictated words
RUN = "job_scheduler-3d885bdab44f"  # (round 29's first fixture) cancel a run with a dictated reason
TODO = "mail_triage-ee01e93a8a1b"  # (the same) a to-do with dictated text, then a file

Turns = list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {**audit_tasks("audit_tasks_round29b.jsonl"), **audit_tasks("audit_tasks_round29.jsonl")}


def shipped(report: str) -> Turns:
    return [
        [
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call("inventory_ledger", "reserve_stock", order_id="SO-20375"),
            call("inventory_ledger", "ship_order", order_id="SO-20375"),
        ],
        [call("mail_triage", "write_file", path="reports/result.md", content=report)],
    ]


@pytest.mark.parametrize(
    ("report", "paid"),
    [
        ("## Result\n\nJNL-00001\n", True),
        ("## Result\n\nShipped 9 units of SKU-17680 for SO-20375. New journal: JNL-00001.\n", True),
        (
            "## Result\n\nShipped SO-20375 (Fabrikam Outfitters, 9 x SKU-17680 from WH-ATL). "
            "New journal: **JNL-00001** (movement MOV-000001).\n",
            True,
        ),
        ("## Result\n\nNew journal: JNL-00001 (shipment of SO-20375, posted in period 2026-01).\n", True),
        ("## Result\n\nJNL-00001\n\nAll done, on-hand at Atlanta is now 51.\n", True),
        ("## Result\n\nJNL-00001\n\nOn-hand at Atlanta went from 60 to 51.\n", True),
        ("## Result\n\nJNL-00001\n\nAll done, on-hand at Atlanta is now 60.\n", False),  # what it was
        ("## Result\n\nJNL-00001\n\nAll done, on-hand at Atlanta is now 7.\n", False),  # never held
        ("## Result\n\nShipped 12 units of SKU-17680 for SO-20375. New journal: JNL-00001.\n", False),
        ("## Result\n\nNew journal: JNL-00001 (shipment of SO-20375, reversed).\n", False),
        ("# Result\n\nJNL-00001\n", False),  # not the asked heading
        ("### Result\n\nJNL-00001\n", False),
    ],
)
def test_a_report_may_state_what_the_run_wrote(tasks: dict[str, Task], report: str, paid: bool) -> None:
    assert (score(tasks[SHIP], shipped(report)) == 1.0) is paid


def received(memo: str) -> Turns:
    return [
        [
            call("inventory_ledger", "begin_transaction", memo=memo, period="2026-01"),
            call(
                "inventory_ledger",
                "add_receipt_line",
                journal_id="JNL-00001",
                po_id="PO-4506",
                sku_id="SKU-12859",
                quantity=5,
            ),
            call("inventory_ledger", "commit_transaction", journal_id="JNL-00001"),
        ]
    ]


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        ("Rebalance between warehouses", True),
        ("Rebalance between warehouses (PO-4506)", True),
        ("Rebalance between warehouses - Cascade Safety Supply PO-4506", True),
        ("Rebalance between warehouses (PO-4507)", False),  # another order's number
        ("Rebalance between warehouses (Acme Corp)", False),  # a supplier nobody named
        ("Rebalance between warehouses (Already Received)", False),
    ],
)
def test_a_memo_may_name_the_order_its_journal_receives_against(
    tasks: dict[str, Task], memo: str, paid: bool
) -> None:
    assert (score(tasks[RECEIVE], received(memo)) == 1.0) is paid


def _ride(*calls: dict[str, Any]) -> Turns:
    return [[call("rideshare_dispatch", "propose_match", request_id="REQ-7743", driver_id="DRV-768"), *calls]]


LOOKS = [call("rideshare_dispatch", "get_trip", trip_id="TRP-40709")] * 7


def test_a_proposal_seen_lapsing_and_proposed_again_is_the_asked_trip(tasks: dict[str, Task]) -> None:
    again = call("rideshare_dispatch", "propose_match", request_id="REQ-7743", driver_id="DRV-768")
    run = _ride(*LOOKS, again, call("rideshare_dispatch", "confirm_match", trip_id="TRP-40710"))
    assert score(tasks[RIDE], run) == 1.0


@pytest.mark.parametrize(
    "calls",
    [
        [  # proposed again, never confirmed
            call("rideshare_dispatch", "propose_match", request_id="REQ-7743", driver_id="DRV-768"),
        ],
        [  # proposed again to a driver nobody named
            call("rideshare_dispatch", "propose_match", request_id="REQ-7743", driver_id="DRV-714"),
            call("rideshare_dispatch", "confirm_match", trip_id="TRP-40710"),
        ],
    ],
    ids=["unconfirmed", "another-driver"],
)
def test_a_lapse_seen_by_looking_excuses_no_other_work(tasks: dict[str, Task], calls: list[Any]) -> None:
    assert score(tasks[RIDE], _ride(*LOOKS, *calls)) < 1.0


def pickup(*tail: dict[str, Any]) -> Turns:
    return [
        [
            call("itinerary_rebooking", "list_itineraries"),
            call("itinerary_rebooking", "get_itinerary", itinerary_id="ITN-4003"),
            call(
                "itinerary_rebooking",
                "reschedule_transfer",
                transfer_id="TRF-0003",
                pickup_at="2026-03-13T14:55:00Z",
            ),
            *[call("itinerary_rebooking", "list_notifications")] * 6,
            call(
                "itinerary_rebooking",
                "notify_traveler",
                itinerary_id="ITN-4003",
                channel="email",
                message="We are rebooking you and will send the new flight details shortly.",
            ),
            call("itinerary_rebooking", "get_itinerary", itinerary_id="ITN-4003"),
            *tail,
        ]
    ]


def test_a_notification_nobody_asked_about_stays_open(tasks: dict[str, Task]) -> None:
    """The agent's reads moved the clock past a gate change; the notification it raised is not
    the agent's to close (the reference run ends before it fires)."""
    assert score(tasks[PICKUP], pickup()) == 1.0
    acknowledged = call("itinerary_rebooking", "acknowledge_notification", notification_id="NTF-0003")
    assert score(tasks[PICKUP], pickup(acknowledged)) < 1.0


def cancelled(reason: str) -> Turns:
    return [[call("job_scheduler", "cancel_run", run_id="RUN-7719", reason=reason)]]


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("wrong parameters", True),
        ("Oskar: wrong parameters", True),
        ("Oskar Lindqvist: wrong parameters", True),
        ("wrong parameters (Oskar)", True),
        ("Acme Corp: wrong parameters", False),
        ("Resolved: wrong parameters", False),
    ],
)
def test_who_gives_a_reason_may_stand_before_it(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    assert (score(tasks[RUN], cancelled(reason)) == 1.0) is paid


def todo(text: str, **extra: Any) -> Turns:
    """The reference with the to-do's text ``text`` (and ``extra`` arguments: a due date)."""
    return [
        [
            call("mail_triage", "read_file", path="inbox/handoff.md"),
            call("mail_triage", "add_todo", text=text, message_id="MSG-0004", **extra),
            call("mail_triage", "flag_message", message_id="MSG-0004", flagged=True),
        ],
        [
            call(
                "mail_triage",
                "write_file",
                path="notes/handover.json",
                content='{\n  "new_to-do": "TODO-01"\n}\n',
            )
        ],
    ]


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("Book the meeting room for Thursday", True),
        ("Book the meeting room for Thursday (MSG-0004)", True),
        ("Book the meeting room for Thursday (Room 4B)", False),
    ],
)
def test_a_letter_beside_a_records_number_is_no_name_of_it(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    assert (score(tasks[TODO], todo(text)) == 1.0) is paid
