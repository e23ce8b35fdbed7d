"""`envcraft export`: JSONL as is, flat Parquet, and VERL RL rows, read back with pyarrow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.tasks.export import ExportError, export
from envcraft.tasks.io import read_tasks, write_tasks
from envcraft.tasks.model import Task
from envcraft.tasks.verifier_synth import synthesize_verifier

from .verify_support import REPORTS_ENV, make_task, write_package


def call(env: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"env": env, "tool": tool, "args": args}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    """A tool task on the counter fixture and a two-turn cross-environment Claw task."""
    reports = str(write_package(tmp_path_factory.mktemp("pkgs") / "reports", "reports", "claw", REPORTS_ENV))
    made = []
    counter, golden = make_task([[call("counter", "increment", name="a", by=2)]], task_id="t-count")
    made.append((counter, golden))
    both = {"counter": made[0][0].provenance["packages"]["counter"], "reports": reports}
    turns = [
        [call("reports", "export_sales", region="north")],
        [call("counter", "increment", name="b", by=1)],
    ]
    claw, golden = make_task(
        turns,
        initial={"counter": {}, "reports": {}},
        packages=both,
        kind="claw",
        task_id="t-claw",
        workspace={"README.md": "# hi\n"},
    )
    made.append((claw, golden))
    for task, run in made:
        verifier = synthesize_verifier(task.initial_state, task.workspace, run)
        assert verifier is not None
        task.verifier = verifier
    made[1][0].difficulty = {"k": 8, "pass_rate": 0.25}
    return [task for task, _ in made]


def test_jsonl_export_is_the_task_set_itself(tasks: list[Task], tmp_path: Path) -> None:
    path = export(tasks, "jsonl", tmp_path)
    assert path.name == "tasks.jsonl" and read_tasks(tmp_path) == tasks


def test_parquet_export_has_one_flat_row_per_task(tasks: list[Task], tmp_path: Path) -> None:
    table = pq.read_table(export(tasks, "parquet", tmp_path))
    assert table.num_rows == 2
    assert table.schema.field("envs").type == pa.list_(pa.string())
    assert table.schema.field("n_turns").type == pa.int32()
    for name in ("turns", "initial_state", "workspace", "verifier", "reference", "quality", "difficulty"):
        assert table.schema.field(name).type == pa.string()
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == ["t-count", "t-claw"]
    assert rows[1]["envs"] == ["counter", "reports"] and rows[1]["n_turns"] == 2
    assert json.loads(rows[1]["verifier"]) == tasks[1].verifier.model_dump(mode="json")
    assert json.loads(rows[1]["workspace"]) == {"README.md": "# hi\n"}
    assert rows[0]["difficulty"] is None and json.loads(rows[1]["difficulty"]) == {"k": 8, "pass_rate": 0.25}


def test_verl_rows_follow_the_trainer_conventions(tasks: list[Task], tmp_path: Path) -> None:
    table = pq.read_table(export(tasks, "verl", tmp_path, agent_name="tool_agent"))
    assert table.num_rows == 2
    assert table.column_names == [
        "data_source",
        "prompt",
        "ability",
        "reward_model",
        "extra_info",
        "agent_name",
    ]
    prompt_type = table.schema.field("prompt").type
    assert prompt_type == pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    rows = table.to_pylist()
    tool_row, claw_row = rows
    assert (
        tool_row["data_source"] == "envcraft/counter"
        and claw_row["data_source"] == "envcraft/counter+reports"
    )
    assert tool_row["ability"] == "tool-use" and claw_row["ability"] == "agent"
    assert {r["agent_name"] for r in rows} == {"tool_agent"}
    system, user = claw_row["prompt"]
    assert system["role"] == "system" and user == {"role": "user", "content": tasks[1].turns[0].user}
    assert "export_sales(region)" in system["content"] and "increment(name, by)" in system["content"]
    assert "workspace" in system["content"]
    reward = claw_row["reward_model"]
    assert reward["style"] == "rule" and Task.model_validate_json(reward["ground_truth"]) == tasks[1]
    extra = claw_row["extra_info"]
    assert extra["index"] == 1 and extra["task_id"] == "t-claw" and extra["need_tools_kwargs"] is True
    assert json.loads(extra["initial_state"]) == tasks[1].initial_state
    assert json.loads(extra["workspace"]) == tasks[1].workspace
    assert extra["interaction_kwargs"] == {
        "name": "envcraft_user",
        "task_id": "t-claw",
        "turns": [t.user for t in tasks[1].turns],
    }
    # every row names every tool of the export, so no tool's kwargs read back as null
    for row in rows:
        kwargs = row["extra_info"]["tools_kwargs"]
        assert {"increment", "export_sales", "read_file"} <= set(kwargs)
        assert all(v == {"create_kwargs": {"task_id": row["extra_info"]["task_id"]}} for v in kwargs.values())


def test_export_command_and_its_refusals(tasks: list[Task], tmp_path: Path) -> None:
    write_tasks(tmp_path / "set", tasks)
    runner = CliRunner()
    for fmt, name in (("jsonl", "tasks.jsonl"), ("parquet", "tasks.parquet"), ("verl", "train.parquet")):
        out = tmp_path / fmt
        done = runner.invoke(
            app, ["export", "--tasks", str(tmp_path / "set"), "--format", fmt, "--out", str(out), "--json"]
        )
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout) == {"format": fmt, "path": str(out / name), "rows": 2}
        assert [p.name for p in out.iterdir()] == [name]  # no temp file left behind
    bad = runner.invoke(
        app, ["export", "--tasks", str(tmp_path / "set"), "--format", "csv", "--out", str(tmp_path)]
    )
    assert bad.exit_code == 2 and "unknown format" in bad.output
    missing = runner.invoke(
        app, ["export", "--tasks", str(tmp_path / "none"), "--format", "jsonl", "--out", "x"]
    )
    assert missing.exit_code == 2
    with pytest.raises(ExportError, match="agent name"):
        export(tasks, "verl", tmp_path, agent_name="my_agent")
    with pytest.raises(ExportError, match="no tasks"):
        export([], "verl", tmp_path)
