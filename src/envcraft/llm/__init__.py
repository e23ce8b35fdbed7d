"""One small interface to language models (see :mod:`envcraft.llm.provider`).

``OpenAIProvider`` talks to any OpenAI-compatible server, ``CachedProvider`` keeps every
answer on disk by request content, ``BatchProvider`` goes through OpenAI Batch API files,
``ReplayProvider`` answers from a script, and ``ChatServer`` serves any provider over the
chat-completions protocol.
"""

from envcraft.llm.batch import BatchPending, BatchProvider, answer_batch
from envcraft.llm.cache import CachedProvider, ResponseCache
from envcraft.llm.openai_compat import OpenAIProvider, ProviderConfig, RetryPolicy, Secret
from envcraft.llm.provider import Provider, UsageMeter
from envcraft.llm.replay import ReplayProvider
from envcraft.llm.server import ChatServer, ServerFault
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError, Message, ToolCall, Usage

__all__ = [
    "BatchPending",
    "BatchProvider",
    "CachedProvider",
    "ChatRequest",
    "ChatResponse",
    "ChatServer",
    "LLMError",
    "Message",
    "OpenAIProvider",
    "Provider",
    "ProviderConfig",
    "ReplayProvider",
    "ResponseCache",
    "RetryPolicy",
    "Secret",
    "ServerFault",
    "ToolCall",
    "Usage",
    "UsageMeter",
    "answer_batch",
]
