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
from envcraft.rollout.loop import RolloutConfig
from envcraft.tasks.corpus.export import ExportError, export, split_tasks, task_digest
from envcraft.tasks.format.io import read_tasks, write_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.play.prompts import system_prompt as rollout_system_prompt
from envcraft.tasks.verifier.synthesis import synthesize_verifier

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


def test_verl_export_is_a_self_contained_directory(tasks: list[Task], tmp_path: Path) -> None:
    path = export(tasks, "verl", tmp_path)
    assert path == tmp_path / "train.parquet"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "agent_loop.yaml",
        "tasks.index.json",
        "tasks.jsonl",
        "train.parquet",
        "val.parquet",
    ]
    assert read_tasks(tmp_path) == tasks
    train, val = pq.read_table(path), pq.read_table(tmp_path / "val.parquet")
    assert train.schema == val.schema
    assert train.column_names == [
        "data_source",
        "prompt",
        "ability",
        "reward_model",
        "extra_info",
        "agent_name",
    ]
    prompt_type = train.schema.field("prompt").type
    assert prompt_type == pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    rows = train.to_pylist() + val.to_pylist()
    # two tasks: one in each split, every task exactly once
    assert sorted(r["extra_info"]["task_id"] for r in rows) == ["t-claw", "t-count"]
    assert {r["extra_info"]["split"] for r in train.to_pylist()} == {"train"}
    assert {r["extra_info"]["split"] for r in val.to_pylist()} == {"val"}
    by_id = {r["extra_info"]["task_id"]: r for r in rows}
    tool_row, claw_row = by_id["t-count"], by_id["t-claw"]
    assert (
        tool_row["data_source"] == "envcraft/counter"
        and claw_row["data_source"] == "envcraft/counter+reports"
    )
    assert tool_row["ability"] == "tool-use" and claw_row["ability"] == "agent"
    assert {r["agent_name"] for r in rows} == {"envcraft_agent"}
    system, user = claw_row["prompt"]
    assert system["role"] == "system" and user == {"role": "user", "content": tasks[1].turns[0].user}
    assert "workspace" in system["content"]
    # the policy is prompted as `envcraft eval` prompts it (the rollout loop's system message,
    # under eval's default profile, openclaw: a Claw task's skills listed as the Episode places them)
    for task, row in ((tasks[0], tool_row), (tasks[1], claw_row)):
        mode = RolloutConfig().mode_for(task)
        with Episode.open(task, profile="openclaw") as episode:
            skills = episode.skills_prompt() if mode == "claw" else None
            assert row["prompt"][0]["content"] == rollout_system_prompt(episode.packages, mode, skills=skills)
            # the tools travel in the chat template: per task, the names its agent may call
            assert row["extra_info"]["tool_selection"] == [t.name for t in episode.tools()]
        assert row["extra_info"]["profile"] == "openclaw"
    assert set(tool_row["extra_info"]["tool_selection"]) == {"increment", "get", "explode"}
    assert {"increment", "export_sales", "read", "exec"} <= set(claw_row["extra_info"]["tool_selection"])
    assert "export_sales(region)" not in system["content"]
    # the ground truth names the task and its version, not the task itself
    reward = claw_row["reward_model"]
    assert reward["style"] == "rule"
    assert json.loads(reward["ground_truth"]) == {"task_id": "t-claw", "sha256": task_digest(tasks[1])}
    assert len(reward["ground_truth"]) < 120
    extra = claw_row["extra_info"]
    assert extra["index"] == 1 and extra["n_turns"] == 2 and extra["kind"] == "claw"
    assert "tools_kwargs" not in extra and "initial_state" not in extra
    loop = (tmp_path / "agent_loop.yaml").read_text()
    assert "name: envcraft_agent" in loop and 'tasks: "tasks.jsonl"' in loop
    assert str(tmp_path) not in loop  # relative: the export can be moved


def test_a_moved_verl_export_still_finds_its_tasks(tasks: list[Task], tmp_path: Path) -> None:
    import yaml

    from envcraft.integrations.taskset import load_index

    verl_loop = pytest.importorskip("envcraft.integrations.verl.agent_loop", exc_type=ImportError)
    export(tasks, "verl", tmp_path / "made")
    moved = tmp_path / "moved"
    (tmp_path / "made").rename(moved)
    (entry,) = yaml.safe_load((moved / "agent_loop.yaml").read_text())
    found = verl_loop.tasks_beside_config(entry["tasks"], str(moved / "agent_loop.yaml"))
    assert len(load_index(found)) == len(tasks)


def test_the_run_summary_counts_each_verl_file_s_own_rows(tasks: list[Task], tmp_path: Path) -> None:
    from envcraft.tasks.corpus.pipeline import export_stage

    verl = export_stage(tasks, tmp_path)["verl"]
    train, val = (
        pq.read_table(tmp_path / "verl" / "train.parquet"),
        pq.read_table(tmp_path / "verl" / "val.parquet"),
    )
    assert verl["rows"] == train.num_rows == 1
    assert (
        verl["files"]["train.parquet"]["rows"] == 1
        and verl["files"]["val.parquet"]["rows"] == val.num_rows == 1
    )
    assert verl["files"]["tasks.jsonl"]["rows"] == 2 and verl["files"]["agent_loop.yaml"]["rows"] is None


def test_task_digest_changes_with_the_task_and_survives_a_round_trip(
    tasks: list[Task], tmp_path: Path
) -> None:
    write_tasks(tmp_path, tasks)
    assert [task_digest(t) for t in read_tasks(tmp_path)] == [task_digest(t) for t in tasks]
    changed = tasks[0].model_copy(deep=True)
    changed.turns[0].user += " (edited)"
    assert task_digest(changed) != task_digest(tasks[0])


def test_validation_split_is_stable_and_never_empty(tasks: list[Task]) -> None:
    many = []
    for i in range(40):
        copy = tasks[0].model_copy(deep=True)
        copy.id = f"t-{i}"
        many.append(copy)
    train, val = split_tasks(many, 0.1)
    assert len(train) + len(val) == 40 and 1 <= len(val) < 15
    # a task keeps its split when the set grows
    _, val_more = split_tasks([*many, *tasks], 0.1)
    assert {t.id for t in val} <= {t.id for t in val_more}
    assert split_tasks(many[:1], 0.1) == (many[:1], many[:1])
    assert split_tasks(many[:2], 0.0)[1] == []


def test_export_command_and_its_refusals(tasks: list[Task], tmp_path: Path) -> None:
    write_tasks(tmp_path / "set", tasks)
    runner = CliRunner()
    for fmt, name in (("jsonl", "tasks.jsonl"), ("parquet", "tasks.parquet"), ("verl", "train.parquet")):
        out = tmp_path / fmt
        done = runner.invoke(
            app, ["export", "--tasks", str(tmp_path / "set"), "--format", fmt, "--out", str(out), "--json"]
        )
        assert done.exit_code == 0, done.output
        info = json.loads(done.stdout)
        assert {k: info[k] for k in ("format", "path", "rows")} == {
            "format": fmt,
            "path": str(out / name),
            "rows": 2,
        }
        assert sorted(Path(f["path"]).name for f in info["files"]) == sorted(p.name for p in out.iterdir())
        assert name in [p.name for p in out.iterdir()]
        shown = runner.invoke(
            app, ["export", "--tasks", str(tmp_path / "set"), "--format", fmt, "--out", str(out)]
        )
        assert shown.exit_code == 0 and all(str(p) in shown.stdout for p in out.iterdir()), shown.stdout
        assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp file left behind
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


def test_a_target_whose_file_is_a_directory_is_refused_with_nothing_written(
    tasks: list[Task], tmp_path: Path
) -> None:
    write_tasks(tmp_path / "set", tasks)
    out = tmp_path / "out"
    (out / "train.parquet").mkdir(parents=True)
    done = CliRunner().invoke(
        app, ["export", "--tasks", str(tmp_path / "set"), "--format", "verl", "--out", str(out)]
    )
    assert done.exit_code == 2 and "train.parquet" in done.output and "is a directory" in done.output
    assert len(done.output.strip().splitlines()) == 1 and "Traceback" not in done.output
    assert [p.name for p in out.iterdir()] == ["train.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "set"]  # no staging left either


def test_an_export_that_fails_midway_leaves_nothing_behind(tasks: list[Task], tmp_path: Path) -> None:
    broken = tasks[1].model_copy(deep=True)
    broken.provenance["packages"]["reports"] = str(tmp_path / "gone" / "reports")
    write_tasks(tmp_path / "set", [tasks[0], broken])
    out = tmp_path / "deep" / "out"
    done = CliRunner().invoke(
        app, ["export", "--tasks", str(tmp_path / "set"), "--format", "verl", "--out", str(out)]
    )
    assert done.exit_code == 2 and "gone" in done.output and "Traceback" not in done.output, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]  # no out, no tasks.jsonl, no staging
    existing = tmp_path / "kept"
    (existing / "notes.txt").parent.mkdir()
    (existing / "notes.txt").write_text("mine")
    with pytest.raises(ExportError):
        export([tasks[0], broken], "verl", existing)
    assert [p.name for p in existing.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "set"]


@pytest.mark.parametrize("profile", ["envcraft", "claude-code"])
def test_the_verl_rows_follow_the_chosen_tool_profile(
    tasks: list[Task], tmp_path: Path, profile: str
) -> None:
    write_tasks(tmp_path / "set", tasks)
    done = CliRunner().invoke(
        app,
        [
            "export",
            "--tasks",
            str(tmp_path / "set"),
            "--format",
            "verl",
            "--out",
            str(tmp_path / "out"),
            "--profile",
            profile,
        ],
    )
    assert done.exit_code == 0, done.output
    rows = (
        pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()
        + pq.read_table(tmp_path / "out" / "val.parquet").to_pylist()
    )
    claw_row = next(r for r in rows if r["extra_info"]["task_id"] == "t-claw")
    with Episode.open(tasks[1], profile=profile) as episode:
        assert claw_row["extra_info"]["tool_selection"] == [t.name for t in episode.tools()]
        assert claw_row["prompt"][0]["content"] == rollout_system_prompt(
            episode.packages, "claw", skills=episode.skills_prompt()
        )
    assert claw_row["extra_info"]["profile"] == profile
    bad = CliRunner().invoke(
        app,
        [
            "export",
            "--tasks",
            str(tmp_path / "set"),
            "--format",
            "verl",
            "--out",
            str(tmp_path / "x"),
            "--profile",
            "hermes",
        ],
    )
    assert bad.exit_code == 2 and "unknown tool profile" in bad.output and not (tmp_path / "x").exists()
