"""The runtime's targets (issue 13), each as a ratio measured in this one run.

* memory call vs state size: ``Session.memory`` on ``returns_desk`` states of about 10 KiB,
  270 KiB and 1 MiB canonical JSON; per call of a mutating tool (``cancel_order``) and of a
  read (``get_order``). Target: 1 MiB within 2x of 10 KiB.
* durable call vs the floor: ``Session.create`` (lock, log line, atomic state) against
  ``orjson.dumps`` of the same state as a plain dict + temp file + ``os.replace``, the least a
  crash-safe store pays per call. Target: <= 1.5x.
* episode: ``Episode.open`` of a ``returns_desk`` task (sessions from S0) + 10 calls + its
  verifier (declarative: scored in-process). Target: <= 5 ms. The plays follow each other, so
  from the second on the sessions come rewound from the pool (k rollouts of one task); also
  shown: every play opening fresh sessions (the pool keeps none), and the verifier as
  untrusted code (one comment appended), scored in the warm isolated worker.
* BFCL: the 800 multi-turn ground truths through BFCL's own executor against in-memory
  sessions (``bench_bfcl.py`` does the per-category table). Target: ours >= 2x faster.
* sandbox: the ``shell`` tool running ``true`` against a bare ``subprocess.run`` (fastest of
  each, interleaved). Target: <= +8 ms. ``envcraft-tool`` per call inside the shell. Target:
  <= 20 ms.
* ``envcraft --version`` as a fresh process (fastest run). Target: <= 150 ms.

No assertions: it prints figures and ratios. Run:
``.venv/bin/python bench/bench_runtime.py [--quick] [--skip bfcl,sandbox,...]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from envcraft.core import Session, canonical_json, load_package

HERE = Path(__file__).resolve().parent
ENV = "returns_desk"
SIZES = {"10 KiB": 2, "270 KiB": 60, "1 MiB": 230}
SECTIONS = ("scaling", "durable", "episode", "bfcl", "sandbox", "cli")


def line(name: str, value: str, target: str = "") -> None:
    print(f"  {name:<44} {value:>14}   {target}", flush=True)


# -- state size --------------------------------------------------------------------------
def _placed(state: dict[str, Any]) -> list[str]:
    return sorted(o for o, order in state["orders"].items() if order["status"] == "placed")


def per_call_memory(size: int, repeat: int) -> tuple[float, float, int]:
    """Seconds per ``cancel_order`` and per ``get_order`` call; KiB of the state."""
    package = load_package(ENV)
    s0 = Session.memory(package, seed=1, size=size).state()
    kib = len(canonical_json(s0)) // 1024
    placed = _placed(s0)
    writes: list[float] = []
    reads: list[float] = []
    for _ in range(repeat):
        session = Session.memory(package, state=s0)
        for order_id in placed[:40]:
            started = time.perf_counter()
            result = session.call("get_order", {"order_id": order_id})
            reads.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = session.call("cancel_order", {"order_id": order_id, "reason": "customer asked"})
            writes.append(time.perf_counter() - started)
            if "error" in result:
                raise RuntimeError(f"benchmark call failed: {result}")
        session.close()
    return statistics.median(writes), statistics.median(reads), kib


def scaling(quick: bool) -> None:
    print("memory call vs state size (returns_desk, median per call):", flush=True)
    figures = {}
    for label, size in SIZES.items():
        write, read, kib = per_call_memory(size, 2 if quick else 5)
        figures[label] = (write, read)
        line(f"{label} ({kib} KiB): cancel_order / get_order", f"{write * 1e6:.0f} / {read * 1e6:.0f} us")
    big, small = figures["1 MiB"], figures["10 KiB"]
    line("1 MiB / 10 KiB, cancel_order", f"{big[0] / small[0]:.2f}x", "target <= 2x")
    line("1 MiB / 10 KiB, get_order", f"{big[1] / small[1]:.2f}x", "target <= 2x")


# -- durable store -----------------------------------------------------------------------
def floor_write(state: dict[str, Any], path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".floor.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(orjson.dumps(state))
    os.replace(tmp, path)


def durable(quick: bool) -> None:
    print("durable call vs the orjson + os.replace floor (returns_desk, cancel_order):", flush=True)
    package = load_package(ENV)
    for label in ("270 KiB", "1 MiB"):
        s0 = Session.memory(package, seed=1, size=SIZES[label]).state()
        placed = _placed(s0)[: 20 if quick else 60]
        ours: list[float] = []
        floor: list[float] = []
        with tempfile.TemporaryDirectory(prefix="envcraft-bench-") as tmp:
            session = Session.create(package, Path(tmp) / "session", state=s0)
            plain = orjson.loads(orjson.dumps(s0))
            for order_id in placed:  # interleaved, so load hits both alike
                started = time.perf_counter()
                result = session.call("cancel_order", {"order_id": order_id, "reason": "customer asked"})
                ours.append(time.perf_counter() - started)
                if "error" in result:
                    raise RuntimeError(f"benchmark call failed: {result}")
                plain["orders"][order_id]["status"] = "cancelled"
                started = time.perf_counter()
                floor_write(plain, Path(tmp) / "floor.json")
                floor.append(time.perf_counter() - started)
        ours_ms, floor_ms = statistics.median(ours) * 1e3, statistics.median(floor) * 1e3
        line(f"{label}: durable call / floor", f"{ours_ms:.2f} / {floor_ms:.2f} ms")
        line(f"{label}: ratio", f"{ours_ms / floor_ms:.2f}x", "target <= 1.5x")


# -- episode -----------------------------------------------------------------------------
def episode_task() -> tuple[Any, list[dict[str, Any]]]:
    """A synthesized returns_desk task and 10 calls for it (its golden calls, then reads)."""
    from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard

    library = load_library([ENV])
    tasks = synthesize_shard(library, ENV, 0, 4, SynthConfig(seed=3, p_cross=0.0)).tasks
    task = max(tasks, key=lambda t: len(t.reference.calls))
    calls = [c.model_dump(include={"env", "tool", "args", "turn"}) for c in task.reference.calls][:10]
    orders = sorted(task.initial_state[ENV]["orders"])
    while len(calls) < 10:
        order = orders[len(calls) % len(orders)]
        calls.append({"env": ENV, "tool": "get_order", "args": {"order_id": order}, "turn": 0})
    return task, calls


def episode(quick: bool) -> None:
    import envcraft.tasks.play.episode as episode_module
    from envcraft.tasks.play.episode import Episode
    from envcraft.tasks.play.pool import SessionPool
    from envcraft.tasks.verifier.scoring import build_context, score_contexts

    task, calls = episode_task()
    print(f"episode: open + 10 calls + verify ({ENV}, {len(task.turns)} turns):", flush=True)

    def play(source: str) -> float:
        with Episode.open(task) as played:
            turn = 0
            for call in calls:
                while turn < call["turn"]:
                    played.end_turn()
                    turn += 1
                played.call(call["env"], call["tool"], call["args"])
            while not played.done:
                played.end_turn()
            (score,) = score_contexts(source, [build_context(played.outcome())])
        return score.score

    pooled = episode_module.default_pool
    for label, source, pool in (
        ("declarative verifier (in-process)", task.verifier.source, pooled),
        ("same, fresh sessions every play", task.verifier.source, SessionPool(per_key=0)),
        ("untrusted verifier (isolated worker)", task.verifier.source + "# untrusted\n", pooled),
    ):
        episode_module.default_pool = pool
        try:
            assert play(source) == 1.0  # warm: the isolated worker, imports, the pool
            samples = []
            for _ in range(10 if quick else 40):
                started = time.perf_counter()
                play(source)
                samples.append(time.perf_counter() - started)
                time.sleep(0.002)  # an agent's turn: the worker forks its next child meanwhile
        finally:
            episode_module.default_pool = pooled
        figures = f"{statistics.median(samples) * 1e3:.2f} / {min(samples) * 1e3:.2f} ms"
        line(f"{label}: median / fastest", figures, "target <= 5 ms" if "in-process" in label else "")


# -- BFCL --------------------------------------------------------------------------------
def bfcl(quick: bool) -> None:
    sys.path.insert(0, str(HERE))
    import bench_bfcl
    from envcraft.integrations.bfcl import importer, source
    from envcraft.tasks.format.io import read_tasks

    limit = 25 if quick else None
    with tempfile.TemporaryDirectory(prefix="bench-bfcl-") as scratch:
        out = Path(scratch) / "import"
        importer.import_bfcl(out, list(source.CATEGORIES), limit=limit)
        packages = {source.env_id(c): str(out / "envs" / source.env_id(c)) for c in source.CLASSES}
        for path in packages.values():
            load_package(path)
        spent = {"bfcl": 0.0, "memory": 0.0}
        calls = 0
        for category in source.CATEGORIES:
            entries = {e.id: e for e in source.load_entries(category)}
            for n, task in enumerate(read_tasks(out / "tasks" / category)[:limit]):
                started = time.perf_counter()
                bench_bfcl.bfcl_run(entries[task.id], f"{bench_bfcl.PREFIX}{category}_{n}")
                spent["bfcl"] += time.perf_counter() - started
                bench_bfcl.drop_bfcl_instances()

                def memory(env: str, path: str, task: Any = task) -> Session:
                    return Session.memory(path, state=task.initial_state[env])

                started = time.perf_counter()
                bench_bfcl.envcraft_run(task, packages, memory)
                spent["memory"] += time.perf_counter() - started
                calls += len(task.reference.calls)
    print(f"BFCL ground truths ({calls} calls, with each run's setup):", flush=True)
    per = {k: v / calls * 1e6 for k, v in spent.items()}
    line("per call: BFCL executor / envcraft memory", f"{per['bfcl']:.0f} / {per['memory']:.0f} us")
    line("BFCL / memory (speed-up)", f"{spent['bfcl'] / spent['memory']:.2f}x", "target >= 2x")


# -- sandbox -----------------------------------------------------------------------------
def sandbox(quick: bool) -> None:
    from envcraft.sandbox.bwrap import select_mode

    runs = 10 if quick else 40
    tool_calls = 10
    with Session.memory("notes_desk", seed=1) as session:
        workspace = str(session.workspace_root)

        def shell(command: str) -> Callable[[], None]:
            def run() -> None:
                result = session.call("shell", {"command": command})
                if result.get("exit_code") != 0:
                    raise RuntimeError(f"benchmark command failed: {result}")

            return run

        def bare() -> None:
            subprocess.run(["/bin/bash", "-c", "true"], cwd=workspace, capture_output=True, check=True)

        tools = " && ".join(["envcraft-tool list_action_items --status open > /dev/null"] * tool_calls)
        variants = {"bare": bare, "shell": shell("true"), "tools": shell(tools)}
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for function in variants.values():
            function()
        for _ in range(runs):
            for name, function in variants.items():
                started = time.perf_counter()
                function()
                samples[name].append((time.perf_counter() - started) * 1e3)
    fastest = {name: min(values) for name, values in samples.items()}
    median = {name: statistics.median(values) for name, values in samples.items()}
    print(f"sandbox ({select_mode().label}), {runs} interleaved runs each:", flush=True)
    line("`true`: bare / shell, fastest", f"{fastest['bare']:.2f} / {fastest['shell']:.2f} ms")
    line("`true`: bare / shell, median", f"{median['bare']:.2f} / {median['shell']:.2f} ms")
    line("shell overhead at the minimum", f"{fastest['shell'] - fastest['bare']:+.2f} ms", "target <= +8 ms")
    per_tool = (median["tools"] - median["shell"]) / tool_calls
    line("envcraft-tool per call (median)", f"{per_tool:.2f} ms", "target <= 20 ms")
    per_tool_fastest = (fastest["tools"] - fastest["shell"]) / tool_calls
    line("envcraft-tool per call (fastest)", f"{per_tool_fastest:.2f} ms")


# -- CLI ---------------------------------------------------------------------------------
def cli(quick: bool) -> None:
    envcraft = Path(sys.executable).with_name("envcraft")
    samples = []
    for _ in range(5 if quick else 15):
        started = time.perf_counter()
        subprocess.run([str(envcraft), "--version"], capture_output=True, check=True)
        samples.append((time.perf_counter() - started) * 1e3)
    python = []
    for _ in range(5 if quick else 15):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True)
        python.append((time.perf_counter() - started) * 1e3)
    print("CLI start-up:", flush=True)
    figures = f"{min(samples):.0f} / {statistics.median(samples):.0f} ms"
    line("`envcraft --version`, fastest / median", figures, "target <= 150 ms")
    line("bare `python -c pass`, fastest", f"{min(python):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--skip", default="", help=f"comma-separated sections of: {', '.join(SECTIONS)}")
    opts = parser.parse_args()
    skipped = {s.strip() for s in opts.skip.split(",") if s.strip()}
    runners: dict[str, Callable[[bool], None]] = {
        "scaling": scaling, "durable": durable, "episode": episode,
        "bfcl": bfcl, "sandbox": sandbox, "cli": cli,
    }  # fmt: skip
    for name in SECTIONS:
        if name not in skipped:
            runners[name](opts.quick)


if __name__ == "__main__":
    main()
