"""The default corpus, made by the real ``envcraft run``, meets the task-quality criteria.

One run of the whole pipeline on the built-in library (as ``./scripts/run.sh`` does), then
every task of it is read: user turns that state goals (no tool name, no bracketed parameter
list, no environment title), adversarial agents that all came out as they must, initial states
that keep each world's declared rules, Claw tasks that need the workspace, cross-environment
tasks that carry a value across, difficulty features everywhere.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.corpus.measures import carries_across, workspace_use
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task

ROOT = Path(__file__).resolve().parents[2]
ENVCRAFT = str(Path(sys.executable).parent / "envcraft")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Task], dict[str, object]]:
    out = tmp_path_factory.mktemp("default-run")
    done = subprocess.run(
        [ENVCRAFT, "run", "--out", str(out), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    stats = json.loads((out / "tasks" / "stats.json").read_text(encoding="utf-8"))
    return read_tasks(out / "tasks"), stats


def banned_words(task: Task) -> list[tuple[str, re.Pattern[str]]]:
    """What a user turn must never contain for this task's environments."""
    found: list[tuple[str, re.Pattern[str]]] = [
        ("a sentence that starts with punctuation", re.compile(r"(^|[.!?]\s+)[,;:]")),
    ]
    for env in task.envs:
        package = load_package(env)
        title = package.manifest.title
        found.append((f"env title {title!r}", re.compile(re.escape(title.split(" (")[0]), re.IGNORECASE)))
        found.append((f"env id {env!r}", re.compile(rf"\b{re.escape(env)}\b")))
        for name, spec in package.env_class.tools.items():
            found.append((f"tool name {name!r}", re.compile(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.-])")))
            for param in spec.parameters["properties"]:
                spoken = re.escape(param).replace("_", "[ _]")
                listed = rf"[(;]\s*{spoken}\s*:"  # "(order id: ...; reason: ...)"
                found.append((f"bracketed parameter {param!r}", re.compile(listed, re.IGNORECASE)))
    return found


def test_the_default_run_yields_a_thousand_tasks_that_pass_every_adversary(
    corpus: tuple[list[Task], dict[str, object]],
) -> None:
    tasks, stats = corpus
    assert len(tasks) >= 1000
    adversarial = stats["adversarial"]
    assert isinstance(adversarial, dict) and adversarial["pass_rate"] >= 0.95, adversarial
    for task in tasks:
        played = {k: v for k, v in task.quality["adversarial"].items() if v.get("applicable", True)}
        assert {"skip_turn", "reads_only", "extra_reads", "repeat_reads"} <= set(played), task.id
        assert all(v["pass"] for v in played.values()), task.id
        assert task.difficulty and {"calls", "turns", "hidden_values", "envs", "distractors"} <= set(
            task.difficulty["features"]
        )


def test_no_user_turn_names_a_tool_a_parameter_list_or_an_environment(
    corpus: tuple[list[Task], dict[str, object]],
) -> None:
    tasks, _ = corpus
    offences = []
    for task in tasks:
        words = banned_words(task)
        for n, turn in enumerate(task.turns):
            for what, pattern in words:
                if pattern.search(turn.user):
                    offences.append(f"{task.id} turn {n + 1}: {what}: {turn.user[:160]!r}")
    assert not offences, "\n".join(offences[:20])


def test_claw_tasks_need_the_workspace_and_cross_tasks_carry_values(
    corpus: tuple[list[Task], dict[str, object]],
) -> None:
    tasks, stats = corpus
    claw = [t for t in tasks if t.kind == "claw"]
    using = [t for t in claw if workspace_use(t) & {"file_tool", "asked_file"}]
    assert claw and len(using) >= 0.5 * len(claw), (len(using), len(claw))
    reading = [t for t in claw if "file_fact" in workspace_use(t)]  # a value only a file holds
    assert len(reading) >= 0.25 * len(claw), (len(reading), len(claw))
    cross = [t for t in tasks if len(t.envs) > 1]
    assert cross and all(carries_across(t) for t in cross)
    assert stats["cross_env_carrying_values"] == stats["cross_env_tasks"] == len(cross)


def test_every_initial_state_keeps_its_worlds_rules(corpus: tuple[list[Task], dict[str, object]]) -> None:
    tasks, _ = corpus
    for task in tasks:
        for env, state in task.initial_state.items():
            env_class = load_package(env).env_class
            model = env_class.State.model_validate(state)
            assert env_class.rule_violations(model, task.workspace) == [], (task.id, env)
