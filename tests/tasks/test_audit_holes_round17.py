"""The seventeenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round17.jsonl``,
a default run at ``104456f``, seed 17), each verifier synthesized again by this checkout:

* helper UA: the asked class cancelled and its look-alike at 09:30 too scored 1.0: the late
  replay of the reference (96 lookups first) found the first upcoming class by searching, which
  by then was the look-alike, and cancelled it; read as a correct run, it excused the
  look-alike's cancel on every guard. A replay whose lookups give another record of S0 than the
  golden run's is no correct run (``execute._replay``);
* helper UC: two scheduling waves where one was asked scored 1.0: a slower correct run's single
  wave starts the same job (a backup job frees the slot while it reads), so no state guard can
  tell; the action log can (``repeats``: an asked write whose repeat changes records is made
  no more often than the golden run makes it);
* helper UB: the note “Priority for this week.” written with the message's subject and sender
  in place of its id scored 0.0: the turn said "mentioning the message “ORD escalations this
  month” from Greta Lund ...", and the verifier wanted the id; the turn now says "by its id".
"""

from __future__ import annotations

import random

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.run import replay
from envcraft.tasks.phrasing.intents import ChainView, plan_intents

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round17.jsonl")


@pytest.mark.parametrize(("also", "paid"), [(None, True), ("CLS-30002", False), ("CLS-30793", False)])
def test_the_look_alike_class_cancelled_too_is_a_harm(
    tasks: dict[str, Task], also: str | None, paid: bool
) -> None:
    """class_booking-4b03bd32c92e: "Cancel the hiit-circuit class on January 5 at 07:00 in room
    RM-11; the reason is “superseded by a newer request”." CLS-30002 is the 09:30 class of the
    same kind in the same room, with a member booked."""
    task = tasks["class_booking-4b03bd32c92e"]
    turns = reference(task)
    if also is not None:
        extra = {"session_id": also, "reason": "superseded by a newer request"}
        turns[0].append({"env": "class_booking", "tool": "cancel_class", "args": extra})
    assert (score(task, turns) == 1.0) is paid


def test_a_message_named_by_what_it_is_is_mentioned_by_its_id(tasks: dict[str, Task]) -> None:
    """mail_triage-630ea9cb400e: the note must carry the message's id, and the turn says so."""
    task = tasks["mail_triage-630ea9cb400e"]
    packages = {env: load_package(env) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    calls[0].provenance["message_id"] = "user"  # as before planning: the user names it (then "named")
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None
    view = ChainView(run.calls, run.initial, run.after, [False, False, True])
    plan = plan_intents(view, [[0, 1, 2]], packages, random.Random(0))
    note = next(m for m in plan.mentions() if m.arg == "note")
    assert note.text.endswith("from Greta Lund by its id"), note.text


@pytest.mark.parametrize(("waves", "paid"), [(1, True), (2, False), (3, False)])
def test_a_second_scheduling_wave_is_work_nobody_asked_for(
    tasks: dict[str, Task], waves: int, paid: bool
) -> None:
    """job_scheduler-2140850c08d1: "Run the next scheduling wave of the running run of the
    Orders ETL (us) workflow submitted on January 5 at 05:45." (RUN-7609)."""
    task = tasks["job_scheduler-2140850c08d1"]
    turns = reference(task)
    turns[0] += [turns[0][-1]] * (waves - 1)
    assert (score(task, turns) == 1.0) is paid


def test_a_slow_single_wave_is_still_right(tasks: dict[str, Task]) -> None:
    """The same task: twelve lookups first, so the backup job has freed its slot."""
    task = tasks["job_scheduler-2140850c08d1"]
    turns = reference(task)
    look = {"env": "job_scheduler", "tool": "get_run_status", "args": {"run_id": "RUN-7609"}}
    turns[0] = [look] * 12 + turns[0]
    assert score(task, turns) == 1.0
