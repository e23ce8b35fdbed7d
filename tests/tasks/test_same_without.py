"""``same_without`` and the leaf-type check of ``same``: the fast paths of the verifier runtime
agree with their plain definitions (copy, remove the ignored paths, compare the JSON texts)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from envcraft.tasks.verifier import runtime as vr

KEYS = st.sampled_from(["a", "b", "id", "0", "1", "01", "x/y", "t~n", ""])
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, 2.5]),
    st.sampled_from(["", "a", "1"]),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
PARTS = st.sampled_from(["a", "b", "id", "0", "1", "2", "01", "x~1y", "t~0n", ""])
PATHS = st.lists(
    st.builds(
        lambda parts, slash: ("/" if slash else "") + "/".join(parts),
        st.lists(PARTS, max_size=3),
        st.booleans(),
    ),
    max_size=4,
)


def _plain_same(a: Any, b: Any) -> bool:
    """Equal JSON texts, types and float signs included (``1`` is not ``1.0`` nor ``True``)."""
    if a is vr.MISSING or b is vr.MISSING:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _edit(value: Any, data: st.DataObject) -> Any:
    """A copy of ``value`` with a few leaves or members changed (or none)."""
    value = copy.deepcopy(value)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            for key in list(node):
                if data.draw(st.integers(0, 5)) == 0:
                    del node[key]
                else:
                    node[key] = walk(node[key])
            if data.draw(st.integers(0, 6)) == 0:
                node[data.draw(KEYS)] = data.draw(LEAVES)
            return node
        if isinstance(node, list):
            return [walk(item) for item in node]
        return data.draw(LEAVES) if data.draw(st.integers(0, 4)) == 0 else node

    return walk(value)


@settings(max_examples=400, deadline=None)
@given(value=VALUES, paths=PATHS, data=st.data())
def test_same_without_is_same_on_copies_without_the_paths(
    value: Any, paths: list[str], data: st.DataObject
) -> None:
    other = _edit(value, data)
    try:
        expected: Any = vr.same(vr.without(value, paths), vr.without(other, paths))
    except ValueError as exc:  # e.g. a non-ASCII digit as a list index: the check scores 0 either way
        expected = type(exc)
    try:
        got: Any = vr.same_without(value, other, paths)
    except ValueError as exc:
        got = type(exc)
    assert got == expected


@settings(max_examples=400, deadline=None)
@given(value=VALUES, data=st.data())
def test_same_compares_leaf_types_as_the_json_texts_do(value: Any, data: st.DataObject) -> None:
    other = _edit(value, data)
    assert vr.same(value, other) == _plain_same(value, other)
    assert vr.same(value, copy.deepcopy(value))


def test_same_tells_number_kinds_and_zero_signs_apart() -> None:
    assert not vr.same({"n": [1]}, {"n": [1.0]})
    assert not vr.same({"n": {"m": 1}}, {"n": {"m": True}})
    assert not vr.same([0.0], [-0.0]) and vr.same([-0.0], [-0.0])
    assert not vr.same_without({"a": 1, "b": 2}, {"a": 1, "b": 3}, ["/a"])
    assert vr.same_without({"a": 1, "b": 2}, {"a": 5, "b": 2}, ["/a"])
