"""A live BFCL class instance as envcraft state, and back again.

The state of a wrapped environment is the instance's attribute dict, split the way BFCL's
own ``state_checker`` splits it: ``attributes`` (public names, the ones BFCL compares) and
``private`` (leading underscore: never compared, but the methods read them, e.g.
``GorillaFileSystem._current_dir`` or the seeded ``_random`` generators). Values are encoded
by :mod:`objgraph`, which keeps key order, key types, sets, sharing and cycles.

Two things are left out on purpose: private attributes still equal to the scalar a fresh
instance sets in ``__init__`` (``_api_description``), and the attributes named in
:data:`VOLATILE` — wall-clock stamps that BFCL sets with ``datetime.now()`` and never reads
or compares; keeping them would make every state hash differ from run to run.
"""

from __future__ import annotations

import base64
import copy
import random
import struct
from functools import cache
from types import ModuleType
from typing import Any

from envcraft.integrations.bfcl import objgraph, source

# Per BFCL's gorilla_file_system.py: File._last_modified is written by File.__init__/_write/_append
# and read nowhere.
VOLATILE: dict[str, frozenset[str]] = {"File": frozenset({"_last_modified"})}
# The attributes BFCL's own __eq__ compares (gorilla_file_system.py: File.__eq__, Directory.__eq__);
# objects of any other class compare by identity. Verifiers use this table to judge equality
# the way BFCL's state checker does.
EQ_FIELDS: dict[str, tuple[str, ...]] = {"File": ("name", "content"), "Directory": ("name", "contents")}
RANDOM = "random.Random"


def instance_state(instance: Any) -> dict[str, dict[str, Any]]:
    """``{"attributes": {...}, "private": {...}}`` of a BFCL instance (public names encoded first)."""
    name = type(instance).__name__
    defaults = _private_defaults(name)
    public = {k: v for k, v in vars(instance).items() if not k.startswith("_")}
    private = {
        k: v
        for k, v in vars(instance).items()
        if k.startswith("_") and not (k in defaults and _same_scalar(defaults[k], v))
    }
    encoded = objgraph.encode({**public, **private}, _describer(type(instance).__module__))
    return {
        "attributes": {k: encoded[k] for k in public},
        "private": {k: encoded[k] for k in private},
    }


def restore(name: str, state: dict[str, Any]) -> Any:
    """A fresh instance of BFCL class ``name`` carrying the attributes of ``state``."""
    module = source.class_module(name)
    instance = source.bfcl_class(name)()
    document = {**state.get("attributes", {}), **state.get("private", {})}
    vars(instance).update(objgraph.decode(document, _object_maker(module), _opaque))
    return instance


def load_initial(name: str, config: dict[str, Any], long_context: bool) -> Any:
    """S0 exactly as BFCL builds it (multi_turn_utils): a fresh instance, then, unless the class
    is stateless, ``_load_scenario(deepcopy(config), long_context=...)``."""
    instance = source.bfcl_class(name)()
    if not source.is_stateless(name):
        instance._load_scenario(copy.deepcopy(config), long_context=long_context)
    return instance


def initial_state(name: str, config: dict[str, Any], long_context: bool) -> dict[str, dict[str, Any]]:
    return instance_state(load_initial(name, config, long_context))


@cache
def _private_defaults(name: str) -> dict[str, Any]:
    fresh = vars(source.bfcl_class(name)())
    return {k: v for k, v in fresh.items() if k.startswith("_") and _is_scalar(v)}


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def _same_scalar(default: Any, value: Any) -> bool:
    return _is_scalar(value) and type(value) is type(default) and value == default


def _describer(module: str) -> Any:
    def describe(value: Any) -> tuple[str, str, Any] | None:
        kind = type(value)
        if kind is random.Random:
            version, words, gauss = value.getstate()
            packed = base64.b64encode(struct.pack(f"<{len(words)}I", *words)).decode("ascii")
            return "opaque", RANDOM, [version, packed, gauss]
        if kind.__module__ == module:
            skip = VOLATILE.get(kind.__name__, frozenset())
            return "object", kind.__name__, {k: v for k, v in vars(value).items() if k not in skip}
        return None

    return describe


def _object_maker(module: ModuleType) -> Any:
    def make(name: str) -> Any:
        cls = getattr(module, name, None)
        if not isinstance(cls, type) or cls.__module__ != module.__name__:
            raise objgraph.CodecError(f"no class {name!r} in {module.__name__}")
        return object.__new__(cls)

    return make


def _opaque(name: str, payload: Any) -> Any:
    if name != RANDOM:
        raise objgraph.CodecError(f"unknown opaque value {name!r}")
    version, packed, gauss = payload
    raw = base64.b64decode(packed)
    generator = random.Random()
    generator.setstate((version, struct.unpack(f"<{len(raw) // 4}I", raw), gauss))
    return generator
