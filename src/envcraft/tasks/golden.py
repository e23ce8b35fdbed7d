"""The golden run: a walk executed for real, with the provenance of every argument.

Each chain runs in fresh in-memory sessions from S0 (one per environment; the task's Claw
environments share one workspace directory). For every parameter we choose a value and say
where it comes from:

* ``user`` — something the user can say: an entity from S0 (ids, names, emails), an enum
  or boolean from the schema, or plausible free text;
* ``derived:<call>.<path>`` — read from an earlier call's output. When the value sits in a
  list of records, the pick is *described* by a field that tells it apart from its siblings
  (the order whose ``placed_at`` is ...), so the user text can determine it without naming it.

(How values are chosen is :mod:`envcraft.tasks.choose`; this module executes.)

A call that fails is retried with other choices a bounded number of times and then dropped;
with a small probability a business-rule failure is kept as a planned error-recovery step
(``expected_error``) followed by the successful retry. A failed call consumes an action
index (the clock moves), so dropping one rebuilds the sessions from S0 and replays the
accepted prefix: the reference then replays to the same final state.
"""

from __future__ import annotations

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
    json_type,
    schema_path,
)
from envcraft.tasks.choose import Experience, Hint, Retry, derived_values, find_value, propose, scalars
from envcraft.tasks.episode import SCRATCH
from envcraft.tasks.graph import ToolGraph
from envcraft.tasks.walk import Coverage, Step

MAX_TRIES = 8
RECOVERABLE = frozenset(
    {ErrorCategory.INVALID_TRANSITION, ErrorCategory.CONFLICT, ErrorCategory.PERMISSION_DENIED}
)


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
                for value in scalars(call.args):
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
                    replayed[source].result, source, call.args[name], set(derived_values(calls))
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


def _sources(call: GoldenCall, calls: list[GoldenCall]) -> list[str]:
    """Tools of the same environment whose outputs fed this call's derived arguments."""
    found = []
    for label in call.provenance.values():
        if label.startswith("derived:"):
            source = calls[int(label.split(":", 1)[1].split(".", 1)[0])]
            if source.env == call.env:
                found.append(source.tool)
    return found


def _user_args(call: GoldenCall) -> list[tuple[str, Any]]:
    return [(k, v) for k, label in call.provenance.items() if label == "user" for v in scalars(call.args[k])]


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
