"""Canonical state form: the bytes we persist, the hash we log, the diff we verify."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from envcraft.core.pointer import escape_token, unescape_token

MISSING = "<missing>"


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is.

    orjson does the common case (it is on every call's hot path, ~7x faster than the
    standard library); values it refuses (integers beyond 64 bits, non-string keys, lone
    surrogates) fall back to the standard library, which is deterministic too.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def strict_copy(value: Any) -> Any:
    """A plain-JSON copy of ``value`` (JSON's own types only), or ``ValueError``/``TypeError``
    when strict JSON cannot hold it (NaN, infinity). Keys are made strings and tuples lists, as
    the standard library does; orjson does the common case."""
    try:
        copied = orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        copied = None
    else:
        if copied == value:  # orjson writes NaN as null, so a copy with NaN differs
            return copied
    return json.loads(json.dumps(value, allow_nan=False))


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def state_hash(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (a state dict or any JSON value)."""
    return sha256_text(canonical_json(value))


def diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Structural diff as a list of ``{"op", "path", "before", "after"}`` changes.

    ``op`` is ``added``, ``removed`` or ``changed``. Dicts are compared key by key; lists
    element by element when their lengths match, otherwise as a whole value, so an
    inserted element is one change rather than a cascade of shifted ones. Paths are JSON
    Pointers (RFC 6901): ``""`` is the whole value and ``"/"`` is the key ``""``.

    Nearly all of two states is equal, so a container pair that native code finds strictly
    equal (``==``, then the same JSON bytes: ``1`` against ``1.0`` or ``True`` is still a
    change) is skipped without walking it.
    """
    if isinstance(before, dict) and isinstance(after, dict):
        if _strictly_equal(before, after):
            return []
        changes: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}/{escape_token(str(key))}"
            if key not in after:
                changes.append({"op": "removed", "path": sub, "before": before[key], "after": None})
            elif key not in before:
                changes.append({"op": "added", "path": sub, "before": None, "after": after[key]})
            else:
                changes.extend(diff(before[key], after[key], sub))
        return changes
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        if _strictly_equal(before, after):
            return []
        changes = []
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            changes.extend(diff(b, a, f"{path}/{i}"))
        return changes
    if before == after and type(before) is type(after):
        return []
    return [{"op": "changed", "path": path, "before": before, "after": after}]


# subclasses of str/int/dict/list (enums, tracked containers) raise instead of encoding as their
# base type: the walk then compares them with the type checks below
_STRICT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _strictly_equal(before: dict[str, Any] | list[Any], after: dict[str, Any] | list[Any]) -> bool:
    """Equal with the same types at every leaf (False also when unsure: the caller walks)."""
    if before is after:
        return True
    if before != after:
        return False
    try:
        return orjson.dumps(before, option=_STRICT) == orjson.dumps(after, option=_STRICT)
    except (TypeError, orjson.JSONEncodeError):
        return False


def get_path(value: Any, path: str) -> Any:
    """Read a JSON Pointer produced by :func:`diff` (``""`` is the root); ``MISSING`` if absent."""
    if path == "":
        return value
    for raw in path.removeprefix("/").split("/"):
        key = unescape_token(raw)
        if isinstance(value, dict):
            if key not in value:
                return MISSING
            value = value[key]
        elif isinstance(value, list):
            if not key.isdigit() or int(key) >= len(value):
                return MISSING
            value = value[int(key)]
        else:
            return MISSING
    return value


def objects_in(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``value``, ``value`` itself first if it is one: the records a tool's
    answer holds, at any depth (the rows a lookup lists)."""
    if isinstance(value, dict):
        return [value, *(found for item in value.values() for found in objects_in(item))]
    if isinstance(value, list):
        return [found for item in value for found in objects_in(item)]
    return []
