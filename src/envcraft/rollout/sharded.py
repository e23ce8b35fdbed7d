"""Rollouts on an executor (``envcraft eval --executor ray`` or ``--workers N``): shards of tasks.

The in-process runner (:mod:`envcraft.rollout.runner`) plays every rollout on one event loop;
this one splits the missing ``(task, sample)`` pairs into shards and runs each shard as a job
of :mod:`envcraft.executor` (a local process pool, or Ray tasks on a local Ray or a cluster).
A job opens the model itself with :func:`~envcraft.rollout.models.open_model` (a built-in
policy is served in the worker's own process; a remote model's base URL travels with the job
and its key is read from the worker's ``OPENAI_API_KEY``, never sent through the executor),
plays its pairs with the same :func:`~envcraft.rollout.loop.rollout` at the job's concurrency,
and returns the trajectories as JSON.

The driver appends each shard's trajectories to the trajectories file as the shard finishes,
so an interrupted run resumes as the in-process one does (pairs already there are skipped,
another model's file is refused), and the summary is computed from the same trajectories.
A rollout's result depends only on the task, the sample index, the config and the model,
so the trajectories are the ones the in-process runner writes (timings and order aside).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envcraft.executor import Executor
from envcraft.rollout.loop import RolloutConfig, Trajectory, rollout
from envcraft.rollout.models import open_model
from envcraft.rollout.runner import Job, OnDone, _repair_tail, read_trajectories
from envcraft.tasks.format.model import Task

SHARDS_PER_WORKER = 4  # small enough shards to balance uneven tasks, few enough to amortize a model's start


def run_sharded(
    job: Job,
    executor: Executor,
    model: str,
    out: str | Path,
    *,
    base_url: str | None = None,
    cache_dir: str | Path | None = None,
    on_done: OnDone | None = None,
) -> list[Trajectory]:
    """Play ``job`` with ``model`` on ``executor``, appending to the trajectories JSONL ``out``;
    returns every trajectory of the job (resumed ones included), in the job's order.

    ``ValueError`` when ``out`` holds another model's trajectories.
    """
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    _repair_tail(path)
    wanted = {(t.id, s) for t, s in job.pairs()}
    done: dict[tuple[str, int], Trajectory] = {}
    for trajectory in read_trajectories(path):
        if trajectory.model != model:
            raise ValueError(
                f"{path} holds trajectories of model {trajectory.model!r}, not {model!r}: "
                "resume with the same model or write elsewhere"
            )
        if (trajectory.task_id, trajectory.sample) in wanted:
            done[(trajectory.task_id, trajectory.sample)] = trajectory
    todo = [(task, sample) for task, sample in job.pairs() if (task.id, sample) not in done]
    shards = _shards(todo, executor.workers * SHARDS_PER_WORKER)
    jobs = [
        (
            [task.model_dump(mode="json") for task in {t.id: t for t, _ in shard}.values()],
            [(task.id, sample) for task, sample in shard],
            model,
            base_url,
            None if cache_dir is None else str(cache_dir),
            job.concurrency,
            job.config,
        )
        for shard in shards
    ]
    with open(path, "a", encoding="utf-8") as handle:
        for _, records in executor.run(play_shard, jobs):
            for record in records:
                trajectory = Trajectory.from_json(record)
                done[(trajectory.task_id, trajectory.sample)] = trajectory
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                handle.flush()
                if on_done is not None:
                    on_done(trajectory)
    return [done[(task.id, sample)] for task, sample in job.pairs()]


def play_shard(
    tasks: list[dict[str, Any]],
    pairs: list[tuple[str, int]],
    model: str,
    base_url: str | None,
    cache_dir: str | None,
    concurrency: int,
    config: RolloutConfig,
) -> list[dict[str, Any]]:
    """One executor job: the rollouts ``pairs`` (task id, sample) of ``tasks``, as trajectory JSON."""
    by_id = {task.id: task for task in (Task.model_validate(t) for t in tasks)}
    with open_model(
        model, tasks=by_id.values(), base_url=base_url, cache_dir=cache_dir, concurrency=concurrency
    ) as provider:

        async def main() -> list[Trajectory]:
            slots = asyncio.Semaphore(max(1, concurrency))

            async def one(task_id: str, sample: int) -> Trajectory:
                async with slots:
                    return await rollout(by_id[task_id], provider, config, sample=sample)

            try:
                return list(await asyncio.gather(*(one(t, s) for t, s in pairs)))
            finally:
                await provider.aclose()

        return [trajectory.to_json() for trajectory in asyncio.run(main())]


def _shards(pairs: Sequence[tuple[Task, int]], count: int) -> list[list[tuple[Task, int]]]:
    """``pairs`` cut into at most ``count`` contiguous shards of near-equal size."""
    if not pairs:
        return []
    count = max(1, min(count, len(pairs)))
    size, extra = divmod(len(pairs), count)
    shards, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        shards.append(list(pairs[start:end]))
        start = end
    return shards
