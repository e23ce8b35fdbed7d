"""Many rollouts at once: k samples per task, a concurrency cap, a resumable trajectories file.

:func:`run_rollouts` plays every ``(task, sample)`` pair on one asyncio event loop with at
most ``concurrency`` rollouts in flight. Each finished trajectory is appended to the
trajectories JSONL at once (one line, flushed), so a killed job loses only the rollouts in
flight; run again with the same file, the pairs already there are skipped (a torn last
line is dropped first). With a response cache behind the provider, the interrupted
rollouts replay their model calls from disk and cost nothing twice. Behind batch files
(:class:`~envcraft.llm.batch.BatchProvider`) a rollout whose next step waits for its answer
is left out of the file, and once every other rollout is done the job raises
:class:`~envcraft.llm.batch.BatchPending`: each re-run advances every waiting rollout by the
steps answered since.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envcraft.core import jsonio
from envcraft.llm.batch import BatchPending
from envcraft.llm.provider import Provider
from envcraft.llm.types import LLMError
from envcraft.rollout.loop import RolloutConfig, Trajectory, rollout
from envcraft.tasks.format.model import Task

OnDone = Callable[[Trajectory], None]


@dataclass(frozen=True)
class Job:
    """What to run: ``k`` samples of each task, ``concurrency`` at a time; ``judge`` scores the
    judged part of imported benchmark tasks (:mod:`envcraft.rollout.grading`)."""

    tasks: Sequence[Task]
    k: int = 1
    concurrency: int = 8
    config: RolloutConfig = field(default_factory=RolloutConfig)
    judge: Provider | None = None
    user: Provider | None = None  # plays the simulated user of tasks that have one

    def pairs(self) -> list[tuple[Task, int]]:
        return [(task, sample) for task in self.tasks for sample in range(self.k)]


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """The whole trajectories of a file (lines that do not parse as one are skipped)."""
    found: list[Trajectory] = []
    target = Path(path)
    if not target.is_file():
        return found
    with open(target, "rb") as handle:
        for raw in handle:
            try:  # strict: bad UTF-8, NaN or absurd nesting is a line that does not parse
                found.append(Trajectory.from_json(jsonio.loads(raw)))
            except (ValueError, KeyError, TypeError):
                continue
    return found


def _repair_tail(path: Path) -> None:
    """Drop a torn last line (a job killed mid-write) so appends start on a line of their own."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        handle.truncate(cut)


async def run_rollouts(
    job: Job,
    provider: Provider,
    out: str | Path | None = None,
    *,
    on_done: OnDone | None = None,
) -> list[Trajectory]:
    """Play ``job`` with ``provider``; returns every trajectory of the job (resumed ones included).

    ``out`` is the trajectories JSONL (appended, resumable; ``ValueError`` when it holds another
    model's trajectories); ``on_done`` is called for each newly finished trajectory (progress bars).
    :class:`BatchPending` when rollouts wait for batch answers (the others are done and written).
    """
    path = Path(out) if out is not None else None
    done: dict[tuple[str, int], Trajectory] = {}
    wanted = {(t.id, s) for t, s in job.pairs()}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _repair_tail(path)
        for trajectory in read_trajectories(path):
            if trajectory.model != provider.model:
                raise ValueError(
                    f"{path} holds trajectories of model {trajectory.model!r}, not {provider.model!r}: "
                    "resume with the same model or write elsewhere"
                )
            key = (trajectory.task_id, trajectory.sample)
            if key in wanted:
                done[key] = trajectory
    todo = [(task, sample) for task, sample in job.pairs() if (task.id, sample) not in done]
    slots = asyncio.Semaphore(max(1, job.concurrency))
    waiting = 0
    handle = open(path, "a", encoding="utf-8") if path is not None else None  # noqa: SIM115 - held open for the job
    try:

        async def one(task: Task, sample: int) -> None:
            nonlocal waiting
            async with slots:
                try:
                    trajectory = await rollout(
                        task, provider, job.config, sample=sample, judge=job.judge, user=job.user
                    )
                except LLMError as exc:
                    if exc.kind != "pending":
                        raise
                    waiting += 1
                    return
            done[(task.id, sample)] = trajectory
            if handle is not None:
                handle.write(json.dumps(trajectory.to_json(), ensure_ascii=False) + "\n")
                handle.flush()
            if on_done is not None:
                on_done(trajectory)

        await asyncio.gather(*(one(task, sample) for task, sample in todo))
    finally:
        if handle is not None:
            handle.close()
    if waiting:
        raise BatchPending(waiting)
    return [done[(task.id, sample)] for task, sample in job.pairs()]


def already_done(job: Job, out: str | Path) -> int:
    """How many of the job's rollouts a trajectories file already holds."""
    wanted = {(t.id, s) for t, s in job.pairs()}
    return len({(t.task_id, t.sample) for t in read_trajectories(out)} & wanted)
