"""How ``envcraft eval`` scores tasks imported from other benchmarks (PinchBench, Claw-Eval).

Such a task carries ``provenance["grading"]``::

    {"benchmark": "pinchbench", "type": "automated" | "llm_judge" | "hybrid",
     "weights": {"automated": 0.5, "llm_judge": 0.5}, "reads_transcript": true,
     "skip": null | "needs the internet: ..."}

* ``reads_transcript``: its verifier reads the conversation (``ctx["messages"]``), as the
  benchmark's graders read their harness's transcript;
* a judged type: its verifier returns ``judge_prompt`` as well, the benchmark's own prompt
  over the run; the judge model's reply (``{"scores": {...}, "total": x}``, parsed as
  PinchBench parses it) is the judge part, combined with the automated part by the weights;
* with no judge model, judge-only tasks are skipped and hybrid tasks scored on their
  automated part; a ``skip`` reason (a task that needs the internet) skips it. Both are
  counted in the eval summary (:func:`plan`).

A task whose grading has ``"judge": "grader"`` (Claw-Eval: the grader itself calls its LLM
judge) is graded by its verifier with the judge model answering the grader's
``judge_requests`` (:func:`grade_with_judge`); with no judge model it is graded as the
benchmark grades with no judge, and listed with the hybrid tasks scored without their judge.

Tasks without ``provenance["grading"]`` (envcraft's own) are scored by their verifier alone.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, LLMError, Message
from envcraft.rollout.user_sim import NO_USER, simulated_user
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.outcome import Outcome
from envcraft.tasks.verifier.scoring import Score, run_verifier

NO_JUDGE = "judge-only task and no --judge model"
MAX_JUDGE_ROUNDS = 8
_PROSE_TOTAL = re.compile(r"(?:total|overall|final)\s*(?:score)?[:\s]*(0\.\d+|1\.0+)", re.I)
_JSON_FENCE = re.compile(r"```json\s*(.*?)\s*```", re.S)


def grading_of(task: Task) -> dict[str, Any] | None:
    """The task's imported-grading block, or None for a task scored by its verifier alone."""
    value = task.provenance.get("grading") if isinstance(task.provenance, dict) else None
    return value if isinstance(value, dict) else None


@dataclass
class Plan:
    """Which tasks an eval runs, which it skips (reason -> ids) and which lose their judge part."""

    tasks: list[Task]
    skipped: dict[str, list[str]] = field(default_factory=dict)
    automated_only: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "skipped": {reason: ids for reason, ids in self.skipped.items()},
            "skipped_tasks": sum(len(ids) for ids in self.skipped.values()),
            "automated_part_only": self.automated_only,
        }


def plan(tasks: Sequence[Task], *, judge: bool, user: bool = False) -> Plan:
    """Split ``tasks`` by what this eval can score (see the module docstring); a task with a
    simulated user is skipped without a ``user`` model."""
    chosen = Plan([])
    for task in tasks:
        grading = grading_of(task) or {}
        reason = grading.get("skip")
        if not reason and not user and simulated_user(task) is not None:
            reason = NO_USER
        if not reason and grading.get("type") == "llm_judge" and not judge:
            reason = NO_JUDGE
        if reason:
            chosen.skipped.setdefault(str(reason), []).append(task.id)
            continue
        if (grading.get("type") == "hybrid" or grading.get("judge") == "grader") and not judge:
            chosen.automated_only.append(task.id)
        chosen.tasks.append(task)
    return chosen


async def score_rollout(
    task: Task, outcome: Outcome, messages: Sequence[Message], judge: Provider | None = None
) -> Score:
    """The reward of one rollout: the verifier, plus the judge part of a judged import."""
    grading = grading_of(task)
    given = list(messages) if grading is not None and grading.get("reads_transcript") else None
    if grading is not None and grading.get("judge") == "grader" and judge is not None:
        return await grade_with_judge(task, outcome, given, judge)
    score = await asyncio.to_thread(run_verifier, task, outcome, messages=given)
    if grading is None or grading.get("type") not in ("llm_judge", "hybrid") or score.error is not None:
        return score
    if judge is None or score.judge_prompt is None:
        return Score(0.0, {}, NO_JUDGE) if grading["type"] == "llm_judge" else score
    total, parts, error = await ask_judge(judge, score.judge_prompt)
    judged = {f"llm_judge.{k}": v for k, v in parts.items()}
    if grading["type"] == "llm_judge":
        return Score(total, judged, error)
    weights = grading.get("weights") or {}
    auto_w, judge_w = float(weights.get("automated", 0.5)), float(weights.get("llm_judge", 0.5))
    if auto_w + judge_w <= 0:
        auto_w = judge_w = 0.5
    combined = (score.score * auto_w + total * judge_w) / (auto_w + judge_w)
    components = {**{f"automated.{k}": v for k, v in score.components.items()}, **judged}
    return Score(combined, components, error)


async def grade_with_judge(
    task: Task, outcome: Outcome, messages: list[Message] | None, judge: Provider
) -> Score:
    """Grade with the judge model answering what the grader asks, until it asks nothing new.

    The verifier runs in an isolated worker with no network: each run returns the judge
    requests it had no answer for (scored as 0 meanwhile); they are asked concurrently and the
    grader runs again with every answer so far. A failed judge call answers "" (a 0, as the
    benchmark's parser gives an unreadable reply) and is reported in the score's error.
    """
    answers: dict[str, str] = {}
    failures: list[str] = []
    for _ in range(MAX_JUDGE_ROUNDS):
        score = await asyncio.to_thread(run_verifier, task, outcome, messages=messages, judge_answers=answers)
        pending = [r for r in score.judge_requests or [] if r["key"] not in answers]
        if score.error is not None or not pending:
            error = score.error or (failures[0] if failures else None)
            return Score(score.score, score.components, error)
        replies = await asyncio.gather(*(_reply(judge, r["messages"]) for r in pending))
        for request, (text, failure) in zip(pending, replies, strict=True):
            answers[request["key"]] = text
            if failure:
                failures.append(failure)
    return Score(0.0, {}, f"the grader asked its judge new questions after {MAX_JUDGE_ROUNDS} rounds")


async def _reply(judge: Provider, messages: list[Message]) -> tuple[str, str | None]:
    try:
        response = await judge.complete(ChatRequest(messages=messages, temperature=0.0))
    except LLMError as exc:
        return "", f"judge failed: {exc}"[:300]
    return response.content or "", None


async def ask_judge(judge: Provider, prompt: str) -> tuple[float, dict[str, float], str | None]:
    """``(total, criterion scores, error)`` of the judge's reply; a failed judge scores 0."""
    request = ChatRequest(messages=[{"role": "user", "content": prompt}], temperature=0.0)
    try:
        response = await judge.complete(request)
    except LLMError as exc:
        return 0.0, {}, f"judge failed: {exc}"[:300]
    verdict = normalize(parse_reply(response.content or ""))
    total = verdict["total"]
    parts = {k: _clamp(v) for k, v in verdict["scores"].items()}
    if total is None:
        return 0.0, parts, "the judge's reply holds no score"
    return _clamp(total), parts, None


def parse_reply(text: str) -> dict[str, Any]:
    """PinchBench's ``_parse_judge_response``: a json fence, else the last balanced ``{...}``
    with ``scores`` (else any), else a "total: 0.x" in prose; ``{}`` when nothing parses."""
    raw = text.strip()
    if not raw:
        return {}
    fence = _JSON_FENCE.search(raw)
    if fence:
        try:
            parsed = json.loads(fence.group(1))
            if isinstance(parsed, dict):
                return parsed
        except ValueError:
            pass
    candidates: list[str] = []
    depth, current = 0, list[str]()
    for char in raw:
        if char == "{":
            if depth == 0:
                current = []
            depth += 1
        if depth > 0:
            current.append(char)
        if char == "}":
            depth -= 1
            if depth == 0 and current:
                candidates.append("".join(current))
    parsed_all = []
    for candidate in reversed(candidates):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            parsed_all.append(value)
    for value in parsed_all:
        if "scores" in value:
            return value
    if parsed_all:
        return parsed_all[0]
    prose = _PROSE_TOTAL.search(raw)
    if prose and 0.0 <= float(prose.group(1)) <= 1.0:
        return {"scores": {}, "total": float(prose.group(1))}
    return {}


def normalize(parsed: dict[str, Any]) -> dict[str, Any]:
    """PinchBench's ``_normalize_judge_response``: ``{"scores": {name: x}, "total": x | None}``."""
    scores: dict[str, float] = {}
    source = parsed.get("scores", parsed.get("criteria_scores"))
    if isinstance(source, dict):
        for key, value in source.items():
            inner = value.get("score") if isinstance(value, dict) else value
            if isinstance(inner, int | float) and not isinstance(inner, bool):
                scores[str(key)] = float(inner)
    total: float | None = None
    if parsed.get("total") is not None:
        total = float(parsed["total"]) if isinstance(parsed["total"], int | float) else None
    elif isinstance(parsed.get("score"), int | float):
        total = float(parsed["score"])
    elif scores:
        total = sum(scores.values()) / len(scores)
    return {"scores": scores, "total": total}


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))
