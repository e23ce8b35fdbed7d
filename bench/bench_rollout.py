"""What the rollout loop costs around the model, and how many rollouts per second it sustains.

The model is the built-in oracle answering in process with zero latency, so every second
measured is the loop's own: building requests, parsing answers, tool calls through the
Episode, user turns, the verifier, opening and closing the task's sessions. Two figures:

1. **Overhead per step** (one step = one model call) at concurrency 1: the rollout's wall
   time minus the time spent inside the model, divided by its steps; split into tools,
   verify, open/close and the rest (the loop itself), for tool and Claw tasks.
2. **Rollouts per second** at concurrency 1, 8 and 32, with the zero-latency model in
   process, and over HTTP through the local OpenAI-compatible server and the openai SDK
   (what the oracle path of ``envcraft eval`` pays on top).

Ratios come from one run on this machine. No assertions. Run:
``.venv/bin/python bench/bench_rollout.py [--tasks DIR] [--n 6] [--rounds 2]``
(without ``--tasks`` it synthesizes a small set of tool, Claw and cross-env tasks first).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from envcraft.llm.provider import Provider
from envcraft.rollout.loop import Trajectory
from envcraft.rollout.policies import OracleProvider, serve_policy
from envcraft.rollout.runner import Job, run_rollouts
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task

ENVS = "returns_desk,notes_desk,mail_triage,event_stream,inventory_ledger"


def task_set(directory: str | None, n: int) -> list[Task]:
    if directory is not None:
        return read_tasks(directory)
    out = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    envcraft = Path(sys.executable).parent / "envcraft"
    command = [
        str(envcraft),
        "tasks",
        "synth",
        "--envs",
        ENVS,
        "--n",
        str(n),
        "--seed",
        "5",
        "--out",
        str(out),
    ]
    subprocess.run(command, check=True, capture_output=True)
    return read_tasks(out)


def play(
    tasks: list[Task], provider: Provider, concurrency: int, k: int = 1
) -> tuple[float, list[Trajectory]]:
    async def main() -> list[Trajectory]:
        try:
            return await run_rollouts(Job(tasks, k=k, concurrency=concurrency), provider)
        finally:
            await provider.aclose()

    started = time.perf_counter()
    trajectories = asyncio.run(main())
    return time.perf_counter() - started, trajectories


def overhead(tasks: list[Task], label: str) -> None:
    _, trajectories = play(tasks, OracleProvider(tasks), concurrency=1)
    failed = [t for t in trajectories if t.score != 1.0]
    if failed:
        reasons = "; ".join(f"{t.rollout_id}: {t.score_error or t.error or t.score}" for t in failed[:5])
        raise SystemExit(
            f"the oracle did not solve every task ({reasons}): the figures would not be of a working loop"
        )
    steps = sum(t.steps for t in trajectories)
    part = {
        name: sum(t.timings.get(f"{name}_s", 0.0) for t in trajectories)
        for name in ("total", "model", "tools", "verify", "open", "close")
    }
    loop = part["total"] - sum(part[n] for n in ("model", "tools", "verify", "open", "close"))
    not_model = part["total"] - part["model"]
    per = lambda seconds: 1e3 * seconds / steps  # noqa: E731 - ms per step
    print(
        f"{label:10} {len(trajectories):>5} {steps:>6} {per(not_model):>9.3f} {per(part['tools']):>8.3f} "
        f"{per(part['verify']):>8.3f} {per(part['open'] + part['close']):>10.3f} {per(loop):>8.3f} "
        f"{per(part['model']):>8.3f}"
    )


def throughput(tasks: list[Task], rounds: int) -> None:
    header = f"{'concurrency':>11} {'in-process rollouts/s':>22} {'over HTTP rollouts/s':>21}"
    print(f"\n{header} {'HTTP/in-process':>16}")
    base = None
    for concurrency in (1, 8, 32):
        local, remote = [], []
        for _ in range(rounds):
            seconds, done = play(tasks, OracleProvider(tasks), concurrency)
            local.append(len(done) / seconds)
            with serve_policy(OracleProvider(tasks), concurrency=64) as provider:
                seconds, done = play(tasks, provider, concurrency)
            remote.append(len(done) / seconds)
        best_local, best_remote = max(local), max(remote)
        base = base or best_local
        print(
            f"{concurrency:>11} {best_local:>22.1f} {best_remote:>21.1f} {best_remote / best_local:>16.2f}"
            f"   ({best_local / base:.2f}x concurrency 1 in process)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=None, help="task-set directory (default: synthesize a small one)")
    parser.add_argument("--n", type=int, default=6, help="tasks per environment when synthesizing")
    parser.add_argument("--rounds", type=int, default=2, help="repeats per figure (the best is shown)")
    options = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    tasks = task_set(options.tasks, options.n)
    tool = [t for t in tasks if t.kind == "tool"]
    claw = [t for t in tasks if t.kind == "claw"]
    print(
        f"{len(tasks)} tasks ({len(tool)} tool, {len(claw)} claw, "
        f"{sum(len(t.envs) > 1 for t in tasks)} cross-env); model: the oracle, zero latency\n"
    )
    print("overhead per step at concurrency 1, ms (a step is one model call; 'not model' is everything else)")
    print(
        f"{'tasks':10} {'runs':>5} {'steps':>6} {'not model':>9} {'tools':>8} {'verify':>8} "
        f"{'open+close':>10} {'loop':>8} {'model':>8}"
    )
    for label, chosen in (("tool", tool), ("claw", claw), ("all", tasks)):
        if chosen:
            overhead(chosen, label)
    throughput(tasks, options.rounds)
    median_steps = statistics.median(len(t.reference.calls) + len(t.turns) for t in tasks)
    print(f"\n(median steps per rollout: {median_steps:g})")


if __name__ == "__main__":
    main()
