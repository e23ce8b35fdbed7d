"""Proof that a task is solvable and its reward discriminates.

``replay_task``: the golden calls, re-run in fresh sessions, reach the recorded final hash
and score 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envcraft.tasks.execute import ExecutionError, execute_reference, outcome_hash
from envcraft.tasks.model import Task
from envcraft.tasks.verify import run_verifier


@dataclass
class ReplayResult:
    """One task's golden replay: did it reproduce the hash, and did the verifier give 1?"""

    task_id: str
    ok: bool
    hash_ok: bool
    score: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "task_id": self.task_id,
            "ok": self.ok,
            "hash_ok": self.hash_ok,
            "score": self.score,
        }
        if self.error is not None:
            data["error"] = self.error
        return data


def replay_task(task: Task) -> ReplayResult:
    """Re-run the golden calls in fresh sessions and score the outcome."""
    try:
        outcome = execute_reference(task)
    except ExecutionError as exc:
        return ReplayResult(task.id, False, False, 0.0, str(exc))
    hash_ok = outcome_hash(outcome) == task.reference.final_hash
    score = run_verifier(task, outcome)
    error = score.error
    if error is None and not hash_ok:
        error = "final state differs from the recorded golden hash"
    if error is None and score.score < 1.0:
        error = f"golden run scores {score.score:.3f}, not 1"
    return ReplayResult(task.id, hash_ok and score.score >= 1.0, hash_ok, score.score, error)
