"""Built-in policies that need no LLM: ``oracle`` and ``random``, served over the real protocol.

Both are providers that read only what a model would read: the request's messages and
tools (plus, for the oracle, the task set it was started with). The rollout loop does not
call them directly: :func:`serve_policy` puts one behind a local
:class:`~envcraft.llm.server.ChatServer` and hands the loop an
:class:`~envcraft.llm.openai_compat.OpenAIProvider` pointed at it, so their rollouts cross
the same HTTP, SDK, parsing and tool-execution path as a real model's.

* ``oracle`` plays the task's reference: the request's ``user`` field names the rollout
  (``<task id>#<sample>``, set by the loop), the number of user messages tells the turn,
  the tool calls made since the last user message tell the position in it. It answers one
  reference call per response, under the name the request's tool list offers for it, and
  a short text when the turn's calls are done. A correct loop therefore scores 1.0 on
  every task; anything less is a bug in the loop, the episode or the task.
* ``random`` makes 1-4 schema-valid calls per turn to random offered tools (enum values
  from the schema, strings from the words of the conversation, small numbers), then ends
  the turn: a baseline that no task should pass.
"""

from __future__ import annotations

import json
import random
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from envcraft.llm.openai_compat import OpenAIProvider, ProviderConfig, RetryPolicy, Secret
from envcraft.llm.provider import Provider
from envcraft.llm.replay import estimate_tokens
from envcraft.llm.server import ChatServer
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError, Message, Usage
from envcraft.sandbox.profiles import SYSTEM_TOOLS, profile_call
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import COLLISION_SEPARATOR

POLICIES = ("oracle", "random")
DONE_TEXT = "Done: that request is complete."
# The shell tool that tells which harness profile a request's tools follow.
PROFILE_MARKERS = {"openclaw": "exec", "claude-code": "Bash"}
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@-]{1,40}")


class OracleProvider(Provider):
    """Answers with the reference calls of the task the request's ``user`` names."""

    def __init__(self, tasks: Iterable[Task]) -> None:
        super().__init__("oracle")
        self.tasks = {t.id: t for t in tasks}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        task = self._task(request)
        users = [m for m in request.messages if m.get("role") == "user"]
        turn = len(users) - 1
        if turn < 0 or turn >= len(task.turns) or users[-1].get("content") != task.turns[turn].user:
            raise LLMError("bad_request", f"oracle: the conversation does not follow task {task.id}'s turns")
        done = _calls_since_last_user(request.messages)
        planned = [c for c in task.reference.calls if c.turn == turn]
        if done >= len(planned):
            return _respond(request, {"role": "assistant", "content": DONE_TEXT}, "stop")
        call = planned[done]
        name, args = _offered_call(call.env, call.tool, call.args, request.tools)
        tool_call = {
            "id": f"call_{turn}_{done}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        return _respond(
            request, {"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls"
        )

    def _task(self, request: ChatRequest) -> Task:
        rollout = request.user or ""
        task = self.tasks.get(rollout.rsplit("#", 1)[0])
        if task is None:
            raise LLMError(
                "bad_request", f"oracle: no task for rollout {rollout!r} (the request's 'user' field)"
            )
        return task


class RandomProvider(Provider):
    """Makes a few schema-valid random calls per user turn, then ends it (see the module docstring)."""

    def __init__(self, calls_per_turn: tuple[int, int] = (1, 4)) -> None:
        super().__init__("random")
        self.calls_per_turn = calls_per_turn

    async def complete(self, request: ChatRequest) -> ChatResponse:
        # Seeded by the request's content: the same conversation gets the same answer (cacheable).
        rng = random.Random(request.key(self.model))
        budget = random.Random(f"{request.user}|{_user_count(request.messages)}").randint(
            *self.calls_per_turn
        )
        tools = [t for t in request.tools if isinstance(t.get("function"), Mapping)]
        if not tools or _calls_since_last_user(request.messages) >= budget:
            return _respond(request, {"role": "assistant", "content": DONE_TEXT}, "stop")
        function = rng.choice(tools)["function"]
        words = _words(request.messages)
        args = random_arguments(function.get("parameters") or {}, rng, words)
        tool_call = {
            "id": f"call_{len(request.messages)}",
            "type": "function",
            "function": {"name": function["name"], "arguments": json.dumps(args, ensure_ascii=False)},
        }
        return _respond(
            request, {"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls"
        )


def random_arguments(schema: Mapping[str, Any], rng: random.Random, words: list[str]) -> dict[str, Any]:
    """Arguments for a flat object schema: every required field, each optional one half the time."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    return {
        name: random_value(spec, rng, words)
        for name, spec in properties.items()
        if name in required or rng.random() < 0.5
    }


def random_value(spec: Mapping[str, Any], rng: random.Random, words: list[str]) -> Any:
    """A value of the JSON Schema ``spec`` (enum, string, integer, number, boolean, array, anyOf)."""
    if spec.get("enum"):
        return rng.choice(list(spec["enum"]))
    options = spec.get("anyOf") or spec.get("oneOf")
    if options:
        concrete = [o for o in options if o.get("type") != "null"] or options
        return random_value(rng.choice(concrete), rng, words)
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"] or kind)
    if kind == "integer":
        low = int(spec.get("minimum", 0))
        return rng.randint(low, max(low, min(int(spec.get("maximum", low + 10)), low + 10)))
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        item = spec.get("items") or {"type": "string"}
        return [random_value(item, rng, words) for _ in range(rng.randint(1, 3))]
    if kind == "object":
        return random_arguments(spec, rng, words)
    return rng.choice(words) if words and rng.random() < 0.8 else f"x{rng.randint(0, 999)}"


def _words(messages: Iterable[Message]) -> list[str]:
    """Candidate string values: the distinct words of the user and tool messages so far."""
    seen: dict[str, None] = {}
    for message in messages:
        if message.get("role") in ("user", "tool") and isinstance(message.get("content"), str):
            for word in _WORD.findall(message["content"]):
                seen.setdefault(word, None)
    return list(seen)


def _user_count(messages: Iterable[Message]) -> int:
    return sum(1 for m in messages if m.get("role") == "user")


def _calls_since_last_user(messages: list[Message] | Any) -> int:
    count = 0
    for message in reversed(list(messages)):
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant":
            count += len(message.get("tool_calls") or [])
    return count


def _offered_call(
    env: str, tool: str, args: Mapping[str, Any], tools: Iterable[Mapping[str, Any]]
) -> tuple[str, dict[str, Any]]:
    """How the request's tool list makes the reference call ``env.tool(args)``.

    A domain tool keeps its name (``<env>__<tool>`` on a clash, the episode's naming rule); a
    canonical system tool is translated into the profile whose tools are offered.
    """
    names = {t.get("function", {}).get("name") for t in tools}
    if tool in SYSTEM_TOOLS and tool not in names:
        profile = next((p for p, marker in PROFILE_MARKERS.items() if marker in names), None)
        if profile is not None:
            return profile_call(profile, tool, dict(args))
    prefixed = f"{env}{COLLISION_SEPARATOR}{tool}"
    return (prefixed if prefixed in names else tool), dict(args)


def _respond(request: ChatRequest, message: Message, finish: str) -> ChatResponse:
    usage = Usage(estimate_tokens([*request.messages, *request.tools]), estimate_tokens(message), 0)
    return ChatResponse(message=message, finish_reason=finish, usage=usage, model=request.model or "")


FAST_RETRY = RetryPolicy(max_retries=2, backoff_base=0.05, backoff_max=0.5)


@contextmanager
def serve_policy(
    provider: Provider, *, concurrency: int = 64, timeout: float = 120.0, retry: RetryPolicy = FAST_RETRY
) -> Iterator[OpenAIProvider]:
    """``provider`` behind a loopback :class:`ChatServer`; yields an OpenAI client for it.

    The server requires a fresh random key, so nothing else on the machine can use it. A slow
    local model wants a long ``timeout`` and no retries: the server does not stop generating
    for a client that gave up, so a retry only queues the same work again.
    """
    key = secrets.token_urlsafe(24)
    with ChatServer(provider, api_key=key) as server:
        config = ProviderConfig(
            model=provider.model,
            base_url=server.url,
            api_key=Secret(key),
            concurrency=concurrency,
            timeout=timeout,
            retry=retry,
        )
        yield OpenAIProvider(config)


def policy_provider(name: str, tasks: Iterable[Task]) -> Provider:
    """The built-in policy called ``name`` (one of :data:`POLICIES`)."""
    if name == "oracle":
        return OracleProvider(tasks)
    if name == "random":
        return RandomProvider()
    raise ValueError(f"unknown built-in policy {name!r}; built in: {', '.join(POLICIES)}")
