"""Start a bubblewrap sandbox whose limits are in place before its command runs, and which
holds nothing of the host but what it is given.

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
    files: Sequence[DataFile] = (),
) -> Sandbox:
    """Start ``binary args`` (bubblewrap options, ``--``, command) confined by ``limits``.

    Nothing of the host reaches the sandbox through bubblewrap itself: it starts with an
    empty environment, reads its options from a memory file (``--args``), so its command line
    names no host path, and ``files`` are copied into the sandbox's own root (``--file``; read-only
    once the root is sealed) instead of bound from host paths, which also spares the mount
    operations every sandbox on the machine contends for. With ``--as-pid-1`` bubblewrap stays
    outside the PID namespace.
    """
    options, command = _split(args)
    group = process_cap(limits.processes)
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    inherited = [info_w, block_r]
    data_args: list[str] = []
    try:
        for item in files:
            fd = _memory_file(item.content)
            inherited.append(fd)
            data_args += ["--perms", f"{item.mode:04o}", "--file", str(fd), item.path]
        seal = options.index("--remount-ro") if "--remount-ro" in options else len(options)
        every = [
            "--info-fd",
            str(info_w),
            "--block-fd",
            str(block_r),
            *options[:seal],
            *data_args,
            *options[seal:],
        ]
        args_fd = _memory_file(b"".join(a.encode("utf-8") + b"\0" for a in every))
        inherited.append(args_fd)
        argv = [binary, "--args", str(args_fd), *command]
        proc = subprocess.Popen(
            group.wrap(argv) if group is not None else argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=tuple(inherited),
            env={},
            start_new_session=True,
        )
    except BaseException:
        for fd in (info_r, block_w):
            os.close(fd)
        if group is not None:
            group.remove()
        raise
    finally:
        for fd in inherited:
            os.close(fd)
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


@dataclass(frozen=True)
class DataFile:
    """A file copied into the sandbox at ``path`` with ``mode``, from memory (read-only once the
    sandbox root is sealed with ``--remount-ro /``)."""

    path: str
    content: bytes
    mode: int = 0o644


def _split(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """bubblewrap's options (they go to ``--args``) and ``--`` plus the command (argv)."""
    listed = list(args)
    if "--" not in listed:
        return listed, []
    cut = listed.index("--")
    return listed[:cut], listed[cut:]


def _memory_file(content: bytes) -> int:
    """A file descriptor, positioned at 0, of an anonymous file holding ``content``."""
    fd = os.memfd_create("envcraft", 0)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
