"""A foreign object kept live between calls, for environments that wrap another program's class.

BFCL's backends are plain Python classes. Rebuilding one from the session state before every
call and encoding it back after costs O(state) twice per call; an environment with a
``live_codec`` instead keeps the object itself between calls (``env.live``) and turns it into
its ``State`` model only when the state is asked for. Per call it pays one snapshot (a pickle,
which is both the undo point of the next call and the record of this version), so:

* a failed call is undone by restoring the snapshot taken before it;
* a call whose snapshot equals the one before changed nothing;
* the canonical JSON and hash are computed lazily (durable commit, end of turn, when asked);
  an earlier version's hash is computed from its snapshot.

The ``State`` model validates the dumped object when the state is serialized, not per call:
the commit-time check of a live object is that it can still be snapshotted.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

from pydantic import BaseModel

from envcraft.core.state import canonical_json
from envcraft.core.statetree import StateRejected


class LiveCodec(Protocol):
    """How an environment's live object relates to its ``State`` model."""

    def open(self, state: BaseModel) -> tuple[Any, bytes]:
        """The live object a (validated) state model describes, and its snapshot."""
        ...

    def dump(self, live: Any) -> dict[str, Any]:
        """The live object as the state's JSON data (what ``State`` validates)."""
        ...

    def snapshot(self, live: Any) -> bytes:
        """An exact, cheap copy of the live object (it must round-trip through ``restore``)."""
        ...

    def restore(self, snapshot: bytes) -> Any:
        """A live object equal to the one ``snapshot`` was taken of."""
        ...


class LiveTree:
    """The state path of a live-object environment (the same interface as ``StateTree``)."""

    def __init__(self, state_class: type[BaseModel], holder: Any, codec: LiveCodec) -> None:
        self.state_class = state_class
        self.holder = holder
        self.codec = codec
        self.version = 0
        self._snapshot = b""
        self._pending: bytes | None = None
        self._snapshots: dict[int, bytes] = {}  # versions whose hash nobody asked for yet
        self._hashes: dict[int, str] = {}
        self._text: tuple[int, bytes] | None = None

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
        self.holder.live, self._snapshot = self.codec.open(model)
        self.version += 1
        self._text = None
        if text is not None:
            self._text = (self.version, text)
            self._hashes[self.version] = digest or hashlib.sha256(text).hexdigest()
        else:
            self._snapshots[self.version] = self._snapshot

    # -- one call --------------------------------------------------------------------------
    def begin(self) -> None:
        self.holder.live_snapshot = self._snapshot

    def finish(self) -> bool:
        self.holder.live_snapshot = None
        try:
            after = self.codec.snapshot(self.holder.live)
        except Exception as exc:  # the call left something that cannot be copied: refuse it
            self.rollback()
            raise StateRejected(f"the live state cannot be snapshotted: {exc}") from exc
        if after == self._snapshot:
            return False
        self._pending = after
        return True

    def rollback(self) -> None:
        self.holder.live_snapshot = None
        self._pending = None
        self._text = None
        self.holder.live = self.codec.restore(self._snapshot)

    def accept(self, digest: str | None = None) -> None:
        if self._pending is None:
            return
        self._snapshot, self._pending = self._pending, None
        self.version += 1
        if digest is None:
            self._snapshots[self.version] = self._snapshot
        else:
            self._hashes[self.version] = digest

    # -- canonical text and hashes ----------------------------------------------------------
    def _model(self) -> BaseModel:
        """The current live object as a validated ``State`` model (bound as ``env.state``)."""
        model = self.state_class.model_validate(self.codec.dump(self.holder.live))
        self.holder._state_root = model
        return model

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
            self._snapshots.pop(self.version, None)
        return found

    def digest_of(self, version: int) -> str:
        found = self._hashes.get(version)
        if found is not None:
            return found
        if version == self.version:
            return self.digest()
        live = self.codec.restore(self._snapshots.pop(version))
        model = self.state_class.model_validate(self.codec.dump(live))
        found = hashlib.sha256(canonical_json(model.model_dump(mode="json")).encode("utf-8")).hexdigest()
        self._hashes[version] = found
        return found
