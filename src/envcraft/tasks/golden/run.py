"""The golden run: a walk executed for real, with the provenance of every argument.

Each chain runs in fresh in-memory sessions from S0 (one per environment; the task's Claw
environments share one workspace directory). For every parameter we choose a value and say
where it comes from:

* ``user`` — something the user can say: an entity from S0 (ids, names, emails), an enum
  or boolean from the schema, or plausible free text;
* ``derived:<call>.<path>`` — read from an earlier call's output. When the value sits in a
  list of records, the pick is *described* by a field that tells it apart from its siblings
  (the order whose ``placed_at`` is ...), so the user text can determine it without naming it.

(How values are chosen is :mod:`envcraft.tasks.golden.choose`; this module executes.)

A call that fails is retried with other choices a bounded number of times and then dropped;
with a small probability a business-rule failure is kept as a planned error-recovery step
(``expected_error``) followed by the successful retry. A failed call consumes an action
index (the clock moves), so the accepted calls are replayed once from S0 at the end: that
replay is the golden run, and the reference replays to its final state.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from envcraft.core.errors import ErrorCategory
from envcraft.core.package import EnvPackage
from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.session import Session
from envcraft.core.state import diff
from envcraft.tasks.format.model import GoldenCall, Source
from envcraft.tasks.golden.choose import (
    COHESION,
    Experience,
    Retry,
    carried_values,
    derived_values,
    find_value,
    propose,
    scalars,
)
from envcraft.tasks.graphs.graph import ToolGraph, ToolNode
from envcraft.tasks.graphs.walk import Coverage, Step
from envcraft.tasks.phrasing.phrasebook import humanize, is_time
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.play.outcome import Action, Outcome, TurnSnapshot
from envcraft.tasks.values.args import StateIndex, flatten, id_kind, value_at

FREE_TEXT = re.compile(r"(^|_)(note|notes|message|text|body|comment|memo|summary|description|title)$")

MAX_TRIES = 8
RECOVERABLE = frozenset(
    {ErrorCategory.INVALID_TRANSITION, ErrorCategory.CONFLICT, ErrorCategory.PERMISSION_DENIED}
)


@dataclass
class GoldenRun:
    """A chain as it ran: its calls, S0, and every state and the workspace after each call."""

    calls: list[GoldenCall]
    initial: dict[str, dict[str, Any]]
    files: dict[str, str]
    steps: list[TurnSnapshot]  # after call i: every environment's state and the workspace
    # changes(i) once per call: coherence, intents, verifier synthesis and difficulty all ask
    _changes: dict[int, list[tuple[str, dict[str, Any]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def final(self) -> dict[str, dict[str, Any]]:
        return self.steps[-1].final if self.steps else self.initial

    @property
    def final_files(self) -> dict[str, str]:
        return self.steps[-1].files if self.steps else self.files

    @property
    def changed(self) -> bool:
        return self.initial != self.final or self.files != self.final_files

    def after(self, i: int) -> dict[str, dict[str, Any]]:
        return self.steps[i].final

    def before(self, i: int) -> TurnSnapshot:
        return self.steps[i - 1] if i > 0 else TurnSnapshot(self.initial, self.files)

    def changes(self, i: int) -> list[tuple[str, dict[str, Any]]]:
        """``(env, diff entry)`` for what call ``i`` changed in the states (a fresh list; the
        entries are shared between callers, do not change them)."""
        if i not in self._changes:
            before = self.before(i).final
            env = self.calls[i].env
            self._changes[i] = [(env, c) for c in diff(before[env], self.steps[i].final[env])]
        return list(self._changes[i])

    def touched_files(self, i: int) -> list[str]:
        """Workspace paths call ``i`` wrote, created or deleted."""
        before, after = self.before(i).files, self.steps[i].files
        return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))

    def changed_by(self, i: int) -> bool:
        return bool(self.changes(i) or self.touched_files(i))

    @cached_property
    def targets(self) -> list[dict[str, str]]:
        """Entities of S0 the chain touched: changed by it, or named in its arguments."""
        found: dict[tuple[str, str], None] = {}
        for env, before in self.initial.items():
            collections = _collections(before)
            for change in diff(before, self.final.get(env, {})):
                parts = change["path"].lstrip("/").split("/")
                keys = [unescape_token(p) for p in parts[:2]]
                if len(keys) == 2 and keys[0] in collections and keys[1] in before[keys[0]]:
                    found[(env, f"/{parts[0]}/{parts[1]}")] = None
            for call in self.calls:
                if call.env != env:
                    continue
                for value in scalars(call.args):
                    for name in collections:
                        if isinstance(value, str) and value in before[name]:
                            found[(env, f"/{escape_token(name)}/{escape_token(value)}")] = None
        return [{"env": env, "path": path} for env, path in found]


class LiveSessions:
    """The task's sessions (one per environment, one shared workspace) at the accepted prefix.

    They are opened as an :class:`~envcraft.tasks.play.episode.Episode` opens a task's sessions
    (from the pool, the Claw environments sharing one workspace with the task's files): the
    golden run plays on the very sessions every other door plays on. Calls go to the sessions
    directly (a golden run keeps its own record of them), and :meth:`snapshot` keeps what no
    call since the previous snapshot could have changed.
    """

    def __init__(
        self,
        packages: Mapping[str, EnvPackage],
        initial: Mapping[str, dict[str, Any]],
        files: Mapping[str, str],
    ) -> None:
        self.packages = dict(packages)
        self.episode = Episode(self.packages, initial, files)
        self.sessions: dict[str, Session] = self.episode.sessions
        self._last: TurnSnapshot | None = None  # the previous snapshot, and who was called since
        self._called: set[str] = set()

    def call(self, env: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        self._called.add(env)
        return self.sessions[env].call(tool, args)

    def states(self) -> dict[str, dict[str, Any]]:
        return {env: s.state() for env, s in self.sessions.items()}

    def snapshot(self) -> TurnSnapshot:
        """Every state and the workspace now. A tool environment not called since the previous
        snapshot keeps its state (its dynamics apply at its next call), and without a call to a
        Claw environment the workspace stays as it was: those parts are the previous snapshot's."""
        last, called = self._last, self._called
        claw = {env for env, p in self.packages.items() if p.kind == "claw"}
        if last is None:
            snapshot = TurnSnapshot(self.states(), self.snapshot_files())
        else:
            snapshot = TurnSnapshot(
                {
                    env: s.state() if env in called or env in claw else last.final[env]
                    for env, s in self.sessions.items()
                },
                self.snapshot_files() if called & claw else last.files,
            )
        self._last, self._called = snapshot, set()
        return snapshot

    def snapshot_files(self) -> dict[str, str]:
        return self.episode.files()

    def close(self) -> None:
        self.episode.close()
        self.sessions = {}

    def __enter__(self) -> LiveSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def state_indexes(initial: Mapping[str, dict[str, Any]], files: Mapping[str, str]) -> dict[str, StateIndex]:
    """Per environment, the values a user could name in S0 (what the chooser draws from)."""
    return {env: StateIndex.build(dict(state), dict(files)) for env, state in initial.items()}


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
    cohesion: float = COHESION,
    prefix: Sequence[GoldenCall] = (),
    indexes: Mapping[str, StateIndex] | None = None,
    examples: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> GoldenRun | None:
    """Execute ``chain`` live, choosing arguments (``cohesion``: how strongly the records the
    chain already involves are preferred); None if no call succeeds or nothing changes (no
    verifier could tell a do-nothing run from this one).

    ``prefix``: calls of a job already made, run first as they are, so the chain continues that
    job (a follow-up on the records it touched) instead of starting from S0; None if any of them
    comes out otherwise than before.

    In a chain that crosses environments, the first call after the crossing that takes free
    text carries a value from the other environment's results (:func:`handoff`), unless an
    argument already flows across.

    ``indexes``: :func:`state_indexes` of ``initial`` and ``files``, where the caller runs more
    chains on the same S0 (a job grown by follow-ups): building them is a good part of a run.
    ``examples``: per tool, what the user says for its free-text parameters in the declared job
    the chain walks (:meth:`envcraft.core.phrasing.Job.examples_for`).
    """
    indexes = indexes if indexes is not None else state_indexes(initial, files)
    experience = experience if experience is not None else Experience()
    calls: list[GoldenCall] = []
    known: set[Any] = set()
    with LiveSessions(packages, initial, files) as live:
        for done in prefix:
            again = GoldenCall(
                done.env,
                done.tool,
                done.args,
                dict(done.provenance),
                live.call(done.env, done.tool, done.args),
                dict(done.hints),
                done.expected_error,
            )
            if again.ok != done.ok:
                return None
            calls.append(again)
            known |= {v for k, v in _user_args(again)}
        for step in chain:
            node = graphs[step.env].nodes[step.tool]
            index = indexes[step.env]
            succeeded = False
            retry = Retry()
            refused: list[dict[str, Any]] = []  # this step's arguments the world refused
            words = (examples or {}).get(step.tool)
            # a declared job's step that changes things must change something: a replay "from"
            # the offset the partition is at moves nothing, and the job is then not carried out
            job_act = examples is not None and not node.read_only
            for attempt in range(MAX_TRIES):
                carried = carried_values(calls, node) if examples is not None else None
                proposal = propose(
                    node, calls, index, known, rng, experience, retry, cohesion, words, carried
                )
                if proposal is None:
                    break
                args, provenance, hints = proposal
                if node.read_only and any(
                    c.ok and (c.env, c.tool, c.args) == (step.env, step.tool, args) for c in calls
                ):
                    continue  # the same lookup again tells the agent nothing new
                if args in refused:
                    continue  # refused once, refused again (and the clock would move for nothing)
                if not crosses(calls, step.env, provenance):
                    handoff(node, calls, args, provenance, rng)
                session = live.sessions[step.env]
                before = session.state() if not node.read_only else {}
                workspace = live.snapshot_files() if job_act and packages[step.env].kind == "claw" else None
                result = live.call(step.env, step.tool, args)
                call = GoldenCall(step.env, step.tool, args, provenance, result, hints)
                after = session.state() if call.ok and before else {}
                held = restated(call, before, after) if after else []
                if held:  # the record already held what was asked: no request; ask for another value
                    retry.avoid |= set(held)
                    continue
                unmoved = job_act and after and not _acted(call, before, after)
                if unmoved and (workspace is None or workspace == live.snapshot_files()):
                    refused.append(args)  # an option it left out may be what makes it act
                    retry.include |= set(node.params) - set(args)
                    continue
                experience.observe(node, args, index, call.ok)
                if coverage is not None:
                    for source in _sources(call, calls):
                        coverage.feed(step.env, source, step.tool, call.ok)
                if not call.ok:
                    retry.learn(node, call, rng)
                    refused.append(args)
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
            if coverage is not None:
                coverage.record(step, succeeded)
            if not succeeded and calls and calls[-1].expected_error:
                calls.pop()
            if succeeded:
                known |= {v for c in calls[-1:] for k, v in _user_args(c)}
    if coverage is not None:
        coverage.observe([Step(c.env, c.tool) for c in calls if c.ok], graphs)
    if not any(c.ok for c in calls):
        return None
    # The failed tries above consumed action indices (the clock moved): the reference is the
    # accepted calls alone, replayed from S0.
    run = replay(calls, packages, initial, files)
    if run is None or not run.changed:
        return None
    return run


def passed_texts(call: GoldenCall) -> set[str]:
    """The texts a call was given: a time among them is what it was asked to set."""
    return {v for v in scalars(call.args) if isinstance(v, str)}


def bookkeeping(change: Mapping[str, Any], passed: set[str]) -> bool:
    """A change no one asks for: a top-level counter (next_id, waves), or a timestamp the call
    was not given (a pickup moved to 15:35 is what the call was asked to do)."""
    if change["path"].count("/") == 1 and isinstance(change.get("after"), int):
        return True
    stamped = is_time(change.get("after")) or is_time(change.get("before"))
    return stamped and change.get("after") not in passed


def _acted(call: GoldenCall, before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    passed = passed_texts(call)
    return any(not bookkeeping(change, passed) for change in diff(dict(before), dict(after)))


def restated(call: GoldenCall, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The ``(parameter, value)`` pairs of a user's value that the record the call names held
    already, in the field of the parameter's name, and still holds: a pickup "moved" to the time
    it has. Such a step changes nothing it was asked to (what else moved is the clock's doing:
    events that fall due on any call), so it is no request a user makes."""
    args = call.args if isinstance(call.args, dict) else {}
    named = {v for v in args.values() if isinstance(v, str)} & {
        k for records in before.values() if isinstance(records, dict) for k in records
    }
    held = []
    for param, value in args.items():
        if call.provenance.get(param) != "user" or isinstance(value, dict | list) or value in named:
            continue  # the record's own id names it: it says nothing about what to set
        for name, records in before.items():
            if not isinstance(records, dict):
                continue
            for key in named & set(records):
                old, new = records[key], (after.get(name) or {}).get(key)
                if (
                    isinstance(old, dict)
                    and isinstance(new, dict)
                    and old.get(param) == value == new.get(param)
                ):
                    held.append((param, value))
    return held


def replay(
    calls: list[GoldenCall],
    packages: Mapping[str, EnvPackage],
    initial: Mapping[str, dict[str, Any]],
    files: Mapping[str, str],
) -> GoldenRun | None:
    """Run the same calls on another S0 (with distractors) or after others were left out; None
    if any call's outcome changes or a value taken from a result is no longer found there."""
    replayed: list[GoldenCall] = []
    steps: list[TurnSnapshot] = []
    hidden = set(derived_values(calls))
    with LiveSessions(packages, initial, files) as live:
        start = live.states()  # S0 as the sessions hold it (defaults filled in)
        for call in calls:
            result = live.call(call.env, call.tool, call.args)
            again = GoldenCall(call.env, call.tool, call.args, {}, result, {}, call.expected_error)
            if again.ok != call.ok:
                return None
            for name, label in call.provenance.items():
                source = Source.parse(label)
                if not source.from_call or source.call is None:
                    again.provenance[name] = label
                    continue
                if source.kind == "embed":
                    value = value_at(replayed[source.call].result, source.path or "")
                    if type(value) not in (str, int) or str(value) not in str(call.args[name]):
                        return None  # a text or a whole number the file gives (an offset after a batch)
                    again.provenance[name] = label
                    continue
                if source.kind == "cited":
                    text = value_at(replayed[source.call].result, source.path or "")
                    if not isinstance(text, str) or str(call.args[name]) not in text:
                        return None
                    again.provenance[name] = label
                    continue
                found = find_value(replayed[source.call].result, source.call, call.args[name], hidden)
                if found is None:
                    return None
                again.provenance[name], hint = found
                if hint is not None:
                    again.hints[name] = hint
            replayed.append(again)
            steps.append(live.snapshot())
        return GoldenRun(replayed, start, dict(files), steps)


def outcome_of(run: GoldenRun, turns: list[list[int]], packages: Mapping[str, EnvPackage]) -> Outcome:
    """The golden run as the :class:`Outcome` an Episode of the task's reference produces."""
    turn_of = {i: t for t, indices in enumerate(turns) for i in indices}
    snapshots = [run.steps[indices[-1]] if indices else run.before(0) for indices in turns]
    return Outcome(
        initial=run.initial,
        final=run.final,
        initial_files=run.files,
        files=run.final_files,
        turns=snapshots,
        actions=[
            Action(turn_of[i], c.env, c.tool, c.args, c.result, dict(c.provenance))
            for i, c in enumerate(run.calls)
        ],
        packages={env: str(p.root) for env, p in packages.items()},
    )


def keep_calls(run: GoldenRun, keep: list[int], packages: Mapping[str, EnvPackage]) -> GoldenRun | None:
    """The run with only the calls ``keep`` (in order), replayed from S0; provenance renumbered.

    None when a kept call depends on a dropped one or an outcome changes without them."""
    new_index = {old: new for new, old in enumerate(keep)}
    calls = []
    for old in keep:
        call = run.calls[old]
        provenance = {}
        for name, label in call.provenance.items():
            source = Source.parse(label)
            if source.from_call and source.call is not None:
                if source.call not in new_index:
                    return None
                label = str(Source(source.kind, new_index[source.call], source.path))
            provenance[name] = label
        calls.append(
            GoldenCall(
                call.env, call.tool, call.args, provenance, call.result, call.hints, call.expected_error
            )
        )
    return replay(calls, packages, run.initial, run.files)


def crosses(calls: list[GoldenCall], env: str, provenance: Mapping[str, str] | None = None) -> bool:
    """Whether a value already flows into ``env`` from another environment's results (or the
    chain has not left its first environment, so nothing needs to flow)."""
    if not calls or all(c.env == env for c in calls):
        return True
    labels = [*(provenance or {}).values()]
    labels += [label for c in calls if c.env == env for label in c.provenance.values()]
    for label in labels:
        source = Source.parse(label)
        if source.from_call and source.call is not None and calls[source.call].env != env:
            return True
    return False


def flows_across(calls: list[GoldenCall]) -> bool:
    """Whether some call takes a value from the result of a call in another environment."""
    for call in calls:
        for arg in call.args:
            source = call.source(arg)
            if source.from_call and source.call is not None and calls[source.call].env != call.env:
                return True
    return False


def handoff(
    node: ToolNode,
    calls: list[GoldenCall],
    args: dict[str, Any],
    provenance: dict[str, str],
    rng: random.Random,
) -> None:
    """Carry an id from another environment's results into a free-text argument of this call
    ("RF-00005: refund issued, please confirm"), labelled ``embed:<call>.<path>``."""
    texts = [
        p
        for p, prop in node.params.items()
        if prop.get("type") == "string" and "enum" not in prop and FREE_TEXT.search(p) and p in args
    ]
    if not texts:
        return
    for i in range(len(calls) - 1, -1, -1):
        source = calls[i]
        if source.env == node.env or not source.ok:
            continue
        ids = [
            (path, v)
            for path, v in flatten(source.result)
            if isinstance(v, str)
            and id_kind(path.rsplit(".", 1)[-1])
            and len(v) >= 4
            and path.count(".") <= 1
        ]
        if not ids:
            continue
        path, value = ids[0]
        param = rng.choice(texts)
        if value in str(args[param]):
            return
        label = humanize(id_kind(path.rsplit(".", 1)[-1]) or "reference").capitalize()
        args[param] = f"{label} {value}: {args[param]}"
        provenance[param] = f"embed:{i}.{path}"
        return


def _sources(call: GoldenCall, calls: list[GoldenCall]) -> list[str]:
    """Tools of the same environment whose outputs fed this call's derived arguments."""
    found = []
    for label in call.provenance.values():
        source = Source.parse(label)
        if source.from_call and source.call is not None and calls[source.call].env == call.env:
            found.append(calls[source.call].tool)
    return found


def _user_args(call: GoldenCall) -> list[tuple[str, Any]]:
    return [(k, v) for k in call.provenance if call.source(k).kind == "user" for v in scalars(call.args[k])]


def _collections(state: dict[str, Any]) -> set[str]:
    return {
        k
        for k, v in state.items()
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values())
    }
