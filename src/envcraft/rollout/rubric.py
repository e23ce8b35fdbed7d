"""The LLM data-quality inspector: the paper's Table 18 rubric, a strict JSON answer, the 3/3/>=2 rule.

Each task is shown to a model as its inspector would read it: the environments (description,
tools), S0 (large states cut to a budget), the workspace files, the user turns, the
reference solution and the validation protocol (the verifier's source and checks). The model
scores three dimensions 0-3 with a reason each and must answer with exactly one JSON object
of this shape (nothing else, no code fence)::

    {"solvability": {"score": 3, "reason": "..."},
     "validation": {"score": 3, "reason": "..."},
     "consistency": {"score": 2, "reason": "..."}}

An answer that does not parse, misses a key, adds one, or has a score that is not an integer
0-3 is refused and asked again once with the reason; a second bad answer records the error
and the task is not kept. A task is kept with solvability 3, validation 3, consistency >= 2.
The result goes to ``task.quality["rubric"]``. Behind batch files a task whose request waits
for its answer has no verdict yet: :func:`inspect_tasks` raises
:class:`~envcraft.llm.batch.BatchPending` once the others are scored (a re-asked answer takes
a second round).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.llm.batch import BatchPending
from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, LLMError, Message
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.outcome import ExecutionError

DIMENSIONS = ("solvability", "validation", "consistency")
STATE_BUDGET = 12_000  # characters of S0 per environment shown to the inspector
FILE_BUDGET = 1_500  # characters shown of each workspace file
ATTEMPTS = 2

RUBRIC = """\
You are a data-quality inspector for synthesized agent training tasks. A task is an initial \
environment state, user turns revealed one at a time, and a validation protocol (a Python \
verifier over the final state) that scores the agent. Score the task on three dimensions, \
each an integer from 0 to 3:

solvability (Task Solvability & Logic)
  3: The task is logically valid, non-trivial, and fully solvable under the initial state and \
environment rules. Completing it requires meaningful interaction, with no state conflicts.
  2: The task is theoretically solvable but is either trivial, requires no meaningful \
interaction, or contains minor parameter mismatches that a robust agent may bypass.
  1: The task is unsolvable because its requested actions or target state contradict the \
initial state, environment constants, or transition rules.
  0: The task substantially hallucinates entities, tools, APIs, or states that are absent from \
the environment.

validation (Validation-Protocol Integrity)
  3: The validation protocol is executable and completely checks the intended success \
conditions, without evident false-positive or false-negative paths.
  2: The protocol is executable, but its assertions are incomplete or weak; for example, it \
verifies that an action occurred without checking the required final state.
  1: The protocol contains syntax or runtime errors, references undefined variables or APIs, \
or is expected to fail during execution.
  0: The validation protocol is missing or evaluates conditions unrelated to the user task.

consistency (Data Consistency & Syntactic Cleanliness)
  3: Entity names, identifiers, value types, and schemas are fully consistent across the \
environment state, user task, and validation protocol.
  2: The components are semantically consistent but contain minor type or formatting \
mismatches that do not fundamentally alter the task objective.
  1: Critical fields are missing, or explicit contradictions exist between the user-facing \
description and the underlying environment configuration.
  0: The task record contains malformed JSON, severely corrupted text, or otherwise unusable \
structured data.

Answer with exactly one JSON object and nothing else:
{"solvability": {"score": <0-3>, "reason": "<one sentence>"}, \
"validation": {"score": <0-3>, "reason": "<one sentence>"}, \
"consistency": {"score": <0-3>, "reason": "<one sentence>"}}"""


class RubricError(ValueError):
    """An inspector answer that is not the required JSON object."""


@dataclass
class RubricResult:
    """One task's verdict: scores and reasons per dimension, or why there are none."""

    model: str
    scores: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    attempts: int = 0

    @property
    def keep(self) -> bool:
        """The paper's rule: solvability 3, validation 3, consistency at least 2."""
        if self.error is not None:
            return False
        return (
            self.scores["solvability"] == 3
            and self.scores["validation"] == 3
            and self.scores["consistency"] >= 2
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"model": self.model, "keep": self.keep, "attempts": self.attempts}
        if self.error is not None:
            data["error"] = self.error
        else:
            data.update(scores=self.scores, reasons=self.reasons)
        return data


def parse_rubric(text: str | None) -> tuple[dict[str, int], dict[str, str]]:
    """Scores and reasons from an answer; :class:`RubricError` saying what is wrong with it."""
    if not text or not text.strip():
        raise RubricError("the answer is empty")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RubricError(f"the answer is not one JSON object ({exc})") from None
    if not isinstance(value, dict):
        raise RubricError("the answer must be a JSON object")
    if set(value) != set(DIMENSIONS):
        raise RubricError(
            f"the object must have exactly the keys {', '.join(DIMENSIONS)}; it has {sorted(value)}"
        )
    scores: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for name in DIMENSIONS:
        entry = value[name]
        if not isinstance(entry, dict) or set(entry) != {"score", "reason"}:
            raise RubricError(f"{name} must be an object with exactly 'score' and 'reason'")
        score, reason = entry["score"], entry["reason"]
        if isinstance(score, bool) or not isinstance(score, int) or not 0 <= score <= 3:
            raise RubricError(f"{name}.score must be an integer from 0 to 3, not {score!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise RubricError(f"{name}.reason must be a non-empty string")
        scores[name], reasons[name] = score, reason.strip()
    return scores, reasons


def task_record(task: Task, packages: dict[str, EnvPackage] | None = None) -> str:
    """The task as the inspector reads it (see the module docstring)."""
    try:
        found = packages or resolve_packages(task)
    except ExecutionError:
        found = {}
    sections = [f"# Task {task.id} ({task.kind}, environments: {', '.join(task.envs)})"]
    for env in task.envs:
        package = found.get(env)
        if package is None:
            sections.append(f"## Environment {env}\n(package not found)")
            continue
        tools = "\n".join(_tool_line(spec.openai_schema()) for spec in package.env_class.tools.values())
        doc = (package.env_class.__doc__ or "").strip()
        sections.append(f"## Environment {env}: {package.manifest.title}\n{doc}\n\nTools:\n{tools}")
    for env, state in task.initial_state.items():
        sections.append(
            f"## Initial state of {env}\n{_cut(json.dumps(state, ensure_ascii=False), STATE_BUDGET)}"
        )
    if task.workspace:
        files = "\n\n".join(
            f"### {path}\n{_cut(text, FILE_BUDGET)}" for path, text in sorted(task.workspace.items())
        )
        sections.append(f"## Workspace files\n{files}")
    turns = "\n".join(f"{i + 1}. {turn.user}" for i, turn in enumerate(task.turns))
    sections.append(f"## User turns (revealed one at a time)\n{turns}")
    calls = "\n".join(
        f"- turn {c.turn + 1}: {c.env}.{c.tool}({json.dumps(c.args, ensure_ascii=False)})"
        for c in task.reference.calls
    )
    sections.append(f"## Reference solution\n{calls}")
    sections.append(f"## Validation protocol\n```python\n{task.verifier.source}\n```")
    if task.verifier.checks:
        sections.append(f"Checks: {_cut(json.dumps(task.verifier.checks, ensure_ascii=False), STATE_BUDGET)}")
    return "\n\n".join(sections)


def _tool_line(schema: dict[str, Any]) -> str:
    """``- name(param, ...): first line of the description``."""
    function = schema["function"]
    params = ", ".join((function.get("parameters") or {}).get("properties", {}))
    lines = (function.get("description") or "").strip().splitlines()
    return f"- {function['name']}({params}): {lines[0] if lines else ''}"


def _cut(text: str, budget: int) -> str:
    return text if len(text) <= budget else text[:budget] + f" ... [{len(text) - budget} more characters]"


async def inspect_task(task: Task, provider: Provider) -> RubricResult:
    """Score one task with the rubric (never raises for the model's sake; a request waiting for
    a batch answer raises its ``LLMError("pending")``)."""
    result = RubricResult(provider.model)
    messages: list[Message] = [
        {"role": "system", "content": RUBRIC},
        {"role": "user", "content": task_record(task)},
    ]
    for attempt in range(1, ATTEMPTS + 1):
        result.attempts = attempt
        request = ChatRequest(
            messages=list(messages), temperature=0.0, response_format={"type": "json_object"}
        )
        try:
            response = await provider.complete(request)
        except LLMError as exc:
            if exc.kind == "pending":
                raise
            result.error = f"model error: {exc}"
            return result
        try:
            result.scores, result.reasons = parse_rubric(response.content)
            result.error = None
            return result
        except RubricError as exc:
            result.error = f"invalid answer: {exc}"
            messages += [
                response.message,
                {
                    "role": "user",
                    "content": f"That answer is invalid: {exc}. Reply with only the JSON object.",
                },
            ]
    return result


async def inspect_tasks(
    tasks: Sequence[Task], provider: Provider, *, concurrency: int = 8
) -> list[RubricResult]:
    """Score every task, ``concurrency`` at a time (results in the tasks' order).

    :class:`BatchPending` when tasks wait for batch answers (after the others are scored).
    """
    slots = asyncio.Semaphore(max(1, concurrency))

    async def one(task: Task) -> RubricResult | None:
        async with slots:
            try:
                return await inspect_task(task, provider)
            except LLMError as exc:
                if exc.kind != "pending":
                    raise
                return None

    results = await asyncio.gather(*(one(t) for t in tasks))
    waiting = sum(r is None for r in results)
    if waiting:
        raise BatchPending(waiting)
    return [r for r in results if r is not None]


def with_rubric(task: Task, result: RubricResult) -> Task:
    """``task`` with the verdict in ``quality["rubric"]`` (other quality keys kept)."""
    return task.model_copy(update={"quality": {**task.quality, "rubric": result.to_json()}})
