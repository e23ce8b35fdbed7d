"""Classes found by the fifty-third blind audit (a run at ``dea1760``, seed 53; the real tasks in
``tests/fixtures/audit_tasks_round53.jsonl``, stored without verifiers), each on its real task:

* Words that point at a record lengthen no aside: "About your trip booked under reference
  4LB9MP: <the words>" scored 0.5 where "Your trip booked under reference 4LB9MP: ..." paid (R4).
* A profile of the sheet the work cleans is a look: it writes down what it found
  (``profiled_sha``), as a message read gains "seen" (R3: 0.5 and 0.25 for profiling before a
  clean, as the docs say to); a profile of a sheet nobody asked about is still a change (rounds
  41-51 labelled it wrong).
* A journal line's note is the agent's to write or leave (R3: "Shelf check: 2 boxes damaged"
  scored 0.333 where the line's note was pinned to ""), and a note that takes the line back
  still fails.
* An id in a CSV row may be written in another case ("ai-006" of AI-006; R1: 0.833).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, score

ABOUT = "itinerary_rebooking-c717c65e4a08"  # email the traveller of trip 4LB9MP a dictated line
PROFILE = "sheet_analytics-03467d6d1399"  # a rule added, two cleans, a rerun, a handover
LINE = "inventory_ledger-11cc17be6857"  # a journal of one adjustment line, committed
ROW = "notes_desk-a4349c55719e"  # an item added and handed over; a CSV row names it
WORDS = "Please call the travel desk if anything about your trip is unclear."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round53.jsonl")


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (f"Your trip booked under reference 4LB9MP: {WORDS}", True),
        (f"About your trip booked under reference 4LB9MP: {WORDS}", True),
        (f"Re your trip booked under reference 4LB9MP: {WORDS}", True),
        (f"About your trip booked under reference 4LB9MP: {WORDS} Your flight is cancelled.", False),
        (f"About your trip: do not {WORDS[0].lower()}{WORDS[1:]}", False),
    ],
)
def test_pointing_words_lengthen_no_aside(tasks: dict[str, Task], message: str, paid: bool) -> None:
    assert (said(tasks[ABOUT], "notify_traveler", "message", message) == 1.0) is paid


@pytest.mark.parametrize(
    ("dataset", "paid"),
    [
        ("DS-007", True),  # the sheet the user asked to clean: "Profile before cleaning"
        ("DS-008", True),
        ("DS-004", False),  # the Q4 sheet nobody asked about becomes validated (rounds 41-51: wrong)
    ],
)
def test_a_profile_is_a_look_only_at_the_records_the_work_names(
    tasks: dict[str, Task], dataset: str, paid: bool
) -> None:
    task = tasks[PROFILE]
    turns = reference(task, {})
    turns[0].insert(0, {"env": "sheet_analytics", "tool": "profile_dataset", "args": {"dataset_id": dataset}})
    assert (score(task, turns) == 1.0) is paid


def test_an_unasked_clean_is_still_work(tasks: dict[str, Task]) -> None:
    task = tasks[PROFILE]
    turns = reference(task, {})
    extra = {"dataset_id": "DS-001", "recipe_id": "RCP-01", "output_path": "data/clean/extra.csv"}
    turns[0].append({"env": "sheet_analytics", "tool": "clean_dataset", "args": extra})
    assert score(task, turns) < 1.0


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Shelf check: 2 boxes damaged", True),
        ("Damaged on the shelf", True),
        ("Entered by mistake, ignore", False),
        ("Not damaged", False),
    ],
)
def test_a_lines_note_is_the_agents(tasks: dict[str, Task], note: str, paid: bool) -> None:
    task = tasks[LINE]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "add_adjustment_line"]
    assert (score(task, reference(task, {i: {"note": note}})) == 1.0) is paid


@pytest.mark.parametrize(
    ("row", "paid"),
    [("new_action_item,AI-006", True), ("new_action_item,ai-006", True), ("new_action_item,ai-005", False)],
)
def test_an_id_in_a_row_may_change_case(tasks: dict[str, Task], row: str, paid: bool) -> None:
    task = tasks[ROW]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "write_file"]
    assert (score(task, reference(task, {i: {"content": f"item,value\n{row}\n"}})) == 1.0) is paid
