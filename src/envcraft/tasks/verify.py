"""The verifier contract and its runtime: a task's reward, computed in isolation.

A verifier is stdlib-only Python source defining ``verify(ctx) -> {"score", "components"}``.
``ctx`` is plain JSON (see :func:`build_context`): the initial and final state of every
environment, the workspace files before and after, a snapshot after every user turn and
the action log. A verifier judges *change relative to S0*, never the agent's prose.

The source runs out of process (untrusted code: it may loop, crash or print junk). Any
failure scores 0 with the reason recorded, so a broken verifier can never hand out reward.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.tasks.execute import ExecutionError, Outcome, execute
from envcraft.tasks.model import Task

DEFAULT_TIMEOUT = 10.0
PER_RUN_TIMEOUT = 2.0
_MAX_REASON = 300
_BATCH_FUNC = "__envcraft_batch__"
# Appended to the verifier source so one isolated call scores many runs; each run's
# failure stays its own (a crash in one context does not lose the others).
_HARNESS = f"""

def {_BATCH_FUNC}(ctxs):
    import json as _json
    out = []
    for ctx in ctxs:
        try:
            value = verify(ctx)
            _json.dumps(value, allow_nan=True)
            out.append({{"ok": True, "value": value}})
        except BaseException as exc:
            out.append({{"ok": False, "error": type(exc).__name__ + ": " + str(exc)[:{_MAX_REASON}]}})
    return out
"""


@dataclass
class Score:
    """A verifier's verdict on one run: ``score`` in [0, 1] plus named components."""

    score: float
    components: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"score": self.score, "components": self.components}
        if self.error is not None:
            data["error"] = self.error
        return data


def build_context(outcome: Outcome) -> dict[str, Any]:
    """The JSON ``ctx`` a verifier reads (nothing in it is shared with the live sessions)."""
    return {
        "initial": outcome.initial,
        "final": outcome.final,
        "initial_files": outcome.initial_files,
        "files": outcome.files,
        "turns": [{"final": t.final, "files": t.files} for t in outcome.turns],
        "actions": [a.to_json() for a in outcome.actions],
    }


def run_verifier(task: Task, outcome: Outcome, timeout: float = DEFAULT_TIMEOUT) -> Score:
    """Score one run of ``task`` with its verifier."""
    return score_contexts(task.verifier.source, [build_context(outcome)], timeout)[0]


def score_trajectory(task: Task, turns: Sequence[Sequence[Any]], timeout: float = DEFAULT_TIMEOUT) -> Score:
    """Run an agent's calls (grouped by user turn) in fresh sessions from S0 and score the outcome.

    A call to an unknown tool or with bad arguments is a failed call inside the run, never
    an error of the scoring itself.
    """
    try:
        outcome = execute(task, turns)
    except ExecutionError as exc:
        return Score(0.0, {}, str(exc))
    return run_verifier(task, outcome, timeout)


def score_contexts(
    source: str, contexts: Sequence[dict[str, Any]], timeout: float | None = None
) -> list[Score]:
    """Score many runs with one verifier in a single isolated call (validation batches)."""
    if not contexts:
        return []
    limit = timeout if timeout is not None else DEFAULT_TIMEOUT + PER_RUN_TIMEOUT * len(contexts)
    reply = run_isolated(source + _HARNESS, _BATCH_FUNC, list(contexts), limit)
    if not reply.get("ok"):
        reason = f"verifier failed: {reply.get('error', 'no reply')}"[:_MAX_REASON]
        return [Score(0.0, {}, reason) for _ in contexts]
    values = reply.get("value")
    if not isinstance(values, list) or len(values) != len(contexts):
        return [Score(0.0, {}, "verifier harness returned junk") for _ in contexts]
    return [_to_score(v) for v in values]


def _to_score(entry: Any) -> Score:
    """Coerce one verifier answer into a clamped :class:`Score`; junk scores 0 with a reason."""
    if not isinstance(entry, dict) or not entry.get("ok"):
        error = entry.get("error") if isinstance(entry, dict) else None
        return Score(0.0, {}, f"verifier raised {error}" if error else "verifier failed")
    value = entry.get("value")
    if not isinstance(value, dict):
        return Score(0.0, {}, f"verify() returned {type(value).__name__}, not a dict")
    raw = value.get("score")
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return Score(0.0, {}, f"verify() returned a non-numeric score {raw!r}"[:_MAX_REASON])
    components: dict[str, float] = {}
    raw_components = value.get("components", {})
    if not isinstance(raw_components, dict):
        return Score(0.0, {}, "verify() returned components that are not a dict")
    for name, part in raw_components.items():
        if isinstance(part, bool) or not isinstance(part, int | float) or not math.isfinite(part):
            return Score(0.0, {}, f"component {str(name)[:80]!r} is not a number")
        components[str(name)] = _clamp(float(part))
    return Score(_clamp(float(raw)), components)


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


# -- isolation --------------------------------------------------------------------------------
# The one place that knows how untrusted verifier code is run. Interim: a fresh isolated
# interpreter per call under resource limits; to be switched to the sandbox's warm
# isolated worker as soon as it lands.
_BOOT = """
import json, sys
request = json.loads(sys.stdin.read())
reply_to, sys.stdout = sys.stdout, sys.stderr
namespace = {"__name__": "envcraft_verifier"}
try:
    exec(compile(request["source"], "<verifier>", "exec"), namespace)
    value = namespace[request["func"]](request["payload"])
    reply = {"ok": True, "value": value}
except BaseException as exc:
    reply = {"ok": False, "error": type(exc).__name__ + ": " + str(exc)[:300]}
try:
    text = json.dumps(reply)
except (TypeError, ValueError) as exc:
    text = json.dumps({"ok": False, "error": "result is not JSON: " + str(exc)[:200]})
reply_to.write(text)
"""
_MEMORY_LIMIT = 1 << 30


def run_isolated(source: str, func: str, payload: Any, timeout: float) -> dict[str, Any]:
    """Run ``func(payload)`` defined by ``source`` out of process: ``{"ok", "value"|"error"}``."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT, _MEMORY_LIMIT))
        cpu = math.ceil(timeout) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    request = json.dumps({"source": source, "func": func, "payload": payload})
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _BOOT],
            input=request,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=limits,
            cwd="/",
            env={},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:g}s"}
    try:
        reply = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return {"ok": False, "error": tail[0][:_MAX_REASON]}
    return reply if isinstance(reply, dict) else {"ok": False, "error": "no reply"}
