"""``--writer MODEL``: any model of :mod:`envcraft.llm` as the data engine's turn writer.

The data engine builds the requests and checks the answers
(:mod:`envcraft.tasks.corpus.writing`); it never imports a model client. This module is the
bridge: :func:`open_writer` opens the model as ``--model`` does for ``eval`` (a server's model
behind a response cache, a built-in one, or Batch API files with ``batch``), and
:class:`ProviderWriter` sends one request per task, all at once, and hands back the answers.
With the cache a re-run sends nothing and gets the same answers, so it makes the same corpus.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from envcraft.llm.batch import BatchProvider
from envcraft.llm.cache import CachedProvider
from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, LLMError
from envcraft.rollout.models import open_model
from envcraft.tasks.phrasing.writer import Messages, Reply

MAX_TOKENS = 2048  # per answer: every turn of one task (a few hundred tokens; a looping model stops here)


class ProviderWriter:
    """A :class:`~envcraft.tasks.phrasing.writer.TurnWriter` over a provider."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.model = provider.model

    def write(self, requests: Sequence[Messages]) -> list[Reply]:
        """Every request answered (or waiting, or failed), in order; the provider's connections
        are closed in the event loop that used them."""

        async def one(messages: Messages) -> Reply:
            try:
                response = await self.provider.complete(ChatRequest(messages=messages, max_tokens=MAX_TOKENS))
            except LLMError as exc:
                return Reply(waiting=exc.kind == "pending", error=str(exc))
            return Reply(text=response.content or "")

        async def main() -> list[Reply]:
            try:
                return list(await asyncio.gather(*(one(m) for m in requests)))
            finally:
                await self.provider.aclose()

        return asyncio.run(main())


@contextmanager
def open_writer(
    name: str, base_url: str | None, batch: Path | None, cache_dir: Path, concurrency: int = 16
) -> Iterator[ProviderWriter]:
    """The writer for ``--writer name``: Batch API files in ``batch``, else the model ``--model
    name`` would be (``--writer-base-url``, else ``ENVCRAFT_BASE_URL``, else OpenAI; or a
    built-in one) with its answers cached in ``cache_dir``, whichever it is. ``LLMError`` when a
    remote model has no key or base URL."""
    if batch is not None:
        if base_url is not None:
            raise LLMError(
                "bad_request", "--writer-batch and --writer-base-url: batch files or a server, not both"
            )
        yield ProviderWriter(BatchProvider(batch, name))
        return
    with open_model(name, base_url=base_url, concurrency=concurrency) as provider:
        yield ProviderWriter(CachedProvider(provider, cache_dir))  # built-in models too (SmolLM2: minutes)
