"""Where a session's state and action log live, and how they change safely.

``FileStore`` is the durable store: ``state.json`` (canonical JSON, replaced atomically),
``actions.jsonl`` (one line per call, appended *before* the state is replaced) and a file
lock with a bounded timeout. Because the log line is written first, a process killed at
any instant leaves a state equal to the state after some prefix of the logged actions;
the next transaction drops a torn or orphaned last line (only after the state it is checked
against has loaded, so a damaged state never costs a log line). Between two calls of the same
process nothing is re-read: a fingerprint of both files says whether anyone else committed.
``MemoryStore`` keeps the log of the explicit fast path for rollouts.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from envcraft.core.errors import (
    LOCK_TIMEOUT_MESSAGE,
    SESSION_NOT_FOUND_MESSAGE,
    ErrorCategory,
    error_result,
)
from envcraft.core.workspace import atomic_write_bytes

STATE_FILE = "state.json"
LOG_FILE = "actions.jsonl"
LOCK_FILE = ".lock"
DEFAULT_LOCK_TIMEOUT = 5.0
_TAIL_CHUNK = 8192
UNLOGGABLE = "<arguments nested too deeply to log>"
DAMAGED_LOG_MESSAGE = "The session is damaged: its action log (actions.jsonl) is missing."


class StoreError(Exception):
    """An infrastructure failure that callers turn into a structured error result."""

    def __init__(self, category: ErrorCategory, message: str) -> None:
        super().__init__(message)
        self.category = category
        self.message = message

    def to_result(self) -> dict[str, Any]:
        return error_result(self.category, self.message)


@dataclass(frozen=True)
class Begun:
    """What a locked transaction starts from.

    ``text`` is the committed state when it must be (re)loaded (first use, or another process
    committed since): the session validates it, then calls :meth:`FileStore.recover` for the
    index. ``None`` when the state is the one this store last committed itself.
    """

    text: bytes | None
    digest: str
    index: int


class MemoryStore:
    """The log of an in-memory session (the state itself lives in the session's tree)."""

    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []

    @property
    def next_index(self) -> int:
        return len(self._entries)

    def commit(self, entry: dict[str, Any]) -> None:
        self._entries.append(entry)

    def entries(self) -> list[dict[str, Any]]:
        return self._entries


_Fingerprint = tuple[int, int, int, int, int]


class FileStore:
    """Durable, multi-process-safe session store in one directory."""

    def __init__(self, root: Path, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, fsync: bool = False):
        self.root = root
        self.state_path = root / STATE_FILE
        self.log_path = root / LOG_FILE
        self.fsync = fsync
        self._lock = FileLock(str(root / LOCK_FILE), timeout=lock_timeout)
        self._known: tuple[_Fingerprint, str, int] | None = None  # after our last commit

    @classmethod
    def initialize(cls, root: Path, text: bytes, **kwargs: Any) -> FileStore:
        root.mkdir(parents=True, exist_ok=True)
        (root / LOG_FILE).write_bytes(b"")
        atomic_write_bytes(root / STATE_FILE, text)
        store = cls(root, **kwargs)
        store._known = (store._fingerprint(), sha256_bytes(text), 0)
        return store

    def begin(self) -> Begun:
        """Take the lock; the state to load if it is not the one we committed last."""
        if not self.state_path.is_file():
            raise StoreError(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE)
        try:
            self._lock.acquire()
        except Timeout:
            raise StoreError(ErrorCategory.LOCK_TIMEOUT, LOCK_TIMEOUT_MESSAGE) from None
        try:
            if not self.log_path.exists():
                raise StoreError(ErrorCategory.SESSION_NOT_FOUND, DAMAGED_LOG_MESSAGE)
            known = self._known
            if known is not None and self._fingerprint() == known[0]:
                return Begun(None, known[1], known[2])
            text = self.state_path.read_bytes()
        except FileNotFoundError:
            self._lock.release()
            raise StoreError(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE) from None
        except BaseException:
            self._lock.release()
            raise
        return Begun(text, sha256_bytes(text), -1)

    def recover(self, digest: str) -> int:
        """After the state loaded: repair the log tail against it; the next action index."""
        index = self._recover_log(digest)
        self._known = (self._fingerprint(), digest, index)
        return index

    def commit(self, entry: dict[str, Any], new_text: bytes | None, new_hash: str, index: int) -> None:
        """Append the log line, then replace the state (when it changed); releases the lock."""
        try:
            line = log_line(entry)
            with open(self.log_path, "ab") as handle:
                handle.write(line)
                if self.fsync:
                    handle.flush()
                    os.fsync(handle.fileno())
            if new_text is not None:
                atomic_write_bytes(self.state_path, new_text, fsync=self.fsync)
            self._known = (self._fingerprint(), new_hash, index + 1)
        finally:
            self._lock.release()

    def abort(self) -> None:
        if self._lock.is_locked:
            self._lock.release()

    def entries(self) -> list[dict[str, Any]]:
        """All complete, committed log entries (a torn last line is ignored)."""
        return read_log(self.log_path)

    def _fingerprint(self) -> _Fingerprint:
        """Identity of what is on disk: a commit appends to the log and replaces the state file."""
        state = os.stat(self.state_path)
        log = os.stat(self.log_path)
        return (state.st_ino, state.st_mtime_ns, state.st_size, log.st_ino, log.st_size)

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


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def jsonable(value: Any) -> Any:
    """A JSON-safe stand-in for a logged value that strict JSON cannot hold as it is:
    non-finite floats become their names, keys strings, other objects their ``str``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def log_line(entry: dict[str, Any]) -> bytes:
    """One strict-JSON line. Text UTF-8 cannot hold (a lone surrogate from a ``\\ud800`` escape
    in an agent's arguments) is kept as a JSON escape, so the call is still logged exactly;
    values JSON cannot hold at all (NaN, non-string keys) are logged as :func:`jsonable` has them."""
    try:
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        entry = jsonable(entry)
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False)
    except RecursionError:  # arguments nested too deeply to write (the call was refused)
        entry = {**entry, "args": UNLOGGABLE}
        text = json.dumps(jsonable(entry), ensure_ascii=False, allow_nan=False)
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(entry, allow_nan=False) + "\n").encode("ascii")


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
