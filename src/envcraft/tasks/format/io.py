"""Task-set directories on disk (``DIR/tasks.jsonl``, one task a line, and an optional
``DIR/stats.json``) and agent trajectory files (``{"task_id", "turns"}`` per line).

Writes are atomic (temp file + ``os.replace``) so a reader never sees half a task set, and a
malformed line is reported by its number, because task sets are edited and merged by hand.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envcraft.core.jsonio import JsonInputError
from envcraft.core.jsonio import loads as strict_json
from envcraft.core.workspace import atomic_write_bytes
from envcraft.tasks.format import index
from envcraft.tasks.format.model import Task

TASKS_FILE = "tasks.jsonl"
STATS_FILE = "stats.json"


class TaskSetError(ValueError):
    """A task-set directory or JSONL file that cannot be read; the message names the place."""


class UnknownTaskError(TaskSetError):
    """A task id the set does not hold; the message offers the closest ids."""


def write_tasks(directory: str | Path, tasks: Iterable[Task]) -> Path:
    """Write ``tasks`` to ``directory/tasks.jsonl`` atomically, and its index beside it
    (:mod:`envcraft.tasks.format.index`); returns the file's path."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    lines: list[bytes] = []
    entries: list[index.Entry] = []
    offset = 0
    for number, task in enumerate(tasks, start=1):
        value = task.model_dump(mode="json")
        line = (json.dumps(value, ensure_ascii=False) + "\n").encode("utf-8")
        entries.append(index.entry(value, offset, len(line), number))
        lines.append(line)
        offset += len(line)
    path = root / TASKS_FILE
    atomic_write_bytes(path, b"".join(lines))
    index.write_index(path, entries)
    return path


def read_tasks(directory: str | Path) -> list[Task]:
    """Read every task of a task-set directory (or of a ``.jsonl`` file given directly)."""
    path = tasks_path(directory)
    return [_task(path, number, value) for number, value in iter_jsonl(path)]


def _task(path: Path, number: int, value: Any) -> Task:
    try:
        return Task.model_validate(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "task"
        raise TaskSetError(f"{path} line {number}: invalid task: {where}: {first['msg']}") from None


def task_entries(directory: str | Path) -> list[index.Entry]:
    """Every task's id, environments, kind and turn count, from the set's index (no task parsed)."""
    path = tasks_path(directory)
    try:
        return index.load(path)
    except ValueError as exc:
        raise TaskSetError(str(exc)) from None


def read_task(directory: str | Path, task_id: str) -> Task:
    """One task by id, read alone through the set's index; :class:`UnknownTaskError` (with the
    closest ids) when the set has none by that id."""
    found = read_some(directory, [task_id])
    if task_id not in found:
        ids = [e.id for e in task_entries(directory)]
        raise UnknownTaskError(f"no task {task_id!r} in {tasks_path(directory)}{_closest(task_id, ids)}")
    return found[task_id]


def read_some(directory: str | Path, task_ids: Iterable[str]) -> dict[str, Task]:
    """The tasks of ``task_ids`` the set holds, each read alone through the index (an id it
    does not hold is left out). A line that no longer carries its id rebuilds the index once."""
    path = tasks_path(directory)
    wanted = list(dict.fromkeys(task_ids))
    for rebuild in (False, True):
        try:
            where = {e.id: e for e in index.load(path, rebuild=rebuild)}
        except ValueError as exc:
            raise TaskSetError(str(exc)) from None
        found: dict[str, Task] = {}
        for task_id in wanted:
            at = where.get(task_id)
            if at is None:
                continue
            try:
                value = strict_json(index.read_line(path, at))
            except JsonInputError as exc:
                if rebuild:
                    raise TaskSetError(f"{path} line {at.line}: {exc}") from None
                break
            if not isinstance(value, dict) or value.get("id") != task_id:
                break  # the file changed under an index that still looks current
            found[task_id] = _task(path, at.line, value)
        else:
            return found
    raise TaskSetError(f"{path}: its index does not match the file even after a rebuild")


def _closest(task_id: str, ids: list[str]) -> str:
    """``; did you mean ...`` for the ids that share the most with ``task_id``."""
    near = [i for i in ids if task_id and task_id in i][:3] or difflib.get_close_matches(task_id, ids, n=3)
    if not near:
        return f" ({len(ids)} tasks; `envcraft tasks list` shows them)"
    return f"; did you mean {', '.join(near)}?"


def tasks_path(directory: str | Path) -> Path:
    """The ``tasks.jsonl`` of a task-set directory; a ``.jsonl`` path is taken as is."""
    path = Path(directory)
    if path.is_file():
        return path
    candidate = path / TASKS_FILE
    if not candidate.is_file():
        raise TaskSetError(f"{path}: no {TASKS_FILE} (not a task-set directory)")
    return candidate


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; ``TaskSetError`` on bad JSON."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, strict_json(line)
            except JsonInputError as exc:
                raise TaskSetError(f"{path} line {number}: {exc}") from None


def read_stats(directory: str | Path) -> dict[str, Any] | None:
    """The set's ``stats.json`` (written by the generator), or None when there is none."""
    path = Path(directory) / STATS_FILE
    if not path.is_file():
        return None
    try:
        value = strict_json(path.read_bytes())
    except JsonInputError as exc:
        raise TaskSetError(f"{path}: {exc}") from None
    return value if isinstance(value, dict) else None


def write_json(path: str | Path, value: Any) -> None:
    """Write one JSON document atomically (stats, summaries)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


@dataclass
class TrajectoryLine:
    """One line of a trajectories file: the calls an agent made per user turn, or why it is unusable."""

    line: int
    task_id: str | None = None
    turns: list[list[Any]] | None = None
    error: str | None = None
    messages: list[Any] | None = None  # the conversation, when the line carries it (eval writes it)
    # the line's other keys (a label, a note, the sampling temperature): what a caller tagged the
    # run with, handed back beside its score so scores and runs match by more than line order
    extra: dict[str, Any] = field(default_factory=dict)


def read_trajectories(path: str | Path) -> Iterator[TrajectoryLine]:
    """Each non-blank line of a trajectories JSONL file, parsed; bad lines carry an ``error``."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield _trajectory(number, raw)


def _trajectory(number: int, raw: bytes) -> TrajectoryLine:
    try:
        value = strict_json(raw)
    except JsonInputError as exc:  # bad bytes, bad JSON, NaN, too deep: this line only
        return TrajectoryLine(number, error=str(exc))
    if not isinstance(value, dict):
        return TrajectoryLine(number, error="a trajectory must be a JSON object {task_id, turns}")
    task_id = value.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        return TrajectoryLine(number, error="missing task_id (a string)")
    turns = value.get("turns")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        return TrajectoryLine(number, task_id, error="turns must be a list of lists of calls")
    messages = value.get("messages")
    extra = {k: v for k, v in value.items() if k not in ("task_id", "turns", "messages")}
    return TrajectoryLine(
        number, task_id, turns, messages=messages if isinstance(messages, list) else None, extra=extra
    )
