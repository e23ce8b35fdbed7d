"""On the built-in environments: synthesized tasks replay, validate, and reward any correct run fully.

A correct agent rarely makes exactly the golden calls: it looks things up, makes mistakes
that fail. Each extra call moves the clock and the seeded ids, so the test replays every
golden call preceded by two failed calls (ids re-read from the run's own results; the
verifier synthesizer probed with one and three) and expects a score of exactly 1, while doing nothing
scores 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.core import builtin_ids
from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.play.execute import execute_reference, shifted_replay
from envcraft.tasks.validation.validate import replay_task, validate
from envcraft.tasks.verifier.scoring import score_trajectory

ENVS = [env for env in ("returns_desk", "notes_desk", "sheet_analytics") if env in builtin_ids()]


@pytest.mark.parametrize("env", ENVS)
def test_builtin_tasks_reward_every_correct_run_and_nothing_else(env: str) -> None:
    library = load_library([env])
    tasks = synthesize_shard(library, env, 0, 2, SynthConfig(seed=7, p_cross=0.0)).tasks
    assert tasks, f"no task synthesized for {env}"
    for task in tasks:
        assert replay_task(task).ok
        report = validate(task, record=False)
        assert report.valid, (report.errors, report.survivors)
        golden = execute_reference(task)
        shifted = shifted_replay(golden, probes=2)
        assert shifted is not None
        detour: list[list[dict[str, Any]]] = [[] for _ in task.turns]
        for action in shifted.actions:
            detour[action.turn] += [{"env": action.env, "tool": "no_such_tool", "args": {}}] * 2
            detour[action.turn].append({"env": action.env, "tool": action.tool, "args": action.args})
        assert score_trajectory(task, detour).score == 1.0
        assert score_trajectory(task, [[] for _ in task.turns]).score == 0.0
