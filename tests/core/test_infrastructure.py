"""Infrastructure failures (bad Unicode, a full disk, a broken log) never raise or leak state."""

from __future__ import annotations

import json
import multiprocessing
import resource
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import Session

FORK = multiprocessing.get_context("fork")
LONE_SURROGATE = json.loads('"\\ud800"')  # what an agent's JSON escape "\ud800" decodes to


@pytest.fixture(params=["memory", "durable"])
def counter(request: pytest.FixtureRequest, counter_pkg: Path, tmp_path: Path) -> Session:
    if request.param == "memory":
        return Session.memory(counter_pkg)
    return Session.create(counter_pkg, tmp_path / "s")


MAKES_A_SURROGATE = '''
from envcraft import Environment, StateModel, tool


class Names(StateModel):
    names: list[str] = []


class Namer(Environment):
    """A tool that makes text UTF-8 cannot hold by itself (its argument was fine)."""

    State = Names

    @tool
    def add(self, name: str) -> dict:
        """Add a name, mangled.

        Args:
            name: The name.
        """
        self.state.names.append(name + chr(0xD800))
        return {"names": len(self.state.names)}

    @tool
    def add_plain(self, name: str) -> dict:
        """Add a name.

        Args:
            name: The name.
        """
        self.state.names.append(name)
        return {"names": len(self.state.names)}
'''


def test_unencodable_text_fails_the_call_without_poisoning_the_session(counter: Session) -> None:
    """An argument UTF-8 cannot hold is refused at the boundary (issue 23 item 10)."""
    before = counter.state_hash()
    result = counter.call("increment", {"name": "x" + LONE_SURROGATE})
    assert result["error"]["category"] == "invalid_argument" and result["error"]["field"] == "name"
    assert counter.state_hash() == before
    assert counter.call("increment", {"name": "ok"}) == {"name": "ok", "value": 1}
    assert counter.state()["counters"] == {"ok": 1}


@pytest.mark.parametrize("durable", [False, True])
def test_unencodable_text_a_tool_makes_fails_the_call_without_poisoning_the_session(
    make_env: Callable[..., Path], tmp_path: Path, durable: bool
) -> None:
    """Regression: the mutated state used to stay bound, failing every later call."""
    package = make_env(MAKES_A_SURROGATE, env_id="namer")
    session = Session.create(package, tmp_path / "s") if durable else Session.memory(package)
    before = session.state_hash()
    assert session.call("add", {"name": "x"})["error"]["category"] == "internal_error"
    assert session.state_hash() == before
    assert session.call("add_plain", {"name": "ok"}) == {"names": 1}
    assert session.state() == {"names": ["ok"]}


def test_unencodable_text_in_a_logged_call_round_trips(counter: Session, tmp_path: Path) -> None:
    result = counter.call("get", {"name": LONE_SURROGATE})
    assert result["error"]["category"] == "invalid_argument"  # refused, but logged like any call
    assert counter.actions()[-1]["args"] == {"name": LONE_SURROGATE}
    if counter.directory is not None:
        reopened = Session.open(counter.directory)
        assert reopened.actions()[-1]["args"] == {"name": LONE_SURROGATE}
        assert reopened.call("increment", {"name": "a"})["value"] == 1
        assert [e["index"] for e in reopened.actions()] == [0, 1]


def _commit_past_file_size_limit(directory: str, conn: Connection) -> None:
    """Child: the state write hits RLIMIT_FSIZE (a full disk, in effect) mid-commit."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    session = Session.open(directory)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    failed = session.call("increment", {"name": "a"})
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    conn.send((failed, session.call("get", {"name": "a"})))


def test_disk_full_during_commit_changes_nothing(counter_pkg: Path, tmp_path: Path) -> None:
    root = tmp_path / "s"
    history = [f"2026-01-01T00:00:00 seed entry {i:04d}" for i in range(200)]  # state > 4 KiB
    Session.create(counter_pkg, root, state={"counters": {"a": 1}, "history": history})
    state_before = (root / "state.json").read_bytes()
    parent, child_end = FORK.Pipe()
    child = FORK.Process(target=_commit_past_file_size_limit, args=(str(root), child_end))
    child.start()
    assert parent.poll(60), "the child reported nothing"
    failed, after = parent.recv()
    child.join(timeout=30)
    assert failed["error"]["category"] == "internal_error"
    assert after == {"name": "a", "value": 1}, "the uncommitted increment leaked into the next call"
    assert (root / "state.json").read_bytes() == state_before
    entries = Session.open(root).actions()
    assert [(e["index"], e["tool"]) for e in entries] == [(0, "get")], "the orphan line was not dropped"
    assert not list(root.glob(".state.json.*.tmp"))


def test_unreadable_log_is_an_error_result_not_an_exception(counter_pkg: Path, tmp_path: Path) -> None:
    session = Session.create(counter_pkg, tmp_path / "s")
    (tmp_path / "s" / "actions.jsonl").unlink()
    (tmp_path / "s" / "actions.jsonl").mkdir()
    result = session.call("increment", {"name": "a"})
    assert result["error"]["category"] == "internal_error"
    assert str(tmp_path) not in json.dumps(result)


CLAW = '''
from envcraft.sandbox.claw import ClawEnvironment


class Files(ClawEnvironment):
    """Only the built-in file tools."""
'''


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": LONE_SURROGATE}),
        ("write_file", {"path": "a.txt", "content": "x" + LONE_SURROGATE}),
        ("write_file", {"path": LONE_SURROGATE, "content": "x"}),
        ("list_files", {(1, 2): "not JSON"}),
    ],
)
def test_system_tools_on_a_durable_session_never_raise(
    make_env: Callable[..., Path], tmp_path: Path, tool: str, args: dict[Any, Any]
) -> None:
    """Regression: the unlocked path logged outside its guard and could raise."""
    session = Session.create(
        make_env(CLAW, env_id="files", kind="claw"), tmp_path / "s", files={"k.txt": "v"}
    )
    result = session.call(tool, args)
    assert "error" in result
    assert session.files() == {"k.txt": "v"}
    assert session.call("write_file", {"path": "b.txt", "content": "fine"})["created"] is True
