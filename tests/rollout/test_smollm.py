"""The whole loop with a real model: SmolLM2-135M on the CPU, served over the real protocol."""

from __future__ import annotations

import asyncio

import pytest

from envcraft.rollout.loop import RolloutConfig, Trajectory, rollout
from envcraft.rollout.models import open_model
from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier.scoring import score_trajectory

pytestmark = pytest.mark.slow


def test_smollm2_plays_a_task_with_real_tokens(tool_task: Task) -> None:
    config = RolloutConfig(max_steps=3, max_completion_tokens=48)

    async def main() -> Trajectory:
        with open_model("smollm2") as provider:
            try:
                return await rollout(tool_task, provider, config)
            finally:
                await provider.aclose()

    trajectory = asyncio.run(main())
    assert trajectory.error is None, trajectory.error
    assert trajectory.model == "smollm2" and trajectory.requests >= 1
    # real tokenizer counts: the prompt holds the system prompt, tools and a user turn
    assert trajectory.usage.prompt_tokens > 200 and trajectory.usage.completion_tokens > 0
    assert trajectory.usage.completion_tokens <= 48 * trajectory.requests
    assert trajectory.stop in ("done", "max_steps", "max_turns")
    assert 0.0 <= trajectory.score <= 1.0 and trajectory.score_error is None
    assert score_trajectory(tool_task, trajectory.turns).score == pytest.approx(trajectory.score)
    replies = [m for m in trajectory.messages if m["role"] == "assistant"]
    assert len(replies) == trajectory.steps and any(m.get("content") or m.get("tool_calls") for m in replies)
