"""Run untrusted Python (verifiers, synthesized code) in a confined, warm worker process.

:class:`IsolatedWorker` keeps one ``/usr/bin/python3 -I -S`` running
:mod:`envcraft.sandbox.isolated_worker` inside bubblewrap: no network, no host files but
the read-only system directories, a private size-capped ``/tmp``, the resource limits of
:class:`Limits`. Jobs are stdlib-only source plus the name of a function to call with a
JSON payload::

    worker = IsolatedWorker()
    worker.run("def verify(ctx):\\n    return {'score': 1.0}", "verify", {"final": {}}, timeout=5)
    # -> {"ok": True, "value": {"score": 1.0}, "sandbox": "bubblewrap"}
    # or {"ok": False, "error": "...", "timed_out": bool, "sandbox": ...}

Every job runs in a fresh child forked inside the worker, so jobs cannot affect each
other; a worker that stops answering is killed and restarted on the next job. One job
runs at a time per worker: give each thread its own worker for parallel runs (the worker
dies with the thread that started it, through ``--die-with-parent``, and then restarts).
:func:`run_isolated` uses a shared default worker.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from envcraft.sandbox import isolated_worker
from envcraft.sandbox.bwrap import (
    SEAL,
    SYSTEM_PYTHON,
    SandboxUnavailable,
    environment_args,
    namespace_args,
    scratch_args,
    select_mode,
    system_mount_args,
)
from envcraft.sandbox.extras import Extras
from envcraft.sandbox.launch import DataFile, Sandbox, start
from envcraft.sandbox.limits import Limits
from envcraft.sandbox.process import kill_group

WORKER_LIMITS = Limits(cpu_seconds=24 * 3600, processes=32)  # per-job CPU is set from the timeout
WORKER_MOUNT = "/opt/envcraft/worker.py"
LIBRARY_MOUNT = "/opt/lib"  # + "/N": the Nth directory of a job's declared libraries (read-only)
WORKSPACE = "/workspace"
_START_TIMEOUT = 15.0
_GRACE = 2.0  # beyond a job's timeout, how long the worker may take to report it


class IsolatedWorker:
    """A warm sandboxed Python worker; :meth:`run` is thread-safe (jobs run one at a time)."""

    def __init__(self, limits: Limits = WORKER_LIMITS, extras: Extras | None = None) -> None:
        self.limits = limits
        self.extras = extras or Extras()
        self._lock = threading.Lock()
        self._sandbox: Sandbox | None = None
        self._stderr: IO[bytes] | None = None
        self._label = ""
        self._confined = False
        self._buffer = bytearray()
        self._jobs = 0

    def run(self, source: str, func: str, payload: Any, timeout: float = 10.0) -> dict[str, Any]:
        """Call ``func(payload)`` from ``source`` in the sandbox; never raises."""
        with self._lock:
            self._jobs += 1
            try:
                sandbox = self._ensure_started()
            except (SandboxUnavailable, ValueError) as exc:
                return {"ok": False, "error": str(exc), "timed_out": False}
            header = {
                "id": self._jobs,
                "source": self._path_prefix(source) + source,
                "func": func,
                "timeout": timeout,
            }
            try:
                line = json.dumps(header) + "\n" + json.dumps(payload)
            except (TypeError, ValueError) as exc:
                return {"ok": False, "error": f"the payload is not JSON: {exc}", "timed_out": False}
            reply = self._exchange(sandbox, line, timeout + _GRACE)
            label = self._label
            if reply is not None and reply.get("id") == header["id"]:
                reply.pop("id")
                return {**reply, "sandbox": label}
            self._stop()
        if reply is None:
            error = f"timed out after {timeout:g}s (the worker was restarted)"
            return {"ok": False, "error": error, "timed_out": True, "sandbox": label}
        return {"ok": False, "error": "the isolated worker died", "timed_out": False, "sandbox": label}

    def close(self) -> None:
        """Stop the worker (a later :meth:`run` starts a new one)."""
        with self._lock:
            self._stop()

    def __enter__(self) -> IsolatedWorker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the worker process ------------------------------------------------------------
    def _ensure_started(self) -> Sandbox:
        if self._sandbox is not None and self._sandbox.proc.poll() is None:
            return self._sandbox
        self._stop()
        mode = select_mode()
        self._label = mode.label
        self._confined = mode.binary is not None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _stop)
        if mode.binary is not None:
            if not os.access(SYSTEM_PYTHON, os.X_OK):
                raise SandboxUnavailable(f"the isolated worker needs {SYSTEM_PYTHON}, which is missing")
            args = [
                *namespace_args(),
                *system_mount_args(),
                *scratch_args(self.limits.tmp_bytes),
                *self._extra_args(),
                "--chdir", "/tmp",
                *SEAL,
                *environment_args({"LANG": "C.UTF-8", "PATH": self._path()}),
                "--", SYSTEM_PYTHON, "-I", "-S", WORKER_MOUNT,
            ]  # fmt: skip
            self._sandbox = start(
                mode.binary,
                args,
                self.limits,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                files=[DataFile(WORKER_MOUNT, _worker_source())],
            )
        else:
            self._sandbox = Sandbox(self._spawn_unsafe(), None)
        ready = self._exchange(self._sandbox, None, _START_TIMEOUT)
        if ready is None or not ready.get("ready"):
            reason = self._stderr_tail()
            self._stop()
            raise SandboxUnavailable(f"the isolated worker did not start: {reason}")
        return self._sandbox

    def _extra_args(self) -> list[str]:
        """Read-only binds of the declared libraries; the scratch workspace and its ``python``."""
        args: list[str] = []
        for i, directory in enumerate(self.extras.library_dirs()):
            args += ["--ro-bind", directory, f"{LIBRARY_MOUNT}/{i}"]
        if self.extras.workspace:
            args += ["--size", str(self.limits.tmp_bytes), "--tmpfs", WORKSPACE]
            args += ["--symlink", SYSTEM_PYTHON, "/opt/bin/python"]
        return args

    def _path(self) -> str:
        return "/opt/bin:/usr/bin:/bin" if self.extras.workspace else "/usr/bin:/bin"

    def _path_prefix(self, source: str) -> str:
        """Code put before the job's source for its libraries (on its first line when that is a
        comment, such as the :mod:`~envcraft.sandbox.extras` marker, so line numbers stay)."""
        if not self.extras.libraries:
            return ""
        dirs = self.extras.library_dirs()
        if self._confined:
            dirs = tuple(f"{LIBRARY_MOUNT}/{i}" for i in range(len(dirs)))
        code = f"import sys as _envcraft_sys; _envcraft_sys.path[:0] = {list(dirs)!r}"
        return code + ("  " if source.startswith("#") else "\n")

    def _spawn_unsafe(self) -> subprocess.Popen[bytes]:
        """No isolation: the worker applies its own limits (no process cap, no namespaces)."""
        python = SYSTEM_PYTHON if os.access(SYSTEM_PYTHON, os.X_OK) else sys.executable
        limits = {name: value for name, value in self.limits.rlimits().items() if name != "RLIMIT_NPROC"}
        return subprocess.Popen(
            [python, "-I", "-S", isolated_worker.__file__, json.dumps(limits)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=tempfile.gettempdir(),
            env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
            start_new_session=True,
        )

    def _exchange(self, sandbox: Sandbox, line: str | None, timeout: float) -> dict[str, Any] | None:
        """Send ``line`` (if any) and read one reply; ``None`` on timeout or a dead worker."""
        proc = sandbox.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            if line is not None:
                proc.stdin.write(line.encode("utf-8") + b"\n")
                proc.stdin.flush()
        except OSError:
            return {}
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return {}
            self._buffer += chunk
        head, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        try:
            reply = json.loads(head)
        except ValueError:
            return {}
        return reply if isinstance(reply, dict) else {}

    def _stop(self) -> None:
        sandbox, self._sandbox = self._sandbox, None
        self._buffer.clear()
        if sandbox is not None:
            kill_group(sandbox.proc)
            sandbox.proc.wait()
            for stream in (sandbox.proc.stdin, sandbox.proc.stdout):
                if stream is not None:
                    stream.close()
            sandbox.release()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return "no output"
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"


@functools.cache
def _worker_source() -> bytes:
    """The worker program, copied into the sandbox (no host path of it is bound there)."""
    return Path(isolated_worker.__file__).read_bytes()


_defaults: dict[Extras, IsolatedWorker] = {}
_default_lock = threading.Lock()


def run_isolated(
    source: str, func: str, payload: Any, timeout: float = 10.0, extras: Extras | None = None
) -> dict[str, Any]:
    """:meth:`IsolatedWorker.run` on the process-wide default worker (one per :class:`Extras`)."""
    key = extras or Extras()
    with _default_lock:
        worker = _defaults.get(key)
        if worker is None:
            worker = _defaults[key] = IsolatedWorker(extras=key)
            atexit.register(worker.close)
    return worker.run(source, func, payload, timeout)
