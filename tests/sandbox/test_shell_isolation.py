"""What the sandboxed shell can and cannot see: real bubblewrap, real files, a real TCP listener.

Every test runs once per tool profile (``agent``): ``shell``, OpenClaw's ``exec`` and Claude
Code's ``Bash`` are the same sandbox.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import envcraft
from envcraft.core import Session

from .conftest import Agent, assert_no_connection, requires_bwrap

pytestmark = requires_bwrap


def test_runs_in_the_workspace_as_an_unprivileged_user(desk: Session, agent: Agent) -> None:
    result = agent.shell("pwd; id -u; grep CapEff /proc/self/status; ls notes | wc -l")
    assert result["exit_code"] == 0, result
    pwd, uid, caps, notes = result["stdout"].splitlines()
    assert (pwd, uid) == ("/workspace", "1000")
    assert caps.split()[-1] == "0000000000000000"
    assert int(notes) == len([p for p in desk.files() if p.startswith("notes/")])
    assert result["sandbox"] == "bubblewrap"
    assert result["truncated"] is False and result["timed_out"] is False


def test_workspace_writes_land_on_the_host(desk: Session, agent: Agent) -> None:
    result = agent.shell("mkdir -p out && echo hello > out/greeting.txt")
    assert result["exit_code"] == 0, result
    assert desk.files()["out/greeting.txt"] == "hello\n"
    assert desk.call("read_file", {"path": "out/greeting.txt"})["content"] == "hello\n"


def test_exit_status_and_stderr_come_back(desk: Session, agent: Agent) -> None:
    result = agent.shell("echo out; echo err >&2; exit 3")
    assert (result["exit_code"], result["stdout"], result["stderr"]) == (3, "out\n", "err\n")


def test_host_directories_are_invisible(desk: Session, agent: Agent, tmp_path: Path) -> None:
    hidden = {
        "/work",
        "/root",
        "/home",
        sys.prefix,  # the virtualenv
        str(Path(envcraft.__file__).resolve().parent),  # the project checkout
        str(tmp_path),  # the sessions root
        str(desk.directory),
    }
    command = "; ".join(f"test -e '{path}' && echo VISIBLE {path}" for path in sorted(hidden))
    result = agent.shell(command + "; ls -a / ..; true")
    assert "VISIBLE" not in result["stdout"], result["stdout"]
    assert "state.json" not in result["stdout"] and "actions.jsonl" not in result["stdout"]


def test_another_sessions_workspace_is_out_of_reach(desk: Session, agent: Agent, tmp_path: Path) -> None:
    with Session.create("notes_desk", tmp_path / "sessions" / "other", seed=1) as other:
        assert other.workspace_root is not None
        (other.workspace_root / "private.txt").write_text("other session's data", encoding="utf-8")
        target = other.workspace_root / "private.txt"
        result = agent.shell(f"cat '{target}'; find / -name private.txt 2>/dev/null")
    assert "other session's data" not in result["stdout"]
    assert "private.txt" not in result["stdout"]


def test_system_directories_are_read_only(desk: Session, agent: Agent) -> None:
    result = agent.shell("touch /usr/x 2>&1; touch /x 2>&1; touch /etc/x 2>&1; touch /tmp/ok && echo tmp-ok")
    assert result["stdout"].count("Read-only file system") == 3, result["stdout"]
    assert result["stdout"].endswith("tmp-ok\n")


def test_tmp_is_private_to_each_command(desk: Session, agent: Agent) -> None:
    agent.shell("echo left > /tmp/leftover")
    result = agent.shell("ls /tmp")
    assert "leftover" not in result["stdout"]


def test_only_the_sandbox_processes_are_visible(desk: Session, agent: Agent) -> None:
    command = f"ls /proc | grep -cE '^[0-9]+$'; test -e /proc/{os.getpid()} && echo HOST"
    result = agent.shell(command)
    count = int(result["stdout"].splitlines()[0])
    assert count < 10, result
    assert "HOST" not in result["stdout"]


def test_host_tcp_port_is_unreachable(desk: Session, agent: Agent, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    probe = (
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\" "
        f"&& echo CONNECTED; (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED; "
        "getent hosts example.com || echo NO-DNS"
    )
    result = agent.shell(probe)
    assert "CONNECTED" not in result["stdout"], result
    assert "NO-DNS" in result["stdout"]
    assert_no_connection(listener)
