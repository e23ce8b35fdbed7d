"""The lookups a job needs: the agent finds each record the user names by description.

A walk often acts on a record of S0 straight away (``cancel_class(session_id="CLS-30002")``)
where the user says "the vinyasa class on 5 January at 17:30 in room RM-11": no run can make
that call before it has found the id, with a listing, among the look-alikes S0 holds. A
reference without that read is a call shorter than any run that solves the task, and what the
corpus reports as its depth (reference calls, tool edges covered) undercounts the work.

:func:`with_lookups` adds that read to the reference: before the first call that uses such a
record, a read-only tool of the same environment that needs no argument and whose result lists
the record (on the state at that point, look-alikes included), with the record's id then taken
from that result (``derived``). A record the user holds by its id, one whose only name says
the id, one an earlier call already showed, a log entry, and a value inside a list are left as
they are; so is a record no such listing shows (the run then stays as it was).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.tasks.format.model import GoldenCall, Source
from envcraft.tasks.golden.choose import scalars
from envcraft.tasks.golden.run import GoldenRun, replay
from envcraft.tasks.graphs.graph import ToolGraph
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.phrasing.words import says
from envcraft.tasks.values.args import flatten
from envcraft.tasks.world.hiding import shifted

MAX_LOOKUPS = 3  # finding reads added to one job: two records, or one found through another


def with_lookups(
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    graphs: Mapping[str, ToolGraph],
    rng: random.Random,
) -> GoldenRun:
    """``run`` with a finding read before the first use of each record the user names by
    description (up to :data:`MAX_LOOKUPS` reads), replayed; the run as it was where none fits.

    A record no listing shows may be shown by a read of a record it points to (a member's
    bookings, a customer's orders): that read goes in with the other record's id, which is then
    found the same way in the next round."""
    added, failed = 0, set[tuple[str, str]]()
    while added < MAX_LOOKUPS:
        todo = [u for u in _unfound(run, packages) if u not in failed]
        if not todo:
            break
        env, value = todo[0]
        found = _find(run, packages, graphs[env], env, value, rng)
        if found is None:
            failed.add((env, value))
        else:
            run, added = found, added + 1
    return run


def _find(
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    graph: ToolGraph,
    env: str,
    value: str,
    rng: random.Random,
) -> GoldenRun | None:
    """The run with one read that shows ``value`` before its first use: a listing, else a read
    of a record the target's fields name (tried in a random order: which read finds it varies,
    so more of the graph's edges are walked)."""
    at = next(i for i, c in enumerate(run.calls) if c.env == env and value in c.args.values())
    nodes = [n for n in graph.nodes.values() if n.read_only and not n.system]
    listings = sorted(n.name for n in nodes if not n.required)
    rng.shuffle(listings)
    for tool in listings:
        found = _found_by(run, packages, env, value, at, GoldenCall(env, tool, {}, {}, {}))
        if found is not None:
            return found
    state = run.initial[env]
    book = phrasebook(packages[env])
    record = state[book.collection_of(state, value) or ""][value]
    pointed = {  # the record's fields that hold another record's id: booking.member_id
        field: key for field, key in record.items() if key != value and book.collection_of(state, key)
    }
    getters = sorted(
        (n.name, n.required[0], pointed[n.required[0]])
        for n in nodes
        if len(n.required) == 1 and n.required[0] in pointed
    )
    rng.shuffle(getters)
    for tool, param, key in getters:
        found = _found_by(
            run, packages, env, value, at, GoldenCall(env, tool, {param: key}, {param: "user"}, {})
        )
        if found is not None:
            return found
    return None


def _unfound(run: GoldenRun, packages: Mapping[str, EnvPackage]) -> list[tuple[str, str]]:
    """``(env, key)`` of each S0 record a call names with a value the user states, that no
    earlier call showed and that the user would name by description, in order of first use."""
    shown: set[tuple[str, Any]] = set()
    found: list[tuple[str, str]] = []
    for call in run.calls:
        book = phrasebook(packages[call.env])
        state = run.initial[call.env]
        for arg, value in call.args.items():
            if not isinstance(value, str) or (call.env, value) in shown or call.source(arg).kind != "user":
                continue
            collection = book.collection_of(state, value)
            if collection is None or book.is_log(collection):
                continue
            name = book.name_of(state, collection, value)
            if name is None or says(name, value):
                continue  # the user holds the id, or its name says it: nothing to find
            if (call.env, value) not in found:
                found.append((call.env, value))
        shown |= {(call.env, v) for v in scalars(call.args)}
        shown |= {(call.env, leaf) for _, leaf in flatten(call.result)}
    return found


def _found_by(
    run: GoldenRun, packages: Mapping[str, EnvPackage], env: str, value: str, at: int, read: GoldenCall
) -> GoldenRun | None:
    """The run with ``read`` made before call ``at`` and ``value`` taken from its result by
    every call of ``env`` that states it; None when the read does not show it or the run no
    longer replays unchanged."""
    label = str(Source("derived", at, "?"))  # the replay finds the path and the hint
    calls = shifted(run.calls, at)
    for call in calls:
        if call.env == env:
            for name, arg in call.args.items():
                if arg == value and call.source(name).kind == "user":
                    call.provenance[name] = label
    calls.insert(at, read)
    again = replay(calls, packages, run.initial, run.files)
    if again is None or not again.calls[at].ok:
        return None
    return again
