"""Helpers shared by the rollout tests."""

from __future__ import annotations

import asyncio

from envcraft.llm.provider import Provider
from envcraft.rollout.loop import RolloutConfig, Trajectory, rollout
from envcraft.tasks.format.model import Task


def play(task: Task, provider: Provider, config: RolloutConfig | None = None, sample: int = 0) -> Trajectory:
    """One rollout in a fresh event loop (the provider's connections closed in it)."""

    async def main() -> Trajectory:
        try:
            return await rollout(task, provider, config, sample=sample)
        finally:
            await provider.aclose()

    return asyncio.run(main())
