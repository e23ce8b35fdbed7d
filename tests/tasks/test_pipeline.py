"""`envcraft run`: resumable shards (a real process interrupted and killed), outputs, sizing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcraft.tasks.corpus.compose import load_library
from envcraft.tasks.corpus.pipeline import CHUNK, MIN_PER_ENV, TARGET_TASKS, plan

COUNTER = str(Path(__file__).resolve().parents[1] / "fixtures" / "counter")
ROOT = Path(__file__).resolve().parents[2]
ENVCRAFT = str(Path(sys.executable).parent / "envcraft")
ENVS = f"returns_desk,{COUNTER}"
SHARDS = 4  # 2 environments x 50 tasks in chunks of 25


def command(out: Path, workers: int) -> list[str]:
    return [
        ENVCRAFT,
        "run",
        "--out",
        str(out),
        "--envs",
        ENVS,
        "--n-per-env",
        "50",
        "--seed",
        "2",
        "--workers",
        str(workers),
        "--json",
    ]


def finished_shards(out: Path) -> int:
    return len(list(out.glob("shards/*/*.json")))


def _as_a_terminal_starts_it() -> None:
    """In the child: Ctrl-C neither ignored nor blocked. A child inherits both from this process,
    where an earlier test of the same worker (a library it loaded) may have left either; Python
    keeps an inherited ignored SIGINT ignored, and the run would then finish regardless."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def interrupt(out: Path, workers: int, sig: signal.Signals, after: int) -> int:
    """Start a run, wait until ``after`` shards are on disk, then send ``sig`` to its process group."""
    process = subprocess.Popen(
        command(out, workers),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_as_a_terminal_starts_it,
    )
    deadline = time.monotonic() + 240
    while finished_shards(out) < after and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be interrupted"
    os.killpg(process.pid, sig)
    return process.wait(timeout=60)


def test_interrupted_and_killed_run_resumes_to_the_same_corpus(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    done = subprocess.run(
        command(clean, 2), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["shards"] == {"total": SHARDS, "resumed": 0}

    # Ctrl-C: stops, keeps finished shards. In the full suite (2 workers) a run has twice ended 0
    # after the signal, never when this test runs alone (cause not found yet): up to 3 tries.
    for attempt in range(3):
        broken = tmp_path / f"broken{attempt}"
        code = interrupt(broken, 1, signal.SIGINT, after=1)
        if code != 0:
            break
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert code != 0, (
        f"Ctrl-C ignored 3 times; SIGINT here {signal.getsignal(signal.SIGINT)!r}, blocked {blocked}"
    )
    kept = finished_shards(broken)
    assert 1 <= kept < SHARDS
    interrupt(broken, 1, signal.SIGKILL, after=kept + 1)  # killed outright, mid-shard
    assert kept < finished_shards(broken) < SHARDS
    assert not list(broken.glob("shards/*/.*.tmp"))  # no torn shard left visible
    resumed = subprocess.run(
        command(broken, 2), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["shards"]["resumed"] >= kept + 1

    assert (broken / "tasks" / "tasks.jsonl").read_bytes() == (clean / "tasks" / "tasks.jsonl").read_bytes()
    assert summary["corpus"]["tasks"] >= 90  # 2 x 50, less duplicates across shards
    report = (broken / "report.html").read_text()
    assert "<svg" in report and "def verify(ctx" in report
    assert "<script" not in report and "http://" not in report.replace("http://www.w3.org", "")
    for name in (
        "summary.json",
        "lint.json",
        "graphs/returns_desk.json",
        "graphs/workflow.svg",
        "tasks/stats.json",
    ):
        assert (broken / name).is_file(), name


def test_default_plan_spreads_the_target_by_graph_size() -> None:
    library = load_library(["returns_desk", COUNTER])
    specs = plan(library, None)
    per_env = {env: sum(s.quota for s in specs if s.env == env) for env in library.graphs}
    assert sum(per_env.values()) >= TARGET_TASKS
    assert min(per_env.values()) >= MIN_PER_ENV
    assert per_env["returns_desk"] > per_env["counter"]  # 40 edges need more tasks than 6
    assert all(0 < s.quota <= CHUNK for s in specs)
    assert [s.shard for s in specs if s.env == "counter"] == list(
        range(len([s for s in specs if s.env == "counter"]))
    )
    fixed = plan(library, 30)
    assert [(s.env, s.quota) for s in fixed] == [
        ("counter", 25),
        ("counter", 5),
        ("returns_desk", 25),
        ("returns_desk", 5),
    ]


def test_bad_environment_is_a_one_line_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [ENVCRAFT, "run", "--out", str(tmp_path), "--envs", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0 and "nope" in done.stderr


@pytest.mark.parametrize("flag", ["--n-per-env", "--workers"])
def test_numbers_must_be_positive(tmp_path: Path, flag: str) -> None:
    done = subprocess.run(
        [ENVCRAFT, "run", "--out", str(tmp_path), flag, "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
