"""A file the user asks for by content: the values a finished job leaves, found and given back.

A job whose record is named by its arguments rather than an id (event_stream's "partition 1 of
the payments topic" of ``topic``, ``partition``) may be asked about too: how far the batch took
the partition is a whole number the agent reads back. Before, such jobs asked for no file (the
changed-field branch waited for an op ``diff`` never emits), so 67 of 75 event_stream tasks of
the seed-0 corpus were one call in one turn.
"""

from __future__ import annotations

import random

from envcraft.core.package import load_package
from envcraft.core.phrasing import Entity, check_entity
from envcraft.core.session import Session
from envcraft.tasks.corpus.compose import _record_names
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.run import replay
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.world.requests import request_file


def test_a_partition_named_by_its_arguments_is_asked_about_as_a_whole_number() -> None:
    packages = {"event_stream": load_package("event_stream")}
    with Session.memory(packages["event_stream"], seed=0) as session:
        initial, files = {"event_stream": session.state()}, session.files()
    args = {"topic": "payments", "partition": 1, "max_records": 2}
    run = replay(
        [GoldenCall("event_stream", "process_batch", args, {}, {"ok": True})], packages, initial, files
    )
    assert run is not None
    names = _record_names(run, packages)
    assert names[("event_stream", "payments/p1")] == "partition 1 of the payments topic"
    position = run.final["event_stream"]["partitions"]["payments/p1"]["position"]
    formats = set()
    for seed in range(20):
        request = request_file(run, packages, names, random.Random(seed))
        assert request is not None
        asked = {i.key: i for i in request.items}
        assert asked["partition_position"].value == position
        # the only partition the work named: the turns said it, the closing ask refers back
        # in the words a person uses (Entity.labels), not the field's bare name
        assert asked["partition_position"].what == "the read position of that partition afterwards"
        assert request.file.format != "json"  # 23 and "23" are two JSON values
        formats.add(request.file.format)
        assert replay([*run.calls, request.call], packages, initial, files) is not None  # the file embeds it
    assert formats == {"csv", "markdown"}


def test_the_closing_ask_names_a_record_in_full_where_that_could_be_another() -> None:
    """Two partitions of the work: "that partition" could be either, so each is named again."""
    packages = {"event_stream": load_package("event_stream")}
    with Session.memory(packages["event_stream"], seed=0) as session:
        initial, files = {"event_stream": session.state()}, session.files()
    calls = [
        GoldenCall(
            "event_stream", "process_batch", {"topic": "payments", "partition": p, "max_records": 2}, {}, {}
        )
        for p in (1, 2)
    ]
    run = replay(calls, packages, initial, files)
    assert run is not None
    names = _record_names(run, packages)
    whats = {
        i.what
        for seed in range(20)
        if (request := request_file(run, packages, names, random.Random(seed))) is not None
        for i in request.items
    }
    assert whats <= {
        "the read position of partition 1 of the payments topic afterwards",
        "the read position of partition 2 of the payments topic afterwards",
    }
    assert whats


def test_a_report_gives_a_short_code_or_a_whole_number_never_nothing() -> None:
    from envcraft.tasks.world.requests import _reportable

    assert _reportable("drained") and _reportable(23)
    assert not _reportable("") and not _reportable(True) and not _reportable("2026-01-05T08:00:00Z")
    assert not _reportable("two words")


def test_a_free_field_of_a_lists_items_is_declared_as_list_star_field() -> None:
    """``lines/*/note``: a journal line's note (round 53); lint knows each item's fields."""
    from envcraft.core.lint.structure import _item_fields
    from envcraft.envs.inventory_ledger.state import Journal

    fields = set(Journal.model_fields) | _item_fields(Journal)
    assert "lines/*/note" in fields and "lines/*/quantity" in fields
    assert check_entity(Entity("journals", "journal", free=("lines/*/note",)), fields) == []
    assert check_entity(Entity("journals", "journal", free=("lines/*/nope",)), fields) == [
        "free lists unknown fields lines/*/nope"
    ]


def test_a_field_label_must_name_a_field_of_the_record() -> None:
    """Labels are checked like the other field lists of a declaration (lint rule entity-decl)."""
    labelled = Entity("partitions", "partition", labels={"comitted": "committed offset"})
    assert check_entity(labelled, {"topic", "partition", "committed"}) == [
        "labels lists unknown fields comitted"
    ]
    book = phrasebook(load_package("event_stream"))
    assert book.label("partitions", "committed") == "committed offset"
    assert book.label("partitions", "paused") == "paused"  # no label: its name
