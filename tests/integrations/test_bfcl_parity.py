"""Our verifiers agree with BFCL's own multi_turn_checker: ground truth and every mutation kind."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.play.execute import execute, reference_turns
from envcraft.tasks.verifier.scoring import score_trajectory

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from envcraft.integrations.bfcl import importer, parity, source

# Entries with many calls per turn, two classes, a held-out function and empty-ground-truth turns.
SAMPLE = 2


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bfcl_parity")
    importer.import_bfcl(out, limit=SAMPLE)
    return out


def test_every_kind_agrees_on_a_sample_of_each_category(imported: Path) -> None:
    report = parity.run_parity(imported, per_kind=1, limit=SAMPLE)
    assert report.disagreements == []
    assert set(report.matrix) == set(source.CATEGORIES)
    for category, row in report.matrix.items():
        assert set(row) == set(parity.KINDS), category
        assert row["ground_truth"] == {
            "agree": SAMPLE,
            "disagree": 0,
            "both_valid": SAMPLE,
            "both_invalid": 0,
        }
    totals = report.totals()
    assert totals["both_invalid"] > 0 and totals["both_valid"] >= 4 * SAMPLE
    assert report.fidelity["mismatches"] == [] and report.fidelity["calls"] > 0


def test_verdicts_on_hand_made_trajectories(imported: Path) -> None:
    task = next(t for t in read_tasks(imported / "tasks" / "miss_func") if t.id == "multi_turn_miss_func_0")
    entry = next(e for e in source.load_entries("miss_func") if e.id == task.id)
    golden = [[{k: c[k] for k in ("env", "tool", "args")} for c in turn] for turn in reference_turns(task)]
    cases = {
        "ground truth": (golden, True),
        "nothing": ([[] for _ in golden], False),
        # acting where the ground truth is empty is not judged by BFCL (sort is not offered yet)
        "early sort": ([*golden[:2], golden[3], *golden[3:]], True),
        "sort only early": ([*golden[:2], golden[3], [], golden[4]], False),
        "extra query": ([golden[0] + [{**golden[1][0], "tool": "pwd", "args": {}}], *golden[1:]], True),
    }
    for name, (turns, valid) in cases.items():
        ours = score_trajectory(task, turns).score == 1.0
        bfcl = parity.bfcl_verdict(entry, turns).valid
        assert (ours, bfcl) == (valid, valid), name


def test_mutations_are_reproducible_and_differ_from_the_ground_truth(imported: Path) -> None:
    task = read_tasks(imported / "tasks" / "base")[0]
    golden = execute(task, reference_turns(task))
    first = list(parity.variants(task, golden, random.Random("x"), 2))
    again = list(parity.variants(task, golden, random.Random("x"), 2))
    assert [v.label for v in first] == [v.label for v in again]
    base = first[0].turns
    assert all(v.turns != base for v in first[1:])
    assert {v.kind for v in first} == set(parity.KINDS)


def test_rendered_calls_are_what_bfcl_evaluates(imported: Path) -> None:
    task = next(t for t in read_tasks(imported / "tasks" / "base") if t.id == "multi_turn_base_0")
    entry = next(e for e in source.load_entries("base") if e.id == task.id)
    rendered = parity.bfcl_calls(entry, [[{k: c[k] for k in ("env", "tool", "args")} for c in turn]
                                         for turn in reference_turns(task)])  # fmt: skip
    assert [len(t) for t in rendered] == [len(t) for t in entry.ground_truth]
    assert rendered[0][0].startswith(entry.ground_truth[0][0].split("(")[0] + "(")
