"""Where a session's state and action log live, and how they change safely.

``FileStore`` is the durable store: ``state.json`` (canonical JSON, replaced atomically),
``actions.jsonl`` (one line per call, appended *before* the state is replaced) and a file
lock with a bounded timeout. Because the log line is written first, a process killed at
any instant leaves a state equal to the state after some prefix of the logged actions;
the next transaction drops a torn or orphaned last line. ``MemoryStore`` is the explicit
fast path for rollouts that need no per-call durability.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from envcraft.core.errors import (
    LOCK_TIMEOUT_MESSAGE,
    SESSION_NOT_FOUND_MESSAGE,
    ErrorCategory,
    error_result,
)
from envcraft.core.state import sha256_text
from envcraft.core.workspace import atomic_write_bytes

STATE_FILE = "state.json"
LOG_FILE = "actions.jsonl"
LOCK_FILE = ".lock"
DEFAULT_LOCK_TIMEOUT = 5.0
_TAIL_CHUNK = 8192


class StoreError(Exception):
    """An infrastructure failure that callers turn into a structured error result."""

    def __init__(self, category: ErrorCategory, message: str) -> None:
        super().__init__(message)
        self.category = category
        self.message = message

    def to_result(self) -> dict[str, Any]:
        return error_result(self.category, self.message)


@dataclass(frozen=True)
class Committed:
    """The last committed point of a session: state text, its hash, and the next index."""

    text: str
    hash: str
    index: int


class Store(Protocol):
    def begin(self) -> Committed: ...
    def commit(self, entry: dict[str, Any], new_text: str | None, new_hash: str) -> None: ...
    def abort(self) -> None: ...
    def entries(self) -> list[dict[str, Any]]: ...


class MemoryStore:
    """State and log in memory; persist with :meth:`save` at episode end, or never."""

    def __init__(self, text: str) -> None:
        self._committed = Committed(text, sha256_text(text), 0)
        self._entries: list[dict[str, Any]] = []

    def begin(self) -> Committed:
        return self._committed

    def commit(self, entry: dict[str, Any], new_text: str | None, new_hash: str) -> None:
        self._entries.append(entry)
        text = self._committed.text if new_text is None else new_text
        self._committed = Committed(text, new_hash, self._committed.index + 1)

    def abort(self) -> None:
        pass

    def entries(self) -> list[dict[str, Any]]:
        return list(self._entries)


class FileStore:
    """Durable, multi-process-safe session store in one directory."""

    def __init__(self, root: Path, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, fsync: bool = False):
        self.root = root
        self.state_path = root / STATE_FILE
        self.log_path = root / LOG_FILE
        self.fsync = fsync
        self._lock = FileLock(str(root / LOCK_FILE), timeout=lock_timeout)
        self._cache: Committed | None = None

    @classmethod
    def initialize(cls, root: Path, text: str, **kwargs: Any) -> FileStore:
        root.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(root / STATE_FILE, text.encode("utf-8"))
        (root / LOG_FILE).write_bytes(b"")
        return cls(root, **kwargs)

    def begin(self) -> Committed:
        if not self.state_path.is_file():
            raise StoreError(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE)
        try:
            self._lock.acquire()
        except Timeout:
            raise StoreError(ErrorCategory.LOCK_TIMEOUT, LOCK_TIMEOUT_MESSAGE) from None
        try:
            text = self.state_path.read_text(encoding="utf-8")
            digest = self._cache.hash if self._cache and self._cache.text == text else sha256_text(text)
            index = self._recover_log(digest)
        except FileNotFoundError:
            self._lock.release()
            raise StoreError(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE) from None
        except BaseException:
            self._lock.release()
            raise
        self._cache = Committed(text, digest, index)
        return self._cache

    def commit(self, entry: dict[str, Any], new_text: str | None, new_hash: str) -> None:
        try:
            line = _log_line(entry)
            with open(self.log_path, "ab") as handle:
                handle.write(line)
                if self.fsync:
                    handle.flush()
                    os.fsync(handle.fileno())
            if new_text is not None:
                atomic_write_bytes(self.state_path, new_text.encode("utf-8"), fsync=self.fsync)
            assert self._cache is not None
            text = self._cache.text if new_text is None else new_text
            self._cache = Committed(text, new_hash, self._cache.index + 1)
        finally:
            self._lock.release()

    def abort(self) -> None:
        if self._lock.is_locked:
            self._lock.release()

    def entries(self) -> list[dict[str, Any]]:
        """All complete, committed log entries (a torn last line is ignored)."""
        return read_log(self.log_path)

    def _recover_log(self, state_digest: str) -> int:
        """Drop a torn or orphaned last line; return the number of committed actions.

        A torn line (no newline, bad JSON) is a write cut short. An orphan is one complete
        last line whose ``state_hash`` never reached ``state.json``: its writer died between
        the append and the replace. Only one orphan can exist, so at most one is dropped.
        """
        orphan_dropped = False
        with open(self.log_path, "rb+") as handle:
            while True:
                start, last = _last_line(handle)
                if last is None:
                    return 0
                entry = _parse_line(last)
                if entry is None:
                    handle.truncate(start)
                    continue
                if entry.get("state_hash") != state_digest and not orphan_dropped:
                    handle.truncate(start)
                    orphan_dropped = True
                    self._remove_stale_state_temps()
                    continue
                return int(entry["index"]) + 1

    def _remove_stale_state_temps(self) -> None:
        """An orphan's writer may have died between creating its temp file and ``os.replace``.

        Only a lock holder writes ``state.json``, and we hold the lock, so every such temp
        file is stale; without this each crash could leak one state-sized file.
        """
        for stale in self.root.glob(f".{STATE_FILE}.*.tmp"):
            stale.unlink(missing_ok=True)


def _log_line(entry: dict[str, Any]) -> bytes:
    """One JSON line; text UTF-8 cannot hold (a lone surrogate from a ``\\ud800`` escape in an
    agent's arguments) is kept as a JSON escape, so the call is still logged exactly."""
    text = json.dumps(entry, ensure_ascii=False, default=str)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(entry, default=str) + "\n").encode("ascii")


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    if not raw.endswith(b"\n"):
        return None
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("index"), int) else None


def _last_line(handle: Any) -> tuple[int, bytes | None]:
    """Offset and bytes of the last line (with its newline, if it has one)."""
    handle.seek(0, os.SEEK_END)
    end = handle.tell()
    if end == 0:
        return 0, None
    pos = end
    buffer = b""
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        handle.seek(pos)
        buffer = handle.read(step) + buffer
        cut = buffer.rfind(b"\n", 0, len(buffer) - 1)
        if cut >= 0:
            return pos + cut + 1, buffer[cut + 1 :]
    return 0, buffer


def read_log(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    if not path.is_file():
        return entries
    with open(path, "rb") as handle:
        for raw in handle:
            entry = _parse_line(raw)
            if entry is None:
                break
            entries.append(entry)
    return entries
