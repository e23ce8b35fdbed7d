"""What a tool call changed, and how to take it back: tracked containers and an undo journal.

A session's state is a tree of :class:`~envcraft.core.environment.StateModel` instances and
the containers in their fields. Once a state is loaded, every ``dict``, ``list`` and ``set``
in it is a :class:`TrackedDict` / :class:`TrackedList` / :class:`TrackedSet`, and every node
(model or container) knows its :class:`Tree` and its parents. A mutation of a node while a
call runs writes an undo record the first time that slot is touched (copy on first write):
the old value of a model field or dict key, the length of a list that is only appended to,
else a shallow copy of the container. So a failed call is undone in O(what it touched), and
the records also say exactly which nodes changed, which is what incremental validation and
serialization need (:mod:`envcraft.core.statetree`).

Values a call inserts (new models, plain dicts and lists) are adopted into the tree when the
call commits, not when they are inserted, so tool code may keep filling a dict it has just
put into the state. Copies of tracked containers (``copy``, ``deepcopy``, ``pickle``) are
plain containers, detached from the tree.
"""

from __future__ import annotations

import copy
from typing import Any

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


class Tree:
    """The bookkeeping every node of one state shares: the journal of the running call.

    ``outside`` is set when a node is mutated while no call runs (a test or a generator
    editing the bound state directly): the next call then re-reads the whole state.
    """

    __slots__ = ("journal", "outside")

    def __init__(self) -> None:
        self.journal: Journal | None = None
        self.outside = False


# -- undo records ------------------------------------------------------------------------
class Record:
    """One slot's value before the call (``undo``) and after it (``redo``, once captured)."""

    __slots__ = ("active", "node")

    def __init__(self, node: Any) -> None:
        self.node = node
        self.active = True

    def capture(self) -> None:  # remember the value after the call
        raise NotImplementedError

    def undo(self) -> None:
        raise NotImplementedError

    def redo(self) -> None:
        raise NotImplementedError


class AttrRecord(Record):
    __slots__ = ("name", "new", "old")

    def __init__(self, model: Any, name: str) -> None:
        super().__init__(model)
        self.name = name
        self.old = model.__dict__.get(name, MISSING)
        self.new: Any = MISSING

    def capture(self) -> None:
        self.new = self.node.__dict__.get(self.name, MISSING)

    def _put(self, value: Any) -> None:
        if value is MISSING:
            dict.pop(self.node.__dict__, self.name, None)
        else:
            dict.__setitem__(self.node.__dict__, self.name, value)

    def undo(self) -> None:
        self._put(self.old)

    def redo(self) -> None:
        self._put(self.new)


class DictKeyRecord(Record):
    __slots__ = ("key", "new", "old")

    def __init__(self, node: TrackedDict, key: Any) -> None:
        super().__init__(node)
        self.key = key
        self.old = dict.get(node, key, MISSING)
        self.new: Any = MISSING

    def capture(self) -> None:
        self.new = dict.get(self.node, self.key, MISSING)

    def _put(self, value: Any) -> None:
        if value is MISSING:
            dict.pop(self.node, self.key, None)
        else:
            dict.__setitem__(self.node, self.key, value)

    def undo(self) -> None:
        self._put(self.old)

    def redo(self) -> None:
        self._put(self.new)


class DictReplaceRecord(Record):
    """A dict whose keys were deleted (or cleared): its whole content before and after."""

    __slots__ = ("new", "old")

    def __init__(self, node: TrackedDict, old: dict[Any, Any]) -> None:
        super().__init__(node)
        self.old = old
        self.new: dict[Any, Any] | None = None  # until captured

    def capture(self) -> None:
        self.new = dict(self.node)

    def _put(self, content: dict[Any, Any] | None) -> None:
        assert content is not None
        dict.clear(self.node)
        dict.update(self.node, content)

    def undo(self) -> None:
        self._put(self.old)

    def redo(self) -> None:
        self._put(self.new)


class ListRecord(Record):
    """A list only appended to (``length`` = its old length) or changed otherwise (``old``)."""

    __slots__ = ("length", "new", "old")

    def __init__(self, node: TrackedList, appending: bool) -> None:
        super().__init__(node)
        self.length = len(node) if appending else -1
        self.old: list[Any] | None = None if appending else list(node)
        self.new: list[Any] = []

    def stop_appending(self) -> None:
        if self.old is None:
            self.old = list.__getitem__(self.node, slice(0, self.length))
            self.length = -1

    def capture(self) -> None:
        whole = self.old is not None
        self.new = list(self.node) if whole else list.__getitem__(self.node, slice(self.length, None))

    def undo(self) -> None:
        if self.old is None:
            list.__delitem__(self.node, slice(self.length, None))
        else:
            list.__setitem__(self.node, slice(None), self.old)

    def redo(self) -> None:
        if self.old is None:
            list.__delitem__(self.node, slice(self.length, None))
            list.extend(self.node, self.new)
        else:
            list.__setitem__(self.node, slice(None), self.new)

    def appended(self) -> list[Any]:
        return self.new if self.old is None else []


class SetRecord(Record):
    __slots__ = ("new", "old")

    def __init__(self, node: TrackedSet) -> None:
        super().__init__(node)
        self.old = set(node)
        self.new: set[Any] = set()

    def capture(self) -> None:
        self.new = set(self.node)

    def undo(self) -> None:
        set.clear(self.node)
        set.update(self.node, self.old)

    def redo(self) -> None:
        set.clear(self.node)
        set.update(self.node, self.new)


class RootRecord(Record):
    """``env.state = ...``: the whole state replaced (``node`` is the environment)."""

    __slots__ = ("new", "old")

    def __init__(self, holder: Any, old: Any) -> None:
        super().__init__(holder)
        self.old = old
        self.new: Any = old

    def capture(self) -> None:
        self.new = self.node._state_root

    def undo(self) -> None:
        self.node._state_root = self.old

    def redo(self) -> None:
        self.node._state_root = self.new


class Journal:
    """The undo records of one call, in the order the slots were first touched."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.touched: dict[int, Any] = {}  # id -> node mutated in place
        self._keyed: dict[tuple[int, Any], Record] = {}
        self._whole: dict[int, Record] = {}
        self._dict_keys: dict[int, list[DictKeyRecord]] = {}
        self.root: RootRecord | None = None

    def __bool__(self) -> bool:
        return bool(self.records)

    def attr(self, model: Any, name: str) -> None:
        slot = (id(model), name)
        if slot not in self._keyed:
            record = AttrRecord(model, name)
            self._keyed[slot] = record
            self.records.append(record)
            self.touched[id(model)] = model

    def dict_key(self, node: TrackedDict, key: Any) -> None:
        nid = id(node)
        if nid in self._whole:
            return
        slot = (nid, key)
        if slot not in self._keyed:
            record = DictKeyRecord(node, key)
            self._keyed[slot] = record
            self._dict_keys.setdefault(nid, []).append(record)
            self.records.append(record)
            self.touched[nid] = node

    def dict_whole(self, node: TrackedDict) -> None:
        """Before a deletion: keep the dict's whole content as it was before the call."""
        nid = id(node)
        if nid in self._whole:
            return
        old = dict(node)
        for record in reversed(self._dict_keys.pop(nid, [])):
            record.active = False  # superseded: rebuild the content before the call from it
            if record.old is MISSING:
                old.pop(record.key, None)
            else:
                old[record.key] = record.old
        whole = DictReplaceRecord(node, old)
        self._whole[nid] = whole
        self.records.append(whole)
        self.touched[nid] = node

    def list_append(self, node: TrackedList) -> None:
        nid = id(node)
        if nid not in self._whole:
            record = ListRecord(node, appending=True)
            self._whole[nid] = record
            self.records.append(record)
            self.touched[nid] = node

    def list_whole(self, node: TrackedList) -> None:
        nid = id(node)
        record = self._whole.get(nid)
        if isinstance(record, ListRecord):
            record.stop_appending()
            return
        record = ListRecord(node, appending=False)
        self._whole[nid] = record
        self.records.append(record)
        self.touched[nid] = node

    def set_whole(self, node: TrackedSet) -> None:
        nid = id(node)
        if nid not in self._whole:
            record = SetRecord(node)
            self._whole[nid] = record
            self.records.append(record)
            self.touched[nid] = node

    def replace_root(self, holder: Any, old: Any) -> None:
        if self.root is None:
            self.root = RootRecord(holder, old)
            self.records.append(self.root)

    # -- the journal as a whole ------------------------------------------------------------
    def active(self) -> list[Record]:
        return [r for r in self.records if r.active]

    def capture(self) -> None:
        for record in self.active():
            record.capture()

    def undo(self) -> None:
        for record in reversed(self.active()):
            record.undo()

    def redo(self) -> None:
        for record in self.active():
            record.redo()


# -- tracked containers -------------------------------------------------------------------
def _journal(node: Any) -> Journal | None:
    """The running call's journal, or ``None``; flags a mutation made outside any call."""
    tree: Tree | None = node._ec_tree
    if tree is None:
        return None
    if tree.journal is None:
        tree.outside = True
    return tree.journal


class TrackedDict(dict[Any, Any]):
    """A ``dict`` of a loaded state: mutations are journaled (see the module docstring).

    Every tracked node carries its tree, its parents (``(node, key or field name)``), its
    cached canonical bytes and the declared type of its items; a dict also caches its sorted
    keys and the bytes of each ``"key":value`` piece (see :mod:`envcraft.core.fragments`).
    """

    __slots__ = ("_ec_frag", "_ec_item", "_ec_order", "_ec_parents", "_ec_pieces", "_ec_tree")
    _ec_tree: Tree | None
    _ec_parents: list[tuple[Any, Any]]
    _ec_frag: bytes | None
    _ec_item: Any
    _ec_order: list[Any] | None
    _ec_pieces: dict[Any, bytes] | None

    def __setitem__(self, key: Any, value: Any) -> None:
        journal = _journal(self)
        if journal is not None:
            journal.dict_key(self, key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if key in self:
            journal = _journal(self)
            if journal is not None:
                journal.dict_whole(self)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            journal = _journal(self)
            if journal is not None:
                journal.dict_whole(self)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        if self:
            journal = _journal(self)
            if journal is not None:
                journal.dict_whole(self)
        return dict.popitem(self)

    def clear(self) -> None:
        if self:
            journal = _journal(self)
            if journal is not None:
                journal.dict_whole(self)
        dict.clear(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[misc]
        self.update(other)
        return self

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        return {copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


def _list_mutator(name: str, appending: bool = False) -> Any:
    method = getattr(list, name)

    def mutate(self: TrackedList, *args: Any, **kwargs: Any) -> Any:
        journal = _journal(self)
        if journal is not None:
            if appending:
                journal.list_append(self)
            else:
                journal.list_whole(self)
        return method(self, *args, **kwargs)

    mutate.__name__ = name
    mutate.__doc__ = method.__doc__
    return mutate


class TrackedList(list[Any]):
    """A ``list`` of a loaded state: mutations are journaled (appends cheaply)."""

    __slots__ = ("_ec_frag", "_ec_item", "_ec_parents", "_ec_tree")
    _ec_tree: Tree | None
    _ec_parents: list[tuple[Any, Any]]
    _ec_frag: bytes | None
    _ec_item: Any

    append = _list_mutator("append", appending=True)
    extend = _list_mutator("extend", appending=True)
    __iadd__ = _list_mutator("__iadd__", appending=True)
    insert = _list_mutator("insert")
    pop = _list_mutator("pop")
    remove = _list_mutator("remove")
    clear = _list_mutator("clear")
    sort = _list_mutator("sort")
    reverse = _list_mutator("reverse")
    __setitem__ = _list_mutator("__setitem__")
    __delitem__ = _list_mutator("__delitem__")
    __imul__ = _list_mutator("__imul__")

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


def _set_mutator(name: str) -> Any:
    method = getattr(set, name)

    def mutate(self: TrackedSet, *args: Any, **kwargs: Any) -> Any:
        journal = _journal(self)
        if journal is not None:
            journal.set_whole(self)
        return method(self, *args, **kwargs)

    mutate.__name__ = name
    mutate.__doc__ = method.__doc__
    return mutate


class TrackedSet(set[Any]):
    """A ``set`` of a loaded state (its canonical form is the whole-state dump's)."""

    __slots__ = ("_ec_frag", "_ec_item", "_ec_parents", "_ec_tree")
    _ec_tree: Tree | None
    _ec_parents: list[tuple[Any, Any]]
    _ec_frag: bytes | None
    _ec_item: Any

    add = _set_mutator("add")
    discard = _set_mutator("discard")
    remove = _set_mutator("remove")
    pop = _set_mutator("pop")
    clear = _set_mutator("clear")
    update = _set_mutator("update")
    difference_update = _set_mutator("difference_update")
    intersection_update = _set_mutator("intersection_update")
    symmetric_difference_update = _set_mutator("symmetric_difference_update")
    __ior__ = _set_mutator("__ior__")
    __iand__ = _set_mutator("__iand__")
    __isub__ = _set_mutator("__isub__")
    __ixor__ = _set_mutator("__ixor__")

    def __copy__(self) -> set[Any]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[Any]:
        return {copy.deepcopy(v, memo) for v in self}

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (set, (set(self),))


class FieldDict(dict[str, Any]):
    """The ``__dict__`` of a model in a loaded state: a write straight into it (bypassing
    ``validate_assignment``) is journaled like an assignment."""

    __slots__ = ("_ec_owner",)
    _ec_owner: Any

    def _touch(self, name: Any) -> None:
        owner = self._ec_owner
        tree: Tree | None = getattr(owner, "_ec_tree", None)
        if tree is None:
            return
        if tree.journal is None:
            tree.outside = True
        else:
            tree.journal.attr(owner, name)

    def __setitem__(self, name: str, value: Any) -> None:
        self._touch(name)
        dict.__setitem__(self, name, value)

    def __delitem__(self, name: str) -> None:
        self._touch(name)
        dict.__delitem__(self, name)

    def pop(self, name: str, *default: Any) -> Any:
        self._touch(name)
        return dict.pop(self, name, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name not in self:
            self[name] = default
        return dict.__getitem__(self, name)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


def track_fields(model: Any) -> None:
    """Give a model of the tree a :class:`FieldDict` (pydantic replaces ``__dict__`` on assignment)."""
    if type(model.__dict__) is not FieldDict:
        fields = FieldDict(model.__dict__)
        fields._ec_owner = model
        object.__setattr__(model, "__dict__", fields)


CONTAINERS = (TrackedDict, TrackedList, TrackedSet)
