"""An agent that looks around before it acts does its writes later on the clock. What the world
does by itself in the meantime is not the agent's doing, also where an environment applies it only
at its next write: job_scheduler finishes a job whose time has come at the next write's sweep, so
a careful agent's cancel also finished another run's backup job. Two candidates of a seed-0
job_scheduler shard at ``817cd08`` (``tests/fixtures/slow_reads_tasks.jsonl``, verifiers emptied
and synthesized again here) that the validation's ``slow_reads`` agent failed at 0.5 for it.

A real deadline is another matter: a rideshare proposal holds the driver for 3 minutes, so an
agent that reads ten records before it confirms finds it lapsed. The user never mentioned the
hold, so such a task would teach haste; the data engine drops it before validation
(``pace_stage``). A seed-10 rideshare_dispatch candidate at ``88476ce`` (same fixture file).
"""

from __future__ import annotations

import copy

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute_reference, keeps_pace
from envcraft.tasks.validation.adversarial import Adversary
from envcraft.tasks.verifier.scoring import run_verifier

from .test_created_records import Turns, audit_tasks, call, score
from .test_reward_semantics import reference

LOOKS = [call("job_scheduler", "list_pools"), call("job_scheduler", "list_workflows")] * 6


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("slow_reads_tasks.jsonl")


def looking_first(turns: Turns) -> Turns:
    """Each turn's work after a dozen lookups (two hours on the scheduler's clock)."""
    return [[*copy.deepcopy(LOOKS), *calls] for calls in turns]


@pytest.mark.parametrize("task_id", ["job_scheduler-97ceff9be64f", "job_scheduler-1ae20e2d6b2b"])
def test_work_done_after_a_dozen_lookups_is_paid(tasks: dict[str, Task], task_id: str) -> None:
    task = tasks[task_id]
    assert score(task, reference(task)) == 1.0
    assert score(task, looking_first(reference(task))) == 1.0
    trials, _ = Adversary(task, resolve_packages(task)).trials(execute_reference(task))
    slow = next(t for t in trials if t.kind == "slow_reads")
    assert run_verifier(task, slow.outcome).score == 1.0


def test_a_late_agent_that_also_cancels_another_run_is_still_caught(tasks: dict[str, Task]) -> None:
    """job_scheduler-97ceff9be64f: "Cancel the running run of the Churn model training workflow
    ...". The world's own finishing of another run's job is excused, not the other runs."""
    task = tasks["job_scheduler-97ceff9be64f"]
    turns = looking_first(reference(task))
    other = call("job_scheduler", "cancel_run", run_id="RUN-7602", reason="requested by the owner")
    skipped = call("job_scheduler", "cancel_job", run_id="RUN-7604", job="load_warehouse", reason="x")
    assert score(task, [[*turns[0], other]]) < 1.0
    assert score(task, [[*turns[0], skipped]]) < 1.0


def test_a_deadline_within_a_careful_agents_lookups_is_no_task(tasks: dict[str, Task]) -> None:
    """rideshare_dispatch-62980dcfc28e: "Offer Kwame Lopez's ride request ... to driver DRV-243.",
    then "have the rider confirm the trip you created": the hold lapses while the agent reads."""
    task = tasks["rideshare_dispatch-62980dcfc28e"]
    assert score(task, reference(task)) == 1.0
    assert not keeps_pace(execute_reference(task))
    for task_id in ("job_scheduler-97ceff9be64f", "job_scheduler-1ae20e2d6b2b"):
        assert keeps_pace(execute_reference(tasks[task_id]))  # the world moves, nothing lapses
