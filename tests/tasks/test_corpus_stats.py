"""``stats.json`` shows how deep the tasks are: per task calls, turns, environments, distinct tools
and lookups as distributions, over the set, per environment and per kind (issue 21 item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from envcraft.tasks.corpus.measures import SIZE_MEASURES, distribution, task_size
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task

ENVCRAFT = str(Path(sys.executable).parent / "envcraft")
SUMMARY_KEYS = {"n", "min", "p25", "median", "p75", "max", "histogram"}


def test_distribution_gives_quartiles_and_the_histogram() -> None:
    assert distribution([1, 1, 2, 3, 7]) == {
        "n": 5,
        "min": 1,
        "p25": 1,
        "median": 2,
        "p75": 3,
        "max": 7,
        "histogram": {"1": 2, "2": 1, "3": 1, "7": 1},
    }
    assert distribution([4, 1])["median"] == 2.5
    assert distribution([2, 1, 1])["p75"] == 1.5
    assert distribution([]) == {"n": 0, "min": 0, "p25": 0, "median": 0, "p75": 0, "max": 0, "histogram": {}}


def synthesized(out: Path, envs: str, n: int) -> tuple[dict[str, Any], list[Task]]:
    """``envcraft tasks synth --envs ENVS --n N --out OUT``: the set's ``stats.json`` and tasks."""
    done = subprocess.run(
        [ENVCRAFT, "tasks", "synth", "--envs", envs, "--n", str(n), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / "stats.json").read_text(encoding="utf-8")), read_tasks(out)


def test_stats_json_has_per_task_distributions_overall_per_env_and_per_kind(tmp_path: Path) -> None:
    stats, tasks = synthesized(tmp_path, "returns_desk,notes_desk", 3)
    assert {"chain_length", "turns", "difficulty", "claw_workspace"} <= set(stats)  # the old keys stay
    per_task = stats["per_task"]
    assert set(per_task["by_env"]) == {"notes_desk", "returns_desk"}
    assert set(per_task["by_kind"]) == {"claw", "tool"}
    sizes = [task_size(t) for t in tasks]
    for measure in SIZE_MEASURES:
        overall = per_task["overall"][measure]
        assert set(overall) == SUMMARY_KEYS
        assert overall == distribution([s[measure] for s in sizes])
        assert overall["min"] <= overall["p25"] <= overall["median"] <= overall["p75"] <= overall["max"]
        for group in ("by_env", "by_kind"):
            assert sum(d[measure]["n"] for d in per_task[group].values()) == len(tasks)
    for task, size in zip(tasks, sizes, strict=True):
        assert size["calls"] == len(task.reference.calls) >= size["distinct_tools"] >= 1
        assert task.difficulty is not None
        assert size["lookups"] == task.difficulty["features"]["reads"] <= size["calls"]
        assert size["turns"] == len(task.turns) and size["envs"] == len(task.envs)


def test_stats_json_counts_the_tasks_that_ask_a_declared_job(tmp_path: Path) -> None:
    stats, tasks = synthesized(tmp_path, "inventory_ledger", 4)
    jobs = stats["jobs"]
    asking = [t for t in tasks if t.provenance.get("jobs")]
    assert 1 <= jobs["tasks"] == len(asking) and jobs["share"] == round(len(asking) / len(tasks), 4)
    assert sum(jobs["by_job"].values()) == sum(len(t.provenance["jobs"]) for t in asking)
    assert all(key.startswith("inventory_ledger/") for key in jobs["by_job"])
