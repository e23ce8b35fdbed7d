"""What verification costs per task: golden replay, one verifier call, full mutation validation.

On a task set (``--tasks DIR``, e.g. the ``tasks/`` of ``envcraft run``; without it a small
set is synthesized from the built-in environments first) this times, per task:

* execute: the golden calls replayed in fresh in-memory sessions (``execute_reference``);
* verify: one verifier call on that outcome in the sandbox's warm isolated worker;
* validate (given golden): :func:`validate` with the golden outcome passed in, as synthesis
  does it (the shifted replays computed once and shared with verifier synthesis);
* validate (from scratch): :func:`validate` re-executing everything, as ``tasks check`` does.

It prints means, medians and maxima in milliseconds plus the mutation totals (no assertions).
Run: ``.venv/bin/python bench/bench_verify.py [--tasks DIR] [--limit N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from envcraft.core import builtin_ids
from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute_reference, shifted_runs
from envcraft.tasks.play.outcome import ExecutionError, Outcome
from envcraft.tasks.validation.validate import validate
from envcraft.tasks.verifier.scoring import run_verifier


def synthesized(per_env: int) -> list[Task]:
    tasks: list[Task] = []
    for env in builtin_ids():
        library = load_library([env])
        tasks += synthesize_shard(library, env, 0, per_env, SynthConfig(seed=5, p_cross=0.0)).tasks
    return tasks


def timed(work: Callable[[], object], runs: list[float]) -> None:
    start = time.perf_counter()
    work()
    runs.append((time.perf_counter() - start) * 1000)


def report(label: str, runs: list[float]) -> None:
    print(
        f"{label:28s} mean {statistics.mean(runs):7.1f} ms   median {statistics.median(runs):7.1f} ms"
        f"   max {max(runs):7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", help="task-set directory (default: synthesize a small set)")
    parser.add_argument("--limit", type=int, default=200, help="at most this many tasks")
    parser.add_argument("--per-env", type=int, default=4, help="tasks per built-in env when synthesizing")
    args = parser.parse_args()
    tasks = (read_tasks(args.tasks) if args.tasks else synthesized(args.per_env))[: args.limit]
    goldens: list[tuple[Task, Outcome]] = []
    for task in tasks:
        try:
            goldens.append((task, execute_reference(task)))
        except ExecutionError as exc:
            print(f"skipped {task.id}: {exc}")
    times: dict[str, list[float]] = {k: [] for k in ("execute", "verify", "shifted", "given", "scratch")}
    mutations = killed = valid = 0
    for task, golden in goldens:
        timed(lambda t=task: execute_reference(t), times["execute"])
        timed(lambda t=task, g=golden: run_verifier(t, g), times["verify"])
        timed(lambda g=golden: shifted_runs(g), times["shifted"])
        timed(lambda t=task, g=golden: validate(t, g, record=False), times["given"])
        timed(lambda t=task: validate(t, record=False), times["scratch"])
        result = validate(task, golden, record=False)
        mutations += len(result.mutations)
        killed += result.killed
        valid += result.valid
    print(f"{len(goldens)} tasks, {valid} valid, {killed}/{mutations} mutations killed")
    report("execute (golden replay)", times["execute"])
    report("verify (one call)", times["verify"])
    report("shifted replays (synthesis)", times["shifted"])
    report("validate (given golden)", times["given"])
    report("validate (from scratch)", times["scratch"])


if __name__ == "__main__":
    main()
