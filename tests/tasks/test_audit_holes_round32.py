"""Classes found by the blind audits and fixed in the thirty-second round, each on its real task.

* A to-do given a due date nobody asked for (rounds 29 and 30: 0.8, 0.714): the record's check
  leaves the optional field free, but todo.md, which the environment renders from the record,
  shows "(due 2026-01-15)" beside the dictated words, and the file's check pinned the reference's
  rendering. What the environment renders of an optional field the user never named is free in
  the file as in the record; the words around the dictated ones are read as before.
* A JSON key that names an act says what the act did (round 30, H3: 1.0): "booked_sessions"
  holding the four sessions of a new series, of which the member got only the first, passed
  because the series holds all four. Such a key now holds only records the act named, or that a
  record it made holds (the booking it made is for the first session).

The thirty-second round's findings, on its real tasks (``tests/fixtures/audit_tasks_round32.jsonl``,
a default run at ``2566e65``, seed 32, stored without verifiers):

* A note nobody dictated hands work on in its own words (J1: six cover notes of a forward at
  0.6 and 0.8): "Passing this on for follow-up.", "Please follow up on this one." and "Please
  handle this escalated message." failed a closed vocabulary; a claim or a retraction still fails.
* An asked JSON object may repeat what the records its records name hold (J2: 0.8): the
  customer of the return's order.
* An aside after dictated words names records, it does not count (J3: 1.0): "Smooth pickup,
  rider wait 30 minutes" on a trip with no wait; "(trip 40631)" and "(Jan 5 07:00)" still name.
* A number the environment counts is free in a file it renders, as in the record (J3: 0.833): a
  rule added, removed by mistake and added again leaves the recipe at version 3 in lineage.json.

And the thirty-third round's (``tests/fixtures/audit_tasks_round33.jsonl``, a default run at
``da675cf``, seed 33, stored without verifiers):

* An asked section may name the file the environment keeps the record in, and say what did not
  happen (K1: 0.75): "TODO-01, added to todo.md, still open"; "TODO-01 (open, no due date)" of a
  to-do with no due date. "TODO-01: not created" still fails, and so does a due date it has not.
* A dictated note may be labelled as any note is (K2: 0.0): "Update: Rollback approved by the
  change manager." as "Note: ..." was.
* A key naming the new record's kind is no act (K3: 0.75): "cleaning_recipe" beside the asked
  "new_cleaning_recipe", as "recipe" and "created_recipe" were.

And the thirty-fourth round's (``tests/fixtures/audit_tasks_round34.jsonl``, a default run at
``7af1087``, seed 34, stored without verifiers):

* A surname's particle is part of the name a greeting gives (L4: 0.5): "Hi Ines van Dijk,".
* A report's label may name the record by its kind before the field (L2: 0.875): "Recipe
  version: 14" of the recipe at version 14, though the datasets have a ``recipe_version`` of 0;
  the version it held before ("Recipe version: 13") still fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round29b import todo
from .test_audit_holes_round30 import series
from .test_created_records import audit_tasks, call, score

Turns = list[list[dict[str, Any]]]
TODO = "mail_triage-ee01e93a8a1b"  # (round 29) a to-do with dictated text on a flagged message, then a file
SERIES = "class_booking-6ff8ee43f74d"  # (round 30) a weekly series; sign a member up; the ids in a JSON file
FORWARD = "mail_triage-472ddea5f59f"  # pass the escalated message on to Customer Operations, then its id
RETURN = "returns_desk-793f470c9b65"  # take a damaged return of an order a mail names and refund it
SETTLE = "rideshare_dispatch-e14940f55dab"  # complete a trip, record the driver's 1-star rating and comment
RECIPE = "sheet_analytics-70d7e3bd34c6"  # create a cleaning recipe, then add a rule to it
STATUS = "mail_triage-f60d3ca5d524"  # (round 33) add a to-do, then its id in a "## Result" section
NOTE = "infra_recovery-d671392b1b23"  # (round 33) a dictated note on the open incident's timeline
CEDAR = "sheet_analytics-e8b0a350241e"  # (round 33) create a recipe, then its id in a JSON file
EMAIL = "itinerary_rebooking-3ead719ac6a2"  # (round 34) email the traveler dictated words
VERSIONS = "sheet_analytics-85b2acbdc849"  # (round 34) rerun, remove a rule, an item, then versions


@pytest.fixture(scope="module")
def round29() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round29.jsonl")


@pytest.fixture(scope="module")
def round30() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round30.jsonl")


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round32.jsonl")


@pytest.fixture(scope="module")
def round33() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round33.jsonl")


@pytest.fixture(scope="module")
def round34() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round34.jsonl")


@pytest.mark.parametrize(
    ("text", "extra", "paid"),
    [
        ("Book the meeting room for Thursday", {"due_date": "2026-01-15"}, True),
        ("Book the meeting room for Thursday", {"due_date": "2026-01-08"}, True),
        ("Book the meeting room for Thursday", {}, True),
        # the words in the text itself are the record's text, which is checked as dictated
        ("Book the meeting room for Thursday, due 2026-01-15", {}, False),
        ("Book the meeting room for Friday", {"due_date": "2026-01-15"}, False),
        ("Do not book the meeting room for Thursday", {"due_date": "2026-01-15"}, False),
    ],
)
def test_an_optional_field_the_env_renders_is_free_in_its_file(
    round29: dict[str, Task], text: str, extra: dict[str, Any], paid: bool
) -> None:
    assert (score(round29[TODO], todo(text, **extra)) == 1.0) is paid


ALL = ["CLS-30063", "CLS-30064", "CLS-30065", "CLS-30066"]  # only CLS-30063 opens for booking yet


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({}, True),
        ({"booked_sessions": ["CLS-30063"]}, True),
        ({"booked_session": "CLS-30063"}, True),
        ({"sessions": ALL}, True),  # what the series holds, claiming nothing of them
        ({"created_sessions": ALL}, True),  # the series the run created made them
        ({"booked_sessions": ALL}, False),
        ({"booked_session": "CLS-30064"}, False),
        ({"cancelled_sessions": ["CLS-30064"]}, False),
    ],
)
def test_a_key_naming_an_act_holds_what_the_act_did(
    round30: dict[str, Task], extra: dict[str, Any], paid: bool
) -> None:
    booked = call("class_booking", "book_series", member_id="MEM-2018", series_id="SER-802")
    assert (score(round30[SERIES], series(booked, extra)) == 1.0) is paid


def forwarded(note: str) -> Turns:
    return [
        [
            call("mail_triage", "read_file", path="logs/alerts.log"),
            call(
                "mail_triage",
                "draft_forward",
                message_id="MSG-0001",
                to=["Customer Operations <cs-team@northwind.example>"],
                body=note,
            ),
            call("mail_triage", "send_draft", draft_id="MSG-0010"),
        ],
        [
            call(
                "mail_triage",
                "write_file",
                path="handover/result.json",
                content='{"new_message": "MSG-0010"}',
            )
        ],
    ]


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Hi team,\n\nPassing this escalated message on to you for follow-up.\n\nThanks,\nAlex", True),
        ("Passing this on for follow-up.", True),
        ("Please follow up on this one.", True),
        ("Hi team,\n\nplease handle this escalated message.\n\nThanks,\nAlex", True),
        ("Escalated, follow-up required.", True),
        ("Please ignore this, no action needed.", False),
        ("Lena already has the number, no action needed.", False),
        ("Approved by finance, please pay.", False),
        ("Passing this on, it was resolved yesterday.", False),
    ],
)
def test_a_note_nobody_dictated_hands_work_on_in_its_own_words(
    tasks: dict[str, Task], note: str, paid: bool
) -> None:
    assert (score(tasks[FORWARD], forwarded(note)) == 1.0) is paid


def returned(answer: dict[str, Any]) -> Turns:
    return [
        [
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call(
                "returns_desk",
                "open_return",
                order_id="ORD-100002",
                sku="EL-1003",
                quantity=1,
                reason="no_longer_needed",
            ),
            call("returns_desk", "receive_return", return_id="RMA-00002", condition="damaged"),
            call("returns_desk", "issue_refund", return_id="RMA-00002"),
        ],
        [call("mail_triage", "write_file", path="reports/result.json", content=json.dumps(answer))],
    ]


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({"customer_id": "CUS-1002"}, True),  # the customer of the return's order
        ({"order_id": "ORD-100002", "customer_id": "CUS-1002"}, True),
        ({"customer_id": "CUS-1003"}, False),  # another customer
        ({"order_id": "ORD-100004"}, False),  # the customer's other order
    ],
)
def test_an_asked_object_may_repeat_what_its_records_records_hold(
    tasks: dict[str, Task], extra: dict[str, Any], paid: bool
) -> None:
    answer = {"new_return": "RMA-00002", "new_refund": "RF-00001", **extra}
    assert (score(tasks[RETURN], returned(answer)) == 1.0) is paid


def settled(comment: str) -> Turns:
    return [
        [
            call("rideshare_dispatch", "list_trips"),
            call("rideshare_dispatch", "complete_trip", trip_id="TRP-40631"),
            call(
                "rideshare_dispatch",
                "rate_trip",
                trip_id="TRP-40631",
                rated_by="driver",
                stars=1,
                comment=comment,
            ),
        ]
    ]


@pytest.mark.parametrize(
    ("comment", "paid"),
    [
        ("Smooth pickup.", True),
        ("Smooth pickup (trip TRP-40631)", True),
        ("Smooth pickup (trip 40631)", True),
        ("Smooth pickup, rider wait 30 minutes", False),
        ("Smooth pickup, 1-star rider, wait 10 minutes", False),
        ("Smooth pickup (30 minutes)", False),
    ],
)
def test_an_aside_names_records_and_counts_nothing(tasks: dict[str, Task], comment: str, paid: bool) -> None:
    assert (score(tasks[SETTLE], settled(comment)) == 1.0) is paid


def recipe(*rule_calls: dict[str, Any]) -> Turns:
    return [[call("sheet_analytics", "create_recipe", name="Northwind review")], list(rule_calls)]


RULE = {"recipe_id": "RCP-03", "operation": "drop_invalid", "column": "rep"}


def test_a_number_the_env_counts_is_free_in_the_file_it_renders(tasks: dict[str, Task]) -> None:
    added = call("sheet_analytics", "add_cleaning_rule", **RULE)
    removed = call("sheet_analytics", "remove_cleaning_rule", recipe_id="RCP-03", rule_no=1)
    assert score(tasks[RECIPE], recipe(added)) == 1.0
    assert score(tasks[RECIPE], recipe(added, removed, added)) == 1.0
    other = call("sheet_analytics", "add_cleaning_rule", **{**RULE, "column": "region"})
    assert score(tasks[RECIPE], recipe(added, other)) < 1.0  # another rule is another recipe


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- new_to-do: TODO-01", True),
        ("TODO-01 — added to todo.md, still open.", True),
        ("- TODO-01: Call back about the order (open, no due date)", True),
        ("- TODO-01 (no source message)", True),
        ("- TODO-01: not created", False),
        ("- TODO-01 (open, due 2026-01-20)", False),  # a due date it does not have
        ("TODO-01 — added to inbox.md, still open.", False),  # a file the run never wrote
    ],
)
def test_a_section_may_name_the_records_file_and_what_did_not_happen(
    round33: dict[str, Task], result: str, paid: bool
) -> None:
    turns = [
        [call("mail_triage", "add_todo", text="Call back about the order")],
        [call("mail_triage", "write_file", path="handover/status.md", content=f"## Result\n\n{result}\n")],
    ]
    assert (score(round33[STATUS], turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Rollback approved by the change manager.", True),
        ("Note: Rollback approved by the change manager.", True),
        ("Update: Rollback approved by the change manager.", True),
        ("Update: Rollback not approved by the change manager.", False),
        ("Rejected: Rollback approved by the change manager.", False),
    ],
)
def test_a_dictated_note_may_be_labelled_as_any_note_is(
    round33: dict[str, Task], note: str, paid: bool
) -> None:
    turns = [
        [
            call("infra_recovery", "list_services"),
            call("infra_recovery", "append_ops_note", incident_id="INC-2041", note=note),
        ]
    ]
    assert (score(round33[NOTE], turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({"cleaning_recipe": "RCP-03"}, True),
        ({"recipe": "RCP-03"}, True),
        ({"cleaning_recipe": "RCP-01"}, False),  # the old recipe: a second answer
    ],
)
def test_a_key_naming_the_new_records_kind_is_no_act(
    round33: dict[str, Task], extra: dict[str, Any], paid: bool
) -> None:
    answer = {"new_cleaning_recipe": "RCP-03", **extra}
    turns = [
        [call("sheet_analytics", "create_recipe", name="Cedar team")],
        [call("sheet_analytics", "write_file", path="handover/handover.json", content=json.dumps(answer))],
    ]
    assert (score(round33[CEDAR], turns) == 1.0) is paid


CHANGED = "Your trip has changed; please check the new itinerary in your app."


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (f"Hi Ines van Dijk, {CHANGED}", True),
        (f"Dear Ms van Dijk,\n\n{CHANGED}", True),
        (f"Dear Ines van Dijk, {CHANGED} Kind regards, Travel Desk", True),
        (f"Hi Ines van Houten, {CHANGED}", False),  # another name
        (f"{CHANGED} van", False),
    ],
)
def test_a_surnames_particle_is_part_of_the_name(round34: dict[str, Task], message: str, paid: bool) -> None:
    turns = [
        [
            call("itinerary_rebooking", "list_itineraries"),
            call(
                "itinerary_rebooking",
                "notify_traveler",
                itinerary_id="ITN-4001",
                channel="email",
                message=message,
            ),
        ]
    ]
    assert (score(round34[EMAIL], turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- Raw dataset version: 2\n- Recipe version: 14\n- Action item: AI-005", True),
        ("- Raw dataset version: 2\n- Cleaning recipe version: 14\n- Action item: AI-005", True),
        ("- Raw dataset version: 2\n- Recipe version: 13\n- Action item: AI-005", False),  # before
        ("- Raw dataset version: 2\n- Recipe version: 15\n- Action item: AI-005", False),
    ],
)
def test_a_label_may_name_the_record_by_its_kind(round34: dict[str, Task], result: str, paid: bool) -> None:
    turns = [
        [call("sheet_analytics", "register_dataset", path="data/sales_2025Q2.csv", schema_name="sales")],
        [
            call("sheet_analytics", "read_file", path="inbox/escalation.md"),
            call("sheet_analytics", "rerun_stage", dataset_id="DS-009"),
            call("sheet_analytics", "remove_cleaning_rule", recipe_id="RCP-01", rule_no=13),
            call(
                "notes_desk",
                "add_action_item",
                title="Recipe RCP-01: Weekly sync notes",
                owner="emil",
                due="2026-03-11",
            ),
        ],
        [call("sheet_analytics", "write_file", path="notes/result.md", content=f"## Result\n{result}\n")],
    ]
    assert (score(round34[VERSIONS], turns) == 1.0) is paid
