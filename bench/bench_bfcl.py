"""BFCL's own execution of the multi-turn ground truths against envcraft's replay of the same calls.

For every imported task (800 with all four categories) the ground truth runs three ways:

* bfcl: ``multi_turn_utils.execute_multi_turn_func_call`` turn by turn, as BFCL's checker does
  (instances built from ``initial_config`` by ``_load_scenario``, calls ``eval``-ed);
* memory: ``Session.memory`` per involved class from the task's S0, the same calls through
  ``Session.call`` (the wrapper resumes the BFCL instance from state, calls, encodes it back);
* persisted: ``Session.create`` in a temporary directory (durable store: lock, log, atomic state).

Times include building each run's starting point (BFCL: instances + ``_load_scenario``; ours:
sessions from S0) and exclude importing and package loading. It prints totals, per-call means
and the ratios from one run (no assertions). Run:
``.venv/bin/python bench/bench_bfcl.py [--out DIR] [--categories base,...] [--limit N]``
(without ``--out`` it imports into a temporary directory first).
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from envcraft.core import Session, load_package
from envcraft.integrations.bfcl import importer, source
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task

PREFIX = "bench_bfcl_"


def bfcl_run(entry: source.Entry, name: str) -> None:
    utils = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
    for calls in entry.ground_truth:
        utils.execute_multi_turn_func_call(
            calls, entry.initial_config, entry.involved_classes, name, entry.id,
            long_context=entry.long_context, is_evaL_run=True,
        )  # fmt: skip


def drop_bfcl_instances() -> None:
    namespace = vars(importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"))
    for key in [k for k in namespace if k.startswith(PREFIX)]:
        del namespace[key]


def envcraft_run(task: Task, packages: dict[str, str], open_session: Callable[[str, str], Session]) -> None:
    sessions = {env: open_session(env, packages[env]) for env in task.envs}
    for call in task.reference.calls:
        sessions[call.env].call(call.tool, call.args)
    for session in sessions.values():
        session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="an existing 'envcraft import bfcl' directory")
    parser.add_argument("--categories", default=",".join(source.CATEGORIES))
    parser.add_argument("--limit", type=int, default=None, help="first N tasks per category")
    args = parser.parse_args()
    categories = [c for c in args.categories.split(",") if c]
    with tempfile.TemporaryDirectory(prefix="bench-bfcl-") as scratch:
        out = args.out
        if out is None:
            out = Path(scratch) / "import"
            importer.import_bfcl(out, categories, limit=args.limit)
        packages = {source.env_id(c): str(out / "envs" / source.env_id(c)) for c in source.CLASSES}
        for path in packages.values():
            load_package(path)
        totals = {"bfcl": 0.0, "memory": 0.0, "persisted": 0.0}
        calls = 0
        rows = []
        for category in categories:
            entries = {e.id: e for e in source.load_entries(category)}
            tasks = read_tasks(out / "tasks" / category)[: args.limit]
            spent = {"bfcl": 0.0, "memory": 0.0, "persisted": 0.0}
            for n, task in enumerate(tasks):
                entry = entries[task.id]
                start = time.perf_counter()
                bfcl_run(entry, f"{PREFIX}{category}_{n}")
                spent["bfcl"] += time.perf_counter() - start
                drop_bfcl_instances()

                def memory(env: str, path: str, task: Task = task) -> Session:
                    return Session.memory(path, state=task.initial_state[env])

                start = time.perf_counter()
                envcraft_run(task, packages, memory)
                spent["memory"] += time.perf_counter() - start

                root = Path(scratch) / "sessions" / category / str(n)

                def persisted(env: str, path: str, task: Task = task, root: Path = root) -> Session:
                    return Session.create(path, root / env, state=task.initial_state[env])

                start = time.perf_counter()
                envcraft_run(task, packages, persisted)
                spent["persisted"] += time.perf_counter() - start
                calls += len(task.reference.calls)
            rows.append((category, len(tasks), sum(len(t.reference.calls) for t in tasks), spent))
            for key in totals:
                totals[key] += spent[key]
    print(f"{'category':<14}{'tasks':>6}{'calls':>7}{'bfcl s':>9}{'memory s':>10}{'persist s':>11}"
          f"{'mem/bfcl':>10}{'per/bfcl':>10}")  # fmt: skip
    for category, n_tasks, n_calls, spent in rows:
        print(
            f"{category:<14}{n_tasks:>6}{n_calls:>7}{spent['bfcl']:>9.3f}{spent['memory']:>10.3f}"
            f"{spent['persisted']:>11.3f}{spent['memory'] / spent['bfcl']:>10.1f}"
            f"{spent['persisted'] / spent['bfcl']:>10.1f}"
        )
    per_call = {key: f"{1e6 * spent / calls:.0f} us" for key, spent in totals.items()}
    print(f"all: {calls} calls; per call {per_call}")
    print(
        f"ratios: memory/bfcl {totals['memory'] / totals['bfcl']:.1f}x, "
        f"persisted/bfcl {totals['persisted'] / totals['bfcl']:.1f}x, "
        f"persisted/memory {totals['persisted'] / totals['memory']:.1f}x"
    )


if __name__ == "__main__":
    main()
