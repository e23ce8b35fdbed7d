"""A rewound session is a fresh one: ``Session.mark`` / ``Session.rewind`` and the session pool.

Every built-in environment plays the same calls (its data engine's reference calls of a few
tasks, plus calls that fail) in a fresh session and in one rewound after other plays: the
results, the states, the logged state hashes and the workspace must be identical, with the
incremental state path checked against the whole state at every step.
"""

from __future__ import annotations

import logging
import random
import shutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import Session, builtin_ids, load_package
from envcraft.core.statetree import StateTree
from envcraft.core.workspace import Workspace
from envcraft.tasks.corpus import compose as synth
from envcraft.tasks.corpus.compose import SynthConfig, load_library
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.pool import SessionPool


@cache
def _tasks(env: str) -> list[Task]:
    logging.getLogger("envcraft").setLevel(logging.CRITICAL)
    library = load_library([env])
    return synth.synthesize_shard(library, env, 0, 3, SynthConfig(seed=5)).tasks


def _plays(env: str) -> list[tuple[dict[str, Any], dict[str, str], list[tuple[str, Any]]]]:
    """(S0, files, calls) per task: the reference calls of ``env`` with junk calls mixed in."""
    rng = random.Random(env)
    plays = []
    for task in _tasks(env):
        calls: list[tuple[str, Any]] = []
        for call in task.reference.calls:
            if call.env != env:
                continue
            if rng.random() < 0.3:
                calls.append((rng.choice(sorted(load_package(env).env_class.tools)), {"bogus": 1}))
            calls.append((call.tool, call.args))
        plays.append((task.initial_state[env], task.workspace, [*calls, *calls[:2]]))
    return plays


def _run(session: Session, calls: list[tuple[str, Any]]) -> dict[str, Any]:
    results = [session.call(tool, dict(args) if isinstance(args, dict) else args) for tool, args in calls]
    return {
        "results": results,
        "state": session.state(),
        "hash": session.state_hash(),
        "log": session.actions(),
        "files": session.files(),
    }


def _workspace(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    Workspace(root).populate(files)
    return root


@pytest.fixture(autouse=True)
def _checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ENVCRAFT_CHECK_STATE", "1")  # every step compared with the whole-state path
    yield


@pytest.mark.parametrize("env", builtin_ids())
def test_a_rewound_session_plays_as_a_fresh_one(env: str, tmp_path: Path) -> None:
    package = load_package(env)
    plays = _plays(env)
    assert plays, f"no task for {env}"
    for number, (state, files, calls) in enumerate(plays):
        fresh_dir = _workspace(tmp_path / f"fresh{number}", files)
        reused_dir = _workspace(tmp_path / f"reused{number}", files)
        with Session.memory(package, state=dict(state), files={}, workspace_dir=fresh_dir) as fresh:
            expected = _run(fresh, calls)
        reused = Session.memory(package, state=dict(state), files={}, workspace_dir=reused_dir)
        reused.mark()
        marked = _bookkeeping(reused)
        for other in (calls[::-1], calls[1:], calls):  # other plays first, each undone
            _run(reused, other)
            assert reused.rewind()
            assert _bookkeeping(reused) == marked  # which invariant checks read what, as at the mark
            assert reused.state() == state_of(package, state)
            assert reused.actions() == []
            _workspace_reset(reused_dir, files)
        assert _run(reused, calls) == expected


def _bookkeeping(session: Session) -> tuple[Any, ...]:
    tree = session._tree
    assert isinstance(tree, StateTree)
    readers = {
        key: {read: set(checks) for read, checks in table.items() if checks}
        for key, table in tree._deps.readers.items()
    }
    return tree.version, dict(tree._deps.reads), {k: v for k, v in readers.items() if v}, set(tree._owners)


def state_of(package: Any, state: dict[str, Any]) -> dict[str, Any]:
    with Session.memory(package, state=dict(state), files={}) as session:
        return session.state()


def _workspace_reset(root: Path, files: dict[str, str]) -> None:
    shutil.rmtree(root)
    _workspace(root, files)


def test_rewind_refuses_what_it_cannot_undo(tmp_path: Path) -> None:
    package = load_package("returns_desk")
    never_marked = Session.memory(package, seed=3)
    assert not never_marked.rewind()

    edited = Session.memory(package, seed=3)
    edited.mark()
    edited.env.state = edited.env.state.model_copy(deep=True)  # replaced outside any call
    assert not edited.rewind()

    durable = Session.create(package, tmp_path / "durable", seed=3)
    durable.mark()
    durable.call("list_orders", {})
    assert not durable.rewind()


def test_the_pool_hands_a_released_session_to_the_next_play_of_its_state() -> None:
    package = load_package("returns_desk")
    pool = SessionPool(keys=2, per_key=1)
    with Session.memory(package, seed=4) as source:
        state = source.state()
    first = pool.open(package, state, None)
    placed = next(o for o, order in state["orders"].items() if order["status"] == "placed")
    assert "error" not in first.call("cancel_order", {"order_id": placed, "reason": "changed my mind"})
    changed = first.state()
    pool.release(first)
    again = pool.open(package, state, None)
    assert again is first and again.state() == state != changed and again.actions() == []
    other = dict(state, next_refund_number=state["next_refund_number"] + 1)  # another S0: another session
    assert pool.open(package, other, None) is not first
    pool.release(again)
    state["next_return_number"] += 1  # the same dict changed in place is another S0 too
    assert pool.open(package, state, None) is not first
    assert (pool.opened, pool.reused) == (3, 1)
