"""Robustness of every built-in environment: generation never fails, and neither near-duplicate
entities (the data engine's distractors) nor any sequence of calls makes a tool raise.

A tool that raises reaches the agent as ``internal_error``. A reference environment must answer
every call, on every state its ``State`` model accepts, with a result or a precise structured
error; and a successful call must leave a state that the model accepts again (or the next load
of the session fails). Distractors are inserted next to *every* entity the data engine could
target, so each collection gets its copies; calls take their ids from the distracted S0. Beyond
distractors, single-field mutations of S0 probe the model itself: what it accepts must work.
"""

from __future__ import annotations

import copy
import logging
import random
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest
from pydantic import ValidationError

from envcraft.core import EnvPackage, Session, builtin_ids, is_error, load_package
from envcraft.core.errors import ErrorCategory
from envcraft.tasks.graphs.effects import tool_effects
from envcraft.tasks.values.args import StateIndex, id_kind, user_values
from envcraft.tasks.world.distractors import add_distractors

ENVS = builtin_ids()
GENERATED_SEEDS = range(31)
SIZES = (1, 2)
DISTRACTED_SEEDS = range(8)  # per size: S0s that get distractors, id lookups and a walk
DISTRACTORS = 8
IDS_PER_PARAM = 6  # besides every distractor id of the parameter's kind
WALK_CALLS = 30
RECHECK_EVERY = 10  # walk steps between two reloads of the state through the State model
MUTATED_SEEDS = range(3)
MUTATIONS = 30  # per seed; those the State model refuses are skipped
MUTATION_CALLS = 8
SKIPPED_TOOLS = frozenset({"shell"})  # runs subprocesses; sandbox code, tested in tests/sandbox


class Findings(logging.Handler):
    """Counts calls and keeps every internal error met, with the exception the runtime logged
    for it (``envcraft.tools`` logs the traceback at ERROR before answering ``internal_error``)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.calls = 0
        self.errors: list[str] = []
        self.last: logging.LogRecord | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record

    def call(self, session: Session, tool: str, args: dict[str, Any], where: str) -> dict[str, Any]:
        self.last = None
        result = session.call(tool, args)
        self.calls += 1
        if is_error(result) and result["error"]["category"] == ErrorCategory.INTERNAL_ERROR:
            self.errors.append(f"{where}: {tool}({args}) -> {self._cause() or result['error']}")
        return result

    def _cause(self) -> str:
        if self.last is None or not self.last.exc_info or self.last.exc_info[1] is None:
            return ""
        exc = self.last.exc_info[1]
        frames = traceback.extract_tb(exc.__traceback__)
        frame = next((f for f in reversed(frames) if "/envs/" in f.filename), frames[-1])
        return f"{type(exc).__name__}: {exc} at {frame.filename.split('/envs/')[-1]}:{frame.lineno}"


@contextmanager
def recording() -> Iterator[Findings]:
    findings = Findings()
    logger = logging.getLogger("envcraft.tools")
    logger.addHandler(findings)
    try:
        yield findings
    finally:
        logger.removeHandler(findings)


@cache
def package(env_id: str) -> EnvPackage:
    return load_package(env_id)


@cache
def read_only_tools(env_id: str) -> frozenset[str]:
    """Tools that cannot change the state or the workspace (the engine's own classification)."""
    env_class = package(env_id).env_class
    effects = tool_effects(env_class)
    found = set()
    for name, spec in env_class.tools.items():
        flag = spec.annotations.read_only
        if flag if flag is not None else not (effects[name].writes or effects[name].ws_writes):
            found.add(name)
    return frozenset(found - SKIPPED_TOOLS)


def distracted(env_id: str, seed: int, size: int) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """A generated S0 with near-duplicates of its entities, the workspace files and the new ids."""
    pkg = package(env_id)
    initial = pkg.env_class.generate(seed=seed, size=size, data=pkg.data)
    s0 = initial.state.model_dump(mode="json")
    targets = [
        {"env": env_id, "path": f"/{name}/{key}"}
        for name, collection in s0.items()
        if isinstance(collection, dict) and all(isinstance(v, dict) for v in collection.values())
        for key in collection
        if "/" not in key and "~" not in key
    ]
    files = {**pkg.workspace_template, **initial.files}
    states, made = add_distractors(
        {env_id: s0}, targets, {env_id: pkg}, random.Random(seed), limit=DISTRACTORS, files=files
    )
    ids = {d.path.rsplit("/", 1)[-1] for d in made}
    return states[env_id], files, ids


def arguments(
    spec: Any, index: StateIndex, rng: random.Random, fixed: dict[str, Any], optional: float = 0.5
) -> dict[str, Any] | None:
    """Values a user could give for each parameter (``fixed`` ones first); None if one is missing."""
    args = dict(fixed)
    required = spec.parameters["required"]
    for name, prop in spec.parameters["properties"].items():
        if name in args or (name not in required and rng.random() < optional):
            continue
        options = user_values(name, prop, index, rng)
        if options:
            args[name] = rng.choice(options)
        elif name in required:
            return None
    return args


def lookups(
    env_id: str, index: StateIndex, fresh: set[str], rng: random.Random
) -> list[tuple[str, dict[str, Any]]]:
    """Each read tool with each distractor id of its kind (plus a few other ids), and with no
    optional argument at all."""
    calls: list[tuple[str, dict[str, Any]]] = []
    tools = package(env_id).env_class.tools
    for name in sorted(read_only_tools(env_id)):
        spec = tools[name]
        id_params = [p for p in spec.parameters["properties"] if id_kind(p)]
        if not spec.parameters["required"]:
            calls.append((name, {}))
        for param in id_params:
            known = index.ids_of(id_kind(param) or "")
            ids = [i for i in known if i in fresh] + rng.sample(known, min(IDS_PER_PARAM, len(known)))
            prop = spec.parameters["properties"][param]
            for value in dict.fromkeys(ids):
                args = arguments(spec, index, rng, {param: [value] if prop.get("type") == "array" else value})
                if args is not None:
                    calls.append((name, args))
    return calls


def walk(
    env_id: str, session: Session, findings: Findings, rng: random.Random, where: str, calls: int = WALK_CALLS
) -> None:
    """Random calls of every tool with arguments from the current state; the state must reload."""
    env_class = package(env_id).env_class
    names = sorted(set(env_class.tools) - SKIPPED_TOOLS)
    index = StateIndex.build(session.state(), session.files())
    for step in range(1, calls + 1):
        name = rng.choice(names)
        args = arguments(env_class.tools[name], index, rng, {})
        if args is None:
            continue
        findings.call(session, name, args, where)
        if step % RECHECK_EVERY == 0:
            state = session.state()
            try:
                env_class.State.model_validate(state)
            except ValidationError as exc:
                findings.errors.append(f"{where}: a tool wrote a state its model refuses: {exc}")
                return
            index = StateIndex.build(state, session.files())


@pytest.mark.parametrize("env_id", ENVS)
def test_generate_never_fails_and_yields_a_valid_state(env_id: str) -> None:
    pkg = package(env_id)
    for seed in GENERATED_SEEDS:
        for size in SIZES:
            initial = pkg.env_class.generate(seed=seed, size=size, data=pkg.data)
            dumped = initial.state.model_dump(mode="json")
            assert pkg.env_class.State.model_validate(dumped).model_dump(mode="json") == dumped


@pytest.mark.parametrize("env_id", ENVS)
def test_no_internal_error_on_distracted_states(env_id: str) -> None:
    with recording() as findings:
        distractor_count = explore(env_id, findings)
    print(f"{env_id}: {findings.calls} calls, {distractor_count} distractors, {len(findings.errors)} errors")
    # look-alikes exist where the environment declares fields they may differ in (Entity(vary=...))
    assert distractor_count > 0 or not any(e.vary for e in package(env_id).env_class.entities)
    assert not findings.errors, "\n".join(findings.errors[:20])


def explore(env_id: str, findings: Findings) -> int:
    """Id lookups and a walk on each distracted S0; the number of distractors inserted."""
    distractor_count = 0
    for seed in DISTRACTED_SEEDS:
        for size in SIZES:
            state, files, fresh = distracted(env_id, seed, size)
            distractor_count += len(fresh)
            rng = random.Random(f"{env_id}:{seed}:{size}")
            where = f"{env_id} seed={seed} size={size}"
            with Session.memory(package(env_id), state=state, files=files, seed=seed) as session:
                index = StateIndex.build(state, files)
                for name, args in lookups(env_id, index, fresh, rng):
                    findings.call(session, name, args, where)
                walk(env_id, session, findings, rng, where)
    return distractor_count


def mutants(env_id: str, seed: int) -> Iterator[tuple[dict[str, Any], dict[str, str], str]]:
    """S0 with one field of one record changed, for each change the State model accepts."""
    pkg = package(env_id)
    initial = pkg.env_class.generate(seed=seed, size=1, data=pkg.data)
    s0 = initial.state.model_dump(mode="json")
    files = {**pkg.workspace_template, **initial.files}
    records = [
        (name, key, field)
        for name, collection in sorted(s0.items())
        if isinstance(collection, dict) and all(isinstance(v, dict) for v in collection.values())
        for key, record in sorted(collection.items())
        for field in sorted(record)
    ]
    ids = [key for _, key, _ in records]
    rng = random.Random(f"mutate:{env_id}:{seed}")
    for name, key, field in rng.sample(records, min(MUTATIONS, len(records))):
        state = copy.deepcopy(s0)
        value = state[name][key][field]
        state[name][key][field] = rng.choice(_changes(value, ids, rng))
        try:
            pkg.env_class.State.model_validate(state)
        except ValidationError:
            continue
        yield state, files, f"{env_id} seed={seed} {name}/{key}.{field}={state[name][key][field]!r}"


def _changes(value: Any, ids: list[str], rng: random.Random) -> list[Any]:
    """Values of the same JSON type a hand-made or corrupted state could hold instead."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [0, -1, value + 1, 10**6]
    if isinstance(value, str) or value is None:
        return ["", f"{value} x", rng.choice(ids), "2026-01-05T09:00:00Z", "2026-02-30", "-1"]
    if isinstance(value, list):
        return [value[:-1], [*value, rng.choice(ids)], value[::-1]]
    if isinstance(value, dict):
        return [{}, dict(list(value.items())[1:])]
    return [value]


@pytest.mark.parametrize("env_id", ENVS)
def test_no_internal_error_on_states_one_field_away(env_id: str) -> None:
    accepted = 0
    with recording() as findings:
        for seed in MUTATED_SEEDS:
            for state, files, where in mutants(env_id, seed):
                accepted += 1
                with Session.memory(package(env_id), state=state, files=files, seed=seed) as session:
                    walk(env_id, session, findings, random.Random(where), where, MUTATION_CALLS)
    print(f"{env_id}: {accepted} mutants, {findings.calls} calls, {len(findings.errors)} errors")
    assert accepted > 0
    assert not findings.errors, "\n".join(findings.errors[:20])
