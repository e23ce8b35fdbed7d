"""Difficulty by rollouts: k samples per task, the pass rate, a band, and the paper's filter.

The paper keeps a task when 8 rollouts of a strong model pass sometimes but not always
(0 < p < 1): a task nobody solves is broken or too hard, one every rollout solves teaches
nothing. :func:`calibrated` writes ``k``, ``pass_rate``, ``band`` and the model into
``task.difficulty`` next to whatever other stages put there (the data engine's
``features``); :func:`parse_keep` reads a filter such as ``0<p<1`` or ``0.2<=p<=0.8``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from envcraft.rollout.loop import Trajectory
from envcraft.tasks.format.model import Task

Band = Literal["too_hard", "learnable", "too_easy"]
_BOUND = r"(\d+(?:\.\d+)?)"
_OPS: dict[str, Callable[[float, float], bool]] = {"<": operator.lt, "<=": operator.le}
_KEEP = re.compile(rf"^\s*(?:{_BOUND}\s*(<=|<)\s*)?p\s*(?:(<=|<)\s*{_BOUND})?\s*$")


def band(pass_rate: float) -> Band:
    """``too_hard`` when nothing passed, ``too_easy`` when everything did, else ``learnable``."""
    if pass_rate <= 0.0:
        return "too_hard"
    if pass_rate >= 1.0:
        return "too_easy"
    return "learnable"


def calibrated(task: Task, trajectories: Sequence[Trajectory], model: str) -> Task:
    """``task`` with its pass rate over ``trajectories`` in ``difficulty`` (other keys kept)."""
    k = len(trajectories)
    rate = sum(t.passed for t in trajectories) / k if k else 0.0
    difficulty = dict(task.difficulty or {})
    difficulty.update(
        k=k,
        pass_rate=rate,
        band=band(rate),
        model=model,
        mean_reward=sum(t.score for t in trajectories) / k if k else 0.0,
    )
    return task.model_copy(update={"difficulty": difficulty})


def parse_keep(expression: str) -> Callable[[float], bool]:
    """A predicate on the pass rate ``p`` from ``A<p<B``, ``A<=p``, ``p<B``... (else ``ValueError``)."""
    match = _KEEP.match(expression)
    if match is None or (match.group(1) is None and match.group(4) is None):
        raise ValueError(f"--keep {expression!r}: expected a range on p such as 0<p<1 or 0.25<=p<=0.75")
    low, low_op, high_op, high = match.groups()
    checks: list[Callable[[float], bool]] = []
    if low is not None:
        bound, test = float(low), _OPS[low_op]
        checks.append(lambda p: test(bound, p))
    if high is not None:
        upper, test_high = float(high), _OPS[high_op]
        checks.append(lambda p: test_high(p, upper))
    return lambda p: all(check(p) for check in checks)


def group_by_task(trajectories: Iterable[Trajectory]) -> dict[str, list[Trajectory]]:
    grouped: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        grouped.setdefault(trajectory.task_id, []).append(trajectory)
    return grouped
