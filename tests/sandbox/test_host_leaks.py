"""Nothing of the host's environment reaches a confined process, by any door /proc opens.

A secret is put in the environment of the process that starts the sandboxes (as a trainer's
``OPENAI_API_KEY`` would be). Inside, every process of the PID namespace is read the ways a
process can read another: its environment, command line, executable, working directory,
memory map and open files, plus the mount table. Neither the secret nor a host path of the
runtime (the virtualenv, the checkout, the bubblewrap binary, runtime directories) may show.
The one host path that does show is the workspace's, in ``/proc/self/mountinfo``: the kernel
records the source of every bind mount, and the workspace is one (see docs/architecture.md).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

import envcraft
from envcraft.core import Session
from envcraft.sandbox import IsolatedWorker
from envcraft.sandbox.bwrap import bwrap_binary

from .conftest import requires_bwrap

pytestmark = requires_bwrap

SECRET = f"host-secret-{uuid.uuid4().hex}"
# Every file /proc offers about a process that can carry an environment variable or a path.
PROC_DUMP = r"""
sleep 30 & helper=$!
for p in /proc/[0-9]*; do
  echo "== $p"
  for f in cmdline environ maps mountinfo mounts status cgroup; do
    echo "-- $f"; tr '\0' '\n' < "$p/$f" 2>&1
  done
  for l in exe cwd root; do echo "-- $l $(readlink "$p/$l" 2>&1)"; done
  for fd in "$p"/fd/*; do echo "-- fd $(readlink "$fd" 2>&1)"; done
done
echo "== env"; env
kill "$helper"
"""
WORKER_DUMP = """
import os


def dump(_):
    out = []
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        for name in ("cmdline", "environ", "maps", "mountinfo", "status", "cgroup"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as handle:
                    out.append(handle.read().replace(b"\\0", b"\\n").decode("utf-8", "replace"))
            except OSError as exc:
                out.append(f"{pid}/{name}: {type(exc).__name__}")
        for link in ("exe", "cwd", "root"):
            try:
                out.append(os.readlink(f"/proc/{pid}/{link}"))
            except OSError as exc:
                out.append(f"{pid}/{link}: {type(exc).__name__}")
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError as exc:
            out.append(f"{pid}/fd: {type(exc).__name__}")
    out.append(repr(dict(os.environ)))
    return "\\n".join(out)
"""


def _host_paths() -> list[str]:
    binary = bwrap_binary() or ""
    return [
        sys.prefix,  # the virtualenv
        str(Path(envcraft.__file__).resolve().parents[2]),  # the checkout
        str(Path(binary).resolve().parent) if binary else "/nonexistent",
        "envcraft-runtime-",  # per-process runtime directories
    ]


@pytest.fixture
def secret_in_host_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ENVCRAFT_TEST_SECRET", SECRET)
    return SECRET


def _assert_clean(text: str, allowed: str = "") -> None:
    assert SECRET not in text
    for path in _host_paths():
        leaked = [line for line in text.splitlines() if path in line and (not allowed or allowed not in line)]
        assert not leaked, f"host path {path!r} visible: {leaked[:3]}"


def test_no_host_variable_or_path_in_any_process_of_the_shell(secret_in_host_env: str) -> None:
    with Session.memory("notes_desk", seed=1) as session:
        result = session.call("shell", {"command": PROC_DUMP, "timeout": 60})
        assert result["exit_code"] == 0, result["stderr"]
        text = result["stdout"]
        assert text.count("== /proc/") >= 2  # the shell and its background helper were both read
        assert "/proc/1\n-- cmdline\n/bin/bash" in text  # the first process is the command
        _assert_clean(text, allowed=str(session.workspace_root))
        assert "OPENAI_API_KEY" not in text


def test_no_host_variable_or_path_in_a_domain_tool_call(secret_in_host_env: str) -> None:
    with Session.memory("notes_desk", seed=1) as session:
        command = "envcraft-tool list_action_items > /dev/null & " + PROC_DUMP + "wait"
        result = session.call("shell", {"command": command, "timeout": 60})
        assert result["exit_code"] == 0, result["stderr"]
        _assert_clean(result["stdout"], allowed=str(session.workspace_root))


def test_no_host_variable_or_path_in_the_isolated_worker(secret_in_host_env: str) -> None:
    with IsolatedWorker() as worker:
        reply = worker.run(WORKER_DUMP, "dump", None, timeout=20)
    assert reply["ok"], reply
    assert "/usr/bin/python3" in reply["value"]  # the worker itself was read
    _assert_clean(reply["value"])


def test_unsafe_mode_still_gets_an_explicit_environment(
    secret_in_host_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVCRAFT_SANDBOX", "unsafe-subprocess")
    with Session.memory("notes_desk", seed=1) as session:
        result = session.call("shell", {"command": "env"})
    assert result["sandbox"] == "none (unsafe)"
    assert SECRET not in result["stdout"]
    with IsolatedWorker() as worker:
        reply = worker.run("import os\ndef env(_):\n    return dict(os.environ)", "env", None, timeout=20)
    assert reply["ok"] and SECRET not in repr(reply["value"])
