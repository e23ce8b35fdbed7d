"""A session: one rollout's sandbox of state, workspace and action log.

All calls, whichever door they come through (Python, CLI inside the sandbox, MCP, trainer
adapters), go through :meth:`Session.call`, which never raises.
"""

from __future__ import annotations

import contextvars
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envcraft.core.clock import iso
from envcraft.core.environment import Environment, Initial
from envcraft.core.errors import (
    INTERNAL_ERROR_MESSAGE,
    SESSION_NOT_FOUND_MESSAGE,
    ErrorCategory,
    error_result,
    is_error,
)
from envcraft.core.package import EnvPackage, load_package
from envcraft.core.state import canonical_json, sha256_text, state_hash
from envcraft.core.store import (
    DEFAULT_LOCK_TIMEOUT,
    LOG_FILE,
    STATE_FILE,
    FileStore,
    MemoryStore,
    Store,
    StoreError,
)
from envcraft.core.workspace import Workspace, atomic_write_bytes

log = logging.getLogger("envcraft.session")

META_FILE = "session.json"
WORKSPACE_DIR = "workspace"
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


class Session:
    """Bind an environment to a store and a workspace; dispatch calls safely.

    Create with :meth:`create` (durable, on disk), :meth:`memory` (fast path) or
    :meth:`open` (an existing on-disk session, possibly shared by several processes).
    """

    def __init__(
        self,
        package: EnvPackage,
        store: Store,
        *,
        workspace: Workspace | None,
        seed: int = 0,
        directory: Path | None = None,
    ) -> None:
        self.package = package
        self.directory = directory
        self._store = store
        self._workspace = workspace
        committed = store.begin()
        store.abort()
        self.env: Environment = package.env_class(
            self._load(committed.text),
            data=package.data,
            workspace=workspace,
            clock=package.clock,
            seed=seed,
        )
        self.env.call_tool = self._call_nested
        self._loaded_hash = committed.hash
        self._owned_tmp: Path | None = None

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
        """
        package = env if isinstance(env, EnvPackage) else load_package(env)
        root = Path(directory)
        initial_text, initial_files = _initial(package, state, files, seed, size)
        root.mkdir(parents=True, exist_ok=True)
        workspace_root = Path(workspace_dir).resolve() if workspace_dir is not None else root / WORKSPACE_DIR
        workspace = _make_workspace(package, workspace_root, initial_files)
        store = FileStore.initialize(root, initial_text, lock_timeout=lock_timeout, fsync=fsync)
        meta: dict[str, Any] = {"env": package.id, "package": str(package.root), "seed": seed}
        if workspace_dir is not None and workspace is not None:
            meta["workspace"] = str(workspace_root)
        atomic_write_bytes(root / META_FILE, json.dumps(meta, indent=2).encode("utf-8"))
        return cls(package, store, workspace=workspace, seed=seed, directory=root)

    @classmethod
    def open(cls, directory: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Session:
        """Open an existing durable session; ``SessionError`` if it is gone."""
        root = Path(directory)
        meta_path = root / META_FILE
        if not meta_path.is_file() or not (root / STATE_FILE).is_file():
            raise SessionError(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE)
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        package_ref = meta["package"] if Path(meta["package"]).is_dir() else meta["env"]
        package = load_package(package_ref)
        workspace_root = Path(meta["workspace"]) if "workspace" in meta else root / WORKSPACE_DIR
        workspace = Workspace(workspace_root) if package.kind == "claw" else None
        store = FileStore(root, lock_timeout=lock_timeout)
        try:
            return cls(package, store, workspace=workspace, seed=int(meta.get("seed", 0)), directory=root)
        except StoreError as exc:
            raise SessionError(exc.category, exc.message) from None

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
        """The in-memory fast path: no lock, no per-call I/O; :meth:`save` persists."""
        package = env if isinstance(env, EnvPackage) else load_package(env)
        initial_text, initial_files = _initial(package, state, files, seed, size)
        workspace = None
        owned: Path | None = None
        if package.kind == "claw":
            if workspace_dir is None:
                owned = Path(tempfile.mkdtemp(prefix=f"envcraft-{package.id}-"))
                workspace_dir = owned
            workspace = _make_workspace(package, Path(workspace_dir), initial_files)
        session = cls(package, MemoryStore(initial_text), workspace=workspace, seed=seed)
        session._owned_tmp = owned
        return session

    # -- the one door -------------------------------------------------------------------
    def call(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run one tool call; returns its result dict or a structured error. Never raises."""
        spec = self.package.env_class.tools.get(tool) if isinstance(tool, str) else None
        if spec is not None and not spec.annotations.exclusive:
            return self._call_unlocked(tool, args)
        try:
            committed = self._store.begin()
        except StoreError as exc:
            return exc.to_result()
        except BaseException:
            log.exception("session infrastructure failure on %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=str(tool))
        try:
            return self._call_locked(committed.text, committed.hash, committed.index, tool, args)
        except BaseException:
            self._store.abort()
            log.exception("session infrastructure failure on %s", tool)
            # The tool may have mutated the bound state before the commit failed: drop it.
            try:
                self._rollback(committed.text)
                self._loaded_hash = committed.hash
            except Exception:
                log.exception("the committed state no longer loads; the next call retries")
                self._loaded_hash = ""
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=str(tool))

    def _call_nested(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """:meth:`call` for a call made from inside a system tool (logged with ``via``)."""
        token = _NESTED.set("shell")
        try:
            return self.call(tool, args)
        finally:
            _NESTED.reset(token)

    def _call_locked(
        self, text: str, digest: str, index: int, tool: str, args: dict[str, Any] | None
    ) -> dict[str, Any]:
        env = self.env
        if digest != self._loaded_hash:
            env.state = self._load(text)
            self._loaded_hash = digest
        env.action_index = index
        result = env.invoke(tool, args)
        new_text: str | None = None
        new_hash = digest
        if not is_error(result):
            try:
                dumped = canonical_json(env.state.model_dump(mode="json"))
                dumped_hash = sha256_text(dumped)  # also refuses text UTF-8 cannot hold (lone surrogates)
                json.dumps(result)
                if dumped != text:
                    # The new state must be one the State model accepts (its validators are the
                    # environment's invariants): a tool that breaks them fails and is rolled back,
                    # rather than committing a state no later call could load.
                    type(env.state).model_validate_json(dumped)
            except (TypeError, ValueError, ValidationError):
                log.exception("tool %s produced an unserializable or invalid state, or result", tool)
                result = error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
            else:
                if dumped != text:
                    new_text, new_hash = dumped, dumped_hash
        if is_error(result):
            self._rollback(text)
        elif self._workspace is not None:
            self._workspace.commit()
        entry = {
            "index": index,
            "time": iso(env.now()),
            "tool": tool,
            "args": args,
            "result": result,
            "state_hash": new_hash,
        }
        if _NESTED.get() is not None:
            entry["via"] = _NESTED.get()
        self._store.commit(entry, new_text, new_hash)
        self._loaded_hash = new_hash
        return result

    def _call_unlocked(self, tool: str, args: dict[str, Any] | None) -> dict[str, Any]:
        """A system tool: run without the lock (it may call back in), then log it."""
        try:
            result = self.env.invoke(tool, args)
            if self._workspace is not None:
                if is_error(result):
                    self._workspace.rollback()
                else:
                    self._workspace.commit()
            committed = self._store.begin()
        except StoreError as exc:
            return exc.to_result()
        except BaseException:
            log.exception("session infrastructure failure on %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
        entry = {
            "index": committed.index,
            "time": iso(self.env.clock.at(committed.index)),
            "tool": tool,
            "args": args,
            "result": result,
            "state_hash": committed.hash,
        }
        try:
            self._store.commit(entry, None, committed.hash)
        except BaseException:
            log.exception("could not log system tool call %s", tool)
            return error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
        return result

    def _rollback(self, text: str) -> None:
        """Drop whatever a failed call did. Re-validating a big state costs ~3x a dump, and
        most failures (bad arguments, refused preconditions) changed nothing, so look first."""
        try:
            unchanged = canonical_json(self.env.state.model_dump(mode="json")) == text
        except Exception:
            unchanged = False
        if not unchanged:
            self.env.state = self._load(text)
        if self._workspace is not None:
            self._workspace.rollback()

    def _load(self, text: str) -> Any:
        return self.package.env_class.State.model_validate_json(text)

    # -- inspection ---------------------------------------------------------------------
    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function-tool schemas of this session's environment."""
        return self.package.env_class.openai_tools()

    def state(self) -> dict[str, Any]:
        """The committed state as plain JSON data."""
        committed = self._store.begin()
        self._store.abort()
        data: dict[str, Any] = json.loads(committed.text)
        return data

    def state_hash(self) -> str:
        committed = self._store.begin()
        self._store.abort()
        return committed.hash

    def files(self) -> dict[str, str]:
        """The workspace content (empty for tool environments)."""
        return self._workspace.snapshot() if self._workspace is not None else {}

    def snapshot_hash(self) -> str:
        """Hash of state and workspace together: the identity of a final outcome."""
        return state_hash({"state": self.state(), "workspace": self.files()})

    def actions(self) -> list[dict[str, Any]]:
        return self._store.entries()

    @property
    def workspace_root(self) -> Path | None:
        return self._workspace.root if self._workspace is not None else None

    def save(self, directory: str | Path) -> Path:
        """Persist a session (any store) as a durable session directory."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        committed = self._store.begin()
        self._store.abort()
        if self._workspace is not None and self._workspace.root != (root / WORKSPACE_DIR).resolve():
            shutil.copytree(self._workspace.root, root / WORKSPACE_DIR, dirs_exist_ok=True, symlinks=True)
        atomic_write_bytes(root / STATE_FILE, committed.text.encode("utf-8"))
        lines = "".join(json.dumps(e, ensure_ascii=False, default=str) + "\n" for e in self.actions())
        atomic_write_bytes(root / LOG_FILE, lines.encode("utf-8"))
        meta = {"env": self.package.id, "package": str(self.package.root), "seed": self.env.seed}
        atomic_write_bytes(root / META_FILE, json.dumps(meta, indent=2).encode("utf-8"))
        return root

    def close(self) -> None:
        if self._owned_tmp is not None:
            shutil.rmtree(self._owned_tmp, ignore_errors=True)
            self._owned_tmp = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _initial(
    package: EnvPackage,
    state: dict[str, Any] | None,
    files: dict[str, str] | None,
    seed: int,
    size: int,
) -> tuple[str, dict[str, str]]:
    """Canonical S0 text and workspace files: given explicitly, or generated from the seed."""
    env_class = package.env_class
    if state is None:
        initial: Initial = env_class.generate(seed=seed, size=size, data=package.data)
        model = initial.state
        generated_files = {**package.workspace_template, **initial.files}
    else:
        model = env_class.State.model_validate(state)
        generated_files = package.workspace_template
    text = canonical_json(model.model_dump(mode="json"))
    return text, generated_files if files is None else files


def _make_workspace(package: EnvPackage, root: Path, files: dict[str, str]) -> Workspace | None:
    if package.kind != "claw":
        return None
    root.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(root)
    workspace.populate(files)
    return workspace
