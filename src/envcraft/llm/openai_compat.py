"""Any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, OpenAI) through the ``openai`` SDK.

The model, base URL and key come from arguments, else ``ENVCRAFT_MODEL``,
``ENVCRAFT_BASE_URL`` and ``OPENAI_API_KEY``. The SDK's own retries are off: this provider
retries a bounded number of times itself, on 429 (waiting what ``retry-after-ms`` /
``retry-after`` ask, up to a cap), 5xx, timeouts and dropped connections, with exponential
backoff and full jitter, so the attempts are counted in the response and the meter. A
semaphore caps the requests in flight.

The key is held in a :class:`Secret` (its repr is masked) and is never part of a request
body, a cache key, a response, an error message or a log line: error texts from the server
are scrubbed of it before they are raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, ChatResponse, ErrorKind, LLMError, parse_completion

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

MODEL_ENV = "ENVCRAFT_MODEL"
BASE_URL_ENV = "ENVCRAFT_BASE_URL"
API_KEY_ENV = "OPENAI_API_KEY"
# What a key-less local server (vLLM, SGLang, Ollama) is sent: the SDK insists on some key.
NO_KEY = "EMPTY"


class Secret:
    """A string that does not show itself: ``repr``/``str`` are masked, :meth:`reveal` gives it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the secret masked."""
        return text.replace(self._value, "***") if len(self._value) >= 4 else text

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a request that may succeed later."""

    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    # A server may ask for a longer pause than backoff_max; never wait longer than this.
    retry_after_max: float = 60.0

    def backoff(self, retry: int, rng: random.Random) -> float:
        """Full jitter: uniform in [0, min(max, base * 2**retry)]."""
        return rng.uniform(0.0, min(self.backoff_max, self.backoff_base * (2**retry)))


@dataclass(frozen=True)
class ProviderConfig:
    """Where the model is and how to talk to it (see the module docstring for the sources)."""

    model: str
    base_url: str | None = None
    api_key: Secret | None = field(default=None)
    timeout: float = 120.0
    concurrency: int = 16
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def resolve(
        cls,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        env: Mapping[str, str] | None = None,
        **options: Any,
    ) -> ProviderConfig:
        """Arguments first, then the environment variables; ``LLMError`` when there is no model."""
        source = os.environ if env is None else env
        chosen = model or source.get(MODEL_ENV, "").strip()
        if not chosen:
            raise LLMError("bad_request", f"no model: pass --model or set {MODEL_ENV}")
        url = base_url or source.get(BASE_URL_ENV, "").strip() or None
        key = api_key or source.get(API_KEY_ENV, "").strip() or None
        if key is None and url is None:
            raise LLMError("auth", f"no API key for the OpenAI API: set {API_KEY_ENV} or pass --base-url")
        return cls(model=chosen, base_url=url, api_key=Secret(key) if key else None, **options)


class OpenAIProvider(Provider):
    """Chat completions over HTTP through ``openai.AsyncOpenAI`` (see the module docstring)."""

    def __init__(self, config: ProviderConfig) -> None:
        super().__init__(config.model)
        self.config = config
        self._key = config.api_key or Secret(NO_KEY)
        self._rng = random.Random()
        # One client and one semaphore per event loop: both are bound to the loop they were made in.
        self._clients: dict[asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, asyncio.Semaphore]] = {}

    @classmethod
    def from_env(
        cls, model: str | None = None, base_url: str | None = None, **options: Any
    ) -> OpenAIProvider:
        return cls(ProviderConfig.resolve(model, base_url, **options))

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.config.base_url!r})"

    def _client(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        import openai  # here, not at the top: importing the SDK takes a second, and most commands never do

        loop = asyncio.get_running_loop()
        found = self._clients.get(loop)
        if found is None:
            for stale in [other for other in self._clients if other.is_closed()]:
                del self._clients[stale]
            client = openai.AsyncOpenAI(
                api_key=self._key.reveal(),
                base_url=self.config.base_url,
                timeout=self.config.timeout,
                max_retries=0,
            )
            found = self._clients[loop] = (client, asyncio.Semaphore(self.config.concurrency))
        return found

    async def complete(self, request: ChatRequest) -> ChatResponse:
        import openai

        body = request.body(self.model)
        client, slots = self._client()
        policy = self.config.retry
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                async with slots:
                    completion = await client.chat.completions.create(**_sdk_arguments(body))
                response = parse_completion(completion.model_dump(mode="json"))
            except LLMError as exc:
                exc.attempts = attempt
                self.meter.record_error(attempt)
                raise
            except openai.APIError as exc:
                error = self._error(exc, attempt)
                if not error.retryable or attempt > policy.max_retries:
                    self.meter.record_error(attempt)
                    raise error from None
                delay = self._delay(exc, attempt - 1)
                log.info(
                    "%s: %s; retry %d of %d in %.2fs", self.model, error, attempt, policy.max_retries, delay
                )
                await asyncio.sleep(delay)
                continue
            response = replace(response, attempts=attempt, latency_s=time.perf_counter() - started)
            self.meter.record(response)
            return response

    def _error(self, exc: openai.APIError, attempt: int) -> LLMError:
        import openai

        kind: ErrorKind
        status = getattr(exc, "status_code", None)
        if isinstance(exc, openai.APITimeoutError):
            kind = "timeout"
        elif isinstance(exc, openai.APIConnectionError):
            kind = "connection"
        elif status == 429:
            kind = "rate_limit"
        elif status is not None and status >= 500:
            kind = "server"
        elif status in (401, 403):
            kind = "auth"
        else:
            kind = "bad_request"
        message = self._key.scrub(_message(exc))
        return LLMError(kind, message, status=status, attempts=attempt)

    def _delay(self, exc: openai.APIError, retry: int) -> float:
        policy = self.config.retry
        asked = retry_after(getattr(getattr(exc, "response", None), "headers", None))
        if asked is not None:
            return min(asked, policy.retry_after_max)
        return policy.backoff(retry, self._rng)

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client, _ in clients.values():
            with contextlib.suppress(RuntimeError):  # its loop is gone; nothing is left to release
                await client.close()


def _sdk_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """The SDK's keyword arguments for a request body (fields it does not type go in ``extra_body``)."""
    arguments = dict(body)
    extra = {k: arguments.pop(k) for k in list(arguments) if k not in _SDK_FIELDS}
    if extra:
        arguments["extra_body"] = extra
    return arguments


_SDK_FIELDS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "temperature",
        "top_p",
        "max_tokens",
        "seed",
        "tool_choice",
        "response_format",
        "user",
        "stop",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logprobs",
        "top_logprobs",
        "parallel_tool_calls",
        "max_completion_tokens",
    }
)


def _message(exc: openai.APIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return inner["message"][:500]
    return str(getattr(exc, "message", exc))[:500]


def retry_after(headers: Any) -> float | None:
    """Seconds a server asked to wait: ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
