"""Several processes on one durable session: serialized, lossless, with a bounded lock wait."""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest
from filelock import FileLock

from envcraft.core import ErrorCategory, Session, SessionError

FORK = multiprocessing.get_context("fork")
WORKERS = 4
CALLS = 200


def _increment_many(directory: str, calls: int) -> None:
    """Child: ``calls`` increments; exit 1 on any error result so the parent sees it."""
    session = Session.open(directory, lock_timeout=120)
    for _ in range(calls):
        result = session.call("increment", {"name": "hits"})
        if "error" in result:
            print(json.dumps(result), file=sys.stderr)
            sys.exit(1)


def test_four_processes_lose_no_increment(counter_pkg: Path, tmp_path: Path) -> None:
    root = tmp_path / "shared"
    Session.create(counter_pkg, root)
    workers = [FORK.Process(target=_increment_many, args=(str(root), CALLS)) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert [w.exitcode for w in workers] == [0] * WORKERS

    session = Session.open(root)
    total = WORKERS * CALLS
    assert session.state()["counters"] == {"hits": total}
    lines = (root / "actions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == total
    entries = [json.loads(line) for line in lines]
    assert [e["index"] for e in entries] == list(range(total))
    # Linearizable: the i-th logged call saw exactly i earlier increments.
    assert [e["result"]["value"] for e in entries] == list(range(1, total + 1))
    assert entries[-1]["state_hash"] == session.state_hash()
    assert len({e["state_hash"] for e in entries}) == total


def _hold_lock(lock_path: str, held: Event, release: Event) -> None:
    with FileLock(lock_path):
        held.set()
        release.wait(60)


@pytest.fixture
def held_session(counter_pkg: Path, tmp_path: Path) -> Iterator[tuple[Path, Session]]:
    """A session whose ``.lock`` another process holds until the test ends."""
    root = tmp_path / "busy"
    Session.create(counter_pkg, root)
    held, release = FORK.Event(), FORK.Event()
    holder = FORK.Process(target=_hold_lock, args=(str(root / ".lock"), held, release))
    session = Session.open(root, lock_timeout=0.3)  # opened before the lock is taken
    holder.start()
    assert held.wait(30), "the holder never got the lock"
    yield root, session
    release.set()
    holder.join(timeout=30)


def test_held_lock_gives_a_bounded_structured_lock_timeout(held_session: tuple[Path, Session]) -> None:
    root, session = held_session
    before = (root / "state.json").read_bytes()
    started = time.monotonic()
    result = session.call("increment", {"name": "a"})
    waited = time.monotonic() - started
    assert result["error"]["category"] == ErrorCategory.LOCK_TIMEOUT
    assert waited >= 0.3, "it gave up before its bound"
    assert waited < 10, "the lock wait is not bounded"
    text = json.dumps(result)
    assert ".lock" not in text and str(root) not in text, "the error exposes the lock path"
    assert (root / "state.json").read_bytes() == before
    assert (root / "actions.jsonl").read_bytes() == b"", "a call that never ran was logged"


def test_opening_a_busy_session_is_a_lock_timeout(held_session: tuple[Path, Session]) -> None:
    root, _ = held_session
    with pytest.raises(SessionError) as caught:
        Session.open(root, lock_timeout=0.2)
    assert caught.value.to_result()["error"]["category"] == ErrorCategory.LOCK_TIMEOUT
    assert str(root) not in str(caught.value)


def test_lock_released_after_timeout_lets_the_next_call_run(counter_pkg: Path, tmp_path: Path) -> None:
    root = tmp_path / "s"
    Session.create(counter_pkg, root)
    session = Session.open(root, lock_timeout=0.2)
    held, release = FORK.Event(), FORK.Event()
    holder = FORK.Process(target=_hold_lock, args=(str(root / ".lock"), held, release))
    holder.start()
    assert held.wait(30)
    assert session.call("increment", {"name": "a"})["error"]["category"] == "lock_timeout"
    release.set()
    holder.join(timeout=30)
    assert session.call("increment", {"name": "a"}) == {"name": "a", "value": 1}
    assert [e["index"] for e in session.actions()] == [0]
