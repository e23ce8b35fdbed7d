"""Argument choice for golden runs: which value each parameter gets, and where it comes from.

:func:`propose` picks every argument of one call. A value fed by an earlier output (by name,
type and entity kind) becomes ``derived:<call>.<path>`` with a :class:`Hint` that lets the
user text point at it without naming it; other values are ones a user can state (S0
entities, schema enums, free text). Two kinds of memory make the choice good at satisfying
preconditions it is never told: :class:`Experience` (per shard: which entity features and
plain values made a tool succeed) and :class:`Retry` (per step: what the last error blamed,
offered or asked for).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from envcraft.core.clock import iso, parse_time
from envcraft.tasks.format.model import GoldenCall, Hint, Source
from envcraft.tasks.graphs.graph import ToolNode
from envcraft.tasks.phrasing.phrasebook import is_time
from envcraft.tasks.values.args import (
    TAKEN_KEYS,
    StateIndex,
    flatten,
    free_text,
    id_kind,
    json_type,
    param_matches,
    read_path,
    retargeted,
    same_name,
    singular,
    user_values,
)

# Field names that best tell records apart to a human, tried first.
DESCRIPTIVE = (
    "name",
    "title",
    "email",
    "customer",
    "supplier",
    "label",
    "placed_at",
    "created_at",
    "date",
    "start",
    "starts_at",
    "status",
    "city",
)


@dataclass
class Experience:
    """What made calls succeed or fail so far (one per shard, so it stays deterministic).

    For each (tool, parameter) it counts the field values of the entity passed, among
    successes and failures. Candidates whose entity resembles past successes come first:
    after a few tries ``cancel_order`` prefers orders whose status is ``placed``, without
    anyone telling the engine the rule.
    """

    counts: dict[tuple[str, str, str], dict[tuple[str, str], list[int]]] = field(default_factory=dict)
    good: dict[tuple[str, str, str], list[Any]] = field(default_factory=dict)

    def observe(self, node: ToolNode, args: dict[str, Any], index: StateIndex, ok: bool) -> None:
        """Count what worked. A text (words with spaces: a title, a note) is never kept to try
        again: it may name a record of the world it was drawn from, which the next chain's world
        lacks (a search-api incident titled "payments-gateway disk usage ...")."""
        for param, value in args.items():
            text = isinstance(value, str) and " " in value.strip()
            plain = _hashable(value) and not text and not (isinstance(value, str) and value in index.records)
            if ok and plain and id_kind(param) is None:
                bucket = self.good.setdefault((node.env, node.name, param), [])
                if value not in bucket:
                    bucket.append(value)
            for v in scalars(value):
                table = self.counts.setdefault((node.env, node.name, param), {})
                for feature in _features(index, v):
                    table.setdefault(feature, [0, 0])[0 if ok else 1] += 1

    def good_first(self, node: ToolNode, param: str, options: list[Any], rng: random.Random) -> list[Any]:
        """Plain values (codes, amounts) that worked for this parameter before, ahead of the rest."""
        good = self.good.get((node.env, node.name, param), [])
        if not good or rng.random() < 0.3:
            return options
        picked = rng.sample(good, min(len(good), 3))
        return picked + [o for o in options if o not in picked]

    def score(self, node: ToolNode, param: str, value: Any, index: StateIndex) -> float:
        table = self.counts.get((node.env, node.name, param))
        if not table:
            return 0.0
        total = 0.0
        for v in scalars(value):
            for feature in _features(index, v):
                ok, failed = table.get(feature, (0, 0))
                total += math.log((ok + 1) / (failed + 1))
        return total


def _features(index: StateIndex, value: Any) -> list[tuple[str, str]]:
    record = index.records.get(value) if isinstance(value, str) else None
    if record is None:
        return []
    return [(k, str(v)) for k, v in record.items() if not id_kind(k) and k != "id"]


@dataclass
class Retry:
    """What the failures of one step say about the next try: values to avoid (named in the
    error), values the error offers (``available=3``, ``accepted=[...]``) and optional
    parameters it asks for (``field="note"`` when no note was given)."""

    avoid: set[tuple[str, Any]] = field(default_factory=set)
    suggested: dict[str, Any] = field(default_factory=dict)
    include: set[str] = field(default_factory=set)
    keep: dict[str, tuple[Any, str, Hint | None]] = field(default_factory=dict)  # args not blamed

    def learn(self, node: ToolNode, call: GoldenCall, rng: random.Random) -> None:
        args, details = call.args, call.result.get("error", {})
        blamed_field = details.get("field")
        echoed = {v for v in details.values() if isinstance(v, str | int | float)}
        # an error that lists the ids a parameter may take ("sku_ids": [...] beside sku_id)
        # says which argument was wrong; the others it echoes are context
        listed = {id_kind(k) for k, v in details.items() if isinstance(v, list)} - {None}
        named = {p for p in args if id_kind(p) in listed}
        self.suggested = {}
        if isinstance(blamed_field, str) and blamed_field in node.params and blamed_field not in args:
            self.include.add(blamed_field)
        self.keep = {}
        for param, value in args.items():
            blamed = param in named if named else any(v in echoed for v in scalars(value) if _hashable(v))
            blamed = blamed or bool(_window(param, value, details))  # "pickup must be between ..."
            if param != blamed_field and not blamed:
                self.keep[param] = (value, call.provenance[param], call.hints.get(param))
                continue
            self.avoid |= {(param, v) for v in scalars(value) if _hashable(v)}
            offered = _offered(param, value, details)
            if offered:
                self.suggested[param] = rng.choice(offered)
        if len(self.keep) == len(args):  # nothing blamed: the refusal is about a choice made
            self._blame_choices(node, args)

    def _blame_choices(self, node: ToolNode, args: dict[str, Any]) -> None:
        """A refusal that names none of the arguments ("has not opted in to SMS; use email")
        refuses an option the docs offer: the values of the parameters with a closed set of
        options are avoided, or, where there are none, nothing is kept. Kept as they were, the
        next tries asked the same thing again and the step ran out of tries."""
        choices = [p for p in args if "enum" in node.params.get(p, {})]
        for param in choices:
            self.keep.pop(param, None)
            self.avoid |= {(param, v) for v in scalars(args[param]) if _hashable(v)}
        if not choices:
            self.keep = {}


def _offered(param: str, value: Any, details: dict[str, Any]) -> list[Any]:
    """Values an error's details offer for ``param``: the list of its own kind of id where the
    error gives one ("sku_ids" for sku_id), else any listed value of its type that is not a list
    of another kind of id; a time window's bounds; the smallest positive limit of an integer."""
    kind = json_type(value)
    lists = [(k, v) for k, v in sorted(details.items()) if isinstance(v, list) and k != param]
    own = [(k, v) for k, v in lists if id_kind(param) is not None and id_kind(k) == id_kind(param)]
    listed = [
        x
        for k, v in own
        or [(k, v) for k, v in lists if id_kind(param) is None or id_kind(k) in (None, id_kind(param))]
        for x in v
        if json_type(x) == kind and x != value
    ]
    listed += _inside(_window(param, value, details))
    if listed or kind != "integer":
        return listed
    limits = [
        v for k, v in details.items() if json_type(v) == "integer" and v >= 1 and v != value and k != param
    ]
    return [min(limits)] if limits else []


CARRY = 0.85  # chance that a declared job's step names the record the step before it named


def _window(param: str, value: Any, details: dict[str, Any]) -> list[Any]:
    """The times an error states for a time argument (a window's earliest and latest): the
    argument it refuses. Valid times for it are inside the window (:func:`_inside`)."""
    if not is_time(value):
        return []
    return [v for k, v in sorted(details.items()) if is_time(v) and v != value and k != param]


def _inside(times: list[Any]) -> list[Any]:
    """A time well inside the window ``times`` spans (its middle, to the five minutes), else the
    times themselves. A bound is a time the world computes (the latest pickup an arrival
    allows), which the world may move a record to by itself: a pickup moved there by the golden
    run was a request whose outcome no check could tell from doing nothing."""
    moments = sorted(m for t in times if (m := _utc(t)) is not None)
    if len(moments) < 2:
        return times
    middle = moments[0] + (moments[-1] - moments[0]) / 2
    middle -= timedelta(minutes=middle.minute % 5, seconds=middle.second, microseconds=middle.microsecond)
    return [iso(middle)] if moments[0] < middle < moments[-1] else times


def _utc(value: Any) -> datetime | None:
    """A moment the world wrote (``...Z``), never a bare day."""
    if not (isinstance(value, str) and value.endswith("Z") and "T" in value):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


COHESION = 0.7  # how much a candidate the chain's entities own outranks a likelier one
DEEP_COHESION = 3.0  # in a deeper corpus: the chain's own records first, so its steps make one job


def _rank(
    options: list[tuple[Any, Any]],
    node: ToolNode,
    param: str,
    index: StateIndex,
    experience: Experience,
    near: set[str],
    rng: random.Random,
    cohesion: float = COHESION,
) -> list[tuple[Any, Any]]:
    """Order candidates ``(value, payload)``: likely to succeed (experience), then coherent with
    the chain's entities (``near``, weighted ``cohesion``), with a little noise so equal
    candidates vary."""

    def key(option: tuple[Any, Any]) -> float:
        value = option[0]
        close = any(index.owners.get(v, set()) & near for v in scalars(value) if _hashable(v))
        score = experience.score(node, param, value, index)
        return -(score + (cohesion if close else 0.0) + rng.uniform(0, 0.4))

    return sorted(options, key=key)


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def propose(
    node: ToolNode,
    calls: list[GoldenCall],
    index: StateIndex,
    known: set[Any],
    rng: random.Random,
    experience: Experience | None = None,
    retry: Retry | None = None,
    cohesion: float = COHESION,
    words: Mapping[str, Sequence[str]] | None = None,
    carried: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str], dict[str, Hint]] | None:
    """One choice of arguments for ``node`` given the calls so far; None if a required
    parameter has no candidate at all. ``cohesion``: how strongly values of the records the
    chain already involves are preferred (:func:`_rank`). ``words``: what the user says for a
    free-text parameter in the job being walked (``Job.examples``), over S0's and the tool's.
    ``carried``: the required values the user stated for the step before, in a declared job
    (:func:`carried_values`)."""
    experience = experience if experience is not None else Experience()
    retry = retry if retry is not None else Retry()
    args: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    hints: dict[str, Hint] = {}
    near = _chain_owners(calls, index)
    derived_so_far = set(derived_values(calls))
    for param, prop in node.params.items():
        required = param in node.required

        def allowed(value: Any, param: str = param) -> bool:
            return not any((param, v) in retry.avoid for v in scalars(value) if _hashable(v))

        fed = [
            f
            for f in _fed(param, prop, calls, derived_so_far, node.env)
            if allowed(f[1]) and (id_kind(param) is not None or not _in_s0(f[1], index))
        ]
        if not required and param not in retry.include and rng.random() < (0.3 if fed else 0.7):
            continue
        if fed and rng.random() < 0.9:
            recent = max(c for c, _, _, _ in fed)
            options = [(v, (lb, h)) for c, v, lb, h in fed if c == recent]
            value, (label, hint) = _rank(options, node, param, index, experience, near, rng, cohesion)[0]
        elif param in retry.suggested:
            value, label, hint = retry.suggested[param], "user", None
        elif carried and param in carried and allowed(carried[param]) and rng.random() < CARRY:
            value, label, hint = carried[param], "user", None
        elif param in retry.keep and rng.random() < 0.75:
            value, label, hint = retry.keep[param]
        else:
            if words and param in words:
                found = [v for v in rng.sample(list(words[param]), len(words[param])) if allowed(v)]
            else:
                found = [v for v in user_values(param, prop, index, rng, limit=12, near=near) if allowed(v)]
            found = [retargeted(v, args, index) for v in found]  # a copied text about this record
            if param in TAKEN_KEYS and not node.read_only:  # a new record's name: not one taken
                found = [v for v in found if not _taken(node, param, v, index)] or [free_text(param, rng)]
            found = experience.good_first(node, param, found, rng)
            ranked = [
                v
                for v, _ in _rank(
                    [(v, None) for v in found], node, param, index, experience, near, rng, cohesion
                )
            ]
            picked = _pick_user(ranked, calls, derived_so_far, node.env)
            if picked is None:
                if required:
                    return None
                continue
            value, label, hint = picked
        if not required and value == prop.get("default"):
            continue
        if label != "user" and all(v in known for v in scalars(value)):
            label, hint = "user", None
        args[param] = value
        provenance[param] = label
        if hint is not None:
            hints[param] = hint
        if label == "user":
            near |= {o for v in scalars(value) for o in index.owners.get(v, set())}
    return args, provenance, hints


def carried_values(calls: Sequence[GoldenCall], node: ToolNode) -> dict[str, Any]:
    """Per required parameter of ``node``, what the user last stated for it in an earlier
    successful call in ``node``'s environment. A declared job's steps act on one record's way;
    where that record is named by more than one value (a partition is a topic and a number),
    choosing each value on its own named another record mostly: processing payments/p2, then
    committing refunds/p2."""
    found: dict[str, Any] = {}
    for call in reversed(calls):
        if call.ok and call.env == node.env and isinstance(call.args, dict):
            for param, value in call.args.items():
                if param in node.required and param in call.provenance and call.source(param).kind == "user":
                    found.setdefault(param, value)
    return found


def _taken(node: ToolNode, param: str, value: Any, index: StateIndex) -> bool:
    """Whether ``value`` is already the ``param`` (a name, a title) of a record of a collection
    ``node`` writes: a new record called so clashes with it (the world rule ``taken_name``)."""
    if not isinstance(value, str):
        return False
    for owner in index.owners.get(value, set()):
        collection, _, key = owner.partition("/")
        if collection in node.writes and same_name(index.records.get(key, {}).get(param), value):
            return True
    return False


def _in_s0(value: Any, index: StateIndex) -> bool:
    """A plain value (a name, a date) the user could read in S0: stated, not derived."""
    return all(v in index.owners or v in index.files for v in scalars(value) if _hashable(v))


def _pick_user(
    options: list[Any], calls: list[GoldenCall], derived: set[Any], env: str = ""
) -> tuple[Any, str, Hint | None] | None:
    """The first option the user may state; a value the chain already derived stays derived
    (stating it now would leak it), so it must be found and described in an earlier output."""
    for value in options:
        if not any(v in derived for v in scalars(value)):
            return value, "user", None
        for i in range(len(calls) - 1, -1, -1):
            same_env = not env or calls[i].env == env
            if (
                same_env
                and calls[i].ok
                and (found := find_value(calls[i].result, i, value, derived)) is not None
            ):
                return value, found[0], found[1]
    return None


def _fed(
    param: str, prop: dict[str, Any], calls: list[GoldenCall], derived: set[Any], env: str
) -> list[tuple[int, Any, str, Hint | None]]:
    """Values earlier outputs offer for ``param`` that the user could be told how to find."""
    found: list[tuple[int, Any, str, Hint | None]] = []
    for i, call in enumerate(calls):
        if not call.ok or call.env != env:
            continue  # environments share no records: an id of one means nothing to another
        for path, shape, value, kind in call.leaves:
            if not param_matches(param, prop, shape, kind):
                continue
            hint = describe(call.result, path, i, derived | {value})
            if hint is None:
                continue
            wrapped = [value] if prop.get("type") == "array" else value
            found.append((i, wrapped, str(Source("derived", i, path)), hint))
    return found


def describe(result: dict[str, Any], path: str, call: int, hidden: set[Any]) -> Hint | None:
    """How to single out the value at ``path`` of ``result``: the record holding it, told
    apart from its siblings by a field whose value is not itself hidden. None if impossible."""
    parts = path.split(".")
    positions = [i for i, p in enumerate(parts) if p.isdigit()]
    leaf = parts[-1]
    if not positions:
        return Hint(call, id_kind(leaf) or singular(parts[-2] if len(parts) > 1 else leaf))
    cut = positions[-1]
    siblings = read_path(result, ".".join(parts[:cut]))
    entity = singular(parts[cut - 1]) if cut >= 1 else "item"
    if not isinstance(siblings, list) or len(siblings) == 1:
        return Hint(call, entity)
    record = siblings[int(parts[cut])]
    if not isinstance(record, dict):
        return None
    field_name = _distinguishing_field(record, siblings, hidden)
    if field_name is None:
        return None
    return Hint(call, entity, field_name, record[field_name], len(siblings))


def _distinguishing_field(record: dict[str, Any], siblings: list[Any], hidden: set[Any]) -> str | None:
    candidates = [
        k
        for k, v in record.items()
        if isinstance(v, str | int | float)
        and not isinstance(v, bool)
        and v not in hidden
        and not id_kind(k)
        and k != "id"
        and str(v).strip()
    ]
    candidates.sort(key=lambda k: (DESCRIPTIVE.index(k) if k in DESCRIPTIVE else len(DESCRIPTIVE), k))
    for key in candidates:
        others = [s.get(key) for s in siblings if isinstance(s, dict) and s is not record]
        if record[key] not in others:
            return key
    return None


def find_value(
    result: dict[str, Any], call: int, value: Any, hidden: set[Any]
) -> tuple[str, Hint | None] | None:
    """Where ``value`` (or the single item of a one-item list) sits in ``result``, as a
    provenance label and the hint that describes it; None if absent or not describable."""
    wanted = value[0] if isinstance(value, list) and len(value) == 1 else value
    for path, leaf in flatten(result):
        if leaf == wanted:
            hint = describe(result, path, call, hidden)
            if hint is not None:
                return str(Source("derived", call, path)), hint
    return None


def derived_values(calls: list[GoldenCall]) -> list[Any]:
    return [
        v for c in calls for k, label in c.provenance.items() if label != "user" for v in scalars(c.args[k])
    ]


def scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in scalars(v)]
    return [value] if isinstance(value, str | int | float | bool) else []


def _chain_owners(calls: list[GoldenCall], index: StateIndex) -> set[str]:
    """Entities the chain already involves: later user choices prefer them (a coherent story)."""
    owners: set[str] = set()
    for call in calls:
        for value in scalars(call.args):
            owners |= index.owners.get(value, set())
    return owners
