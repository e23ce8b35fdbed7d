"""Classes found by the fiftieth blind audit (a run at ``75d252d``, seed 50; the real tasks in
``tests/fixtures/audit_tasks_round50.jsonl``, stored without verifiers), each on its real task:

* A note nobody dictated may not take the work back or say it goes on: "Closed by mistake" of
  an item the run closed, "Still in progress" of one it marked done (R3: 1.0 each).
* A dictated text belongs to the record it was dictated for: "Agreed with finance on Tuesday."
  on the other new item, or on the existing item closed in turn 1 (R3: 1.0 each).
* A message may name its trip by the reference the user named it by, in brackets or on a line
  of its own: "(booking BNDXOZ)", "Booking reference: BNDXOZ." (R1: 0.833 each).
* A key of an asked JSON object named for a kind the run acted on names what it acted on:
  ``"host": "auth-b1"`` beside the new incident, when the run drained auth-a1 (R4: 1.0).
* A record named in one turn is not "that recipe" in a later one where the work made another of
  its kind before: "Create a cleaning recipe called “Blue Harbor”. After that remove rule 1 from
  the cleaning recipe “Quarterly sales cleanup”." then "Add a trim rule ... to that cleaning
  recipe" (R2: the new recipe read, 0.009); naming it again would repeat a value, so no plan
  says it.
"""

from __future__ import annotations

import json

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import Unnameable

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, planned, score

ITEMS = "notes_desk-fdb9d7ad4de5"  # AI-006 handed on and closed; two items tracked, handed on, closed
TRIP = "itinerary_rebooking-e1d493cdff4c"  # a pickup moved, an email, then a text message
INCIDENT = "infra_recovery-c4d4952f9d54"  # an incident opened, a host drained, its id in a JSON file
RECIPES = "sheet_analytics-be97a9c45ca1"  # a recipe made, another edited, then edited again

DICTATED = "Agreed with finance on Tuesday."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round50.jsonl")


@pytest.mark.parametrize(
    ("nth", "note", "paid"),
    [
        (0, "Handed over to bruno, done.", True),
        (0, "Done as agreed.", True),  # one word of the dictated note is a note's own
        (0, "Closed by mistake", False),
        (0, "Closed accidentally", False),
        (0, DICTATED, False),  # dictated for Onboarding checklist, not for AI-006
        (1, "Done.", True),
        (1, "Still in progress", False),
        (1, DICTATED, False),  # ... nor for Budget draft
        (2, DICTATED, True),
        (2, f"{DICTATED} Still in progress", False),
    ],
)
def test_a_note_nobody_dictated_may_not_take_back_or_borrow(
    tasks: dict[str, Task], nth: int, note: str, paid: bool
) -> None:
    assert (said(tasks[ITEMS], "complete_action_item", "note", note, nth) == 1.0) is paid


SMS = "Your trip has changed; please check the new itinerary in your app"


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        (f"{SMS} (booking BNDXOZ).", True),
        (f"{SMS} (booking reference BNDXOZ).", True),
        (f"{SMS}. Booking reference: BNDXOZ.", True),
        (f"{SMS} (booking XQ4ZZZ).", False),  # no reference of this trip
        (f"{SMS} (booking cancelled).", False),
        (f"{SMS}. Status: cancelled.", False),
    ],
)
def test_a_message_may_name_its_trip_by_its_reference(tasks: dict[str, Task], text: str, paid: bool) -> None:
    assert (said(tasks[TRIP], "notify_traveler", "message", text, 1) == 1.0) is paid


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({}, True),
        ({"host": "auth-a1"}, True),
        ({"drained_host": "auth-a1"}, True),
        ({"service": "auth-service"}, True),
        ({"host": "auth-b1"}, False),  # the service's other host, which the run left alone
        ({"drained_host": "auth-b1"}, False),
    ],
)
def test_a_key_named_for_a_kind_names_what_the_run_acted_on(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    task = tasks[INCIDENT]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "write_file"]
    content = json.dumps({"new_incident": "INC-2042", **extra})
    assert (score(task, reference(task, {i: {"content": content}})) == 1.0) is paid


def test_that_recipe_is_not_said_in_a_later_turn_where_the_one_made_could_be_meant(
    tasks: dict[str, Task],
) -> None:
    with pytest.raises(Unnameable, match="could be the one made before"):
        planned(tasks[RECIPES])
