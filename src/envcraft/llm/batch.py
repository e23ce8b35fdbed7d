"""Requests as OpenAI Batch API files: write them now, continue when the answers are there.

:class:`BatchProvider` answers a request from the Batch API *output* files found in
``DIR/responses/`` (any ``*.jsonl``: output and error files alike), matched by
``custom_id`` (:func:`custom_id`: the request's content key, or for a request with a
``stable_id`` a key of that name and the request's fixed parts). A request with no answer yet
is appended to ``DIR/requests.jsonl`` as a Batch API *input* line (``{"custom_id", "method":
"POST", "url": "/v1/chat/completions", "body"}``) and raises ``LLMError("pending")``, so a job
collects every request of a round, stops, and picks up where it was once the output file is
in place: upload ``requests.jsonl`` to the Batch API (or answer it with any model:
:func:`answer_batch`), put the output file in ``DIR/responses/`` and run the job again.
A conversation that needs several model turns takes one round per turn. A stage that runs
many conversations (``eval``, ``tasks calibrate``, ``tasks inspect``) lets each one run
until it waits and then raises :class:`BatchPending` with how many wait.

An error line that another try may not have (``batch_expired``, a 429, a 5xx) answers
nothing: the request waits again and goes out with the next round. An output line that is
not a Batch API output line (torn JSON, no ``custom_id``, a 200
whose body is not a chat completion) stops the provider from opening with a one-line
``LLMError("malformed")`` naming the file and line, before anything is rewritten: a
hand-made or damaged file is reported, never half-read. ``requests.jsonl`` always lists just
the requests still waiting (answered ones are dropped when the provider opens the
directory). One process at a time uses a batch directory. The Batch API takes at most 50,000
requests and 200 MB per file: split a larger ``requests.jsonl`` (the waiting message says so).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import (
    ChatRequest,
    ChatResponse,
    ErrorKind,
    LLMError,
    content_key,
    parse_completion,
)

REQUESTS_FILE = "requests.jsonl"
RESPONSES_DIR = "responses"
ENDPOINT = "/v1/chat/completions"
# What one Batch API input file may hold (OpenAI's limits).
MAX_LINES = 50_000
MAX_BYTES = 200 * 10**6


# The request fields a stable id is qualified with: all but the conversation's later messages.
ANCHOR_MESSAGES = 2


def custom_id(request: ChatRequest, model: str) -> str:
    """The ``custom_id`` of ``request`` in the batch files (64 hex characters either way).

    Without a ``stable_id`` it is the content key. With one, the key of that name and the
    request's fixed parts (model, tools, sampling fields, ``user`` and the first messages: the
    system prompt and the first user turn), so the answers of one configuration never answer
    another's, while a later step is found again whatever its tool results say.
    """
    if request.stable_id is None:
        return request.key(model)
    body = request.body(model)
    anchor = {**body, "messages": body["messages"][:ANCHOR_MESSAGES]}
    return content_key({"stable_id": request.stable_id, "anchor": anchor})


class BatchPending(Exception):
    """A stage stopped with ``waiting`` units of work (rollouts, tasks) waiting for batch answers.

    Raised once every other unit is done (and written), so a re-run redoes only the waiting ones.
    """

    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} wait for batch answers")
        self.waiting = waiting


class BatchProvider(Provider):
    """Answers from Batch API output files, queues the rest (see the module docstring)."""

    def __init__(self, directory: str | Path, model: str) -> None:
        super().__init__(model)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / RESPONSES_DIR).mkdir(exist_ok=True)
        self._answers: dict[str, dict[str, Any]] = {}
        self._waiting: dict[str, dict[str, Any]] = {}
        self.reload()

    @property
    def requests_path(self) -> Path:
        return self.directory / REQUESTS_FILE

    @property
    def pending(self) -> int:
        """How many requests wait for an answer in ``requests.jsonl``."""
        return len(self._waiting)

    def what_to_do(self) -> str:
        """One line: how many requests wait, where they are and what the user does next."""
        count = (
            "1 request waits for its answer"
            if self.pending == 1
            else f"{self.pending} requests wait for their answers"
        )
        size = self.requests_path.stat().st_size if self.requests_path.is_file() else 0
        split = (
            f" (split it first: a batch takes at most {MAX_LINES:,} requests and {MAX_BYTES // 10**6} MB)"
            if self.pending > MAX_LINES or size > MAX_BYTES
            else ""
        )
        return (
            f"{count}: submit {self.requests_path} to the Batch "
            f"API{split} (or answer it with any model), put the output file(s) in "
            f"{self.directory / RESPONSES_DIR}/ and run the same command again"
        )

    def to_json(self) -> dict[str, Any]:
        """Where the round stands (the ``--json`` answer of a stage that waits)."""
        return {
            "requests": self.pending,
            "requests_file": str(self.requests_path),
            "responses_dir": str(self.directory / RESPONSES_DIR),
        }

    def reload(self) -> None:
        """Re-read the output files and rewrite ``requests.jsonl`` with what is still unanswered.

        An error line a later try may not have (``batch_expired``, a 429, a 5xx) answers
        nothing: its request waits again, to go out with the next round. ``LLMError("malformed")``
        for an output line that is not one (nothing is rewritten then).
        """
        self._answers = {
            key: line
            for key, line in _read_outputs(self.directory / RESPONSES_DIR)
            if _retry_reason(line) is None
        }
        waiting: dict[str, dict[str, Any]] = {}
        for line in _read_lines(self.requests_path):
            key = line.get("custom_id")
            if isinstance(key, str) and key not in self._answers:
                waiting.setdefault(key, line)
        self._waiting = waiting
        _write_lines(self.requests_path, waiting.values())

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body = request.body(self.model)
        key = custom_id(request, self.model)
        answer = self._answers.get(key)
        if answer is None:
            if key not in self._waiting:
                line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
                self._waiting[key] = line
                with open(self.requests_path, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.meter.record_error()
            raise LLMError(
                "pending",
                f"request {key[:12]} waits for its answer: submit {self.requests_path} and put the output "
                f"file in {self.directory / RESPONSES_DIR}/",
            )
        try:
            response = _answer(answer)
        except LLMError:
            self.meter.record_error()
            raise
        self.meter.record(response)
        return response


def batch_answers(directory: str | Path) -> dict[str, ChatResponse]:
    """The answered requests of a batch directory by ``custom_id``, read only (a
    :class:`BatchProvider` rewrites ``requests.jsonl``; whoever reads answers for their record,
    as the library does, must not)."""
    found = {}
    for key, line in _read_outputs(Path(directory) / RESPONSES_DIR):
        try:
            found[key] = _answer(line)
        except LLMError:
            continue
    return found


def _retry_reason(line: dict[str, Any]) -> LLMError | None:
    """The error of an output line that another try may not have (else None)."""
    try:
        _answer(line)
    except LLMError as exc:
        return exc if exc.retryable else None
    return None


def _answer(line: dict[str, Any]) -> ChatResponse:
    """The response of one output line, or the ``LLMError`` it records."""
    error = line.get("error")
    response = line.get("response")
    if isinstance(error, dict) and (not isinstance(response, dict) or response.get("status_code") != 200):
        raise LLMError("server", f"batch error {error.get('code')}: {error.get('message')}")
    if not isinstance(response, dict):
        raise LLMError("malformed", "batch output line without a response")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
        raise LLMError(_kind(status), f"batch request failed: {message or body}", status=status)
    return replace(parse_completion(body), cache_hit=True, attempts=0)


def _kind(status: Any) -> ErrorKind:
    if status == 429:
        return "rate_limit"
    if isinstance(status, int) and status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    return "bad_request"


def _read_outputs(directory: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(custom_id, line)`` of every output/error line; a success wins over an error for one id.

    Strict: a line that is not an output line raises ``LLMError("malformed")`` (blank lines aside).
    """
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in _output_lines(path):
            key = line.get("custom_id")
            where = f"{path} line {number}"
            if not isinstance(key, str) or not key:
                raise LLMError("malformed", f"{where}: a Batch API output line needs a custom_id")
            try:
                _answer(line)
            except LLMError as exc:
                if exc.kind == "malformed":
                    raise LLMError("malformed", f"{where}: {exc.message}") from None
            ok = isinstance(line.get("response"), dict) and line["response"].get("status_code") == 200
            if ok or key not in found:
                found[key] = line
    yield from found.items()


def _output_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of an output file; ``LLMError("malformed")`` at the first bad line."""
    try:
        with open(path, encoding="utf-8") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                try:
                    value = json.loads(raw)
                except (ValueError, RecursionError):
                    raise LLMError("malformed", f"{path} line {number}: not a JSON line") from None
                if not isinstance(value, dict):
                    raise LLMError("malformed", f"{path} line {number}: not a JSON object")
                yield number, value
    except UnicodeDecodeError:
        raise LLMError("malformed", f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise LLMError("malformed", f"{path}: {exc.strerror}") from None


def _read_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON object lines of a JSONL file (missing file: none; a torn or junk line is skipped)."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def _write_lines(path: Path, lines: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def answer_batch(
    requests_path: str | Path,
    output_path: str | Path,
    provider: Provider,
    *,
    concurrency: int = 8,
    model: str | None = None,
    skip_retryable: bool = False,
) -> dict[str, int]:
    """Answer a Batch API input file with any provider; write a Batch API output file.

    Failed requests become error lines (``status_code`` and an OpenAI error body), as the
    Batch API writes them. ``model`` sends every request as that model (None: the model each
    names). ``skip_retryable`` leaves out a request that failed for a reason a later try may
    not have (rate limit, server error, timeout, no connection) instead of writing its error
    line, so it stays waiting. Returns ``{"answered", "failed", "skipped"}``.
    """
    lines = [line for line in _read_lines(Path(requests_path)) if isinstance(line.get("custom_id"), str)]
    slots = asyncio.Semaphore(concurrency)

    async def one(index: int, line: dict[str, Any]) -> dict[str, Any] | None:
        out: dict[str, Any] = {"id": f"batch_req_{index}", "custom_id": line["custom_id"], "error": None}
        async with slots:
            try:
                request = ChatRequest.from_body(line.get("body") or {})
                response = await provider.complete(request if model is None else request.with_model(model))
            except LLMError as exc:
                if skip_retryable and exc.retryable:
                    return None
                error = {"message": exc.message, "type": exc.kind, "code": exc.kind}
                out["response"] = {
                    "status_code": exc.status or 500,
                    "request_id": "",
                    "body": {"error": error},
                }
                return out
        out["response"] = {"status_code": 200, "request_id": "", "body": response.completion()}
        return out

    found = await asyncio.gather(*(one(i, line) for i, line in enumerate(lines)))
    results = [r for r in found if r is not None]
    target = Path(output_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_lines(target, results)
    failed = sum(1 for r in results if r["response"]["status_code"] != 200)
    return {"answered": len(results) - failed, "failed": failed, "skipped": len(found) - len(results)}
