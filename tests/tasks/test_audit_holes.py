"""Three holes of the second blind play audit, on its real tasks (``tests/fixtures/
audit_tasks_round2.jsonl``), each verifier synthesized again by this checkout:

* a message flagged without opening it is flagged (the reference's read added "seen");
* a second note on an incident's timeline, taking the asked one back, is no asked file;
* a long job of another run that finishes while the agent looks is the world's doing;
* (third audit) an asked JSON object's extra keys repeat what the asked record says, not any
  value the world holds somewhere.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import Turns, reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round2.jsonl")


def without(turns: Turns, tool: str) -> Turns:
    return [[c for c in calls if c["tool"] != tool] for calls in turns]


def test_a_message_flagged_unopened_is_flagged(tasks: dict[str, Task]) -> None:
    """event_stream-75ce3810ad0e: "flag the message marked urgent in ..." -- the goal asked for
    the flags "flagged" and "seen" (the reference's read_message added "seen"): flagging it
    unread scored 0.857, as low as reading it and never flagging it."""
    task = tasks["event_stream-75ce3810ad0e"]
    assert score(task, reference(task)) == 1.0
    assert score(task, without(reference(task), "read_message")) == 1.0
    assert score(task, without(reference(task), "flag_message")) < 1.0


def test_a_second_timeline_note_is_not_the_asked_note(tasks: dict[str, Task]) -> None:
    """infra_recovery-1bfa3bc84440: the asked note, then "Correction: ignore the line above."
    on the same timeline scored 1.0 (only the turn-1 file check counted lines)."""
    task = tasks["infra_recovery-1bfa3bc84440"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    note = next(c for c in turns[1] if c["tool"] == "append_ops_note")
    taken_back = copy.deepcopy(turns)
    taken_back[1].append({**note, "args": {**note["args"], "note": "Correction: ignore the line above."}})
    assert score(task, taken_back) < 1.0
    twice = copy.deepcopy(turns)
    twice[1].append(copy.deepcopy(note))
    assert score(task, twice) < 1.0


def test_another_runs_job_finishing_while_the_agent_looks_is_no_harm(tasks: dict[str, Task]) -> None:
    """job_scheduler-d67c0a67f81d: every call moves the clock 10 minutes; ten status lookups in
    turn 2 let another run's long job finish on its own, and the turn-2 guard on the other
    runs (which, unlike the end's, did not know it moves by itself) halved the reward."""
    task = tasks["job_scheduler-d67c0a67f81d"]
    turns = reference(task)
    run_id = turns[1][0]["args"]["run_id"]
    looks = [{"env": "job_scheduler", "tool": "get_run_status", "args": {"run_id": run_id}}] * 10
    turns[1] = looks + turns[1]
    assert score(task, turns) == 1.0
    touched = reference(task)
    touched[1].append(
        {
            "env": "job_scheduler",
            "tool": "cancel_run",
            "args": {"run_id": "RUN-7459", "reason": "no longer needed"},
        }
    )
    assert score(task, touched) < 1.0


def test_an_asked_json_objects_extra_key_says_what_the_asked_record_says(tasks: dict[str, Task]) -> None:
    """infra_recovery-0853ca3877d2 (third audit): notes/result.json asks for the new recipe's id;
    ``"health_check": "passed"`` (the check failed), ``"sent": true`` and another service's id
    under ``"urgent_service"`` scored 1.0: each was a value some record of the world holds."""
    task = tasks["infra_recovery-0853ca3877d2"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    t, n = next(
        (t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == "write_file"
    )
    asked = json.loads(turns[t][n]["args"]["content"])

    def with_keys(**extra: Any) -> Turns:
        changed = copy.deepcopy(turns)
        changed[t][n]["args"]["content"] = json.dumps({**asked, **extra}) + "\n"
        return changed

    assert score(task, with_keys(recipe_name="Drop orders exported twice")) == 1.0  # the recipe's own name
    assert score(task, with_keys(health_check="passed")) < 1.0
    assert score(task, with_keys(sent=True)) < 1.0
    assert score(task, with_keys(urgent_service="inventory-sync")) < 1.0
