"""What goes to a model and what comes back, in the OpenAI chat-completions shapes.

A :class:`ChatRequest` carries OpenAI chat messages (plain dicts, tool calls included) and
OpenAI function tools; :meth:`ChatRequest.body` is the exact JSON body of a
``POST /v1/chat/completions`` and :meth:`ChatRequest.key` its content address (what the
response cache and the batch files key on). A :class:`ChatResponse` is one choice of a
``chat.completion`` object plus the accounting of the request that produced it.
Every provider, the cache, the batch files and the local server convert through
:func:`parse_completion` / :meth:`ChatResponse.completion`, so a response looks the same
whichever way it arrived.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Message = dict[str, Any]
ErrorKind = Literal[
    "rate_limit",
    "server",
    "timeout",
    "connection",
    "bad_request",
    "auth",
    "malformed",
    "pending",
    "exhausted",
]
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})

# Body fields a request sets from its own attributes; anything else a caller passes goes in `extra`.
_FIELDS = ("temperature", "top_p", "max_tokens", "seed", "tool_choice", "response_format", "user")


class LLMError(Exception):
    """A request that did not produce a response; ``kind`` says why and whether a retry may help."""

    def __init__(
        self, kind: ErrorKind, message: str, *, status: int | None = None, attempts: int = 1
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.attempts = attempts

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE

    def __str__(self) -> str:
        status = f" (HTTP {self.status})" if self.status is not None else ""
        return f"{self.kind}{status}: {self.message}"


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions request; ``model`` None means the provider's model."""

    messages: Sequence[Message]
    tools: Sequence[Mapping[str, Any]] = ()
    model: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    response_format: Mapping[str, Any] | None = None
    # A stable id of who is asking (OpenAI's `user` field). The rollout loop sets it to the
    # rollout's id, so k samples of one task are k different requests (and cache entries).
    user: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # A name of this request that stays the same across runs (the rollout loop: rollout id and
    # step), never sent. Batch files key such a request by it instead of its whole content: a
    # later step's messages hold tool results that may differ between runs (a temp path a shell
    # printed), and a re-run must still find the answer given to the first run's request.
    stable_id: str | None = None

    def body(self, model: str | None = None) -> dict[str, Any]:
        """The JSON body of ``POST /v1/chat/completions`` (``model`` fills in an unset model)."""
        chosen = self.model or model
        if not chosen:
            raise LLMError("bad_request", "no model: pass one or set ENVCRAFT_MODEL")
        body: dict[str, Any] = {"model": chosen, "messages": [dict(m) for m in self.messages]}
        if self.tools:
            body["tools"] = [dict(t) for t in self.tools]
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None:
                body[name] = dict(value) if isinstance(value, Mapping) else value
        for name, value in self.extra.items():
            body.setdefault(name, value)
        return body

    def key(self, model: str | None = None) -> str:
        """The content address of this request: sha256 of its body as canonical JSON."""
        return content_key(self.body(model))

    def with_model(self, model: str) -> ChatRequest:
        return replace(self, model=model)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> ChatRequest:
        """The request a ``/v1/chat/completions`` body describes (``LLMError`` if it is not one)."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise LLMError("bad_request", "'messages' must be a non-empty list of message objects")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise LLMError("bad_request", "'model' must be a non-empty string")
        tools = body.get("tools") or []
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise LLMError("bad_request", "'tools' must be a list of tool objects")
        known = {"model", "messages", "tools", *_FIELDS}
        values = {name: body[name] for name in _FIELDS if body.get(name) is not None}
        return cls(
            messages=messages,
            tools=tools,
            model=model,
            extra={k: v for k, v in body.items() if k not in known},
            **values,
        )


def content_key(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Usage:
    """Tokens of one request (or a sum of them), as the server reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "total_tokens": self.total_tokens,
        }

    @classmethod
    def from_openai(cls, usage: Any) -> Usage:
        """From a completion's ``usage`` object (cached tokens under ``prompt_tokens_details``)."""
        if not isinstance(usage, Mapping):
            return cls()
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
        return cls(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), _count(cached))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text it wrote."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        """The arguments as JSON, or the raw text when it does not parse (the tool then refuses it)."""
        if not self.arguments.strip():
            return {}
        try:
            return json.loads(self.arguments)
        except (json.JSONDecodeError, RecursionError):
            return self.arguments


@dataclass(frozen=True)
class ChatResponse:
    """One assistant message and how it was obtained.

    ``attempts`` counts HTTP attempts (retries included), ``latency_s`` is the wall time of
    the request, ``cache_hit`` says it came from the response cache or a batch output file
    (``usage`` is still what the original request cost, so per-trajectory accounting does
    not change on a re-run; the provider's meter counts what was actually spent).
    """

    message: Message
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    id: str = ""
    attempts: int = 1
    latency_s: float = 0.0
    cache_hit: bool = False

    @property
    def content(self) -> str | None:
        value = self.message.get("content")
        return value if isinstance(value, str) else None

    @property
    def tool_calls(self) -> list[ToolCall]:
        calls = []
        for index, raw in enumerate(self.message.get("tool_calls") or []):
            function = raw.get("function") or {}
            arguments = function.get("arguments")
            calls.append(
                ToolCall(
                    id=str(raw.get("id") or f"call_{index}"),
                    name=str(function.get("name", "")),
                    arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
                )
            )
        return calls

    def completion(self, created: int = 0) -> dict[str, Any]:
        """This response as a ``chat.completion`` object (one choice)."""
        usage = self.usage.to_json()
        cached = usage.pop("cached_tokens")
        return {
            "id": self.id or "chatcmpl-envcraft",
            "object": "chat.completion",
            "created": created,
            "model": self.model,
            "choices": [
                {"index": 0, "message": self.message, "finish_reason": self.finish_reason, "logprobs": None}
            ],
            "usage": {**usage, "prompt_tokens_details": {"cached_tokens": cached}},
        }


def parse_completion(body: Any) -> ChatResponse:
    """The first choice of a ``chat.completion`` object; ``LLMError("malformed")`` if it is not one."""
    if not isinstance(body, Mapping):
        raise LLMError("malformed", "the response is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise LLMError("malformed", "the response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise LLMError("malformed", "the response's first choice has no message")
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and (
        not isinstance(tool_calls, list)
        or not all(isinstance(c, Mapping) and isinstance(c.get("function"), Mapping) for c in tool_calls)
    ):
        raise LLMError("malformed", "the response's tool_calls are not a list of function calls")
    return ChatResponse(
        message=assistant_message(message),
        finish_reason=str(choice.get("finish_reason") or "stop"),
        usage=Usage.from_openai(body.get("usage")),
        model=str(body.get("model") or ""),
        id=str(body.get("id") or ""),
    )


def assistant_message(message: Mapping[str, Any]) -> Message:
    """The assistant message as it goes back into the conversation (only the fields the API takes)."""
    out: Message = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": call["function"].get("name"),
                    "arguments": call["function"].get("arguments"),
                },
            }
            for call in calls
        ]
    return out
