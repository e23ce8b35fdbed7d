"""The diff's shortcut over strictly equal subtrees gives exactly what walking every leaf gives,
including its type-strictness (1 against 1.0 or True is a change)."""

from __future__ import annotations

import copy
import random
from typing import Any

from envcraft.core.pointer import escape_token
from envcraft.core.state import diff


def core_diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """The reference: the diff walking every leaf (what ``diff`` was before its shortcut)."""
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}/{escape_token(str(key))}"
            if key not in after:
                changes.append({"op": "removed", "path": sub, "before": before[key], "after": None})
            elif key not in before:
                changes.append({"op": "added", "path": sub, "before": None, "after": after[key]})
            else:
                changes.extend(core_diff(before[key], after[key], sub))
        return changes
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        pairs = enumerate(zip(before, after, strict=True))
        return [change for i, (b, a) in pairs for change in core_diff(b, a, f"{path}/{i}")]
    if before == after and type(before) is type(after):
        return []
    return [{"op": "changed", "path": path, "before": before, "after": after}]


LEAVES: list[Any] = [0, 1, 1.0, True, False, None, "", "a", "1", 2.5, 10**30]


def _random_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(LEAVES)
    if roll < 0.7:
        return {rng.choice("abc/~d"): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _mutate(rng: random.Random, value: Any) -> Any:
    """A copy with a few leaves swapped for look-alikes (1 -> 1.0 -> True), keys added or dropped,
    or dict keys reordered (equal dicts whose JSON bytes differ)."""
    if isinstance(value, dict):
        out = {k: _mutate(rng, v) if rng.random() < 0.5 else v for k, v in value.items()}
        if rng.random() < 0.2:
            out[rng.choice("xyz")] = rng.choice(LEAVES)
        if out and rng.random() < 0.1:
            out.pop(rng.choice(sorted(out)))
        if rng.random() < 0.3:
            out = dict(reversed(list(out.items())))
        return out
    if isinstance(value, list):
        out_list = [_mutate(rng, v) if rng.random() < 0.5 else v for v in value]
        if rng.random() < 0.1:
            out_list.append(rng.choice(LEAVES))
        return out_list
    return rng.choice(LEAVES) if rng.random() < 0.5 else value


def test_same_entries_in_the_same_order_as_the_core_diff() -> None:
    rng = random.Random(7)
    differing = 0
    for _ in range(3000):
        before = {"records": _random_value(rng, 0), "n": rng.choice(LEAVES)}
        after = _mutate(rng, copy.deepcopy(before))
        expected = core_diff(before, after)
        assert diff(before, after) == expected
        assert diff(before, copy.deepcopy(before)) == core_diff(before, copy.deepcopy(before)) == []
        differing += bool(expected)
    assert differing > 1000  # the generator does produce changes, not only equal pairs


def test_look_alike_values_inside_equal_containers_still_count_as_changes() -> None:
    before = {"a": {"x": [1, {"y": True}]}, "b": {"k": 0}}
    after = {"a": {"x": [1.0, {"y": 1}]}, "b": {"k": 0}}
    assert before == after  # Python equality alone would skip this subtree
    assert diff(before, after) == core_diff(before, after)
    assert [c["path"] for c in diff(before, after)] == ["/a/x/0", "/a/x/1/y"]
