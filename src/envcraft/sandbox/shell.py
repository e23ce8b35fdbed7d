"""The engine of the ``shell`` tool: one bash command in the session workspace, sandboxed.

Inside the sandbox the command sees ``/workspace`` (the session workspace, read-write, the
working directory), the confinement of :mod:`envcraft.sandbox.bwrap`, and under
``/run/envcraft`` (read-only) ``bin/envcraft-tool`` plus ``session/session.sock``: the
socket of a :class:`~envcraft.sandbox.domain_server.DomainServer` that lives exactly as
long as the command, named by ``ENVCRAFT_SESSION``. Limits come from :class:`Limits`.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import threading
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
    identity_binds,
    namespace_args,
    scratch_args,
    select_mode,
    system_mount_args,
    write_identity_files,
)
from envcraft.sandbox.domain_server import DomainServer
from envcraft.sandbox.launch import start
from envcraft.sandbox.limits import Limits
from envcraft.sandbox.process import Completed, collect, spawn

WORKSPACE_MOUNT = "/workspace"
RUNTIME_MOUNT = "/run/envcraft"
CLIENT_NAME = "envcraft-tool"
SOCKET_NAME = "session.sock"


def run_shell(
    env: Environment, workspace: Path, command: str, timeout: float, limits: Limits
) -> dict[str, Any]:
    """Run ``command`` for ``env``; raises ``SandboxUnavailable`` when it must not run at all."""
    mode = select_mode()
    runtime = _runtime(SYSTEM_PYTHON if mode.confined else sys.executable)
    with tempfile.TemporaryDirectory(prefix="envcraft-session-") as tmp:
        binding = Path(tmp)
        inside_bin = f"{RUNTIME_MOUNT}/bin" if mode.confined else str(runtime / "bin")
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
                done = _run_confined(mode, runtime, binding, workspace, command, variables, timeout, limits)
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
    runtime: Path,
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
        *identity_binds(runtime / "etc"),
        *scratch_args(limits.tmp_bytes),
        "--bind", str(workspace), WORKSPACE_MOUNT,
        "--ro-bind", str(runtime / "bin"), f"{RUNTIME_MOUNT}/bin",
        "--ro-bind", str(binding), f"{RUNTIME_MOUNT}/session",
        "--chdir", WORKSPACE_MOUNT,
        *SEAL,
        *environment_args(variables),
        "--", BASH, "-c", command,
    ]  # fmt: skip
    sandbox = start(mode.binary, args, limits)
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


# -- the read-only runtime files, written once per process ---------------------------------
_runtimes: dict[str, Path] = {}
_runtimes_lock = threading.Lock()


def _runtime(python: str) -> Path:
    """A directory with ``bin/envcraft-tool`` (run by ``python``) and the sandbox's ``etc`` files."""
    with _runtimes_lock:
        root = _runtimes.get(python)
        if root is None or not (root / "bin" / CLIENT_NAME).is_file():
            root = Path(tempfile.mkdtemp(prefix="envcraft-runtime-"))
            atexit.register(shutil.rmtree, root, True)
            (root / "bin").mkdir()
            (root / "etc").mkdir()
            write_identity_files(root / "etc")
            client = root / "bin" / CLIENT_NAME
            source = Path(domain_cli.__file__).read_text(encoding="utf-8")
            client.write_text(f"#!{python} -IS\n{source}", encoding="utf-8")
            client.chmod(0o755)
            _runtimes[python] = root
        return root
