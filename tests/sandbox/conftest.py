"""Fixtures for the sandbox tests: real bubblewrap sandboxes, real sessions, real sockets."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import Session, Workspace
from envcraft.sandbox import ClawEnvironment, Limits
from envcraft.sandbox.bwrap import BWRAP_ENV, SANDBOX_ENV, SandboxUnavailable, select_mode


def _bwrap_problem() -> str | None:
    try:
        select_mode()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


requires_bwrap = pytest.mark.skipif(_bwrap_problem() is not None, reason=f"{_bwrap_problem()}")


@pytest.fixture(autouse=True)
def _default_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts from the default mode, whatever the developer's shell exports."""
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    monkeypatch.delenv(BWRAP_ENV, raising=False)


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Session]:
    """A durable notes_desk session under ``tmp_path/sessions/desk``."""
    with Session.create("notes_desk", tmp_path / "sessions" / "desk", seed=7) as session:
        yield session


def make_claw(limits: Limits, root: Path) -> Callable[..., dict[str, Any]]:
    """A bare Claw environment with ``limits`` over ``root``; returns its ``shell`` caller."""

    class Confined(ClawEnvironment):
        """A Claw environment with tighter limits."""

        sandbox_limits = limits

    root.mkdir(parents=True, exist_ok=True)
    env = Confined(Confined.State(), workspace=Workspace(root))

    def shell(command: str, timeout: int = 30) -> dict[str, Any]:
        return env.invoke("shell", {"command": command, "timeout": timeout})

    return shell


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on the host's loopback that must never see a connection."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def assert_no_connection(server: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        server.accept()


def marker() -> str:
    """A unique argv[0] to find a sandboxed process from the host."""
    return f"envcraft-test-{uuid.uuid4().hex}"


def processes_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if name.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


# -- the system tools as each tool profile's agent calls them ------------------------------
PROFILE_NAMES = ("envcraft", "openclaw", "claude-code")


class Agent:
    """Canonical intents (read, write, edit, shell, list) made with one profile's tools.

    Results keep the structured ``{"error": {...}}`` of every profile; ``shell`` returns the
    canonical shape (exit_code, stdout, stderr, ...) read back from the profile's details.
    """

    def __init__(self, profile: str, session: Session) -> None:
        from envcraft.sandbox.profiles import get_profile
        from envcraft.sandbox.profiles.bound import bind

        self.profile = profile
        self.call = bind(get_profile(profile), session)
        self.has_list_tool = profile == "envcraft"

    def read(self, path: str) -> dict[str, Any]:
        name, key = {"envcraft": ("read_file", "path"), "openclaw": ("read", "path")}.get(
            self.profile, ("Read", "file_path")
        )
        return self.call(name, {key: path})

    def write(self, path: str, content: str) -> dict[str, Any]:
        if self.profile == "envcraft":
            return self.call("write_file", {"path": path, "content": content})
        if self.profile == "openclaw":
            return self.call("write", {"path": path, "content": content})
        return self.call("Write", {"file_path": path, "content": content})

    def edit(self, path: str, old: str, new: str) -> dict[str, Any]:
        if self.profile == "envcraft":
            return self.call("edit_file", {"path": path, "old": old, "new": new})
        if self.profile == "openclaw":
            return self.call("edit", {"path": path, "edits": [{"oldText": old, "newText": new}]})
        return self.call("Edit", {"file_path": path, "old_string": old, "new_string": new})

    def shell(self, command: str) -> dict[str, Any]:
        if self.profile == "envcraft":
            return self.call("shell", {"command": command})
        result = self.call("exec" if self.profile == "openclaw" else "Bash", {"command": command})
        if "error" in result:
            return result
        details = result["details"]
        return {
            "exit_code": details.get("exitCode", details.get("exit_code")),
            "stdout": details["stdout"],
            "stderr": details["stderr"],
            "timed_out": details.get("timedOut", details.get("timed_out")),
            "truncated": details["truncated"],
            "sandbox": details["sandbox"],
            "text": result["content"][0]["text"],
        }

    def list(self, path: str) -> dict[str, Any]:
        if self.has_list_tool:
            return self.call("list_files", {"path": path})
        return self.shell(f"ls -R -- '{path}'")


@pytest.fixture(params=PROFILE_NAMES)
def agent(request: pytest.FixtureRequest, desk: Session) -> Agent:
    """The desk session as an agent of each tool profile sees it."""
    return Agent(request.param, desk)
