"""A scripted model for tests: answers in order, records what it was asked.

Each script entry is one answer: a string (an assistant text), an assistant message dict, a
``chat.completion`` object, a :class:`ChatResponse`, an exception to raise (an
:class:`LLMError`, or a :class:`~envcraft.llm.server.ServerFault` when served), or a
callable ``(request) -> any of these`` (a policy). :meth:`ReplayProvider.from_jsonl` reads a
script of ``chat.completion`` objects (or ``{"completion": ...}`` entries, as the response
cache stores them) from a file. Served behind :class:`envcraft.llm.server.ChatServer`, a
script answers over the real protocol.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError, Usage, assistant_message, parse_completion

Answer = str | Mapping[str, Any] | ChatResponse | Exception
ScriptEntry = Answer | Callable[[ChatRequest], Answer]


class ReplayProvider(Provider):
    """Answers ``script`` one entry per request; ``LLMError("exhausted")`` after the last one."""

    def __init__(self, script: Iterable[ScriptEntry], model: str = "replay") -> None:
        super().__init__(model)
        self.script = list(script)
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    @classmethod
    def from_jsonl(cls, path: str | Path, model: str = "replay") -> ReplayProvider:
        script: list[ScriptEntry] = []
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                value = json.loads(line)
                script.append(
                    value["completion"] if isinstance(value, dict) and "completion" in value else value
                )
        return cls(script, model)

    @property
    def remaining(self) -> int:
        return len(self.script) - len(self.requests)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)
        if index >= len(self.script):
            self.meter.record_error()
            raise LLMError(
                "exhausted", f"the replay script has {len(self.script)} answers; request {index + 1}"
            )
        entry = self.script[index]
        answer = entry(request) if callable(entry) else entry
        if isinstance(answer, Exception):
            self.meter.record_error()
            raise answer
        response = to_response(answer, request, self.model)
        self.meter.record(response)
        return response


def to_response(answer: Answer, request: ChatRequest, model: str) -> ChatResponse:
    """One script answer as a :class:`ChatResponse`.

    An answer without usage gets estimated token counts (4 characters a token), so token
    limits and accounting can be exercised without a tokenizer.
    """
    if isinstance(answer, ChatResponse):
        return answer
    if isinstance(answer, str):
        message: dict[str, Any] = {"role": "assistant", "content": answer}
    elif isinstance(answer, Mapping) and "choices" in answer:
        return parse_completion(answer)
    elif isinstance(answer, Mapping):
        message = assistant_message(answer)
    else:
        raise LLMError("malformed", f"a replay answer cannot be a {type(answer).__name__}")
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    prompt = estimate_tokens([*request.messages, *request.tools])
    usage = Usage(prompt, estimate_tokens(message), 0)
    return ChatResponse(message=message, finish_reason=finish, usage=usage, model=request.model or model)


def estimate_tokens(value: Any) -> int:
    """A rough token count of a JSON value (4 characters a token, at least 1)."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)
