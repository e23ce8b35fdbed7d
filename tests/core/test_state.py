"""Canonical state form, hash and diff (property-based), and workspace confinement."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envcraft.core import ErrorCategory, Session, ToolFailure, Workspace, canonical_json, diff, state_hash
from envcraft.core.state import MISSING, get_path, objects_in

KEYS = st.sampled_from(["", "/", "~", "~1", "a/b", "id", "é"]) | st.text(max_size=5)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    # -0.0 == 0.0 to Python (no diff) but not to JSON (another hash): normalize it away.
    | st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f + 0.0)
    | st.text(max_size=6)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=24,
)
STATES = st.dictionaries(KEYS, JSON, max_size=5)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (so ``1``, ``1.0`` and ``True`` are three different values)."""
    return canonical_json(a) == canonical_json(b)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _apply(value: Any, changes: list[dict[str, Any]]) -> Any:
    """An independent JSON-Pointer patcher for diff output."""
    result = copy.deepcopy(value)
    for change in changes:
        if change["path"] == "":
            result = copy.deepcopy(change["after"])
            continue
        parent_path, _, last = change["path"].rpartition("/")
        parent = get_path(result, parent_path)
        key: Any = int(last) if isinstance(parent, list) else _unescape(last)
        if change["op"] == "removed":
            del parent[key]
        else:
            parent[key] = copy.deepcopy(change["after"])
    return result


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _shuffled(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(max_examples=150, deadline=None)
@given(STATES, st.randoms(use_true_random=False))
def test_hash_is_stable_under_key_order(state: dict[str, Any], rng: random.Random) -> None:
    reordered = _shuffled(state, rng)
    assert state_hash(reordered) == state_hash(state)
    assert canonical_json(reordered) == canonical_json(state)
    text = canonical_json(state)
    assert state_hash(state) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert _same(json.loads(text), state), "canonical JSON must round-trip"


def test_canonical_json_is_compact_sorted_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": [True, None], "é": "ü"}) == '{"a":[true,null],"b":1,"é":"ü"}'
    assert state_hash({"a": 1}) != state_hash({"a": 1.0}) != state_hash({"a": True})


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_diff_of_a_value_with_itself_is_empty(value: Any) -> None:
    assert diff(value, value) == []
    assert diff(value, copy.deepcopy(value)) == []


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_applying_the_diff_reconstructs_after(before: Any, after: Any) -> None:
    changes = diff(before, after)
    assert _same(_apply(before, changes), after)
    assert (changes == []) == _same(before, after)


@settings(max_examples=300, deadline=None)
@given(STATES, STATES)
def test_each_change_points_at_its_before_and_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    changes = diff(before, after)
    paths = [c["path"] for c in changes]
    assert len(paths) == len(set(paths))
    for change in changes:
        at_before, at_after = get_path(before, change["path"]), get_path(after, change["path"])
        if change["op"] == "added":
            assert at_before is MISSING and _same(at_after, change["after"])
        elif change["op"] == "removed":
            assert at_after is MISSING and _same(at_before, change["before"])
        else:
            assert change["op"] == "changed"
            assert _same(at_before, change["before"]) and _same(at_after, change["after"])


def test_root_and_empty_key_have_distinct_paths() -> None:
    """Regression: the root used to be ``"/"``, which is also the path of the key ``""``."""
    assert diff(1, 2) == [{"op": "changed", "path": "", "before": 1, "after": 2}]
    assert diff({"": 1}, {"": 2})[0]["path"] == "/"
    assert get_path({"": 5}, "/") == 5
    assert get_path({"": {"": 6}}, "//") == 6
    assert get_path({"a": 1}, "") == {"a": 1}


def test_list_length_change_is_one_change() -> None:
    assert diff({"xs": [1, 2]}, {"xs": [0, 1, 2]}) == [
        {"op": "changed", "path": "/xs", "before": [1, 2], "after": [0, 1, 2]}
    ]
    assert diff({"xs": [1, 2]}, {"xs": [1, 3]}) == [
        {"op": "changed", "path": "/xs/1", "before": 2, "after": 3}
    ]


# -- workspace confinement ----------------------------------------------------------------------
def _denied(action: Callable[[], object]) -> dict[str, Any]:
    with pytest.raises(ToolFailure) as caught:
        action()
    assert caught.value.category == ErrorCategory.PERMISSION_DENIED
    return caught.value.to_result()["error"]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "ws" / "docs").mkdir(parents=True)
    (tmp_path / "ws" / "docs" / "a.txt").write_text("inside", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    return Workspace(tmp_path / "ws")


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "~/x", "../secret.txt", "docs/../../secret.txt", "a/../b", ".."]
)
def test_absolute_and_parent_paths_are_denied(workspace: Workspace, path: str) -> None:
    _denied(lambda: workspace.read_text(path))
    _denied(lambda: workspace.write_text(path, "x"))
    assert not workspace.dirty


def test_symlinks_leaving_the_workspace_are_denied(workspace: Workspace, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", workspace.root / "link.txt")
    os.symlink(tmp_path, workspace.root / "outdir")
    os.symlink(workspace.root / "docs" / "a.txt", workspace.root / "ok.txt")
    error = _denied(lambda: workspace.read_text("link.txt"))
    assert "outside" not in json.dumps(error)
    _denied(lambda: workspace.write_text("outdir/new.txt", "x"))
    _denied(lambda: workspace.read_text("outdir/secret.txt"))
    assert workspace.read_text("ok.txt") == "inside"
    assert not (tmp_path / "new.txt").exists()


def test_a_symlink_is_in_the_snapshot_unfollowed(workspace: Workspace, tmp_path: Path) -> None:
    """An agent's ``ln -s`` is a new path of the workspace (round 52, R3: it passed "no other
    workspace file created"); the link is never followed, inside or out."""
    os.symlink("docs/a.txt", workspace.root / "current.txt")
    os.symlink(tmp_path / "secret.txt", workspace.root / "out.txt")
    files = workspace.snapshot()
    assert files["current.txt"] == "<symlink to docs/a.txt>" and files["docs/a.txt"] == "inside"
    assert files["out.txt"] == f"<symlink to {tmp_path / 'secret.txt'}>"
    assert "outside" not in files.values()


def test_nul_byte_is_invalid(workspace: Workspace) -> None:
    with pytest.raises(ToolFailure) as caught:
        workspace.read_text("docs/a\x00.txt")
    assert caught.value.category == ErrorCategory.INVALID_ARGUMENT


def test_writes_are_staged_until_commit(workspace: Workspace) -> None:
    workspace.write_text("notes/new.txt", "draft")
    workspace.delete("docs/a.txt")
    assert workspace.read_text("notes/new.txt") == "draft"
    assert workspace.list() == ["notes/new.txt"]
    assert not (workspace.root / "notes").exists()
    workspace.rollback()
    assert workspace.snapshot() == {"docs/a.txt": "inside"}
    workspace.write_text("notes/new.txt", "final")
    workspace.commit()
    assert workspace.snapshot() == {"docs/a.txt": "inside", "notes/new.txt": "final"}


CLAW_PROBE = '''
from envcraft import tool
from envcraft.sandbox.claw import ClawEnvironment


class Notes(ClawEnvironment):
    """A claw probe: one domain tool that writes a file and then may refuse."""

    @tool
    def save_then_refuse(self, path: str) -> dict:
        """Write a file, then fail.

        Args:
            path: Where.
        """
        self.workspace.write_text(path, "half-done")
        self.fail("conflict", "refused")
'''


def test_claw_session_confines_and_rolls_back(make_env: Callable[..., Path], tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    package = make_env(CLAW_PROBE, env_id="notes", kind="claw")
    with Session.memory(package, files={"a.txt": "hello"}, workspace_dir=tmp_path / "ws") as session:
        escape = session.call("read_file", {"path": "../secret.txt"})
        assert escape["error"]["category"] == "permission_denied"
        assert "outside" not in json.dumps(escape)
        refused = session.call("save_then_refuse", {"path": "b.txt"})
        assert refused["error"]["category"] == "conflict"
        assert session.files() == {"a.txt": "hello"}
        assert session.call("write_file", {"path": "c/d.txt", "content": "ok"})["created"] is True
        assert session.files() == {"a.txt": "hello", "c/d.txt": "ok"}


def test_atomic_write_gives_the_mode_a_plain_open_would(tmp_path):
    import os

    from envcraft.core.workspace import atomic_write_bytes

    atomic_write_bytes(tmp_path / "out.json", b"{}")
    (tmp_path / "plain.json").write_bytes(b"{}")
    assert os.stat(tmp_path / "out.json").st_mode & 0o777 == os.stat(tmp_path / "plain.json").st_mode & 0o777


def test_misfiled_names_records_filed_under_another_id():
    from types import SimpleNamespace

    from envcraft.core import misfiled

    orders = {"ORD-1": SimpleNamespace(order_id="ORD-1"), "ORD-2": SimpleNamespace(order_id="ORD-9")}
    assert misfiled(orders, "order_id") == ["ORD-2 holds 'ORD-9'"]
    assert misfiled({}, "order_id") == []


def test_dangling_names_links_to_records_that_do_not_exist():
    from envcraft.core import dangling

    members = {"MEM-1": object()}
    found = dangling("BK-7", "member", ["MEM-1", "MEM-2"], members)
    assert found == ["BK-7 refers to unknown member 'MEM-2'"]
    assert dangling("BK-7", "member", [], members) == []


def test_a_mode_its_owner_cannot_use_is_in_the_snapshot(workspace: Workspace) -> None:
    """``chmod 000`` of a file the user did not ask about changed nothing the snapshot saw
    (round 52, R4); an unreadable file or directory, or a read-only one, now shows, whether or
    not the process reading it is root, and an unreadable one never fails the snapshot."""
    before = workspace.snapshot()
    (workspace.root / "sub").mkdir()
    (workspace.root / "sub" / "x.txt").write_text("hidden")
    (workspace.root / "locked.txt").write_text("secret")
    (workspace.root / "frozen.txt").write_text("kept")
    os.chmod(workspace.root / "locked.txt", 0)
    os.chmod(workspace.root / "frozen.txt", 0o444)
    os.chmod(workspace.root / "sub", 0o300)
    try:
        files = workspace.snapshot()
    finally:
        os.chmod(workspace.root / "sub", 0o755)
    assert files["locked.txt"] == "<unreadable file (mode 0o0)>"
    assert files["frozen.txt"] == "kept\n<read-only (mode 0o444)>"
    assert files["sub/"] == "<unreadable directory (mode 0o300)>" and "sub/x.txt" not in files
    assert {k: v for k, v in files.items() if k in before} == before


def test_objects_in_lists_every_object_at_any_depth_the_outer_first() -> None:
    rows = [{"topic": "payments", "partition": 0, "lag": 49}, {"topic": "refunds", "segments": [{"n": 1}]}]
    answer = {"group": "sink", "partitions": rows}
    assert objects_in(answer) == [answer, rows[0], rows[1], {"n": 1}]
    assert objects_in([1, "a", None]) == [] and objects_in("text") == []
