"""A foreign object kept live between calls, for environments that wrap another program's class.

BFCL's backends are plain Python classes. Rebuilding one from the session state before every
call and encoding it back after costs O(state) twice per call; an environment with a
``live_codec`` instead keeps the object itself between calls (``env.live``) and turns it into
its ``State`` model only when the state is asked for.

Nothing is copied per call either. The tree keeps a *checkpoint* (a snapshot, e.g. a pickle)
and the successful calls made since; environments are deterministic transition functions, so
the object at any version is the checkpoint with those calls replayed:

* a failed call is undone by restoring the checkpoint and replaying the calls before it;
* the pre-call object (``env.live_before()``) is rebuilt the same way, when a tool asks;
* the canonical JSON and hash are computed lazily, an earlier version's by replaying up to it;
* after :data:`CHECKPOINT_EVERY` calls a new checkpoint bounds what an undo replays.

Determinism is the contract of every environment; with ``ENVCRAFT_CHECK_STATE=1`` every replay
must also reproduce the call's result, else :class:`~envcraft.core.statetree.StateCheckFailed`.
The ``State`` model validates the encoded object when the state is serialized, not per call.
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from envcraft.core.state import canonical_json, strict_copy
from envcraft.core.statetree import CHECK_ENV, StateCheckFailed

CHECKPOINT_EVERY = 32


class LiveCodec(Protocol):
    """How an environment's live object relates to its ``State`` model."""

    def open(self, state: BaseModel) -> tuple[Any, bytes]:
        """The live object a (validated) state model describes, and its snapshot."""
        ...

    def dump(self, live: Any) -> dict[str, Any]:
        """The live object as the state's JSON data (what ``State`` validates)."""
        ...

    def snapshot(self, live: Any) -> bytes:
        """An exact copy of the live object (it must round-trip through ``restore``)."""
        ...

    def restore(self, snapshot: bytes) -> Any:
        """A live object equal to the one ``snapshot`` was taken of."""
        ...


Call = tuple[str, Any, int]  # tool, arguments, action index
Replay = Callable[[Any, Call], dict[str, Any]]  # (live object, call) -> the call's result


@dataclass
class _Checkpoint:
    version: int
    snapshot: bytes
    calls: list[tuple[Call, dict[str, Any]]] = field(default_factory=list)  # each made a version


class LiveTree:
    """The state path of a live-object environment (the same interface as ``StateTree``).

    ``replay(live, call)`` runs one logged call again on ``live`` (the session passes one that
    goes through the environment's dispatch with the call's action index).
    """

    def __init__(self, state_class: type[BaseModel], holder: Any, codec: LiveCodec, replay: Replay) -> None:
        self.state_class = state_class
        self.holder = holder
        self.codec = codec
        self.replay = replay
        self.version = 0
        self._checkpoints: list[_Checkpoint] = []  # the last one is current; older ones for hashes
        self._pending: tuple[Call, dict[str, Any]] | None = None
        self._hashes: dict[int, str] = {}
        self._text: tuple[int, bytes] | None = None
        self.check = os.environ.get(CHECK_ENV) == "1"

    @property
    def root(self) -> Any:
        self._model()
        return self.holder._state_root

    # -- loading ---------------------------------------------------------------------------
    def load_json(self, text: str | bytes, digest: str | None = None) -> None:
        model = self.state_class.model_validate_json(text)
        raw = text.encode("utf-8") if isinstance(text, str) else text
        self._install(model, raw, digest)

    def load_data(self, data: Any) -> None:
        self._install(self.state_class.model_validate(data), None, None)

    def load_model(self, model: BaseModel) -> None:
        self.load_json(canonical_json(model.model_dump(mode="json")))

    def _install(self, model: BaseModel, text: bytes | None, digest: str | None) -> None:
        self.holder._state_root = model
        self.holder.live, snapshot = self.codec.open(model)
        self.version += 1
        self._checkpoints = [_Checkpoint(self.version, snapshot)]
        self._text = None
        if text is not None:
            self._text = (self.version, text)
            self._hashes[self.version] = digest or hashlib.sha256(text).hexdigest()

    # -- one call --------------------------------------------------------------------------
    def begin(self) -> None:
        self.holder.live_before = self._before

    def finish(self, call: Call | None = None, result: dict[str, Any] | None = None) -> bool:
        """The call succeeded: it makes a version (whether it changed the object is not
        known without serializing it, and a version that did not has the same hash)."""
        self.holder.live_before = None
        if call is None:
            raise StateCheckFailed("a live-object call must be recorded to be replayable")
        tool, args, index = call
        kept = _copy(result) if self.check and result is not None else {}
        self._pending = ((tool, _copy(args), index), kept)
        return True

    def rollback(self) -> None:
        self.holder.live_before = None
        self._pending = None
        self._text = None
        self.holder.live = self._rebuild(self._checkpoints[-1], len(self._checkpoints[-1].calls))

    def accept(self, digest: str | None = None) -> None:
        if self._pending is None:
            return
        current = self._checkpoints[-1]
        current.calls.append(self._pending)
        self._pending = None
        self.version += 1
        if digest is not None:
            self._hashes[self.version] = digest
        if len(current.calls) >= CHECKPOINT_EVERY:
            self._checkpoints.append(_Checkpoint(self.version, self.codec.snapshot(self.holder.live)))
        self._forget_resolved()

    def _before(self) -> Any:
        """The object as it was before the running call (rebuilt; the live one is untouched)."""
        current = self._checkpoints[-1]
        return self._rebuild(current, len(current.calls))

    def _rebuild(self, checkpoint: _Checkpoint, calls: int) -> Any:
        asking, self.holder.live_before = self.holder.live_before, None  # replays never ask back
        try:
            live = self.codec.restore(checkpoint.snapshot)
            for call, result in checkpoint.calls[:calls]:
                self._replay(live, call, result)
        finally:
            self.holder.live_before = asking
        return live

    def _replay(self, live: Any, call: Call, result: dict[str, Any]) -> None:
        again = self.replay(live, call)
        if self.check and again != result:
            raise StateCheckFailed(f"replaying {call[0]} gave another result: the code is not deterministic")

    def _forget_resolved(self) -> None:
        """Drop the checkpoints no unknown hash needs (the current one always stays)."""
        while len(self._checkpoints) > 1:
            oldest, following = self._checkpoints[0], self._checkpoints[1]
            if any(v not in self._hashes for v in range(oldest.version, following.version)):
                return
            del self._checkpoints[0]

    # -- canonical text and hashes ----------------------------------------------------------
    def _model(self) -> BaseModel:
        """The current live object as a validated ``State`` model (bound as ``env.state``)."""
        model = self.state_class.model_validate(self.codec.dump(self.holder.live))
        self.holder._state_root = model
        return model

    def _text_of(self, live: Any) -> bytes:
        model = self.state_class.model_validate(self.codec.dump(live))
        return canonical_json(model.model_dump(mode="json")).encode("utf-8")

    def canonical(self) -> bytes:
        version = self.version + (self._pending is not None)  # a finished call's, once accepted
        if self._text is not None and self._text[0] == version:
            return self._text[1]
        text = canonical_json(self._model().model_dump(mode="json")).encode("utf-8")
        self._text = (version, text)
        return text

    def digest(self) -> str:
        found = self._hashes.get(self.version)
        if found is None:
            found = self._hashes[self.version] = hashlib.sha256(self.canonical()).hexdigest()
            self._forget_resolved()
        return found

    def digest_of(self, version: int) -> str:
        """The hash of an earlier version: replay from its checkpoint, hashing every unknown
        version on the way."""
        found = self._hashes.get(version)
        if found is not None:
            return found
        if version == self.version:
            return self.digest()
        checkpoint = next((c for c in reversed(self._checkpoints) if c.version <= version), None)
        if checkpoint is None:
            raise KeyError(f"version {version} is no longer known")
        live = self.codec.restore(checkpoint.snapshot)
        for offset in range(version - checkpoint.version + 1):
            if offset:
                self._replay(live, *checkpoint.calls[offset - 1])
            at = checkpoint.version + offset
            if at not in self._hashes:
                self._hashes[at] = hashlib.sha256(self._text_of(live)).hexdigest()
        self._forget_resolved()
        return self._hashes[version]


def _copy(value: Any) -> Any:
    """A copy the caller cannot change later (JSON in, JSON out; anything else deep-copied)."""
    try:
        return strict_copy(value)
    except (TypeError, ValueError, RecursionError):
        return copy.deepcopy(value)
