"""Classes found by the fortieth blind audit (a run at ``d95c804``, seed 40; the real task in
``tests/fixtures/audit_tasks_round40.jsonl``, stored without its verifier):

* A number the user states that the world never puts to the test is no instruction (R4: four
  wrong runs at 1.0): "settle the ride with 1 minute of waiting" where the first 3 minutes are
  free; leaving the waiting out, or 0, 2 or 3 minutes, ended the run the same. Such a task is
  refused (``unexercised``), as a stated choice the world never exercises already was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.validation.exercised import unexercised_choices

FIXTURE = Path(__file__).parent.parent / "fixtures" / "audit_tasks_round40.jsonl"


@pytest.fixture()
def settle() -> Task:
    """Settle a ride with 1 minute of waiting and record the rider's rating (its reference)."""
    [line] = FIXTURE.read_text(encoding="utf-8").splitlines()
    return Task.model_validate(json.loads(line))


def unexercised(task: Task) -> list[str]:
    packages = {env: load_package(env) for env in task.envs}
    return unexercised_choices(task, execute_reference(task), packages)


def test_a_stated_number_no_neighbour_of_which_changes_the_world_is_unexercised(settle: Task) -> None:
    assert unexercised(settle) == ["complete_trip.waiting_minutes"]


def test_a_stated_number_the_world_charges_for_is_exercised(settle: Task) -> None:
    [complete] = [c for c in settle.reference.calls if c.tool == "complete_trip"]
    complete.args["waiting_minutes"] = 6  # past the free minutes: 5 or 7 charge otherwise
    assert unexercised(settle) == []
