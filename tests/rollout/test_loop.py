"""The agent loop on today's tasks: oracle and random over real HTTP, turns, limits, errors, modes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcraft.llm import (
    ChatRequest,
    LLMError,
    ReplayProvider,
)
from envcraft.llm.types import ChatResponse, Usage
from envcraft.rollout.loop import RolloutConfig, Trajectory
from envcraft.rollout.policies import OracleProvider, RandomProvider, serve_policy
from envcraft.rollout.runner import Job, run_rollouts
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.verifier.scoring import score_trajectory

from .support import play

Policy = Callable[[ChatRequest], Any]


def scripted(policy: Policy, model: str = "scripted") -> ReplayProvider:
    return ReplayProvider([policy] * 500, model=model)


def call(name: str, args: Any, index: int = 0) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c{index}", "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def jobs(
    tasks: list[Task], provider: Any, k: int = 1, concurrency: int = 4, out: Path | None = None
) -> list[Trajectory]:
    async def main() -> list[Trajectory]:
        try:
            return await run_rollouts(Job(tasks, k=k, concurrency=concurrency), provider, out)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def assert_rescores_the_same(task: Task, trajectory: Trajectory) -> None:
    """The recorded calls, re-played by `tasks score` in fresh sessions, earn the same reward."""
    assert score_trajectory(task, trajectory.turns).score == pytest.approx(trajectory.score)


def test_the_oracle_over_http_scores_every_task_fully(tasks: list[Task]) -> None:
    with serve_policy(OracleProvider(tasks)) as provider:
        trajectories = jobs(tasks, provider, k=2)
    assert len(trajectories) == 2 * len(tasks)
    by_id = {t.id: t for t in tasks}
    for trajectory in trajectories:
        task = by_id[trajectory.task_id]
        assert (trajectory.score, trajectory.stop, trajectory.error) == (1.0, "done", None), (
            trajectory.task_id
        )
        assert trajectory.passed and trajectory.turns_played == len(task.turns)
        assert trajectory.tool_calls == len(task.reference.calls)
        assert trajectory.steps == len(task.reference.calls) + len(task.turns)
        assert trajectory.usage.prompt_tokens > 0 and trajectory.usage.completion_tokens > 0
        assert trajectory.model == "oracle" and trajectory.requests == trajectory.steps
        assert_rescores_the_same(task, trajectory)


def test_random_is_a_baseline_that_passes_nothing(tasks: list[Task]) -> None:
    with serve_policy(RandomProvider()) as provider:
        trajectories = jobs(tasks, provider)
    assert sum(t.passed for t in trajectories) == 0
    assert sum(t.score for t in trajectories) / len(trajectories) < 0.1
    assert sum(t.tool_calls for t in trajectories) >= len(tasks)  # it did act
    by_id = {t.id: t for t in tasks}
    for trajectory in trajectories:
        assert_rescores_the_same(by_id[trajectory.task_id], trajectory)


def test_an_agent_that_only_talks_earns_the_do_nothing_score(tasks: list[Task]) -> None:
    trajectories = jobs(tasks, scripted(lambda request: "I have done it."))
    by_id = {t.id: t for t in tasks}
    for trajectory in trajectories:
        task = by_id[trajectory.task_id]
        assert trajectory.turns == [[] for _ in task.turns] and trajectory.stop == "done"
        assert not trajectory.passed
        # what validation measured for doing nothing (0 unless a goal already holds in S0)
        assert trajectory.score == pytest.approx(task.quality["noop_score"])
    assert sum(t.score for t in trajectories) / len(trajectories) < 0.05


def test_user_turns_are_revealed_one_at_a_time(tool_task: Task) -> None:
    replay = scripted(lambda request: "ok")
    trajectory = play(tool_task, replay)
    users = [[m["content"] for m in r.messages if m["role"] == "user"] for r in replay.requests]
    expected = [t.user for t in tool_task.turns]
    assert users == [expected[: i + 1] for i in range(len(expected))]
    assert trajectory.turns_played == len(expected) and trajectory.stop == "done"
    roles = [m["role"] for m in trajectory.messages]
    assert roles == ["system", *["user", "assistant"] * len(expected)]


def first_tool(request: ChatRequest) -> str:
    return str(request.tools[0]["function"]["name"])


def test_step_token_and_turn_limits_stop_a_rollout(tool_task: Task) -> None:
    forever = scripted(lambda request: call(first_tool(request), {}))
    capped = play(tool_task, forever, RolloutConfig(max_steps=3))
    assert (capped.stop, capped.steps, capped.tool_calls) == ("max_steps", 3, 3)

    costly = ChatResponse(message={"role": "assistant", "content": "ok"}, usage=Usage(900, 100, 0))
    by_tokens = play(tool_task, ReplayProvider([costly] * 10), RolloutConfig(max_tokens=900))
    # the first answer ends turn 1 having spent 1,000 tokens; turn 2 is not started
    assert (by_tokens.stop, by_tokens.steps, by_tokens.usage.total_tokens) == ("max_tokens", 1, 1000)

    one_turn = play(tool_task, scripted(lambda request: "ok"), RolloutConfig(max_turns=1))
    assert (one_turn.stop, one_turn.turns_played, one_turn.requests) == ("max_turns", 1, 1)


def test_tool_errors_go_back_as_tool_messages(tool_task: Task) -> None:
    def clumsy(request: ChatRequest) -> Any:
        done = sum(1 for m in request.messages if m["role"] == "tool")
        real = next(t["function"] for t in request.tools if t["function"]["parameters"].get("required"))
        attempts = [
            call("no_such_tool", {}),
            call(real["name"], "{not json"),
            call(real["name"], {}),  # a required argument missing
        ]
        return attempts[done] if done < len(attempts) else "sorry"

    trajectory = play(tool_task, scripted(clumsy), RolloutConfig(max_turns=1))
    results = [json.loads(m["content"]) for m in trajectory.messages if m["role"] == "tool"]
    assert len(results) == 3 and all("error" in r for r in results)
    assert [r["error"]["category"] for r in results] == ["not_found", "invalid_argument", "missing_field"]
    assert trajectory.tool_errors == 3 and trajectory.stop == "max_turns"
    # an unknown name is recorded as <profile>:<name>, which no environment can declare
    assert len(trajectory.turns[0]) == 3 and trajectory.turns[0][0]["tool"] == "openclaw:no_such_tool"
    assert_rescores_the_same(tool_task, trajectory)


def test_claw_mode_under_the_canonical_profile_pastes_readme_and_skills(claw_task: Task) -> None:
    replay = scripted(lambda request: "ok")
    play(claw_task, replay, RolloutConfig(profile="envcraft"))
    system = replay.requests[0].messages[0]["content"]
    names = {t["function"]["name"] for t in replay.requests[0].tools}
    for package in resolve_packages(claw_task).values():
        assert package.readme.strip()[:200] in system
        for skill in package.skills.values():
            assert skill.read_text(encoding="utf-8").strip() in system
        assert set(package.env_class.tools) <= names
    assert {"shell", "read_file", "write_file"} <= names


def test_claw_mode_speaks_openclaw_by_default(claw_task: Task) -> None:
    """OpenClaw's tools, its skills listing (skills read on demand from the workspace), text results."""
    skill = next(s for p in resolve_packages(claw_task).values() for s in p.skills)
    location = f"skills/{skill}/SKILL.md"

    def reads_the_skill(request: ChatRequest) -> Any:
        if any(m["role"] == "tool" for m in request.messages):
            return "done"
        return call("read", {"path": location})

    replay = scripted(reads_the_skill)
    trajectory = play(claw_task, replay, RolloutConfig(max_turns=1))
    system = replay.requests[0].messages[0]["content"]
    names = {t["function"]["name"] for t in replay.requests[0].tools}
    assert {"read", "write", "edit", "exec", "process"} <= names
    assert not names & {"shell", "read_file", "write_file", "edit_file", "list_files"}
    assert "<available_skills>" in system and location in system
    assert trajectory.profile == "openclaw" and trajectory.to_json()["profile"] == "openclaw"
    shown = next(m["content"] for m in trajectory.messages if m["role"] == "tool")
    assert shown.startswith("---") or not shown.lstrip().startswith("{")  # the file's text, not JSON
    assert trajectory.turns[0] == [
        {"env": claw_task.envs[0], "tool": "read_file", "args": {"path": location}}
    ]  # stored canonically


@pytest.mark.parametrize("profile", ["openclaw", "claude-code", "envcraft"])
def test_the_oracle_plays_claw_references_under_every_profile(tasks: list[Task], profile: str) -> None:
    """Reference system calls (write, read, list) made the profile's way score 1.0, stored the same."""
    claw = [t for t in tasks if t.kind == "claw"]
    system = {"shell", "read_file", "write_file", "edit_file", "list_files"}
    assert any(c.tool in system for t in claw for c in t.reference.calls)
    with serve_policy(OracleProvider(claw)) as provider:
        trajectories = _jobs_with(claw, provider, RolloutConfig(profile=profile))
    by_id = {t.id: t for t in claw}
    for trajectory in trajectories:
        task = by_id[trajectory.task_id]
        assert (trajectory.score, trajectory.error) == (1.0, None), trajectory.task_id
        # (a system call is stored under the env holding the shared workspace, whatever the reference says)
        stored = [c["tool"] for turn in trajectory.turns for c in turn]
        expected = [
            "shell" if c.tool == "list_files" and profile != "envcraft" else c.tool
            for c in task.reference.calls
        ]
        assert stored == expected
        assert_rescores_the_same(task, trajectory)


def _jobs_with(tasks: list[Task], provider: Any, config: RolloutConfig) -> list[Trajectory]:
    async def main() -> list[Trajectory]:
        try:
            return await run_rollouts(Job(tasks, k=1, concurrency=4, config=config), provider, None)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def test_function_mode_on_a_claw_task_hides_the_system_tools(claw_task: Task) -> None:
    def tries_the_shell(request: ChatRequest) -> Any:
        if any(m["role"] == "tool" for m in request.messages):
            return "done"
        return call("exec", {"command": "touch made-by-shell"})

    replay = scripted(tries_the_shell)
    trajectory = play(claw_task, replay, RolloutConfig(mode="function", max_turns=1))
    names = {t["function"]["name"] for t in replay.requests[0].tools}
    assert "exec" not in names and "write" not in names and names
    refused = json.loads(next(m["content"] for m in trajectory.messages if m["role"] == "tool"))
    assert refused["error"]["category"] == "not_found"
    assert trajectory.turns[0] == []  # nothing reached a session


def test_a_model_error_stops_the_rollout_with_the_reason(tool_task: Task) -> None:
    trajectory = play(tool_task, ReplayProvider([LLMError("server", "the model fell over")]))
    assert trajectory.stop == "model_error" and "the model fell over" in str(trajectory.error)
    assert trajectory.score == 0.0 and trajectory.score_error is None  # still scored, as a do-nothing run


def test_concurrent_rollouts_get_fresh_sessions_and_respect_the_cap(tool_task: Task, claw_task: Task) -> None:
    in_flight = [0, 0]  # now, most

    class Watching(OracleProvider):
        async def complete(self, request: ChatRequest) -> ChatResponse:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
            try:
                await asyncio.sleep(0.02)
                return await super().complete(request)
            finally:
                in_flight[0] -= 1

    trajectories = jobs([tool_task, claw_task], Watching([tool_task, claw_task]), k=3, concurrency=2)
    assert [t.score for t in trajectories] == [1.0] * 6  # six plays of two tasks, none sees another's state
    assert [(t.task_id, t.sample) for t in trajectories] == [
        (t.id, s) for t in (tool_task, claw_task) for s in range(3)
    ]
    # a rollout has one request in flight at a time: at most `concurrency` rollouts ran at once, and 2 did
    assert in_flight[1] == 2
