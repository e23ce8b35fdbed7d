"""What isolation costs: a sandboxed ``shell`` call against a bare subprocess, and the warm worker.

* shell: the ``shell`` tool of a ``notes_desk`` session (in-memory session, so only the tool
  is timed) running ``COMMAND`` under bubblewrap: namespaces, mounts, limits, the per-call
  domain-tool socket, output capture.
* bare: ``subprocess.run(["/bin/bash", "-c", COMMAND])`` in the same workspace.
* domain: the same shell call, but the command calls a domain tool through ``envcraft-tool``.
* isolated worker: one verifier-like job on a warm :class:`IsolatedWorker` against a cold one
  (a new worker per job: sandbox + interpreter start-up).

Runs are interleaved so machine load hits every variant alike. It prints medians (and
the fastest run) in milliseconds and the overhead; no assertions. Run:
``.venv/bin/python bench/bench_sandbox.py [--runs 50] [--jobs 30]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable

from envcraft.core import Session
from envcraft.sandbox import IsolatedWorker
from envcraft.sandbox.bwrap import select_mode

COMMAND = "ls notes | wc -l"
DOMAIN_COMMAND = "envcraft-tool list_action_items --status open > /dev/null"
VERIFIER = """
def verify(ctx):
    done = [i for i in ctx["items"] if i["status"] == "done"]
    return {"score": len(done) / max(1, len(ctx["items"])), "components": {"done": len(done)}}
"""


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000


def interleaved(variants: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    for function in variants.values():
        function()  # warm-up: probe, caches, imports
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, function in variants.items():
            samples[name].append(timed(function))
    return samples


def report(samples: dict[str, list[float]], baseline: str) -> None:
    base = statistics.median(samples[baseline])
    for name, values in samples.items():
        median = statistics.median(values)
        extra = "" if name == baseline else f"   overhead {median - base:+7.2f} ms"
        print(f"  {name:<14} median {median:7.2f} ms   fastest {min(values):7.2f} ms{extra}")


def bench_shell(runs: int) -> None:
    with Session.memory("notes_desk", seed=1) as session:
        workspace = str(session.workspace_root)
        shell = session.env

        def sandboxed() -> None:
            result = shell.invoke("shell", {"command": COMMAND})
            assert result.get("exit_code") == 0, result

        def bare() -> None:
            subprocess.run(["/bin/bash", "-c", COMMAND], cwd=workspace, capture_output=True, check=True)

        def domain() -> None:
            result = session.call("shell", {"command": DOMAIN_COMMAND})
            assert result.get("exit_code") == 0, result

        print(f"shell: {COMMAND!r}, {runs} runs each (sandbox: {select_mode().label})")
        report(interleaved({"bare": bare, "shell": sandboxed, "shell+domain": domain}, runs), "bare")


def bench_worker(jobs: int) -> None:
    ctx = {"items": [{"status": "done"}, {"status": "open"}] * 50}

    with IsolatedWorker() as warm:

        def warm_job() -> None:
            assert warm.run(VERIFIER, "verify", ctx, timeout=10)["ok"]

        def cold_job() -> None:
            with IsolatedWorker() as cold:
                assert cold.run(VERIFIER, "verify", ctx, timeout=10)["ok"]

        print(f"isolated worker: one verify(ctx) job, {jobs} runs each")
        report(interleaved({"warm": warm_job, "cold": cold_job}, jobs), "warm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="shell calls per variant")
    parser.add_argument("--jobs", type=int, default=30, help="isolated jobs per variant")
    args = parser.parse_args()
    bench_shell(args.runs)
    bench_worker(args.jobs)


if __name__ == "__main__":
    main()
