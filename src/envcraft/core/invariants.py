"""Invariants checked item by item, so a call re-checks only what it touched.

A state model's ``@model_validator(mode="after")`` sees the whole state: the runtime runs it
again after every call that changed anything (correct, but its cost grows with the state).
An ``@invariant(field)`` method instead checks one item of the dict ``field``::

    class ShopState(StateModel):
        customers: dict[str, Customer] = {}
        orders: dict[str, Order] = {}

        @invariant("orders")
        def _order_has_a_customer(self, order_id: str, order: Order) -> None:
            if order.customer_id not in self.customers:
                raise ValueError(f"{order_id} belongs to unknown customer {order.customer_id}")

Whenever the model is validated as a whole (``model_validate``, a state loaded from disk),
every invariant runs for every item. After a call, the session re-runs an invariant only for
the items it touched and for the items whose last check read something the call changed:
while it runs, ``self`` records what it reads (``key in self.customers``,
``self.customers[key]``, ``.get``; iterating or ``len`` reads the whole dict; any other field
is read as a whole). Raise ``ValueError`` to refuse the state. An invariant must depend only
on what it reads through ``self`` and on its item.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

INVARIANT_ATTR = "__envcraft_invariant__"
# Validation context key: the session runs the invariants itself (and records what they read).
SKIP_INVARIANTS = "envcraft_skip_invariants"
ALL: Any = type("All", (), {"__repr__": lambda self: "<all>"})()  # the whole dict was read
WHOLE: Any = type("Whole", (), {"__repr__": lambda self: "<whole>"})()  # a non-dict field was read

Check = Callable[[Any, Any, Any], None]


def invariant(field: str) -> Callable[[Check], Check]:
    """Declare a method ``(self, key, item) -> None`` that checks each item of dict ``field``."""

    def mark(function: Check) -> Check:
        setattr(function, INVARIANT_ATTR, field)
        return function

    return mark


@dataclass(frozen=True)
class Invariant:
    name: str
    field: str
    check: Check


_FOUND: dict[type, tuple[Invariant, ...]] = {}


def invariants_of(cls: type) -> tuple[Invariant, ...]:
    """The ``@invariant`` methods of a model class (its bases' included), by name."""
    known = _FOUND.get(cls)
    if known is None:
        known = _FOUND[cls] = _collect(cls)
    return known


def _collect(cls: type) -> tuple[Invariant, ...]:
    found: dict[str, Invariant] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            field = getattr(member, INVARIANT_ATTR, None)
            if isinstance(field, str):
                found[name] = Invariant(name, field, member)
    for item in found.values():
        if item.field not in getattr(cls, "model_fields", {}):
            raise TypeError(f"{cls.__name__}.{item.name}: @invariant names no field {item.field!r}")
    return tuple(found.values())


def check_all(model: Any) -> None:
    """Every invariant of ``model`` over every item (the whole-model validation)."""
    for item in invariants_of(type(model)):
        collection = getattr(model, item.field)
        if isinstance(collection, dict):
            for key, value in list(collection.items()):
                item.check(model, key, value)


class Reads:
    """``self`` for an invariant run: records which fields (and dict keys) the check reads."""

    __slots__ = ("_model", "reads")

    def __init__(self, model: Any) -> None:
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "reads", set())

    def __getattr__(self, name: str) -> Any:
        model = self._model
        if name in type(model).model_fields:
            value = model.__dict__.get(name)
            if isinstance(value, dict):
                return DictReads(value, self.reads, name)
            self.reads.add((name, WHOLE))
            return value
        member = getattr(type(model), name, None)
        if isinstance(member, property) and member.fget is not None:
            return member.fget(self)
        if isinstance(member, types.FunctionType):
            return types.MethodType(member, self)
        return getattr(model, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError("an invariant must not change the state")


class DictReads:
    """A read-only view of one dict field that records the keys looked up."""

    __slots__ = ("_data", "_field", "_reads")

    def __init__(self, data: dict[Any, Any], reads: set[tuple[str, Any]], field: str) -> None:
        self._data = data
        self._reads = reads
        self._field = field

    def _key(self, key: Any) -> None:
        try:
            self._reads.add((self._field, key))
        except TypeError:  # an unhashable key looks nothing up
            self._reads.add((self._field, ALL))

    def _all(self) -> None:
        self._reads.add((self._field, ALL))

    def __contains__(self, key: Any) -> bool:
        self._key(key)
        return key in self._data

    def __getitem__(self, key: Any) -> Any:
        self._key(key)
        return self._data[key]

    def get(self, key: Any, default: Any = None) -> Any:
        self._key(key)
        return self._data.get(key, default)

    def __iter__(self) -> Iterator[Any]:
        self._all()
        return iter(list(self._data))

    def __len__(self) -> int:
        self._all()
        return len(self._data)

    def keys(self) -> list[Any]:
        self._all()
        return list(self._data.keys())

    def values(self) -> list[Any]:
        self._all()
        return list(self._data.values())

    def items(self) -> list[tuple[Any, Any]]:
        self._all()
        return list(self._data.items())


def run_recorded(model: Any, item: Invariant, key: Any) -> set[tuple[str, Any]]:
    """Check one item; returns what the check read. Raises what the check raises."""
    reads = Reads(model)
    collection = model.__dict__.get(item.field)
    item.check(reads, key, collection[key])
    found: set[tuple[str, Any]] = reads.reads
    return found
