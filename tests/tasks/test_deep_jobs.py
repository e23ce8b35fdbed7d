"""A deeper corpus on request: ``tasks synth --min-calls N`` keeps only jobs of at least N
reference calls, walked long enough for them, with steps on unrelated records left out rather
than the job cut short, and split over at least two user turns where the job has the writes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from envcraft.tasks.corpus.compose import (
    DEFAULT_DEPTH,
    SHORT_PATIENCE,
    Draft,
    SynthConfig,
    golden_stage,
    load_library,
    synthesize_shard,
)
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.golden.choose import DEEP_COHESION
from envcraft.tasks.golden.coherence import tidy
from envcraft.tasks.golden.run import GoldenRun, run_chain
from envcraft.tasks.graphs.walk import Coverage, Step

ENVCRAFT = str(Path(sys.executable).parent / "envcraft")


def test_min_calls_gives_deeper_multi_turn_jobs_and_says_what_it_dropped(tmp_path: Path) -> None:
    out = tmp_path / "deep"
    done = subprocess.run(
        [ENVCRAFT, "tasks", "synth", "--envs", "notes_desk,sheet_analytics", "--n", "3", "--seed", "3",
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


def test_a_short_job_grows_by_follow_ups_instead_of_being_thrown_away() -> None:
    """A deeper corpus continues a job that tidied out short from where it ended: what it keeps
    begins with the short job's calls, changes more, and is still one coherent job as it is."""
    library = load_library(["returns_desk"])
    config = SynthConfig(seed=3, min_calls=5)
    chain = [Step("returns_desk", t) for t in ("list_orders", "get_order", "cancel_order")]
    grown = 0
    for seed in range(12):
        draft = Draft(library, chain, f"grow:{seed}", random.Random(seed), config)
        if golden_stage(draft, Coverage(), None) is not None:
            continue
        short = _short_job(draft, seed)  # the same draws, not grown
        assert short is not None
        run = draft.golden
        assert [(c.tool, c.args) for c in run.calls[: len(short.calls)]] == [
            (c.tool, c.args) for c in short.calls
        ]
        if len(run.calls) > len(short.calls):
            grown += 1
            again, _ = tidy(run, draft.packages, library.graphs, skip_gaps=True)
            assert again is not None and len(again.calls) == len(run.calls)
    assert grown >= 3


def _short_job(draft: Draft, seed: int) -> GoldenRun | None:
    rng = random.Random(seed)
    run = run_chain(draft.chain, draft.packages, draft.library.graphs, draft.initial, draft.files, rng,
                    Coverage(), draft.config.p_error, None, DEEP_COHESION)  # fmt: skip
    return None if run is None else tidy(run, draft.packages, draft.library.graphs, skip_gaps=True)[0]


def test_a_depth_grows_most_jobs_to_it_and_keeps_the_short_ones_it_drew_instead_of_drawing_again() -> None:
    """``--depth N``: at least 60% of a shard's tasks reach N calls, the rest are the short
    jobs drawn on the way; an environment whose jobs rarely reach N still fills its shard."""
    library = load_library(["sheet_analytics", "event_stream"])
    config = SynthConfig(seed=1, depth=5)
    assert SynthConfig(**config.to_json()).depth == 5 and SynthConfig().depth == DEFAULT_DEPTH == 5
    deep = synthesize_shard(library, "sheet_analytics", 0, 5, config)
    calls = [len(t.reference.calls) for t in deep.tasks]
    assert len(calls) == 5 and sum(c >= 5 for c in calls) >= 3, calls
    # event_stream alone rarely makes a job of 5 calls: without giving up on the target after a
    # few refusals in a row, its shard spent the whole budget (200 drafts, 111 refused as short)
    alone = load_library(["event_stream"])
    shallow = synthesize_shard(alone, "event_stream", 0, 5, config)
    assert len(shallow.tasks) == 5
    assert shallow.rejected["shallow"] <= SHORT_PATIENCE * (len(shallow.tasks) + 1), shallow.rejected
