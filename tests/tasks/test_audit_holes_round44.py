"""Classes found by the forty-fourth blind audit (a run at ``1697a30``, seed 44; the real tasks in
``tests/fixtures/audit_tasks_round44.jsonl``, stored without verifiers), each on its real task:

* A report may say what it reports in plain words ("Booking confirmed: BKG-50066", "her
  booking id is ...", "Nothing else pending."; R1: 0.667), and a day it gives is one the
  records hold ("BKG-50066 (Saturday, January 10, 17:30)" of a class then; never January 11
  or Friday).
* A sentence telling the traveler the change may follow a greeting and name the record by what
  it is called ("Hi Freya, your pickup in Dublin on March 13 has been moved to 14:25."; R4:
  0.667), and the day it gives is the record's (a pickup "on March 14" of one on March 13 paid
  1.0).
* A value a report gives of a field the world keeps is read from the run's own end state: a
  rule added, removed and added again leaves the recipe at version 17, and "17" is true where
  the reference's "15" is not (R2: 0.889 for the truth, 1.0 for the reference's number).
* An option nobody named is the agent's to pick in every file the environment renders after it
  too (the turn-1 dedupe rule with ``option="last"`` failed turn 2's lineage; R2: 0.889).
* The rules a recipe held before the work keep their order (its dedupe rule removed and added
  again after the derive rule, unasked, paid 1.0 once the version was read back; R2).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference
from .test_audit_holes_round43 import reported
from .test_created_records import audit_tasks, call, score

BOOKED = "class_booking-e757ce30a94f"  # trade a waitlist place for a class; the new booking's id
DUBLIN = "itinerary_rebooking-e01e28651ef4"  # re-time a pickup to March 13, 14:25 and email
RECIPE = "sheet_analytics-62201c93601c"  # clean, a dedupe rule, a fill rule; the recipe's version


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round44.jsonl")


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- new_booking: BKG-50066", True),
        ("Booking confirmed: BKG-50066", True),
        ("Booked Ines Silva into the class; her booking id is BKG-50066.", True),
        ("- new_booking: BKG-50066. Nothing else pending.", True),
        ("- new_booking: BKG-50066 (Saturday, January 10, 17:30)", True),
        ("- new_booking: BKG-50066 (2026-01-10)", True),
        ("- new_booking: BKG-50066 (January 11)", False),
        ("- new_booking: BKG-50066 on Friday", False),
        ("- new_booking: BKG-50066. Nothing was booked.", False),
        ("- new_booking: BKG-50066 (cancelled)", False),
        ("- new_booking: BKG-50066, moved to the waitlist", False),
    ],
)
def test_a_report_in_plain_words_gives_the_records_days(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    assert (reported(tasks[BOOKED], result) == 1.0) is paid


DICTATED = "Please check the latest times of your trip in the app."


@pytest.mark.parametrize(
    ("told", "paid"),
    [
        ("Hi Freya, your airport transfer pickup in Dublin on March 13 has been moved to 14:25.", True),
        ("Your new pickup time is 14:25 UTC on 13 March.", True),
        ("Your airport transfer pickup on March 14 has been moved to 14:25.", False),
        ("Your airport transfer pickup on April 13 has been moved to 14:25.", False),
        ("Hi Freya, your airport transfer pickup has been moved to 14:55.", False),
    ],
)
def test_a_change_told_after_a_greeting_gives_the_records_day(
    tasks: dict[str, Task], told: str, paid: bool
) -> None:
    task = tasks[DUBLIN]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "notify_traveler"]
    assert (score(task, reference(task, {i: {"message": f"{told} {DICTATED}"}})) == 1.0) is paid


def redone(
    task: Task, rule: dict[str, Any], version: int, again: list[dict[str, Any]] | None = None
) -> float:
    """``task``'s reference with turn 1's rule written as ``rule``, ``again`` done before turn 3's
    rule, and the report giving ``version``."""
    turns = reference(task, {2: rule})
    turns[2][:0] = again or []
    turns[3][0]["args"]["content"] = f"item,value\ncleaning_recipe_version,{version}\n"
    return score(task, turns)


DEDUPE = {"recipe_id": "RCP-01", "operation": "dedupe", "column": "*"}


def rule(**args: Any) -> dict[str, Any]:
    return call("sheet_analytics", "add_cleaning_rule", recipe_id="RCP-01", **args)


def test_the_reported_version_is_the_runs_own(tasks: dict[str, Task]) -> None:
    task = tasks[RECIPE]
    typo = [
        rule(operation="trim", column="rep"),
        call("sheet_analytics", "remove_cleaning_rule", recipe_id="RCP-01", rule_no=15),
    ]
    assert redone(task, DEDUPE, 15) == 1.0
    assert redone(task, DEDUPE, 17, typo) == 1.0  # a rule added by mistake and removed: two versions more
    assert redone(task, DEDUPE, 15, typo) < 1.0  # the reference's number is not this run's


def test_an_option_nobody_named_is_free_in_later_files(tasks: dict[str, Task]) -> None:
    assert redone(tasks[RECIPE], {**DEDUPE, "option": "last"}, 15) == 1.0


def test_a_recipes_rules_keep_their_order(tasks: dict[str, Task]) -> None:
    moved = [
        call("sheet_analytics", "remove_cleaning_rule", recipe_id="RCP-01", rule_no=12),
        rule(operation="dedupe", column="order_id", option="last"),
    ]
    assert redone(tasks[RECIPE], DEDUPE, 17, moved) < 1.0  # dedupe by order_id now after derive
