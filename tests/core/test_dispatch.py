"""Dispatch never raises: every bad call becomes a structured error and changes nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import ErrorCategory, Session, SessionError
from envcraft.core.errors import INTERNAL_ERROR_MESSAGE

PROBE = '''
from typing import Literal

from envcraft import Environment, StateModel, tool


class ProbeState(StateModel):
    items: list[str] = []
    count: int = 0


class Probe(Environment):
    """A probe for the dispatcher."""

    State = ProbeState

    @tool
    def add(self, item: str, times: int = 1, ratio: float = 1.0, flag: bool = False,
            mode: Literal["a", "b"] = "a", tags: list[str] | None = None) -> dict:
        """Append an item.

        Args:
            item: What to append.
            times: How many copies.
            ratio: A ratio.
            flag: A flag.
            mode: A mode.
            tags: Labels.
        """
        self.state.items.extend([item] * times)
        self.state.count += times
        return {"count": self.state.count, "args": [item, times, ratio, flag, mode, tags]}

    @tool
    def crash(self) -> dict:
        """Raise an unexpected exception carrying secrets."""
        raise ValueError("SECRET-internal-detail at /srv/app/private.py")

    @tool
    def mutate_then_fail(self) -> dict:
        """Change the state, then refuse."""
        self.state.count += 100
        self.state.items.append("half-done")
        self.fail("conflict", "refused after mutating")

    @tool
    def mutate_then_crash(self) -> dict:
        """Change the state, then hit a bug."""
        self.state.items.clear()
        return {}["missing"]

    @tool
    def not_a_dict(self) -> dict:
        """Return a list by mistake."""
        self.state.count += 1
        return ["not", "a", "dict"]

    @tool
    def unserializable(self) -> dict:
        """Mutate, then return something JSON cannot encode."""
        self.state.count += 1
        return {"value": object()}

    @tool
    def clock(self) -> dict:
        """Report the tool's view of time and randomness."""
        return {"now": self.now().isoformat(), "index": self.action_index, "draw": self.rng.random()}
'''

CLOCK_MANIFEST = 'base_time = "2030-06-01T12:00:00Z"\ntick_seconds = 30\n'


@pytest.fixture
def probe(make_env: Callable[..., Path]) -> Path:
    return make_env(PROBE, manifest=CLOCK_MANIFEST)


@pytest.fixture(params=["memory", "durable"])
def session(request: pytest.FixtureRequest, probe: Path, tmp_path: Path) -> Session:
    """The same checks hold on both stores."""
    if request.param == "memory":
        return Session.memory(probe, state={"items": ["seed"], "count": 1})
    return Session.create(probe, tmp_path / "durable", state={"items": ["seed"], "count": 1})


def _error(result: dict[str, Any]) -> dict[str, Any]:
    assert set(result) == {"error"}, result
    body: dict[str, Any] = result["error"]
    assert body["category"] in set(ErrorCategory)
    assert isinstance(body["message"], str) and body["message"]
    return body


def _unchanged(session: Session, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a call that must fail; check state and in-process view are untouched; return the error."""
    before = session.state_hash()
    result = call()
    after = session.state_hash()
    assert after == before
    assert session.call("add", {"item": "probe", "times": 0})["count"] == 1, "in-memory state leaked"
    return _error(result)


def test_valid_call_returns_the_tool_result(session: Session) -> None:
    result = session.call("add", {"item": "x", "times": 2, "ratio": 0.5, "flag": True, "tags": ["t"]})
    assert result == {"count": 3, "args": ["x", 2, 0.5, True, "a", ["t"]]}
    assert session.state() == {"items": ["seed", "x", "x"], "count": 3}


def test_unknown_tool(session: Session) -> None:
    error = _unchanged(session, lambda: session.call("no_such_tool", {}))
    assert error["category"] == "not_found"
    assert "no_such_tool" in error["message"]
    assert "add" in error["available"]


@pytest.mark.parametrize("name", [None, 3, ["add"], ""])
def test_non_string_or_empty_tool_name(session: Session, name: Any) -> None:
    assert _unchanged(session, lambda: session.call(name, {}))["category"] == "not_found"


def test_missing_field_names_the_field(session: Session) -> None:
    error = _unchanged(session, lambda: session.call("add", {"times": 2}))
    assert error["category"] == "missing_field"
    assert error["field"] == "item"
    assert "'item'" in error["message"] and "What to append" in error["requirement"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"item": 5}, "item"),
        ({"item": None}, "item"),
        ({"item": "x", "times": "many"}, "times"),
        ({"item": "x", "times": 1.5}, "times"),
        ({"item": "x", "ratio": "wide"}, "ratio"),
        ({"item": "x", "flag": "perhaps"}, "flag"),
        ({"item": "x", "mode": "c"}, "mode"),
        ({"item": "x", "tags": "solo"}, "tags"),
        ({"item": "x", "tags": [1, 2]}, "tags.0"),
        ({"item": {"nested": "junk"}}, "item"),
    ],
)
def test_wrong_types_name_the_field(session: Session, args: dict[str, Any], field: str) -> None:
    error = _unchanged(session, lambda: session.call("add", args))
    assert error["category"] == "invalid_argument"
    assert error["field"] == field


def test_extra_argument_is_refused(session: Session) -> None:
    error = _unchanged(session, lambda: session.call("add", {"item": "x", "colour": "red"}))
    assert error["category"] == "invalid_argument"
    assert error["field"] == "colour"
    assert "item" in error["accepted"]


@pytest.mark.parametrize("args", [[], ["x"], "item=x", 7, 1.5, True])
def test_non_object_arguments(session: Session, args: Any) -> None:
    error = _unchanged(session, lambda: session.call("add", args))
    assert error["category"] == "invalid_argument"
    assert "JSON object" in error["message"]


def test_none_arguments_mean_no_arguments(session: Session) -> None:
    assert _unchanged(session, lambda: session.call("add", None))["field"] == "item"
    assert "error" not in session.call("clock", None)


def test_raising_tool_is_an_internal_error_without_its_traceback(
    session: Session, caplog: pytest.LogCaptureFixture
) -> None:
    error = _unchanged(session, lambda: session.call("crash", {}))
    assert error["category"] == "internal_error"
    assert error["message"] == INTERNAL_ERROR_MESSAGE
    text = json.dumps(error)
    for leak in ("SECRET", "Traceback", "ValueError", "private.py"):
        assert leak not in text
    assert "SECRET-internal-detail" in caplog.text, "the developer log must keep the traceback"


@pytest.mark.parametrize("tool", ["mutate_then_fail", "mutate_then_crash", "not_a_dict", "unserializable"])
def test_failed_call_leaves_no_trace_in_the_state(session: Session, tool: str) -> None:
    error = _unchanged(session, lambda: session.call(tool, {}))
    expected = "conflict" if tool == "mutate_then_fail" else "internal_error"
    assert error["category"] == expected
    assert session.state() == {"items": ["seed"], "count": 1}


def test_failed_calls_are_logged_with_the_unchanged_hash(session: Session) -> None:
    start = session.state_hash()
    session.call("mutate_then_fail", {})
    not_an_object: Any = []
    session.call("nope", not_an_object)
    actions = session.actions()
    assert [a["index"] for a in actions] == [0, 1]
    assert all(a["state_hash"] == start for a in actions)
    assert actions[0]["result"]["error"]["category"] == "conflict"


def test_clock_is_base_time_plus_tick_per_action_including_failures(session: Session) -> None:
    first = session.call("clock", {})
    session.call("add", {})  # missing field: fails, still consumes index 1
    session.call("crash", {})  # index 2
    fourth = session.call("clock", {})
    assert (first["index"], first["now"]) == (0, "2030-06-01T12:00:00+00:00")
    assert (fourth["index"], fourth["now"]) == (3, "2030-06-01T12:01:30+00:00")
    times = [a["time"] for a in session.actions()]
    assert times == [
        "2030-06-01T12:00:00Z",
        "2030-06-01T12:00:30Z",
        "2030-06-01T12:01:00Z",
        "2030-06-01T12:01:30Z",
    ]


def test_clock_and_rng_replay_identically(probe: Path) -> None:
    def run(seed: int) -> list[dict[str, Any]]:
        replay = Session.memory(probe, seed=seed)
        return [replay.call("clock", {}) for _ in range(3)]

    assert run(7) == run(7)
    assert [r["draw"] for r in run(7)] != [r["draw"] for r in run(8)]
    assert len({r["draw"] for r in run(7)}) == 3, "each action index draws a fresh value"


def test_open_missing_session_is_session_not_found(tmp_path: Path) -> None:
    with pytest.raises(SessionError) as caught:
        Session.open(tmp_path / "never-created")
    assert caught.value.to_result()["error"]["category"] == "session_not_found"


def test_session_deleted_under_an_open_handle(probe: Path, tmp_path: Path) -> None:
    session = Session.create(probe, tmp_path / "gone")
    shutil.rmtree(tmp_path / "gone")
    error = _error(session.call("add", {"item": "x"}))
    assert error["category"] == "session_not_found"
    assert str(tmp_path) not in error["message"]


def test_a_tool_that_stores_nan_in_a_float_field_fails_and_changes_nothing(tmp_path):
    from envcraft import Environment, Session, StateModel, tool
    from envcraft.core.package import EnvPackage, Manifest

    class Meter(StateModel):
        reading: float = 1.0

    class Gauge(Environment):
        """A gauge."""

        State = Meter

        @tool
        def set_reading(self, value: float) -> dict:
            """Set the reading.

            Args:
                value: The new reading.
            """
            self.state.reading = value * float("inf") if value == 0 else value
            return {"reading": self.state.reading}

    package = EnvPackage(
        root=tmp_path, manifest=Manifest(id="gauge", title="Gauge", kind="tool"), env_class=Gauge
    )
    session = Session.memory(package)
    before = session.state_hash()
    result = session.call("set_reading", {"value": 0})
    assert result["error"]["category"] == "internal_error"
    assert session.state_hash() == before
    assert session.call("set_reading", {"value": 2.5}) == {"reading": 2.5}


def test_a_tool_that_breaks_the_state_models_invariants_fails_and_changes_nothing(tmp_path):
    from pydantic import model_validator

    from envcraft import Environment, Session, StateModel, tool
    from envcraft.core.package import EnvPackage, Manifest

    class Stock(StateModel):
        on_hand: int = 5
        reserved: int = 0

        @model_validator(mode="after")
        def _reserved_within_stock(self) -> Stock:
            if self.reserved > self.on_hand:
                raise ValueError("reserved exceeds on hand")
            return self

    class Shelf(Environment):
        """A shelf whose buggy tool forgets to check stock."""

        State = Stock

        @tool
        def reserve(self, qty: int) -> dict:
            """Reserve units without checking stock (a bug the runtime must contain).

            Args:
                qty: Units to reserve.
            """
            self.state.__dict__["reserved"] += qty  # bypasses validate_assignment, as nested edits do
            return {"reserved": self.state.reserved}

    package = EnvPackage(
        root=tmp_path, manifest=Manifest(id="shelf", title="Shelf", kind="tool"), env_class=Shelf
    )
    session = Session.create(package, tmp_path / "s")
    assert session.call("reserve", {"qty": 2}) == {"reserved": 2}
    committed = session.state_hash()
    result = session.call("reserve", {"qty": 10})
    assert result["error"]["category"] == "internal_error"
    assert session.state_hash() == committed
    assert session.call("reserve", {"qty": 3}) == {"reserved": 5}


INTERRUPTED = '''
from envcraft import Environment, StateModel, tool


class Box(StateModel):
    items: list[str] = []


class Boxes(Environment):
    """A tool interrupted half way (Ctrl-C)."""

    State = Box

    @tool
    def put(self, item: str) -> dict:
        """Put an item, then get interrupted.

        Args:
            item: What.
        """
        self.state.items.append(item)
        raise KeyboardInterrupt
'''


@pytest.mark.parametrize("durable", [False, True])
def test_an_interrupt_undoes_the_call_and_propagates(
    make_env: Callable[..., Path], tmp_path: Path, durable: bool
) -> None:
    """Regression: Session.call turned KeyboardInterrupt into internal_error, so Ctrl-C was lost."""
    package = make_env(INTERRUPTED, env_id="boxes")
    session = Session.create(package, tmp_path / "s") if durable else Session.memory(package)
    before = session.state_hash()
    with pytest.raises(KeyboardInterrupt):
        session.call("put", {"item": "x"})
    assert session.state_hash() == before and session.state() == {"items": []}
    assert session.actions() == []
    assert session.call("put", {"item": 7})["error"]["category"] == "invalid_argument"  # lock released
