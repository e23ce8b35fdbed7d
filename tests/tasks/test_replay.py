"""Golden replay: fresh sessions reproduce the recorded hash, and the verifier gives 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.tasks.format.io import TaskSetError, read_tasks, write_tasks
from envcraft.tasks.validation.validate import replay_task

from .verify_support import make_task

INC_A = {"env": "counter", "tool": "increment", "args": {"name": "a", "by": 2}}


def test_replay_reproduces_hash_and_scores_one() -> None:
    task, _ = make_task([[INC_A]])
    result = replay_task(task)
    assert result.ok and result.hash_ok and result.score == 1.0


def test_replay_flags_a_wrong_hash_and_a_wrong_verifier() -> None:
    task, _ = make_task([[INC_A]])
    task.reference.final_hash = "0" * 64
    assert not replay_task(task).ok
    task2, _ = make_task([[{"env": "counter", "tool": "increment", "args": {"name": "a", "by": 3}}]])
    result = replay_task(task2)
    assert result.hash_ok and not result.ok and result.score == 0.0


def test_replay_cli_json_and_exit_code(tmp_path: Path) -> None:
    good, _ = make_task([[INC_A]], task_id="good")
    bad, _ = make_task([[INC_A]], task_id="bad")
    bad.reference.final_hash = "f" * 64
    runner = CliRunner()
    write_tasks(tmp_path / "ok", [good])
    done = runner.invoke(app, ["tasks", "replay", str(tmp_path / "ok"), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["pass_rate"] == 1.0
    write_tasks(tmp_path / "mixed", [good, bad])
    done = runner.invoke(app, ["tasks", "replay", str(tmp_path / "mixed"), "--json"])
    assert done.exit_code == 1
    report = json.loads(done.stdout)
    assert report["passed"] == 1 and [f["task_id"] for f in report["failures"]] == ["bad"]


def test_replay_cli_rejects_a_missing_directory(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["tasks", "replay", str(tmp_path / "nothing")])
    assert done.exit_code == 2
    assert "tasks.jsonl" in done.output


def test_task_set_round_trip_and_malformed_lines(tmp_path: Path) -> None:
    task, _ = make_task([[INC_A]])
    path = write_tasks(tmp_path, [task, task])
    assert read_tasks(tmp_path) == [task, task]
    assert not list(tmp_path.glob(".*tmp"))  # the atomic write left no temp file behind
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text(lines[0] + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(TaskSetError, match="line 3: not valid JSON"):
        read_tasks(tmp_path)
    path.write_text(lines[0] + '\n{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(TaskSetError, match="line 2: invalid task"):
        read_tasks(tmp_path)
