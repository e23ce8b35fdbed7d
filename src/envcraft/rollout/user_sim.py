"""A simulated user for tasks that are played as a conversation (``provenance["user_agent"]``).

A task may declare a user who holds facts the agent must ask for::

    {"persona": "...", "max_rounds": 3, "system_prompt_suffix": "", "prefix": ""}

When the agent answers the last user turn without a tool call, the user model (``--user
MODEL``, any :class:`~envcraft.llm.provider.Provider`) is given the persona and the
conversation so far and replies as that user: it answers what was asked from its persona,
reveals nothing that was not asked, and says ``[DONE]`` when it has nothing more to ask; at
most ``max_rounds`` replies. Each reply is a user message (with the task's ``prefix``:
Claw-Eval marks them ``[user_agent]``, its graders split the conversation there). The
``system_prompt_suffix`` is added to the agent's system prompt. Without a user model such a
task is skipped by ``envcraft eval`` (:func:`envcraft.rollout.grading.plan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, LLMError, Message
from envcraft.tasks.format.model import Task

DONE = "[DONE]"
NO_USER = "plays with a simulated user and no --user model"
SYSTEM = """You play a user talking to an AI assistant. Stay in your persona and never say you \
are an AI.

## Your persona
{persona}

## Rules
1. Answer the assistant's questions truthfully from your persona. Reveal a fact only when the \
assistant asks for it; never volunteer what was not asked.
2. If asked something your persona does not say, say you are not sure.
3. When the assistant has fully answered you and you have no more questions, reply exactly {done}.
4. Keep replies short and natural (1-3 sentences)."""


def simulated_user(task: Task) -> dict[str, Any] | None:
    """The task's simulated user, or None."""
    value = task.provenance.get("user_agent") if isinstance(task.provenance, dict) else None
    return value if isinstance(value, dict) and value.get("persona") else None


def transcript(messages: Sequence[Message], prefix: str = "") -> str:
    """The user's and the assistant's words so far (no system prompt, no tool traffic)."""
    lines = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant") or not isinstance(content, str) or not content.strip():
            continue
        text = content[len(prefix) :] if prefix and content.startswith(prefix) else content
        lines.append(f"[{'User' if role == 'user' else 'Assistant'}]: {text.strip()}")
    return "\n".join(lines)


async def user_reply(user: Provider, spec: dict[str, Any], messages: Sequence[Message]) -> str | None:
    """The simulated user's next message, or None when it is done (or its model failed)."""
    prefix = str(spec.get("prefix") or "")
    request = ChatRequest(
        messages=[
            {"role": "system", "content": SYSTEM.format(persona=spec["persona"], done=DONE)},
            {
                "role": "user",
                "content": "The conversation so far:\n\n"
                + transcript(messages, prefix)
                + f"\n\nReply to the assistant's last message as your persona, or {DONE} if satisfied.",
            },
        ],
        temperature=0.0,
    )
    try:
        response = await user.complete(request)
    except LLMError:
        return None
    text = (response.content or "").strip()
    return None if not text or DONE in text else text
