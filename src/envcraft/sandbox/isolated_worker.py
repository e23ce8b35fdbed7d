"""The isolated worker program: runs untrusted Python jobs, one forked child per job.

:mod:`envcraft.sandbox.isolated` starts this file with the system ``python3 -I -S``
inside bubblewrap, so it must stay standard-library only. Protocol, JSON lines: the
worker first writes ``{"ready": true}``; then each job is two lines read from stdin, a
header ``{"id", "source", "func", "timeout"}`` and the payload, and the worker writes
``{"id", "ok": true, "value"}`` or ``{"id", "ok": false, "error", "timed_out"[,
"traceback"]}`` to stdout.

Each job runs in a child forked from this started interpreter, in its own process
group, with its output discarded and a CPU limit of its own, so a job cannot see an
earlier job's state, cannot write into the protocol, and any process it leaves behind is
killed with it (after its reply, before the next job is read). Forking costs about a
millisecond, so the next child is forked ahead, right after a reply: it waits for its job
on a pipe and receives the job's compiled code (marshal, from this trusted parent) with
it. The standard modules verifiers import are imported here once, before any fork.
The optional argument is a JSON object of ``resource`` limits to set first (used where no
sandbox applied them).
"""

from __future__ import annotations

import contextlib
import json
import linecache
import marshal
import math
import os
import resource
import select
import signal
import struct
import sys
import time
import traceback
from typing import Any, BinaryIO

MAX_ERROR_CHARS = 2000
MAX_TRACEBACK_LINES = 30
_POLL = 0.05
JOB_FILE = "<job>"
_FRAME = struct.Struct("<QQ")  # parent -> child: job header length, payload length (then code)
_SIZE = struct.Struct("<Q")  # child -> parent: reply length
# Imported before any fork, so a job's ``import`` of them costs nothing (jobs get them
# pristine: each child is forked from this interpreter, which never runs job code).
PRELOADED = (
    "collections", "csv", "datetime", "decimal", "fractions", "functools", "hashlib", "io",
    "itertools", "operator", "random", "re", "statistics", "string", "typing",
)  # fmt: skip


def main() -> None:
    _apply_limits(json.loads(sys.argv[1]) if len(sys.argv) > 1 else {})
    for name in PRELOADED:
        __import__(name)
    requests: BinaryIO = sys.stdin.buffer
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # nothing but the protocol may reach the real stdout
    protocol_fds = (requests.fileno(), replies.fileno())
    child = _Child.fork(protocol_fds, devnull)
    _send(replies, {"ready": True})
    while True:
        header, payload = requests.readline(), requests.readline()
        if not header:
            return
        job: dict[str, Any] = {}
        try:
            job = json.loads(header)
            reply = child.run(job, header, payload.rstrip(b"\n"), _compiled(job.get("source")))
        except (ValueError, AttributeError, TypeError) as exc:
            reply = {"ok": False, "error": f"bad job: {exc}", "timed_out": False}
        reply["id"] = job.get("id") if isinstance(job, dict) else None
        _send(replies, reply)
        child.finish()
        _reap()
        child = _Child.fork(protocol_fds, devnull)


def _apply_limits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def _send(stream: BinaryIO, message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode("utf-8") + b"\n")
    stream.flush()


_COMPILED: dict[str, bytes] = {}  # source -> marshalled code: the same verifier comes for every rollout
_COMPILED_MAX = 32


def _compiled(source: Any) -> bytes:
    """The job's code, compiled here once and marshalled for the children; ``b""`` if it does
    not compile (the child compiles it again and reports the error as it always does)."""
    if not isinstance(source, str):
        return b""
    code = _COMPILED.get(source)
    if code is None:
        try:
            code = marshal.dumps(compile(source, JOB_FILE, "exec"))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return b""
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[source] = code
    return code


class _Child:
    """A forked child waiting for one job: the parent's side of its two pipes."""

    def __init__(self, pid: int, jobs: int, replies: int) -> None:
        self.pid, self.jobs, self.replies = pid, jobs, replies
        self.reaped = False
        self.status = 0

    @classmethod
    def fork(cls, protocol_fds: tuple[int, int], devnull: int) -> _Child:
        job_read, job_write = os.pipe()
        reply_read, reply_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            for fd in (job_write, reply_read):
                os.close(fd)
            _child(job_read, reply_write, protocol_fds, devnull)
        os.close(job_read)
        os.close(reply_write)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child: whichever runs first
        return cls(pid, job_write, reply_read)

    def run(self, job: dict[str, Any], header: bytes, payload: bytes, code: bytes) -> dict[str, Any]:
        """Hand the job over (``header``: the job's line as it came, parsed into ``job``) and wait
        for its reply (or its death, or the deadline)."""
        timeout = float(job.get("timeout", 10.0))
        deadline = time.monotonic() + timeout
        try:
            os.write(self.jobs, _FRAME.pack(len(header), len(payload)))
            for data in (header, payload, code):
                view = memoryview(data)
                while view:
                    view = view[os.write(self.jobs, view) :]
        except OSError:  # the child is gone (killed from outside): report how it ended
            return {"ok": False, "error": _death(self._wait()), "timed_out": False}
        finally:
            self._close_jobs()
        data, timed_out = _collect(self.replies, self.pid, deadline)
        if timed_out:
            self._kill()
            return {"ok": False, "error": f"timed out after {timeout:g}s", "timed_out": True}
        try:
            reply: dict[str, Any] = json.loads(data)
        except ValueError:
            self._kill()
            return {"ok": False, "error": _death(self._wait()), "timed_out": False}
        return reply

    def finish(self) -> None:
        """Kill what the job left behind (or the job itself) and collect the child."""
        self._close_jobs()
        os.close(self.replies)
        self._kill()
        self._wait()

    def _close_jobs(self) -> None:
        """Close the job pipe once (an fd number closed twice may belong to a newer file)."""
        if self.jobs >= 0:
            os.close(self.jobs)
            self.jobs = -1

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)

    def _wait(self) -> int:
        if self.reaped:
            return self.status
        _, self.status = os.waitpid(self.pid, 0)
        self.reaped = True
        return self.status


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


def _child(jobs: int, out: int, protocol_fds: tuple[int, int], devnull: int) -> None:
    """Wait for one job on ``jobs``, run it and write its framed JSON reply to ``out``; never returns."""
    try:
        os.setpgid(0, 0)
        for fd in protocol_fds:
            os.close(fd)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        header_size, payload_size = _FRAME.unpack(_read_exactly(jobs, _FRAME.size))
        job = json.loads(_read_exactly(jobs, header_size))
        payload = _read_exactly(jobs, payload_size)
        code = _read_all(jobs)
        os.close(jobs)
        cpu = math.ceil(float(job.get("timeout", 10.0))) + 1  # the parent's default too
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        if hard != resource.RLIM_INFINITY:
            cpu = min(cpu, hard)  # a job may not outlast the worker's own CPU limit
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        reply = _call(job, payload, marshal.loads(code) if code else None)
        try:
            text = json.dumps(reply)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"ok": False, "error": f"the value is not JSON: {exc}", "timed_out": False})
        data = text.encode("utf-8")
        data = _SIZE.pack(len(data)) + data
        while data:
            data = data[os.write(out, data) :]
    finally:
        os._exit(0)


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:  # the parent went away before the whole job came
            os._exit(0)
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _call(job: dict[str, Any], payload: bytes, code: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "envcraft_job"}
    source = job["source"]
    linecache.cache[JOB_FILE] = (len(source), None, source.splitlines(True), JOB_FILE)  # for tracebacks
    try:
        exec(code or compile(source, JOB_FILE, "exec"), namespace)
        func = namespace.get(job["func"])
        if not callable(func):
            return {
                "ok": False,
                "error": f"the source defines no function {job['func']!r}",
                "timed_out": False,
            }
        return {"ok": True, "value": func(json.loads(payload))}
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
    """The child's framed reply from ``fd`` (``b""`` if it ended without one); ``(b"", True)``
    if the deadline comes first.

    Reading stops once the whole frame came, at EOF, or once the child has exited (without
    reaping it, so its process group stays valid for the kill): a process the job left
    behind may hold the pipe open.
    """
    buffer = bytearray()
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
                return _frame(buffer), False
            buffer += chunk
            if len(buffer) >= _SIZE.size and len(buffer) >= _SIZE.size + _SIZE.unpack_from(buffer)[0]:
                return _frame(buffer), False
        if exited:
            return _frame(buffer), False


def _frame(buffer: bytearray) -> bytes:
    if len(buffer) < _SIZE.size:
        return b""
    return bytes(buffer[_SIZE.size : _SIZE.size + _SIZE.unpack_from(buffer)[0]])


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return "the job exceeded its CPU time limit"
        return f"the job process was killed by {signal.Signals(sig).name}"
    return f"the job process exited with status {os.waitstatus_to_exitcode(status)} without a result"


if __name__ == "__main__":
    main()
