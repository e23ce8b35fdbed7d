"""Synthesize a task's verifier: what the user asked for, and what a user would object to.

**Goals** come from what the golden run did to the records the chain acts on: every change
to a record a call names or creates, with the value asked for; every workspace file it
writes, moves or deletes; a file the user asked for, parsed (JSON keys, CSV rows, Markdown
sections). A goal must change relative to S0, so a do-nothing run fails every one.

**Guards** protect what the user did not ask to change: every other record of every
collection (distractors named separately), the fields of an edited record the task did not
set, no extra records where the task creates a given number, the changes a requested step
makes elsewhere (a consequence must come out as the golden run's), and every S0 file the
task never touches. Fields a user leaves free (declared ``free``: notes, comments), log
collections (``log``: health checks), top-level counters and timestamps are never pinned.

**What moves by itself is never the agent's doing.** The golden run is replayed with failed
calls before every call (``shifted_runs``: the clock moves between steps), followed by idle
time (``tail_runs``), and S0 is left alone as long (``clock_run``). A value that differs
between these correct runs is accepted in any of the forms they show (a timestamp as any
string, a status as any of the states seen); a path that only the world's own dynamics
change is neither a goal nor guarded. Finally every check must pass on each of those runs,
so extra harmless calls or the clock drift they cause never cost a correct run.

**What the user said weighs more than what follows from it** (:func:`weigh`). On one record,
each goal on a value the user gave (an argument's value, dictated text) counts 1, and the
changes that follow from the act (a status, ten jobs a cancel stops) count 1 together: a cancel
with the wrong reason is half the record's work, not 1 of 11 goals (0.909 was a signal an RL
learner barely sees).

The goals are :mod:`envcraft.tasks.verifier.goals`, the guards :mod:`envcraft.tasks.verifier.guards`,
the world of correct runs and the shared helpers :mod:`envcraft.tasks.verifier.checks`.
The verifier is the :mod:`envcraft.tasks.verifier.runtime` source with its ``CHECKS``
(exactly the :class:`Verifier`'s ``checks``) appended: readable, stdlib-only, run isolated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from envcraft.core.state import diff
from envcraft.tasks.format.model import Verifier
from envcraft.tasks.play.outcome import Outcome
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import FileRequest, World, record_path, scalars
from envcraft.tasks.verifier.goals import GoalChecks, dictated
from envcraft.tasks.verifier.guards import GuardChecks
from envcraft.tasks.verifier.scoring import build_context
from envcraft.tasks.verifier.source import render


def synthesize_verifier(
    initial: Mapping[str, Mapping[str, Any]],
    initial_files: Mapping[str, str],
    golden: Outcome,
    protected: Sequence[Mapping[str, str]] = (),
    turn_checks: bool = True,
    requests: Sequence[FileRequest] = (),
    said: Sequence[str] = (),
) -> Verifier | None:
    """The verifier for a golden run, or None when nothing it did can be asked for.

    ``initial``/``initial_files`` are the task's S0 as stored (the golden outcome's S0 is the
    same up to defaults the sessions fill in); ``protected`` lists distractor records
    ``{"env", "path"}``; ``requests`` the files the user asked for by content; ``said`` the text
    of the user's turns (words a report or a note may restate).
    """
    _check_same_start(initial, initial_files, golden)
    world = World.of(golden, said)
    builder = _Builder(golden, world)
    builder.goals(None)
    if turn_checks:
        for turn in range(len(golden.turns) - 1):
            builder.goals(turn)
    builder.file_goals(requests)
    if not any(c["role"] == "goal" for c in builder.checks):
        return None
    builder.guards(protected, turn_checks)
    checks = robust(builder.checks, world.variants)
    if not any(c["role"] == "goal" for c in checks):
        return None  # everything the run did is undone or redone by the passing of time
    weigh(checks, golden)
    return Verifier(source=render(checks), checks=checks)


def weigh(checks: list[dict[str, Any]], golden: Outcome) -> None:
    """Set each goal's weight (the module docstring): per record and turn window, each value the
    user gave counts 1 (however many fields the world copies it to: a cancel's reason in every
    stopped job's note) and the goals of what follows from the act 1 together. Goals on files and
    on created records count 1 each. A run's pass or fail is the same under any weights; only a
    partly right run's score moves."""
    given = {
        v
        for action in golden.actions
        for v in scalars(action.args)
        if isinstance(v, str | int | float) and not isinstance(v, bool) and v != ""
    }
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for check in checks:
        if check["role"] != "goal" or check["kind"] not in ("value", "matches", "absent"):
            continue
        record = record_path(check["path"])
        if record is not None:
            value = _given(check.get("expected"), given)
            groups.setdefault((check.get("turn"), check["env"], record, value), []).append(check)
    for group in groups.values():
        for check in group:
            check["weight"] = 1.0 / len(group)


def _given(expected: Any, given: set[Any]) -> str:
    """What of the user's a goal asks for: its dictated words, the argument values it holds, or
    nothing ("": a consequence of the act)."""
    if dictated(expected):
        while isinstance(expected, dict) and "$framed" in expected:
            expected = expected["$framed"][1]
        return "said " + json.dumps(expected, sort_keys=True)
    return "|".join(sorted({repr(v) for v in scalars(expected) if not isinstance(v, bool) and v in given}))


def robust(checks: list[dict[str, Any]], runs: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The checks every correct variant run passes (one that fails pins what the clock decides).
    An on-time guard leaves whether the work is right to the goal at the end on the same
    subject; where that goal is gone, the guard judges the work at its turn's end itself where
    every correct variant passes that (a draft's body checked by no one: a reply saying the
    opposite of the dictated text paid 1.0; round 67, R4), and else stays what it was: that the
    work was done then and the end still shows it (a file the clock rewrites, deleted, fails)."""
    contexts = [build_context(run) for run in runs]

    def passes(check: dict[str, Any], ctx: dict[str, Any]) -> bool:
        try:
            return vr.run_check(ctx, check) >= 1.0
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            return False

    kept = [c for c in checks if all(passes(c, ctx) for ctx in contexts)]
    ends = [c for c in kept if c["role"] == "goal" and "turn" not in c]
    found: list[dict[str, Any]] = []
    for check in kept:
        if check.get("on_time") and not any(_covers(end, check) for end in ends):
            strict = {k: v for k, v in check.items() if k != "on_time"}
            if all(passes(strict, ctx) for ctx in contexts):
                check = strict
        found.append(check)
    return found


def _covers(goal: dict[str, Any], guard: dict[str, Any]) -> bool:
    """Whether a goal at the end judges what an on-time guard's turn did: the same file, or the
    same record or one holding it (a message's new records at the end hold a sent draft's
    recipients, which its turn set)."""
    if (goal["kind"] == "file") != (guard["kind"] == "file") or goal.get("env") != guard.get("env"):
        return False
    path, within = guard.get("path", ""), goal.get("path", "")
    return path == within or (goal["kind"] != "file" and path.startswith(within.rstrip("/") + "/"))


class _Builder(GoalChecks, GuardChecks):
    """One verifier's checks: goals first, then guards."""


def _check_same_start(
    initial: Mapping[str, Mapping[str, Any]], initial_files: Mapping[str, str], golden: Outcome
) -> None:
    """The golden run must start from this S0 (up to defaults the sessions fill in)."""
    if set(initial) != set(golden.initial):
        raise ValueError(f"golden run covers {sorted(golden.initial)}, S0 has {sorted(initial)}")
    for env, state in initial.items():
        if any(c["op"] != "added" for c in diff(dict(state), golden.initial[env])):
            raise ValueError(f"golden run of '{env}' did not start from this S0")
    if dict(initial_files) != golden.initial_files:
        raise ValueError("golden run did not start from this workspace")
