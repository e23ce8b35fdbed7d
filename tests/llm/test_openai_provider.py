"""OpenAIProvider against a real local HTTP server speaking chat completions (no mocked SDK)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import pytest

from envcraft.llm import (
    ChatRequest,
    ChatServer,
    LLMError,
    OpenAIProvider,
    ProviderConfig,
    ReplayProvider,
    RetryPolicy,
    Secret,
    ServerFault,
)
from envcraft.llm.openai_compat import retry_after

KEY = "sk-test-SECRET-4f1c9a77"
FAST = RetryPolicy(max_retries=2, backoff_base=0.01, backoff_max=0.05)
TOOL = {
    "type": "function",
    "function": {
        "name": "get_order",
        "description": "Look up an order.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_order", "arguments": '{"order_id": "O-7"}'},
        }
    ],
}


def ask(text: str = "where is my order?", **fields: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **fields)


def provider(server: ChatServer, **options: Any) -> OpenAIProvider:
    config = dict(model="test-model", base_url=server.url, api_key=Secret(KEY), retry=FAST, timeout=5.0)
    config.update(options)
    return OpenAIProvider(ProviderConfig(**config))


def run(coro: Any, client: OpenAIProvider | None = None) -> Any:
    """Run ``coro`` in a fresh loop and close ``client``'s connections in that same loop."""

    async def main() -> Any:
        try:
            return await coro
        finally:
            if client is not None:
                await client.aclose()

    return asyncio.run(main())


def completion(message: dict[str, Any], prompt: int, completion_tokens: int, cached: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def test_tool_calls_usage_and_the_request_on_the_wire() -> None:
    script = ReplayProvider([completion(CALL, 120, 17, 64)])
    with ChatServer(script, api_key=KEY, record=True) as server:
        client = provider(server)
        request = ask(tools=[TOOL], seed=7, temperature=0.5, user="task-1#0", max_tokens=256)
        response = run(client.complete(request), client)
    assert [(c.id, c.name, c.parsed_arguments()) for c in response.tool_calls] == [
        ("call_1", "get_order", {"order_id": "O-7"})
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.cached_tokens) == (
        120,
        17,
        64,
    )
    assert response.attempts == 1 and not response.cache_hit
    (body,) = server.received
    assert body["model"] == "test-model"
    assert body["tools"] == [TOOL]
    assert (body["seed"], body["temperature"], body["user"], body["max_tokens"]) == (7, 0.5, "task-1#0", 256)
    assert client.meter.usage.total_tokens == 137 and client.meter.requests == 1


def test_a_wrong_key_is_refused_once_and_never_echoed() -> None:
    with ChatServer(ReplayProvider(["hi"]), api_key="sk-the-right-one", record=True) as server:
        client = provider(server)
        with pytest.raises(LLMError) as caught:
            run(client.complete(ask()), client)
    assert caught.value.kind == "auth" and caught.value.status == 401
    assert caught.value.attempts == 1  # an auth error is not retried
    assert KEY not in str(caught.value)
    assert server.received == []


def test_429_waits_what_retry_after_asks_then_succeeds() -> None:
    fault = ServerFault(429, "slow down", headers={"retry-after": "1"})
    with ChatServer(ReplayProvider([fault, "ok"])) as server:
        client = provider(server, retry=RetryPolicy(max_retries=3, backoff_base=0.0, backoff_max=0.0))
        started = time.perf_counter()
        response = run(client.complete(ask()), client)
        waited = time.perf_counter() - started
    assert response.content == "ok"
    assert response.attempts == 2 and client.meter.retries == 1
    assert waited >= 1.0  # backoff alone would have been 0 s


def test_retry_after_ms_is_preferred_and_capped() -> None:
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert retry_after({"retry-after": "soon"}) is None
    fault = ServerFault(429, headers={"retry-after": "30"})
    with ChatServer(ReplayProvider([fault, "ok"])) as server:
        policy = RetryPolicy(max_retries=1, backoff_base=0.0, backoff_max=0.0, retry_after_max=0.2)
        started = time.perf_counter()
        client = provider(server, retry=policy)
        assert run(client.complete(ask()), client).content == "ok"
        assert time.perf_counter() - started < 10  # capped at retry_after_max, not 30 s


def test_5xx_is_retried_a_bounded_number_of_times() -> None:
    faults = [ServerFault(503, "overloaded") for _ in range(5)]
    with ChatServer(ReplayProvider(faults), record=True) as server:
        client = provider(server)
        with pytest.raises(LLMError) as caught:
            run(client.complete(ask()), client)
    assert caught.value.kind == "server" and caught.value.status == 503
    assert caught.value.attempts == 3 and len(server.received) == 3  # 1 + max_retries
    assert client.meter.errors == 1 and client.meter.retries == 2


def test_a_server_error_then_success_counts_the_retry() -> None:
    with ChatServer(ReplayProvider([ServerFault(500), ServerFault(502), "fine"])) as server:
        client = provider(server)
        response = run(client.complete(ask()), client)
    assert response.content == "fine" and response.attempts == 3


def test_a_bad_request_is_not_retried() -> None:
    script = ReplayProvider([ServerFault(400, "bad tool schema"), "never"])
    with ChatServer(script, record=True) as server, pytest.raises(LLMError) as caught:
        client = provider(server)
        run(client.complete(ask()), client)
    assert caught.value.kind == "bad_request" and "bad tool schema" in caught.value.message
    assert len(server.received) == 1


def test_a_timeout_is_retried() -> None:
    class FirstIsSlow(ReplayProvider):
        async def complete(self, request: ChatRequest) -> Any:
            if not self.requests:
                self.requests.append(request)  # takes the "late" answer's place
                await asyncio.sleep(3.0)
            return await super().complete(request)

    with ChatServer(FirstIsSlow(["late", "in time"])) as server:
        client = provider(server, timeout=0.5)
        response = run(client.complete(ask()), client)
    assert response.attempts == 2 and response.content == "in time"


def test_a_refused_connection_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIProvider(ProviderConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", retry=FAST))
    with pytest.raises(LLMError) as caught:
        run(client.complete(ask()), client)
    assert caught.value.kind == "connection" and caught.value.attempts == 3


@pytest.mark.parametrize("cap", [3, 12])
def test_the_concurrency_cap_bounds_requests_in_flight(cap: int) -> None:
    class Sleepy(ReplayProvider):
        async def complete(self, request: ChatRequest) -> Any:
            await asyncio.sleep(0.3)
            return await super().complete(request)

    with ChatServer(Sleepy(["ok"] * 12)) as server:
        client = provider(server, concurrency=cap)

        async def many() -> list[Any]:
            return await asyncio.gather(*(client.complete(ask(f"q{i}")) for i in range(12)))

        answers = run(many(), client)
    assert len(answers) == 12
    assert server.max_in_flight <= cap
    if cap == 12:
        assert server.max_in_flight > 3  # the cap, not the server, bounded the first case


def test_config_from_flags_then_environment() -> None:
    env = {"ENVCRAFT_MODEL": "env-model", "ENVCRAFT_BASE_URL": "http://h:1/v1", "OPENAI_API_KEY": KEY}
    config = ProviderConfig.resolve(env=env)
    assert (config.model, config.base_url) == ("env-model", "http://h:1/v1")
    assert config.api_key is not None and config.api_key.reveal() == KEY
    assert KEY not in repr(config) and KEY not in str(config)
    flagged = ProviderConfig.resolve("flag-model", "http://other:2/v1", api_key="k2", env=env)
    assert (flagged.model, flagged.base_url) == ("flag-model", "http://other:2/v1")
    assert flagged.api_key is not None and flagged.api_key.reveal() == "k2"
    with pytest.raises(LLMError, match="no model"):
        ProviderConfig.resolve(env={})
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        ProviderConfig.resolve("m", env={})
    local = ProviderConfig.resolve("m", "http://localhost:8000/v1", env={})
    assert local.api_key is None  # a key-less local server


def test_the_key_never_reaches_a_log_line_an_error_or_a_response(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    echo = ServerFault(401, f"Incorrect API key provided: {KEY}")  # servers do quote keys back
    script = [ServerFault(429, headers={"retry-after": "0"}), ServerFault(500), "ok", echo]
    with ChatServer(ReplayProvider(script)) as server:
        client = provider(server)
        response = run(client.complete(ask()))
        with pytest.raises(LLMError) as caught:
            run(client.complete(ask()), client)
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert KEY not in repr(response) and KEY not in repr(client) and KEY not in repr(client.config)
    assert caplog.records, "debug logging was on: the client did log"
    assert KEY not in caplog.text
