"""The episodes an MCP server keeps: one per client connection, opened fresh from S0.

A server serves either a task (``--task TASKS ID``: each connection plays the task from its
S0, turn by turn) or an environment (``ENV``: each connection gets a session from the
environment's seeded S0, nothing to score). :class:`EpisodeTable` maps a connection key to
its :class:`~envcraft.tasks.play.episode.Episode`; calls on one episode are serialized, episodes
of different connections share nothing but the process.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envcraft.core.errors import ErrorCategory, error_result
from envcraft.core.package import EnvPackage
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.verifier.scoring import run_verifier

MAX_EPISODES = 256
IDLE_SECONDS = 30 * 60  # an episode nobody called for this long is closed (legacy HTTP clients vanish)


@dataclass
class Source:
    """What each connection plays: a task, or an environment's seeded S0."""

    profile: str
    task: Task | None = None
    package: EnvPackage | None = None
    seed: int = 0

    def open(self) -> Episode:
        if self.task is not None:
            return Episode.open(self.task, profile=self.profile)
        assert self.package is not None
        initial = self.package.env_class.generate(seed=self.seed)
        state = initial.state.model_dump(mode="json")
        return Episode(
            {self.package.id: self.package},
            {self.package.id: state},
            {**self.package.workspace_template, **initial.files},
            profile=self.profile,
        )

    @property
    def label(self) -> str:
        return f"task {self.task.id}" if self.task is not None else f"environment {self.package.id}"  # type: ignore[union-attr]


@dataclass
class Slot:
    episode: Episode
    lock: threading.Lock = field(default_factory=threading.Lock)
    used: float = field(default_factory=time.monotonic)


class EpisodeTable:
    """Connection key -> episode, opened on first use; thread-safe."""

    def __init__(self, source: Source, clock: Callable[[], float] = time.monotonic) -> None:
        self.source = source
        self._slots: dict[str, Slot] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def new_key(self) -> str:
        """A fresh episode handle (for clients that carry it, e.g. in ``Envcraft-Episode``)."""
        key = f"ep-{uuid.uuid4().hex}"
        self._slot(key)
        return key

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._slots)

    def run(self, key: str, work: Callable[[Episode], Any]) -> Any:
        """``work(episode)`` on ``key``'s episode (opened if new), one call at a time."""
        slot = self._slot(key)
        with slot.lock:
            slot.used = self._clock()
            return work(slot.episode)

    def known(self, key: str) -> bool:
        with self._lock:
            return key in self._slots

    def reset(self, key: str) -> Episode:
        """Close ``key``'s episode and open a fresh one from S0 under the same key."""
        fresh = self.source.open()
        with self._lock:
            old = self._slots.get(key)
            self._slots[key] = Slot(fresh)
        if old is not None:
            with old.lock:
                old.episode.close()
        return fresh

    def close(self, key: str) -> bool:
        with self._lock:
            slot = self._slots.pop(key, None)
        if slot is None:
            return False
        with slot.lock:
            slot.episode.close()
        return True

    def close_all(self) -> None:
        for key in self.keys():
            self.close(key)

    def _slot(self, key: str) -> Slot:
        with self._lock:
            slot = self._slots.get(key)
            if slot is not None:
                return slot
        self._sweep()
        fresh = Slot(self.source.open())
        with self._lock:
            if len(self._slots) >= MAX_EPISODES:
                fresh.episode.close()
                raise TableFull(f"this server holds {MAX_EPISODES} episodes; close one first")
            return self._slots.setdefault(key, fresh)

    def _sweep(self) -> None:
        now = self._clock()
        with self._lock:
            idle = [k for k, s in self._slots.items() if now - s.used > IDLE_SECONDS]
        for key in idle:
            self.close(key)


class TableFull(RuntimeError):
    """No room for another episode."""


def score(source: Source, episode: Episode) -> dict[str, Any]:
    """The task's verifier on the episode so far: ``{"score", "components"}`` (+ ``error``)."""
    if source.task is None:
        return error_result(
            ErrorCategory.INVALID_ARGUMENT, "this server serves an environment, not a task: nothing to score"
        )
    return run_verifier(source.task, episode.outcome()).to_json()
