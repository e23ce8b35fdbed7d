"""Where bubblewrap cannot run the shell refuses; the unsafe mode is opt-in and always labelled.

A broken sandbox is made real by pointing ``ENVCRAFT_BWRAP`` at a binary that fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envcraft.core import Session
from envcraft.sandbox import IsolatedWorker
from envcraft.sandbox.bwrap import BWRAP_ENV, SANDBOX_ENV, UNSAFE, UNSAFE_LABEL

from .conftest import requires_bwrap


def test_shell_refuses_without_a_working_sandbox(desk: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BWRAP_ENV, "/bin/false")
    result = desk.call("shell", {"command": "touch ran.txt"})
    error = result["error"]
    assert error["category"] == "permission_denied"
    assert f"{SANDBOX_ENV}={UNSAFE}" in error["message"]
    assert "ran.txt" not in desk.files()


def test_unknown_mode_is_refused(desk: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SANDBOX_ENV, "none")
    result = desk.call("shell", {"command": "touch ran.txt"})
    assert result["error"]["category"] == "permission_denied"
    assert "ran.txt" not in desk.files()


def test_unsafe_mode_runs_and_says_so(desk: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BWRAP_ENV, "/bin/false")
    monkeypatch.setenv(SANDBOX_ENV, UNSAFE)
    result = desk.call(
        "shell", {"command": "pwd; echo hi > ran.txt; envcraft-tool list_action_items --status all | head -1"}
    )
    assert result["sandbox"] == UNSAFE_LABEL
    assert result["exit_code"] == 0, result
    assert Path(result["stdout"].splitlines()[0]) == desk.workspace_root
    assert result["stdout"].splitlines()[1] == "{"  # the domain CLI works here too
    assert desk.files()["ran.txt"] == "hi\n"
    timed = desk.call("shell", {"command": "sleep 30", "timeout": 1})
    assert (timed["timed_out"], timed["sandbox"]) == (True, UNSAFE_LABEL)


@requires_bwrap
def test_the_default_mode_is_labelled_bubblewrap(desk: Session) -> None:
    assert desk.call("shell", {"command": "true"})["sandbox"] == "bubblewrap"


def test_isolated_worker_refuses_and_labels_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    source = "def f(x):\n    return x + 1\n"
    monkeypatch.setenv(BWRAP_ENV, "/bin/false")
    with IsolatedWorker() as worker:
        refused = worker.run(source, "f", 1, timeout=5)
        assert refused["ok"] is False and UNSAFE in refused["error"]
        monkeypatch.setenv(SANDBOX_ENV, UNSAFE)
        assert worker.run(source, "f", 1, timeout=5) == {"ok": True, "value": 2, "sandbox": UNSAFE_LABEL}
