"""A message the user dictates is checked as a phrase: the same words inside a greeting and a
sign-off earn the reward, other words do not; names and titles stay the words given."""

from __future__ import annotations

import json
import logging
from functools import cache
from typing import Any

from envcraft.tasks.corpus import compose as synth
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import reference_turns
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.scoring import score_trajectory


def test_says_finds_the_words_as_a_phrase() -> None:
    said = {"$says": "Thanks, this is confirmed."}
    assert vr.matches("Hi Lucas,\n\nthanks,  this is CONFIRMED!\n\nBest, Rosa", said)
    assert vr.matches("“Thanks, this is confirmed.”", said)
    assert vr.matches("could you share an update", {"$says": "Could you share an update?"})
    assert vr.matches("Could you share an update.", {"$text": "Could you share an update?"})
    assert not vr.matches("Thanks, this is not confirmed.", said)
    assert not vr.matches("Thanks, this is confirmedly late.", said)
    assert not vr.matches("", said) and not vr.matches(7, said)
    assert not vr.matches("anything", {"$says": ""})


@cache
def _tasks() -> list[Task]:
    logging.getLogger("envcraft").setLevel(logging.CRITICAL)
    library = synth.load_library(["itinerary_rebooking", "returns_desk"])
    found: list[Task] = []
    for env in ("itinerary_rebooking", "returns_desk"):
        found += synth.synthesize_shard(library, env, 0, 6, synth.SynthConfig(seed=5)).tasks
    return found


def _with_arg(task: Task, tool: str, arg: str, change: Any) -> list[list[dict[str, Any]]]:
    turns = reference_turns(task)
    for turn in turns:
        for call in turn:
            if call["tool"] == tool:
                call["args"] = {**call["args"], arg: change(call["args"][arg])}
    return turns


def test_a_dictated_message_with_a_greeting_scores_one_and_other_words_do_not() -> None:
    played = 0
    for task in _tasks():
        if not any(c.tool == "notify_traveler" for c in task.reference.calls):
            continue
        assert "$says" in json.dumps(task.verifier.checks)
        greeted = _with_arg(
            task, "notify_traveler", "message", lambda m: f"Hello,\n\n{m}\n\nKind regards, Rosa"
        )
        assert score_trajectory(task, greeted).score == 1.0, task.id
        other = _with_arg(task, "notify_traveler", "message", lambda m: "Your trip is cancelled.")
        assert score_trajectory(task, other).score < 1.0, task.id
        played += 1
    assert played >= 2


def test_a_reason_is_still_the_words_given() -> None:
    played = 0
    for task in _tasks():
        if not any(c.tool == "cancel_order" for c in task.reference.calls):
            continue
        assert score_trajectory(task, reference_turns(task)).score == 1.0
        padded = _with_arg(task, "cancel_order", "reason", lambda r: f"Customer says: {r}, please hurry")
        assert score_trajectory(task, padded).score < 1.0, task.id
        played += 1
    assert played >= 1
