"""Crash safety of the durable store: SIGKILL at random instants never corrupts a session.

The invariant (docs/architecture.md): whenever a writer dies, ``state.json`` is the state
after some prefix of the logged actions, and the next transaction repairs the log tail
(a torn line, or one orphaned line whose state never landed).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from envcraft.core import Session, state_hash
from envcraft.core.state import sha256_text

KILLS = 200
FORK = multiprocessing.get_context("fork")


def _call_forever(directory: str, seed: int) -> None:
    """Child: open the shared session and loop a mix of succeeding and failing calls."""
    logging.disable(logging.CRITICAL)
    session = Session.open(directory, lock_timeout=60)
    rng = random.Random(seed)
    while True:
        roll = rng.random()
        if roll < 0.75:
            session.call("increment", {"name": rng.choice("abc"), "by": rng.randint(1, 9)})
        elif roll < 0.85:
            session.call("get", {"name": "missing"})  # not_found: logged, state unchanged
        elif roll < 0.95:
            session.call("explode", {})  # mutates then raises: rolled back
        else:
            session.call("increment", {"name": "a", "by": 0})  # refused by the tool


def _split_log(raw: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines (with newline) and the torn remainder (empty if none)."""
    *complete, torn = raw.split(b"\n")
    return [line + b"\n" for line in complete], torn


class Replayer:
    """Replays logged calls from S0 in memory, one committed line at a time."""

    def __init__(self, package: Path, initial: dict[str, Any]) -> None:
        self.session = Session.memory(package, state=initial)
        self.hashes = [self.session.state_hash()]

    def apply(self, entry: dict[str, Any]) -> None:
        assert entry["index"] == len(self.hashes) - 1, "log indices must be contiguous from 0"
        result = self.session.call(entry["tool"], entry["args"])
        assert result == entry["result"], f"replay of action {entry['index']} gave another result"
        self.hashes.append(self.session.state_hash())
        assert self.hashes[-1] == entry["state_hash"], f"replay of action {entry['index']} diverged"


def _check_after_kill(root: Path, replayer: Replayer, verified: list[bytes]) -> tuple[list[bytes], str]:
    """Verify the prefix invariant on the files a killed writer left; return the repaired log."""
    state_text = (root / "state.json").read_text(encoding="utf-8")
    json.loads(state_text)  # parses: a whole state, never a partial write
    current = sha256_text(state_text)
    lines, torn = _split_log((root / "actions.jsonl").read_bytes())
    assert lines[: len(verified)] == verified, "committed log lines were rewritten"
    entries = [json.loads(line) for line in lines]
    for entry in entries[len(verified) : -1]:  # every line but the last was followed by a commit
        replayer.apply(entry)
    outcome = "clean"
    if len(entries) > len(verified):
        last = entries[-1]
        if last["state_hash"] == current:
            replayer.apply(last)
        else:  # appended, but its writer died before replacing state.json
            outcome = "orphan"
    assert replayer.hashes[-1] == current, "state.json is not the state after a prefix of the log"
    if torn:
        outcome = "torn"

    Session.open(root)  # the next transaction repairs the tail (opening runs one)
    repaired, torn_after = _split_log((root / "actions.jsonl").read_bytes())
    assert not torn_after
    assert len(repaired) == len(replayer.hashes) - 1
    assert repaired == lines[: len(repaired)]
    assert (root / "state.json").read_text(encoding="utf-8") == state_text, "repair touched the state"
    assert not list(root.glob(".state.json.*.tmp")), "a dead writer's temp file was left behind"
    return repaired, outcome


def test_sigkill_at_random_instants_leaves_a_prefix_state(counter_pkg: Path, tmp_path: Path) -> None:
    root = tmp_path / "session"
    initial = {"counters": {"a": 1}, "history": []}
    Session.create(counter_pkg, root, state=initial)
    replayer = Replayer(counter_pkg, initial)
    assert replayer.hashes[0] == state_hash(initial)
    rng = random.Random(20260105)
    verified: list[bytes] = []
    outcomes: dict[str, int] = {}
    log = root / "actions.jsonl"
    for kill in range(KILLS):
        size = log.stat().st_size
        child = FORK.Process(target=_call_forever, args=(str(root), kill), daemon=True)
        child.start()
        # Kill at a random instant once the child is writing (under load its start-up alone can
        # outlast a fixed delay): then every kill lands among commits, wherever in them it falls.
        deadline = time.monotonic() + 10
        while log.stat().st_size == size and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(rng.uniform(0.0, 0.02))
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=30)
        assert child.exitcode == -signal.SIGKILL, "the child must die by SIGKILL, not by an exception"
        verified, outcome = _check_after_kill(root, replayer, verified)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert len(verified) >= KILLS // 4, f"too little progress to mean anything: {outcomes}"
    final = Session.open(root)
    assert final.state_hash() == replayer.hashes[-1]
    assert [e["index"] for e in final.actions()] == list(range(len(verified)))


def _logged(session: Session) -> list[int]:
    return [entry["index"] for entry in session.actions()]


def test_torn_last_line_is_dropped_by_the_next_call(counter_pkg: Path, tmp_path: Path) -> None:
    session = Session.create(counter_pkg, tmp_path / "s")
    session.call("increment", {"name": "a"})
    session.call("increment", {"name": "a"})
    log = tmp_path / "s" / "actions.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"index": 2, "tool": "increment", "args": {"na')
    result = Session.open(tmp_path / "s").call("increment", {"name": "a", "by": 5})
    assert result == {"name": "a", "value": 7}
    reopened = Session.open(tmp_path / "s")
    assert _logged(reopened) == [0, 1, 2]
    assert log.read_bytes().endswith(b"\n")
    assert reopened.actions()[-1]["state_hash"] == reopened.state_hash()


def test_orphan_line_is_dropped_by_the_next_call(counter_pkg: Path, tmp_path: Path) -> None:
    session = Session.create(counter_pkg, tmp_path / "s")
    session.call("increment", {"name": "a"})
    before = session.state()
    orphan = {
        "index": 1,
        "tool": "increment",
        "args": {"name": "a"},
        "result": {"name": "a", "value": 2},
        "state_hash": "0" * 64,
    }
    log = tmp_path / "s" / "actions.jsonl"
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(orphan) + "\n")
        handle.write('{"index": 2, "tool": "incr')  # and a torn line after it
    reopened = Session.open(tmp_path / "s")
    assert reopened.state() == before
    assert reopened.call("get", {"name": "a"}) == {"name": "a", "value": 1}
    entries = Session.open(tmp_path / "s").actions()
    assert [e["index"] for e in entries] == [0, 1]
    assert entries[1]["tool"] == "get"


def test_stale_state_temp_file_of_an_orphan_is_removed(counter_pkg: Path, tmp_path: Path) -> None:
    """A writer killed between its log append and ``os.replace`` leaves an orphan and a temp file."""
    session = Session.create(counter_pkg, tmp_path / "s")
    session.call("increment", {"name": "a"})
    orphan = {"index": 1, "tool": "increment", "args": {"name": "a"}, "result": {}, "state_hash": "f" * 64}
    with open(tmp_path / "s" / "actions.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(orphan) + "\n")
    stale = tmp_path / "s" / ".state.json.k1ll3d.tmp"
    stale.write_text('{"counters": {"a": 2}', encoding="utf-8")
    assert Session.open(tmp_path / "s").call("get", {"name": "a"}) == {"name": "a", "value": 1}
    assert not stale.exists()


def test_complete_line_matching_the_state_is_kept(counter_pkg: Path, tmp_path: Path) -> None:
    """A last line whose call changed nothing (an error, a read) is committed, not an orphan."""
    session = Session.create(counter_pkg, tmp_path / "s")
    session.call("increment", {"name": "a"})
    session.call("get", {"name": "nope"})
    log = tmp_path / "s" / "actions.jsonl"
    before = log.read_bytes()
    Session.open(tmp_path / "s").call("get", {"name": "a"})
    after = log.read_bytes()
    assert after.startswith(before)
    assert _logged(Session.open(tmp_path / "s")) == [0, 1, 2]
