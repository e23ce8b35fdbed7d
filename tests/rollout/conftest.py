"""A small task set of today's built-in tasks: tool, Claw and cross-environment, made once per run.

Synthesized through ``envcraft tasks synth`` (the stable command), so these tests do not depend
on how the data engine makes tasks, only on the task format.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task

# class_booking gives multi-turn tool tasks; cross-environment tasks are rare since they must
# carry a value across; the `tasks` fixture checks every kind is there (seed 6 has a two-turn tool task).
ENVS = "returns_desk,class_booking,notes_desk,mail_triage,event_stream"
SEED = "6"


@pytest.fixture(scope="session")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tasks")
    result = CliRunner().invoke(
        app, ["tasks", "synth", "--envs", ENVS, "--n", "8", "--seed", SEED, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def tasks(task_dir: Path) -> list[Task]:
    found = read_tasks(task_dir)
    kinds = {(t.kind, len(t.envs) > 1) for t in found}
    assert {("tool", False), ("claw", False), ("claw", True)} <= kinds, kinds
    return found


@pytest.fixture
def tool_task(tasks: list[Task]) -> Task:
    return next(t for t in tasks if t.kind == "tool" and len(t.turns) >= 2)


@pytest.fixture
def claw_task(tasks: list[Task]) -> Task:
    return next(t for t in tasks if t.kind == "claw" and len(t.envs) == 1)


@pytest.fixture
def cross_task(tasks: list[Task]) -> Task:
    return next(t for t in tasks if len(t.envs) > 1)
