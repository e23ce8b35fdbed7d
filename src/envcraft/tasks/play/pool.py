"""In-memory sessions reused across the many plays of one S0.

The data engine plays every candidate task dozens of times from the same S0 (golden runs and
their replays, shifted and idle replays, the scripted adversarial agents), and opening a
session costs a whole-state validation and the adoption of every node into a tracked tree:
for a 70 KiB itinerary state that is most of a short play. A :class:`SessionPool` keeps the
sessions a play is done with, rewound to S0 by undoing the journals of its calls
(:meth:`Session.rewind`), and hands them to the next play of the same S0; the state, the log
and the action index are exactly those of a fresh session. A session that cannot go back (a
change the tree checked as a whole state) is dropped, and the next play opens a fresh one.

The key is the package and the S0's JSON text, so a state dict changed in place between
plays is a different S0. The workspace is not pooled: a Claw play populates its own
directory as before and the session is bound to it (:meth:`Session.bind_workspace`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from envcraft.core.package import EnvPackage
from envcraft.core.session import Session

KEYS = 16  # distinct S0s kept (least recently used dropped first)
PER_KEY = 4  # rewound sessions kept per S0 (a task's envs are played one episode at a time)

_Key = tuple[int, bytes]


class SessionPool:
    """Rewound in-memory sessions by (package, S0); safe to share between threads."""

    def __init__(self, keys: int = KEYS, per_key: int = PER_KEY) -> None:
        self.keys = keys
        self.per_key = per_key
        self._idle: OrderedDict[_Key, tuple[EnvPackage, list[Session]]] = OrderedDict()
        self._lock = threading.Lock()
        self.opened = self.reused = 0

    def open(self, package: EnvPackage, state: Mapping[str, Any], workspace_dir: Path | None) -> Session:
        """A session at ``state`` (``ValueError`` if it does not validate), from the pool when
        one was released; a Claw session acts on ``workspace_dir`` (populated by the caller)."""
        try:
            key: _Key | None = (id(package), orjson.dumps(state))
        except TypeError:  # not JSON data: no key to share it by
            key = None
        session = None
        if key is not None:
            with self._lock:
                entry = self._idle.get(key)
                if entry is not None and entry[1]:
                    session = entry[1].pop()
                    self._idle.move_to_end(key)
        if session is not None:
            self.reused += 1
            if workspace_dir is not None:
                session.bind_workspace(workspace_dir)
        else:
            self.opened += 1
            session = Session.memory(package, state=dict(state), files={}, workspace_dir=workspace_dir)
            if key is not None:
                session.mark()
        # the lease rides on the session: no table of lent sessions to outlive a lost one, and no
        # weak-reference callbacks (a Ctrl-C that lands in one is swallowed by the interpreter)
        session.lease = (self, key, package) if key is not None else None
        return session

    def release(self, session: Session) -> None:
        """Done with ``session``: rewound and kept for the next play of its S0, or closed."""
        lease, session.lease = session.lease, None
        if lease is None or lease[0] is not self or not session.rewind():
            session.close()
            return
        _, key, package = lease
        with self._lock:
            entry = self._idle.setdefault(key, (package, []))
            self._idle.move_to_end(key)
            kept = len(entry[1]) < self.per_key
            if kept:
                entry[1].append(session)
            while len(self._idle) > self.keys:
                self._idle.popitem(last=False)
        if not kept:
            session.close()


default_pool = SessionPool()
