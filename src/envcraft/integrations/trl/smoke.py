"""A real GRPO run on a CPU: TRL's ``GRPOTrainer`` on envcraft tasks with an offline policy.

What runs is what a user runs, shrunk to fit a CPU: the task set's TRL rows and environments
(:mod:`.environment`), SmolLM2's tokenizer with a ChatML tool-calling template
(:mod:`envcraft.integrations.offline_model`), and TRL's trainer with the paper's Table 17
optimizer settings (AdamW, lr 1e-6, constant schedule, no warmup, weight decay 0.01). The
policy is a tiny random Llama over SmolLM2's vocabulary, warm-started for a few seconds on the
tasks' golden runs (supervised, assistant tokens only): a random model never emits a
well-formed tool call, and a smoke run whose rollouts call no tool would test nothing. GRPO
then samples at temperature 0.5 (at 1.0 almost no sampled call is well-formed JSON), so its
rollouts are the warm start's imperfect copies of the golden runs: some right, some wrong,
scored by the tasks' verifiers.

``python -m envcraft.integrations.trl.smoke TASKS_DIR [--steps N] [--json]`` prints the
figures (wall time, steps, mean reward, tool calls that reached a session, tokens masked).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envcraft.integrations.play import TaskPlay
from envcraft.integrations.trl.environment import (
    ALL_DONE,
    END_TURN,
    dataset_rows,
    environments,
    tool_text,
)
from envcraft.sandbox.profiles import CANONICAL_PROFILE
from envcraft.tasks.format.model import Task

# Paper Table 17 (the optimizer of its GRPO runs).
TABLE_17: dict[str, Any] = {
    "optim": "adamw_torch",
    "learning_rate": 1e-6,
    "lr_scheduler_type": "constant",
    "warmup_steps": 0,
    "weight_decay": 0.01,
}
FINAL_ANSWER = "All done."
# The canonical tool names: the warm start copies the reference's canonical calls verbatim (the
# smoke run measures GRPO's mechanics, not a harness's tool surface).
PROFILE = CANONICAL_PROFILE
WINDOW = 384  # the policy's attention window, and the warm start's context before each assistant turn


@dataclass
class SmokeResult:
    """The figures of one smoke run (every number measured in that run)."""

    steps: int
    rollouts: int
    wall_s: float
    warm_start_s: float
    warm_start_loss: list[float]  # first step, mean of the last 20
    train_s: float
    mean_reward: float
    rewards: list[float]
    losses: list[float]
    logged_rewards: list[float]
    tool_calls: int
    successful_calls: int
    completion_tokens: int
    masked_tokens: int
    reports: list[dict[str, Any]] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        """Everything but the per-rollout reports."""
        data = asdict(self)
        data.pop("reports")
        return data


def golden_conversation(task: Task, system: str) -> list[dict[str, Any]]:
    """The task's golden run as the chat a TRL rollout of it would be, with real tool results:
    each call a tool-call turn, ``end_turn`` after each user turn, then a short final answer."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    with TaskPlay(task, PROFILE) as play:
        messages.append({"role": "user", "content": play.user_message or ""})
        names = {(t.env, t.tool): t.name for t in play.episode.tools()}
        for turn in range(len(task.turns)):
            for call in (c for c in task.reference.calls if c.turn == turn):
                name = names[(call.env, call.tool)]
                result = tool_text(play.call(name, call.args))
                messages += _tool_exchange(name, call.args, result)
            following = play.answer()
            messages += _tool_exchange(END_TURN, {}, ALL_DONE if following is None else following)
    messages.append({"role": "assistant", "content": FINAL_ANSWER})
    return messages


def _tool_exchange(name: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
    call = {"type": "function", "function": {"name": name, "arguments": args}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": name, "content": result},
    ]


def assistant_spans(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[Any]
) -> tuple[list[int], list[int]]:
    """The conversation's token ids and a 0/1 label mask that is 1 on assistant tokens only."""

    def render(upto: int, prompt: bool) -> list[int]:
        return list(
            tokenizer.apply_chat_template(
                messages[:upto], tools=tools, tokenize=True, add_generation_prompt=prompt, return_dict=False
            )
        )

    ids = render(len(messages), False)
    labels = [0] * len(ids)
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        start, end = len(render(i, True)), len(render(i + 1, False))
        if ids[:end] != render(i + 1, False):
            raise ValueError("the chat template is not prefix-preserving; cannot find assistant tokens")
        labels[start:end] = [1] * (end - start)
    return ids, labels


def windows(ids: list[int], labels: list[int], context: int) -> list[tuple[int, list[int], list[int]]]:
    """Each assistant span with the ``context`` tokens before it: ``(offset, ids, labels)``.

    The warm start trains on these windows at their true positions instead of on whole
    conversations: attention over a few thousand tokens of tool schemas would cost a CPU
    minutes per step, and what the policy must learn (call format, arguments copied from the
    user turn and earlier results) lies in the recent context."""
    spans, start = [], None
    for i, keep in enumerate([*labels, 0]):
        if keep and start is None:
            start = i
        elif not keep and start is not None:
            spans.append((start, i))
            start = None
    out = []
    for first, end in spans:
        offset = max(0, first - context)
        out.append((offset, ids[offset:end], labels[offset:end]))
    return out


def warm_start(
    model: Any, examples: Sequence[tuple[int, list[int], list[int]]], steps: int, lr: float, seed: int
) -> list[float]:
    """Supervised steps on golden windows (:func:`windows`), the loss on assistant tokens only
    and the LM head run on those positions alone (over a 49k vocabulary it dominates the cost).
    Returns the loss of every step."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    order = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        offset, ids, labels = examples[order.randrange(len(examples))]
        tokens = torch.tensor([ids])
        positions = torch.arange(offset, offset + len(ids)).unsqueeze(0)
        predicts = torch.tensor(labels[1:], dtype=torch.bool)  # position i predicts token i + 1
        hidden = model.model(input_ids=tokens, position_ids=positions, use_cache=False).last_hidden_state
        hidden = hidden[0, :-1][predicts]
        loss = F.cross_entropy(model.lm_head(hidden), tokens[0, 1:][predicts])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


@dataclass
class SmokeConfig:
    """The size of a smoke run."""

    steps: int = 3
    num_generations: int = 4
    prompts_per_step: int = 2
    warm_start_steps: int = 300
    max_completion_length: int = 1024
    documentation: bool = False  # the READMEs in the system prompt (see dataset_rows)
    # torch intra-op threads: a tiny model gains little from more, test workers sharing cores lose a lot
    threads: int = 1
    # sampling temperature: at 1.0 the tiny policy's ~35-token tool calls are rarely well-formed JSON
    temperature: float = 0.5
    seed: int = 0


def run_smoke(
    tasks: Sequence[Task], out_dir: str | Path, config: SmokeConfig | None = None, *, tokenizer: Any = None
) -> SmokeResult:
    """Warm-start a tiny policy on ``tasks``' golden runs, then ``config.steps`` GRPO steps
    (see the module docstring)."""
    import torch

    config = config or SmokeConfig()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _run(tasks, Path(out_dir), config, tokenizer)
    finally:
        torch.set_num_threads(previous_threads)


def _run(tasks: Sequence[Task], out_dir: Path, config: SmokeConfig, tokenizer: Any) -> SmokeResult:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from envcraft.integrations.offline_model import load_tokenizer, tiny_policy

    started = time.perf_counter()
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(out_dir / "tokenizer")
    factory = environments(tasks, profile=PROFILE)
    rows = dataset_rows(tasks, documentation=config.documentation, profile=PROFILE)
    by_id = {t.id: t for t in tasks}
    examples = []
    for row in rows:
        probe = factory[row["environment"]]()
        tools = [getattr(probe, name) for name in _tool_names(type(probe))]
        conversation = golden_conversation(by_id[row["task_id"]], row["prompt"][0]["content"])
        examples += windows(*assistant_spans(tokenizer, conversation, tools), context=WINDOW)
    model = tiny_policy(tokenizer, window=WINDOW, seed=config.seed)
    warm_losses = warm_start(model, examples, config.warm_start_steps, lr=3e-3, seed=config.seed)
    warm_start_s = time.perf_counter() - started

    args = GRPOConfig(
        output_dir=str(out_dir),
        max_steps=config.steps,
        per_device_train_batch_size=config.num_generations * config.prompts_per_step,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        max_tool_calling_iterations=16,
        temperature=config.temperature,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=config.seed,
        dataloader_num_workers=0,
        **TABLE_17,
    )
    trainer = _trainer_class()(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=factory,
    )
    trained = time.perf_counter()
    with torch.random.fork_rng():
        trainer.train()
    train_s = time.perf_counter() - trained
    reports = [
        report for pool in trainer._environment_pool.values() for env in pool for report in env.history
    ]
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    rewards = [r["score"] for r in reports]
    return SmokeResult(
        steps=trainer.state.global_step,
        rollouts=len(reports),
        wall_s=round(time.perf_counter() - started, 2),
        warm_start_s=round(warm_start_s, 2),
        warm_start_loss=[round(warm_losses[0], 3), round(sum(warm_losses[-20:]) / len(warm_losses[-20:]), 3)],
        train_s=round(train_s, 2),
        mean_reward=sum(rewards) / len(rewards) if rewards else math.nan,
        rewards=rewards,
        losses=[float(e["loss"]) for e in logs],
        logged_rewards=[float(e["reward"]) for e in logs if "reward" in e],
        tool_calls=sum(r["tool_calls"] for r in reports),
        successful_calls=sum(r["tool_calls"] - r["tool_errors"] for r in reports),
        completion_tokens=trainer.completion_tokens,
        masked_tokens=trainer.masked_tokens,
        reports=reports,
    )


def _tool_names(cls: type) -> list[str]:
    """The public methods TRL takes as tools (it lists them the same way)."""
    import inspect

    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def _trainer_class() -> Any:
    """The trainer subclass, built when first needed (importing TRL takes seconds)."""
    from trl import GRPOTrainer

    class MaskCountingTrainer(GRPOTrainer):
        """GRPOTrainer that counts the completion tokens it trains on and those it masks out
        (tool results and the next user turns, which TRL's tool mask zeroes)."""

        completion_tokens = 0
        masked_tokens = 0

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            output = super()._generate_and_score_completions(inputs)
            completion = output["completion_mask"].bool()
            tool_mask = output.get("tool_mask")
            self.completion_tokens += int(completion.sum())
            if tool_mask is not None:
                self.masked_tokens += int((completion & ~tool_mask.bool()).sum())
            return output

    return MaskCountingTrainer


def main(argv: Sequence[str] | None = None) -> None:
    from envcraft.tasks.format.io import read_tasks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("tasks", help="task-set directory (tasks.jsonl)")
    parser.add_argument("--out", default="out/trl-smoke")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--limit", type=int, default=6, help="tasks to train on")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    tasks = read_tasks(options.tasks)[: options.limit]
    result = run_smoke(tasks, options.out, SmokeConfig(steps=options.steps))
    figures = result.figures()
    print(json.dumps(figures, indent=None if options.json else 2))


if __name__ == "__main__":
    main()
