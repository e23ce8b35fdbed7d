"""A session's state, kept valid and serialized at the cost of what each call changes.

:class:`StateTree` owns the environment's bound state between calls. Loading a state
validates it as a whole once and turns it into a tracked tree (:mod:`envcraft.core.tracking`).
Then every call is a transaction over the tree:

* ``begin`` starts an undo journal; the tool mutates the state in place;
* ``finish`` adopts what the call inserted, and validates only what changed: each new value
  against the type its container declares, the model validators of every model on a changed
  path (so a state's whole-state ``model_validator`` still runs after every change: correct,
  but its cost grows with the state) and the ``@invariant`` checks of the touched items and of
  the items whose last check read something that changed (:mod:`envcraft.core.invariants`);
  a refused state is undone and :class:`StateRejected` raised;
* ``rollback`` undoes a failed call from its journal, in O(what it touched);
* ``accept`` makes the change a new version.

Serialization and hashing are lazy: ``canonical()`` assembles the canonical JSON from cached
per-node pieces (:mod:`envcraft.core.fragments`) when someone asks (a durable commit, the end
of a turn, ``Session.state()``), and ``digest_of(version)`` gives the hash of an earlier version
by undoing and redoing the journals kept since, so an in-memory session hashes nothing per call.

Anything the incremental path cannot follow falls back to whole-state work with the same
result: the state replaced (``env.state = ...``) or edited outside a call, values the
fragments cannot encode exactly, model validators that see raw input (``mode="before"`` /
``"wrap"``), containers whose item type cannot be told from their annotation.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import os
import types
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic._internal._decorators import inspect_validator

from envcraft.core.fragments import Slow, adapter, fragment, value_fragment
from envcraft.core.invariants import ALL, SKIP_INVARIANTS, WHOLE, Invariant, invariants_of, run_recorded
from envcraft.core.state import canonical_json
from envcraft.core.tracking import (
    CONTAINERS,
    MISSING,
    AttrRecord,
    DictKeyRecord,
    DictReplaceRecord,
    Journal,
    ListRecord,
    Record,
    RootRecord,
    SetRecord,
    TrackedDict,
    TrackedList,
    TrackedSet,
    Tree,
    track_fields,
)

log = logging.getLogger("envcraft.state")

SKIP = {SKIP_INVARIANTS: True}  # validation context: the tree runs the invariants itself
UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "<unknown>"})()
_PLAIN = frozenset({str, int, float, bool, type(None)})  # exact types: an enum member is not plain
SMALL_STATE = 32 * 1024  # bytes of canonical text below which a whole dump is the faster way
WHOLE_TEXTS_FIRST = 3  # texts a session makes whole before it builds the per-node pieces
CHECK_ENV = "ENVCRAFT_CHECK_STATE"  # "1": compare every step with the whole-state computation


class StateRejected(Exception):
    """A call left a state the environment's State model refuses (already undone)."""


class StateCheckFailed(BaseException):
    """``ENVCRAFT_CHECK_STATE=1`` found the incremental path disagreeing with the whole-state one.

    A ``BaseException`` on purpose: it is a runtime bug, so it must not become a tool error.
    """


# -- annotations --------------------------------------------------------------------------
_MAPPINGS = {dict, typing.Dict, typing.Mapping, typing.MutableMapping}  # noqa: UP006
_SEQUENCES = {list, typing.List, typing.Sequence, typing.MutableSequence}  # noqa: UP006
_SETS = {set, typing.Set, typing.AbstractSet, typing.MutableSet}  # noqa: UP006


def _collections_abc() -> None:
    import collections.abc as abc

    _MAPPINGS.update({abc.Mapping, abc.MutableMapping})
    _SEQUENCES.update({abc.Sequence, abc.MutableSequence})
    _SETS.update({abc.Set, abc.MutableSet})


_collections_abc()


def item_annotation(annotation: Any, kind: type) -> Any:
    """The declared type of the items of a container held where ``annotation`` is declared:
    ``Any`` when nothing is declared, ``UNKNOWN`` when it cannot be told (a union of types)."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or origin is types.UnionType:
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return UNKNOWN
            annotation = options[0]
        else:
            break
    if annotation is Any or annotation is None:
        return Any
    origin = get_origin(annotation) or annotation
    args = get_args(annotation)
    if kind is dict and origin in _MAPPINGS:
        return args[1] if len(args) == 2 else Any
    if kind is list and origin in _SEQUENCES:
        return args[0] if args else Any
    if kind is set and origin in _SETS:
        return args[0] if args else Any
    return UNKNOWN


@dataclass(frozen=True)
class _Validators:
    after: tuple[tuple[Any, bool], ...]  # (function, takes info)
    raw: bool  # has "before"/"wrap" model validators: re-validate the model from its JSON


@cache
def _validators(cls: type[BaseModel]) -> _Validators:
    after: list[tuple[Any, bool]] = []
    raw = False
    for name, decorator in cls.__pydantic_decorators__.model_validators.items():
        if name == "_envcraft_invariants":
            continue
        if decorator.info.mode == "after":
            after.append((decorator.func, inspect_validator(decorator.func, mode="after", type="model")))
        else:
            raw = True
    return _Validators(tuple(after), raw)


class _Info:
    """What an ``after`` model validator gets as ``info`` for a whole-model check."""

    __slots__ = ("config", "data", "field_name", "mode")
    context = SKIP

    def __init__(self, model: BaseModel) -> None:
        self.config = type(model).model_config
        self.data = model.__dict__
        self.field_name = None
        self.mode = "python"


@cache
def _field_check(cls: type[BaseModel], name: str) -> Any:
    """An adapter for a field's whole value when the field itself carries constraints."""
    info = cls.__pydantic_fields__[name]
    if not info.metadata:
        return None
    return adapter(Annotated[info.annotation, *info.metadata])


# -- what a call changed ------------------------------------------------------------------
@dataclass
class _Changes:
    """Every node on a changed path, and per dict / model which keys / fields changed."""

    nodes: dict[int, Any] = field(default_factory=dict)
    keys: dict[int, Any] = field(default_factory=dict)  # id(dict) -> set of keys, or ALL
    fields: dict[int, set[str]] = field(default_factory=dict)  # id(model) -> fields below which
    replaced: dict[int, set[str]] = field(default_factory=dict)  # id(model) -> fields assigned

    def key(self, node: Any, key: Any) -> None:
        keys = self.keys.setdefault(id(node), set())
        if keys is not ALL:
            keys.add(key)

    def field(self, model: Any, name: str) -> None:
        self.fields.setdefault(id(model), set()).add(name)

    def mark(self, node: Any) -> None:
        """``node`` changed: drop its cached bytes and those of everything above it."""
        if id(node) in self.nodes:
            node._ec_frag = None
            return
        self.nodes[id(node)] = node
        stack = [node]
        while stack:
            current = stack.pop()
            current._ec_frag = None
            for parent, key in current._ec_parents:
                if isinstance(parent, TrackedDict):
                    if parent._ec_pieces is not None:
                        parent._ec_pieces.pop(key, None)
                    self.key(parent, key)
                elif isinstance(parent, BaseModel):
                    self.field(parent, key)
                if id(parent) not in self.nodes:
                    self.nodes[id(parent)] = parent
                    stack.append(parent)

    def models(self) -> Iterator[Any]:
        return (n for n in self.nodes.values() if isinstance(n, BaseModel))


def _changes(records: Iterable[Record]) -> _Changes:
    changes = _Changes()
    for record in records:
        node = record.node
        if isinstance(record, AttrRecord):
            changes.replaced.setdefault(id(node), set()).add(record.name)
            changes.field(node, record.name)
        elif isinstance(record, DictKeyRecord):
            if node._ec_pieces is not None:
                node._ec_pieces.pop(record.key, None)
            if record.old is MISSING or record.new is MISSING:
                node._ec_order = None
            changes.key(node, record.key)
        elif isinstance(record, DictReplaceRecord):
            node._ec_order = None
            old, new = record.old, record.new
            if new is None:  # undone before the call finished: nothing known about its keys
                node._ec_pieces = None
                changes.keys[id(node)] = ALL
                changes.mark(node)
                continue
            differ = old.keys() ^ new.keys()
            differ.update(k for k, v in new.items() if k in old and old[k] is not v)
            for key in differ:
                if node._ec_pieces is not None:
                    node._ec_pieces.pop(key, None)
                changes.key(node, key)
        elif isinstance(record, RootRecord):
            continue
        changes.mark(node)
    return changes


# -- invariant dependencies -----------------------------------------------------------------
class _Deps:
    """Which item checks read what: ``(owner, field, key)`` -> the checks to re-run when it changes."""

    def __init__(self) -> None:
        self.reads: dict[tuple[int, str, Any], set[tuple[str, Any]]] = {}
        self.readers: dict[tuple[int, str], dict[Any, set[tuple[str, Any]]]] = {}

    def copy(self) -> _Deps:
        """An independent copy (``apply`` changes the sets in place)."""
        copied = _Deps()
        copied.reads = {key: set(checks) for key, checks in self.reads.items()}
        copied.readers = {
            key: {read: set(checks) for read, checks in table.items()} for key, table in self.readers.items()
        }
        return copied

    def readers_of(self, owner: int, name: str, keys: Any) -> set[tuple[str, Any]]:
        table = self.readers.get((owner, name))
        if not table:
            return set()
        if keys is ALL:
            return set().union(*table.values())
        found: set[tuple[str, Any]] = set()
        for key in (*keys, ALL, WHOLE):
            found |= table.get(key, set())
        return found

    def apply(self, owner: int, staged: dict[tuple[str, Any], set[tuple[str, Any]] | None]) -> None:
        for (name, key), reads in staged.items():
            check = (name, key)
            for field_name, read in self.reads.pop((owner, name, key), ()):
                self.readers.get((owner, field_name), {}).get(read, set()).discard(check)
            if reads is None:
                continue
            self.reads[(owner, name, key)] = reads
            for field_name, read in reads:
                self.readers.setdefault((owner, field_name), {}).setdefault(read, set()).add(check)


@dataclass
class _Pending:
    journal: Journal
    deps: dict[int, dict[tuple[str, Any], set[tuple[str, Any]] | None]]
    rebuild: bool  # the dependencies were recomputed from scratch


@dataclass
class _Mark:
    """What :meth:`StateTree.rewind` restores besides the values the journals give back."""

    version: int
    text: tuple[int, bytes] | None
    hashes: dict[int, str]
    owners: dict[int, Any]
    deps: _Deps


class StateTree:
    """The bound state of one session (see the module docstring)."""

    def __init__(self, state_class: type[BaseModel], holder: Any) -> None:
        self.state_class = state_class
        self.holder = holder  # the Environment; its ``state`` property reads ``_state_root``
        self.tree = Tree()
        holder._ec_tree = self.tree
        self.version = 0
        self._hashes: dict[int, str] = {}
        self._text: tuple[int, bytes] | None = None
        self._size = 0  # of the last canonical text: which way to make the next (_whole_text)
        self._texts = 0  # texts made whole so far (_whole_text)
        self._history: list[Journal] = []  # the journals that made versions _base+1 .. version
        self._base = 0
        self._unknown = 1  # no version below this one has an unknown hash
        self._deps = _Deps()
        self._owners: dict[int, Any] = {}  # id -> model with @invariant checks
        self._pending: _Pending | None = None
        self._force_full = False
        self._mark: _Mark | None = None  # the version rewind() goes back to
        self.check = os.environ.get(CHECK_ENV) == "1"

    @property
    def root(self) -> Any:
        return self.holder._state_root

    # -- loading ---------------------------------------------------------------------------
    def load_json(self, text: str | bytes, digest: str | None = None) -> None:
        """Replace the state with ``text`` (validated as a whole); ``ValueError`` if refused."""
        model = self.state_class.model_validate_json(text, context=SKIP)
        raw = text.encode("utf-8") if isinstance(text, str) else text
        self._install(model, raw, digest)

    def load_data(self, data: Any) -> None:
        """Replace the state with JSON-like ``data`` (validated as a whole)."""
        self._install(self.state_class.model_validate(data, context=SKIP), None, None)

    def load_model(self, model: BaseModel) -> None:
        """Replace the state with a model built by code (a generator): re-validated from its dump."""
        text = canonical_json(model.model_dump(mode="json"))
        self.load_json(text)

    def _install(self, model: BaseModel, text: bytes | None, digest: str | None) -> None:
        self.holder._state_root = model
        self._owners.clear()
        self._mark = None
        self._adopt(model, None, None, self.state_class, [])
        deps = _Deps()
        for owner in list(self._owners.values()):
            for check in invariants_of(type(owner)):
                deps.apply(id(owner), self._run_checks(owner, check, list(owner.__dict__[check.field])))
        self._deps = deps
        self.tree.outside = False
        self._force_full = False
        self.version += 1
        self._history.clear()  # no journal leads back across a load
        self._base = self._unknown = self.version
        self._text = None
        if text is not None:
            self._text = (self.version, text)
            self._hashes[self.version] = digest or hashlib.sha256(text).hexdigest()

    # -- going back -------------------------------------------------------------------------
    def mark(self) -> None:
        """Remember the current version as the one :meth:`rewind` returns to (between calls).

        The journals since are then kept (they are the way back); a load, an edit outside
        any call or a change checked as a whole state forgets the mark.
        """
        assert self.tree.journal is None and self._pending is None, "mark() during a call"
        self._sync_outside()
        if self._force_full:  # the next call checks the whole state: it would forget the mark
            self._mark = None
            return
        self._mark = _Mark(
            self.version,
            self._text,
            {v: h for v, h in self._hashes.items() if v <= self.version},
            dict(self._owners),
            self._deps.copy(),
        )

    def rewind(self) -> bool:
        """Undo every call since :meth:`mark`: the state is the marked one again, its objects
        included, in O(what the calls changed). False (nothing done) when there is no mark
        or the way back is gone; reload the state then."""
        mark = self._mark
        if mark is None or self.tree.journal is not None or self._pending is not None or self.tree.outside:
            return False
        for journal in reversed(self._history[mark.version - self._base :]):
            self._undo(journal)
        del self._history[mark.version - self._base :]
        self.version = mark.version
        self._unknown = self._base
        self._text = mark.text
        self._hashes = dict(mark.hashes)
        self._owners = dict(mark.owners)
        self._deps = mark.deps.copy()
        self._force_full = False
        return True

    # -- one call --------------------------------------------------------------------------
    def begin(self) -> None:
        self._sync_outside()
        self.tree.journal = Journal()

    def finish(self, call: Any = None, result: Any = None) -> bool:
        """End the call: ``True`` if it changed the state (valid: ``accept`` or ``rollback``
        next), ``False`` if it changed nothing; raises :class:`StateRejected` (undone).
        (``call`` and ``result`` are for trees that replay calls; this one does not.)"""
        del call, result
        journal, self.tree.journal = self.tree.journal, None
        assert journal is not None, "finish() without begin()"
        full = self._force_full or journal.root is not None
        if not journal and not full:
            return False
        if full:
            self._mark = None  # the whole-state path rebuilds the bookkeeping: no way back by journals
        try:
            pending = self._finish_full(journal) if full else self._finish_incremental(journal)
        except (ValidationError, ValueError, TypeError, AssertionError, Slow) as exc:
            if self.check and not full:
                self._check_refusal()
            self._undo(journal)
            if full:
                self._rebuild()
            raise StateRejected(_first_line(exc)) from exc
        except BaseException:
            self._undo(journal)
            if full:
                self._rebuild()
            raise
        self._force_full = False
        self._pending = pending
        if self.check:
            self._check_against_whole()
        return True

    def rollback(self) -> None:
        """Undo the running or finished-but-not-accepted call."""
        journal, self.tree.journal = self.tree.journal, None
        if journal is not None:
            self._undo(journal)
        if self._pending is not None:
            self._undo(self._pending.journal)
            self._pending = None

    def accept(self, digest: str | None = None) -> None:
        """The finished call is committed: it made a new version (whose hash may be known)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        if pending.rebuild:
            self._deps = _Deps()
        for owner, staged in pending.deps.items():
            self._deps.apply(owner, staged)
        self._history.append(pending.journal)
        self._new_version(digest)

    def _new_version(self, digest: str | None) -> None:
        self.version += 1
        if digest is not None:
            self._hashes[self.version] = digest
        self._trim()

    # -- the incremental path -------------------------------------------------------------------
    def _finish_incremental(self, journal: Journal) -> _Pending:
        records = journal.active()
        fresh: list[Any] = []
        inserted = self._adopt_inserted(records, fresh)
        journal.capture()
        changes = _changes(records)
        for owner in fresh:
            if isinstance(owner, BaseModel) and invariants_of(type(owner)):
                self._owners[id(owner)] = owner
        for container, value in inserted:
            self._validate_item(container, value)
        for record in records:
            if isinstance(record, AttrRecord) and record.new is not MISSING:
                self._encodable(record.new, type(record.node).__pydantic_fields__[record.name].annotation)
            elif isinstance(record.node, CONTAINERS):
                self._validate_container(record.node)
        for model in list(changes.models()):
            self._run_validators(model)
        deps = {}
        for owner in self._owners_on(changes, fresh):
            deps[id(owner)] = self._recheck(owner, changes, fresh)
        return _Pending(journal, deps, rebuild=False)

    def _adopt_inserted(self, records: list[Record], fresh: list[Any]) -> list[tuple[Any, Any]]:
        """Adopt every value the call put into the tree; returns (container, value) to validate."""
        inserted: list[tuple[Any, Any]] = []
        for record in records:
            node = record.node
            if isinstance(record, AttrRecord):
                value = node.__dict__.get(record.name, MISSING)
                if value is not MISSING:
                    annotation = type(node).__pydantic_fields__[record.name].annotation
                    adopted = self._adopt(value, node, record.name, annotation, fresh)
                    if adopted is not value:
                        dict.__setitem__(node.__dict__, record.name, adopted)
            elif isinstance(record, DictKeyRecord):
                value = dict.get(node, record.key, MISSING)
                if value is not MISSING:
                    dict.__setitem__(node, record.key, self._adopt(value, node, record.key, None, fresh))
                    if value is not record.old:
                        inserted.append((node, dict.__getitem__(node, record.key)))
            elif isinstance(record, DictReplaceRecord):
                for key, value in list(dict.items(node)):
                    dict.__setitem__(node, key, self._adopt(value, node, key, None, fresh))
                    if record.old.get(key, MISSING) is not value:
                        inserted.append((node, dict.__getitem__(node, key)))
            elif isinstance(record, ListRecord):
                old = None if record.old is None else {id(v) for v in record.old}
                start = record.length if record.old is None else 0
                for index in range(start, len(node)):
                    value = list.__getitem__(node, index)
                    if old is not None and id(value) in old:
                        continue
                    list.__setitem__(node, index, self._adopt(value, node, None, None, fresh))
                    inserted.append((node, list.__getitem__(node, index)))
            elif isinstance(record, SetRecord):
                for value in set(node) - record.old:
                    self._adopt(value, node, None, None, fresh)
                    inserted.append((node, value))
        return inserted

    def _validate_item(self, container: Any, value: Any) -> None:
        annotation = container._ec_item
        text = self._encodable(value, annotation)
        if annotation is UNKNOWN:
            owner = _model_above(container)
            if owner is not None:
                type(owner).model_validate_json(self._fragment_or_whole(owner), context=SKIP)
        elif annotation is not Any:
            adapter(annotation).validate_json(text, context=SKIP)

    def _validate_container(self, container: Any) -> None:
        """A container that is a constrained field itself (``Field(max_length=...)``)."""
        for parent, name in container._ec_parents:
            if isinstance(parent, BaseModel) and parent.__dict__.get(name) is container:
                check = _field_check(type(parent), name)
                if check is not None:
                    check.validate_json(self._fragment_or_whole(container), context=SKIP)

    def _encodable(self, value: Any, annotation: Any) -> bytes:
        """The value's canonical bytes; refuses text UTF-8 cannot hold (lone surrogates)."""
        try:
            return value_fragment(value, annotation)
        except Slow:
            dumped = (
                value.model_dump(mode="json")
                if isinstance(value, BaseModel)
                else adapter(Any if annotation in (None, UNKNOWN) else annotation).dump_python(
                    value, mode="json"
                )
            )
            return canonical_json(dumped).encode("utf-8")  # UnicodeEncodeError is a ValueError

    def _fragment_or_whole(self, node: Any) -> bytes:
        try:
            return fragment(node)
        except Slow:
            dumped = node.model_dump(mode="json") if isinstance(node, BaseModel) else copy.deepcopy(node)
            return canonical_json(dumped).encode("utf-8")

    def _run_validators(self, model: BaseModel) -> None:
        cls = type(model)
        found = _validators(cls)
        if found.raw:
            cls.model_validate_json(self._fragment_or_whole(model), context=SKIP)
            return
        for function, takes_info in found.after:
            if takes_info:
                function(model, _Info(model))
            else:
                function(model)

    def _owners_on(self, changes: _Changes, fresh: list[Any]) -> list[Any]:
        on_path = [m for m in changes.models() if id(m) in self._owners]
        return on_path + [m for m in fresh if isinstance(m, BaseModel) and invariants_of(type(m))]

    def _recheck(
        self, owner: Any, changes: _Changes, fresh: list[Any]
    ) -> dict[tuple[str, Any], set[tuple[str, Any]] | None]:
        """Re-run the item checks of ``owner`` that the change may have falsified."""
        staged: dict[tuple[str, Any], set[tuple[str, Any]] | None] = {}
        new_owner = any(m is owner for m in fresh)
        changed = changes.fields.get(id(owner), set())
        replaced = changes.replaced.get(id(owner), set())
        for check in invariants_of(type(owner)):
            collection = owner.__dict__.get(check.field)
            if not isinstance(collection, dict):
                continue
            keys: set[Any] = set()
            everything = new_owner or check.field in replaced
            if not everything and check.field in changed:
                touched = changes.keys.get(id(collection), set())
                if touched is ALL:
                    everything = True
                else:
                    keys |= touched
            if everything:
                for key in list(self._deps.reads):
                    if key[0] == id(owner) and key[1] == check.name:
                        staged[(check.name, key[2])] = None
                keys = set(collection)
            else:
                for name in changed:
                    value = owner.__dict__.get(name)
                    read_keys = changes.keys.get(id(value), ALL) if isinstance(value, dict) else ALL
                    if name in replaced:
                        read_keys = ALL
                    for check_name, key in self._deps.readers_of(id(owner), name, read_keys):
                        if check_name == check.name:
                            keys.add(key)
            staged.update(self._run_checks(owner, check, keys))
        return staged

    def _run_checks(
        self, owner: Any, check: Invariant, keys: Iterable[Any]
    ) -> dict[tuple[str, Any], set[tuple[str, Any]] | None]:
        collection = owner.__dict__[check.field]
        staged: dict[tuple[str, Any], set[tuple[str, Any]] | None] = {}
        for key in keys:
            staged[(check.name, key)] = run_recorded(owner, check, key) if key in collection else None
        return staged

    # -- the whole-state path -------------------------------------------------------------------
    def _finish_full(self, journal: Journal) -> _Pending:
        root = self.root
        self._reattach(root)
        journal.capture()
        self.state_class.model_validate_json(self._whole_text(root), context=SKIP)
        deps: dict[int, dict[tuple[str, Any], set[tuple[str, Any]] | None]] = {}
        for owner in list(self._owners.values()):
            staged: dict[tuple[str, Any], set[tuple[str, Any]] | None] = {}
            for check in invariants_of(type(owner)):
                staged.update(self._run_checks(owner, check, list(owner.__dict__[check.field])))
            deps[id(owner)] = staged
        return _Pending(journal, deps, rebuild=True)

    def _reattach(self, root: Any) -> None:
        """Rebuild the whole tree's bookkeeping (parents, caches, invariant owners) from scratch."""
        _detach(root)
        self._owners.clear()
        self._adopt(root, None, None, self.state_class, [])

    def _rebuild(self) -> None:
        """After a refused whole-state change: the bookkeeping of the state as it is again."""
        self._reattach(self.root)
        deps = _Deps()
        for owner in list(self._owners.values()):
            for check in invariants_of(type(owner)):
                try:
                    deps.apply(id(owner), self._run_checks(owner, check, list(owner.__dict__[check.field])))
                except Exception:  # edited outside any call into a state its checks refuse
                    self._force_full = True
        self._deps = deps

    def _whole_text(self, root: Any) -> bytes:
        """The canonical bytes of the state at ``root``.

        A small state is dumped whole (pydantic and orjson in native code beat building the
        per-node pieces: 0.06 ms against 1.3 ms for a 4 KiB state); from ``SMALL_STATE``
        bytes on, and once a session has asked for a few texts (a short-lived one never earns
        the pieces back), the cached fragments make the next texts cost what changed.
        """
        text = None
        self._texts += 1
        if self._size >= SMALL_STATE and self._texts > WHOLE_TEXTS_FIRST:
            with contextlib.suppress(Slow):
                text = fragment(root)
        if text is None:
            text = canonical_json(root.model_dump(mode="json")).encode("utf-8")
        self._size = len(text)
        return text

    # -- undo and redo --------------------------------------------------------------------------
    def _undo(self, journal: Journal) -> None:
        journal.undo()
        self._after_replay(journal)

    def _after_replay(self, journal: Journal) -> None:
        """After the tree moved back or forth by a journal: drop the bytes that no longer hold."""
        if journal.root is not None:
            _clear_caches(self.root)
        _changes(journal.active())
        self._text = None

    # -- canonical text and hashes --------------------------------------------------------------
    def canonical(self) -> bytes:
        """The canonical JSON of the current state (assembled when first asked per version)."""
        self._sync_outside()
        version = self.version + (self._pending is not None)  # a finished call's, once accepted
        if self._text is not None and self._text[0] == version:
            return self._text[1]
        text = self._whole_text(self.root)
        if self.check:
            self._check_text(text)
        self._text = (version, text)
        return text

    def digest(self) -> str:
        """sha256 of :meth:`canonical` (the state hash), computed once per version."""
        self._sync_outside()
        found = self._hashes.get(self.version)
        if found is None:
            found = self._hashes[self.version] = hashlib.sha256(self.canonical()).hexdigest()
        return found

    def _sync_outside(self) -> None:
        """The bound state was edited outside any call: a new, unlogged version, checked whole
        at the next call; earlier versions can no longer be reached by undoing journals."""
        if not self.tree.outside:
            return
        self.tree.outside = False
        self._force_full = True
        _clear_caches(self.root)
        self.version += 1
        self._text = None
        self._history.clear()
        self._mark = None
        self._base = self._unknown = self.version

    def digest_of(self, version: int) -> str:
        """The hash of an earlier version: undo the journals since, hash, redo them."""
        found = self._hashes.get(version)
        if found is not None:
            return found
        if version == self.version:
            return self.digest()
        if not self._base <= version < self.version:
            raise KeyError(f"version {version} is no longer known")
        steps = self._history[version - self._base :]
        undone: list[Journal] = []
        try:
            for journal in reversed(steps):
                self._undo(journal)
                undone.append(journal)
                at = self.version - len(undone)
                if at not in self._hashes:
                    self._hashes[at] = hashlib.sha256(self._whole_text(self.root)).hexdigest()
        finally:
            for journal in reversed(undone):
                journal.redo()
                self._after_replay(journal)
        self._trim()
        return self._hashes[version]

    def _trim(self) -> None:
        """Forget the journals no unknown hash needs any more (amortized O(1) per version)."""
        low = max(self._unknown, self._base)
        while low < self.version and low in self._hashes:
            low += 1
        if self._mark is not None:
            low = min(low, self._mark.version)  # rewind() undoes the journals since the mark
        self._unknown = low
        if low > self._base:  # the hashes stay: log entries name their versions
            del self._history[: low - self._base]
            self._base = low

    # -- adoption ---------------------------------------------------------------------------------
    def _adopt(self, value: Any, parent: Any, key: Any, annotation: Any, fresh: list[Any]) -> Any:
        """Make ``value`` part of this tree (tracked containers, parent links); returns it or its
        tracked replacement. ``annotation`` is the declared type where it sits (``None``: take
        the item type of ``parent``)."""
        if type(value) in _PLAIN:
            return value  # most of a state: nothing to track, nothing to link
        if annotation is None and parent is not None and not isinstance(parent, BaseModel):
            annotation = parent._ec_item
        tree = self.tree
        if isinstance(value, BaseModel):
            owner = getattr(value, "_ec_tree", None)
            if owner is tree:
                _link(value, parent, key)
                return value
            if owner is not None:  # a node of another session's state: take a copy
                value = value.model_copy(deep=True)
            object.__setattr__(value, "_ec_tree", tree)
            object.__setattr__(value, "_ec_parents", [] if parent is None else [(parent, key)])
            object.__setattr__(value, "_ec_frag", None)
            track_fields(value)
            values = value.__dict__
            for name, info in type(value).__pydantic_fields__.items():
                if name in values and type(values[name]) not in _PLAIN:
                    child = values[name]
                    adopted = self._adopt(child, value, name, info.annotation, fresh)
                    if adopted is not child:
                        dict.__setitem__(values, name, adopted)
            if invariants_of(type(value)):
                self._owners[id(value)] = value
            fresh.append(value)
            return value
        reuse = None
        if isinstance(value, CONTAINERS):
            if value._ec_tree is tree:
                _link(value, parent, key)
                return value
            if value._ec_tree is None:
                reuse = value  # detached for a rebuild: adopted again in place
            else:
                value = copy.copy(value)  # another tree's container: a plain copy, adopted below
        if isinstance(reuse, TrackedDict):
            item = item_annotation(annotation, dict)
            _init(reuse, tree, item, parent, key)
            reuse._ec_pieces = None
            reuse._ec_order = None
            for k, v in list(dict.items(reuse)):
                if type(v) not in _PLAIN:
                    dict.__setitem__(reuse, k, self._adopt(v, reuse, k, item, fresh))
            fresh.append(reuse)
            return reuse
        if isinstance(reuse, TrackedList):
            item = item_annotation(annotation, list)
            _init(reuse, tree, item, parent, key)
            for index, v in enumerate(list(reuse)):
                if type(v) not in _PLAIN:
                    list.__setitem__(reuse, index, self._adopt(v, reuse, None, item, fresh))
            fresh.append(reuse)
            return reuse
        if isinstance(reuse, TrackedSet):
            _init(reuse, tree, item_annotation(annotation, set), parent, key)
            fresh.append(reuse)
            return reuse
        if isinstance(value, dict):
            item = item_annotation(annotation, dict)
            node = TrackedDict()
            _init(node, tree, item, parent, key)
            node._ec_pieces = None
            node._ec_order = None
            for k, v in value.items():
                dict.__setitem__(node, k, v if type(v) in _PLAIN else self._adopt(v, node, k, item, fresh))
            fresh.append(node)
            return node
        if isinstance(value, list):
            item = item_annotation(annotation, list)
            listed = TrackedList()
            _init(listed, tree, item, parent, key)
            list.extend(
                listed, [v if type(v) in _PLAIN else self._adopt(v, listed, None, item, fresh) for v in value]
            )
            fresh.append(listed)
            return listed
        if isinstance(value, set):
            item = item_annotation(annotation, set)
            members = TrackedSet()
            _init(members, tree, item, parent, key)
            set.update(members, value)
            fresh.append(members)
            return members
        if isinstance(value, tuple) and value and parent is not None:
            item = item_annotation(annotation, list)
            adopted = tuple(self._adopt(v, parent, key, item, fresh) for v in value)
            return value if all(a is b for a, b in zip(adopted, value, strict=True)) else adopted
        return value

    # -- the check mode -----------------------------------------------------------------------------
    def _check_against_whole(self) -> None:
        """``ENVCRAFT_CHECK_STATE=1``: the incremental verdict must be the whole-state one."""
        root = self.root
        whole = canonical_json(root.model_dump(mode="json"))
        try:
            self.state_class.model_validate_json(whole)
        except ValueError as exc:
            raise StateCheckFailed(
                f"incremental validation accepted a state the model refuses: {exc}"
            ) from exc
        self._check_text(self._whole_text(root))

    def _check_refusal(self) -> None:
        """``ENVCRAFT_CHECK_STATE=1``: a state refused incrementally must be refused whole."""
        try:
            whole = canonical_json(self.root.model_dump(mode="json"))
            self.state_class.model_validate_json(whole)
        except (ValueError, TypeError):
            return
        raise StateCheckFailed("incremental validation refused a state the model accepts")

    def _check_text(self, text: bytes) -> None:
        whole = canonical_json(self.root.model_dump(mode="json")).encode("utf-8")
        if text != whole:
            raise StateCheckFailed("the assembled canonical JSON differs from the whole-state dump")


def _init(node: Any, tree: Tree, item: Any, parent: Any, key: Any) -> None:
    node._ec_tree = tree
    node._ec_parents = [] if parent is None else [(parent, key)]
    node._ec_frag = None
    node._ec_item = item


def _link(node: Any, parent: Any, key: Any) -> None:
    if parent is None:
        return
    for existing, name in node._ec_parents:
        if existing is parent and name == key:
            return
    node._ec_parents.append((parent, key))


def _model_above(node: Any) -> BaseModel | None:
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        for parent, _ in current._ec_parents:
            if isinstance(parent, BaseModel):
                return parent
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    return None


def _walk(root: Any) -> Iterator[Any]:
    """Every model and tracked container below ``root`` (each once)."""
    stack = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, BaseModel):
            yield node
            stack.extend(node.__dict__.values())
        elif isinstance(node, CONTAINERS):
            yield node
            stack.extend(node.values() if isinstance(node, dict) else node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple | set | frozenset):
            stack.extend(node)


def _clear_caches(root: Any) -> None:
    """Forget every cached byte below ``root`` (after whole-state changes)."""
    for node in _walk(root):
        if isinstance(node, BaseModel):
            if hasattr(node, "_ec_frag"):
                object.__setattr__(node, "_ec_frag", None)
        else:
            node._ec_frag = None
            if isinstance(node, TrackedDict):
                node._ec_pieces = None
                node._ec_order = None


def _detach(root: Any) -> None:
    """Take every node below ``root`` out of its tree, so adopting the root rebuilds it all."""
    for node in list(_walk(root)):
        if isinstance(node, BaseModel):
            object.__setattr__(node, "_ec_tree", None)
            object.__setattr__(node, "_ec_frag", None)
        else:
            node._ec_tree = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        if errors:
            where = ".".join(str(p) for p in errors[0]["loc"]) or type(exc).__name__
            return f"{where}: {errors[0]['msg']}"
    return text.splitlines()[0] if text else type(exc).__name__
