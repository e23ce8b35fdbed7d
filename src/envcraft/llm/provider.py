"""The one interface every model sits behind, and what it spent.

A :class:`Provider` answers a :class:`~envcraft.llm.types.ChatRequest` with a
:class:`~envcraft.llm.types.ChatResponse` or raises :class:`~envcraft.llm.types.LLMError`.
The OpenAI-compatible client, the response cache, the batch files, the replay script, the
offline SmolLM2 model and the built-in oracle and random policies are all providers, so the
rollout loop, the rubric and the synthesis engine never know which one they talk to.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from envcraft.llm.types import ChatRequest, ChatResponse, Usage


@dataclass
class UsageMeter:
    """Running totals of one provider: what was asked, served from cache, retried and spent.

    ``usage`` sums only requests that reached a model (cache hits cost nothing), so a re-run
    over a warm cache shows zero spent tokens while its trajectories still report theirs.
    """

    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    usage: Usage = field(default_factory=Usage)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, response: ChatResponse) -> None:
        with self._lock:
            self.requests += 1
            self.retries += max(0, response.attempts - 1)
            if response.cache_hit:
                self.cache_hits += 1
            else:
                self.usage = self.usage + response.usage

    def record_error(self, attempts: int = 1) -> None:
        with self._lock:
            self.requests += 1
            self.errors += 1
            self.retries += max(0, attempts - 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "errors": self.errors,
            **self.usage.to_json(),
        }


class Provider(ABC):
    """A model behind the chat-completions interface (see the module docstring).

    ``model`` is the name requests without one are sent with; ``meter`` keeps the totals.
    Use as an async context manager or call :meth:`aclose`.
    """

    model: str

    def __init__(self, model: str) -> None:
        self.model = model
        self.meter = UsageMeter()

    @abstractmethod
    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request; ``LLMError`` when no response could be had."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, a no-op for most providers
        """Release connections (nothing to release by default)."""

    async def __aenter__(self) -> Provider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
