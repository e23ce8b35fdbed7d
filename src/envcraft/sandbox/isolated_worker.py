"""The isolated worker program: runs untrusted Python jobs, one forked child per job.

:mod:`envcraft.sandbox.isolated` starts this file with the system ``python3 -I -S``
inside bubblewrap, so it must stay standard-library only. Protocol, one JSON object per
line: the worker first writes ``{"ready": true}``; then for each job read from stdin,
``{"id", "source", "func", "payload", "timeout"}``, it writes ``{"id", "ok": true,
"value"}`` or ``{"id", "ok": false, "error", "timed_out"[, "traceback"]}`` to stdout.

Each job runs in a child forked from this already-started interpreter (about a
millisecond), in its own process group, with its output discarded and a CPU limit of its
own. So a job cannot see an earlier job's state, cannot write into the protocol, and any
process it leaves behind is killed with it. The optional argument is a JSON object of
``resource`` limits to set first (used where no sandbox applied them).
"""

from __future__ import annotations

import contextlib
import json
import linecache
import math
import os
import resource
import select
import signal
import sys
import time
import traceback
from typing import Any, BinaryIO

MAX_ERROR_CHARS = 2000
MAX_TRACEBACK_LINES = 30
_POLL = 0.05
JOB_FILE = "<job>"


def main() -> None:
    _apply_limits(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
    requests: BinaryIO = sys.stdin.buffer
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing but the protocol may reach the real stdout
    protocol_fds = (requests.fileno(), replies.fileno())
    _send(replies, {"ready": True})
    for line in requests:
        try:
            job = json.loads(line)
            reply = _run(job, protocol_fds, devnull)
            reply["id"] = job.get("id")
        except (ValueError, AttributeError) as exc:
            reply = {"ok": False, "error": f"bad job: {exc}", "timed_out": False}
        _send(replies, reply)


def _apply_limits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def _send(stream: BinaryIO, message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode("utf-8") + b"\n")
    stream.flush()


_COMPILED: dict[str, Any] = {}  # source -> code: the same verifier is sent for every rollout
_COMPILED_MAX = 32


def _compiled(source: Any) -> Any:
    """The job's code, compiled here once so every forked child inherits it; ``None`` if it
    does not compile (the child compiles it again and reports the error as it always does)."""
    code = _COMPILED.get(source) if isinstance(source, str) else None
    if code is None and isinstance(source, str):
        try:
            code = compile(source, JOB_FILE, "exec")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[source] = code
    return code


def _run(job: dict[str, Any], protocol_fds: tuple[int, int], devnull: int) -> dict[str, Any]:
    timeout = float(job.get("timeout", 10.0))
    job["code"] = _compiled(job.get("source"))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(job, write_end, protocol_fds, devnull, math.ceil(timeout) + 1)
    os.close(write_end)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also done by the child: whichever runs first
    data, timed_out = _collect(read_end, pid, time.monotonic() + timeout)
    os.close(read_end)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)  # the job's leftovers, or the job itself on timeout
    _, status = os.waitpid(pid, 0)
    _reap()
    if timed_out:
        return {"ok": False, "error": f"timed out after {timeout:g}s", "timed_out": True}
    try:
        reply: dict[str, Any] = json.loads(data)
    except ValueError:
        return {"ok": False, "error": _death(status), "timed_out": False}
    return reply


def _reap() -> None:
    """The worker is the sandbox's first process (PID 1 of its namespace): processes a job
    left behind are re-parented to it, so collect any that have exited."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _child(job: dict[str, Any], out: int, protocol_fds: tuple[int, int], devnull: int, cpu: int) -> None:
    """Run one job and write its JSON reply to ``out``; never returns."""
    try:
        os.setpgid(0, 0)
        for fd in protocol_fds:
            os.close(fd)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        if hard != resource.RLIM_INFINITY:
            cpu = min(cpu, hard)  # a job may not outlast the worker's own CPU limit
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        reply = _call(job)
        try:
            text = json.dumps(reply)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"ok": False, "error": f"the value is not JSON: {exc}", "timed_out": False})
        data = text.encode("utf-8")
        while data:
            data = data[os.write(out, data) :]
    finally:
        os._exit(0)


def _call(job: dict[str, Any]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "envcraft_job"}
    source = job["source"]
    linecache.cache[JOB_FILE] = (len(source), None, source.splitlines(True), JOB_FILE)  # for tracebacks
    try:
        exec(job.get("code") or compile(source, JOB_FILE, "exec"), namespace)
        func = namespace.get(job["func"])
        if not callable(func):
            return {
                "ok": False,
                "error": f"the source defines no function {job['func']!r}",
                "timed_out": False,
            }
        return {"ok": True, "value": func(job["payload"])}
    except BaseException as exc:
        frames = traceback.format_exception(
            type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None
        )
        lines = "".join(frames).splitlines()[-MAX_TRACEBACK_LINES:]
        return {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS],
            "timed_out": False,
            "traceback": "\n".join(lines),
        }


def _collect(fd: int, pid: int, deadline: float) -> tuple[bytes, bool]:
    """The child's reply from ``fd``; ``(b"", True)`` if the deadline comes first.

    Reading stops at EOF or once the child has exited (without reaping it, so its process
    group stays valid for the kill): a process the job left behind may hold the pipe open.
    """
    chunks: list[bytes] = []
    os.set_blocking(fd, False)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"", True
        select.select([fd], [], [], min(remaining, _POLL))
        exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
        if exited:
            return b"".join(chunks), False


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return "the job exceeded its CPU time limit"
        return f"the job process was killed by {signal.Signals(sig).name}"
    return f"the job process exited with status {os.waitstatus_to_exitcode(status)} without a result"


if __name__ == "__main__":
    main()
