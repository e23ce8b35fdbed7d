"""One rollout: a model plays one task in a fresh :class:`~envcraft.tasks.play.episode.Episode`.

The loop is the user simulator and the tool executor around a :class:`~envcraft.llm.Provider`:

1. open the task (fresh sessions from S0, one shared workspace with the task's files);
2. send the system prompt (see :mod:`envcraft.tasks.play.prompts`), the first user turn and the
   episode's tools;
3. every tool call of the answer goes through ``episode.call_exposed`` (so any tool profile
   the episode exposes works unchanged) and its result, a structured error included, goes
   back as a ``tool`` message;
4. an answer without tool calls ends the user turn (``episode.end_turn()``): the next turn is
   revealed as the next user message, or the rollout is done;
   (a task with a simulated user, :mod:`envcraft.rollout.user_sim`, and a ``user`` model: past
   the last turn the user model replies, up to the task's ``max_rounds``, until it is done);
5. limits on turns, model calls (steps) and tokens stop it early; a model that fails stops it
   with the error recorded;
6. the verifier scores the episode's outcome, exactly as ``envcraft tasks score`` would score
   the recorded calls.

Domain calls on in-memory sessions run on the event loop (they take microseconds); system
tools (a shell command may take seconds) and durable sessions run in a worker thread, and
so do opening, scoring and closing, so many rollouts share one event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from envcraft.core.errors import ErrorCategory, error_result, is_error
from envcraft.core.package import EnvPackage
from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, LLMError, Message, Usage
from envcraft.rollout.grading import score_rollout
from envcraft.rollout.user_sim import simulated_user, user_reply
from envcraft.sandbox.profiles import DEFAULT_PROFILE, result_text
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode, resolve_packages
from envcraft.tasks.play.outcome import ExecutionError
from envcraft.tasks.play.prompts import auto_mode, system_prompt
from envcraft.tasks.verifier.scoring import Score

log = logging.getLogger(__name__)

Mode = Literal["auto", "function", "claw"]
# Why a rollout stopped: every turn answered, or which limit / failure cut it short.
StopReason = Literal["done", "max_turns", "max_steps", "max_tokens", "model_error", "task_error"]
PASS_SCORE = 1.0


@dataclass(frozen=True)
class RolloutConfig:
    """How a rollout is played.

    ``mode`` "auto" plays Claw tasks in Claw mode and tool tasks in function-calling mode.
    ``max_turns`` caps the user turns played (None: all of the task's); ``max_steps`` the
    model calls of the whole rollout; ``max_tokens`` the prompt + completion tokens of the
    whole rollout. ``seed`` makes sample ``i`` of a task send ``seed + i`` with every
    request, so a re-run sends the same requests (and a response cache answers them).
    ``tool_result_chars`` truncates what one tool message shows the model (the session
    still has the whole result). ``profile`` names the Claw system tools' harness
    (:mod:`envcraft.sandbox.profiles`): ``openclaw`` by default, ``claude-code``, or the
    canonical ``envcraft`` names; the calls are stored canonically whatever it is, so a
    trajectory scores the same under every profile.
    """

    mode: Mode = "auto"
    max_turns: int | None = None
    max_steps: int = 60
    max_tokens: int = 400_000
    temperature: float | None = None
    max_completion_tokens: int | None = None
    seed: int = 0
    tool_result_chars: int = 16_000
    pass_score: float = PASS_SCORE
    profile: str = DEFAULT_PROFILE

    def mode_for(self, task: Task) -> Literal["function", "claw"]:
        if self.mode == "auto":
            return auto_mode(task)
        return self.mode


@dataclass
class Trajectory:
    """What one rollout did and earned; one JSON line of a trajectories file.

    ``turns`` (the calls per user turn) is what ``envcraft tasks score`` reads, so a
    trajectory re-scores to the same reward anywhere.
    """

    task_id: str
    sample: int
    model: str
    mode: str
    envs: list[str]
    kind: str
    profile: str = DEFAULT_PROFILE
    turns: list[list[dict[str, Any]]] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    score: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    score_error: str | None = None
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    cache_hits: int = 0
    steps: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    turns_played: int = 0
    stop: StopReason = "done"
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    passed: bool = False

    @property
    def rollout_id(self) -> str:
        return f"{self.task_id}#{self.sample}"

    def to_json(self) -> dict[str, Any]:
        reward: dict[str, Any] = {"score": self.score, "components": self.components}
        if self.score_error is not None:
            reward["error"] = self.score_error
        return {
            "task_id": self.task_id,
            "sample": self.sample,
            "rollout_id": self.rollout_id,
            "model": self.model,
            "mode": self.mode,
            "profile": self.profile,
            "envs": self.envs,
            "kind": self.kind,
            "turns": self.turns,
            "reward": reward,
            "passed": self.passed,
            "tokens": {
                "prompt": self.usage.prompt_tokens,
                "completion": self.usage.completion_tokens,
                "cached": self.usage.cached_tokens,
                "total": self.usage.total_tokens,
            },
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "steps": self.steps,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "turns_played": self.turns_played,
            "stop": self.stop,
            "error": self.error,
            "timings": {k: round(v, 6) for k, v in self.timings.items()},
            "messages": self.messages,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Trajectory:
        """A trajectory read back (for reports and resuming); ``KeyError``/``TypeError`` if it is not one."""
        reward, tokens = value["reward"], value["tokens"]
        return cls(
            task_id=str(value["task_id"]),
            sample=int(value["sample"]),
            model=str(value.get("model", "")),
            mode=str(value.get("mode", "")),
            envs=list(value.get("envs", [])),
            kind=str(value.get("kind", "")),
            profile=str(value.get("profile", DEFAULT_PROFILE)),
            turns=list(value["turns"]),
            messages=list(value.get("messages", [])),
            score=float(reward["score"]),
            components=dict(reward.get("components", {})),
            score_error=reward.get("error"),
            usage=Usage(int(tokens["prompt"]), int(tokens["completion"]), int(tokens.get("cached", 0))),
            requests=int(value.get("requests", 0)),
            cache_hits=int(value.get("cache_hits", 0)),
            steps=int(value.get("steps", 0)),
            tool_calls=int(value.get("tool_calls", 0)),
            tool_errors=int(value.get("tool_errors", 0)),
            turns_played=int(value.get("turns_played", 0)),
            stop=value.get("stop", "done"),
            error=value.get("error"),
            timings=dict(value.get("timings", {})),
            passed=bool(value.get("passed", False)),
        )


async def rollout(
    task: Task,
    provider: Provider,
    config: RolloutConfig | None = None,
    *,
    sample: int = 0,
    packages: Mapping[str, EnvPackage] | None = None,
    judge: Provider | None = None,
    user: Provider | None = None,
) -> Trajectory:
    """Play ``task`` once with ``provider`` (see the module docstring). Never raises for the task's sake.

    A request waiting for a batch answer (``LLMError("pending")``, :mod:`envcraft.llm.batch`)
    is raised: that rollout has no trajectory yet, and a re-run replays it from its task up to
    the step that waits (each step named ``<rollout id>/<step>`` in the batch files).
    ``judge`` scores the judged part of a task imported from a benchmark
    (:mod:`envcraft.rollout.grading`); ``user`` plays the task's simulated user, if it has one.
    """
    config = config or RolloutConfig()
    mode = config.mode_for(task)
    record = Trajectory(task.id, sample, provider.model, mode, list(task.envs), task.kind, config.profile)
    clock = _Clock()
    try:
        with clock.part("open"):
            # Packages load on the event loop's thread: importing an env module from two
            # threads at once can see it half-defined. Opening the sessions can take a while.
            found = resolve_packages(task, packages)
            episode = await asyncio.to_thread(Episode.open, task, packages=found, profile=config.profile)
    except ExecutionError as exc:
        record.stop, record.error, record.score_error = "task_error", str(exc), str(exc)
        record.timings = clock.totals()
        return record
    try:
        sim = simulated_user(task) if user is not None else None
        await _play(episode, provider, config, record, mode, clock, (user, sim) if user and sim else None)
        record.turns = episode.trajectory(task.id)["turns"]
        with clock.part("verify"):
            score = await score_rollout(task, episode.outcome(), record.messages, judge)
        _set_score(record, score, config)
    finally:
        with clock.part("close"):
            await asyncio.to_thread(episode.close)
    record.timings = clock.totals()
    return record


async def _play(
    episode: Episode,
    provider: Provider,
    config: RolloutConfig,
    record: Trajectory,
    mode: str,
    clock: _Clock,
    user: tuple[Provider, dict[str, Any]] | None = None,
) -> None:
    exposed = {t.name: t for t in episode.tools() if mode == "claw" or not t.system}
    hidden = {t.name for t in episode.tools()} - exposed.keys()
    tools = [t.openai_schema() for t in exposed.values()]
    prompt = system_prompt(episode.packages, mode, skills=episode.skills_prompt() if mode == "claw" else None)
    if user is not None and user[1].get("system_prompt_suffix"):
        prompt += "\n\n" + str(user[1]["system_prompt_suffix"])
    rounds = 0
    messages: list[Message] = [{"role": "system", "content": prompt}]
    record.messages = messages
    turn_limit = (
        len(episode.user_turns)
        if config.max_turns is None
        else min(config.max_turns, len(episode.user_turns))
    )
    offload = episode.directory is not None
    while not episode.done:
        if record.turns_played >= turn_limit:
            record.stop = "max_turns"
            return
        messages.append({"role": "user", "content": episode.user_message})
        record.turns_played += 1
        while True:  # model steps within one user turn
            if record.steps >= config.max_steps:
                record.stop = "max_steps"
                return
            if record.usage.total_tokens >= config.max_tokens:
                record.stop = "max_tokens"
                return
            request = ChatRequest(
                messages=list(messages),
                tools=tools,
                temperature=config.temperature,
                max_tokens=config.max_completion_tokens,
                seed=config.seed + record.sample,
                user=record.rollout_id,
                stable_id=f"{record.rollout_id}/{record.steps}",
            )
            try:
                with clock.part("model"):
                    response = await provider.complete(request)
            except LLMError as exc:
                if exc.kind == "pending":  # a batch answer to come: the rollout resumes on a re-run
                    raise
                record.stop, record.error = "model_error", str(exc)
                return
            except Exception as exc:  # a provider bug must not take the other rollouts down
                log.exception("provider %s failed on %s", provider.model, record.rollout_id)
                record.stop, record.error = "model_error", f"{type(exc).__name__}: {exc}"[:500]
                return
            record.steps += 1
            record.requests += 1
            record.cache_hits += int(response.cache_hit)
            record.usage = record.usage + response.usage
            messages.append(response.message)
            calls = response.tool_calls
            if not calls:
                last = episode.turn == len(episode.user_turns) - 1
                if user is None or not last or rounds >= int(user[1].get("max_rounds") or 3):
                    break
                with clock.part("user"):
                    reply = await user_reply(user[0], user[1], messages)
                if reply is None:
                    break
                rounds += 1
                messages.append({"role": "user", "content": str(user[1].get("prefix") or "") + reply})
                continue
            for call in calls:
                tool = exposed.get(call.name)
                args = call.parsed_arguments()
                with clock.part("tools"):
                    if call.name in hidden:
                        result = _not_offered(call.name)
                    elif tool is not None and (tool.system or tool.service or offload):
                        result = await asyncio.to_thread(episode.call_exposed, call.name, args)
                    else:
                        result = episode.call_exposed(call.name, args)
                record.tool_calls += 1
                record.tool_errors += int(is_error(result))
                shown = tool_result_text(result, config.tool_result_chars)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": shown})
        episode.end_turn()


def _not_offered(name: str) -> dict[str, Any]:
    """A tool the episode has but this mode does not offer: refused without reaching a session."""
    return error_result(
        ErrorCategory.NOT_FOUND, f"unknown tool '{name}': it is not offered in this mode", tool=name
    )


def tool_result_text(result: dict[str, Any], limit: int | None = None) -> str:
    """A tool result as the model reads it in a tool message: a profile tool's text as its
    harness shows it, any other result as JSON (non-ASCII kept as is); cut after ``limit``
    characters with a note of how many were not shown. The trainer adapters
    (:mod:`envcraft.integrations`) render results with it too, so training and eval agree."""
    text = (
        result_text(result)
        if isinstance(result.get("content"), list)
        else json.dumps(result, ensure_ascii=False, default=str)
    )
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"... [{len(text) - limit} more characters not shown]"
    return text


def _set_score(record: Trajectory, score: Score, config: RolloutConfig) -> None:
    record.score = score.score
    record.components = score.components
    record.score_error = score.error
    record.passed = score.error is None and score.score >= config.pass_score


class _Clock:
    """Wall time spent per part of a rollout (model, tools, verify, ...) plus the total."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.spent: dict[str, float] = {}

    def part(self, name: str) -> _Part:
        return _Part(self, name)

    def totals(self) -> dict[str, float]:
        return {"total_s": time.perf_counter() - self.started, **{f"{k}_s": v for k, v in self.spent.items()}}


class _Part:
    def __init__(self, clock: _Clock, name: str) -> None:
        self.clock, self.name = clock, name

    def __enter__(self) -> None:
        self.begun = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        spent = time.perf_counter() - self.begun
        self.clock.spent[self.name] = self.clock.spent.get(self.name, 0.0) + spent
