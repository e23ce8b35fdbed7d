"""How a job is split over user turns: two asked writes are asked in two turns, and the file the
user asks for may be asked in a turn of its own once the work is done."""

from __future__ import annotations

import pytest

from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.format.model import Task

from .test_reward_semantics import reference, score

ENVS = ("returns_desk", "mail_triage", "notes_desk")


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    library = load_library(ENVS)
    found: list[Task] = []
    for env in ENVS:
        found += synthesize_shard(library, env, 0, 6, SynthConfig(seed=21, p_cross=0.0)).tasks
    return found


def _report_turn(task: Task) -> bool:
    calls = task.reference.calls
    last = len(task.turns) - 1
    return "file_request" in task.provenance and [c.turn for c in calls].count(last) == 1 and last > 0


def test_a_report_asked_on_its_own_comes_after_the_work_and_not_before(tasks: list[Task]) -> None:
    own = [t for t in tasks if _report_turn(t)]
    assert own, [t.id for t in tasks]
    for task in own[:3]:
        text = task.turns[-1].user
        assert task.provenance["file_request"]["path"] in text and "finally" not in text.lower(), text
        assert score(task, reference(task)) == 1.0, task.id
        early = reference(task)
        early[-2] += early[-1]  # the write-up made before the user asked for it
        early[-1] = []
        assert score(task, early) < 1.0, task.id


def test_two_asked_writes_are_asked_in_two_turns(tasks: list[Task]) -> None:
    for task in tasks:
        writes = task.difficulty["features"]["writes"] - ("file_request" in task.provenance)
        # a declared job's steps are one ask (one outcome, in one turn)
        asks = writes - sum(len(job["calls"]) - 1 for job in task.provenance.get("jobs", []))
        if asks >= 2 and not task.provenance.get("steps"):
            assert len(task.turns) >= 2, task.id
