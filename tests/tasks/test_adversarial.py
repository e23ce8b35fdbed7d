"""Adversarial validation: scripted agents tell a verifier that pays for wrong work from a fair one."""

from __future__ import annotations

import copy
import subprocess
from typing import Any

import pytest

from envcraft.core.state import get_path
from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.format.model import Task, Verifier
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute, execute_reference
from envcraft.tasks.play.outcome import outcome_hash
from envcraft.tasks.validation.adversarial import RIGHT, WRONG, Adversary, shell_write
from envcraft.tasks.validation.validate import validate
from envcraft.tasks.verifier.scoring import build_context, score_contexts
from envcraft.tasks.verifier.source import render


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    library = load_library(["returns_desk", "notes_desk"])
    found = []
    for env, seed in (("returns_desk", 2), ("notes_desk", 7)):
        found += synthesize_shard(library, env, 0, 5, SynthConfig(seed=seed)).tasks
    return found


def test_shipped_tasks_record_every_policy_and_pass_them(tasks: list[Task]) -> None:
    assert tasks
    for task in tasks:
        adversarial = task.quality["adversarial"]
        assert set(adversarial) == set(WRONG) | set(RIGHT)
        for kind, result in adversarial.items():
            if result.get("applicable", True):
                assert result["pass"], (task.id, kind, result)
                assert result["expect"] == ("below_1" if kind in WRONG else "exactly_1")


def test_policy_runs_are_what_tasks_score_would_score(tasks: list[Task]) -> None:
    """A policy's run, replayed as a plain trajectory, reaches the same end: it is a real agent run."""
    task = tasks[0]
    golden = execute_reference(task)
    trials, _ = Adversary(task, resolve_packages(task)).trials(golden)
    assert trials
    for trial in trials:
        again = execute(task, trial.outcome.turn_calls())
        assert outcome_hash(again) == outcome_hash(trial.outcome), trial.kind


def weakened(task: Task, keep: Any) -> Task:
    weak = copy.deepcopy(task)
    checks = [c for c in task.verifier.checks if keep(c)]
    weak.verifier = Verifier(source=render(checks), checks=checks)
    return weak


def test_a_verifier_that_only_counts_new_records_is_caught_acting_on_the_wrong_record(
    tasks: list[Task],
) -> None:
    """Like the wave-1 verifier that only counted waves: the wrong-entity agent scores 1 with it."""
    caught = 0
    for task in tasks:
        creates = [c for c in task.verifier.checks if c["kind"] == "created_in"]
        if not creates or task.quality["adversarial"]["wrong_entity"].get("applicable") is False:
            continue
        weak = weakened(task, lambda c: c["kind"] == "created_in")
        for check in weak.verifier.checks:  # only how many, not what
            check["expected"] = [{"$any": "dict"} for _ in check["expected"]]
        weak.verifier = Verifier(source=render(weak.verifier.checks), checks=weak.verifier.checks)
        report = validate(weak, record=False)
        assert "wrong_entity" in report.failed_policies, task.id
        caught += 1
    assert caught


def test_a_verifier_that_pins_the_clock_is_caught_by_the_agent_that_looks_around(tasks: list[Task]) -> None:
    pinned = 0
    for task in tasks:
        golden = execute_reference(task)
        stamps = [
            (env, f"/{collection}/{key}/{field}")
            for env, state in golden.final.items()
            for collection, records in state.items()
            if isinstance(records, dict)
            for key, record in records.items()
            if isinstance(record, dict)
            for field, value in record.items()
            if isinstance(value, str)
            and value[:4] == "2026"
            and "T" in value
            and value != get_path(golden.initial[env], f"/{collection}/{key}/{field}")
        ]
        if not stamps:
            continue
        env, path = stamps[0]
        check = {
            "name": "timestamp pinned",
            "role": "goal",
            "weight": 1.0,
            "kind": "matches",
            "env": env,
            "path": path,
            "expected": get_path(golden.final[env], path),
        }
        weak = copy.deepcopy(task)
        checks = [*task.verifier.checks, check]
        weak.verifier = Verifier(source=render(checks), checks=checks)
        report = validate(weak, record=False)
        assert "extra_reads" in report.failed_policies, task.id
        pinned += 1
    assert pinned


def test_wrong_agents_score_below_one_and_right_ones_exactly_one(tasks: list[Task]) -> None:
    for task in tasks:
        golden = execute_reference(task)
        trials, _ = Adversary(task, resolve_packages(task)).trials(golden)
        scores = score_contexts(task.verifier.source, [build_context(t.outcome) for t in trials])
        for trial, score in zip(trials, scores, strict=True):
            if trial.expect == "below_1":
                assert score.score < 1.0, (task.id, trial.kind, trial.note)
            else:
                assert score.score == 1.0, (task.id, trial.kind, trial.note, score.components)


def test_shell_write_writes_exactly_the_content(tmp_path: Any) -> None:
    content = 'x\n"quoted" $HOME `id` \\n\n\nno newline at end — ünïcode'
    subprocess.run(["bash", "-c", shell_write("reports/a b.json", content)], cwd=tmp_path, check=True)
    assert (tmp_path / "reports" / "a b.json").read_text(encoding="utf-8") == content
