"""The golden run: a walk executed for real, with the provenance of every argument.

Each chain runs in fresh in-memory sessions from S0 (one per environment; the task's Claw
environments share one workspace directory). For every parameter we choose a value and say
where it comes from:

* ``user`` — something the user can say: an entity from S0 (ids, names, emails), an enum
  or boolean from the schema, or plausible free text;
* ``derived:<call>.<path>`` — read from an earlier call's output. When the value sits in a
  list of records, the pick is *described* by a field that tells it apart from its siblings
  (the order whose ``placed_at`` is ...), so the user text can determine it without naming it.

A call that fails is retried with other choices a bounded number of times and then dropped;
with a small probability a business-rule failure is kept as a planned error-recovery step
(``expected_error``) followed by the successful retry. A failed call consumes an action
index (the clock moves), so dropping one rebuilds the sessions from S0 and replays the
accepted prefix: the reference then replays to the same final state.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from envcraft.core.errors import ErrorCategory, is_error
from envcraft.core.package import EnvPackage
from envcraft.core.session import Session
from envcraft.core.state import diff
from envcraft.core.workspace import Workspace
from envcraft.tasks.args import (
    StateIndex,
    flatten,
    id_kind,
    json_type,
    param_matches,
    read_path,
    schema_path,
    singular,
    user_values,
)
from envcraft.tasks.execute import SCRATCH
from envcraft.tasks.graph import ToolGraph, ToolNode
from envcraft.tasks.walk import Coverage, Step

MAX_TRIES = 8
RECOVERABLE = frozenset(
    {ErrorCategory.INVALID_TRANSITION, ErrorCategory.CONFLICT, ErrorCategory.PERMISSION_DENIED}
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
class Hint:
    """How the user can point at a derived value without naming it."""

    call: int
    entity: str
    field: str | None = None
    value: Any = None
    among: int = 1  # how many sibling records the pick was made from

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "among": self.among,
        }


@dataclass
class GoldenCall:
    env: str
    tool: str
    args: dict[str, Any]
    provenance: dict[str, str]
    result: dict[str, Any]
    hints: dict[str, Hint] = field(default_factory=dict)
    expected_error: str | None = None  # a planned error-recovery step: the category it fails with

    @property
    def ok(self) -> bool:
        return not is_error(self.result)

    @cached_property
    def leaves(self) -> list[tuple[str, str, Any, str | None]]:
        """``(path, schema path, value, JSON type)`` of every scalar in the result (computed once)."""
        return [(p, schema_path(p), v, json_type(v)) for p, v in flatten(self.result)]


@dataclass
class GoldenRun:
    calls: list[GoldenCall]
    initial: dict[str, dict[str, Any]]
    files: dict[str, str]
    final: dict[str, dict[str, Any]]
    final_files: dict[str, str]

    @property
    def changed(self) -> bool:
        return self.initial != self.final or self.files != self.final_files

    @cached_property
    def targets(self) -> list[dict[str, str]]:
        """Entities of S0 the chain touched: changed by it, or named in its arguments."""
        found: dict[tuple[str, str], None] = {}
        for env, before in self.initial.items():
            collections = _collections(before)
            for change in diff(before, self.final.get(env, {})):
                parts = change["path"].lstrip("/").split("/")
                keys = [_unescape(p) for p in parts[:2]]
                if len(keys) == 2 and keys[0] in collections and keys[1] in before[keys[0]]:
                    found[(env, f"/{parts[0]}/{parts[1]}")] = None
            for call in self.calls:
                if call.env != env:
                    continue
                for value in _scalars(call.args):
                    for name in collections:
                        if isinstance(value, str) and value in before[name]:
                            found[(env, f"/{_escape(name)}/{_escape(value)}")] = None
        return [{"env": env, "path": path} for env, path in found]


class LiveSessions:
    """The task's sessions (one per environment, one shared workspace) at the accepted prefix."""

    def __init__(
        self,
        packages: Mapping[str, EnvPackage],
        initial: Mapping[str, dict[str, Any]],
        files: Mapping[str, str],
    ) -> None:
        self.packages = dict(packages)
        self.initial = {k: dict(v) for k, v in initial.items()}
        self.files = dict(files)
        claw = any(p.kind == "claw" for p in self.packages.values())
        self.workdir = Path(tempfile.mkdtemp(prefix="envcraft-golden-", dir=SCRATCH)) if claw else None
        self.sessions: dict[str, Session] = {}
        self._open()

    def _open(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir.mkdir(parents=True)
        self.sessions = {
            env: Session.memory(
                package,
                state=self.initial[env],
                files=self.files,
                workspace_dir=self.workdir if package.kind == "claw" else None,
            )
            for env, package in self.packages.items()
        }

    def call(self, env: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return self.sessions[env].call(tool, args)

    def rebuild(self, calls: list[GoldenCall]) -> None:
        """Back to S0, then replay ``calls``: forgets failed tries that consumed action indices."""
        self._open()
        for call in calls:
            self.call(call.env, call.tool, call.args)

    def states(self) -> dict[str, dict[str, Any]]:
        return {env: s.state() for env, s in self.sessions.items()}

    def snapshot_files(self) -> dict[str, str]:
        return Workspace(self.workdir).snapshot() if self.workdir is not None else dict(self.files)

    def close(self) -> None:
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LiveSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_chain(
    chain: list[Step],
    packages: Mapping[str, EnvPackage],
    graphs: Mapping[str, ToolGraph],
    initial: Mapping[str, dict[str, Any]],
    files: Mapping[str, str],
    rng: random.Random,
    coverage: Coverage | None = None,
    p_error: float = 0.1,
    experience: Experience | None = None,
) -> GoldenRun | None:
    """Execute ``chain`` live, choosing arguments; None if fewer than two calls succeed or
    nothing changes (no verifier could tell a do-nothing run from this one)."""
    indexes = {env: StateIndex.build(dict(state), dict(files)) for env, state in initial.items()}
    experience = experience if experience is not None else Experience()
    calls: list[GoldenCall] = []
    known: set[Any] = set()
    with LiveSessions(packages, initial, files) as live:
        for step in chain:
            node = graphs[step.env].nodes[step.tool]
            index = indexes[step.env]
            succeeded = False
            retry = Retry()
            for attempt in range(MAX_TRIES):
                proposal = propose(node, calls, index, known, rng, experience, retry)
                if proposal is None:
                    break
                args, provenance, hints = proposal
                if node.read_only and any(
                    c.ok and (c.env, c.tool, c.args) == (step.env, step.tool, args) for c in calls
                ):
                    continue  # the same lookup again tells the agent nothing new
                result = live.call(step.env, step.tool, args)
                call = GoldenCall(step.env, step.tool, args, provenance, result, hints)
                experience.observe(node, args, index, call.ok)
                if coverage is not None:
                    for source in _sources(call, calls):
                        coverage.feed(step.env, source, step.tool, call.ok)
                if not call.ok:
                    retry.learn(node, call, rng)
                if call.ok:
                    calls.append(call)
                    succeeded = True
                    break
                category = result["error"].get("category")
                planned = any(c.expected_error for c in calls)
                if attempt == 0 and not planned and category in RECOVERABLE and rng.random() < p_error:
                    call.expected_error = str(category)
                    calls.append(call)
                    continue
                live.rebuild(calls)
            if coverage is not None:
                coverage.record(step, succeeded)
            if not succeeded and calls and calls[-1].expected_error:
                calls.pop()
                live.rebuild(calls)
            if succeeded:
                known |= {v for c in calls[-1:] for k, v in _user_args(c)}
        run = GoldenRun(
            calls, {k: dict(v) for k, v in initial.items()}, dict(files), live.states(), live.snapshot_files()
        )
    if coverage is not None:
        coverage.observe([Step(c.env, c.tool) for c in calls if c.ok], graphs)
    if sum(c.ok for c in calls) < 2 or not run.changed:
        return None
    return run


def replay(
    calls: list[GoldenCall],
    packages: Mapping[str, EnvPackage],
    initial: Mapping[str, dict[str, Any]],
    files: Mapping[str, str],
) -> GoldenRun | None:
    """Run the same calls on another S0 (with distractors); None if any call's outcome
    changes or a derived argument can no longer be found and described in its source."""
    replayed: list[GoldenCall] = []
    with LiveSessions(packages, initial, files) as live:
        for call in calls:
            result = live.call(call.env, call.tool, call.args)
            again = GoldenCall(call.env, call.tool, call.args, {}, result, {}, call.expected_error)
            if again.ok != call.ok:
                return None
            for name, label in call.provenance.items():
                if label == "user":
                    again.provenance[name] = "user"
                    continue
                source = int(label.split(":", 1)[1].split(".", 1)[0])
                found = find_value(
                    replayed[source].result, source, call.args[name], set(_derived_values(calls))
                )
                if found is None:
                    return None
                again.provenance[name], hint = found
                if hint is not None:
                    again.hints[name] = hint
            replayed.append(again)
        return GoldenRun(
            replayed,
            {k: dict(v) for k, v in initial.items()},
            dict(files),
            live.states(),
            live.snapshot_files(),
        )


# -- argument choice ----------------------------------------------------------------------------
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
        for param, value in args.items():
            plain = _hashable(value) and not (isinstance(value, str) and value in index.records)
            if ok and plain and id_kind(param) is None:
                bucket = self.good.setdefault((node.env, node.name, param), [])
                if value not in bucket:
                    bucket.append(value)
            for v in _scalars(value):
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
        for v in _scalars(value):
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
        self.suggested = {}
        if isinstance(blamed_field, str) and blamed_field in node.params and blamed_field not in args:
            self.include.add(blamed_field)
        self.keep = {}
        for param, value in args.items():
            if param != blamed_field and not any(v in echoed for v in _scalars(value) if _hashable(v)):
                self.keep[param] = (value, call.provenance[param], call.hints.get(param))
                continue
            self.avoid |= {(param, v) for v in _scalars(value) if _hashable(v)}
            offered = _offered(param, value, details)
            if offered:
                self.suggested[param] = rng.choice(offered)


def _offered(param: str, value: Any, details: dict[str, Any]) -> list[Any]:
    kind = json_type(value)
    listed = [
        x
        for k, v in sorted(details.items())
        if isinstance(v, list) and k != param
        for x in v
        if json_type(x) == kind and x != value
    ]
    if listed or kind != "integer":
        return listed
    limits = [
        v for k, v in details.items() if json_type(v) == "integer" and v >= 1 and v != value and k != param
    ]
    return [min(limits)] if limits else []


def _rank(
    options: list[tuple[Any, Any]],
    node: ToolNode,
    param: str,
    index: StateIndex,
    experience: Experience,
    near: set[str],
    rng: random.Random,
) -> list[tuple[Any, Any]]:
    """Order candidates ``(value, payload)``: likely to succeed (experience), then coherent with
    the chain's entities (``near``), with a little noise so equal candidates vary."""

    def key(option: tuple[Any, Any]) -> float:
        value = option[0]
        close = any(index.owners.get(v, set()) & near for v in _scalars(value) if _hashable(v))
        return -(experience.score(node, param, value, index) + (0.7 if close else 0.0) + rng.uniform(0, 0.4))

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
) -> tuple[dict[str, Any], dict[str, str], dict[str, Hint]] | None:
    """One choice of arguments for ``node`` given the calls so far; None if a required
    parameter has no candidate at all."""
    experience = experience if experience is not None else Experience()
    retry = retry if retry is not None else Retry()
    args: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    hints: dict[str, Hint] = {}
    near = _chain_owners(calls, index)
    derived_so_far = set(_derived_values(calls))
    for param, prop in node.params.items():
        required = param in node.required

        def allowed(value: Any, param: str = param) -> bool:
            return not any((param, v) in retry.avoid for v in _scalars(value) if _hashable(v))

        fed = [
            f
            for f in _fed(param, prop, calls, derived_so_far)
            if allowed(f[1]) and (id_kind(param) is not None or not _in_s0(f[1], index))
        ]
        if not required and param not in retry.include and rng.random() < (0.3 if fed else 0.7):
            continue
        if fed and rng.random() < 0.9:
            recent = max(c for c, _, _, _ in fed)
            options = [(v, (lb, h)) for c, v, lb, h in fed if c == recent]
            value, (label, hint) = _rank(options, node, param, index, experience, near, rng)[0]
        elif param in retry.suggested:
            value, label, hint = retry.suggested[param], "user", None
        elif param in retry.keep and rng.random() < 0.75:
            value, label, hint = retry.keep[param]
        else:
            found = [v for v in user_values(param, prop, index, rng, limit=12, near=near) if allowed(v)]
            found = experience.good_first(node, param, found, rng)
            ranked = [
                v for v, _ in _rank([(v, None) for v in found], node, param, index, experience, near, rng)
            ]
            picked = _pick_user(ranked, calls, derived_so_far)
            if picked is None:
                if required:
                    return None
                continue
            value, label, hint = picked
        if not required and value == prop.get("default"):
            continue
        if label != "user" and all(v in known for v in _scalars(value)):
            label, hint = "user", None
        args[param] = value
        provenance[param] = label
        if hint is not None:
            hints[param] = hint
        if label == "user":
            near |= {o for v in _scalars(value) for o in index.owners.get(v, set())}
    return args, provenance, hints


def _sources(call: GoldenCall, calls: list[GoldenCall]) -> list[str]:
    """Tools of the same environment whose outputs fed this call's derived arguments."""
    found = []
    for label in call.provenance.values():
        if label.startswith("derived:"):
            source = calls[int(label.split(":", 1)[1].split(".", 1)[0])]
            if source.env == call.env:
                found.append(source.tool)
    return found


def _in_s0(value: Any, index: StateIndex) -> bool:
    """A plain value (a name, a date) the user could read in S0: stated, not derived."""
    return all(v in index.owners or v in index.files for v in _scalars(value) if _hashable(v))


def _pick_user(
    options: list[Any], calls: list[GoldenCall], derived: set[Any]
) -> tuple[Any, str, Hint | None] | None:
    """The first option the user may state; a value the chain already derived stays derived
    (stating it now would leak it), so it must be found and described in an earlier output."""
    for value in options:
        if not any(v in derived for v in _scalars(value)):
            return value, "user", None
        for i in range(len(calls) - 1, -1, -1):
            if calls[i].ok and (found := find_value(calls[i].result, i, value, derived)) is not None:
                return value, found[0], found[1]
    return None


def _fed(
    param: str, prop: dict[str, Any], calls: list[GoldenCall], derived: set[Any]
) -> list[tuple[int, Any, str, Hint | None]]:
    """Values earlier outputs offer for ``param`` that the user could be told how to find."""
    found: list[tuple[int, Any, str, Hint | None]] = []
    for i, call in enumerate(calls):
        if not call.ok:
            continue
        for path, shape, value, kind in call.leaves:
            if not param_matches(param, prop, shape, kind):
                continue
            hint = describe(call.result, path, i, derived | {value})
            if hint is None:
                continue
            wrapped = [value] if prop.get("type") == "array" else value
            found.append((i, wrapped, f"derived:{i}.{path}", hint))
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
                return f"derived:{call}.{path}", hint
    return None


def _derived_values(calls: list[GoldenCall]) -> list[Any]:
    return [
        v for c in calls for k, label in c.provenance.items() if label != "user" for v in _scalars(c.args[k])
    ]


def _user_args(call: GoldenCall) -> list[tuple[str, Any]]:
    return [(k, v) for k, label in call.provenance.items() if label == "user" for v in _scalars(call.args[k])]


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [value] if isinstance(value, str | int | float | bool) else []


def _chain_owners(calls: list[GoldenCall], index: StateIndex) -> set[str]:
    """Entities the chain already involves: later user choices prefer them (a coherent story)."""
    owners: set[str] = set()
    for call in calls:
        for value in _scalars(call.args):
            owners |= index.owners.get(value, set())
    return owners


def _collections(state: dict[str, Any]) -> set[str]:
    return {
        k
        for k, v in state.items()
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values())
    }


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(key: str) -> str:
    return key.replace("~1", "/").replace("~0", "~")
