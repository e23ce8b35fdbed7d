"""What the user said weighs more than what follows from it: a job_scheduler ``cancel_run``
stops every open job of the run, and each stopped job was a goal as heavy as the reason the
user gave, so a cancel with the wrong reason scored 0.909. On a record, each goal on a value the
user gave counts 1 and the act's consequences 1 together (``verifier.synthesis.weigh``)."""

from __future__ import annotations

import copy

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score
from .test_reward_semantics import reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("slow_reads_tasks.jsonl")


@pytest.fixture(scope="module")
def task(tasks: dict[str, Task]) -> Task:
    return tasks["job_scheduler-97ceff9be64f"]


def test_the_users_reason_weighs_as_much_as_everything_the_cancel_stops(task: Task) -> None:
    goals = [c for c in task.verifier.checks if c["role"] == "goal"]
    said = [c for c in goals if "requested by the owner" in str(c.get("expected"))]
    rest = [c for c in goals if c not in said]
    assert len(said) == 5  # the run's reason and each stopped job's note: one thing the user said
    assert len(rest) == 5 and all(c["path"].startswith("/runs/RUN-7601/") for c in rest)
    assert sum(c["weight"] for c in said) == pytest.approx(1.0)
    assert sum(c["weight"] for c in rest) == pytest.approx(1.0)
    assert score(task, reference(task)) == 1.0
    wrong = call("job_scheduler", "cancel_run", run_id="RUN-7601", reason="finished early")
    assert score(task, [[call("job_scheduler", "list_runs"), wrong]]) == pytest.approx(0.5)
    assert score(task, [[call("job_scheduler", "list_runs")]]) == 0.0


def test_a_wrong_reason_costs_a_quarter_of_a_two_record_job_not_a_tenth(tasks: dict[str, Task]) -> None:
    """job_scheduler-1ae20e2d6b2b: cancel load_warehouse of RUN-7385 (four downstream jobs stop),
    run its next wave, skip refresh_dashboards of RUN-7384, each with a reason. One wrong reason
    scored 0.909 (1 of 11 goals); it is one of the four things the user said."""
    task = tasks["job_scheduler-1ae20e2d6b2b"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    for t, calls in enumerate(turns):
        for n, step in enumerate(calls):
            if "reason" in step["args"]:
                wrong = copy.deepcopy(turns)
                wrong[t][n]["args"]["reason"] = "finished early"
                assert score(task, wrong) == pytest.approx(0.75), step["tool"]
