"""Every changing tool of a desk can become a task: the classes that kept tools out of the whole
default corpus (seed 0: 34 of 92 changing tools in no task), each fixed in the mechanism.

- an empty field of S0 (``"pause_reason": ""``) was offered as the user's reason, and the tool
  refuses an empty reason: no pause or seek ever ran;
- a record a call names by two or more arguments (a partition by topic and number) was no named
  record of the verifier, so a pause had no goal and its draft was refused;
- a label or folder name was drawn from S0's other texts ("the tracking number"), which the tool
  refuses: a parameter's declared examples now give the shape its values take.
"""

from __future__ import annotations

import random
from typing import Any

from envcraft.core import load_package
from envcraft.tasks.corpus.compose import SynthConfig, compose_draft, load_library
from envcraft.tasks.graphs.walk import Coverage, Step
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.phrasing.render import TemplateRenderer
from envcraft.tasks.values.args import StateIndex, shaped_like, user_values


def test_an_empty_field_of_s0_is_never_a_value_the_user_states() -> None:
    index = StateIndex.build({"partitions": {"payments/p0": {"topic": "payments", "pause_reason": ""}}})
    prop = {"type": "string", "examples": ["ledger maintenance downstream"]}
    drawn = {v for seed in range(20) for v in user_values("pause_reason", prop, index, random.Random(seed))}
    assert "" not in drawn
    assert drawn == {"ledger maintenance downstream"}


def test_declared_examples_give_the_shape_of_a_value() -> None:
    assert shaped_like("customer-escalation", ["finance", "follow-up"])
    assert shaped_like("archive", ["archive", "q1-invoices"])
    assert not shaped_like("the tracking number", ["finance", "follow-up"])
    assert not shaped_like("Alex Moreno", ["vendors", "q1-invoices"])
    assert not shaped_like("", ["finance"])
    index = StateIndex.build({"cases": {"CASE-1": {"label": "the tracking number"}}})
    prop = {"type": "string", "examples": ["finance", "customer-escalation"]}
    drawn = {v for seed in range(20) for v in user_values("label", prop, index, random.Random(seed))}
    assert drawn == {"finance", "customer-escalation"}


def test_a_list_the_world_holds_under_the_plural_gives_candidates() -> None:
    index = StateIndex.build({"folders": ["inbox", "archive", "spam"]})
    drawn = user_values("folder", {"type": "string"}, index, random.Random(0))
    assert set(drawn) == {"inbox", "archive", "spam"}


def test_a_record_named_by_two_arguments_is_found() -> None:
    book = phrasebook(load_package("event_stream"))
    state = {
        "partitions": {
            "payments/p0": {"topic": "payments", "partition": 0},
            "payments/p1": {"topic": "payments", "partition": 1},
            "refunds/p0": {"topic": "refunds", "partition": 0},
        }
    }
    assert book.keyed_by_args(state, {"topic": "payments", "partition": 1}) == [("partitions", "payments/p1")]
    assert book.keyed_by_args(state, {"topic": "payments"}) == []  # one value names no single record
    assert book.keyed_by_args(state, {"topic": "payments", "partition": True}) == []  # type matters


def _drafts(env: str, tools: list[str], tries: int) -> list[Any]:
    library = load_library([env])
    drafts = []
    for seed in range(tries):
        draft, _ = compose_draft(
            library,
            [Step(env, t) for t in tools],
            f"reach:{seed}",
            random.Random(seed),
            Coverage(),
            SynthConfig(),
            TemplateRenderer(seed="reach"),
        )
        if draft is not None:
            drafts.append(draft)
    return drafts


def test_a_pause_of_a_partition_makes_a_task_whose_goal_is_the_pause() -> None:
    drafts = _drafts("event_stream", ["set_partition_paused"], 4)
    assert drafts, "no task out of four pauses"
    for draft in drafts:
        goals = [c for c in draft.task.verifier.checks if c["role"] == "goal"]
        assert any(c.get("path", "").endswith("/paused") and c.get("expected") is True for c in goals)
        call = draft.task.reference.calls[-1]
        assert call.tool == "set_partition_paused" and call.args["reason"].strip()


def test_a_label_and_a_new_folder_make_tasks() -> None:
    for tool in ("label_message", "create_folder"):
        drafts = _drafts("mail_triage", [tool], 3)
        assert drafts, f"no {tool} task out of three"
        for draft in drafts:
            args = next(c.args for c in draft.task.reference.calls if c.tool == tool)
            value = args.get("label", args.get("name"))
            assert shaped_like(value, ["finance", "customer-escalation", "q1-invoices"])


def test_a_new_path_is_a_file_of_the_kind_the_workspace_holds() -> None:
    """A stage writing a .csv output needs a .csv path no earlier output holds; the one new path
    offered was always notes/<word>-<n>.md."""
    index = StateIndex.build({}, {"outputs/q2-clean.csv": "a,b\n"})
    drawn = [user_values("output_path", {"type": "string"}, index, random.Random(s)) for s in range(10)]
    fresh = {p for paths in drawn for p in paths if p != "outputs/q2-clean.csv"}
    assert fresh and all(p.startswith("outputs/") and p.endswith(".csv") for p in fresh)
    empty = user_values("output_path", {"type": "string"}, StateIndex.build({}, {}), random.Random(0))
    assert len(empty) == 1 and empty[0].startswith("notes/") and empty[0].endswith(".md")


def test_a_path_parameter_with_declared_examples_draws_from_them() -> None:
    """purge_disk's paths live on a host's disk, not in the workspace: the desk declares them."""
    index = StateIndex.build({}, {"notes/a.md": "x"})
    prop = {"type": "string", "examples": ["/var/log/app", "/tmp/cache"]}
    drawn = {p for s in range(10) for p in user_values("path", prop, index, random.Random(s))}
    assert drawn == {"/var/log/app", "/tmp/cache"}


def test_a_list_parameters_declared_examples_are_examples_of_its_items() -> None:
    """submit_run's params are "name=value" strings: the examples declared for the list shape
    its items (they were dropped, and the items were free text the tool refuses)."""
    prop = {"type": "array", "items": {"type": "string"}, "examples": ["region=eu", "batch_size=500"]}
    drawn = {
        x
        for s in range(10)
        for v in user_values("params", prop, StateIndex.build({}), random.Random(s))
        for x in v
    }
    assert drawn and drawn <= {"region=eu", "batch_size=500"}


def test_a_flights_destination_is_no_workspace_path() -> None:
    """search_flights(destination=...) was offered notes/weekly-62.md: "destination" is a path only
    where the parameter says so."""
    index = StateIndex.build({"flights": {"F1": {"destination": "BCN"}}}, {"notes/weekly-62.md": "x"})
    airport = {"type": "string", "description": "IATA code of the arrival airport, e.g. BCN."}
    assert "notes/weekly-62.md" not in user_values("destination", airport, index, random.Random(0))
    folder = {"type": "string", "description": "Path of the folder to copy into."}
    assert "notes/weekly-62.md" in user_values("destination", folder, index, random.Random(0))
