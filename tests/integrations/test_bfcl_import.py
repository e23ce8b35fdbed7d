"""`envcraft import bfcl` on a sample of every category: packages, tasks, replay, representation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.core.lint import lint_package
from envcraft.core.session import Session
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute, reference_turns
from envcraft.tasks.validation.validate import replay_task

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from envcraft.integrations.bfcl import checker, importer, shapes, source
from envcraft.integrations.bfcl.convert import spec_of

SAMPLE = 3  # first entries of each category (multi-class, GorillaFileSystem and TwitterAPI among them)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, importer.ImportSummary]:
    out = tmp_path_factory.mktemp("bfcl")
    return out, importer.import_bfcl(out, limit=SAMPLE)


def _tasks(out: Path, category: str) -> list[Task]:
    return read_tasks(out / "tasks" / category)


def test_every_category_and_class_is_written(imported: tuple[Path, importer.ImportSummary]) -> None:
    out, summary = imported
    assert not summary.failures
    assert {c: row["tasks"] for c, row in summary.categories.items()} == dict.fromkeys(
        source.CATEGORIES, SAMPLE
    )
    assert sorted(summary.envs) == sorted(source.env_id(c) for c in source.CLASSES)
    assert json.loads((out / importer.SUMMARY_FILE).read_text())["tasks"] == 4 * SAMPLE


def test_packages_pass_the_contract_linter(imported: tuple[Path, importer.ImportSummary]) -> None:
    _, summary = imported
    for env, path in summary.envs.items():
        report = lint_package(path)
        assert report.ok, (env, [f.message for f in report.findings if f.severity == "error"])


def test_golden_runs_replay_and_score_one(imported: tuple[Path, importer.ImportSummary]) -> None:
    out, _ = imported
    for category in source.CATEGORIES:
        for task in _tasks(out, category):
            result = replay_task(task)
            assert result.ok, (task.id, result.to_json())


def test_held_out_functions_are_unavailable_until_revealed(
    imported: tuple[Path, importer.ImportSummary],
) -> None:
    out, _ = imported
    task = next(t for t in _tasks(out, "miss_func") if t.id == "multi_turn_miss_func_0")
    bfcl = task.provenance["bfcl"]
    assert bfcl["missed_function"] == {"3": ["sort"]} and bfcl["excluded_function"] == ["cp"]
    hidden = task.provenance["unavailable_tools"]
    assert hidden == [["bfcl_gorilla_file_system.sort"]] * 3 + [[], []]
    assert task.turns[3].user == source.additional_function_prompt()
    assert [c.turn for c in task.reference.calls if c.tool == "sort"] == [3]
    assert not [c for c in task.reference.calls if c.turn == 2]  # asked before sort existed: no act
    spec = spec_of(task)
    assert 2 in spec["quiet_turns"] and 2 not in spec["checked"] and 3 in spec["checked"]


def test_long_context_is_loaded_and_flagged(imported: tuple[Path, importer.ImportSummary]) -> None:
    out, _ = imported
    long_task = _tasks(out, "long_context")[0]
    base_task = _tasks(out, "base")[0]
    assert long_task.provenance["bfcl"]["long_context"] and not base_task.provenance["bfcl"]["long_context"]
    env = "bfcl_gorilla_file_system"
    assert long_task.initial_state[env]["attributes"]["long_context"] is True
    assert len(json.dumps(long_task.initial_state[env])) > 3 * len(json.dumps(base_task.initial_state[env]))


def test_stored_and_in_memory_sessions_agree(
    imported: tuple[Path, importer.ImportSummary], tmp_path: Path
) -> None:
    out, summary = imported
    task = _tasks(out, "base")[0]
    memory = execute(task, reference_turns(task))
    for env in task.envs:
        calls = [c for c in task.reference.calls if c.env == env]
        session = Session.create(summary.envs[env], tmp_path / env, state=task.initial_state[env])
        results = [session.call(c.tool, c.args) for c in calls]
        reopened = Session.open(tmp_path / env)
        assert reopened.state() == memory.final[env]
        assert results == [a.result for a in memory.actions if a.env == env]


def test_numbers_stay_as_written_and_dict_parameters_are_flattened(
    imported: tuple[Path, importer.ImportSummary],
) -> None:
    _, summary = imported
    with Session.memory(summary.envs["bfcl_math_api"]) as math:
        assert math.call("add", {"a": 3, "b": 5}) == {"result": 8}
        assert math.call("add", {"a": 3.0, "b": 5}) == {"result": 8.0}
    shape = shapes.shapes("TicketAPI")["edit_ticket"]
    flat = shapes.from_bfcl(shape, [], {"ticket_id": 1, "updates": {"status": "Urgent", "priority": 5}})
    assert flat == {"ticket_id": 1, "status": "Urgent", "priority": 5}
    assert shapes.to_bfcl(shape, flat) == {"ticket_id": 1, "updates": {"status": "Urgent", "priority": 5}}
    with pytest.raises(shapes.CallError):
        shapes.from_bfcl(shape, [], {"ticket_id": 1, "updates": {"assignee": "x"}})


def test_non_dict_results_and_exceptions_show_what_bfcl_shows(
    imported: tuple[Path, importer.ImportSummary],
) -> None:
    _, summary = imported
    with Session.memory(summary.envs["bfcl_gorilla_file_system"]) as fs:
        assert fs.call("mkdir", {"dir_name": "new"}) == {"bfcl_output": "None"}
    with Session.memory(summary.envs["bfcl_trading_bot"]) as bot:
        bot.call("trading_login", {"username": "a", "password": "b"})
        before = bot.state_hash()
        failed: dict[str, Any] = bot.call("get_transaction_history", {"start_date": "bad"})
        assert failed["error"]["category"] == "invalid_argument"
        assert failed["error"]["message"] == "time data 'bad' does not match format '%Y-%m-%d'"
        assert checker.rendered(failed).startswith("Error during execution: time data 'bad'")
        assert bot.state_hash() == before


def test_the_cli_imports_and_checks_parity(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "envcraft"), "import", "bfcl", "--out", str(tmp_path),
         "--categories", "miss_param", "--limit", "1", "--parity", "--per-kind", "1", "--json"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["import"]["tasks"] == 1 and result["parity"]["totals"]["disagree"] == 0
    assert (tmp_path / "parity.json").is_file() and (
        tmp_path / "tasks" / "miss_param" / "tasks.jsonl"
    ).is_file()
