"""The verifiers v1 adapter, driven by verifiers' own machinery (runs in the verifiers virtualenv).

verifiers' loader finds the taskset and its env by id; for a rollout, verifiers' own
`InterceptionServer` holds the rollout's shared state and task channel, verifiers' `serve`
launches the task's tool server as a subprocess, the official MCP client plays the calls
(the reference, or a wrong play), and `Task.score` records the reward: exactly what
`envcraft tasks score` gives the same calls. No model runs (none can here): the calls are
the scripted agent's, sent over the real protocol.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("ENVCRAFT_EXTRA") == "verifiers":
    import verifiers  # noqa: F401  (the verifiers run must not skip)
else:
    pytest.importorskip("verifiers.v1", reason="the verifiers extra lives in .venv-verifiers")

import verifiers.v1 as vf
from mcp import Client
from verifiers.v1.interception.server import InterceptionServer
from verifiers.v1.mcp import serve
from verifiers.v1.session import RolloutSession
from verifiers.v1.state import state_cls

from envcraft.tasks.format.model import Task

from .interop_support import interop_tasks, player_calls, skipped_turn, tasks_score, write_task_set

pytestmark = pytest.mark.slow
TASKSET = "envcraft-verifiers"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return interop_tasks()


@pytest.fixture(scope="module")
def task_dir(tasks: dict[str, Task], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task_set(tmp_path_factory.mktemp("tasks"), tasks)


def load(task_dir: Path, profile: str = "openclaw") -> dict[str, Any]:
    from envcraft.integrations.verifiers import EnvcraftTasksetConfig

    taskset = vf.load_taskset(EnvcraftTasksetConfig(id=TASKSET, tasks=str(task_dir), profile=profile))
    return {t.data.task_id: t for t in taskset}


def rollout(task: Any, calls: list[list[tuple[str, dict[str, Any]]]]) -> tuple[vf.Trace, dict[str, Any]]:
    """One rollout through verifiers' state channel and tool-server launch, scored by the task."""

    async def main() -> tuple[vf.Trace, dict[str, Any]]:
        trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            state=state_cls(type(task))(),
            agent=vf.AgentInfo(config=vf.AgentConfig(), name="scripted", trainable=False),
        )
        ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url="http://127.0.0.1:9/v1"))
        interception = InterceptionServer()
        async with interception.stack:
            await interception.start()
            async with interception.acquire(RolloutSession(ctx=ctx, trace=trace)) as (base, _, state_secret):
                (toolset,) = type(task).toolsets(task.config)
                async with (
                    serve(toolset, state_secret=state_secret, state_base=base) as url,
                    Client(url) as client,
                ):
                    listed = {t.name for t in (await client.list_tools()).tools}
                    for turn, turn_calls in enumerate(calls):
                        trace.state.turn = turn  # what EnvcraftEnv does when the agent has answered
                        for name, args in turn_calls:
                            result = await client.call_tool(name, args)
                            assert not result.is_error, (name, args, result)
                    trace.state.turn = len(calls)
        await task.score(trace)
        return trace, {"task_id": task.data.task_id, "turns": trace.state.turns, "tools": listed}

    return asyncio.run(main())


def test_verifiers_loads_the_taskset_and_its_env_by_id(tasks: dict[str, Task], task_dir: Path) -> None:
    from envcraft.integrations.verifiers import EnvcraftEnv, EnvcraftTask

    loaded = load(task_dir)
    assert set(loaded) == {t.id for t in tasks.values()}
    assert vf.environment_class(TASKSET) is EnvcraftEnv
    for kind, task in tasks.items():
        vtask = loaded[task.id]
        assert isinstance(vtask, EnvcraftTask), kind
        assert vtask.data.prompt == task.turns[0].user
        assert vtask.data.user_turns == [t.user for t in task.turns]
        assert "## Skills (mandatory)" in vtask.data.system_prompt
        assert "<location>/workspace/skills/" in vtask.data.system_prompt


@pytest.mark.parametrize("kind", ["claw", "cross"])
def test_a_rollout_is_rewarded_as_tasks_score_rewards_its_calls(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path, kind: str
) -> None:
    task = tasks[kind]
    vtask = load(task_dir)[task.id]
    right, right_traj = rollout(vtask, player_calls(task, "openclaw"))
    assert {"read", "write", "edit", "exec"} <= right_traj.pop("tools")
    assert right.rewards["envcraft"].score == tasks_score(task_dir, right_traj, tmp_path) == 1.0
    assert right.metrics  # the verifier's components
    wrong_calls = player_calls(task, "openclaw")
    wrong_calls[skipped_turn(task)] = []  # leaves a turn's work out
    wrong, wrong_traj = rollout(vtask, wrong_calls)
    wrong_traj.pop("tools")
    assert wrong.rewards["envcraft"].score == tasks_score(task_dir, wrong_traj, tmp_path) < 1.0


def test_the_claude_code_profile_is_rewarded_the_same(tasks: dict[str, Task], task_dir: Path) -> None:
    task = tasks["claw"]
    vtask = load(task_dir, profile="claude-code")[task.id]
    trace, trajectory = rollout(vtask, player_calls(task, "claude-code"))
    assert {"Bash", "Read", "Write", "Edit"} <= trajectory["tools"]
    assert trace.rewards["envcraft"].score == 1.0


def test_vf_validate_checks_each_reference_solution(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path
) -> None:
    # vf-validate's gold check is Task.validate: the reference, replayed from S0, must score 1.0
    for task in load(task_dir).values():
        assert asyncio.run(task.validate(None)) is True
    hollow = {name: task.model_copy(deep=True) for name, task in tasks.items()}
    for task in hollow.values():
        task.reference.calls = []  # a reference that does nothing does not solve the task
    for task in load(write_task_set(tmp_path / "hollow", hollow)).values():
        assert asyncio.run(task.validate(None)) is False
    # the task set must be where the task data says (it travels by path, not by value)
    moved = next(iter(load(task_dir).values())).with_data(tasks=str(tmp_path / "elsewhere"))
    with pytest.raises(vf.TaskError, match="not on this machine"):
        asyncio.run(moved.validate(None))
