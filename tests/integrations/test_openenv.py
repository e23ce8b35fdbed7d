"""The OpenEnv adapter, served by OpenEnv's own app and played over `/ws` with OpenEnv's client.

Runs in the openenv virtualenv (`scripts/_venv.sh`: openenv needs mcp<2, which the main
environment's MCP server cannot share). A real uvicorn server in a subprocess, OpenEnv's
`GenericEnvClient` over its WebSocket: the reference scores 1 and a wrong play scores below 1,
each exactly what `envcraft tasks score` gives the episode's trajectory; two connections are
two isolated episodes; HTTP `/step` keeps no episode.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("ENVCRAFT_EXTRA") == "openenv":
    import openenv  # noqa: F401  (the openenv run must not skip)
else:
    pytest.importorskip("openenv", reason="the openenv extra lives in .venv-openenv")

import httpx
from openenv import GenericEnvClient

from envcraft.tasks.format.model import Task

from .interop_support import interop_tasks, player_calls, skipped_turn, tasks_score, write_task_set

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return interop_tasks()


@pytest.fixture(scope="module")
def task_dir(tasks: dict[str, Task], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task_set(tmp_path_factory.mktemp("tasks"), tasks)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(task_dir: Path, task: Task, tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (tmp_path / f"server-{task.id}.log").open("w")
    command = [
        sys.executable,
        "-m",
        "envcraft.integrations.openenv",
        str(task_dir),
        task.id,
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(command, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise AssertionError((tmp_path / f"server-{task.id}.log").read_text())


def play(client: Any, task: Task, skip_turn: int | None = None) -> tuple[Any, dict[str, Any]]:
    reset = client.reset()
    assert reset.observation["user_message"] == task.turns[0].user
    assert {t["function"]["name"] for t in reset.observation["tools"]} >= {"read", "write", "edit", "exec"}
    result = reset
    for turn, calls in enumerate(player_calls(task, "openclaw")):
        for name, args in calls if turn != skip_turn else []:
            result = client.step({"tool": name, "args": args})
            assert result.observation["result"] is not None and "error" not in result.observation["result"]
            assert result.reward is None and not result.done
        result = client.step({"end_turn": True})
    assert result.done
    return result, client.state()


@pytest.mark.parametrize("kind", ["claw", "cross"])
def test_played_over_ws_the_reward_is_what_tasks_score_gives(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path, kind: str
) -> None:
    task = tasks[kind]
    proc, url = serve(task_dir, task, tmp_path)
    try:
        with GenericEnvClient(base_url=url).sync() as client:
            right, state = play(client, task)
            assert right.reward == 1.0
            assert state["task_id"] == task.id and state["step_count"] > 0
            assert tasks_score(task_dir, state["trajectory"], tmp_path) == 1.0
            wrong, wrong_state = play(client, task, skip_turn=skipped_turn(task))  # reset: a fresh episode
            assert wrong.reward < 1.0
            assert tasks_score(task_dir, wrong_state["trajectory"], tmp_path) == wrong.reward
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_each_connection_is_its_own_episode_and_http_step_keeps_none(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path
) -> None:
    task = tasks["claw"]
    proc, url = serve(task_dir, task, tmp_path)
    try:
        with GenericEnvClient(base_url=url).sync() as one, GenericEnvClient(base_url=url).sync() as two:
            one.reset()
            two.reset()
            one.step({"tool": "write", "args": {"path": "only-one.txt", "content": "1"}})
            assert "only-one.txt" in one.state()["files"]
            assert "only-one.txt" not in two.state()["files"]
            listed = two.step({"tool": "exec", "args": {"command": "ls"}})
            assert "only-one.txt" not in listed.observation["text"]
        # OpenEnv's HTTP /step builds a fresh environment: no file survives into the next request
        httpx.post(
            f"{url}/step", json={"action": {"tool": "write", "args": {"path": "x.txt", "content": "x"}}}
        )
        state = httpx.get(f"{url}/state").json()
        assert "x.txt" not in state.get("files", {})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
