"""A deeper corpus on request: ``tasks synth --min-calls N`` keeps only jobs of at least N
reference calls, walked long enough for them, with steps on unrelated records left out rather
than the job cut short, and split over at least two user turns where the job has the writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from envcraft.tasks.corpus.compose import SynthConfig
from envcraft.tasks.format.io import read_tasks

ENVCRAFT = str(Path(sys.executable).parent / "envcraft")


def test_min_calls_gives_deeper_multi_turn_jobs_and_says_what_it_dropped(tmp_path: Path) -> None:
    out = tmp_path / "deep"
    done = subprocess.run(
        [ENVCRAFT, "tasks", "synth", "--envs", "notes_desk,sheet_analytics", "--n", "3", "--seed", "1",
         "--min-calls", "4", "--workers", "1", "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    stats = json.loads(done.stdout)
    tasks = read_tasks(out / "tasks.jsonl")
    assert tasks, stats["rejected"]
    assert all(len(t.reference.calls) >= 4 for t in tasks)
    assert sum(len(t.turns) >= 2 for t in tasks) >= len(tasks) / 2
    assert stats["rejected"]["shallow"] > 0  # the short jobs it drew were dropped, and counted
    assert stats["per_task"]["overall"]["calls"]["min"] >= 4


def test_the_option_travels_to_the_shard_workers_and_defaults_to_every_job() -> None:
    """Shard workers rebuild the config from its JSON (``pipeline.run_shard``)."""
    assert SynthConfig().min_calls == 1
    assert SynthConfig(**SynthConfig(min_calls=5).to_json()).min_calls == 5
