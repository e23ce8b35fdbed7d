"""``--model M``: from a name to a provider the rollout loop talks to over the real protocol.

* ``oracle`` / ``random``: the built-in policies (:mod:`envcraft.rollout.policies`);
* ``smollm2``: SmolLM2-135M on the CPU (:mod:`envcraft.llm.smollm`);
* anything else: a model of an OpenAI-compatible server (``--base-url``, else
  ``ENVCRAFT_BASE_URL``, else the OpenAI API), with the key from ``OPENAI_API_KEY``.

The in-process models are served by a loopback :class:`~envcraft.llm.server.ChatServer` and
reached through :class:`~envcraft.llm.openai_compat.OpenAIProvider`, exactly as a remote one
is. A response cache directory, when given, sits in front of remote models (built-in
policies are free and always answered live).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from envcraft.llm.cache import CachedProvider
from envcraft.llm.openai_compat import API_KEY_ENV, OpenAIProvider, ProviderConfig, RetryPolicy
from envcraft.llm.provider import Provider
from envcraft.rollout.policies import POLICIES, policy_provider, serve_policy
from envcraft.tasks.format.model import Task

LOCAL_MODELS = (*POLICIES, "smollm2")
SLOW_TIMEOUT = 3600.0
NO_RETRY = RetryPolicy(max_retries=0)


@contextmanager
def open_model(
    name: str,
    *,
    tasks: Iterable[Task] = (),
    base_url: str | None = None,
    cache_dir: str | Path | None = None,
    concurrency: int = 16,
) -> Iterator[Provider]:
    """The provider for ``--model name`` (see the module docstring); served ones stop on exit.

    ``LLMError`` when a remote model has no key or base URL.
    """
    if name in POLICIES:
        with serve_policy(policy_provider(name, tasks), concurrency=concurrency) as provider:
            yield provider
        return
    if name == "smollm2":  # one generation at a time on the CPU: minutes per request are possible
        with serve_policy(
            _smollm(), concurrency=concurrency, timeout=SLOW_TIMEOUT, retry=NO_RETRY
        ) as provider:
            yield provider
        return
    remote: Provider = OpenAIProvider(ProviderConfig.resolve(name, base_url, concurrency=concurrency))
    yield CachedProvider(remote, cache_dir) if cache_dir is not None else remote


def hide_api_key_from_children() -> None:
    """Drop ``OPENAI_API_KEY`` from this process's environment once it has been read.

    Every process envcraft starts (sandboxed shells, verifier workers) inherits the
    environment; a command line tool that has taken the key into a provider has no further
    use for it there. Call after :func:`open_model` resolved the key.
    """
    os.environ.pop(API_KEY_ENV, None)


def _smollm() -> Provider:
    from envcraft.llm.smollm import SmolLM2Provider

    return SmolLM2Provider()
