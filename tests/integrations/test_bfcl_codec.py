"""BFCL instances as state: the object-graph encoding keeps what BFCL's behaviour depends on."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcraft.core.state import canonical_json
from envcraft.integrations.bfcl import objgraph

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from envcraft.integrations.bfcl import source, state


def _no_objects(value: Any) -> None:
    return None


def _through_json(document: dict[str, Any]) -> dict[str, Any]:
    """Encode, persist as the runtime does (canonical JSON: keys sorted), decode."""
    encoded = objgraph.encode(document, _no_objects)
    return objgraph.decode(json.loads(canonical_json(encoded)), lambda n: None, lambda n, p: None)


def _shape(value: Any) -> Any:
    """Value plus everything == ignores: exact types and dict key order."""
    if isinstance(value, dict):
        return ("dict", [(_shape(k), _shape(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(v) for v in value])
    if isinstance(value, set):
        return ("set", sorted(map(repr, value)))
    return (type(value).__name__, value)


keys = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.sampled_from(["$order", "$ref", "a/b", "~x"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(keys, inner, max_size=4),
        st.tuples(scalars, scalars),
        st.frozensets(st.integers(0, 50), max_size=4).map(set),
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), values, max_size=5))
def test_values_survive_canonical_json_with_types_and_order(document: dict[str, Any]) -> None:
    back = _through_json(document)
    assert back == document
    assert {k: _shape(v) for k, v in back.items()} == {k: _shape(v) for k, v in document.items()}


def test_sharing_and_cycles_survive() -> None:
    shared: list[int] = [1]
    node: dict[str, Any] = {"name": "n"}
    node["self"] = node
    back = _through_json({"a": {"x": shared}, "b": [shared, shared], "node": node})
    back["b"][0].append(2)
    assert back["a"]["x"] == [1, 2] and back["b"][1] is back["a"]["x"]
    assert back["node"]["self"] is back["node"]


def test_non_finite_floats_survive_a_json_library_that_writes_null() -> None:
    back = _through_json({"n": float("nan"), "x": [float("-inf")], "k": {float("inf"): 1}})
    assert math.isnan(back["n"]) and back["x"] == [float("-inf")] and back["k"] == {float("inf"): 1}


def test_a_shared_value_inside_a_tuple_is_refused() -> None:
    shared: list[int] = []
    with pytest.raises(objgraph.CodecError, match="tuple"):
        objgraph.encode({"a": shared, "b": (shared,)}, _no_objects)


def test_unknown_objects_are_refused() -> None:
    with pytest.raises(objgraph.CodecError, match="cannot encode"):
        objgraph.encode({"a": object()}, _no_objects)


SCENARIO = {
    "root": {
        "alex": {
            "type": "directory",
            "contents": {
                "docs": {"type": "directory", "contents": {"a.txt": {"type": "file", "content": "hello"}}},
                "z.txt": {"type": "file", "content": "zz"},
                "b.txt": {"type": "file", "content": "bb"},
            },
        }
    }
}


def _round_trip(name: str, instance: Any) -> Any:
    return state.restore(name, json.loads(canonical_json(state.instance_state(instance))))


def test_file_system_keeps_order_aliasing_and_working_directory() -> None:
    fs = state.load_initial("GorillaFileSystem", SCENARIO, long_context=False)
    fs.cp("docs", "copy")  # BFCL copies a directory shallowly: both share File objects
    fs.cd("docs")
    back = _round_trip("GorillaFileSystem", fs)
    assert back.pwd() == fs.pwd() == {"current_working_directory": "/alex/docs"}
    back.cd("..")
    assert back.ls() == {"current_directory_content": ["docs", "z.txt", "b.txt", "copy"]}
    back.cd("copy")
    back.echo("changed", "a.txt")
    back.cd("..")
    back.cd("docs")
    assert back.cat("a.txt") == {"file_content": "changed"}
    assert "_last_modified" not in canonical_json(state.instance_state(back))


def test_seeded_generators_continue_their_sequence() -> None:
    config = {"random_seed": 7, "user_map": {"Ann": "USR001"}, "current_user": "USR001"}
    original = state.load_initial("MessageAPI", config, long_context=False)
    original.add_contact("Bo")
    back = _round_trip("MessageAPI", original)
    assert back.send_message("USR001", "hi") == original.send_message("USR001", "hi")
    assert type(back._random) is random.Random


@pytest.mark.parametrize("name", source.CLASSES)
def test_every_class_round_trips_its_scenarios(name: str) -> None:
    entries = [
        e for c in ("base", "long_context") for e in source.load_entries(c) if name in e.involved_classes
    ]
    for entry in entries[:2] + entries[-2:]:
        instance = state.load_initial(name, entry.initial_config.get(name, {}), entry.long_context)
        encoded = canonical_json(state.instance_state(instance))
        assert canonical_json(state.instance_state(_round_trip(name, instance))) == encoded
        public = {k: v for k, v in vars(instance).items() if not k.startswith("_")}
        back = _round_trip(name, instance)
        assert {k: v for k, v in vars(back).items() if not k.startswith("_")} == public
