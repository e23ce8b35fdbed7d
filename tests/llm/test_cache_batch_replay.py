"""The response cache, the Batch API files, the replay script and the server's protocol edges."""

from __future__ import annotations

import asyncio
import http.client
import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from envcraft.llm import (
    BatchProvider,
    CachedProvider,
    ChatRequest,
    ChatServer,
    LLMError,
    OpenAIProvider,
    ProviderConfig,
    ReplayProvider,
    RetryPolicy,
    ServerFault,
    answer_batch,
)
from envcraft.llm.batch import REQUESTS_FILE, RESPONSES_DIR, custom_id

FAST = RetryPolicy(max_retries=1, backoff_base=0.01, backoff_max=0.02)


def ask(text: str, **fields: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **fields)


def http_provider(server: ChatServer) -> OpenAIProvider:
    return OpenAIProvider(ProviderConfig(model="m", base_url=server.url, retry=FAST, timeout=5.0))


def echo(request: ChatRequest) -> str:
    return "echo: " + str(request.messages[-1]["content"])


def run_all(provider: Any, requests: list[ChatRequest], errors: bool = False) -> list[Any]:
    """Answer ``requests`` concurrently; ``errors`` returns exceptions in place instead of raising."""

    async def main() -> list[Any]:
        try:
            return await asyncio.gather(*(provider.complete(r) for r in requests), return_exceptions=errors)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def answer(requests: Path, output: Path, provider: Any) -> dict[str, int]:
    async def main() -> dict[str, int]:
        try:
            return await answer_batch(requests, output, provider)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def ok_completion(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}], "model": "m"}


# -- the cache --------------------------------------------------------------------------------
def test_a_rerun_over_the_cache_costs_nothing(tmp_path: Path) -> None:
    requests = [ask(f"q{i}", seed=i) for i in range(4)]
    with ChatServer(ReplayProvider([echo] * 8), record=True) as server:
        first = CachedProvider(http_provider(server), tmp_path / "cache")
        answers = run_all(first, requests)
        assert len(server.received) == 4 and first.meter.usage.total_tokens > 0
        again = CachedProvider(http_provider(server), tmp_path / "cache")
        replayed = run_all(again, requests)
        assert len(server.received) == 4  # nothing new reached the model
    assert [a.content for a in replayed] == [a.content for a in answers] == [f"echo: q{i}" for i in range(4)]
    assert all(a.cache_hit for a in replayed) and not any(a.cache_hit for a in answers)
    assert [a.usage for a in replayed] == [a.usage for a in answers]  # trajectories keep their tokens
    assert again.meter.cache_hits == 4 and again.meter.usage.total_tokens == 0  # nothing spent


def test_an_interrupted_job_resumes_where_it_stopped(tmp_path: Path) -> None:
    requests = [ask(f"q{i}") for i in range(6)]

    def dies_on_q3(request: ChatRequest) -> Any:
        return ServerFault(400, "killed") if request.messages[0]["content"] == "q3" else echo(request)

    script = ReplayProvider([dies_on_q3] * 4)
    with ChatServer(script, record=True) as server:
        first = run_all(CachedProvider(http_provider(server), tmp_path), requests[:4], errors=True)
    assert [type(x).__name__ for x in first] == ["ChatResponse"] * 3 + ["LLMError"]
    assert len(list(tmp_path.glob("*/*.json"))) == 3  # the answered ones landed, whole
    with ChatServer(ReplayProvider([echo] * 3), record=True) as server:
        done = run_all(CachedProvider(http_provider(server), tmp_path), requests)
        assert sorted(b["messages"][0]["content"] for b in server.received) == ["q3", "q4", "q5"]
    assert [d.content for d in done] == [f"echo: q{i}" for i in range(6)]


def test_identical_requests_in_flight_are_sent_once(tmp_path: Path) -> None:
    class Slow(ReplayProvider):
        async def complete(self, request: ChatRequest) -> Any:
            await asyncio.sleep(0.2)
            return await super().complete(request)

    inner = Slow(["only once"])
    cached = CachedProvider(inner, tmp_path)
    answers = run_all(cached, [ask("same")] * 5)
    assert len(inner.requests) == 1 and {a.content for a in answers} == {"only once"}
    assert sum(a.cache_hit for a in answers) == 4


def test_errors_are_not_cached_and_junk_entries_are_misses(tmp_path: Path) -> None:
    inner = ReplayProvider([LLMError("server", "boom"), "second try"])
    cached = CachedProvider(inner, tmp_path)
    with pytest.raises(LLMError):
        run_all(cached, [ask("x")])
    assert run_all(cached, [ask("x")])[0].content == "second try"
    entry = cached.cache.path(ask("x").key("replay"))
    entry.write_text("{not json", encoding="utf-8")
    inner.script.append("third")
    assert run_all(cached, [ask("x")])[0].content == "third"
    assert (
        json.loads(entry.read_text(encoding="utf-8"))["completion"]["choices"][0]["message"]["content"]
        == "third"
    )


def test_the_key_depends_on_content_not_on_who_asks() -> None:
    a = ask("hello", seed=1)
    assert a.key("m") == ask("hello", seed=1).key("m")
    assert (
        len(
            {
                a.key("m"),
                a.key("other"),
                ask("hello", seed=2).key("m"),
                ask("hello", seed=1, user="r#1").key("m"),
            }
        )
        == 4
    )


# -- the batch files --------------------------------------------------------------------------
def test_batch_requests_then_answers_then_continue(tmp_path: Path) -> None:
    batch = BatchProvider(tmp_path, "gpt-batch")
    requests = [ask("summarize A"), ask("summarize B")]
    for request in requests:
        with pytest.raises(LLMError) as caught:
            asyncio.run(batch.complete(request))
        assert caught.value.kind == "pending"
    lines = [json.loads(x) for x in (tmp_path / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [(x["method"], x["url"], x["body"]["model"]) for x in lines] == [
        ("POST", "/v1/chat/completions", "gpt-batch")
    ] * 2
    assert [x["custom_id"] for x in lines] == [r.key("gpt-batch") for r in requests]
    assert batch.pending == 2
    # any model answers the file over the real protocol, in the Batch API's output format
    with ChatServer(ReplayProvider([echo, echo])) as server:
        counts = answer(
            tmp_path / REQUESTS_FILE, tmp_path / RESPONSES_DIR / "out.jsonl", http_provider(server)
        )
    assert counts == {"answered": 2, "failed": 0, "skipped": 0}
    output = [json.loads(x) for x in (tmp_path / RESPONSES_DIR / "out.jsonl").read_text().splitlines()]
    assert {x["response"]["status_code"] for x in output} == {200}
    again = BatchProvider(tmp_path, "gpt-batch")
    assert again.pending == 0 and (tmp_path / REQUESTS_FILE).read_text() == ""
    answers = [asyncio.run(again.complete(r)) for r in requests]
    assert [a.content for a in answers] == ["echo: summarize A", "echo: summarize B"]
    assert all(a.cache_hit for a in answers)


def test_answer_batch_sends_as_its_model_and_can_leave_retryable_failures_waiting(tmp_path: Path) -> None:
    for request in (ask("a"), ask("b")):
        with pytest.raises(LLMError):
            asyncio.run(BatchProvider(tmp_path, "gpt-batch").complete(request))

    def busy_on_b(request: ChatRequest) -> Any:
        return ServerFault(503, "busy") if request.messages[0]["content"] == "b" else echo(request)

    async def main(provider: OpenAIProvider) -> dict[str, int]:
        try:
            output = tmp_path / RESPONSES_DIR / "out.jsonl"
            return await answer_batch(
                tmp_path / REQUESTS_FILE, output, provider, model="local", skip_retryable=True
            )
        finally:
            await provider.aclose()

    with ChatServer(ReplayProvider([busy_on_b] * 4), record=True) as server:
        counts = asyncio.run(main(http_provider(server)))
        assert {body["model"] for body in server.received} == {"local"}
    assert counts == {"answered": 1, "failed": 0, "skipped": 1}
    again = BatchProvider(tmp_path, "gpt-batch")
    assert again.pending == 1 and asyncio.run(again.complete(ask("a"))).content == "echo: a"


def test_the_waiting_message_says_what_to_do_and_when_to_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = BatchProvider(tmp_path, "m")
    for text in ("a", "b"):
        with pytest.raises(LLMError):
            asyncio.run(batch.complete(ask(text)))
    said = batch.what_to_do()
    assert said.startswith(f"2 requests wait for their answers: submit {tmp_path / REQUESTS_FILE}")
    assert f"{tmp_path / RESPONSES_DIR}/" in said and "split" not in said
    monkeypatch.setattr("envcraft.llm.batch.MAX_LINES", 1)
    assert "split it first: a batch takes at most 1 requests" in batch.what_to_do()


def test_batch_error_lines_raise_with_their_status_and_expired_ones_wait_again(tmp_path: Path) -> None:
    request = ask("too long")
    key = request.key("m")
    error_line = {
        "id": "batch_req_1",
        "custom_id": key,
        "response": {"status_code": 400, "body": {"error": {"message": "context length exceeded"}}},
        "error": None,
    }
    (tmp_path / RESPONSES_DIR).mkdir()
    (tmp_path / RESPONSES_DIR / "errors.jsonl").write_text(json.dumps(error_line) + "\n\n", encoding="utf-8")
    with pytest.raises(LLMError) as caught:
        asyncio.run(BatchProvider(tmp_path, "m").complete(request))
    assert caught.value.kind == "bad_request" and caught.value.status == 400
    assert "context length" in caught.value.message
    # an expired request (or a 429 / 5xx) is no answer: it waits again, for the next round
    expired = {"custom_id": key, "response": None, "error": {"code": "batch_expired", "message": "expired"}}
    busy = {"custom_id": key, "response": {"status_code": 503, "body": {"error": {"message": "busy"}}}}
    for line in (expired, busy):
        (tmp_path / RESPONSES_DIR / "errors.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
        batch = BatchProvider(tmp_path, "m")
        with pytest.raises(LLMError) as caught:
            asyncio.run(batch.complete(request))
        assert caught.value.kind == "pending" and batch.pending == 1
        assert json.loads((tmp_path / REQUESTS_FILE).read_text(encoding="utf-8"))["custom_id"] == key
    answered = {"custom_id": key, "response": {"status_code": 200, "body": ok_completion("late")}}
    (tmp_path / RESPONSES_DIR / "retry.jsonl").write_text(json.dumps(answered) + "\n", encoding="utf-8")
    batch = BatchProvider(tmp_path, "m")
    assert batch.pending == 0 and asyncio.run(batch.complete(request)).content == "late"


def test_a_malformed_output_line_is_one_error_and_rewrites_nothing(tmp_path: Path) -> None:
    request = ask("q")
    with pytest.raises(LLMError):
        asyncio.run(BatchProvider(tmp_path, "m").complete(request))
    waiting = (tmp_path / REQUESTS_FILE).read_bytes()
    no_choices = {"custom_id": "x", "response": {"status_code": 200, "body": {}}}
    cases = {
        "{torn": "line 2: not a JSON line",
        "[1, 2]": "line 2: not a JSON object",
        json.dumps(
            {"response": {"status_code": 200, "body": {}}}
        ): "line 2: a Batch API output line needs a custom_id",
        json.dumps(no_choices): "line 2: the response has no choices",
        json.dumps(
            {"custom_id": "x", "response": None, "error": None}
        ): "line 2: batch output line without a response",
    }
    (tmp_path / RESPONSES_DIR).mkdir(exist_ok=True)
    for line, message in cases.items():
        (tmp_path / RESPONSES_DIR / "out.jsonl").write_text("\n" + line + "\n", encoding="utf-8")
        with pytest.raises(LLMError) as caught:
            BatchProvider(tmp_path, "m")
        assert caught.value.kind == "malformed" and message in caught.value.message, caught.value.message
        assert "\n" not in str(caught.value) and str(tmp_path / RESPONSES_DIR / "out.jsonl") in str(
            caught.value
        )
        assert (tmp_path / REQUESTS_FILE).read_bytes() == waiting  # the waiting request is not lost
    (tmp_path / RESPONSES_DIR / "out.jsonl").write_bytes(b"\xff\xfe\n")
    with pytest.raises(LLMError, match="not UTF-8"):
        BatchProvider(tmp_path, "m")


def test_a_stable_id_finds_a_later_step_whatever_its_content(tmp_path: Path) -> None:
    """A step named by its rollout and index keeps its custom_id when a tool result differs
    between runs; a change of the fixed parts (model, tools, sampling, first messages) does not."""
    head = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]

    def step(tool_text: str, **fields: Any) -> ChatRequest:
        messages = [*head, {"role": "assistant", "content": "x"}, {"role": "user", "content": tool_text}]
        return ChatRequest(messages=messages, stable_id="task#0/1", user="task#0", **fields)

    assert custom_id(step("/tmp/a"), "m") == custom_id(step("/tmp/b"), "m")
    assert len(custom_id(step("/tmp/a"), "m")) == 64
    assert (
        len(
            {
                custom_id(step("/tmp/a"), "m"),
                custom_id(step("/tmp/a"), "other"),
                custom_id(step("/tmp/a", seed=1), "m"),
                custom_id(replace(step("/tmp/a"), stable_id="task#0/2"), "m"),
                custom_id(replace(step("/tmp/a"), messages=[head[0], {"role": "user", "content": "v"}]), "m"),
                custom_id(replace(step("/tmp/a"), stable_id=None), "m"),
            }
        )
        == 6
    )
    assert custom_id(ask("q"), "m") == ask("q").key("m")  # without a stable id: the content key


def test_a_conversation_takes_one_round_per_model_turn(tmp_path: Path) -> None:
    async def conversation(provider: Any) -> str:
        first = await provider.complete(ask("step 1"))
        messages = [
            {"role": "user", "content": "step 1"},
            first.message,
            {"role": "user", "content": "step 2"},
        ]
        second = await provider.complete(ChatRequest(messages=messages))
        return str(second.content)

    rounds = 0
    while True:
        rounds += 1
        batch = BatchProvider(tmp_path, "m")
        try:
            result = asyncio.run(conversation(batch))
            break
        except LLMError as exc:
            assert exc.kind == "pending" and batch.pending == 1
        answer(
            tmp_path / REQUESTS_FILE, tmp_path / RESPONSES_DIR / f"r{rounds}.jsonl", ReplayProvider([echo])
        )
    assert result == "echo: step 2" and rounds == 3


# -- the replay script ------------------------------------------------------------------------
def test_replay_answers_in_order_and_records_requests(tmp_path: Path) -> None:
    call = {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}
    replay = ReplayProvider(["text", call, echo, LLMError("rate_limit", "scripted")])
    first, second, third = (asyncio.run(replay.complete(ask(f"r{i}"))) for i in range(3))
    assert first.content == "text" and first.finish_reason == "stop"
    assert second.tool_calls[0].name == "f" and second.finish_reason == "tool_calls"
    assert third.content == "echo: r2"
    with pytest.raises(LLMError, match="scripted"):
        asyncio.run(replay.complete(ask("r3")))
    with pytest.raises(LLMError) as caught:
        asyncio.run(replay.complete(ask("r4")))
    assert caught.value.kind == "exhausted"
    assert [r.messages[0]["content"] for r in replay.requests] == ["r0", "r1", "r2", "r3", "r4"]
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0  # estimated


def test_replay_from_a_cache_or_completion_file(tmp_path: Path) -> None:
    cached = CachedProvider(ReplayProvider(["one", "two"]), tmp_path / "cache")
    run_all(cached, [ask("a")])
    run_all(cached, [ask("b")])
    entries = sorted(tmp_path.glob("cache/*/*.json"))
    script = tmp_path / "script.jsonl"
    script.write_text("".join(p.read_text() + "\n" for p in entries), encoding="utf-8")
    replay = ReplayProvider.from_jsonl(script)
    assert sorted(str(asyncio.run(replay.complete(ask("?"))).content) for _ in entries) == ["one", "two"]


# -- the server's protocol edges --------------------------------------------------------------
def _raw(server: ChatServer, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    url = urlparse(server.url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=5)
    connection.request(method, path, body=body, headers={"content-type": "application/json"})
    reply = connection.getresponse()
    payload = json.loads(reply.read())
    connection.close()
    return reply.status, payload


def test_server_refuses_bad_requests_with_openai_error_bodies() -> None:
    with ChatServer(ReplayProvider(["x"])) as server:
        assert _raw(server, "POST", "/v1/chat/completions", b"{nope")[0] == 400
        status, payload = _raw(server, "POST", "/v1/chat/completions", b'{"model": "m", "messages": []}')
        assert status == 400 and "messages" in payload["error"]["message"]
        streamed = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True})
        assert _raw(server, "POST", "/v1/chat/completions", streamed.encode())[0] == 400
        assert _raw(server, "GET", "/v1/nothing")[0] == 404
        status, models = _raw(server, "GET", "/v1/models")
        assert status == 200 and models["data"][0]["id"] == "replay"
        good = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
        status, done = _raw(server, "POST", "/v1/chat/completions", good)
        assert status == 200 and done["object"] == "chat.completion"
        assert done["choices"][0]["message"]["content"] == "x" and done["usage"]["total_tokens"] > 0
