"""Mutation testing of verifiers: every wrong outcome class is killed; weak verifiers are caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.tasks.format.io import write_json, write_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.validation.validate import validate
from envcraft.tasks.verifier.scoring import score_trajectory
from envcraft.tasks.verifier.synthesis import synthesize_verifier

from .verify_support import DESK_ENV, HOLDS_ENV, REPORTS_ENV, make_task, ticket, write_package

ALL_KINDS = {
    "drop_change",
    "alter_value",
    "touch_distractor",
    "side_effect",
    "delete_file",
    "corrupt_file",
    "revert_turn",
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("pkgs")
    return {
        "desk": str(write_package(root / "desk", "desk", "tool", DESK_ENV)),
        "reports": str(write_package(root / "reports", "reports", "claw", REPORTS_ENV)),
    }


def call(env: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"env": env, "tool": tool, "args": args}


def representative(packages: dict[str, str], source: str | None = None) -> Task:
    """Two environments, two turns, a distractor, files created, changed and deleted."""
    tickets = {t["ticket_id"]: t for t in (ticket("T-000001", "VPN down"), ticket("T-000002", "Laptop"))}
    initial = {"desk": {"tickets": tickets}, "reports": {}}
    files = {"old.txt": "stale\n", "config.json": '{"region": "west"}', "README.md": "# hi\n"}
    turns = [
        [
            call("reports", "export_sales", region="north"),
            call("reports", "edit_file", path="config.json", old="west", new="north"),
        ],
        [call("desk", "close_ticket", ticket_id="T-000001"), call("reports", "archive", path="old.txt")],
    ]
    task, golden = make_task(turns, initial=initial, workspace=files, packages=packages, kind="claw")
    task.provenance["distractors"] = [{"env": "desk", "path": "/tickets/T-000002"}]
    verifier = synthesize_verifier(task.initial_state, task.workspace, golden, task.provenance["distractors"])
    assert verifier is not None
    task.verifier = verifier if source is None else verifier.model_copy(update={"source": source})
    return task


def test_every_mutation_class_is_killed_on_a_representative_task(packages: dict[str, str]) -> None:
    task = representative(packages)
    report = validate(task)
    assert report.valid, (report.errors, report.survivors)
    assert report.golden_score == 1.0 and report.noop_score == 0.0
    kinds = {m.kind for m in report.mutations}
    assert kinds == ALL_KINDS
    assert all(m.killed for m in report.mutations)
    assert task.quality["valid"] is True and task.quality["kill_rate"] == 1.0
    assert set(task.quality["mutations_by_kind"]) == ALL_KINDS
    assert report.loose >= 1  # the clock-stamped notes line is not something to pin


EXISTS_ONLY = """
def verify(ctx):
    ok = 1.0 if "T-000001" in ctx["final"]["desk"]["tickets"] else 0.0
    return {"score": ok, "components": {"ticket exists": ok}}
"""

ONLY_THE_TICKET = """
def verify(ctx):
    ok = 1.0 if ctx["final"]["desk"]["tickets"]["T-000001"]["status"] == "closed" else 0.0
    return {"score": ok, "components": {"ticket closed": ok}}
"""


def test_a_verifier_that_checks_existence_not_change_is_rejected(packages: dict[str, str]) -> None:
    """The known peer failure: a record that already exists in S0 passes a do-nothing run."""
    task = representative(packages, EXISTS_ONLY)
    report = validate(task)
    assert report.golden_score == 1.0
    assert report.noop_score == 1.0
    assert not report.valid and task.quality["valid"] is False


def test_a_verifier_that_misses_part_of_the_work_lets_mutations_survive(packages: dict[str, str]) -> None:
    task = representative(packages, ONLY_THE_TICKET)
    report = validate(task)
    assert report.noop_score == 0.0 and not report.valid
    assert "delete file out/sales.csv" in report.survivors
    assert "drop desk:/tickets/T-000001/status" not in report.survivors
    assert 0.0 < report.kill_rate < 1.0


def test_a_crashing_verifier_and_a_wrong_hash_are_reported(packages: dict[str, str]) -> None:
    task = representative(packages, "def verify(ctx):\n    return ctx['nope']\n")
    report = validate(task)
    assert not report.valid and report.golden_score == 0.0
    assert any("KeyError" in e for e in report.errors)
    task = representative(packages)
    task.reference.final_hash = "0" * 64
    assert validate(task).errors == ["golden run does not reach the recorded final hash"]


names = st.sampled_from(["a", "b", "c"])
increments = st.lists(st.tuples(names, st.integers(1, 100)), min_size=1, max_size=3)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(increments, min_size=1, max_size=3), start=st.dictionaries(names, st.integers(0, 50)))
def test_synthesized_verifiers_always_validate(
    turns: list[list[tuple[str, int]]], start: dict[str, int]
) -> None:
    """Whatever the counter task, its synthesized verifier passes gold, fails no-op, kills every mutation."""
    calls = [[call("counter", "increment", name=n, by=b) for n, b in turn] for turn in turns]
    task, golden = make_task(calls, initial={"counter": {"counters": start}})
    verifier = synthesize_verifier(task.initial_state, task.workspace, golden)
    assert verifier is not None
    task.verifier = verifier
    report = validate(task, golden)
    assert report.valid, (report.survivors, report.errors, report.noop_score)


def test_check_command_summarizes_a_task_set(packages: dict[str, str], tmp_path: Path) -> None:
    good = representative(packages)
    weak = representative(packages, EXISTS_ONLY).model_copy(update={"id": "weak"})
    # the user text states an id the agent was supposed to look up: a leak
    good.reference.calls[2].provenance = {"ticket_id": "derived:0.tickets.0.ticket_id"}
    good.turns[1].user = "Now close T-000001."
    write_tasks(tmp_path, [good, weak])
    write_json(
        tmp_path / "stats.json", {"envs": {"desk": {"tasks": 2, "edge_coverage": 0.95}, "reports": {}}}
    )
    done = CliRunner().invoke(app, ["tasks", "check", str(tmp_path), "--json"])
    assert done.exit_code == 1  # one task is invalid
    summary = json.loads(done.stdout)
    assert summary["tasks"] == 2 and summary["valid"] == 1
    assert summary["golden_pass_rate"] == 1.0 and summary["noop_fail_rate"] == 0.5
    assert summary["leaks"] == 1 and summary["leaky_tasks"] == [good.id]
    assert summary["edge_coverage"] == {"desk": 0.95}
    assert summary["chain_lengths"] == {"4": 2} and summary["turns"] == {"2": 2}
    assert summary["cross_env_rate"] == 1.0
    assert [bad["task_id"] for bad in summary["invalid"]] == ["weak"]
    human = CliRunner().invoke(app, ["tasks", "check", str(tmp_path)])
    assert "do-nothing fail" in human.stdout and "50.0%" in human.stdout


def test_what_the_clock_changes_is_neither_pinned_nor_mutated(tmp_path: Path) -> None:
    """Holds lapse as calls go by: a slower correct run must still score 1, and the task stays valid."""
    packages = {"holds": str(write_package(tmp_path / "holds", "holds", "tool", HOLDS_ENV))}
    initial = {"holds": {"holds": {"B2": {"seat": "B2", "until": "2026-01-05T09:03:00+00:00"}}, "booked": []}}
    turns = [[call("holds", "hold", seat="A1", minutes=2), call("holds", "book", seat="C3")]]
    task, golden = make_task(turns, initial=initial, packages=packages)
    task.provenance["distractors"] = [{"env": "holds", "path": "/holds/B2"}]
    verifier = synthesize_verifier(task.initial_state, task.workspace, golden, task.provenance["distractors"])
    assert verifier is not None
    task.verifier = verifier
    names = [c["name"] for c in verifier.checks]
    assert "holds:/booked = ['C3']" in names
    assert not any("A1/status" in n for n in names)  # the new hold lapses in a slower run
    distractor = next(c for c in verifier.checks if c["name"].startswith("distractor"))
    assert distractor["ignore"] == ["/status"]  # the clock may lapse it, nothing else may touch it
    report = validate(task, golden)
    assert report.valid, report.survivors
    slow = [[call("holds", "nope")] * 3 + turns[0][:1] + [call("holds", "nope")] * 3 + turns[0][1:]]
    assert score_trajectory(task, slow).score == 1.0
    assert score_trajectory(task, [turns[0][:1]]).score < 1.0
