"""Start a bubblewrap sandbox whose limits are in place before its command runs.

bubblewrap is started (inside the sandbox's own pids cgroup when running as root, see
:mod:`envcraft.sandbox.cgroup`) with ``--info-fd`` and ``--block-fd``: it reports the host
pid of the sandbox's first process, which waits once the sandbox is built. Meanwhile the
host sets the hard resource limits on that process with ``prlimit``; only then is the
command released. Everything in the sandbox descends from that process, so nothing
there ever runs unlimited.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from envcraft.sandbox.bwrap import SandboxUnavailable
from envcraft.sandbox.cgroup import PidsCgroup, process_cap
from envcraft.sandbox.limits import Limits
from envcraft.sandbox.process import kill_group

_INFO_TIMEOUT = 10.0
Stream = int | IO[Any] | None


@dataclass
class Sandbox:
    """A started sandbox; call :meth:`release` after its process has ended."""

    proc: subprocess.Popen[bytes]
    group: PidsCgroup | None

    def release(self) -> None:
        if self.group is not None:
            self.group.remove()
            self.group = None


def start(
    binary: str,
    args: Sequence[str],
    limits: Limits,
    *,
    stdin: Stream = subprocess.DEVNULL,
    stdout: Stream = subprocess.PIPE,
    stderr: Stream = subprocess.PIPE,
) -> Sandbox:
    """Start ``binary args`` (bubblewrap options, ``--``, command) confined by ``limits``."""
    group = process_cap(limits.processes)
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    argv = [binary, "--info-fd", str(info_w), "--block-fd", str(block_r), *args]
    try:
        proc = subprocess.Popen(
            group.wrap(argv) if group is not None else argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=(info_w, block_r),
            start_new_session=True,
        )
    except BaseException:
        for fd in (info_r, block_w):
            os.close(fd)
        if group is not None:
            group.remove()
        raise
    finally:
        os.close(info_w)
        os.close(block_r)
    sandbox = Sandbox(proc, group)
    try:
        child = _child_pid(info_r)
        if child is not None:
            for name, value in limits.rlimits().items():
                resource.prlimit(child, getattr(resource, name), (value, value))
    except ProcessLookupError:
        pass  # bubblewrap failed while building the sandbox; its exit status says why
    except (OSError, ValueError) as exc:
        kill_group(proc)
        proc.wait()
        sandbox.release()
        raise SandboxUnavailable(f"the sandbox could not be confined: {exc}") from None
    finally:
        os.close(info_r)
        with contextlib.suppress(OSError):
            os.write(block_w, b"x")
        os.close(block_w)
    return sandbox


def _child_pid(info_fd: int) -> int | None:
    """The sandbox's first process, or ``None`` if bubblewrap exited before creating it."""
    data = bytearray()
    while True:
        ready, _, _ = select.select([info_fd], [], [], _INFO_TIMEOUT)
        if not ready:
            raise OSError("bubblewrap did not report its sandbox in time")
        chunk = os.read(info_fd, 4096)
        if not chunk:
            break
        data += chunk
    if not data:
        return None
    pid = json.loads(data).get("child-pid")
    return pid if isinstance(pid, int) else None
