"""What one tool call costs on a realistic state, against the floor of persisting that state.

For a generated ``returns_desk`` state (a few hundred KB of canonical JSON) this times, per
call, the same mutation (``cancel_order``: status change + refund record) done four ways:

* persisted: ``Session.create`` (durable ``FileStore``: lock, read, log append, atomic replace);
* memory: ``Session.memory`` (no lock, no I/O; still validates, snapshots and hashes);
* floor: ``json.dumps`` of the same state + write a temp file + ``os.replace``: the least any
  crash-safe store must pay per call;
* plain: a Python method doing the same mutation on a dict.

It prints figures and ratios (no assertions). Run:
``.venv/bin/python bench/bench_core.py [--size 60] [--calls 60] [--rounds 3] [--breakdown] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from filelock import FileLock

from envcraft.core import Session, canonical_json, load_package
from envcraft.core.state import sha256_text
from envcraft.core.workspace import atomic_write_bytes

ENV = "returns_desk"


class PlainDesk:
    """The same cancellation as ``ReturnsDesk.cancel_order``, on plain dicts."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def cancel_order(self, order_id: str, reason: str, when: str) -> dict[str, Any]:
        order = self.state["orders"][order_id]
        if order["status"] != "placed":
            raise ValueError(order_id)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        refund_id = f"RF-{self.state['next_refund_number']:05d}"
        self.state["next_refund_number"] += 1
        amount = order["total_cents"] - order["refunded_cents"]
        refund = {
            "refund_id": refund_id,
            "order_id": order_id,
            "return_id": None,
            "amount_cents": amount,
            "bonus_cents": 0,
            "method": "original_payment",
            "issued_at": when,
        }
        self.state["refunds"][refund_id] = refund
        order["refunded_cents"] += amount
        return {"order_id": order_id, "status": "cancelled", "refund": refund}


def floor_write(state: dict[str, Any], path: Path, dumps: Callable[[Any], bytes] | None = None) -> None:
    """Serialize and atomically replace: the irreducible per-call cost of a durable store."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".floor.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(dumps(state) if dumps else json.dumps(state).encode("utf-8"))
    os.replace(tmp, path)


def per_call(run: Callable[[str], object], order_ids: list[str]) -> float:
    """Mean seconds per call over ``order_ids`` (one call each)."""
    started = time.perf_counter()
    for order_id in order_ids:
        run(order_id)
    return (time.perf_counter() - started) / len(order_ids)


def measure(s0: dict[str, Any], order_ids: list[str], workdir: Path) -> dict[str, float]:
    """One round: every way starts from the same S0 and cancels the same orders."""
    args = [{"order_id": o, "reason": "customer asked"} for o in order_ids]
    package = load_package(ENV)
    durable = Session.create(package, workdir / f"session-{time.monotonic_ns()}", state=s0)
    memory = Session.memory(package, state=s0)
    plain = PlainDesk(json.loads(json.dumps(s0)))
    floor_state = json.loads(json.dumps(s0))
    floor_path = workdir / "floor.json"
    calls = dict(zip(order_ids, args, strict=True))

    def check(result: dict[str, Any]) -> None:
        if "error" in result:
            raise RuntimeError(f"benchmark call failed: {result}")

    return {
        "persisted": per_call(lambda o: check(durable.call("cancel_order", calls[o])), order_ids),
        "memory": per_call(lambda o: check(memory.call("cancel_order", calls[o])), order_ids),
        "floor": per_call(lambda o: floor_write(floor_state, floor_path), order_ids),
        # The runtime serializes with orjson; this floor uses the same serializer, for a
        # ratio that isolates everything but the JSON library.
        "floor_orjson": per_call(lambda o: floor_write(floor_state, floor_path, orjson.dumps), order_ids),
        "plain": per_call(
            lambda o: plain.cancel_order(o, "customer asked", "2026-01-05T09:00:00Z"), order_ids
        ),
    }


def breakdown(s0: dict[str, Any], workdir: Path, repeat: int = 30) -> None:
    """Time the primitives a persisted call is made of, on the same state."""
    package = load_package(ENV)
    model = package.env_class.State.model_validate(s0)
    text = canonical_json(s0)
    target = workdir / "state.json"
    target.write_text(text, encoding="utf-8")
    lock = FileLock(str(workdir / ".lock"), timeout=5)

    def lock_cycle() -> None:
        lock.acquire()
        lock.release()

    steps: dict[str, Callable[[], object]] = {
        "lock acquire + release": lock_cycle,
        "read state.json": lambda: target.read_text(encoding="utf-8"),
        "pydantic model_dump(mode=json)": lambda: model.model_dump(mode="json"),
        "canonical_json (sorted keys)": lambda: canonical_json(s0),
        "json.dumps (unsorted, floor)": lambda: json.dumps(s0),
        "sha256 of the text": lambda: sha256_text(text),
        "pydantic model_validate (reload)": lambda: package.env_class.State.model_validate(s0),
        "temp write + os.replace": lambda: atomic_write_bytes(target, text.encode("utf-8")),
    }
    print(f"\nprimitives on this state (median of {repeat}):")
    for name, step in steps.items():
        samples = []
        for _ in range(repeat):
            started = time.perf_counter()
            step()
            samples.append(time.perf_counter() - started)
        print(f"  {name:<34} {statistics.median(samples) * 1e3:8.3f} ms")


def profile(s0: dict[str, Any], order_ids: list[str], workdir: Path) -> None:
    durable = Session.create(load_package(ENV), workdir / "profiled", state=s0)
    profiler = cProfile.Profile()
    profiler.enable()
    for order_id in order_ids:
        durable.call("cancel_order", {"order_id": order_id, "reason": "customer asked"})
    profiler.disable()
    print("\nwhere a persisted call spends its time (cProfile, by own time):")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(14)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=60, help="returns_desk generator size (4*size customers)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--calls", type=int, default=60, help="calls per round (placed orders available)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the median round is reported")
    parser.add_argument("--breakdown", action="store_true", help="time the primitives of a persisted call")
    parser.add_argument("--profile", action="store_true", help="cProfile the persisted call")
    opts = parser.parse_args()

    s0 = Session.memory(ENV, seed=opts.seed, size=opts.size).state()
    placed = sorted(o for o, order in s0["orders"].items() if order["status"] == "placed")
    order_ids = placed[: opts.calls]
    print(
        f"state: returns_desk seed={opts.seed} size={opts.size}: {len(s0['orders'])} orders, "
        f"{len(canonical_json(s0)) / 1024:.0f} KiB canonical JSON; {len(order_ids)} cancel_order calls "
        f"x {opts.rounds} rounds"
    )
    rounds = []
    with tempfile.TemporaryDirectory(prefix="envcraft-bench-") as tmp:
        for _ in range(opts.rounds):
            rounds.append(measure(s0, order_ids, Path(tmp)))
        figures = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        for name, seconds in figures.items():
            print(f"  {name:<12} {seconds * 1e3:9.3f} ms/call")
        print(f"  persisted / floor = {figures['persisted'] / figures['floor']:.2f}x (target <= 3x)")
        print(f"  persisted / floor_orjson = {figures['persisted'] / figures['floor_orjson']:.2f}x")
        print(f"  memory / plain    = {figures['memory'] / figures['plain']:.0f}x")
        print(f"  memory / floor    = {figures['memory'] / figures['floor']:.2f}x")
        if opts.breakdown:
            breakdown(s0, Path(tmp))
        if opts.profile:
            profile(s0, order_ids, Path(tmp))


if __name__ == "__main__":
    main()
