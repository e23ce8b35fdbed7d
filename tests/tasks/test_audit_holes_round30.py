"""The thirtieth round's findings on their real tasks (``tests/fixtures/audit_tasks_round30.jsonl``,
a default run at ``e1f34cf``, seed 30, stored without verifiers; the runs are the helpers' own):

* a booking into an old class beside the asked new series paid 1.0: a new record's field that
  names another record the run made (the first class of the new series) says which one it is
  for, whatever id the run gave it, and is no bookkeeping to drop;
* a completion note nobody dictated may say anything but another person, another record or
  another end of the work: "Done by amara", "Cancelled", "Duplicate of AI-659" paid 1.0;
* a sentence of its own around dictated words may tell what the run did, in the world's words
  ("Your airport transfer now picks you up at 12:25 UTC on 13 March.", "Safe travels!": 0.667),
  never another time, another record or a sending;
* a slow but correct run lets the clock end other drivers' shifts, as it ends the ones a
  reference-length run sees (0.5 after 120 lookups);
* an asked JSON object may repeat what the call that made the asked record answered ("record":
  the incident's file) and a number its record holds at any depth ("quantity": 1): 0.75, 0.833.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

SERIES = "class_booking-6ff8ee43f74d"  # a weekly series with the escalated coach; sign a member up
ITEM = "notes_desk-75a6351e6cbe"  # close the flagged action item as done by emil, refresh the export
PICKUP = "itinerary_rebooking-6c7c8bc71f7b"  # re-time a pickup, text the traveler dictated words
SETTLE = "rideshare_dispatch-a186c0559c78"  # complete a trip and record the driver's rating
MOVE = "inventory_ledger-4dbbfa0c5fbe"  # a transfer between warehouses, then its journal's id as JSON
INCIDENT = "infra_recovery-0c278a30c2e8"  # open an incident, then its id as JSON

Turns = list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round30.jsonl")


def series(booking: dict[str, Any], extra: dict[str, Any] | None = None) -> Turns:
    """The reference with its booking call ``booking`` (and ``extra`` keys in the handover)."""
    handover = {"new_booking": "BKG-50057", "new_weekly_series": "SER-802", **(extra or {})}
    return [
        [
            call("mail_triage", "read_file", path="logs/coach-watch.log"),
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call(
                "class_booking",
                "create_series",
                class_type="vinyasa-yoga",
                room_id="RM-13",
                coach_id="COA-105",
                first_start="2026-01-10T11:00:00Z",
                weeks=4,
            ),
            booking,
        ],
        [call("mail_triage", "write_file", path="handover/handover.json", content=json.dumps(handover))],
    ]


def test_a_booking_beside_a_new_series_is_for_its_class(tasks: dict[str, Task]) -> None:
    asked = call("class_booking", "book_series", member_id="MEM-2018", series_id="SER-802")
    assert score(tasks[SERIES], series(asked)) == 1.0
    for old in ("CLS-30034", "CLS-30024"):  # an old vinyasa class of the same coach, of another
        booked = call("class_booking", "book_class", member_id="MEM-2018", session_id=old)
        assert score(tasks[SERIES], series(booked)) < 1.0, old


def closed(note: str) -> Turns:
    return [
        [
            call("notes_desk", "reassign_action_item", item_id="AI-005", owner="emil"),
            call("notes_desk", "complete_action_item", item_id="AI-005", note=note),
            call("notes_desk", "export_action_items"),
        ]
    ]


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Done by emil", True),
        ("Done by Emil Sorensen", True),
        ("Completed by Emil", True),
        ("emil did it in the end", True),
        ("Closed: emil confirmed the rollback plan with support", True),
        ("Done by amara", False),  # another member
        ("Done by dana", False),
        ("Cancelled", False),  # another end of the work
        ("Support rejected the rollback plan", False),
        ("Duplicate of AI-659", False),  # another record
    ],
)
def test_a_note_nobody_dictated_names_nothing_else(tasks: dict[str, Task], note: str, paid: bool) -> None:
    assert (score(tasks[ITEM], closed(note)) == 1.0) is paid


DICTATED = "Your trip has changed; please check the new itinerary in your app."


def texted(message: str) -> Turns:
    return [
        [
            call("itinerary_rebooking", "list_itineraries"),
            call("itinerary_rebooking", "get_itinerary", itinerary_id="ITN-4006"),
            call(
                "itinerary_rebooking",
                "reschedule_transfer",
                transfer_id="TRF-0005",
                pickup_at="2026-03-13T12:25:00Z",
            ),
            call(
                "itinerary_rebooking",
                "notify_traveler",
                itinerary_id="ITN-4006",
                channel="sms",
                message=message,
            ),
        ]
    ]


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ("", True),
        (" Safe travels!", True),
        (" Your airport transfer now picks you up at 12:25 UTC on 13 March.", True),
        (" Your transfer pickup has been moved.", True),
        (" Your airport transfer now picks you up at 12:15.", False),  # the time it was
        (" Your airport transfer now picks you up at 14:00.", False),
        (" Your flight has been cancelled.", False),
        (" Your hotel has been moved.", False),  # nothing done to it
        (" Your transfer pickup has not been moved.", False),
        (" We have notified the driver.", False),
    ],
)
def test_a_sentence_may_tell_what_was_done(tasks: dict[str, Task], extra: str, paid: bool) -> None:
    assert (score(tasks[PICKUP], texted(DICTATED + extra)) == 1.0) is paid


def test_a_slow_run_lets_the_clock_end_other_shifts(tasks: dict[str, Task]) -> None:
    """120 lookups take an hour of the dispatch clock: five more drivers go offline at their
    shifts' ends, as the ones a reference-length run sees do."""
    settle = [
        call("rideshare_dispatch", "complete_trip", trip_id="TRP-40635"),
        call(
            "rideshare_dispatch",
            "rate_trip",
            trip_id="TRP-40635",
            rated_by="driver",
            stars=2,
            comment="Smooth pickup.",
        ),
    ]
    assert score(tasks[SETTLE], [[*[call("rideshare_dispatch", "list_trips")] * 120, *settle]]) == 1.0


def moved(result: dict[str, Any]) -> Turns:
    return [
        [
            call("mail_triage", "read_file", path="worklists/sku-followups.csv"),
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call(
                "inventory_ledger",
                "begin_transaction",
                memo="Cover demand at the other site",
                period="2026-01",
            ),
            call(
                "inventory_ledger",
                "add_transfer_line",
                journal_id="JNL-00001",
                sku_id="SKU-17126",
                from_warehouse_id="WH-ATL",
                to_warehouse_id="WH-RNX",
                quantity=1,
            ),
            call("inventory_ledger", "commit_transaction", journal_id="JNL-00001"),
        ],
        [call("mail_triage", "write_file", path="notes/result.json", content=json.dumps(result))],
    ]


def opened(result: dict[str, Any]) -> Turns:
    return [
        [
            call("infra_recovery", "read_file", path="worklists/service-review.csv"),
            call(
                "infra_recovery",
                "open_incident",
                service_id="payments-gateway",
                severity="sev3",
                title="One replica down, reduced capacity",
            ),
        ],
        [call("infra_recovery", "write_file", path="notes/handover.json", content=json.dumps(result))],
    ]


def test_an_asked_object_may_repeat_what_its_record_holds_and_its_call_answered(
    tasks: dict[str, Task],
) -> None:
    journal = {"new_journal": "JNL-00001", "sku_id": "SKU-17126", "from": "WH-ATL", "to": "WH-RNX"}
    assert score(tasks[MOVE], moved({**journal, "quantity": 1})) == 1.0
    assert score(tasks[MOVE], moved({**journal, "quantity": 2})) < 1.0
    assert (
        score(tasks[INCIDENT], opened({"new_incident": "INC-2042", "record": "ops/incident-INC-2042.md"}))
        == 1.0
    )
    assert (
        score(tasks[INCIDENT], opened({"new_incident": "INC-2042", "record": "ops/incident-INC-2041.md"}))
        < 1.0
    )
