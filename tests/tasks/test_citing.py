"""Cross-environment tasks whose record is named by a colleague's note in another environment
(envcraft.tasks.world.citing): a value found in one environment drives the action in another."""

from __future__ import annotations

import re
from typing import Any

import pytest

from envcraft.core.environment import Initial
from envcraft.core.package import load_package
from envcraft.tasks.corpus import compose
from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.corpus.measures import carries_across, corpus_measures
from envcraft.tasks.format.model import GoldenCall, Source, Task
from envcraft.tasks.golden.run import flows_across, replay
from envcraft.tasks.phrasing.leaks import find_leaks, missing_user_values
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.phrasing.words import plural
from envcraft.tasks.world.citing import carriers

from .test_reward_semantics import reference, score

JOBS = ("class_booking", "returns_desk", "job_scheduler")


@pytest.fixture(scope="module")
def cited() -> list[Task]:
    library = load_library((*JOBS, "mail_triage"))
    found: list[Task] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compose, "P_CITE", 1.0)
        for env in JOBS:
            found += synthesize_shard(library, env, 0, 4, SynthConfig(seed=11, p_cross=0.0)).tasks
    tasks = [t for t in found if "cited_fact" in t.provenance]
    assert len(tasks) >= 6, [t.id for t in found]
    return tasks


def test_the_note_is_said_in_a_sentence_of_its_own_and_the_work_refers_to_it(cited: list[Task]) -> None:
    """ "The message “Runs for today” from Marta Klein says a pipeline run still needs attention.
    Cancel that pipeline run; ..." rather than one clause built around the note."""
    library = load_library((*JOBS, "mail_triage"))
    for task in cited:
        fact = task.provenance["cited_fact"]
        noun = phrasebook(library.packages[fact["env"]]).entity(fact["collection"]).noun
        text = " ".join(turn.user for turn in task.turns)
        said = text.index(fact["pointer"] + ".")
        assert fact["pointer"].lower().startswith("the message “"), fact["pointer"]
        assert re.search(rf"says an? {noun} still needs attention$", fact["pointer"]), fact["pointer"]
        assert f"that {noun}" in text[said:], task.id


def test_mail_triage_leaves_a_note_its_own_tools_read_and_other_worlds_leave_none() -> None:
    mail = load_package("mail_triage")
    initial = mail.env_class.generate(seed=4, size=1)
    before = set(initial.state.messages)  # type: ignore[attr-defined]
    made = mail.env_class.leave_note(initial, "Orders for today", "ORD-100002 still needs attention.", 7)
    assert made is not None
    collection, key = made
    note = initial.state.messages[key]  # type: ignore[attr-defined]
    assert collection == "messages" and key not in before and "seen" not in note.flags
    assert note.date < mail.env_class.base_time().isoformat().replace("+00:00", "Z")
    assert all(m.date < note.date for k, m in initial.state.messages.items() if k != key)  # type: ignore[attr-defined]
    assert "ORD-100002 still needs attention." in initial.files[f"mail/inbox/{key}.eml"]
    assert mail.env_class.rule_violations(initial.state, initial.files) == []
    returns = load_package("returns_desk")
    assert returns.env_class.leave_note(Initial(returns.env_class.State()), "s", "t", 1) is None
    library = load_library(("returns_desk", "mail_triage", "notes_desk"))
    assert carriers(library.packages, ["returns_desk"]) == ["mail_triage"]
    assert carriers(library.packages, ["mail_triage"]) == []


def test_the_record_is_read_in_the_note_and_used_in_the_other_environment(cited: list[Task]) -> None:
    for task in cited:
        fact = task.provenance["cited_fact"]
        calls = task.reference.calls
        read = calls[fact["read_call"]]
        assert (read.env, read.tool, read.args) == (
            "mail_triage",
            "read_message",
            {"message_id": fact["note"]},
        )
        note = task.initial_state["mail_triage"]["messages"][fact["note"]]
        assert fact["value"] in note["body"] and all(d in note["body"] for d in fact["decoys"])
        users = [(i, a) for i, c in enumerate(calls) for a, v in c.args.items() if v == fact["value"]]
        assert users and all(i > fact["read_call"] for i, _ in users)
        for i, arg in users:
            source = Source.parse(calls[i].provenance[arg])
            assert (source.kind, source.call, source.path) == ("cited", fact["read_call"], "body")
            assert calls[i].env == fact["env"] != "mail_triage"
        assert task.envs[0] == fact["env"] and "mail_triage" in task.envs
        text = "\n".join(t.user for t in task.turns)
        assert fact["pointer"] in text and fact["value"] not in text and fact["note"] not in text
        assert not find_leaks(task) and not missing_user_values(task)
        assert carries_across(task)
    measures = corpus_measures(cited)
    assert measures["cross_env_cited"] == len(cited) == measures["cross_env_carrying_values"]


def test_reading_the_note_any_way_pays_and_acting_on_a_record_it_calls_handled_does_not(
    cited: list[Task],
) -> None:
    for task in cited[:4]:
        fact = task.provenance["cited_fact"]
        assert score(task, reference(task)) == 1.0, task.id
        by_file = reference(task)  # the note's .eml read with the file tool instead
        for calls in by_file:
            for step in calls:
                if step["tool"] == "read_message":
                    step.update(tool="read_file", args={"path": f"mail/inbox/{fact['note']}.eml"})
        assert score(task, by_file) == 1.0, task.id
        decoy = _swapped(reference(task), fact["value"], fact["decoys"][0])
        assert score(task, decoy) < 1.0, task.id


def test_a_replay_where_the_note_no_longer_names_the_value_fails(cited: list[Task]) -> None:
    task = cited[0]
    fact = task.provenance["cited_fact"]
    packages = {env: load_package(env) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    assert replay(calls, packages, task.initial_state, task.workspace) is not None
    assert flows_across(calls)
    other = fact["decoys"][0]
    initial: dict[str, Any] = {**task.initial_state}
    mail = {**initial["mail_triage"], "messages": {**initial["mail_triage"]["messages"]}}
    note = mail["messages"][fact["note"]]
    mail["messages"][fact["note"]] = {**note, "body": note["body"].replace(fact["value"], other)}
    initial["mail_triage"] = mail
    assert replay(calls, packages, initial, task.workspace) is None


def test_a_shard_draws_the_same_cited_tasks_again(cited: list[Task]) -> None:
    library = load_library((*JOBS, "mail_triage"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compose, "P_CITE", 1.0)
        again = synthesize_shard(library, JOBS[0], 0, 4, SynthConfig(seed=11, p_cross=0.0)).tasks
    first = [(t.id, t.provenance["cited_fact"]) for t in cited if t.envs[0] == JOBS[0]]
    assert (
        first and [(t.id, t.provenance["cited_fact"]) for t in again if "cited_fact" in t.provenance] == first
    )


def _swapped(turns: list[list[dict[str, Any]]], value: str, other: str) -> list[list[dict[str, Any]]]:
    for calls in turns:
        for step in calls:
            step["args"] = {k: other if v == value else v for k, v in step["args"].items()}
    return turns


def test_a_notes_subject_and_text_say_the_plural_of_the_noun() -> None:
    assert [plural(n) for n in ("class", "purchase order", "delivery", "SKU", "box")] == [
        "classes",
        "purchase orders",
        "deliveries",
        "SKUs",
        "boxes",
    ]
