"""Finding a trainer row's task: the task set by path, the task by id, checked by its digest.

Trainer rows carry only a task id and the task's digest (``reward_model.ground_truth`` of a
VERL row, see :mod:`envcraft.tasks.corpus.export`); the task itself (S0, turns, verifier) is read
from a ``tasks.jsonl``. A trainer builds one agent loop or reward call per trajectory, so
the parsed task set is cached per file (and re-read when the file changes). A digest that
does not match the task found is refused: the reward would be computed against another
version of the task than the row was made from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from envcraft.tasks.corpus.export import task_digest
from envcraft.tasks.format.io import TASKS_FILE, TaskSetError, read_tasks
from envcraft.tasks.format.model import Task

TASKS_ENV = "ENVCRAFT_TASKS"


class TaskLookupError(ValueError):
    """A row whose task cannot be found, or whose task changed since the row was exported."""


class TaskIndex:
    """The tasks of one task set by id, with their digests computed once."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = {t.id: t for t in tasks}
        self._digests: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def get(self, task_id: str, digest: str | None = None) -> Task:
        """The task ``task_id``; ``digest`` (when given) must be the task's :func:`task_digest`."""
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskLookupError(f"task {task_id!r} is not in this task set ({len(self.tasks)} tasks)")
        if digest is not None:
            found = self._digests.get(task_id) or self._digests.setdefault(task_id, task_digest(task))
            if found != digest:
                raise TaskLookupError(
                    f"task {task_id!r} changed since the row was exported (digest {found[:12]}, "
                    f"row says {digest[:12]}); export the dataset again"
                )
        return task

    def for_row(self, ground_truth: Any = None, extra_info: Mapping[str, Any] | None = None) -> Task:
        """The task of a VERL row, from its ``ground_truth`` (``{"task_id", "sha256"}``) or,
        lacking one, ``extra_info.task_id`` (then unchecked)."""
        truth = parse_ground_truth(ground_truth)
        if truth is not None:
            return self.get(truth["task_id"], truth["sha256"])
        task_id = (extra_info or {}).get("task_id")
        if not isinstance(task_id, str):
            raise TaskLookupError("the row names no task (no ground_truth task_id, no extra_info.task_id)")
        return self.get(task_id)


def parse_ground_truth(value: Any) -> dict[str, str] | None:
    """``{"task_id", "sha256"}`` from a row's ground truth (JSON text or a mapping), or None."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise TaskLookupError("ground_truth is not JSON (expected {task_id, sha256})") from None
    if not isinstance(value, Mapping) or not all(
        isinstance(value.get(k), str) for k in ("task_id", "sha256")
    ):
        raise TaskLookupError("ground_truth must be {task_id, sha256} (an envcraft VERL export)")
    return {"task_id": value["task_id"], "sha256": value["sha256"]}


def load_index(path: str | os.PathLike[str] | None = None) -> TaskIndex:
    """The task set at ``path`` (a ``tasks.jsonl`` or its directory; default ``$ENVCRAFT_TASKS``)."""
    if path is None or str(path) == "":
        path = os.environ.get(TASKS_ENV)
        if not path:
            raise TaskLookupError(
                "no task set given: pass the export's agent_loop.yaml as "
                "actor_rollout_ref.rollout.agent.agent_loop_config_path (its tasks: names the "
                f"export's tasks.jsonl), or set {TASKS_ENV} to that tasks.jsonl (or its directory) "
                "where the agent loop runs (for the verl.plugins entry point alone)"
            )
    file = Path(path)
    if file.is_dir():
        file = file / TASKS_FILE
    try:
        stamp = file.stat().st_mtime_ns
    except OSError:
        raise TaskLookupError(f"{file}: no such task set") from None
    return _cached(str(file.resolve()), stamp)


@lru_cache(maxsize=8)
def _cached(file: str, stamp: int) -> TaskIndex:
    try:
        return TaskIndex(read_tasks(file))
    except (TaskSetError, OSError) as exc:
        raise TaskLookupError(str(exc)) from None
