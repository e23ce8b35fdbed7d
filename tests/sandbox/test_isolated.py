"""The warm isolated worker: values come back, time is bounded, the host stays out of reach."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import envcraft
from envcraft.sandbox import IsolatedWorker, Limits, run_isolated
from envcraft.sandbox.process import kill_group

from .conftest import assert_no_connection, requires_bwrap

pytestmark = requires_bwrap

JOBS = """
import json
import os


def verify(ctx):
    done = [i for i in ctx["final"]["items"] if i["status"] == "done"]
    return {"score": len(done) / len(ctx["final"]["items"]), "components": {"done": len(done)}}


def spin(_):
    while True:
        pass


def taint(_):
    json.tainted = True
    return "tainted"


def tainted(_):
    return hasattr(json, "tainted")


def read(paths):
    out = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                out[path] = handle.read(200).decode("utf-8", "replace")
        except OSError as exc:
            out[path] = type(exc).__name__
    return out


def listing(_):
    return sorted(os.listdir("/"))


def connect(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError as exc:
        return type(exc).__name__
    return "connected"


def fail(_):
    raise ValueError("bad context")


def not_json(_):
    return {1, 2}


def hog(_):
    return len(bytearray(2 * 1024 ** 3))


def kill_worker(_):
    os.kill(os.getppid(), 9)
"""


@pytest.fixture(scope="module")
def worker() -> Iterator[IsolatedWorker]:
    with IsolatedWorker(Limits(memory_bytes=512 * 1024 * 1024, processes=16)) as shared:
        yield shared


def test_returns_values(worker: IsolatedWorker) -> None:
    ctx = {"final": {"items": [{"status": "done"}, {"status": "open"}]}}
    assert worker.run(JOBS, "verify", ctx, timeout=5) == {
        "ok": True,
        "value": {"score": 0.5, "components": {"done": 1}},
        "sandbox": "bubblewrap",
    }


def test_jobs_do_not_see_each_other(worker: IsolatedWorker) -> None:
    assert worker.run(JOBS, "taint", None, timeout=5)["value"] == "tainted"
    assert worker.run(JOBS, "tainted", None, timeout=5)["value"] is False


def test_times_out_and_keeps_working(worker: IsolatedWorker) -> None:
    result = worker.run(JOBS, "spin", None, timeout=1)
    assert (result["ok"], result["timed_out"]) == (False, True)
    assert worker.run(JOBS, "tainted", None, timeout=5)["ok"] is True


def test_a_job_cannot_kill_its_worker(worker: IsolatedWorker) -> None:
    """The worker is its namespace's first process: SIGKILL from inside cannot reach it."""
    assert worker.run(JOBS, "kill_worker", None, timeout=5)["ok"] is True
    assert worker.run(JOBS, "tainted", None, timeout=5)["ok"] is True


def test_restarts_after_the_worker_dies(worker: IsolatedWorker) -> None:
    assert worker.run(JOBS, "tainted", None, timeout=5)["ok"] is True
    sandbox = worker._sandbox
    assert sandbox is not None
    killer = threading.Timer(0.5, kill_group, (sandbox.proc,))  # the host kills it (OOM killer, say)
    killer.start()
    died = worker.run(JOBS, "spin", None, timeout=8)
    killer.join()
    assert died["ok"] is False and "died" in died["error"]
    assert worker.run(JOBS, "tainted", None, timeout=5)["ok"] is True


def test_host_files_are_unreadable(worker: IsolatedWorker, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret", encoding="utf-8")
    paths = [str(secret), envcraft.__file__, "/etc/shadow", "/etc/hostname", "/root/.bashrc"]
    read = worker.run(JOBS, "read", paths, timeout=5)["value"]
    assert set(read.values()) == {"FileNotFoundError"}, read
    assert worker.run(JOBS, "read", ["/usr/bin/env"], timeout=5)["value"]["/usr/bin/env"].startswith(
        "\x7fELF"
    )
    top = worker.run(JOBS, "listing", None, timeout=5)["value"]
    assert not {"work", "root", "home", "srv", "var", "mnt"} & set(top), top


def test_no_network(worker: IsolatedWorker, listener: socket.socket) -> None:
    result = worker.run(JOBS, "connect", listener.getsockname()[1], timeout=5)
    assert result["value"] != "connected"
    assert_no_connection(listener)


def test_failures_are_reported(worker: IsolatedWorker) -> None:
    failed = worker.run(JOBS, "fail", None, timeout=5)
    assert failed["error"] == "ValueError: bad context"
    assert failed["traceback"].splitlines()[1:3] == [
        '  File "<job>", line 50, in fail',
        '    raise ValueError("bad context")',
    ]
    assert "not JSON" in worker.run(JOBS, "not_json", None, timeout=5)["error"]
    assert "MemoryError" in worker.run(JOBS, "hog", None, timeout=5)["error"]
    assert "no function" in worker.run(JOBS, "missing", None, timeout=5)["error"]
    assert worker.run("def broken(:\n", "broken", None, timeout=5)["error"].startswith("SyntaxError")
    assert "not JSON" in worker.run(JOBS, "verify", {1, 2}, timeout=5)["error"]


def test_run_isolated_uses_a_shared_worker() -> None:
    assert run_isolated("def f(x):\n    return x * 2\n", "f", 21, 5)["value"] == 42


EXTRAS_JOB = """# envcraft-sandbox: {"libraries": ["pydantic", "yaml"], "workspace": true}
import os
import subprocess
import sys


def probe(_):
    import pydantic

    with open("/workspace/hello.py", "w") as handle:
        handle.write("print(6 * 7)")
    ran = subprocess.run(["python", "/workspace/hello.py"], capture_output=True, text=True).stdout
    library = os.path.dirname(os.path.dirname(pydantic.__file__))
    try:
        open(os.path.join(library, "planted.py"), "w").close()
        planted = True
    except OSError:
        planted = False
    home, line = os.environ.get("HOME"), sys._getframe().f_lineno
    return {"ran": ran.strip(), "planted": planted, "home": home, "line": line}
"""


def test_declared_libraries_are_importable_read_only_with_a_scratch_workspace() -> None:
    from envcraft.sandbox.extras import declared_extras

    extras = declared_extras(EXTRAS_JOB)
    assert extras is not None and extras.libraries == ("pydantic", "yaml") and extras.workspace
    with IsolatedWorker(extras=extras) as worker:
        reply = worker.run(EXTRAS_JOB, "probe", {}, timeout=20)
    assert reply["ok"], reply
    # The library path goes on the marker's line: the job's line numbers are its own.
    assert reply["value"] == {"ran": "42", "planted": False, "home": None, "line": 19}


def test_a_plain_job_gets_no_libraries(worker: IsolatedWorker) -> None:
    reply = worker.run("def probe(_):\n    import pydantic\n", "probe", {}, timeout=10)
    assert not reply["ok"] and "pydantic" in reply["error"]
