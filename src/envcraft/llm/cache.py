"""A content-addressed response cache on disk: an interrupted job resumes, a re-run costs nothing.

Each response is stored under the sha256 of its request body (:meth:`ChatRequest.key`:
model, messages, tools and sampling fields; never the key or the base URL) as
``DIR/<2 hex>/<key>.json``, the ``chat.completion`` object written to a temp file and
``os.replace``d, so a killed job leaves only whole entries behind. Deterministic callers (the
rollout loop seeds each sample, the environments are deterministic) send the very same
requests again on a re-run and get every answer back from disk. Identical requests in flight
at the same time are sent once.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError, parse_completion


class ResponseCache:
    """The directory of cached ``chat.completion`` objects, by request key."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatResponse | None:
        """The stored response, or None (a missing or unreadable entry is a miss)."""
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
            return parse_completion(entry["completion"])
        except (OSError, ValueError, KeyError, TypeError, LLMError):
            return None

    def put(self, key: str, response: ChatResponse, request_body: dict[str, Any] | None = None) -> None:
        entry = {"key": key, "completion": response.completion()}
        if request_body is not None:
            entry["request"] = request_body
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*/*.json")) if self.directory.is_dir() else 0


class CachedProvider(Provider):
    """``inner`` behind a :class:`ResponseCache`; hits come back with ``cache_hit=True``.

    Errors are never cached. ``keep_requests`` stores each request body beside its response
    (useful for inspecting a job; off by default because prompts can be large).
    """

    def __init__(self, inner: Provider, directory: str | Path, *, keep_requests: bool = False) -> None:
        super().__init__(inner.model)
        self.inner = inner
        self.cache = ResponseCache(directory)
        self.keep_requests = keep_requests
        self._in_flight: dict[str, asyncio.Future[ChatResponse]] = {}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        body = request.body(self.model)
        key = request.key(self.model)
        while True:
            hit = self.cache.get(key)
            if hit is not None:
                return self._served(hit)
            pending = self._in_flight.get(key)
            if pending is None:
                break
            try:
                return self._served(await asyncio.shield(pending))
            except asyncio.CancelledError:
                if not pending.cancelled():
                    raise  # we were cancelled, not the request we waited for
                # its owner was cancelled: ask ourselves
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            response = await self.inner.complete(request)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            if isinstance(exc, LLMError):
                self.meter.record_error(exc.attempts)
            future.set_exception(exc)
            future.exception()  # retrieved: a lone caller's error is not "never retrieved"
            raise
        finally:
            del self._in_flight[key]
        future.set_result(response)
        self.cache.put(key, response, body if self.keep_requests else None)
        self.meter.record(response)
        return response

    def _served(self, stored: ChatResponse) -> ChatResponse:
        response = replace(stored, cache_hit=True, attempts=0, latency_s=0.0)
        self.meter.record(response)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
