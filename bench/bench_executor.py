"""Speed-up of the data engine's shards at 1 vs 2 workers, on the local executor and on Ray.

Runs the same synthesis job (``envcraft tasks synth``'s work: every shard of ``--n`` tasks per
environment, no export) four times from scratch: local with 1 and 2 workers, Ray with 1 and 2
workers (a local Ray started for the run; its start-up is timed on its own and included in the
run's wall time). Prints wall seconds, the 1 -> 2 worker speed-up of each executor, Ray's
start-up cost, and whether all four task sets are byte-identical. No assertions. Run:
``.venv/bin/python bench/bench_executor.py [--envs returns_desk,notes_desk,class_booking] [--n 50]``.
The figures are only as good as the machine is idle: on a shared machine, say so with them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from envcraft.executor import open_executor
from envcraft.tasks.corpus.compose import SynthConfig
from envcraft.tasks.corpus.pipeline import RunOptions, run


def one_run(envs: list[str], n: int, seed: int, executor: str, workers: int, root: Path) -> tuple[float, str]:
    out = root / f"{executor}-{workers}"
    options = RunOptions(
        out=out,
        n_per_env=n,
        seed=seed,
        envs=envs,
        workers=workers,
        synth=SynthConfig(seed=seed),
        export=False,
        executor=executor,
    )
    start = time.perf_counter()
    run(options)
    wall = time.perf_counter() - start
    digest = hashlib.sha256((out / "tasks" / "tasks.jsonl").read_bytes()).hexdigest()[:16]
    return wall, digest


def ray_startup(workers: int) -> float:
    start = time.perf_counter()
    with open_executor("ray", workers=workers):
        opened = time.perf_counter() - start
    return opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="returns_desk,notes_desk,class_booking")
    parser.add_argument("--n", type=int, default=50, help="tasks per environment (25 per shard)")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    envs = options.envs.split(",")
    results: dict[str, dict[int, tuple[float, str]]] = {"local": {}, "ray": {}}
    with tempfile.TemporaryDirectory(prefix="bench-executor-") as tmp:
        for executor in ("local", "ray"):
            for workers in (1, 2):
                result = one_run(envs, options.n, options.seed, executor, workers, Path(tmp))
                results[executor][workers] = result
                wall, digest = results[executor][workers]
                print(f"{executor:5s} workers={workers}: {wall:7.1f} s  tasks.jsonl {digest}", flush=True)
        startup = ray_startup(2)
    summary = {
        executor: {
            "wall_s": {w: round(results[executor][w][0], 1) for w in (1, 2)},
            "speedup_1_to_2": round(results[executor][1][0] / results[executor][2][0], 2),
        }
        for executor in results
    }
    summary["ray_startup_s"] = round(startup, 1)
    summary["identical"] = len({digest for r in results.values() for _, digest in r.values()}) == 1
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
