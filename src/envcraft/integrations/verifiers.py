"""A verifiers v1 ``Taskset`` over an envcraft task set (optional extra ``envcraft[verifiers]``).

verifiers 0.4 ships only its v1 API. What a run of it needs from us, and where it lives:

* :class:`EnvcraftTaskset` (``load()`` yields one :class:`EnvcraftTask` per envcraft task):
  the first user turn as the ``prompt``, the environments' READMEs and, for Claw tasks, the
  skills listing OpenClaw's prompt carries as the ``system_prompt``; the later turns ride in
  the task data. verifiers loads it by id, as any taskset: ``--env.taskset.id
  envcraft-verifiers --env.taskset.tasks DIR`` (the top-level module ``envcraft_verifiers``
  exports it, with :class:`EnvcraftEnv`).
* :class:`EnvcraftToolset`: the task's tools as verifiers' per-rollout MCP tool server
  (verifiers launches it as ``python -m envcraft.integrations.verifiers``; it fetches its
  rollout's task over verifiers' state channel and opens the task's Episode, so the
  workspace, S0 and skills are the Episode's). It advertises the Episode's own JSON
  Schemas under the profile's names (``TOOL_PREFIX = None``: bare names, as the agent
  was trained on them), and after every call writes the canonical trajectory into the
  rollout's shared state (:class:`EnvcraftState`).
* the reward, ``@vf.reward envcraft``: the task's verifier on that trajectory, replayed
  from S0 exactly as ``envcraft tasks score`` does; its components are a ``@vf.metric``.
  ``Task.validate`` (``vf-validate``'s gold check) replays the task's reference the same way.
* **Where the task lives.** The task data carries the task id and the task-set directory,
  not the task (S0 and verifier can be large, and every trace records the task data): the
  tool server and the reward read ``tasks.jsonl`` from that path, so they must run where it
  exists, as in verifiers' subprocess runtime; a container runtime must mount the task set
  at the same path (a missing path is a clear ``TaskError``).
* :class:`EnvcraftEnv`: plays the user. It opens the interaction with the first turn,
  and each time the agent answers it bumps ``state.turn`` (the tool server ends the
  Episode's turn on its next call, so later calls land in the right turn) and sends the
  next turn, until the last one is answered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import verifiers.v1 as vf
from mcp_types import CallToolResult, TextContent, Tool
from pydantic import Field
from verifiers.v1.mcp import Toolset, ToolsetConfig

from envcraft.core.errors import ErrorCategory, error_result, is_error
from envcraft.core.skills import read_skill, skills_section
from envcraft.sandbox.profiles import DEFAULT_PROFILE, get_profile, result_text
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import SKILLS_DIR, Episode, resolve_packages
from envcraft.tasks.play.execute import reference_turns
from envcraft.tasks.verifier.scoring import Score, score_trajectory


class EnvcraftTaskData(vf.TaskData):
    """One envcraft task as verifiers' wire data (the task itself stays in its task set)."""

    task_id: str
    tasks: str
    """The task-set directory (holding tasks.jsonl)."""
    profile: str = DEFAULT_PROFILE
    user_turns: list[str] = Field(default_factory=list)


class EnvcraftState(vf.State):
    """Shared by the host and the tool server for one rollout."""

    turn: int = 0
    """The user turn the conversation is in (the env advances it)."""
    turns: list[list[dict[str, Any]]] = Field(default_factory=list)
    """The canonical calls per user turn, as ``envcraft tasks score`` reads them."""


def load_task(data: EnvcraftTaskData) -> Task:
    """The task, read from the task set at ``data.tasks`` on the machine this runs on."""
    if not Path(data.tasks).exists():
        raise vf.TaskError(
            f"task set {data.tasks} is not on this machine: the tool server and the reward read the task "
            "from the task-set path the taskset was loaded with, so run them where that path exists "
            "(verifiers' subprocess runtime) or mount the task set at the same path in the runtime"
        )
    for task in read_tasks(data.tasks):
        if task.id == data.task_id:
            return task
    raise vf.TaskError(f"no task {data.task_id!r} in {data.tasks}")


def system_prompt(task: Task, profile: str) -> str:
    """The environments' READMEs, then (Claw tasks) OpenClaw's skills section."""
    chosen = get_profile(profile)
    packages = resolve_packages(task)
    parts = [p.readme.strip() for p in packages.values() if p.readme.strip()]
    if task.kind == "claw" and not chosen.canonical:
        skills = [
            read_skill(md.parent, chosen.skill_location(f"{SKILLS_DIR}/{name}/SKILL.md"))
            for p in packages.values()
            if p.kind == "claw"
            for name, md in p.skills.items()
        ]
        parts.append(skills_section(skills, chosen.read_tool).strip())
    return "\n\n".join(part for part in parts if part)


class EnvcraftToolsetConfig(ToolsetConfig):
    pass


class EnvcraftToolset(Toolset[EnvcraftToolsetConfig, EnvcraftState]):
    """The rollout's tools: one Episode of the rollout's task (see the module docstring)."""

    TOOL_PREFIX = None

    def __init__(self, config: EnvcraftToolsetConfig) -> None:
        super().__init__(config)
        self.episode: Episode | None = None
        self.task: Task | None = None

    async def setup_task(self, task: EnvcraftTaskData) -> None:
        self.task = load_task(task)
        self.episode = Episode.open(self.task, profile=task.profile)

    def register(self, mcp: Any) -> None:
        """Advertise the Episode's tools with their own schemas.

        verifiers builds the MCPServer and hands it here (``register`` is the Toolset
        contract's hook for what a server offers); its decorated-tool path (``add_tool``)
        derives schemas from Python signatures, which cannot carry ours (nested OpenClaw
        arguments, enums, defaults), so the server's two public tool methods, ``list_tools``
        and ``call_tool`` (the ones MCPServer's own request handlers call), are answered by
        this toolset. Each call goes through verifiers' own state sync (``_with_state``), as
        its tools do.
        """
        mcp.list_tools = self._list_tools
        mcp.call_tool = self._with_state(self._call_tool)

    async def _list_tools(self) -> list[Tool]:
        episode = self._live()
        return [
            Tool(
                name=t.name,
                description=t.schema["function"].get("description", ""),
                input_schema=t.schema["function"]["parameters"],
            )
            for t in episode.tools()
        ]

    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        del context
        episode = self._live()
        state = self.state
        while episode.turn < state.turn and not episode.done:
            episode.end_turn()
        if episode.done:
            result = error_result(ErrorCategory.INVALID_TRANSITION, "the conversation is over")
        else:
            result = await anyio.to_thread.run_sync(episode.call_exposed, name, arguments)
        assert self.task is not None
        state.turns = episode.trajectory(self.task.id)["turns"]
        return CallToolResult(
            content=[TextContent(type="text", text=result_text(result))],
            structured_content=result,
            is_error=is_error(result),
        )

    def _live(self) -> Episode:
        if self.episode is None:
            raise vf.ToolsetError("no task: the tool server has not been set up for a rollout")
        return self.episode


class EnvcraftTask(vf.Task[EnvcraftTaskData, EnvcraftState]):
    """An envcraft task; its reward is its verifier."""

    @classmethod
    def toolsets(cls, config: vf.TaskConfig) -> list[Toolset]:
        return [EnvcraftToolset(EnvcraftToolsetConfig())]

    async def verdict(self, trace: vf.Trace) -> Score:
        """The verifier on the rollout's calls, replayed from S0 (what ``tasks score`` gives)."""
        state = trace.state
        turns = state.turns if isinstance(state, EnvcraftState) else []
        task = load_task(self.data)
        return await anyio.to_thread.run_sync(score_trajectory, task, turns)

    async def validate(self, runtime: Any) -> bool | None:
        """The ground truth holds (``vf-validate``'s gold check): the task's reference calls,
        replayed in fresh sessions from S0, score 1.0 under its verifier."""
        del runtime  # the replay runs in-process, as the reward does
        task = load_task(self.data)
        score = await anyio.to_thread.run_sync(score_trajectory, task, reference_turns(task))
        return score.error is None and score.score >= 1.0

    @vf.reward
    async def envcraft(self, trace: vf.Trace) -> float:
        return (await self.verdict(trace)).score

    @vf.metric
    async def envcraft_components(self, trace: vf.Trace) -> dict[str, float]:
        return {f"envcraft/{k}": v for k, v in (await self.verdict(trace)).components.items()}


class EnvcraftTasksetConfig(vf.TasksetConfig):
    tasks: str = ""
    """The envcraft task-set directory."""
    profile: str = DEFAULT_PROFILE
    """The system tools' profile: openclaw, claude-code or envcraft."""
    ids: list[str] = Field(default_factory=list)
    """Only these task ids (all when empty)."""


class EnvcraftTaskset(vf.Taskset[EnvcraftTask, EnvcraftTasksetConfig]):
    """An envcraft task set as verifiers tasks."""

    def load(self) -> Any:
        directory = str(Path(self.config.tasks).resolve())
        wanted = set(self.config.ids)
        for task in read_tasks(directory):
            if wanted and task.id not in wanted:
                continue
            turns = [t.user for t in task.turns]
            yield EnvcraftTask(
                EnvcraftTaskData(
                    id=task.id,
                    name=task.id,
                    prompt=turns[0] if turns else None,
                    system_prompt=system_prompt(task, self.config.profile),
                    task_id=task.id,
                    tasks=directory,
                    profile=self.config.profile,
                    user_turns=turns,
                ),
                self.config.task,
            )


class EnvcraftEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()


class EnvcraftEnv(vf.Env[EnvcraftEnvConfig]):
    """The user of an envcraft task: reveals the next turn each time the agent answers."""

    async def run(self, task: Any, agents: Any) -> None:
        turns = list(task.data.user_turns)
        opened = type(task)(task.data.model_copy(update={"prompt": None}), task.config)
        async with agents.player.interaction(opened) as interaction:
            for index, text in enumerate(turns):
                interaction.trace.state.turn = index
                segment = await interaction.turn(text)
                if segment.terminated:
                    break
            interaction.trace.state.turn = len(turns)


if __name__ == "__main__":  # verifiers launches a task's tool server as `python -m <module>`
    EnvcraftToolset.run()
