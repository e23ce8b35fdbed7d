"""Classes found by the fifty-sixth blind audit (a run at ``175238d``, seed 56; the real tasks in
``tests/fixtures/audit_tasks_round56.jsonl``, stored without their verifiers):

* A sheet registered again and then profiled, as the environment's README says to, scored
  0.029 (R3): what registering left empty for a profile to fill (``profiled_sha``, ``issues``,
  ``validated``) was a goal, and a consequence guard thrice over.
* A handover JSON may give a value the records hold in another role: ``"assignee": "bruno"``
  of an item bruno handed to chen, or ``"previous_owner": "chen"`` of one chen holds now, paid
  1.0 (R1).
* "Disruption: <the words>" to a traveler whose trip has none paid 1.0 (R1): the desk's
  opener ("I'm working the disruption desk today.") lent its words to an aside.
* The same reason dictated for two jobs was read with the first call's records: "replaced by
  the new pipeline (transform_orders)" on transform_orders scored 0.9 (R1).
"""

from __future__ import annotations

import json

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, score

SHEET = "sheet_analytics-b57a5c88624f"  # DS-002 registered again; DS-009 cleaned, rerun, profiled
ITEM = "notes_desk-796daeaa5d96"  # AI-006 added for bruno, handed to chen; handover/status.json
TRIP = "itinerary_rebooking-8f499382ec59"  # an SMS to a traveler whose trip is not disrupted
JOBS = "job_scheduler-332382c01b9a"  # one reason dictated for notify_finance, then transform_orders
WORDS = "Please call the travel desk if anything about your trip is unclear."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round56.jsonl")


@pytest.mark.parametrize(("dataset", "paid"), [(None, True), ("DS-002", True), ("DS-004", False)])
def test_a_sheet_registered_again_may_be_profiled(
    tasks: dict[str, Task], dataset: str | None, paid: bool
) -> None:
    task = tasks[SHEET]
    turns = reference(task, {})
    if dataset is not None:  # right after registering (DS-004: a sheet nobody asked about)
        profile = {"env": "sheet_analytics", "tool": "profile_dataset", "args": {"dataset_id": dataset}}
        turns[0].insert(2, profile)
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({}, True),
        ({"assignee": "chen"}, True),
        ({"owner": "chen", "previous_owner": "bruno"}, True),
        ({"original_owner": "bruno"}, True),
        ({"assignee": "bruno"}, False),  # who had it before, given as who has it
        ({"previous_owner": "chen"}, False),
        ({"former_assignee": "chen"}, False),
    ],
)
def test_a_handover_gives_each_value_its_role(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    content = json.dumps({"new_action_item": "AI-006", **extra})
    assert (said(tasks[ITEM], "write_file", "content", content) == 1.0) is paid


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (WORDS, True),
        (f"Trip V8K9BH: {WORDS}", True),
        (f"Disruption: {WORDS}", False),
        (f"Trip disruption: {WORDS}", False),
        (f"{WORDS} (disruption desk)", False),
    ],
)
def test_the_desks_opener_lends_no_words(tasks: dict[str, Task], message: str, paid: bool) -> None:
    assert (said(tasks[TRIP], "notify_traveler", "message", message) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("replaced by the new pipeline (transform_orders)", True),
        ("replaced by the new pipeline (RUN-7625)", True),
        ("replaced by the new pipeline", True),
        ("not replaced by the new pipeline", False),
    ],
)
def test_a_reason_said_twice_is_read_with_its_own_record(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (said(tasks[JOBS], "cancel_job", "reason", reason, nth=2) == 1.0) is paid
