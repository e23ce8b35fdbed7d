"""Classes found by the sixtieth blind audit (a run at ``d8d43ed``, seed 60; the real tasks in
``tests/fixtures/audit_tasks_round60.jsonl``, stored without their verifiers):

* A value asked for that no agent could see (R3: every right run 0.875): an incident's first
  change made it ``mitigating``, but its ops record, the only place an on-call reads it, kept
  saying "- Status: open".
* "move partition 0 of the refunds topic back to offset 8 to replay records" (R1: 0.469): the
  purpose read as a second ask, and the replay it led to was paid as wrong work.
"""

from __future__ import annotations

import json

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute_reference

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks, planned

INCIDENT = "infra_recovery-89e2438496da"  # a note on INC-2041, drain notify-a1, a health check, its status
REWIND = "event_stream-688fe34654d2"  # catch refunds p0 up and commit; seek back to 8; the committed offset


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round60.jsonl")


def test_an_incidents_record_shows_the_status_it_is_in(tasks: dict[str, Task]) -> None:
    run = execute_reference(tasks[INCIDENT])
    [status] = [
        v["status"]
        for v in run.final["infra_recovery"]["incidents"].values()
        if v["incident_id"] == "INC-2041"
    ]
    assert status == "mitigating"
    assert "- Status: mitigating" in run.files["ops/incident-INC-2041.md"].splitlines()


@pytest.mark.parametrize(("status", "paid"), [("mitigating", True), ("open", False), ("closed", False)])
def test_the_status_asked_for_is_the_one_the_record_shows(
    tasks: dict[str, Task], status: str, paid: bool
) -> None:
    content = json.dumps({"incident_status": status})
    assert (said(tasks[INCIDENT], "write_file", "content", content) == 1.0) is paid


def test_a_move_back_is_asked_without_a_purpose_that_reads_as_more_work(tasks: dict[str, Task]) -> None:
    texts = [" ".join(goal.text for goal in goals) for goals in planned(tasks[REWIND]).turns]
    assert "move partition 0 of the refunds topic back to offset 8; the reason is" in texts[1], texts
    assert "to replay records" not in texts[1], texts
