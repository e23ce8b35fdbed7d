"""Run a task's calls from its S0: golden runs, replays, agent trajectories, shifted replays.

Every run is an :class:`~envcraft.tasks.play.episode.Episode` played from a list of calls grouped
by user turn, and its result an :class:`~envcraft.tasks.play.outcome.Outcome`. Packages are found
by id among the built-in environments, or through ``task.provenance["packages"]`` (``{env id:
package directory}``) for environments that live elsewhere (test fixtures, freshly
synthesized packages).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from envcraft.core.environment import SETTLE_TOOL, Environment
from envcraft.core.errors import ErrorCategory, error_result, is_error
from envcraft.core.package import EnvPackage, PackageError, load_package
from envcraft.core.state import MISSING
from envcraft.tasks.format.model import Source, Task
from envcraft.tasks.play.episode import Episode, resolve_packages
from envcraft.tasks.play.outcome import Action, ExecutionError, Outcome, TurnSnapshot

# A tool name no environment can declare (tool names are identifiers): calling it is a
# failed call that changes nothing but still consumes an action index.
PROBE_TOOL = "__envcraft_probe__"
# Failed calls put before every golden call to find what moves with the clock: a small and
# a larger shift (an agent may well make several times the golden number of calls).
SHIFTS = (1, 3)
# Failed calls after the golden end in the tail runs: a short and a long wait.
TAILS = (6, 40)
# Failed calls that end every turn in the settled run: a look before answering.
SETTLE = 6
# Failed calls that open every turn in the late runs: an agent that looks around before it acts
# (the adversary ``slow_reads`` makes ten lookups; an agent may make many times as many).
LEADS = (12, 24, 48, 96)

Call = Mapping[str, Any]


def reference_turns(task: Task) -> list[list[dict[str, Any]]]:
    """The golden calls grouped by user turn (with their argument provenance)."""
    grouped: list[list[dict[str, Any]]] = [[] for _ in task.turns]
    for call in task.reference.calls:
        if not 0 <= call.turn < len(grouped):
            raise ExecutionError(
                f"task {task.id}: reference call in turn {call.turn}, task has {len(grouped)}"
            )
        grouped[call.turn].append(call.model_dump(include={"env", "tool", "args", "provenance"}))
    return grouped


def execute(
    task: Task,
    turns: Sequence[Sequence[Call]],
    *,
    packages: Mapping[str, EnvPackage] | None = None,
) -> Outcome:
    """Run ``turns`` (calls ``{"env", "tool", "args"}`` grouped by user turn) from the task's S0.

    A call to an unknown environment or tool, or with bad arguments, is a failed call with a
    structured error result, never an exception; calls in a turn the task does not have are
    (``ExecutionError``: a trajectory that saves its work for a turn nobody asked in is no run
    of the task). The outcome always has one snapshot per turn of the task (turns the run did
    not reach keep the last state). A call may carry its arguments' ``"provenance"`` (as
    :func:`reference_turns` gives it): the shifted replays of a golden outcome then re-read
    derived arguments of any type, not only the strings they can find by value.
    """
    late = [i for i, calls in enumerate(turns) if i >= len(task.turns) and list(calls)]
    if late:  # the user said nothing more: what comes after the last turn answers nobody
        raise ExecutionError(
            f"the trajectory has calls in turn {late[0] + 1}, but the task has "
            f"{len(task.turns)} turn{'s' if len(task.turns) != 1 else ''}"
        )
    found = resolve_packages(task, packages)
    padded = [list(t) for t in turns[: len(task.turns)]] + [[] for _ in range(len(task.turns) - len(turns))]
    return run_calls(found, task.initial_state, task.workspace, padded)


def execute_reference(task: Task, *, packages: Mapping[str, EnvPackage] | None = None) -> Outcome:
    """The golden run of a task, replayed in fresh sessions."""
    return execute(task, reference_turns(task), packages=packages)


def run_calls(
    packages: Mapping[str, EnvPackage],
    initial_state: Mapping[str, Mapping[str, Any]],
    files: Mapping[str, str],
    turns: Sequence[Sequence[Call]],
    *,
    probes: int = 0,
    rebind: Callable[[int, Any, dict[str, str], list[dict[str, Any]]], Any] | None = None,
    settle: int = 0,
    lead: int = 0,
) -> Outcome:
    """Play calls in a fresh in-memory :class:`~envcraft.tasks.play.episode.Episode`, one turn at a time.

    ``probes`` failed calls go before every call (shifting the clock and the seeded
    rng without changing state); ``rebind(call index, args, provenance, results)`` may rewrite
    arguments from this run's earlier results (the last argument). Both serve :func:`shifted_replay`.
    ``settle`` failed calls and one lookup end every turn in every environment (:func:`settled_runs`);
    ``lead`` failed calls open every turn in every environment (:func:`late_runs`).
    """
    with Episode(packages, initial_state, files) as episode:
        for calls in turns:
            for waiting in episode.sessions.values() if lead else ():
                for _ in range(lead):
                    waiting.call(PROBE_TOOL, {})
            for raw in calls:
                if not isinstance(raw, Mapping):
                    result = error_result(
                        ErrorCategory.INVALID_ARGUMENT, "a call must be an object {env, tool, args}"
                    )
                    episode.actions.append(Action(episode.turn, "", "None", None, result))
                    continue
                env, tool, args, provenance = _parse_call(raw)
                session = episode.sessions.get(env)
                if session is not None and isinstance(tool, str) and tool:
                    for _ in range(probes):
                        session.call(PROBE_TOOL, {})
                    if rebind is not None:
                        results = [a.result for a in episode.actions]
                        args = rebind(len(episode.actions), args, provenance, results)
                episode.call(env, tool, args, provenance=provenance)
            for env, session in episode.sessions.items() if settle else ():
                for _ in range(settle):
                    session.call(PROBE_TOOL, {})
                if (lookup := advance_tool(packages[env])) is not None:
                    session.call(lookup, {})  # the world applies its timers at the next call
            episode.end_turn()
        return episode.outcome()


def _parse_call(raw: Mapping[str, Any]) -> tuple[str, Any, Any, dict[str, str]]:
    provenance = raw.get("provenance")
    return (
        str(raw.get("env", "")),
        raw.get("tool"),
        raw.get("args", {}),
        dict(provenance) if isinstance(provenance, Mapping) else {},
    )


def shifted_replay(golden: Outcome, probes: int | None = None) -> Outcome | None:
    """The golden run as runs with a moved clock see it: what in it is incidental.

    The golden calls are replayed with ``probes`` failed calls before every call. Every
    value that depends on the action index (clock times, seeded random ids, timers of the
    environment) comes out different, while a value the task's intents determine does not;
    the verifier synthesizer and the validator use the difference to tell incidental values
    from required ones. Arguments taken from earlier results (per the call's provenance, or
    found literally in an earlier golden result) are re-read from the replay's own results.

    Without ``probes``: runs shifted by each of :data:`SHIFTS`, merged (a value counts as
    moved if it moved in any of them; a run whose calls start failing at a larger shift
    adds nothing). None when even the smallest shift diverges (a call's success changes):
    no evidence.
    """
    if probes is not None:
        return _replay(golden, probes)
    runs = shifted_runs(golden)
    return _merge_runs(golden, runs) if runs else None


def shifted_runs(golden: Outcome) -> list[Outcome]:
    """The replays shifted by each of :data:`SHIFTS` that did not diverge (none if the first did).

    Each is a correct run of the task by construction, so a verifier must give it 1. Kept
    on ``golden`` (do not change a golden outcome after asking).
    """
    cached: list[Outcome] | None = golden._derived.get("shifted")
    if cached is None:
        runs = [_replay(golden, k) for k in SHIFTS]
        cached = [r for r in runs if r is not None] if runs[0] is not None else []
        golden._derived["shifted"] = cached
    return cached


def settled_runs(golden: Outcome) -> list[Outcome]:
    """The golden run with idle time at the end of every turn (:data:`SETTLE` failed calls in
    every environment), if no call then fails or succeeds otherwise: an agent that looks again
    before it answers. What the world moves by itself in that time shows at the turn's end (a
    drain that finished while it looked), so a turn's check does not pin the moment the golden
    run happened to stop. Aligned with the golden turns. Kept on ``golden``."""
    cached: list[Outcome] | None = golden._derived.get("settled")
    if cached is None:
        run = _replay(golden, 0, settle=SETTLE) if len(golden.turns) > 1 else None
        cached = [run] if run is not None else []
        golden._derived["settled"] = cached
    return cached


def late_runs(golden: Outcome) -> list[Outcome]:
    """The golden run with each of :data:`LEADS` failed calls opening every turn in every
    environment, where no call then fails or succeeds otherwise: an agent that looks around
    before it acts. Its writes come later on the clock, so what the world does by itself in the
    meantime shows, also where an environment applies it only at its next write (a job of
    another run that finished while the agent read: job_scheduler sweeps at each write). Kept
    on ``golden``."""
    return [run for run in _late(golden) if run is not None]


def keeps_pace(golden: Outcome) -> bool:
    """Whether the golden run still goes through with the smaller of :data:`LEADS` failed calls
    opening every turn: no deadline the user never mentioned (a hold that lapses, a pickup
    window that closes) lies within the lookups of a careful agent."""
    return _late(golden)[0] is not None


def _late(golden: Outcome) -> list[Outcome | None]:
    """The replays of :func:`late_runs` per lead, None where the run diverged. Kept on ``golden``."""
    cached: list[Outcome | None] | None = golden._derived.get("late")
    if cached is None:
        cached = [_replay(golden, 0, lead=k) for k in LEADS]
        golden._derived["late"] = cached
    return cached


def tail_runs(golden: Outcome) -> list[Outcome]:
    """The golden run followed by idle time: in every environment, :data:`TAILS` failed calls,
    then one harmless lookup and the fetches (:func:`fetch_tools`), so the environment's own
    dynamics (timers, counterparts, replies on their way) catch up.

    Each is a correct run of an agent that kept looking after the work was done; what changes
    in it after the golden end is exogenous, never the agent's doing. Kept on ``golden``.
    """
    cached: list[Outcome] | None = golden._derived.get("tails")
    if cached is None:
        cached = [_idle(golden, k, keep_calls=True) for k in TAILS]
        golden._derived["tails"] = cached
    return cached


def brisk_runs(golden: Outcome, lookups: Mapping[str, frozenset[str]]) -> list[Outcome]:
    """The golden run without its lookups (the calls of the tools ``lookups`` names per
    environment: read-only tools that write and fetch nothing), if every other call then fails
    or succeeds as it did: an agent that knew the ids, or filtered its way to them, and so acted
    earlier on the clock. What the clock decides shows in it too, the other way from the slower
    runs: a rider's cancellation within the free minutes costs no fee (round 69, R4: a run of
    three calls paid 0.45 for the 500-cent fee the golden run's five calls ran into). A read that
    marks what it showed (a message read is "seen") or applies the world's clock as it looks is
    no lookup: without it the run would differ in more than its time. Aligned with the golden
    turns. Kept on ``golden`` (one ``lookups`` per golden run)."""
    cached: list[Outcome] | None = golden._derived.get("brisk")
    if cached is None:
        cached = []
        kept = [a for a in golden.actions if a.tool not in lookups.get(a.env, frozenset())]
        if len(kept) < len(golden.actions):
            packages = {env: load_package(path) for env, path in golden.packages.items()}
            turns: list[list[dict[str, Any]]] = [[] for _ in golden.turns]
            for action in kept:
                turns[action.turn].append({"env": action.env, "tool": action.tool, "args": action.args})
            run = run_calls(packages, golden.initial, golden.initial_files, turns)
            pairs = zip(kept, run.actions, strict=True)
            if not any(is_error(a.result) != is_error(b.result) for a, b in pairs):
                cached = [run]
        golden._derived["brisk"] = cached
    return cached


def recovered_runs(golden: Outcome) -> list[Outcome]:
    """The golden run with each documented recovery made (``Environment.recovery``: a failed sink
    write sought back and replayed right after it), or none when no call asks for one. Each is
    a correct run: an agent that follows the environment's documentation. Kept on ``golden``."""
    cached: list[Outcome] | None = golden._derived.get("recovered")
    if cached is None:
        turns: list[list[dict[str, Any]]] = [[] for _ in golden.turns]
        asked = False
        for action, documented in _recoveries(golden):
            turns[action.turn].append({"env": action.env, "tool": action.tool, "args": action.args})
            for tool, extra in documented:
                turns[action.turn].append({"env": action.env, "tool": tool, "args": extra})
                asked = True
        packages = {env: load_package(path) for env, path in golden.packages.items()}
        cached = [run_calls(packages, golden.initial, golden.initial_files, turns)] if asked else []
        golden._derived["recovered"] = cached
    return cached


def left_unrecovered(golden: Outcome) -> bool:
    """Whether a call of ``golden`` came back asking for a documented recovery
    (``Environment.recovery``) that the calls after it do not make: a reference that leaves a
    failed sink write as it is pays an agent for giving up where the README says to replay
    (round 23, AA: the task's only goal was the fault having fired)."""
    actions = golden.actions
    for n, (action, documented) in enumerate(_recoveries(golden)):
        asked = [tool for tool, _ in documented]
        made = [a.tool for a in actions[n + 1 : n + 1 + len(asked)] if a.env == action.env]
        if asked and made != asked:
            return True
    return False


def _recoveries(golden: Outcome) -> Iterator[tuple[Action, list[tuple[str, dict[str, Any]]]]]:
    """Each action of ``golden`` with the calls its environment documents right after it
    (``Environment.recovery``; none for most)."""
    packages = {env: load_package(path) for env, path in golden.packages.items()}
    for action in golden.actions:
        args = action.args if isinstance(action.args, dict) else {}
        yield action, packages[action.env].env_class.recovery(action.tool, args, action.result)


def closing_reads(golden: Outcome) -> list[Action]:
    """What every lookup that needs no argument (``read_only``, no required parameter) answers
    on the world the golden run leaves: what an agent sees when it looks once more before it
    reports ("lag 49" of a partition whose committed offset went to 4, from list_partitions),
    so a report may say it back. Run on the final state and workspace, never replayed: no
    state of the run changes. Kept on ``golden``."""
    cached: list[Action] | None = golden._derived.get("closing")
    if cached is None:
        packages = {env: load_package(path) for env, path in golden.packages.items()}
        calls = [
            {"env": env, "tool": name, "args": {}}
            for env, package in sorted(packages.items())
            for name, spec in sorted(package.env_class.tools.items())
            if spec.annotations.read_only and not spec.parameters["required"]
        ]
        run = run_calls(packages, golden.final, golden.files, [calls]) if calls else None
        cached = [a for a in run.actions if not is_error(a.result)] if run is not None else []
        golden._derived["closing"] = cached
    return cached


def clock_run(golden: Outcome) -> Outcome:
    """S0 left alone while time passes as long as the longest tail run: only the environments'
    own dynamics change anything (a flight delayed, a timer fired). Kept on ``golden``."""
    cached: Outcome | None = golden._derived.get("clock")
    if cached is None:
        cached = _idle(golden, TAILS[-1] + (SHIFTS[-1] + 1) * len(golden.actions), keep_calls=False)
        golden._derived["clock"] = cached
    return cached


def _idle(golden: Outcome, probes: int, *, keep_calls: bool) -> Outcome:
    packages = {env: load_package(path) for env, path in golden.packages.items()}
    turns = golden.turn_calls() if keep_calls else [[] for _ in golden.turns]
    idle: list[dict[str, Any]] = []
    for env, package in packages.items():
        idle += [{"env": env, "tool": PROBE_TOOL, "args": {}}] * probes
        lookup = advance_tool(package)
        if lookup is not None:
            idle.append({"env": env, "tool": lookup, "args": {}})
        idle += [{"env": env, "tool": fetch, "args": {}} for fetch in fetch_tools(package)]
        if not keep_calls and package.env_class.settle is not Environment.settle:
            # S0 alone while time passes: a lazy world applies the clock (requests nobody took
            # expire). Never after the golden work: what the work made may lapse there, and that
            # the work was done is what a check reads at its end.
            idle.append({"env": env, "tool": SETTLE_TOOL, "args": {}})
    if not turns:
        turns = [[]]
    turns = [list(t) for t in turns]
    turns[-1] = [*turns[-1], *idle]
    return run_calls(packages, golden.initial, golden.initial_files, turns)


def advance_tool(package: EnvPackage) -> str | None:
    """A read-only domain tool without required arguments: calling it lets time-driven changes
    happen (environments apply them lazily, at their next call)."""
    for name, spec in sorted(package.env_class.tools.items()):
        annotations = spec.annotations
        if annotations.exclusive and annotations.read_only and not spec.parameters["required"]:
            return name
    return None


def fetch_tools(package: EnvPackage) -> list[str]:
    """The tools that bring in what the world has already decided (``fetches``: send/receive),
    callable without arguments: the idle runs call them (the tail runs after the work, and S0 left
    alone), so what they deliver shows as the world's doing (an out-of-office reply in the inbox),
    never as the agent's; the verifier then knows an arrival by its fields, at any turn's end.
    (Not the settled runs: a fetch within the work moves the ids of what the run makes after it,
    and with them the files named by those ids, which the checks of the work read.)"""
    return sorted(
        name
        for name, spec in package.env_class.tools.items()
        if spec.annotations.fetches and not spec.parameters["required"]
    )


def _replay(golden: Outcome, probes: int, settle: int = 0, lead: int = 0) -> Outcome | None:
    try:
        packages = {env: load_package(path) for env, path in golden.packages.items()}
    except PackageError:
        return None
    golden_results = [a.result for a in golden.actions]
    existing = _record_keys(golden.initial)
    drifted: list[str] = []  # S0 records the replay's lookups gave in place of the golden run's

    def rebind(index: int, args: Any, provenance: dict[str, str], results: list[dict[str, Any]]) -> Any:
        if not isinstance(args, dict):
            return args
        rebound = dict(args)
        for name, value in args.items():
            source = _provenance_source(provenance.get(name, ""), index)
            if source is None:
                source = _find_source(value, golden_results[:index])
            if source is None:
                continue
            old, new = _read_result(golden_results, source), _read_result(results, source)
            if new is MISSING:
                continue
            if isinstance(old, str) and old in existing and new != old:
                drifted.append(old)
            if value == old:
                rebound[name] = copy.deepcopy(new)
            elif value == [old]:  # a one-item list argument built from a single derived value
                rebound[name] = [copy.deepcopy(new)]
            elif (
                isinstance(value, str)
                and isinstance(old, str)
                and isinstance(new, str)
                and old
                and old in value
            ):
                rebound[name] = value.replace(old, new)  # free text carrying the value
        return rebound

    shifted = run_calls(
        packages,
        golden.initial,
        golden.initial_files,
        golden.turn_calls(),
        probes=probes,
        rebind=rebind,
        settle=settle,
        lead=lead,
    )
    pairs = zip(golden.actions, shifted.actions, strict=True)
    if drifted or any(is_error(a.result) != is_error(b.result) for a, b in pairs):
        return None  # another outcome, or the same calls on other records: no correct run
    return shifted


def _record_keys(states: Mapping[str, Any]) -> set[str]:
    """The keys of every record of S0 (members of each environment's collections): a lookup
    that gives another one later on the clock (the first upcoming class, once the 07:00 one
    has started) has the replay act on a record the user never meant."""
    return {
        key
        for state in states.values()
        if isinstance(state, dict)
        for records in state.values()
        if isinstance(records, dict)
        for key, record in records.items()
        if isinstance(record, dict)
    }


def _merge_runs(golden: Outcome, runs: list[Outcome]) -> Outcome:
    """One outcome holding, at every place, a value that differs from the golden one if any run's does."""

    def states(pick: Any) -> dict[str, Any]:
        gold = pick(golden)
        return {env: _merge(gold[env], [pick(r).get(env, {}) for r in runs]) for env in gold}

    def files(pick: Any) -> dict[str, str]:
        gold = pick(golden)
        merged = dict(gold)
        for run in reversed(runs):  # the first run that moved a file wins
            merged.update({p: c for p, c in pick(run).items() if gold.get(p) != c})
        return merged

    return Outcome(
        initial=golden.initial,
        final=states(lambda o: o.final),
        initial_files=golden.initial_files,
        files=files(lambda o: o.files),
        turns=[
            TurnSnapshot(states(lambda o, i=i: o.turns[i].final), files(lambda o, i=i: o.turns[i].files))
            for i in range(len(golden.turns))
        ],
        actions=runs[0].actions,
        packages=golden.packages,
    )


def _merge(gold: Any, others: list[Any]) -> Any:
    moved = [o for o in others if not (type(o) is type(gold) and o == gold)]
    if not moved:
        return gold
    if isinstance(gold, list) and all(isinstance(o, list) and len(o) == len(gold) for o in others):
        return [_merge(g, [o[i] for o in others]) for i, g in enumerate(gold)]
    if isinstance(gold, dict) and all(isinstance(o, dict) for o in others):
        base = next((o for o in moved if o.keys() != gold.keys()), gold)  # keeps new members, e.g. fresh ids
        return {
            k: _merge(gold[k], [o[k] for o in others if k in o]) if k in gold else v for k, v in base.items()
        }
    return moved[0]


def _provenance_source(provenance: str, index: int) -> tuple[int, list[str]] | None:
    """A label taken from an earlier call's result as (call index, path parts), if it names one."""
    source = Source.parse(provenance)
    if not source.from_call or source.call is None or source.call >= index:
        return None
    return source.call, (source.path or "").split(".")


def _find_source(value: Any, results: Sequence[Any]) -> tuple[int, list[str]] | None:
    """Where a literal string argument first appears in earlier results (call, path), if anywhere."""
    if not isinstance(value, str) or len(value) < 2:
        return None
    for call, result in enumerate(results):
        path = _locate(result, value)
        if path is not None:
            return call, path
    return None


def _locate(node: Any, value: str) -> list[str] | None:
    if isinstance(node, str):
        return [] if node == value else None
    items: Any = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        found = _locate(child, value)
        if found is not None:
            return [str(key), *found]
    return None


def _read_result(results: Sequence[Any], source: tuple[int, list[str]]) -> Any:
    call, parts = source
    if call >= len(results):
        return MISSING
    node: Any = results[call]
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node
