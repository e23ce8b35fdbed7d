"""Evaluation figures from trajectories: the paper's Table 3 columns, overall, per env and per kind.

``pass@1`` is the mean over tasks of the share of passing samples; ``pass@k`` the unbiased
estimator 1 - C(n-c, k) / C(n, k) over a task's n samples with c passing (with n = k: did any
pass); a sample passes when its reward is 1. ``mean reward`` and ``mean tokens`` are per
trajectory. A cross-environment task counts in each of its environments' rows.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from envcraft.rollout.loop import Trajectory


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k samples drawn from n (c of them passing) passes."""
    if n <= 0 or k <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def summarize(trajectories: Sequence[Trajectory], k: int) -> dict[str, Any]:
    """``{"overall", "by_env", "by_kind", "tasks", "stops"}`` for the trajectories of one job."""
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    for trajectory in trajectories:
        by_task[trajectory.task_id].append(trajectory)
    rows = {task_id: _task_row(task_id, group, k) for task_id, group in sorted(by_task.items())}
    by_env: dict[str, list[str]] = defaultdict(list)
    by_kind: dict[str, list[str]] = defaultdict(list)
    for task_id, group in by_task.items():
        for env in group[0].envs:
            by_env[env].append(task_id)
        by_kind[group[0].kind].append(task_id)
        if len(group[0].envs) > 1:
            by_kind["cross-env"].append(task_id)
    return {
        "k": k,
        "overall": _aggregate(list(rows), rows, by_task),
        "by_env": {env: _aggregate(ids, rows, by_task) for env, ids in sorted(by_env.items())},
        "by_kind": {kind: _aggregate(ids, rows, by_task) for kind, ids in sorted(by_kind.items())},
        "stops": dict(Counter(t.stop for t in trajectories)),
        "tasks": list(rows.values()),
    }


def _task_row(task_id: str, group: Sequence[Trajectory], k: int) -> dict[str, Any]:
    n = len(group)
    c = sum(t.passed for t in group)
    return {
        "task_id": task_id,
        "envs": group[0].envs,
        "kind": group[0].kind,
        "samples": n,
        "passed": c,
        "pass_rate": c / n if n else 0.0,
        "pass@k": pass_at_k(n, c, k),
        "mean_reward": _mean(t.score for t in group),
    }


def _aggregate(
    ids: Sequence[str], rows: dict[str, dict[str, Any]], by_task: dict[str, list[Trajectory]]
) -> dict[str, Any]:
    trajectories = [t for task_id in ids for t in by_task[task_id]]
    return {
        "tasks": len(ids),
        "trajectories": len(trajectories),
        "pass@1": _mean(rows[i]["pass_rate"] for i in ids),
        "pass@k": _mean(rows[i]["pass@k"] for i in ids),
        "mean_reward": _mean(t.score for t in trajectories),
        "mean_tokens": _mean(t.usage.total_tokens for t in trajectories),
        "mean_turns": _mean(t.turns_played for t in trajectories),
        "mean_steps": _mean(t.steps for t in trajectories),
        "mean_tool_calls": _mean(t.tool_calls for t in trajectories),
        "errors": sum(1 for t in trajectories if t.error is not None),
    }


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


ENV_OVERLAP = "a cross-environment task counts in each of its environments"
KIND_OVERLAP = "a cross-environment task counts under its kind and under cross-env"


def overlap_note(rows: Mapping[str, Mapping[str, Any]], total: int, why: str) -> str:
    """Why grouped rows' task counts sum to more than the ``total`` tasks (empty when they do not)."""
    summed = sum(row["tasks"] for row in rows.values())
    return f"these rows count {summed} tasks for {total}: {why}" if summed > total else ""
