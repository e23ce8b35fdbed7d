"""Strict JSON from outside (command-line arguments, state files, JSONL lines).

``json.loads`` accepts what JSON is not (``NaN``, ``Infinity``, ``1e400`` read as infinity),
raises ``UnicodeDecodeError`` on bytes that are not UTF-8 and ``RecursionError`` on deep
nesting. :func:`loads` refuses all of them with :class:`JsonInputError`, one line that says
what is wrong, so every door turns bad input into the same clear error.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 256  # no state, task or tool call nests anywhere near this deep


class JsonInputError(ValueError):
    """Input that is not strict JSON; the message is one line naming the problem."""


def _constant(name: str) -> Any:
    raise JsonInputError(f"{name} is not a JSON number")


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonInputError(f"the number {text[:40]} is out of range")
    return value


def loads(data: str | bytes) -> Any:
    """Parse strict JSON (UTF-8 if bytes); :class:`JsonInputError` on anything else."""
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInputError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(data, parse_constant=_constant, parse_float=_number)
    except JsonInputError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise JsonInputError(f"nested deeper than {MAX_DEPTH} levels") from None
    if depth(value) > MAX_DEPTH:
        raise JsonInputError(f"nested deeper than {MAX_DEPTH} levels")
    return value


def depth(value: Any) -> int:
    """How deeply containers nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            level += 1
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            stack.extend((child, level) for child in item)
    return deepest


def unencodable(value: Any) -> tuple[str | int, ...] | None:
    """Where in ``value`` a string (or a key) sits that UTF-8 cannot hold, or None.

    ``json.loads`` reads an escaped lone surrogate (``"\\ud800"``) as a ``str`` no file, log
    line or file name can carry, so it must be refused where it enters, not where it is written.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if not _encodes(item):
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and not _encodes(key):
                    return (*where, key.encode("utf-8", "backslashreplace").decode("ascii"))
                stack.append((child, (*where, key)))
        elif isinstance(item, list | tuple):
            stack.extend((child, (*where, index)) for index, child in enumerate(item))
    return None


def _encodes(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
