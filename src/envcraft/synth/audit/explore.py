"""The exploration audit: property-based call sequences over generated states.

From S0s of several seeds and sizes, seeded random sequences of tool calls run in memory.
Arguments come from the tool's schema and from values a user could name (ids, names and
paths in the current state and in earlier results, by :mod:`envcraft.tasks.values.args`), with a
share of edge values (empty strings, zero, negative and huge numbers, odd Unicode) that the
schema still admits. After every call these properties must hold:

* **no internal error**: a tool that raises (or writes a state its own model refuses)
  answers ``internal_error``; the finding carries the exception, the line in the package
  and the shortest prefix of the sequence that still triggers it (greedy shrinking);
* **reload**: the committed state (and workspace) loads into a fresh session with the
  same hash: what one call leaves, the next session can open;
* **a time bound** per call;
* **determinism**: every sequence is replayed in a second interpreter with another hash
  seed (:func:`replay_traces`); every result and state hash must be the same;
* **coverage**: every tool succeeds at least once (from these sequences, or from a skill's
  worked example), else the environment has a tool no task can use.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.core.errors import ErrorCategory, is_error
from envcraft.core.package import EnvPackage
from envcraft.core.session import Session
from envcraft.core.state import sha256_text, state_hash
from envcraft.core.tool import ToolSpec
from envcraft.synth.audit.findings import Finding, Severity, Stage
from envcraft.synth.audit.trace import Recorder, locate, recording
from envcraft.tasks.values.args import StateIndex, user_values

EDGE_STRINGS = ("", " ", "0", "-1", "ünïcødé ✓", "a" * 300, "../x", "null")
EDGE_NUMBERS = (0, -1, -(10**9), 10**12, 1)
MAX_SHRINKS = 6  # internal errors shrunk per audit
MAX_REACHED = 400  # states kept for the directed calls


@dataclass(frozen=True)
class ExploreConfig:
    """How much to explore; the defaults take a few seconds on a reference environment."""

    seeds: tuple[int, ...] = (0, 1, 2)
    sizes: tuple[int, ...] = (1, 2)
    sequences: int = 2  # per (seed, size)
    steps: int = 30
    call_seconds: float = 2.0
    edge_share: float = 0.1  # calls with one edge value
    directed: int = 40  # extra calls per tool that has not succeeded, from states reached so far
    seconds: float = 30.0  # the whole exploration stops here (the facts say so)
    rng_seed: int = 0


@dataclass
class Trace:
    """One sequence as run: enough to replay it and compare, call by call."""

    seed: int
    size: int
    session_seed: int
    calls: list[dict[str, Any]] = field(default_factory=list)  # {"tool", "args"}
    digests: list[str] = field(default_factory=list)  # sha256 of result + state after each call
    s0: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "size": self.size,
            "session_seed": self.session_seed,
            "calls": self.calls,
            "digests": self.digests,
            "s0": self.s0,
        }


@dataclass
class Exploration:
    findings: list[Finding] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    calls: int = 0
    truncated: bool = False
    slow: bool = False  # a call ran past the bound: exploration stopped there
    successes: Counter[str] = field(default_factory=Counter)
    errors: dict[str, Counter[str]] = field(default_factory=dict)  # tool -> "category: message"
    reached: list[tuple[dict[str, Any], dict[str, str], int]] = field(
        default_factory=list
    )  # state, files, seed

    def facts(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "sequences": len(self.traces),
            "truncated": self.truncated,
            "successes": dict(sorted(self.successes.items())),
        }

    def uncovered(self, tools: Iterable[str]) -> list[str]:
        return sorted(name for name in tools if self.successes[name] == 0)


def explore(
    package: EnvPackage,
    config: ExploreConfig,
    known_good: Iterable[dict[str, Any]] = (),
) -> Exploration:
    """Run the sequences and check the per-call properties (determinism: :func:`replay_traces`)."""
    result = Exploration()
    deadline = time.monotonic() + config.seconds
    tools = domain_tools(package)
    result.successes.update(call["tool"] for call in known_good)
    shrunk = 0
    with recording() as recorder:
        for seed in config.seeds:
            for size in config.sizes:
                initial = package.env_class.generate(seed=seed, size=size, data=package.data)
                s0 = initial.state.model_dump(mode="json")
                files = {**package.workspace_template, **initial.files}
                for number in range(config.sequences):
                    if time.monotonic() > deadline or result.slow:
                        result.truncated = True
                        break
                    rng = random.Random(f"explore:{config.rng_seed}:{seed}:{size}:{number}")
                    trace = Trace(
                        seed, size, seed * 1000 + number, s0=state_hash({"state": s0, "files": files})
                    )
                    found = _sequence(package, tools, s0, files, trace, rng, config, result, recorder)
                    result.traces.append(trace)
                    for finding, prefix in found:
                        if shrunk < MAX_SHRINKS and finding.code == "internal_error":
                            shrunk += 1
                            prefix = shrink(package, s0, files, trace.session_seed, prefix, recorder)
                        finding.detail["calls"] = prefix
                        result.findings.append(finding)
                    if result.slow:
                        break
        if not result.slow:
            _directed(package, tools, config, result, recorder, deadline)
    return result


def coverage_findings(
    result: Exploration, tools: Iterable[str], stage: Stage, severity: Severity
) -> list[Finding]:
    """One finding per tool that never succeeded, with the errors it met most often."""
    findings = []
    for name in result.uncovered(tools):
        common = result.errors.get(name, Counter()).most_common(2)
        tried = sum(result.errors.get(name, Counter()).values())
        seen = "; ".join(f"{text} ({n}x)" for text, n in common) or "no call could be formed"
        message = (
            f"{name} never succeeded in {tried} calls ({seen}). If it needs particular arguments or "
            "earlier steps, show a successful call in a skill's worked example"
        )
        findings.append(
            Finding(stage=stage, code="never_succeeds", message=message, tool=name, severity=severity)
        )
    return findings


def domain_tools(package: EnvPackage) -> dict[str, ToolSpec]:
    """The environment's own tools: Claw system tools (shell, files) are the runtime's, not the
    candidate's, and are audited by the sandbox's tests."""
    return {n: s for n, s in package.env_class.tools.items() if s.annotations.exclusive}


def _sequence(
    package: EnvPackage,
    tools: dict[str, ToolSpec],
    s0: dict[str, Any],
    files: dict[str, str],
    trace: Trace,
    rng: random.Random,
    config: ExploreConfig,
    result: Exploration,
    recorder: Recorder,
) -> list[tuple[Finding, list[dict[str, Any]]]]:
    found: list[tuple[Finding, list[dict[str, Any]]]] = []
    seen_results: list[Any] = []
    with Session.memory(package, state=s0, files=files, seed=trace.session_seed) as session:
        index = StateIndex.build(s0, files)
        names = sorted(tools)
        for _ in range(config.steps):
            weights = [1 if result.successes[n] else 3 for n in names]
            name = rng.choices(names, weights)[0]
            args = arguments(tools[name], index, rng, config.edge_share)
            recorder.take()
            started = time.monotonic()
            outcome = session.call(name, args)
            elapsed = time.monotonic() - started
            result.calls += 1
            trace.calls.append({"tool": name, "args": args})
            snapshot = _snapshot(session)
            trace.digests.append(sha256_text(_dumps(outcome) + snapshot))
            prefix = list(trace.calls)
            if elapsed > config.call_seconds:
                message = f"{name} took {elapsed:.1f}s (bound {config.call_seconds:g}s)"
                found.append((Finding(stage="explore", code="slow_call", message=message, tool=name), prefix))
                result.slow = True  # the stage fails anyway: more slow calls would only cost time
                break
            if is_error(outcome):
                error = outcome["error"]
                if error.get("category") == ErrorCategory.INTERNAL_ERROR:
                    found.append((_internal(name, args, recorder.take(), package.root), prefix))
                    continue
                text = f"{error.get('category')}: {str(error.get('message'))[:120]}"
                result.errors.setdefault(name, Counter())[text] += 1
                continue
            result.successes[name] += 1
            if len(result.reached) < MAX_REACHED:
                result.reached.append((session.state(), session.files(), trace.session_seed))
            problem = _reload_problem(package, session, snapshot)
            if problem:
                message = f"after {name}({_dumps(args)[:200]}): {problem}"
                found.append((Finding(stage="explore", code="reload", message=message, tool=name), prefix))
            seen_results.append(outcome)
            index = StateIndex.build({**session.state(), "__results__": seen_results}, session.files())
    return found


def _directed(
    package: EnvPackage,
    tools: dict[str, ToolSpec],
    config: ExploreConfig,
    result: Exploration,
    recorder: Recorder,
    deadline: float,
) -> None:
    """For each tool still without a success, calls from states the sequences reached (a journal
    with lines, a run with a failed job): some tools only work deep in a workflow."""
    if not result.reached:
        return
    rng = random.Random(f"directed:{config.rng_seed}")
    for name in sorted(n for n in tools if result.successes[n] == 0):
        for _ in range(config.directed):
            if time.monotonic() > deadline:
                result.truncated = True
                return
            state, files, seed = rng.choice(result.reached)
            with Session.memory(package, state=state, files=files, seed=seed) as session:
                args = arguments(tools[name], StateIndex.build(state, files), rng, 0.0)
                outcome = session.call(name, args)
            result.calls += 1
            recorder.take()
            if not is_error(outcome):
                result.successes[name] += 1
                break
            error = outcome["error"]
            if error.get("category") == ErrorCategory.INTERNAL_ERROR:
                result.findings.append(_internal(name, args, recorder.take(), package.root))
                break
            text = f"{error.get('category')}: {str(error.get('message'))[:120]}"
            result.errors.setdefault(name, Counter())[text] += 1


def _internal(name: str, args: dict[str, Any], exc: BaseException | None, root: Path) -> Finding:
    shown = _dumps(args)[:300]
    if exc is None:
        message = f"{name}({shown}) answered internal_error"
        return Finding(stage="explore", code="internal_error", message=message, tool=name)
    cause = locate(exc, root)
    message = f"{name} raised {cause.describe()}, e.g. on {name}({shown})"
    return Finding(
        stage="explore",
        code="internal_error",
        message=message,
        tool=name,
        file=cause.file,
        line=cause.line,
        detail={"traceback": list(cause.frames)},
    )


def _snapshot(session: Session) -> str:
    """The state hash, with the workspace for Claw environments."""
    return session.snapshot_hash() if session.package.kind == "claw" else session.state_hash()


def _reload_problem(package: EnvPackage, session: Session, snapshot: str) -> str:
    """Why the committed state would not reopen as it is, or ``""``."""
    try:
        with Session.memory(package, state=session.state(), files=session.files()) as again:
            if _snapshot(again) != snapshot:
                return "the state changes when it is loaded again (a validator rewrites it)"
    except Exception as exc:
        return f"the state no longer loads: {type(exc).__name__}: {str(exc)[:300]}"
    return ""


def arguments(spec: ToolSpec, index: StateIndex, rng: random.Random, edge_share: float) -> dict[str, Any]:
    """Arguments for one call: required parameters always, optional ones half the time; in
    ``edge_share`` of the calls one of them takes an edge value instead."""
    args: dict[str, Any] = {}
    required = set(spec.parameters.get("required", []))
    properties = spec.parameters.get("properties", {})
    for name, prop in properties.items():
        if name not in required and rng.random() < 0.5:
            continue
        options = user_values(name, prop, index, rng)
        args[name] = rng.choice(options) if options else _edge(prop, rng)
    if args and rng.random() < edge_share:
        name = rng.choice(sorted(args))
        args[name] = _edge(properties[name], rng)
    return args


def _edge(prop: dict[str, Any], rng: random.Random) -> Any:
    """A value the schema admits that careless code mishandles."""
    kind = prop.get("type")
    if "enum" in prop:
        return rng.choice(list(prop["enum"]))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        return rng.choice(EDGE_NUMBERS)
    if kind == "number":
        return float(rng.choice(EDGE_NUMBERS)) / 3
    if kind == "array":
        item = prop.get("items", {})
        return [] if rng.random() < 0.5 else [_edge(item, rng)]
    return rng.choice(EDGE_STRINGS)


def shrink(
    package: EnvPackage,
    s0: dict[str, Any],
    files: dict[str, str],
    session_seed: int,
    calls: list[dict[str, Any]],
    recorder: Recorder,
) -> list[dict[str, Any]]:
    """Drop earlier calls, one at a time, while the last call still answers internal_error."""
    current = list(calls)
    i = 0
    while i < len(current) - 1:
        candidate = current[:i] + current[i + 1 :]
        if _still_fails(package, s0, files, session_seed, candidate):
            current = candidate
        else:
            i += 1
    recorder.take()
    return current


def _still_fails(
    package: EnvPackage, s0: dict[str, Any], files: dict[str, str], seed: int, calls: list[dict[str, Any]]
) -> bool:
    with Session.memory(package, state=s0, files=files, seed=seed) as session:
        for call in calls[:-1]:
            session.call(call["tool"], call["args"])
        last = session.call(calls[-1]["tool"], calls[-1]["args"])
    return is_error(last) and last["error"].get("category") == ErrorCategory.INTERNAL_ERROR


def replay_traces(package: EnvPackage, traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replay recorded sequences; for each, the first step whose digest differs (or none).

    Run in another interpreter (another hash seed) than the one that recorded them.
    """
    divergences = []
    for number, trace in enumerate(traces):
        initial = package.env_class.generate(seed=trace["seed"], size=trace["size"], data=package.data)
        s0 = initial.state.model_dump(mode="json")
        files = {**package.workspace_template, **initial.files}
        if state_hash({"state": s0, "files": files}) != trace["s0"]:
            divergences.append({"trace": number, "step": -1})
            continue
        with Session.memory(package, state=s0, files=files, seed=trace["session_seed"]) as session:
            for step, (call, digest) in enumerate(zip(trace["calls"], trace["digests"], strict=True)):
                outcome = session.call(call["tool"], call["args"])
                if sha256_text(_dumps(outcome) + _snapshot(session)) != digest:
                    divergences.append({"trace": number, "step": step})
                    break
    return divergences


def nondeterminism_findings(traces: list[Trace], divergences: list[dict[str, Any]]) -> list[Finding]:
    """Findings for the replays that diverged (one per tool)."""
    findings = []
    for item in divergences:
        trace = traces[item["trace"]]
        step = item["step"]
        if step < 0:
            message = f"generate(seed={trace.seed}, size={trace.size}) gives another S0 in another process"
            findings.append(
                Finding(stage="explore", code="nondeterministic", message=message, tool="generate")
            )
            continue
        call = trace.calls[step]
        message = (
            f"{call['tool']}({_dumps(call['args'])[:200]}) gives another result or state when the same "
            "calls are replayed in a fresh process (another hash seed: set iteration order, id(), hash()?)"
        )
        findings.append(
            Finding(
                stage="explore",
                code="nondeterministic",
                message=message,
                tool=call["tool"],
                detail={"calls": trace.calls[: step + 1]},
            )
        )
    return findings


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
