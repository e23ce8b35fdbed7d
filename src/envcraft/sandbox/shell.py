"""The engine of the ``shell`` tool: one bash command in the session workspace, sandboxed.

Inside the sandbox the command sees ``/workspace`` (the session workspace, read-write, the
working directory), the confinement of :mod:`envcraft.sandbox.bwrap`, and under
``/run/envcraft`` (read-only) ``bin/envcraft-tool`` (copied in from memory) plus
``session/session.sock``: the socket of a
:class:`~envcraft.sandbox.domain_server.DomainServer` that lives exactly as long as the
command, named by ``ENVCRAFT_SESSION``. Limits come from :class:`Limits`.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from envcraft.core.environment import Environment
from envcraft.sandbox import domain_cli
from envcraft.sandbox.bwrap import (
    BASH,
    SANDBOX_USER,
    SEAL,
    SYSTEM_PYTHON,
    Mode,
    environment_args,
    identity_files,
    namespace_args,
    scratch_args,
    select_mode,
    system_mount_args,
)
from envcraft.sandbox.domain_server import DomainServer
from envcraft.sandbox.launch import DataFile, start
from envcraft.sandbox.limits import Limits
from envcraft.sandbox.process import Completed, collect, spawn

WORKSPACE_MOUNT = "/workspace"
RUNTIME_MOUNT = "/run/envcraft"
CLIENT_NAME = "envcraft-tool"
SOCKET_NAME = "session.sock"


# The per-call socket directory: on a memory filesystem when there is one, so the path the
# kernel shows for its bind inside the sandbox (/proc/self/mountinfo) is only a random name.
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def run_shell(
    env: Environment, workspace: Path, command: str, timeout: float, limits: Limits
) -> dict[str, Any]:
    """Run ``command`` for ``env``; raises ``SandboxUnavailable`` when it must not run at all."""
    mode = select_mode()
    with tempfile.TemporaryDirectory(
        prefix="envcraft-session-", dir=SCRATCH if mode.confined else None
    ) as tmp:
        binding = Path(tmp)
        inside_bin = f"{RUNTIME_MOUNT}/bin" if mode.confined else str(_unsafe_runtime() / "bin")
        inside_binding = f"{RUNTIME_MOUNT}/session" if mode.confined else str(binding)
        variables = {
            "PATH": f"{inside_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "USER": SANDBOX_USER,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "PYTHONDONTWRITEBYTECODE": "1",
            domain_cli.BINDING_ENV: f"{inside_binding}/{SOCKET_NAME}",
        }
        with DomainServer(env, binding / SOCKET_NAME, timeout=timeout):
            if mode.confined:
                done = _run_confined(mode, binding, workspace, command, variables, timeout, limits)
            else:
                done = _run_unsafe(binding, workspace, command, variables, timeout, limits)
    return {
        "exit_code": done.exit_code,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "timed_out": done.timed_out,
        "truncated": done.truncated,
        "sandbox": mode.label,
    }


def _run_confined(
    mode: Mode,
    binding: Path,
    workspace: Path,
    command: str,
    variables: dict[str, str],
    timeout: float,
    limits: Limits,
) -> Completed:
    assert mode.binary is not None
    args = [
        *namespace_args(),
        *system_mount_args(),
        *scratch_args(limits.tmp_bytes),
        "--bind", str(workspace), WORKSPACE_MOUNT,
        "--ro-bind", str(binding), f"{RUNTIME_MOUNT}/session",
        "--chdir", WORKSPACE_MOUNT,
        *SEAL,
        *environment_args(variables),
        "--", BASH, "-c", command,
    ]  # fmt: skip
    files = [DataFile(path, content) for path, content in identity_files().items()]
    files.append(DataFile(f"{RUNTIME_MOUNT}/bin/{CLIENT_NAME}", _client(SYSTEM_PYTHON), 0o755))
    sandbox = start(mode.binary, args, limits, files=files)
    try:
        return collect(sandbox.proc, timeout=timeout, output_bytes=limits.output_bytes)
    finally:
        sandbox.release()


def _run_unsafe(
    binding: Path, workspace: Path, command: str, variables: dict[str, str], timeout: float, limits: Limits
) -> Completed:
    """No isolation at all: limits by a ``ulimit`` prelude, scratch space in the binding dir."""
    scratch = binding / "tmp"
    scratch.mkdir()
    variables = {**variables, "HOME": str(scratch), "TMPDIR": str(scratch)}
    prelude = limits.ulimit_prelude(processes=False) + '\nexec /bin/bash -c "$1"'
    proc = spawn([BASH, "-c", prelude, "envcraft-shell", command], env=variables, cwd=str(workspace))
    return collect(proc, timeout=timeout, output_bytes=limits.output_bytes)


@functools.cache
def _client(python: str) -> bytes:
    """The ``envcraft-tool`` script, run by ``python`` (isolated mode, no site directory)."""
    return f"#!{python} -IS\n{Path(domain_cli.__file__).read_text(encoding='utf-8')}".encode()


@functools.cache
def _unsafe_runtime() -> Path:
    """Unsafe mode only: a directory with ``bin/envcraft-tool`` on disk (no sandbox to copy into)."""
    root = Path(tempfile.mkdtemp(prefix="envcraft-runtime-"))
    atexit.register(shutil.rmtree, root, True)
    (root / "bin").mkdir()
    client = root / "bin" / CLIENT_NAME
    client.write_bytes(_client(sys.executable))
    client.chmod(0o755)
    return root
