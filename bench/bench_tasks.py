"""How fast the data engine turns environments into validated tasks, per core.

For each environment it runs one synthesis shard of ``--quota`` tasks in this process (one
core: walk, golden run, coherence, S0 + distractors, intents, verifier synthesis, validation by
mutations and by the scripted adversarial agents) and prints validated tasks per second, the
validated reference calls per second (the task count alone rewards shallow tasks: a one-call task
is cheaper to make than a five-call one, so the calls figure is the one that must not drop when
tasks grow deeper), walks tried and where the time went (golden runs vs. verifier synthesis vs.
validation). Verifiers and sandboxed shells run in child processes; after each environment the
shared verifier worker is stopped so its CPU time is counted too (``cpu s`` = this process + its
children). Wall time is the figure on a dedicated core; on a loaded machine ``t/cpu s`` and
``c/cpu s`` are the steadier ones. No assertions. Run:
``.venv/bin/python bench/bench_tasks.py [--envs returns_desk,notes_desk|all] [--quota 20] [--seed 0]
[--min-calls N] [--depth N]`` (``--min-calls``, ``--depth``: as on ``envcraft run``, whose corpus it
measures by default; ``--depth 1`` is the shallower corpus made as jobs come).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import envcraft.sandbox.isolated as isolated
import envcraft.tasks.corpus.compose as synth
from envcraft.core.package import builtin_ids
from envcraft.tasks.corpus.pipeline import lint_stage


def timed(totals: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``function`` so the wall time of its calls accumulates in ``totals[name]``."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            totals[name] += time.perf_counter() - start

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="all")
    parser.add_argument("--quota", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-calls", type=int, default=1, help="a deeper corpus (envcraft run --min-calls)")
    parser.add_argument(
        "--depth", type=int, default=synth.DEFAULT_DEPTH, help="run --depth (1: jobs as they come)"
    )
    options = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # tool crashes inside environments are theirs to log
    refs = builtin_ids() if options.envs == "all" else options.envs.split(",")
    _, usable = lint_stage(refs)
    library = synth.load_library(usable)
    totals = {"golden": 0.0, "verifier": 0.0, "validate": 0.0}
    synth.run_chain = timed(totals, "golden", synth.run_chain)
    synth.synthesize_verifier = timed(totals, "verifier", synth.synthesize_verifier)
    synth.validate = timed(totals, "validate", synth.validate)

    print(
        f"{'environment':22} {'tasks':>5} {'calls':>5} {'walks':>5} {'wall s':>7} {'cpu s':>6} "
        f"{'tasks/s':>8} {'t/cpu s':>8} {'c/cpu s':>8} {'golden':>7} {'verif.':>7} {'valid.':>7}"
    )
    all_tasks, all_calls, all_wall, all_cpu = 0, 0, 0.0, 0.0
    for env in sorted(library.graphs):
        before = dict(totals)
        wall, cpu = time.perf_counter(), cpu_seconds()
        config = synth.SynthConfig(seed=options.seed, min_calls=options.min_calls, depth=options.depth)
        result = synth.synthesize_shard(library, env, 0, options.quota, config)
        for worker in isolated._defaults.values():  # stop the verifier workers: their CPU time counts
            worker.close()
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        spent = {k: totals[k] - before[k] for k in totals}
        calls = sum(len(task.reference.calls) for task in result.tasks)
        all_tasks, all_calls = all_tasks + len(result.tasks), all_calls + calls
        all_wall, all_cpu = all_wall + wall, all_cpu + cpu
        print(
            f"{env:22} {len(result.tasks):5d} {calls:5d} {result.attempts:5d} {wall:7.2f} {cpu:6.2f} "
            f"{len(result.tasks) / wall:8.2f} {len(result.tasks) / cpu:8.2f} {calls / cpu:8.2f} "
            f"{spent['golden']:7.2f} {spent['verifier']:7.2f} {spent['validate']:7.2f}"
        )
    print(
        f"{'all':22} {all_tasks:5d} {all_calls:5d} {'':5} {all_wall:7.2f} {all_cpu:6.2f} "
        f"{all_tasks / all_wall:8.2f} {all_tasks / all_cpu:8.2f} {all_calls / all_cpu:8.2f}"
    )
    minutes = 1000 / (all_tasks / all_cpu) / 60
    print(
        f"validated tasks per second per core: {all_tasks / all_wall:.2f} wall, "
        f"{all_tasks / all_cpu:.2f} per CPU second (1,000 tasks need ~{minutes:.1f} CPU-minutes)"
    )
    print(
        f"validated reference calls per second per core: {all_calls / all_wall:.2f} wall, "
        f"{all_calls / all_cpu:.2f} per CPU second ({all_calls / max(all_tasks, 1):.2f} calls per task)"
    )


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have exited (the stopped verifier worker)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


if __name__ == "__main__":
    main()
