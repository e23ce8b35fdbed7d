"""Fuzz every tool of every built-in environment: a call never raises, a failure changes
nothing, and no call ends in ``internal_error`` (each one is an environment bug an agent meets
as "internal error"; the only exception is the test package's deliberately buggy tool).

Arguments are drawn from each tool's own JSON Schema (often valid, using ids found in the
generated S0, so deep preconditions are reached) mixed with junk: wrong types, missing and
extra fields, huge strings, odd Unicode, nested structures, non-object arguments; even a
well-typed string is at times a real id with a lone surrogate after it (text UTF-8 cannot
hold: ``invalid_argument`` at the argument boundary) or a value past the OS's path limits. The
sessions run with ``ENVCRAFT_CHECK_STATE=1``: every commit is also checked against the
whole-state validation and serialization the incremental state path stands in for.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcraft.core import ErrorCategory, PackageError, Session, builtin_ids, is_error, load_package

HERE = Path(__file__).resolve().parent
# Test packages fuzzed with the built-ins: the counter (a tool that mutates then raises) and a
# claw workspace whose domain tool writes files and then refuses (workspace rollback under fuzz).
FIXTURE_PACKAGES = [str(HERE.parent / "fixtures" / "counter"), str(HERE / "fixtures" / "notes")]
SKIPPED_TOOLS = frozenset({"shell"})  # runs real commands; covered by the sandbox's own tests
DELIBERATE = frozenset({("counter", "explode")})  # mutates, then raises: internal_error by design
INTERNAL_ERRORS: Counter[str] = Counter()
# Calls per tool; CI keeps it short, a campaign raises it (ENVCRAFT_FUZZ_EXAMPLES=500: ~90,000 calls).
FUZZ_EXAMPLES = int(os.environ.get("ENVCRAFT_FUZZ_EXAMPLES", "20"))
LONE_SURROGATE = json.loads('"\\ud800"')
ODD_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        LONE_SURROGATE,
        "\u202eevil",
        "🙂" * 5,
        "../../etc/passwd",
        "/etc/passwd",
        "~",
        "null",
        "' OR 1=1 --",
        "a" * 100_000,
        "\n\t\r",
        "ß" * 300,
    ]
)
# Text that UTF-8 cannot hold (any code point, lone surrogates included) and values past the
# OS's limits (a 4 KiB path, a 255-byte file name, a path 2,000 levels deep, 100 KB of text).
UNENCODABLE = st.text(st.characters(exclude_categories=()), min_size=1, max_size=8).map(
    lambda text: text + LONE_SURROGATE
)
HUGE = st.sampled_from(["a" * 100_000, "a/" * 50_000, "a/" * 2_040, "n" * 256, "d/" * 300 + "f"])
SCALAR_JUNK = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40) | ODD_STRINGS
JUNK = st.recursive(
    SCALAR_JUNK,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _cases() -> list[Any]:
    cases: list[Any] = []
    for env_id in [*builtin_ids(), *FIXTURE_PACKAGES]:
        try:
            tools = sorted(load_package(env_id).env_class.tools)
        except PackageError:
            cases.append(pytest.param(env_id, "", id=f"{env_id}-does-not-load"))
            continue
        name = Path(env_id).name
        cases += [pytest.param(env_id, t, id=f"{name}.{t}") for t in tools if t not in SKIPPED_TOOLS]
    return cases


_OPEN: list[Session] = []


@pytest.fixture(scope="module", autouse=True)
def _close_sessions() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENVCRAFT_CHECK_STATE", "1")
        yield
    for session in _OPEN:
        session.close()


@cache
def _session(env_id: str) -> Session:
    """One generated session per environment, reused (and mutated) across examples."""
    session = Session.memory(env_id, seed=11, size=2)
    _OPEN.append(session)
    return session


@cache
def _pools(env_id: str) -> dict[str, tuple[str, ...]]:
    """Strings found in S0, by the field name they sit under (``order_id`` -> real order ids);
    ``""`` holds them all, plus the workspace paths. Arguments drawn from here hit real entities."""
    session = _session(env_id)
    found: dict[str, set[str]] = {"": set(session.files())}

    def walk(value: Any, field: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                found[""].add(str(key))
                walk(item, str(key))
        elif isinstance(value, list):
            for item in value:
                walk(item, field)
        elif isinstance(value, str) and len(value) < 80:
            found[""].add(value)
            found.setdefault(field, set()).add(value)

    walk(session.state(), "")
    return {field: tuple(sorted(values)[:400]) for field, values in found.items() if values}


def _good(name: str, prop: dict[str, Any], pools: dict[str, tuple[str, ...]]) -> st.SearchStrategy[Any]:
    """A well-typed value for parameter ``name``; strings often name real entities of S0."""
    kind = prop.get("type")
    if "enum" in prop:
        return st.sampled_from(prop["enum"])
    if kind == "string":
        known = pools.get(name) or pools.get(name.removesuffix("s")) or pools.get("") or ("x",)
        anything = pools.get("") or known
        return st.one_of(
            st.sampled_from(known),
            st.sampled_from(known),
            st.sampled_from(anything),
            st.text(max_size=12),
            st.tuples(st.sampled_from(known), UNENCODABLE).map("".join),
            HUGE,
        )
    if kind == "integer":
        return st.integers(-2, 12) | st.integers(-(2**70), 2**70)
    if kind == "number":
        return st.floats(-1e3, 1e3) | st.floats()
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(_good(name, prop.get("items", {}), pools), max_size=4)
    return JUNK


def _arguments(parameters: dict[str, Any], pools: dict[str, tuple[str, ...]]) -> st.SearchStrategy[Any]:
    """Mostly well-formed calls (deep preconditions), the rest malformed (the validator's edges)."""
    props: dict[str, Any] = parameters["properties"]
    required = set(parameters["required"])
    good = {name: _good(name, prop, pools) for name, prop in props.items()}
    messy = {name: st.one_of(strategy, JUNK, st.none()) for name, strategy in good.items()}

    @st.composite
    def well_formed(draw: st.DrawFn) -> dict[str, Any]:
        return {
            name: draw(strategy) for name, strategy in good.items() if name in required or draw(st.booleans())
        }

    @st.composite
    def malformed(draw: st.DrawFn) -> dict[str, Any]:
        args = {name: draw(strategy) for name, strategy in messy.items() if draw(st.integers(0, 5))}
        if draw(st.booleans()):
            args[draw(st.text(min_size=1, max_size=8))] = draw(JUNK)
        return args

    non_object = st.lists(JUNK, max_size=2) | SCALAR_JUNK
    return st.one_of(well_formed(), well_formed(), well_formed(), malformed(), non_object)


@pytest.mark.parametrize(("env_id", "tool"), _cases())
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
@given(data=st.data())
def test_call_never_raises_and_failures_change_nothing(env_id: str, tool: str, data: st.DataObject) -> None:
    if not tool:
        load_package(env_id)  # raises the loader's message
        pytest.skip(f"{env_id} only became loadable after collection (edited meanwhile); rerun")
    session = _session(env_id)
    spec = session.package.env_class.tools[tool]
    args = data.draw(_arguments(spec.parameters, _pools(env_id)), label="args")
    before_state, before_files = session.state_hash(), session.files()

    result = session.call(tool, args)

    assert isinstance(result, dict), f"{tool} returned {type(result).__name__}"
    text = json.dumps(result)  # results must be JSON
    assert "Traceback" not in text
    if is_error(result) and result["error"]["category"] == "internal_error":
        INTERNAL_ERRORS[f"{session.package.id}.{tool}"] += 1
        assert (session.package.id, tool) in DELIBERATE, (
            f"internal_error from {session.package.id}.{tool}({args!r:.300}); so far: {dict(INTERNAL_ERRORS)}"
        )
    if is_error(result):
        assert result["error"]["category"] in set(ErrorCategory)
        assert isinstance(result["error"]["message"], str) and result["error"]["message"]
        assert session.state_hash() == before_state, f"failed {tool}({args!r:.300}) changed the state"
        assert session.files() == before_files, f"failed {tool}({args!r:.300}) changed the workspace"
