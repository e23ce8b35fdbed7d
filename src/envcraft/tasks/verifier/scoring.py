"""The verifier contract and its runtime: a task's reward, computed in isolation.

A verifier is stdlib-only Python source defining ``verify(ctx) -> {"score", "components"}``.
``ctx`` is plain JSON (see :func:`build_context`): the initial and final state of every
environment, the workspace files before and after, a snapshot after every user turn and
the action log. A verifier judges *change relative to S0*, never the agent's prose.

A source is untrusted code (it may loop, crash or print junk): it runs in the sandbox's
warm isolated worker (no network, no host files, resource limits, a fresh forked child per
call). Any failure scores 0 with the reason recorded, so a broken verifier can never hand
out reward. The one exception is a declarative verifier, exactly as the data engine renders
it (:func:`envcraft.tasks.verifier.source.declared_checks`): no code of its own, only
envcraft's interpreter over JSON checks, so it is scored in this process, with the same
result and none of the worker's cost (what makes an episode's reward cheap in an RL loop).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.sandbox import run_isolated
from envcraft.sandbox.extras import declared_extras
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute
from envcraft.tasks.play.outcome import ExecutionError, Outcome
from envcraft.tasks.verifier import harness
from envcraft.tasks.verifier import runtime as verifier_runtime
from envcraft.tasks.verifier.source import declared_checks

DEFAULT_TIMEOUT = 10.0
PER_RUN_TIMEOUT = 2.0
_MAX_REASON = harness.MAX_REASON
_REF = harness.REF


def pack(values: Sequence[Any]) -> dict[str, list[str]]:
    """``{"refs", "ctxs"}`` as JSON texts: ``values`` with every container they share by identity
    sent once (a shared value is ``{"\\u0000ref": i}``, ``refs[i]`` defined before its first use).

    One run (an episode's reward) shares with nothing: it is dumped whole, at C speed; so are
    values that hold the marker key themselves (the worker reads markers only when ``refs`` has
    any, so such data arrives as it was sent).
    """
    if len(values) == 1:
        return {"refs": [], "ctxs": [json.dumps(values[0])]}
    seen: dict[int, int] = {}
    clash = False

    def count(node: Any) -> None:
        nonlocal clash
        if isinstance(node, dict | list):
            seen[id(node)] = seen.get(id(node), 0) + 1
            clash = clash or (isinstance(node, dict) and _REF in node)
            if seen[id(node)] == 1:
                for child in node.values() if isinstance(node, dict) else node:
                    count(child)

    for value in values:
        count(value)
    if clash:
        return {"refs": [], "ctxs": [json.dumps(value) for value in values]}
    refs: list[Any] = []
    index: dict[int, int] = {}

    def encode(node: Any) -> Any:
        if not isinstance(node, dict | list):
            return node
        if seen[id(node)] > 1:
            if id(node) not in index:
                body = _body(node)
                index[id(node)] = len(refs)
                refs.append(body)
            return {_REF: index[id(node)]}
        return _body(node)

    def _body(node: dict[str, Any] | list[Any]) -> Any:
        if isinstance(node, dict):
            return {key: encode(child) for key, child in node.items()}
        return [encode(child) for child in node]

    ctxs = [json.dumps(encode(value)) for value in values]
    return {"refs": [json.dumps(body) for body in refs], "ctxs": ctxs}


@dataclass
class Score:
    """A verifier's verdict on one run: ``score`` in [0, 1] plus named components."""

    score: float
    components: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    judge_prompt: str | None = None  # an imported task's request to a judge model (rollout.grading)
    # requests an imported grader made to its judge and has no answer for yet (rollout.grading)
    judge_requests: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"score": self.score, "components": self.components}
        if self.error is not None:
            data["error"] = self.error
        return data


def build_context(outcome: Outcome) -> dict[str, Any]:
    """The JSON ``ctx`` a verifier reads (nothing in it is shared with the live sessions);
    ``services`` only for a task with mock services (what they saw)."""
    ctx = {
        "initial": outcome.initial,
        "final": outcome.final,
        "initial_files": outcome.initial_files,
        "files": outcome.files,
        "turns": [{"final": t.final, "files": t.files} for t in outcome.turns],
        "actions": [a.to_json() for a in outcome.actions],
    }
    if outcome.services:
        ctx["services"] = outcome.services
    return ctx


def run_verifier(
    task: Task,
    outcome: Outcome,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    messages: Sequence[dict[str, Any]] | None = None,
    judge_answers: dict[str, str] | None = None,
) -> Score:
    """Score one run of ``task`` with its verifier.

    ``messages`` (the conversation, OpenAI chat messages) go into ``ctx["messages"]`` for a
    verifier that reads the transcript: imported benchmarks' graders do; envcraft's own
    verifiers judge state, never prose, and are not given it. ``judge_answers`` (the judge
    model's replies to an imported grader's ``judge_requests``, by request key) go into
    ``ctx["judge_answers"]``: an imported grader that calls a judge gets one only then.
    """
    ctx = build_context(outcome)
    if messages is not None:
        ctx["messages"] = list(messages)
    if judge_answers is not None:
        ctx["judge_answers"] = dict(judge_answers)
    return score_contexts(task.verifier.source, [ctx], timeout)[0]


def score_trajectory(
    task: Task,
    turns: Sequence[Sequence[Any]],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    messages: Sequence[dict[str, Any]] | None = None,
) -> Score:
    """Run an agent's calls (grouped by user turn) in fresh sessions from S0 and score the outcome.

    A call to an unknown tool or with bad arguments is a failed call inside the run, never
    an error of the scoring itself. ``messages``: as for :func:`run_verifier`.
    """
    try:
        outcome = execute(task, turns)
    except ExecutionError as exc:
        return Score(0.0, {}, str(exc))
    return run_verifier(task, outcome, timeout, messages=messages)


def score_contexts(
    source: str, contexts: Sequence[dict[str, Any]], timeout: float | None = None
) -> list[Score]:
    """Score many runs with one verifier in a single isolated call (validation batches)."""
    if not contexts:
        return []
    checks = declared_checks(source)
    if checks is not None:
        return [_score_declared(checks, ctx) for ctx in contexts]
    limit = timeout if timeout is not None else DEFAULT_TIMEOUT + PER_RUN_TIMEOUT * len(contexts)
    reply = run_isolated(
        source + harness.source(), harness.BATCH_FUNC, pack(contexts), limit, declared_extras(source)
    )
    if not reply.get("ok"):
        reason = f"verifier failed: {reply.get('error', 'no reply')}"[:_MAX_REASON]
        return [Score(0.0, {}, reason) for _ in contexts]
    values = reply.get("value")
    if not isinstance(values, list) or len(values) != len(contexts):
        return [Score(0.0, {}, "verifier harness returned junk") for _ in contexts]
    return [_to_score(v) for v in values]


def _score_declared(checks: Sequence[dict[str, Any]], ctx: dict[str, Any]) -> Score:
    """A declarative verifier's score, computed here: envcraft's own interpreter over data."""
    try:
        value = verifier_runtime.score(list(checks), ctx)
    except Exception as exc:  # RecursionError or MemoryError on hostile data: no reward
        return Score(0.0, {}, f"verifier raised {type(exc).__name__}: {exc}"[:_MAX_REASON])
    return _to_score({"ok": True, "value": value})


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
    prompt = value.get("judge_prompt")
    requests = value.get("judge_requests")
    if not isinstance(requests, list) or not all(
        isinstance(r, dict) and isinstance(r.get("key"), str) and isinstance(r.get("messages"), list)
        for r in requests
    ):
        requests = None
    return Score(
        _clamp(float(raw)),
        components,
        judge_prompt=prompt if isinstance(prompt, str) else None,
        judge_requests=requests,
    )


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))
