"""`envcraft serve-mcp` with the official MCP client: in process, a real stdio subprocess, a real HTTP server.

A task played over MCP (OpenClaw profile) scores what the same calls score through
`envcraft tasks score`, for a Claw task and a cross-environment task, and for a wrong
play as well as the reference. Connections are isolated; the control channel is not on
the model's tool list.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")

import httpx2  # noqa: E402  (mcp's HTTP client)
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from envcraft.integrations.mcp import EpisodeTable, ModelServer, Source  # noqa: E402
from envcraft.tasks.format.model import Task  # noqa: E402
from envcraft.tasks.play.episode import Episode  # noqa: E402

from .interop_support import (  # noqa: E402
    ENVCRAFT,
    interop_tasks,
    player_calls,
    skipped_turn,
    tasks_score,
    write_task_set,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return interop_tasks()


@pytest.fixture(scope="module")
def task_dir(tasks: dict[str, Task], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task_set(tmp_path_factory.mktemp("tasks"), tasks)


def payload(result: Any) -> dict[str, Any]:
    """A control tool's answer (MCPServer sends a returned dict as JSON text)."""
    assert not result.is_error, result
    return json.loads(result.content[0].text)


def wait_for_line(path: Path, needle: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if needle in line:
                return line
        time.sleep(0.1)
    raise AssertionError(f"no {needle!r} in {path}: {path.read_text()[-2000:]}")


async def play(
    model: Client, control: Client, task: Task, episode: str = "", skip_turn: int | None = None
) -> None:
    for turn, calls in enumerate(player_calls(task, "openclaw")):
        for name, args in calls if turn != skip_turn else []:
            result = await model.call_tool(name, args)
            assert not result.is_error, (name, args, result)
        payload(await control.call_tool("end_turn", {"episode": episode}))


def test_in_process_the_tools_are_the_episodes_with_structured_errors(tasks: dict[str, Task]) -> None:
    task = tasks["cross"]
    server = ModelServer(EpisodeTable(Source("openclaw", task=task)))
    with Episode.open(task, profile="openclaw") as episode:
        expected = {t["function"]["name"]: t["function"]["parameters"] for t in episode.openai_tools()}

    async def main() -> None:
        async with Client(server) as client:
            listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert listed == expected
            assert not {"end_turn", "score", "reset", "envcraft_score"} & set(listed)
            denied = await client.call_tool("read", {"path": "../../etc/passwd"})
            assert denied.is_error and denied.structured_content["error"]["category"] == "permission_denied"
            missing = await client.call_tool("edit", {"path": "x.md"})
            assert missing.is_error and missing.structured_content["error"]["category"] == "missing_field"
            unknown = await client.call_tool("write_file", {"path": "x", "content": "y"})
            assert unknown.is_error and unknown.structured_content["error"]["category"] == "not_found"

    anyio.run(main)
    exposed = ModelServer(EpisodeTable(Source("openclaw", task=task)), expose_control=True)
    assert {"envcraft_score", "envcraft_end_turn", "envcraft_reset"} <= {t.name for t in exposed._tools}


@pytest.mark.parametrize("kind", ["claw", "cross"])
def test_stdio_subprocess_scores_as_tasks_score(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path, kind: str
) -> None:
    task = tasks[kind]
    errors = tmp_path / "stderr.txt"
    params = StdioServerParameters(
        command=ENVCRAFT,
        args=["serve-mcp", "--task", str(task_dir), task.id, "--transport", "stdio", "--control-port", "0"],
    )
    scores: dict[str, float] = {}
    trajectories: dict[str, dict[str, Any]] = {}

    async def main() -> None:
        with errors.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as model:
                line = await anyio.to_thread.run_sync(wait_for_line, errors, "control channel")
                async with Client(line.split()[-1]) as control:
                    assert (await control.call_tool("score", {})).is_error is False
                    await play(model, control, task)
                    scores["right"] = payload(await control.call_tool("score", {}))["score"]
                    trajectories["right"] = payload(await control.call_tool("trajectory", {}))
                    # the last turn has ended: the model channel takes no more calls, turns do not grow
                    late = await model.call_tool("write", {"path": "late.txt", "content": "after the end"})
                    assert late.is_error, late
                    assert late.structured_content["error"]["category"] == "invalid_transition"
                    assert payload(await control.call_tool("end_turn", {}))["done"] is True
                    assert payload(await control.call_tool("score", {}))["score"] == scores["right"]
                    assert payload(await control.call_tool("trajectory", {})) == trajectories["right"]
                    payload(await control.call_tool("reset", {}))
                    await play(model, control, task, skip_turn=skipped_turn(task))
                    scores["wrong"] = payload(await control.call_tool("score", {}))["score"]
                    trajectories["wrong"] = payload(await control.call_tool("trajectory", {}))

    anyio.run(main)
    assert "Traceback" not in errors.read_text(), errors.read_text()  # the disconnect shuts down cleanly
    assert scores["right"] == tasks_score(task_dir, trajectories["right"], tmp_path) == 1.0
    assert scores["wrong"] == tasks_score(task_dir, trajectories["wrong"], tmp_path) < 1.0


def test_http_server_isolates_connections_and_scores_as_tasks_score(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path
) -> None:
    task = tasks["cross"]
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        server = subprocess.Popen(
            [ENVCRAFT, "serve-mcp", "--task", str(task_dir), task.id, "--transport", "http", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
    try:
        words = wait_for_line(errors, "model channel").split()
        model_url, control_url = words[words.index("channel") + 1], words[-1]
        results: dict[str, Any] = {}

        async def main() -> None:
            async with Client(control_url) as control:
                # two handshake (2025-11-25) connections: one episode per Mcp-Session-Id
                async with Client(model_url, mode="legacy") as one, Client(model_url, mode="legacy") as two:
                    await one.call_tool("write", {"path": "only-one.txt", "content": "1"})
                    keys_one = set(payload(await control.call_tool("episodes", {}))["episodes"])
                    seen = await two.call_tool("exec", {"command": "ls"})
                    assert "only-one.txt" not in seen.content[0].text
                    (key_two,) = set(payload(await control.call_tool("episodes", {}))["episodes"]) - keys_one
                    await play(two, control, task, episode=key_two)
                    results["legacy"] = payload(await control.call_tool("score", {"episode": key_two}))[
                        "score"
                    ]
                    results["legacy_traj"] = payload(
                        await control.call_tool("trajectory", {"episode": key_two})
                    )
                # a 2026-07-28 client has no session: it carries a handle from open_episode
                opened = payload(await control.call_tool("open_episode", {}))
                headers = {opened["header"]: opened["episode"]}
                async with (
                    httpx2.AsyncClient(headers=headers) as http,
                    Client(streamable_http_client(model_url, http_client=http)) as modern,
                ):
                    await play(modern, control, task, episode=opened["episode"], skip_turn=skipped_turn(task))
                results["modern"] = payload(await control.call_tool("score", {"episode": opened["episode"]}))[
                    "score"
                ]
                results["modern_traj"] = payload(
                    await control.call_tool("trajectory", {"episode": opened["episode"]})
                )
                async with Client(model_url) as bare:
                    refused = await bare.call_tool("exec", {"command": "ls"})
                    assert refused.is_error
                    assert refused.structured_content["error"]["category"] == "missing_binding"

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert results["legacy"] == tasks_score(task_dir, results["legacy_traj"], tmp_path) == 1.0
    assert results["modern"] == tasks_score(task_dir, results["modern_traj"], tmp_path) < 1.0


def test_an_environment_is_served_from_its_seeded_s0_with_nothing_to_score() -> None:
    from envcraft.core.package import load_package
    from envcraft.integrations.mcp import ControlServer

    table = EpisodeTable(Source("claude-code", package=load_package("notes_desk"), seed=3))
    model, control = ModelServer(table), ControlServer(table, default_key="local")

    async def main() -> None:
        async with Client(model) as client, Client(control) as trainer:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"Bash", "Read", "Write", "Edit", "add_action_item"} <= names
            read = await client.call_tool("Read", {"file_path": "/workspace/action_items.csv", "limit": 1})
            assert read.content[0].text.startswith("     1\titem_id,")
            scored = await trainer.call_tool("score", {})
            assert json.loads(scored.content[0].text)["error"]["category"] == "invalid_argument"
            unknown = await trainer.call_tool("score", {"episode": "ep-nope"})
            assert unknown.is_error

    anyio.run(main)
    table.close_all()


def test_bad_command_lines_are_one_line_errors(task_dir: Path, tasks: dict[str, Task]) -> None:
    cases = [
        (["--task", str(task_dir), "no-such-task"], "no task 'no-such-task'"),
        (["--task", str(task_dir)], "--task takes TASKS ID"),
        (["no_such_env"], "no_such_env"),
        (["notes_desk", "--transport", "carrier-pigeon"], "unknown transport"),
        (["notes_desk", "--profile", "hermes"], "unknown tool profile"),
    ]
    for args, fragment in cases:
        out = subprocess.run([ENVCRAFT, "serve-mcp", *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, (args, out.stderr)
        assert fragment in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)


def test_help_names_the_extra_with_its_brackets() -> None:
    out = subprocess.run(
        [ENVCRAFT, "serve-mcp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0 and "pip install 'envcraft[mcp]'" in out.stdout, out.stdout
