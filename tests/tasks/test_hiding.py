"""Claw tasks whose user points at a record through a workspace file (envcraft.tasks.world.hiding)."""

from __future__ import annotations

import copy
import csv
import io
import re
from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.corpus.measures import corpus_measures, reads_needed_value, workspace_use
from envcraft.tasks.format.model import GoldenCall, Source, Task, Verifier
from envcraft.tasks.golden.run import replay
from envcraft.tasks.phrasing.leaks import missing_user_values
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.validation.validate import validate
from envcraft.tasks.verifier.runtime import times_said
from envcraft.tasks.verifier.source import render
from envcraft.tasks.world.hiding import record_candidates

CLAW = ("infra_recovery", "notes_desk", "mail_triage", "sheet_analytics")


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    library = load_library(CLAW)
    found: list[Task] = []
    for env in CLAW:
        found += synthesize_shard(library, env, 0, 3, SynthConfig(seed=3)).tasks
    return found


@pytest.fixture(scope="module")
def hidden(tasks: list[Task]) -> list[Task]:
    found = [t for t in tasks if "file_fact" in t.provenance]
    assert len(found) >= 3, [t.id for t in tasks]
    return found


def file_keys(task: Task) -> list[str]:
    """The record keys the fact file lists, read back from the file itself."""
    fact = task.provenance["file_fact"]
    content = task.workspace[fact["path"]]
    if fact["format"] == "csv":
        return [row[0] for row in list(csv.reader(io.StringIO(content)))[1:]]
    if fact.get("row_field"):  # rows named by the title of a record
        return re.findall(r"“([^”]*)”", content)
    records = task.initial_state[fact["env"]][fact["collection"]]
    return [key for key in records if re.search(rf"\b{re.escape(key)}\b", content)]


def test_the_needed_record_is_only_in_the_file_and_read_before_it_is_used(hidden: list[Task]) -> None:
    for task in hidden:
        fact = task.provenance["file_fact"]
        value, path = fact["value"], fact["path"]
        assert path in task.workspace and str(value) in task.workspace[path]
        assert not any(times_said(turn.user, value) for turn in task.turns), task.id
        assert any(path in turn.user for turn in task.turns), task.id  # the user points at the file
        calls = task.reference.calls
        read = calls[fact["read_call"]]
        assert (read.tool, read.args) == ("read_file", {"path": path})
        users = [i for i, c in enumerate(calls) if value in c.args.values()]
        assert users and min(users) > fact["read_call"]
        labels = [
            Source.parse(calls[i].provenance[a])
            for i in users
            for a, v in calls[i].args.items()
            if v == value
        ]
        # every use: from the file (a later use named by the record's name could state its id)
        assert all(s.kind == "file" and s.path == path for s in labels), task.id
        assert reads_needed_value(task) and "file_fact" in workspace_use(task)


def test_every_line_names_a_real_record_and_the_world_keeps_its_rules(hidden: list[Task]) -> None:
    for task in hidden:
        fact = task.provenance["file_fact"]
        records = task.initial_state[fact["env"]][fact["collection"]]
        listed = file_keys(task)
        rows = fact["rows"] if fact["kind"] == "value" else [fact["value"], *fact["decoys"]]
        assert sorted(listed) == sorted(rows), task.id
        if fact.get("row_field"):  # a new record's title, beside the titles of records of S0
            titles = {r.get(fact["row_field"]) for r in records.values()}
            assert fact["decoys"] and all(title in titles for title in fact["rows"][1:]), task.id
        else:
            assert fact["decoys"] and all(key in records for key in listed), task.id
        content = task.workspace[fact["path"]]
        assert all(str(v) in content for v in [fact["value"], *fact["decoys"]]), task.id
        for env, state in task.initial_state.items():
            env_class = load_package(env).env_class
            assert env_class.rule_violations(env_class.State.model_validate(state), task.workspace) == []


def test_acting_on_a_record_the_file_also_lists_fails_and_reading_it_with_the_shell_passes(
    hidden: list[Task],
) -> None:
    for task in hidden:
        adversarial = task.quality["adversarial"]
        decoy, shell = adversarial["file_decoy"], adversarial["shell_read"]
        assert decoy["expect"] == "below_1" and decoy["pass"] and max(decoy["scores"]) < 1, task.id
        assert shell["expect"] == "exactly_1" and shell["pass"] and shell["scores"] == [1.0], task.id


def test_a_verifier_blind_to_which_record_is_caught_by_the_decoy_agent(hidden: list[Task]) -> None:
    """A verifier that counts the work and not which record it was done on: the agent that acts
    on a sibling from the same file then scores 1 on some task, and validation says so."""
    caught = 0
    for task in hidden:
        checks = blind(task.verifier.checks)
        if not checks:
            continue
        unseeing = copy.deepcopy(task)
        unseeing.verifier = Verifier(source=render(checks), checks=checks)
        if "file_decoy" in validate(unseeing, record=False).failed_policies:
            caught += 1
    assert caught


def blind(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A verifier that counts the work and not which record it was done on: each new-record
    goal with no field pinned, no other check."""
    return [
        {**c, "expected": [{"$fields": {}} for _ in c["expected"]]}
        for c in checks
        if c["role"] == "goal" and c["kind"] == "created_in" and "turn" not in c
    ]


def test_a_turn_that_states_the_value_no_longer_counts_as_a_file_fact(hidden: list[Task]) -> None:
    task = copy.deepcopy(hidden[0])
    task.turns[0].user += " It is " + task.provenance["file_fact"]["value"] + "."
    assert not reads_needed_value(task)


def test_a_turn_that_drops_the_pointer_to_the_file_misses_a_value(hidden: list[Task]) -> None:
    for task in hidden:
        assert missing_user_values(task) == [], task.id
        pointer = task.provenance["file_fact"]["pointer"]
        blind = copy.deepcopy(task)
        for turn in blind.turns:
            turn.user = turn.user.replace(pointer, "the right one")
        assert missing_user_values(blind), task.id


def test_a_record_in_a_file_is_pointed_at_in_a_sentence_of_its_own(hidden: list[Task]) -> None:
    """Not "cancel the run that the handoff note in x.md flags as needing action" (a relative
    clause built for the task) but the note first, then the work on "that run"."""
    records = [t for t in hidden if t.provenance["file_fact"]["kind"] == "record"]
    assert records, [t.id for t in hidden]
    for task in records:
        fact = task.provenance["file_fact"]
        noun = phrasebook(load_library((fact["env"],)).packages[fact["env"]]).entity(fact["collection"]).noun
        text = " ".join(turn.user for turn in task.turns)
        said = text.index(fact["pointer"] + ".")  # a sentence of its own, with the path in it
        assert fact["path"] in fact["pointer"] and not fact["pointer"].lower().startswith(f"the {noun} that")
        assert f"that {noun}" in text[said:], task.id


def test_corpus_measures_count_file_facts(tasks: list[Task], hidden: list[Task]) -> None:
    measured = corpus_measures(tasks)["claw_workspace"]
    assert measured["file_fact"] == len(hidden)
    assert measured["file_fact_share"] == round(len(hidden) / len(tasks), 4)


def test_no_record_is_pointed_at_through_a_file_beside_a_note_pointing_at_one_of_its_kind() -> None:
    """A colleague's note names the warehouse stock leaves; a file pointing at the warehouse it goes
    to would make the turn say "from that warehouse to that warehouse"."""
    ledger = load_package("inventory_ledger")
    state = ledger.env_class.generate(seed=1, data=ledger.data).state.model_dump(mode="json")
    source, target = "WH-RNO", "WH-ATL"
    sku = next(
        k
        for k, b in sorted(state["warehouses"][source]["stock"].items())
        if b["on_hand"] - b["reserved"] >= 5
    )
    transfer = {"from_warehouse_id": source, "to_warehouse_id": target, "sku_id": sku, "quantity": 5}
    calls = [
        GoldenCall("inventory_ledger", "begin_transaction", {"memo": "Rebalance"}, {"memo": "user"}, {}),
        GoldenCall(
            "inventory_ledger",
            "add_transfer_line",
            {"journal_id": "JNL-00001", **transfer},
            {"journal_id": "derived:0.journal_id", **dict.fromkeys(transfer, "user")},
            {},
        ),
    ]
    run = replay(calls, {"inventory_ledger": ledger}, {"inventory_ledger": state}, {})
    assert run is not None and all(c.ok for c in run.calls)
    packages = {"inventory_ledger": ledger}
    assert {c.value for c in record_candidates(run, packages)} >= {source, target}
    run.calls[1].provenance["from_warehouse_id"] = "cited:0.body"
    assert not {c.value for c in record_candidates(run, packages)} & set(state["warehouses"])


def test_no_record_a_list_argument_names_is_pointed_at_through_a_file() -> None:
    """start_cycle_count(sku_ids=[X]) names X; pointing record_count's X at a file or a note
    left "count X at that warehouse: the shelf holds 5 units; settle the books (for that SKU)"."""
    ledger = load_package("inventory_ledger")
    state = ledger.env_class.generate(seed=1, data=ledger.data).state.model_dump(mode="json")
    warehouse = "WH-RNO"
    counted = {s for c in state["cycle_counts"].values() if c["status"] == "open" for s in c["lines"]}
    sku = next(s for s in sorted(state["warehouses"][warehouse]["stock"]) if s not in counted)
    calls = [
        GoldenCall(
            "inventory_ledger",
            "start_cycle_count",
            {"warehouse_id": warehouse, "sku_ids": [sku]},
            {"warehouse_id": "user", "sku_ids": "user"},
            {},
        ),
        GoldenCall(
            "inventory_ledger",
            "record_count",
            {"count_id": f"CC-{state['next_count']:04d}", "sku_id": sku, "counted_quantity": 5},
            {"count_id": "derived:0.count_id", "sku_id": "user", "counted_quantity": "user"},
            {},
        ),
    ]
    run = replay(calls, {"inventory_ledger": ledger}, {"inventory_ledger": state}, {})
    assert run is not None and all(c.ok for c in run.calls), [c.result for c in run.calls] if run else None
    values = {c.value for c in record_candidates(run, {"inventory_ledger": ledger})}
    assert warehouse in values and sku not in values
