"""A killed `envcraft run` takes its pool workers (and their sandboxed verifier workers) with it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

from .test_pipeline import ROOT, command, finished_shards


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def descendants(pid: int) -> set[int]:
    tree, found, stack = _children(), set(), [pid]
    while stack:
        for child in tree.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _eof_within(fd: int, seconds: float) -> bool:
    """Read ``fd`` until end of file (nobody holds the pipe's other end any more) or time is up."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0] and not os.read(fd, 65536):
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigkill_of_the_run_kills_its_workers_and_frees_its_output(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = subprocess.Popen(
        command(out, 2), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 240
    workers: set[int] = set()
    while time.monotonic() < deadline and process.poll() is None and len(workers) < 2:
        workers = descendants(process.pid)
        time.sleep(0.05)
    assert process.poll() is None and len(workers) >= 2, "the run never started its workers"
    time.sleep(1.0)  # let them get into their shards (and start sandboxed verifier workers)
    workers = descendants(process.pid)
    os.kill(process.pid, signal.SIGKILL)  # the main process only, not its group
    process.wait(timeout=30)
    assert process.stdout is not None
    assert _eof_within(process.stdout.fileno(), 20), "something still held the run's stdout"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "workers outlived the run"
    kept = finished_shards(out)
    resumed = subprocess.run(
        command(out, 2), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert resumed.returncode == 0, resumed.stderr
    assert finished_shards(out) >= kept
