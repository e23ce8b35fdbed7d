"""envcraft's VERL agent loop: one task per trajectory, its user turns revealed, its verifier the reward.

VERL builds one agent loop per trajectory (``hydra.utils.instantiate`` of the row's
``agent_name``) and calls :meth:`EnvcraftAgentLoop.run` with the dataset row. The loop:

1. finds the row's task (``reward_model.ground_truth`` = task id + digest, checked against the
   task set named by the loop's ``tasks`` argument or ``$ENVCRAFT_TASKS``) and opens a
   :class:`~envcraft.integrations.play.TaskPlay` for it under a fresh request id, with the
   tool profile the row was exported for (``extra_info.profile``; the loop's ``profile``
   argument overrides it; ``openclaw`` when neither says): fresh
   sessions from S0 and one shared workspace per trajectory, never shared between the GRPO
   samples of a prompt (:func:`open_plays` counts the ones alive);
2. renders the row's chat prompt with the task's own tools through the model's chat template
   (VERL's Continuous Token builder, so every later message is appended token-exactly);
3. alternates: the model generates (``server_manager.generate(request_id=, prompt_ids=,
   sampling_params=)``); tool calls (parsed by VERL's tool parser of
   ``rollout.multi_turn.format``) go to the sessions and come back as tool messages; an answer
   without a tool call ends the user turn and the task's next user message is appended; after
   the last turn, or when ``response_length`` or ``max_assistant_turns`` is reached, it stops;
4. ``response_mask`` is 1 exactly on the model's tokens (tool results, user turns and the
   template's scaffolding around them are 0), and ``reward_score`` is the task's verifier on
   the final state, with its components in ``extra_fields["envcraft"]``.

With ``score_in_loop: false`` (in ``agent_loop.yaml``) the loop leaves ``reward_score`` unset
and VERL's reward loop scores the recorded trajectory with
:func:`envcraft.integrations.verl.reward.compute_score`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
from verl.experimental.agent_loop.tool_parser import FunctionCall, ToolParser
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.utils.profiler import simple_timer
from verl.utils.tokenizer.chat_template import apply_chat_template

from envcraft.integrations.play import TaskPlay, parse_arguments
from envcraft.integrations.taskset import TaskIndex, load_index
from envcraft.rollout.loop import tool_result_text
from envcraft.sandbox.profiles import DEFAULT_PROFILE
from envcraft.tasks.corpus.export import AGENT_NAME

logger = logging.getLogger(__name__)

_OPEN: dict[str, TaskPlay] = {}
_TEMPLATE_RENDERS_TOOLS: dict[tuple[int, str], bool] = {}


def open_plays() -> int:
    """How many trajectories have a task play open right now (0 between rollouts)."""
    return len(_OPEN)


@contextmanager
def _held(request_id: str, play: TaskPlay) -> Iterator[TaskPlay]:
    """Keep ``play`` under its trajectory's request id for the trajectory's lifetime."""
    _OPEN[request_id] = play
    try:
        yield play
    finally:
        del _OPEN[request_id]
        play.close()


@register(AGENT_NAME)
class EnvcraftAgentLoop(AgentLoopBase):
    """The agent loop of the module docstring."""

    def __init__(
        self,
        *args: Any,
        tasks: str | None = None,
        score_in_loop: bool = True,
        profile: str | None = None,
        tools: Any = None,  # VERL's configured tools: unused, every task brings its own
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        multi_turn = self.rollout_config.multi_turn
        self.tasks_path = tasks_beside_config(tasks, self.rollout_config.agent.get("agent_loop_config_path"))
        self.score_in_loop = bool(score_in_loop)
        self.profile = profile  # None: each row's extra_info.profile (the export's), else the default
        self.max_assistant_turns = multi_turn.max_assistant_turns
        self.max_parallel_calls = max(1, int(multi_turn.max_parallel_calls or 1))
        self.max_tool_response_length = int(multi_turn.max_tool_response_length)
        self.truncate_side = multi_turn.tool_response_truncate_side
        self.response_length = int(self.rollout_config.response_length)
        self.tool_parser = ToolParser.get_tool_parser(multi_turn.format, self.tokenizer)

    def task_index(self) -> TaskIndex:
        return load_index(self.tasks_path)

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **row: Any) -> AgentLoopOutput:
        """One trajectory of the row's task. ``priority`` is VERL's per-sample scheduling
        priority (the agent loop manager numbers the batch); it goes with every generate
        request, as VERL's own loops send it, and names the request under full determinism."""
        reward_model = row.get("reward_model") or {}
        task = self.task_index().for_row(reward_model.get("ground_truth"), row.get("extra_info"))
        loop = asyncio.get_running_loop()
        priority = int(priority)  # np.int64 from the batch's non-tensor data
        full_determinism = getattr(self.rollout_config, "full_determinism", False)
        request_id = f"det-{priority}" if full_determinism else uuid4().hex
        profile = self.profile or (row.get("extra_info") or {}).get("profile") or DEFAULT_PROFILE
        play = await loop.run_in_executor(None, TaskPlay, task, profile)
        with _held(request_id, play):
            return await self._play(play, request_id, list(row["raw_prompt"]), sampling_params, priority)

    async def _play(
        self,
        play: TaskPlay,
        request_id: str,
        messages: list[dict[str, Any]],
        sampling_params: dict[str, Any],
        priority: int = 0,
    ) -> AgentLoopOutput:
        loop = asyncio.get_running_loop()
        tools = play.openai_tools()
        self._require_tools_in_template(tools)
        schemas = [OpenAIFunctionToolSchema.model_validate(t) for t in tools]
        if self.tool_parser.stop_token_ids:
            stops = set(sampling_params.get("stop_token_ids") or []) | set(self.tool_parser.stop_token_ids)
            sampling_params = {**sampling_params, "stop_token_ids": sorted(stops)}
        metrics: dict[str, float] = {}
        ids = await self.ct_build_initial_tokens(messages, tools=tools)
        mask: list[int] = []
        logprobs: list[float] = []
        assistant_turns, stop = 0, "done"
        while True:
            with simple_timer("generate_sequences", metrics):
                out = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=ids, sampling_params=sampling_params, priority=priority
                )
            # VERL's metric: preemptions over the trajectory's requests (-1: the server does not say)
            if "num_preempted" not in metrics:
                metrics["num_preempted"] = out.num_preempted if out.num_preempted is not None else -1
            elif out.num_preempted is not None:
                metrics["num_preempted"] += out.num_preempted
            assistant_turns += 1
            merged, mask, aligned = await self.ct_merge_assistant_token(
                ids,
                out.token_ids,
                mask,
                logprobs if (logprobs or out.log_probs) else None,
                assistant_logprobs=out.log_probs or None,
            )
            ids, logprobs = merged.token_ids, aligned or []
            if len(mask) >= self.response_length:
                stop = "response_length"
                break
            if self.max_assistant_turns and assistant_turns >= self.max_assistant_turns:
                stop = "max_assistant_turns"
                break
            content, calls = await self.tool_parser.extract_tool_calls(out.token_ids, schemas)
            calls = calls[: self.max_parallel_calls]
            messages.append(_assistant_message(content, calls))
            if calls:
                with simple_timer("tool_calls", metrics):
                    results = await loop.run_in_executor(None, _call_all, play, calls)
                added = [
                    self._tool_message(call, result) for call, result in zip(calls, results, strict=True)
                ]
            else:
                following = await loop.run_in_executor(None, play.answer)
                if following is None:
                    break
                added = [{"role": "user", "content": following}]
            previous = list(messages)
            messages.extend(added)
            merged, next_mask, aligned = await self.ct_merge_context_msg(
                previous, messages, ids, mask, logprobs or None, tools=tools
            )
            if len(next_mask) >= self.response_length:
                stop = "response_length"
                break
            ids, mask, logprobs = merged.token_ids, next_mask, aligned or []
        return await self._output(play, ids, mask, logprobs, messages, metrics, stop, request_id)

    async def _output(
        self,
        play: TaskPlay,
        ids: list[int],
        mask: list[int],
        logprobs: list[float],
        messages: list[dict[str, Any]],
        metrics: dict[str, float],
        stop: str,
        request_id: str,
    ) -> AgentLoopOutput:
        loop = asyncio.get_running_loop()
        score = None
        if self.score_in_loop:
            with simple_timer("compute_score", metrics):
                score = await loop.run_in_executor(None, play.score, messages)
        report = play.report(score)
        report.update(stop=stop, request_id=request_id)
        split = len(ids) - len(mask)
        limit = self.response_length
        extra: dict[str, Any] = {"envcraft": report, "turn_scores": [], "tool_rewards": []}
        if score is not None:
            extra["reward_extra_info"] = {
                "envcraft_score": score.score,
                "envcraft_tool_calls": play.tool_calls,
                "envcraft_tool_errors": play.tool_errors,
                "envcraft_turns_completed": play.turns_completed,
            }
        return AgentLoopOutput(
            prompt_ids=ids[:split],
            response_ids=ids[split:][:limit],
            response_mask=mask[:limit],
            response_logprobs=logprobs[:limit] if logprobs else None,
            reward_score=None if score is None else score.score,
            num_turns=sum(m.get("role") != "system" for m in messages),
            metrics=AgentLoopMetrics(**metrics),
            extra_fields=extra,
        )

    def _tool_message(self, call: FunctionCall, result: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "tool", "content": self._truncate(tool_result_text(result))}
        if call.tool_call_id is not None:
            message["tool_call_id"] = call.tool_call_id
        return message

    def _truncate(self, text: str) -> str:
        """VERL's ``max_tool_response_length`` and ``tool_response_truncate_side``, applied as its
        ToolAgentLoop applies them."""
        limit = self.max_tool_response_length
        if len(text) <= limit:
            return text
        if self.truncate_side == "left":
            return "(truncated)..." + text[-limit:]
        if self.truncate_side == "right":
            return text[:limit] + "...(truncated)"
        half = limit // 2
        return text[:half] + "...(truncated)..." + text[-half:]

    def _require_tools_in_template(self, tools: list[dict[str, Any]]) -> None:
        """Refuse a chat template that silently drops the tools (the model would never see them)."""
        template = str(getattr(self.tokenizer, "chat_template", None))
        key = (id(self.tokenizer), template)
        if key not in _TEMPLATE_RENDERS_TOOLS:
            probe = [{"role": "user", "content": "probe"}]
            kwargs = {"tokenize": False, "add_generation_prompt": True, **self.apply_chat_template_kwargs}
            tokenizer: Any = self.tokenizer
            bare = apply_chat_template(tokenizer, probe, **kwargs)
            with_tools = apply_chat_template(tokenizer, probe, tools=tools, **kwargs)
            _TEMPLATE_RENDERS_TOOLS[key] = bare != with_tools
        if not _TEMPLATE_RENDERS_TOOLS[key]:
            raise ValueError(
                "the tokenizer's chat template does not render tools; set "
                "actor_rollout_ref.model.custom_chat_template to one that renders them (ChatML + hermes)"
            )


def tasks_beside_config(tasks: str | None, config_path: str | None) -> str | None:
    """The loop's ``tasks``: a relative path in ``agent_loop.yaml`` is relative to the yaml's
    directory (so an export moves as a whole), not to the worker's working directory."""
    if not tasks or not config_path or os.path.isabs(tasks):
        return tasks
    return os.path.join(os.path.dirname(os.path.abspath(config_path)), tasks)


def _call_all(play: TaskPlay, calls: Sequence[FunctionCall]) -> list[dict[str, Any]]:
    """The calls of one model turn, in order, in the trajectory's sessions."""
    return [play.call(call.name, call.arguments) for call in calls]


def _assistant_message(content: str, calls: Sequence[FunctionCall]) -> dict[str, Any]:
    """The model's turn as a chat message (its tokens come from the model; this is the history)."""
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        tool_calls = []
        for call in calls:
            parsed = parse_arguments(call.arguments)
            arguments = parsed.get("args", call.arguments)
            entry: dict[str, Any] = {
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }
            if call.tool_call_id is not None:
                entry["id"] = call.tool_call_id
            tool_calls.append(entry)
        message["tool_calls"] = tool_calls
    return message
