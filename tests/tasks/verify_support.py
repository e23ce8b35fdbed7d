"""Builders for the verification tests: real tasks on the counter fixture, golden run included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcraft.tasks.execute import Outcome, execute, outcome_hash
from envcraft.tasks.model import Reference, ReferenceCall, Task, Turn, Verifier

COUNTER = Path(__file__).resolve().parent.parent / "fixtures" / "counter"

# Hand-written verifier: counter "a" must have grown by exactly 2 from S0.
GROWS_BY_TWO = """
def verify(ctx):
    before = ctx["initial"]["counter"]["counters"].get("a", 0)
    after = ctx["final"]["counter"]["counters"].get("a", 0)
    ok = 1.0 if after - before == 2 else 0.0
    return {"score": ok, "components": {"a grew by 2": ok}}
"""


def make_task(
    turns: list[list[dict[str, Any]]],
    *,
    initial: dict[str, dict[str, Any]] | None = None,
    workspace: dict[str, str] | None = None,
    packages: dict[str, str] | None = None,
    source: str = GROWS_BY_TWO,
    task_id: str = "t-counter",
    kind: str = "tool",
) -> tuple[Task, Outcome]:
    """A task whose reference is ``turns`` (calls ``{"env","tool","args"}``), plus its golden outcome."""
    packages = packages or {"counter": str(COUNTER)}
    calls = [
        ReferenceCall(
            turn=i, env=c["env"], tool=c["tool"], args=c.get("args", {}), provenance=c.get("provenance", {})
        )
        for i, turn in enumerate(turns)
        for c in turn
    ]
    task = Task(
        id=task_id,
        envs=sorted(packages),
        kind=kind,  # type: ignore[arg-type]
        turns=[Turn(user=f"turn {i}") for i in range(len(turns))],
        initial_state=initial or {env: {} for env in packages},
        workspace=workspace or {},
        verifier=Verifier(source=source),
        reference=Reference(calls=calls, final_hash=""),
        provenance={"packages": packages},
    )
    golden = execute(task, turns)
    task.reference.final_hash = outcome_hash(golden)
    return task, golden
