"""A byte-offset index of a task set, so one task is read without parsing all of them.

A task carries its whole initial state and workspace, so ``tasks.jsonl`` runs to tens of
megabytes; ``tasks show``, ``play`` and ``score`` want one task or a few. Beside
``tasks.jsonl`` lies ``tasks.index.json``: each task's id, byte offset and length, line
number, and what ``tasks list`` filters on (environments, kind, user turns), stamped with the
size and modification time of the ``tasks.jsonl`` it describes. It is written with the task
set; when it is missing, or the file changed since (a hand edit, a merge), it is rebuilt from
one scan and written again (or only kept in memory where the directory is read-only). A line
read through it must still carry the id asked for, else the index is rebuilt once.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from envcraft.core.workspace import atomic_write_bytes

INDEX_SUFFIX = ".index.json"
FORMAT = "envcraft-task-index/1"


@dataclass(frozen=True)
class Entry:
    """Where one task lies in its ``tasks.jsonl`` and what a listing shows of it."""

    id: str
    offset: int
    length: int
    line: int
    envs: tuple[str, ...]
    kind: str
    turns: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "envs": list(self.envs), "kind": self.kind, "turns": self.turns}


def index_path(tasks_file: Path) -> Path:
    """``tasks.jsonl`` -> ``tasks.index.json`` (any ``NAME.jsonl`` -> ``NAME.index.json``)."""
    return tasks_file.with_name(tasks_file.name.removesuffix(".jsonl") + INDEX_SUFFIX)


def entry(value: Any, offset: int, length: int, line: int) -> Entry:
    """The index entry of one parsed task line; ``ValueError`` when it is not a task with an id."""
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        raise ValueError("not a task (no string id)")
    envs = value.get("envs")
    turns = value.get("turns")
    return Entry(
        id=value["id"],
        offset=offset,
        length=length,
        line=line,
        envs=tuple(e for e in envs if isinstance(e, str)) if isinstance(envs, list) else (),
        kind=str(value.get("kind", "")),
        turns=len(turns) if isinstance(turns, list) else 0,
    )


def write_index(tasks_file: Path, entries: Iterable[Entry]) -> None:
    """Write the index of ``tasks_file`` as it is on disk now; a directory that refuses the
    write only costs the next reader a scan."""
    with contextlib.suppress(OSError):
        atomic_write_bytes(index_path(tasks_file), _encode(tasks_file, list(entries)))


def load(tasks_file: Path, *, rebuild: bool = False) -> list[Entry]:
    """The entries of ``tasks_file``, from its index when that is current, else from a scan
    (then written beside it). ``ValueError`` names the line of a task that cannot be indexed."""
    if not rebuild:
        current = _read_current(tasks_file)
        if current is not None:
            return current
    entries = _scan(tasks_file)
    write_index(tasks_file, entries)
    return entries


def read_line(tasks_file: Path, at: Entry) -> bytes:
    """The bytes of one task's line."""
    with open(tasks_file, "rb") as handle:
        handle.seek(at.offset)
        return handle.read(at.length)


def _stamp(tasks_file: Path) -> dict[str, int]:
    info = os.stat(tasks_file)
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _encode(tasks_file: Path, entries: list[Entry]) -> bytes:
    rows = [[e.id, e.offset, e.length, e.line, list(e.envs), e.kind, e.turns] for e in entries]
    document = {
        "format": FORMAT,
        "columns": ["id", "offset", "length", "line", "envs", "kind", "turns"],
        "tasks_file": {"name": tasks_file.name, **_stamp(tasks_file)},
        "tasks": rows,
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _read_current(tasks_file: Path) -> list[Entry] | None:
    """The stored entries, or None when there is no index or it describes another file."""
    try:
        document = orjson.loads(index_path(tasks_file).read_bytes())
        stamp = _stamp(tasks_file)
        if document.get("format") != FORMAT:
            return None
        described = document["tasks_file"]
        if described["size"] != stamp["size"] or described["mtime_ns"] != stamp["mtime_ns"]:
            return None
        return [Entry(r[0], r[1], r[2], r[3], tuple(r[4]), r[5], r[6]) for r in document["tasks"]]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _scan(tasks_file: Path) -> list[Entry]:
    entries: list[Entry] = []
    offset = 0
    with open(tasks_file, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    entries.append(entry(orjson.loads(line), offset, len(line), number))
                except ValueError as exc:  # orjson's JSONDecodeError is a ValueError
                    raise ValueError(f"{tasks_file} line {number}: {exc}") from None
            offset += len(line)
    return entries
