"""`envcraft call` on a tool that raises SystemExit or KeyboardInterrupt itself, and on a real Ctrl-C.

A tool's own ``sys.exit(3)`` or ``raise KeyboardInterrupt`` is a bug of the tool: the answer is
the documented structured ``internal_error`` (exit 1), the session unchanged. A SIGINT delivered
to the process still stops the command and undoes the call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from envcraft.core import Session

from .test_cli import ENVCRAFT, run

QUITTERS = '''
import os
import sys
import time
from pathlib import Path

from envcraft import Environment, StateModel, tool


class Box(StateModel):
    items: list[str] = []


class Quitters(Environment):
    """Tools that leave the way a program does, not the way a tool should."""

    State = Box

    @tool
    def put(self, item: str) -> dict:
        """Put an item.

        Args:
            item: What.
        """
        self.state.items.append(item)
        return {"items": list(self.state.items)}

    @tool
    def quit(self, how: str) -> dict:
        """Change the state, then leave half way.

        Args:
            how: "exit" for sys.exit(3), "interrupt" for a KeyboardInterrupt.
        """
        self.state.items.append("half")
        if how == "exit":
            sys.exit(3)
        raise KeyboardInterrupt

    @tool
    def wait(self) -> dict:
        """Change the state, say so in the file $QUITTERS_READY, then wait for a signal.
        """
        self.state.items.append("waiting")
        Path(os.environ["QUITTERS_READY"]).touch()
        time.sleep(60)
        return {}
'''


@pytest.fixture
def quitters(make_env: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    package = make_env(QUITTERS, env_id="quitters")
    directory = tmp_path / "s"
    assert run("session", "new", package, "--dir", directory).returncode == 0
    assert run("call", package, "put", "--args", '{"item": "a"}', "--session", directory).returncode == 0
    return package, directory


def run_with_sigint(disposition: signal.Handlers, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``envcraft ARGS`` started with SIGINT at ``disposition``: a terminal starts a command with
    the default, a parent that ignores SIGINT (a background job, a test worker) with SIG_IGN."""
    return subprocess.run(
        [str(ENVCRAFT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, disposition),
    )


@pytest.mark.parametrize("sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-ignored"])
@pytest.mark.parametrize("how", ["exit", "interrupt"])
def test_a_tool_that_exits_or_interrupts_itself_is_an_internal_error(
    quitters: tuple[Path, Path], how: str, sigint: signal.Handlers
) -> None:
    """Regression: sys.exit(3) in a tool made `envcraft call` exit 3 with no JSON; a
    KeyboardInterrupt raised by a tool printed no JSON either. With SIGINT ignored no signal can
    interrupt the call, so the tool's own interrupt is its bug too (the full suite's workers start
    their children that way: the first version of the fix failed there, passed alone)."""
    package, directory = quitters
    before = Session.open(directory)
    state_hash, actions = before.state_hash(), before.actions()
    before.close()
    for extra in ([], ["--json"]):
        proc = run_with_sigint(
            sigint,
            "call",
            package,
            "quit",
            "--args",
            json.dumps({"how": how}),
            "--session",
            directory,
            *extra,
        )
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        answer = json.loads(proc.stdout)
        result = answer["result"] if extra else answer
        assert result["error"]["category"] == "internal_error"
        assert "Traceback" not in proc.stdout + proc.stderr
    after = Session.open(directory)
    assert after.state_hash() == state_hash and after.actions() == actions
    assert after.state() == {"items": ["a"]}
    after.close()
    proc = run("call", package, "put", "--args", '{"item": "b"}', "--session", directory)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {"items": ["a", "b"]}


def _as_a_terminal_starts_it() -> None:
    """In the child: SIGINT neither ignored nor blocked (this process may have left either)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_a_real_ctrl_c_still_stops_the_call_and_undoes_it(
    quitters: tuple[Path, Path], tmp_path: Path
) -> None:
    """The runtime contract: a SIGINT delivered to the process is an interrupt, not a tool error."""
    package, directory = quitters
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [str(ENVCRAFT), "call", str(package), "wait", "--session", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "QUITTERS_READY": str(ready)},
        preexec_fn=_as_a_terminal_starts_it,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, (child.returncode, out, err)
    assert "internal_error" not in out
    after = Session.open(directory)
    assert after.state() == {"items": ["a"]} and [a["tool"] for a in after.actions()] == ["put"]
    after.close()
