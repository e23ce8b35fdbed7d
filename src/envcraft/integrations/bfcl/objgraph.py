"""A Python object graph as plain JSON, faithfully enough to resume a BFCL class from it.

BFCL's classes keep state in ordinary Python values whose details change behaviour: dict
insertion order (``ls`` lists a directory in it), integer dict keys, sets, tuples, shared
and cyclic references (``Directory.parent``, directories that ``cp`` copies shallowly), and
seeded ``random.Random`` generators. The runtime persists state as canonical JSON, which
sorts keys and knows none of these, so the encoding makes each one explicit:

* scalars and lists are themselves, except non-finite floats: ``{"$float": "inf"}`` (JSON has
  no such numbers, and a JSON library may write them as null);
* a dict whose keys are strings not starting with ``$`` is a JSON object, with
  ``"$order": [keys]`` when its insertion order is not sorted order; any other dict is
  ``{"$items": [[key, value], ...]}``;
* ``{"$tuple": [...]}``, ``{"$set": [...]}``;
* an object of a registered class is ``{"$object": name, attribute: value, ...}``; an opaque
  value (a random generator) is ``{"$opaque": name, "value": payload}``;
* the second and later occurrences of the same container or object are
  ``{"$ref": "<JSON Pointer of its first occurrence>"}``, so sharing and cycles survive.

This module is stdlib-only and free of ``from __future__`` imports on purpose: task
verifiers embed its source to decode states in their isolated interpreter.
"""

import math
from collections.abc import Callable
from typing import Any

Describe = Callable[[Any], "tuple[str, str, Any] | None"]
MakeObject = Callable[[str], Any]
MakeOpaque = Callable[[str, Any], Any]
Assign = Callable[[Any], None]

MARKERS = ("$ref", "$object", "$opaque", "$items", "$tuple", "$set", "$order", "$float")


class CodecError(ValueError):
    """A value the encoding cannot represent faithfully (the message names where)."""


def escape(key: str) -> str:
    # Not envcraft.core.pointer.escape_token: this module is embedded in every imported BFCL
    # task's verifier, which runs stdlib-only in the isolated worker (no envcraft there).
    return key.replace("~", "~0").replace("/", "~1")


def encode(document: dict[str, Any], describe: Describe) -> dict[str, Any]:
    """Encode a namespace of named values (its own order is not kept). ``describe(obj)`` returns
    ``("object", name, attrs)``, ``("opaque", name, payload)`` or None for a non-builtin value."""
    seen: dict[int, str] = {}

    def enc(value: Any, path: str, frozen: bool) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return {"$float": repr(value)}
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if id(value) in seen:
            if frozen:
                raise CodecError(f"{path}: a shared value inside a tuple or set")
            return {"$ref": seen[id(value)]}
        if isinstance(value, tuple):
            return {"$tuple": [enc(v, f"{path}/$tuple/{i}", True) for i, v in enumerate(value)]}
        seen[id(value)] = path
        if isinstance(value, list):
            return [enc(v, f"{path}/{i}", frozen) for i, v in enumerate(value)]
        if isinstance(value, set | frozenset):
            return {"$set": [enc(v, f"{path}/$set/{i}", True) for i, v in enumerate(value)]}
        if isinstance(value, dict):
            return enc_dict(value, path, frozen)
        described = describe(value)
        if described is None:
            raise CodecError(f"{path}: cannot encode a {type(value).__name__}")
        kind, name, body = described
        if kind == "opaque":
            return {"$opaque": name, "value": body}
        out: dict[str, Any] = {"$object": name}
        for attr, item in body.items():
            if attr in MARKERS:
                raise CodecError(f"{path}: attribute {attr!r} collides with a marker")
            out[attr] = enc(item, f"{path}/{escape(attr)}", frozen)
        return out

    def enc_dict(value: dict[Any, Any], path: str, frozen: bool) -> dict[str, Any]:
        keys = list(value)
        if all(isinstance(k, str) and not k.startswith("$") for k in keys):
            out: dict[str, Any] = {k: enc(value[k], f"{path}/{escape(k)}", frozen) for k in keys}
            if keys != sorted(keys):
                out["$order"] = keys
            return out
        items = []
        for i, (k, v) in enumerate(value.items()):
            items.append([enc(k, f"{path}/$items/{i}/0", True), enc(v, f"{path}/$items/{i}/1", frozen)])
        return {"$items": items}

    return {name: enc(value, f"/{escape(name)}", False) for name, value in document.items()}


def decode(document: dict[str, Any], make_object: MakeObject, make_opaque: MakeOpaque) -> dict[str, Any]:
    """Inverse of :func:`encode`: ``make_object(name)`` returns an empty instance (its
    ``__dict__`` is filled here), ``make_opaque(name, payload)`` the opaque value."""
    nodes: dict[str, Any] = {}
    pending: list[tuple[str, Assign, str]] = []

    def dec(node: Any, path: str, assign: Assign) -> None:
        if isinstance(node, list):
            out: list[Any] = []
            nodes[path] = out
            for i, item in enumerate(node):
                out.append(None)
                dec(item, f"{path}/{i}", _setter(out, i))
            assign(out)
            return
        if not isinstance(node, dict):
            assign(node)
            return
        if "$ref" in node:
            pending.append((node["$ref"], assign, path))
            return
        if "$float" in node:
            assign(float(node["$float"]))
            return
        if "$tuple" in node:
            assign(tuple(_frozen(dec, node["$tuple"], f"{path}/$tuple")))
            return
        if "$set" in node:
            members = set(_frozen(dec, node["$set"], f"{path}/$set"))
            nodes[path] = members
            assign(members)
            return
        if "$opaque" in node:
            opaque = make_opaque(node["$opaque"], node["value"])
            nodes[path] = opaque
            assign(opaque)
            return
        if "$object" in node:
            obj = make_object(node["$object"])
            nodes[path] = obj
            attrs: dict[str, Any] = obj.__dict__
            for attr, item in node.items():
                if attr != "$object":
                    attrs[attr] = None
                    dec(item, f"{path}/{escape(attr)}", _setter(attrs, attr))
            assign(obj)
            return
        mapping: dict[Any, Any] = {}
        nodes[path] = mapping
        if "$items" in node:
            for i, (key, item) in enumerate(node["$items"]):
                (k,) = _frozen(dec, [key], f"{path}/$items/{i}/0", suffix=False)
                mapping[k] = None
                dec(item, f"{path}/$items/{i}/1", _setter(mapping, k))
        else:
            keys = node.get("$order") or sorted(k for k in node if k != "$order")
            if sorted(keys) != sorted(k for k in node if k != "$order"):
                raise CodecError(f"{path}: $order does not list the keys of its object")
            for k in keys:
                mapping[k] = None
                dec(node[k], f"{path}/{escape(k)}", _setter(mapping, k))
        assign(mapping)

    result: dict[str, Any] = {}
    for name, node in document.items():
        result[name] = None
        dec(node, f"/{escape(name)}", _setter(result, name))
    for target, assign, path in pending:
        if target not in nodes:
            raise CodecError(f"{path}: $ref to {target!r}, which is not a container or object")
        assign(nodes[target])
    return result


def _setter(container: Any, key: Any) -> Assign:
    def assign(value: Any) -> None:
        container[key] = value

    return assign


def _frozen(
    dec: Callable[[Any, str, Assign], None], items: list[Any], path: str, suffix: bool = True
) -> list[Any]:
    """Decode the members of a tuple, a set or a dict key (no references allowed inside)."""
    out: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and "$ref" in item:
            raise CodecError(f"{path}/{i}: a reference inside a tuple, set or key")
        box: list[Any] = []
        dec(item, f"{path}/{i}" if suffix else path, box.append)
        out.append(box[0])
    return out
