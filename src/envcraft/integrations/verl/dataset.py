"""VERL's ``RLHFDataset`` with the length filter counting each row's own tools.

VERL's length filter (``data.filter_overlong_prompts``) renders each prompt through the chat
template with the tools of ``data.tool_config_path`` only: one tool list for the whole
dataset. envcraft's rows each bring their own tools (the agent loop renders the task's tools
under the row's profile), so VERL's filter counts prompts without them, and a prompt whose
tools push it past ``max_prompt_length`` reaches the agent loop and is cut there, system
prompt and tools first. :class:`EnvcraftRLHFDataset` counts what the loop renders: the row's
chat with the tools of ``extra_info.tools`` (written by ``envcraft export --format verl``),
through the same chat template and ``apply_chat_template_kwargs``. Select it with
``data.custom_cls.path=pkg://envcraft.integrations.verl.dataset`` and
``data.custom_cls.name=EnvcraftRLHFDataset`` (``examples/verl/envcraft_grpo.yaml`` does).

``python -m envcraft.integrations.verl.dataset EXPORT_DIR --tokenizer PATH`` prints the
prompt lengths of an export for a tokenizer: what ``max_prompt_length`` it needs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.utils.tokenizer import normalize_token_ids


def row_tools(extra_info: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """The OpenAI tools a row's agent loop renders (``extra_info.tools``; None when absent)."""
    text = (extra_info or {}).get("tools")
    return json.loads(text) if text else None


def prompt_length(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: list[dict[str, Any]] | None,
    **chat_kwargs: Any,
) -> int:
    """Tokens of ``messages`` with ``tools`` through the chat template, generation prompt included
    (as VERL's filter and the agent loop's first request render them)."""
    kwargs = {k: v for k, v in chat_kwargs.items() if k not in ("tokenize", "return_dict", "return_tensors")}
    if tools is not None:
        kwargs["tools"] = tools
    ids = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True, **kwargs)
    return len(normalize_token_ids(ids))


class EnvcraftRLHFDataset(RLHFDataset):
    """``RLHFDataset`` whose length filter counts each row's own tools (module docstring)."""

    def maybe_filter_out_long_prompts(self, dataframe: Any = None) -> Any:
        if not self.filter_overlong_prompts or self.processor is not None:
            return super().maybe_filter_out_long_prompts(dataframe)
        tokenizer, key, limit = self.tokenizer, self.prompt_key, self.max_prompt_length
        chat_kwargs = dict(self.apply_chat_template_kwargs)
        shared = self.tool_schemas  # data.tool_config_path's tools, for rows that carry none

        def fits(doc: Mapping[str, Any]) -> bool:
            tools = row_tools(doc.get("extra_info"))
            return (
                prompt_length(tokenizer, doc[key], tools if tools is not None else shared, **chat_kwargs)
                <= limit
            )

        kept = dataframe.filter(
            fits,
            num_proc=self.num_workers,
            desc=f"Filtering prompts (with their tools) longer than {limit} tokens",
        )
        print(f"filter dataset len: {len(kept)}")
        return kept


def main(argv: Sequence[str] | None = None) -> int:
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    parser = argparse.ArgumentParser(description="Prompt lengths (with tools) of a VERL export.")
    parser.add_argument("export", type=Path, help="envcraft export --format verl directory")
    parser.add_argument("--tokenizer", required=True, help="tokenizer path or hub id")
    args = parser.parse_args(argv)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    lengths = sorted(
        prompt_length(tokenizer, row["prompt"], row_tools(row["extra_info"]))
        for name in ("train.parquet", "val.parquet")
        for row in pq.read_table(args.export / name).to_pylist()
    )
    over = {n: sum(length > n for length in lengths) for n in (2048, 4096, 8192, 16384)}
    print(
        json.dumps(
            {"prompts": len(lengths), "max": lengths[-1], "median": lengths[len(lengths) // 2], "over": over}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
