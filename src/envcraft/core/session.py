"""A session: one rollout's sandbox of state, workspace and action log.

All calls, whichever door they come through (Python, CLI inside the sandbox, MCP, trainer
adapters), go through :meth:`Session.call`, which never raises an ``Exception`` (an interrupt
such as Ctrl-C undoes the call and propagates).

The state lives in a :class:`~envcraft.core.statetree.StateTree` (or, for an environment that
wraps a foreign object, a :class:`~envcraft.core.live.LiveTree`), which validates, undoes and
serializes at the cost of what each call changed. The durable store writes the canonical JSON
on every changing call; the in-memory one hashes nothing until asked (``state()``,
``state_hash()``, ``actions()``, ``save()``).
"""

from __future__ import annotations

import contextvars
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson

from envcraft.core.environment import Environment, Initial
from envcraft.core.errors import (
    INTERNAL_ERROR_MESSAGE,
    SESSION_NOT_FOUND_MESSAGE,
    ErrorCategory,
    error_result,
    is_error,
)
from envcraft.core.live import LiveTree
from envcraft.core.package import EnvPackage, PackageError, load_package
from envcraft.core.state import state_hash, strict_copy
from envcraft.core.statetree import StateRejected, StateTree
from envcraft.core.store import (
    DEFAULT_LOCK_TIMEOUT,
    LOG_FILE,
    STATE_FILE,
    FileStore,
    MemoryStore,
    StoreError,
    log_line,
    sha256_bytes,
)
from envcraft.core.workspace import Workspace, atomic_write_bytes

log = logging.getLogger("envcraft.session")

META_FILE = "session.json"
WORKSPACE_DIR = "workspace"
DAMAGED_STATE_MESSAGE = "The session is damaged: its state.json does not load ({reason})."
# Set while a system tool serves a domain call (``envcraft-tool`` inside the sandboxed shell):
# such calls are logged with ``"via": "shell"``, so a reader of actions.jsonl (``tasks play``)
# tells the agent's own calls from those its shell commands made.
_NESTED: contextvars.ContextVar[str | None] = contextvars.ContextVar("envcraft_nested_call", default=None)


class SessionError(Exception):
    """Opening a session failed; ``to_result`` gives the agent-safe error."""

    def __init__(self, category: ErrorCategory, message: str) -> None:
        super().__init__(message)
        self.category = category

    def to_result(self) -> dict[str, Any]:
        return error_result(self.category, str(self))


class SessionDamaged(SessionError):
    """A session directory whose files do not load (a bad input file, not a missing session).

    Nothing is written to such a session: not even the repair of its log's tail.
    """

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCategory.SESSION_NOT_FOUND, message)


class Session:
    """Bind an environment to a store and a workspace; dispatch calls safely.

    Create with :meth:`create` (durable, on disk), :meth:`memory` (fast path) or
    :meth:`open` (an existing on-disk session, possibly shared by several processes).
    """

    def __init__(
        self,
        package: EnvPackage,
        *,
        workspace: Workspace | None,
        seed: int,
        directory: Path | None,
        store: FileStore | MemoryStore,
    ) -> None:
        self.package = package
        self.directory = directory
        self._store = store
        self._workspace = workspace
        env_class = package.env_class
        self.env: Environment = env_class(
            None, data=package.data, workspace=workspace, clock=package.clock, seed=seed
        )
        self.env.call_tool = self._call_nested
        codec = env_class.live_codec
        self._tree: StateTree | LiveTree = (
            LiveTree(env_class.State, self.env, codec, self._replay)
            if codec is not None
            else StateTree(env_class.State, self.env)
        )
        self._versions: list[int] = []  # memory store: the state version after each logged call
        self._owned_tmp: Path | None = None
        self.lease: Any = None  # what a pool that lent this session knows it by (tasks.play.pool)

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(
        cls,
        env: str | Path | EnvPackage,
        directory: str | Path,
        *,
        state: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        seed: int = 0,
        size: int = 1,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        fsync: bool = False,
        workspace_dir: str | Path | None = None,
    ) -> Session:
        """A durable session in ``directory``: every call is locked, logged and persisted.

        A Claw session's workspace is ``directory/workspace`` unless ``workspace_dir`` names
        another (the shared workspace of a task's environments); ``session.json`` records it.
        ``ValueError`` (nothing written) when the initial state does not validate.
        """
        package = env if isinstance(env, EnvPackage) else load_package(env)
        root = Path(directory)
        workspace_root = Path(workspace_dir).resolve() if workspace_dir is not None else root / WORKSPACE_DIR
        session = cls(package, workspace=None, seed=seed, directory=root, store=MemoryStore())
        initial_files = session._load_initial(state, files, seed, size)
        text = session._tree.canonical()
        root.mkdir(parents=True, exist_ok=True)
        workspace = _make_workspace(package, workspace_root, initial_files)
        session._store = FileStore.initialize(root, text, lock_timeout=lock_timeout, fsync=fsync)
        session._workspace = session.env._workspace = workspace
        meta: dict[str, Any] = {"env": package.id, "package": str(package.root), "seed": seed}
        if workspace_dir is not None and workspace is not None:
            meta["workspace"] = str(workspace_root)
        atomic_write_bytes(root / META_FILE, json.dumps(meta, indent=2).encode("utf-8"))
        return session

    @classmethod
    def open(cls, directory: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Session:
        """Open an existing durable session: ``SessionError`` if it is gone, ``SessionDamaged``
        (a ``SessionError``) if its files do not load. Opening writes nothing."""
        root = Path(directory)
        meta_path = root / META_FILE
        try:
            present = meta_path.is_file() and (root / STATE_FILE).is_file()
        except OSError:
            present = False
        if not present:
            raise SessionError(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE)
        meta = _read_meta(meta_path)
        package = _meta_package(meta)
        if not (root / LOG_FILE).exists():
            raise SessionDamaged(f"the session {root} is damaged: {LOG_FILE} is missing")
        workspace_root = Path(meta["workspace"]) if "workspace" in meta else root / WORKSPACE_DIR
        workspace = Workspace(workspace_root) if package.kind == "claw" else None
        store = FileStore(root, lock_timeout=lock_timeout)
        session = cls(package, workspace=workspace, seed=meta["seed"], directory=root, store=store)
        try:
            session._sync_durable()
        except StoreError as exc:
            raise SessionError(exc.category, exc.message) from None
        finally:
            store.abort()
        return session

    @classmethod
    def memory(
        cls,
        env: str | Path | EnvPackage,
        *,
        state: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        seed: int = 0,
        size: int = 1,
        workspace_dir: str | Path | None = None,
    ) -> Session:
        """The in-memory fast path: no lock, no per-call I/O or hashing; :meth:`save` persists."""
        package = env if isinstance(env, EnvPackage) else load_package(env)
        session = cls(package, workspace=None, seed=seed, directory=None, store=MemoryStore())
        initial_files = session._load_initial(state, files, seed, size)
        if package.kind == "claw":
            if workspace_dir is None:
                session._owned_tmp = Path(tempfile.mkdtemp(prefix=f"envcraft-{package.id}-"))
                workspace_dir = session._owned_tmp
            session._workspace = _make_workspace(package, Path(workspace_dir), initial_files)
            session.env._workspace = session._workspace
        return session

    def _load_initial(
        self, state: dict[str, Any] | None, files: dict[str, str] | None, seed: int, size: int
    ) -> dict[str, str]:
        """Load S0 (given, or generated from the seed); returns the workspace files."""
        env_class = self.package.env_class
        if state is None:
            initial: Initial = env_class.generate(seed=seed, size=size, data=self.package.data)
            self._tree.load_model(initial.state)
            generated = {**self.package.workspace_template, **initial.files}
        else:
            self._tree.load_data(state)
            generated = self.package.workspace_template
        return generated if files is None else files

    # -- the one door -------------------------------------------------------------------
    def call(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool call; returns its result dict or a structured error. Never raises."""
        spec = self.package.env_class.tools.get(tool) if isinstance(tool, str) else None
        if spec is not None and not spec.annotations.exclusive:
            return self._call_unlocked(tool, args)
        try:
            index = self._begin()
        except (StoreError, SessionError) as exc:
            return exc.to_result()
        except Exception:
            log.exception("session infrastructure failure on %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=str(tool))
        try:
            return self._call_locked(index, tool, args)
        except BaseException as exc:
            # The tool (or the commit) failed half way, or the caller was interrupted: drop it all.
            self._tree.rollback()
            if self._workspace is not None:
                self._workspace.rollback()
            self._abort()
            if not isinstance(exc, Exception):
                raise
            log.exception("session infrastructure failure on %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=str(tool))

    def _call_nested(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """:meth:`call` for a call made from inside a system tool (logged with ``via``)."""
        token = _NESTED.set("shell")
        try:
            return self.call(tool, args)
        finally:
            _NESTED.reset(token)

    def _call_locked(self, index: int, tool: str, args: dict[str, Any] | None) -> dict[str, Any]:
        env, tree = self.env, self._tree
        env.action_index = index
        tree.begin()
        result = env.invoke(tool, args)
        changed = False
        if not is_error(result):
            result = _checked_result(result, tool)
        if is_error(result):
            tree.rollback()
        else:
            try:
                changed = tree.finish((tool, args, index), result)
            except StateRejected as exc:
                log.error("tool %s left a state its State model refuses: %s", tool, exc)
                result = error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
        text: bytes | None = None
        digest: str | None = None
        if changed and isinstance(self._store, FileStore):
            try:
                text = tree.canonical()
            except (ValueError, TypeError):  # text UTF-8 cannot hold, say: refuse the state
                log.exception("tool %s produced a state that cannot be serialized", tool)
                tree.rollback()
                changed, text = False, None
                result = error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
            else:
                digest = sha256_bytes(text)
                if digest == self._tree.digest():  # the same state again: nothing to write
                    text = None
        if is_error(result):
            if self._workspace is not None:
                self._workspace.rollback()
        elif self._workspace is not None:
            self._workspace.commit()
        self._commit(index, tool, args, result, text, digest, changed)
        if changed:
            tree.accept(digest)
        return result

    def _replay(self, live: Any, call: tuple[str, Any, int]) -> dict[str, Any]:
        """Run a logged call again on ``live`` (a live-object tree rebuilding an earlier version)."""
        tool, args, index = call
        env = self.env
        saved = env.live, env.action_index
        env.live, env.action_index = live, index
        try:
            return env.invoke(tool, args)
        finally:
            env.live, env.action_index = saved

    def _call_unlocked(self, tool: str, args: dict[str, Any] | None) -> dict[str, Any]:
        """A system tool: run without the lock (it may call back in), then log it."""
        try:
            result = self.env.invoke(tool, args)
            if not is_error(result):
                result = _checked_result(result, tool)
            if self._workspace is not None:
                if is_error(result):
                    self._workspace.rollback()
                else:
                    self._workspace.commit()
            index = self._begin()
        except (StoreError, SessionError) as exc:
            return exc.to_result()
        except Exception:
            log.exception("session infrastructure failure on %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
        try:
            self._commit(index, tool, args, result, None, None, False)
        except BaseException as exc:
            self._abort()
            if not isinstance(exc, Exception):
                raise
            log.exception("could not log system tool call %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
        return result

    def _begin(self) -> int:
        """Start a transaction: the durable store's lock and current state; the action index."""
        if isinstance(self._store, MemoryStore):
            return self._store.next_index
        return self._sync_durable()

    def _sync_durable(self) -> int:
        """Lock; reload the state if another process committed since; the next index."""
        assert isinstance(self._store, FileStore)
        begun = self._store.begin()
        if begun.text is None:
            return begun.index
        try:
            self._tree.load_json(begun.text, begun.digest)
        except ValueError as exc:
            self._store.abort()
            raise SessionDamaged(DAMAGED_STATE_MESSAGE.format(reason=error_reason(exc))) from None
        except BaseException:
            self._store.abort()
            raise
        return self._store.recover(begun.digest)

    def _commit(
        self,
        index: int,
        tool: str,
        args: Any,
        result: dict[str, Any],
        text: bytes | None,
        digest: str | None,
        changed: bool,
    ) -> None:
        entry = {"index": index, "time": self.env.clock.iso_at(index), "tool": tool, "args": args,
                 "result": result, "state_hash": ""}  # fmt: skip
        via = _NESTED.get()
        if via is not None:
            entry["via"] = via
        if isinstance(self._store, FileStore):
            entry["state_hash"] = digest if digest is not None else self._tree.digest()
            self._store.commit(entry, text, entry["state_hash"], index)
        else:
            self._store.commit(entry)
            self._versions.append(self._tree.version + (1 if changed else 0))

    def _abort(self) -> None:
        if isinstance(self._store, FileStore):
            self._store.abort()

    # -- inspection ---------------------------------------------------------------------
    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of this session's environment."""
        return self.package.env_class.openai_tools()

    def _current(self) -> None:
        """A durable session catches up with commits other processes made."""
        if isinstance(self._store, FileStore):
            try:
                self._sync_durable()
            finally:
                self._store.abort()

    def state(self) -> dict[str, Any]:
        """The committed state as plain JSON data."""
        self._current()
        text = self._tree.canonical()
        try:
            data: dict[str, Any] = orjson.loads(text)
        except orjson.JSONDecodeError:  # integers beyond 64 bits: the slower parser reads them
            data = json.loads(text)
        return data

    def state_hash(self) -> str:
        self._current()
        return self._tree.digest()

    def files(self) -> dict[str, str]:
        """The workspace content (empty for tool environments)."""
        return self._workspace.snapshot() if self._workspace is not None else {}

    def snapshot_hash(self) -> str:
        """Hash of state and workspace together: the identity of a final outcome."""
        return state_hash({"state": self.state(), "workspace": self.files()})

    def actions(self) -> list[dict[str, Any]]:
        """The log: ``{"index", "time", "tool", "args", "result", "state_hash"}`` per call."""
        if isinstance(self._store, FileStore):
            return self._store.entries()
        entries = self._store.entries()
        for entry, version in zip(entries, self._versions, strict=True):
            if not entry["state_hash"]:
                entry["state_hash"] = self._tree.digest_of(version)
        return [dict(e) for e in entries]

    @property
    def workspace_root(self) -> Path | None:
        return self._workspace.root if self._workspace is not None else None

    def save(self, directory: str | Path) -> Path:
        """Persist a session (any store) as a durable session directory.

        Everything is serialized before anything is written; ``session.json`` comes last,
        so a directory without it is not a session.
        """
        root = Path(directory)
        text = self._tree.canonical()
        lines = b"".join(log_line(e) for e in self.actions())
        meta = {"env": self.package.id, "package": str(self.package.root), "seed": self.env.seed}
        meta_bytes = json.dumps(meta, indent=2).encode("utf-8")
        root.mkdir(parents=True, exist_ok=True)
        if self._workspace is not None and self._workspace.root != (root / WORKSPACE_DIR).resolve():
            shutil.copytree(self._workspace.root, root / WORKSPACE_DIR, dirs_exist_ok=True, symlinks=True)
        atomic_write_bytes(root / LOG_FILE, lines)
        atomic_write_bytes(root / STATE_FILE, text)
        atomic_write_bytes(root / META_FILE, meta_bytes)
        return root

    # -- reuse ---------------------------------------------------------------------------
    def mark(self) -> None:
        """Remember the state now (an in-memory session between calls) for :meth:`rewind`;
        its canonical text too, so a rewound session serves :meth:`state` without a dump."""
        if isinstance(self._store, MemoryStore) and isinstance(self._tree, StateTree):
            self._tree.canonical()
            self._tree.mark()

    def rewind(self) -> bool:
        """Make this in-memory session what it was at :meth:`mark`, in O(what changed since):
        the calls undone, the log empty, the next action index 0. The workspace is not the
        session's to restore (it may be shared). False, changing nothing, when the session
        cannot go back (durable, never marked, or a change was checked as a whole state)."""
        if not isinstance(self._store, MemoryStore) or not isinstance(self._tree, StateTree):
            return False
        if not self._tree.rewind():
            return False
        self._store = MemoryStore()
        self._versions = []
        self.env.action_index = 0
        return True

    def bind_workspace(self, root: Path) -> None:
        """Act on the Claw workspace at ``root`` from now on (a rewound session's next task)."""
        if self.package.kind == "claw":
            self._workspace = self.env._workspace = Workspace(root)

    def close(self) -> None:
        if self._owned_tmp is not None:
            shutil.rmtree(self._owned_tmp, ignore_errors=True)
            self._owned_tmp = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _checked_result(result: dict[str, Any], tool: str) -> dict[str, Any]:
    """A result must be strict JSON (no NaN or infinity): else it is the tool's bug."""
    try:
        strict_copy(result)
    except (TypeError, ValueError, RecursionError):
        log.error("tool %s returned a result JSON cannot hold", tool)
        return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
    return result


def _read_meta(path: Path) -> dict[str, Any]:
    """``session.json``, checked: env and package strings, an integer seed."""
    try:
        meta = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise SessionDamaged(f"{path} is not valid JSON: {error_reason(exc)}") from None
    if not isinstance(meta, dict):
        raise SessionDamaged(f"{path} must hold a JSON object, not {type(meta).__name__}")
    problems = [k for k in ("env", "package") if not isinstance(meta.get(k), str)]
    if problems:
        raise SessionDamaged(f"{path} lacks the string field(s) {', '.join(problems)}")
    seed = meta.get("seed", 0)
    if type(seed) is not int:
        raise SessionDamaged(f"{path}: seed must be an integer, not {seed!r:.40}")
    if "workspace" in meta and not isinstance(meta["workspace"], str):
        raise SessionDamaged(f"{path}: workspace must be a path string")
    return {**meta, "seed": seed}


def _meta_package(meta: dict[str, Any]) -> EnvPackage:
    """The session's package: where it was, else the built-in of the same id."""
    recorded = Path(meta["package"])
    try:
        ref: str | Path = recorded if recorded.is_dir() else meta["env"]
        return load_package(ref)
    except (PackageError, OSError) as exc:
        raise SessionDamaged(
            f"the session's environment {meta['env']!r} cannot be loaded "
            f"(its package {recorded} is gone or broken: {error_reason(exc)})"
        ) from None


def error_reason(exc: BaseException) -> str:
    """One line naming what is wrong (the first validation error with its field)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors(include_url=False)
        except TypeError:
            found = errors()
        if found:
            first = found[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "the state"
            return f"{where}: {first.get('msg', '')}"[:300]
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _make_workspace(package: EnvPackage, root: Path, files: dict[str, str]) -> Workspace | None:
    if package.kind != "claw":
        return None
    root.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root)
    workspace.populate(files)
    return workspace
