"""Worlds that keep their own rules (envcraft.tasks.world.rules), on tasks synthesized for real.

The shards below are the ones of the default seed-0 corpus (``tasks synth --envs all --n 10
--seed 0``) in which each class of contradiction was found before the rules existed: a notes
desk holding a mailbox, a handoff log written hours after the clock, a look-alike the tools
refuse, a fallback itinerary of another traveler.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from envcraft.core.clock import iso, parse_time
from envcraft.core.package import EnvPackage, builtin_ids, load_package
from envcraft.tasks.corpus.compose import Library, SynthConfig, load_library, synthesize_shard
from envcraft.tasks.corpus.measures import ShardResult
from envcraft.tasks.format.io import write_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.values.args import StateIndex, retargeted
from envcraft.tasks.world.distractors import add_distractors
from envcraft.tasks.world.rules import generator_seed, late_state_times, world_violations

SCAN = Path(__file__).resolve().parents[2] / "scripts" / "scan_worlds.py"
# env of the shard -> the class found there before (seed 0, 10 tasks, as the default corpus)
SHARDS = {
    "notes_desk": "foreign_files",
    "infra_recovery": "future_times",
    "class_booking": "refused_lookalike",
    "itinerary_rebooking": "fallback_owner",
}
PLANTED = "returns_desk"  # the shard whose tasks get a contradiction planted
FIXED_AT_SOURCE = {"foreign_files", "future_times", "refused_lookalike"}  # made right, not only dropped


@pytest.fixture(scope="module")
def library() -> Library:
    return load_library(builtin_ids())


@pytest.fixture(scope="module")
def shards(library: Library) -> dict[str, ShardResult]:
    return {env: synthesize_shard(library, env, 0, 10, SynthConfig(seed=0)) for env in [*SHARDS, PLANTED]}


def violations(task: Task, library: Library) -> list[str]:
    packages = {env: library.packages[env] for env in task.envs}
    return [str(v) for v in world_violations(task, packages, library.packages.values())]


def kinds(task: Task, library: Library) -> set[str]:
    return {v.split(":", 1)[0] for v in violations(task, library)}


@pytest.mark.parametrize("env", sorted(SHARDS))
def test_synthesized_worlds_keep_their_rules(
    env: str, shards: dict[str, ShardResult], library: Library
) -> None:
    result = shards[env]
    assert result.tasks
    assert {t.id: violations(t, library) for t in result.tasks if violations(t, library)} == {}
    kind = SHARDS[env]
    if kind in FIXED_AT_SOURCE:  # composed right, not made and then dropped
        assert result.rejected[f"world:{kind}"] == 0, result.rejected


def test_claw_workspace_holds_only_its_envs_files(shards: dict[str, ShardResult]) -> None:
    """The notes desk shard crosses into other Claw envs and cuts back: no mailbox stays. (The
    file the user points at a record through is the task's own, wherever it lies: a deeper shard
    has a follow-up log, ``logs/followups.log``, naming the action item.)"""
    for task in shards["notes_desk"].tasks:
        if task.envs == ["notes_desk"]:
            pointer = (task.provenance.get("file_fact") or {}).get("path")
            foreign = [p for p in task.workspace if p != pointer]
            assert not any(p.startswith(("mail/", "data/", "logs/", "stream/")) for p in foreign), task.id


def test_a_handoff_log_ends_before_the_clock(shards: dict[str, ShardResult], library: Library) -> None:
    logs = [  # every shard's: which seed holds a log-borne fact moves with any draw
        (task, path)
        for shard in shards.values()
        for task in shard.tasks
        for path in task.workspace
        if task.provenance.get("file_fact", {}).get("path") == path and path.endswith(".log")
    ]
    assert logs
    for task, path in logs:
        start = min(library.packages[e].clock.base_time for e in task.envs)
        stamps = [parse_time(line.split(" ", 1)[0]) for line in task.workspace[path].splitlines()]
        assert stamps == sorted(stamps) and all(s < start for s in stamps), (task.id, stamps)


# -- each class is found when a real task's world is made to break it ---------------------------
def test_another_envs_file_is_foreign(shards: dict[str, ShardResult], library: Library) -> None:
    task = next(t for t in shards["notes_desk"].tasks if t.envs == ["notes_desk"])
    mailbox = library.packages["mail_triage"]
    planted = task.model_copy(deep=True)
    planted.workspace.update(_generated_files(mailbox, task))
    assert "foreign_files" in kinds(planted, library)
    assert "foreign_files" not in kinds(task, library)


def test_a_log_line_after_the_clock_is_found(shards: dict[str, ShardResult], library: Library) -> None:
    task = next(t for t in shards["infra_recovery"].tasks if any(p.endswith("app.log") for p in t.workspace))
    path = next(p for p in sorted(task.workspace) if p.endswith("app.log"))
    late = library.packages["infra_recovery"].clock.base_time + timedelta(hours=6)
    planted = task.model_copy(deep=True)
    planted.workspace[path] += f"{iso(late)} ERROR connection refused\n"
    assert [v for v in violations(planted, library) if v.startswith(f"future_times: {path}")]
    assert "future_times" not in kinds(task, library)


def test_a_closed_lookalike_is_refused(shards: dict[str, ShardResult], library: Library) -> None:
    """A look-alike order already cancelled: cancelling it is refused, so it tests nothing."""
    task = next(
        t
        for t in shards["returns_desk"].tasks
        if any(c.tool == "cancel_order" for c in t.reference.calls) and t.provenance["distractors"]
    )
    planted = task.model_copy(deep=True)
    for distractor in task.provenance["distractors"]:
        order = distractor["path"].rsplit("/", 1)[-1]
        planted.initial_state["returns_desk"]["orders"][order]["status"] = "cancelled"
    assert "refused_lookalike" in kinds(planted, library)
    assert "refused_lookalike" not in kinds(task, library)


def test_s0_against_its_envs_rules(shards: dict[str, ShardResult], library: Library) -> None:
    task = next(t for t in shards["returns_desk"].tasks if "returns_desk" in t.envs)
    planted = task.model_copy(deep=True)
    order = next(iter(planted.initial_state["returns_desk"]["orders"].values()))
    order["refunded_cents"] += 100  # no refund pays it
    assert "env_rules" in kinds(planted, library)
    assert "env_rules" not in kinds(task, library)


def test_a_fallback_of_another_customer(shards: dict[str, ShardResult], library: Library) -> None:
    """A failing cancel whose fallback is another customer's order: no person asks that."""
    task, at = next(
        (t, i)
        for t in shards["returns_desk"].tasks
        for i, c in enumerate(t.reference.calls)
        if (c.env, c.tool) == ("returns_desk", "cancel_order")
    )
    orders = task.initial_state["returns_desk"]["orders"]
    first = task.reference.calls[at].args["order_id"]
    other = next(o for o, r in orders.items() if r["customer_id"] != orders[first]["customer_id"])
    planted = task.model_copy(deep=True)
    fallback = copy.deepcopy(planted.reference.calls[at])
    fallback.args["order_id"] = other
    planted.reference.calls.insert(at + 1, fallback)
    planted.provenance["steps"] = [{"call": at, "kind": "error_recovery", "expected_error": "conflict"}]
    assert "fallback_owner" in kinds(planted, library)


def test_a_title_copied_from_another_record_is_foreign() -> None:
    """infra_recovery-8403408efea2 (third audit): an incident opened on inventory-sync titled
    "auth-service disk usage above 85% on one replica", S0's title of auth-service's incident.
    The world rule names it; golden runs now retarget such a copied text to the call's record."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "audit_tasks_round3.jsonl"
    tasks = [Task.model_validate(json.loads(x)) for x in fixture.read_text(encoding="utf-8").splitlines()]
    task = next(t for t in tasks if t.id == "infra_recovery-8403408efea2")
    package = load_package("infra_recovery")
    found = [v for v in world_violations(task, {"infra_recovery": package}) if v.kind == "foreign_text"]
    title = "auth-service disk usage above 85% on one replica"
    assert [v.message for v in found] == [f"open_incident: {title!r} names auth-service, not inventory-sync"]
    index = StateIndex.build(task.initial_state["infra_recovery"])
    args = {"service_id": "inventory-sync", "severity": "sev1"}
    assert retargeted(title, args, index) == "inventory-sync disk usage above 85% on one replica"
    assert retargeted("Follow up next week.", args, index) == "Follow up next week."


def test_a_new_record_that_takes_a_name_already_there_is_refused() -> None:
    """notes_desk-2b95bfe0477b (eighth audit): "Track a new action item “Set up the churn cohort
    report”" while AI-004 of that title is open; sheet_analytics-73ad9e5ec21a (seventh): "Create
    a cleaning recipe called “Drop orders exported twice”", RCP-02's name. A fresh name is fine."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    found = {}
    for name, task_id in (
        ("audit_tasks_round8.jsonl", "notes_desk-2b95bfe0477b"),
        ("audit_tasks_round7.jsonl", "sheet_analytics-73ad9e5ec21a"),
    ):
        lines = (fixtures / name).read_text(encoding="utf-8").splitlines()
        task = next(t for t in (Task.model_validate(json.loads(x)) for x in lines) if t.id == task_id)
        packages = {env: load_package(env) for env in task.envs}
        found[task_id] = [v.message for v in world_violations(task, packages) if v.kind == "taken_name"]
        renamed = task.model_copy(deep=True)
        for call in renamed.reference.calls:
            for arg in ("title", "name"):
                if arg in call.args and call.args[arg] in (
                    "Set up the churn cohort report",
                    "Drop orders exported twice",
                ):
                    call.args[arg] = "A name nobody has yet"
        assert not [v for v in world_violations(renamed, packages) if v.kind == "taken_name"]
    assert found["notes_desk-2b95bfe0477b"] == [
        "add_action_item: title 'Set up the churn cohort report' is AI-004's"
    ]
    assert found["sheet_analytics-73ad9e5ec21a"] == [
        "create_recipe: name 'Drop orders exported twice' is RCP-02's"
    ]


# -- the scan script ----------------------------------------------------------------------------
def test_scan_counts_each_class(tmp_path: Path, shards: dict[str, ShardResult], library: Library) -> None:
    task = next(t for t in shards["notes_desk"].tasks if t.envs == ["notes_desk"])
    planted = task.model_copy(deep=True)
    planted.id = "planted"
    planted.workspace.update(_generated_files(library.packages["mail_triage"], task))
    write_tasks(tmp_path, [task, planted])
    done = subprocess.run(
        [sys.executable, str(SCAN), str(tmp_path)], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    assert report["tasks"] == 2 and report["tasks_with_any"] == 1
    assert report["classes"]["foreign_files"]["tasks"] == 1
    assert report["examples"]["foreign_files"][0].startswith("planted: mail/")


def test_scan_refuses_a_missing_corpus(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCAN), str(tmp_path / "nope")], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: no tasks.jsonl in {tmp_path / 'nope'}"]


def _generated_files(package: EnvPackage, task: Task) -> dict[str, str]:
    """What ``package``'s generator puts in a workspace for this task's seed."""
    seed = generator_seed(str(task.provenance["seed"]), package.id)
    return dict(package.env_class.generate(seed=seed, size=1, data=package.data).files)


def test_an_s0_record_dated_after_the_clock(shards: dict[str, ShardResult], library: Library) -> None:
    task = next(t for t in shards[PLANTED].tasks if "returns_desk" in t.envs)
    planted = task.model_copy(deep=True)
    order = next(iter(planted.initial_state["returns_desk"]["orders"].values()))
    order["placed_at"] = iso(library.packages["returns_desk"].clock.base_time + timedelta(days=1))
    assert [v for v in violations(planted, library) if v.startswith("future_times: returns_desk S0 /orders/")]


def test_a_moved_time_slot_stays_in_the_past(library: Library) -> None:
    """An order placed just before "now": its look-alike is never placed tomorrow."""
    package = library.packages["returns_desk"]
    start = package.clock.base_time
    state = package.env_class.generate(seed=0, size=1, data=package.data).state.model_dump(mode="json")
    key, order = next((k, o) for k, o in state["orders"].items() if o["status"] == "placed")
    order["placed_at"] = iso(start - timedelta(minutes=30))
    made_any = False
    for seed in range(20):
        states, made = add_distractors(
            {"returns_desk": state},
            [{"env": "returns_desk", "path": f"/orders/{key}"}],
            {"returns_desk": package},
            random.Random(seed),
        )
        made_any |= bool(made)
        assert late_state_times(states["returns_desk"], start) == [], seed
    assert made_any
