"""The reads a job needs (envcraft.tasks.world.lookups): a record the user names by description
is found by the reference before it is used, as every run that solves the task must."""

from __future__ import annotations

import random
from typing import Any

import pytest

from envcraft.tasks.corpus.compose import (
    Library,
    SynthConfig,
    generate_initial,
    load_library,
    synthesize_shard,
)
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.run import GoldenRun, replay
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.values.args import flatten
from envcraft.tasks.world.lookups import with_lookups

ENV = "class_booking"


@pytest.fixture(scope="module")
def library() -> Library:
    return load_library((ENV,))


def _run(library: Library, calls: list[GoldenCall]) -> GoldenRun:
    packages = {ENV: library.packages[ENV]}
    initial, files = generate_initial(packages, "lookups:1", 1)
    run = replay(calls, packages, initial, files)
    assert run is not None and all(c.ok for c in run.calls), [c.result for c in run.calls]
    return run


def _state(library: Library) -> dict[str, Any]:
    return generate_initial({ENV: library.packages[ENV]}, "lookups:1", 1)[0][ENV]


def _described(library: Library, collection: str, wanted: Any) -> str:
    """A record of ``collection`` that ``wanted`` accepts and a person names without its id."""
    state = _state(library)
    book = phrasebook(library.packages[ENV])
    for key, record in sorted(state[collection].items()):
        name = book.name_of(state, collection, key)
        if name is not None and key not in name and wanted(record):
            return str(key)
    raise AssertionError(f"no {collection} record to name")


def _lookups(library: Library, run: GoldenRun, seed: int = 0) -> GoldenRun:
    packages = {ENV: library.packages[ENV]}
    return with_lookups(run, packages, {ENV: library.graphs[ENV]}, random.Random(seed))


def _shows(call: GoldenCall, value: str) -> bool:
    return any(leaf == value for _, leaf in flatten(call.result))


def test_a_class_named_by_description_is_found_in_a_listing_first(library: Library) -> None:
    session = _described(library, "sessions", lambda r: r["status"] == "scheduled")
    run = _run(library, [GoldenCall(ENV, "cancel_class", {"session_id": session, "reason": "x"}, {}, {})])
    found = _lookups(library, run)
    assert [c.tool for c in found.calls][1:] == ["cancel_class"]
    read = found.calls[0]
    assert library.graphs[ENV].nodes[read.tool].read_only and read.args == {} and _shows(read, session)
    assert found.calls[1].source("session_id").kind == "derived"
    assert found.calls[1].source("session_id").call == 0
    assert found.calls[1].source("reason").kind == "user"  # free text stays the user's
    assert found.calls[1].ok


def test_a_booking_is_found_through_the_record_it_points_to_and_that_in_a_listing(library: Library) -> None:
    booking = _described(library, "bookings", lambda r: r["status"] == "booked")
    run = _run(library, [GoldenCall(ENV, "cancel_booking", {"booking_id": booking}, {}, {})])
    found = _lookups(library, run)
    getter, listing, act = found.calls[1], found.calls[0], found.calls[2]
    assert act.tool == "cancel_booking" and len(found.calls) == 3
    # through the member who holds it or the class it is for, whichever the draw tried first
    ((param, key),) = getter.args.items()
    assert (getter.tool, param) in {("get_member", "member_id"), ("get_class", "session_id")}
    assert listing.args == {} and _shows(listing, key) and _shows(getter, booking)
    assert str(getter.source(param)).startswith("derived:0.")
    assert str(found.calls[2].source("booking_id")).startswith("derived:1.")


def test_a_record_an_earlier_call_showed_is_not_looked_up_again(library: Library) -> None:
    session = _described(library, "sessions", lambda r: r["status"] == "scheduled")
    listed = _run(
        library,
        [
            GoldenCall(ENV, "search_classes", {}, {}, {}),
            GoldenCall(ENV, "cancel_class", {"session_id": session, "reason": "x"}, {}, {}),
        ],
    )
    assert len(_lookups(library, listed).calls) == 2  # the listing already showed it


def test_a_shard_of_tool_tasks_reads_before_it_acts_and_its_references_still_score(library: Library) -> None:
    tasks = synthesize_shard(library, ENV, 0, 6, SynthConfig(seed=5, p_cross=0.0)).tasks
    assert tasks
    found = 0
    for task in tasks:
        calls = task.reference.calls
        for i, call in enumerate(calls):
            for arg in call.args:
                source = call.source(arg)
                if source.kind == "derived" and source.call is not None and not calls[source.call].args:
                    found += 1  # a value taken from a listing the reference made
                    assert library.graphs[ENV].nodes[calls[source.call].tool].read_only
                    assert source.call < i
        assert task.quality.get("leaks") == []  # the id itself is never said
    assert found >= 2, [[c.tool for c in t.reference.calls] for t in tasks]
