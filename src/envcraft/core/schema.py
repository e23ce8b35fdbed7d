"""Flat JSON Schemas for tool parameters, derived from type hints and docstrings.

Parameters stay flat (str/int/float/bool/enum/list of these) so every trainer's schema
model (VERL, TRL, OpenAI function tools, MCP) accepts them unchanged. ``int | float`` is
the one union allowed besides Optional: a JSON number passed through as the agent wrote it
(wrappers of foreign tools need ``3`` to stay ``3``, not become ``3.0``).
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class SchemaError(TypeError):
    """A tool signature that cannot be expressed as a flat JSON Schema."""


def unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    """Return ``(inner, is_optional)`` for ``X | None`` / ``Optional[X]``."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) != len(get_args(annotation))
        if len(members) == 1 and optional:
            return members[0], True
        if set(members) == {int, float}:
            return int | float, optional
        raise SchemaError(f"unions other than Optional and int | float are not flat: {annotation!r}")
    return annotation, False


def type_schema(annotation: Any) -> dict[str, Any]:
    """JSON Schema of one flat parameter type (optionality is expressed by ``required``)."""
    inner, _ = unwrap_optional(annotation)
    return _flat_schema(inner)


def _flat_schema(annotation: Any, allow_list: bool = True) -> dict[str, Any]:
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if get_origin(annotation) in (Union, types.UnionType) and set(get_args(annotation)) == {int, float}:
        # A JSON number whose integers stay integers (a float-typed field would turn 3 into 3.0).
        return {"type": "number"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = [m.value for m in annotation]
        return {"type": _json_type_of(values), "enum": values}
    origin = get_origin(annotation)
    if origin is Literal:
        values = list(get_args(annotation))
        return {"type": _json_type_of(values), "enum": values}
    if allow_list and origin in (list, typing.List):  # noqa: UP006 - both spellings accepted
        (item,) = get_args(annotation) or (str,)
        return {"type": "array", "items": _flat_schema(item, allow_list=False)}
    raise SchemaError(f"parameter type {annotation!r} is not flat (str/int/float/bool/enum/list)")


def _json_type_of(values: list[Any]) -> str:
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) != 1 or None in kinds:
        raise SchemaError(f"enum values must share one scalar type: {values!r}")
    return kinds.pop()  # type: ignore[return-value]
