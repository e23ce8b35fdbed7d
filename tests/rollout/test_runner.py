"""Many rollouts: the trajectories file resumes, and the API key reaches nothing an agent or a reader sees."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from envcraft.llm import ChatRequest, ChatServer, OpenAIProvider, ProviderConfig, ReplayProvider, Secret
from envcraft.rollout.loop import RolloutConfig, Trajectory
from envcraft.rollout.policies import OracleProvider
from envcraft.rollout.runner import Job, read_trajectories, run_rollouts
from envcraft.tasks.format.model import Task

KEY = "sk-rollout-SECRET-9d2e71c0"
PROBE = "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done; true"


def run(job: Job, provider: Any, out: Path | None) -> list[Trajectory]:
    async def main() -> list[Trajectory]:
        try:
            return await run_rollouts(job, provider, out)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def test_an_interrupted_job_resumes_without_redoing_finished_rollouts(
    tasks: list[Task], tmp_path: Path
) -> None:
    chosen = tasks[:4]
    out = tmp_path / "trajectories.jsonl"
    first = OracleProvider(chosen)
    run(Job(chosen[:2], k=2), first, out)
    with open(out, "a", encoding="utf-8") as handle:
        handle.write('{"task_id": "torn')  # a job killed in mid-write
    second = _Counting(chosen)
    trajectories = run(Job(chosen, k=2), second, out)
    assert {t.user.rsplit("#", 1)[0] for t in second.asked} == {t.id for t in chosen[2:]}
    assert [(t.task_id, t.sample) for t in trajectories] == [(t.id, s) for t in chosen for s in range(2)]
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 8 and all(json.loads(line)["reward"]["score"] == 1.0 for line in lines)
    assert {(t.task_id, t.sample) for t in read_trajectories(out)} == {
        (t.id, s) for t in chosen for s in range(2)
    }


class _Counting(OracleProvider):
    def __init__(self, tasks: list[Task]) -> None:
        super().__init__(tasks)
        self.asked: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> Any:
        self.asked.append(request)
        return await super().complete(request)


def test_the_key_reaches_no_sandbox_trajectory_or_log(
    claw_task: Task, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A model that asks the shell for every environment variable and process it can see."""
    caplog.set_level(logging.DEBUG)

    def snoop(request: ChatRequest) -> Any:
        if any(m["role"] == "tool" for m in request.messages):
            return "that is all I could find"
        args = json.dumps({"command": PROBE})
        return {
            "role": "assistant",
            "tool_calls": [{"id": "s", "function": {"name": "shell", "arguments": args}}],
        }

    with ChatServer(ReplayProvider([snoop] * 20), api_key=KEY) as server:
        provider = OpenAIProvider(ProviderConfig(model="m", base_url=server.url, api_key=Secret(KEY)))
        out = tmp_path / "trajectories.jsonl"
        (trajectory,) = run(Job([claw_task], config=RolloutConfig(profile="envcraft")), provider, out)
    shell = json.loads(next(m["content"] for m in trajectory.messages if m["role"] == "tool"))
    assert shell["exit_code"] == 0 and "ENVCRAFT_SESSION" in shell["stdout"]  # the probe did run
    assert not shell["truncated"]  # and all of its output is here
    assert trajectory.requests >= 2  # and the key was accepted by the server on every request
    assert KEY not in out.read_text(encoding="utf-8")
    assert KEY not in json.dumps(trajectory.to_json())
    assert KEY not in caplog.text


def test_damaged_lines_of_a_trajectories_file_are_skipped_not_fatal(tmp_path: Path) -> None:
    """A resumed job reads what it wrote; bytes that are not UTF-8, NaN and absurd nesting in
    another line must not stop it (they used to raise out of the reader)."""
    good = [Trajectory("t-1", s, "m", "tool", ["counter"], "tool").to_json() for s in range(2)]
    path = tmp_path / "trajectories.jsonl"
    path.write_bytes(
        json.dumps(good[0]).encode() + b"\n"
        + b'{"task_id": "t-\xff"}\n'
        + json.dumps({**good[1], "score": 0.0}).replace("0.0", "NaN", 1).encode() + b"\n"
        + b"[" * 5000 + b"]" * 5000 + b"\n"
        + json.dumps(good[1]).encode() + b"\n"
    )  # fmt: skip
    assert [t.sample for t in read_trajectories(path)] == [0, 1]
