"""Wait for a process under a wall-clock deadline, keeping only the head of its output.

The process leads its own process group; on timeout the whole group is killed (a bubblewrap
sandbox then takes its PID namespace down with it through ``--die-with-parent``). Output
past the cap is read and dropped, so a chatty command still finishes instead of blocking
on a full pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

_CHUNK = 65536
_POLL = 0.1
_GRACE = 2.0  # how long to wait for the pipes to close once the process is gone


@dataclass(frozen=True)
class Completed:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool


def spawn(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session with stdin closed and both outputs piped."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )


def collect(proc: subprocess.Popen[bytes], *, timeout: float, output_bytes: int) -> Completed:
    """Read ``proc``'s output until it ends; never waits past ``timeout`` (plus a short grace)."""
    assert proc.stdout is not None and proc.stderr is not None
    buffers = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    truncated = timed_out = False
    deadline = time.monotonic() + timeout
    give_up: float | None = None  # set once the process is gone or killed
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if give_up is None and now >= deadline:
                timed_out = True
                kill_group(proc)
                give_up = now + _GRACE
            if give_up is not None and now >= give_up:
                break
            until = deadline if give_up is None else give_up
            for key, _ in selector.select(min(_POLL, max(0.0, until - now))):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buffer = buffers[key.fd]
                room = output_bytes - len(buffer)
                buffer += chunk[: max(room, 0)]
                truncated |= len(chunk) > room
            if give_up is None and proc.poll() is not None:
                kill_group(proc)  # background jobs that still hold the pipes (unsafe mode)
                give_up = time.monotonic() + _GRACE
    kill_group(proc)
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    out, err = (bytes(b).decode("utf-8", errors="replace") for b in buffers.values())
    code = proc.returncode
    return Completed(
        exit_code=128 - code if code < 0 else code,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
        truncated=truncated,
    )


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Make this process get SIGKILL when ``parent`` (the process that started it) dies.

    For worker processes (a pool's, say): without it a killed ``envcraft run`` leaves its
    workers running, holding the output pipes a caller waits on. Linux only; elsewhere a no-op.
    A parent already gone by the time this runs makes the process exit at once.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (a no-op once it is gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
