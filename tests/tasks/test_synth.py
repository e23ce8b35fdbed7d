"""Synthesis end to end: validated tasks, no leaks, replayable, deduplicated, renderer hook, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envcraft.tasks.corpus.compose import (
    SynthConfig,
    dedupe_key,
    load_library,
    merge,
    synthesize_shard,
)
from envcraft.tasks.corpus.measures import ShardResult
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.phrasing.intents import IntentPlan
from envcraft.tasks.phrasing.leaks import find_leaks, missing_user_values
from envcraft.tasks.phrasing.render import Persona
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.play.outcome import outcome_hash
from envcraft.tasks.validation.validate import validate

COUNTER = str(Path(__file__).resolve().parents[1] / "fixtures" / "counter")
ROOT = Path(__file__).resolve().parents[2]
ENVCRAFT = str(Path(sys.executable).parent / "envcraft")


@pytest.fixture(scope="module")
def shards() -> list[ShardResult]:
    library = load_library(["returns_desk", COUNTER])
    return [synthesize_shard(library, env, 0, 4, SynthConfig(seed=3)) for env in ("returns_desk", "counter")]


def test_tasks_are_validated_leak_free_and_replay(shards: list[ShardResult]) -> None:
    tasks = [t for s in shards for t in s.tasks]
    assert len(tasks) == 8
    for task in tasks:
        assert task.quality["valid"] and task.quality["kill_rate"] == 1.0
        assert task.quality["golden_score"] == 1.0 and task.quality["noop_score"] < 1.0
        assert task.quality["leaks"] == [] == find_leaks(task)
        assert task.quality["missing_user_values"] == [] == missing_user_values(task)
        assert 1 <= len(task.turns) <= 4 and task.persona
        assert {c.turn for c in task.reference.calls} == set(range(len(task.turns)))
        assert outcome_hash(execute_reference(task)) == task.reference.final_hash
        assert "def verify(ctx" in task.verifier.source
        adversarial = task.quality["adversarial"]
        played = {k: v for k, v in adversarial.items() if v.get("applicable", True)}
        assert {"skip_turn", "reads_only", "extra_reads", "repeat_reads"} <= set(played)
        assert all(v["pass"] for v in played.values())
        assert all(s < 1 for k in ("skip_turn", "reads_only") for s in played[k]["scores"])
        assert all(s == 1 for k in ("extra_reads", "repeat_reads") for s in played[k]["scores"])
        features = task.difficulty["features"]  # type: ignore[index]
        assert features["calls"] == len(task.reference.calls) and features["turns"] == len(task.turns)
    counter_tasks = [t for t in tasks if t.envs == ["counter"]]
    assert all(t.provenance["packages"]["counter"] == COUNTER for t in counter_tasks)
    for shard in shards:  # every candidate that reached validation is counted, with how it fared
        assert shard.validated["reached"] >= len(shard.tasks)
        assert (
            shard.validated["passed"] + sum(v for k, v in shard.validated.items() if k.startswith("failed:"))
            >= shard.validated["reached"]
        )


def test_distractors_are_declared_present_and_guarded(shards: list[ShardResult]) -> None:
    with_distractors = [t for s in shards for t in s.tasks if t.provenance["distractors"]]
    assert with_distractors
    for task in with_distractors:
        for d in task.provenance["distractors"]:
            collection, entity = d["path"].strip("/").split("/")
            assert entity in task.initial_state[d["env"]][collection]
        report = validate(task, record=False)
        assert report.valid
        assert any(m.kind == "touch_distractor" for m in report.mutations)


def test_shards_are_deterministic_and_merge_removes_duplicates(shards: list[ShardResult]) -> None:
    library = load_library(["returns_desk", COUNTER])
    again = synthesize_shard(library, "counter", 0, 4, SynthConfig(seed=3))
    assert [t.model_dump() for t in again.tasks] == [t.model_dump() for t in shards[1].tasks]
    tasks, stats = merge([shards[1], again], library)
    assert len(tasks) == len(shards[1].tasks) and stats["duplicates_removed"] == len(again.tasks)
    assert len({dedupe_key(t) for t in tasks}) == len(tasks)
    # counter tasks are single increments (a lookup that feeds nothing is left out): no edge covered
    assert stats["envs"]["counter"]["covered_edges"] == sum(len(t.reference.calls) > 1 for t in tasks) == 0
    assert 0 <= stats["envs"]["counter"]["edge_coverage"] <= 1


class LeakyRenderer:
    """An 'LLM' that blurts out the values behind every mention (ids included)."""

    def __init__(self) -> None:
        self.calls = 0

    def render(self, plan: IntentPlan, persona: Persona) -> list[str]:
        self.calls += 1
        return [
            " ".join(f"{g.text} [{', '.join(str(m.value) for m in g.mentions)}]" for g in goals)
            for goals in plan.turns
        ]


def test_renderer_hook_is_used_and_leaky_text_is_rejected() -> None:
    library = load_library(["returns_desk"])
    renderer = LeakyRenderer()
    result = synthesize_shard(library, "returns_desk", 1, 8, SynthConfig(seed=5, p_cross=0.0), renderer)
    assert renderer.calls > 0 and result.rejected["leak"] > 0
    for task in result.tasks:  # only chains whose hidden values were never stated survive it
        assert find_leaks(task) == []
        assert "[" in task.turns[0].user


def test_tasks_synth_command_writes_a_task_set(tmp_path: Path) -> None:
    out = tmp_path / "set"
    done = subprocess.run(
        [
            ENVCRAFT,
            "tasks",
            "synth",
            "--envs",
            f"returns_desk,{COUNTER}",
            "--n",
            "2",
            "--seed",
            "1",
            "--out",
            str(out),
            "--workers",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["tasks"] == 4
    assert len(read_tasks(out)) == 4
    stats = json.loads((out / "stats.json").read_text())
    assert set(stats["envs"]) == {"returns_desk", "counter"}
    bad = subprocess.run(
        [ENVCRAFT, "tasks", "synth", "--envs", "no_such_env", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert bad.returncode != 0 and "no_such_env" in bad.stderr
