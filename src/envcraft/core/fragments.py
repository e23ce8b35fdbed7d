"""The canonical JSON of a state, assembled from cached per-node pieces.

``canonical_json(state.model_dump(mode="json"))`` costs O(state) on every call. Here each
node of a loaded state (a model, a dict, a list) caches the canonical bytes of its own
subtree; a call invalidates only the nodes on the paths from what it touched up to the root,
so the next serialization re-encodes the touched entities and re-joins the cached bytes of
everything else. The result is byte for byte what :func:`envcraft.core.state.canonical_json`
gives for the whole dump (``tests/core/test_statetree.py`` checks it on every call).

Anything this fast path cannot reproduce exactly raises :class:`Slow`, and the caller falls
back to the whole dump: keys that are not strings, sets, models with their own serializers,
computed or excluded fields, a model instance of a subclass of its field's type, integers
beyond 64 bits and text that UTF-8 cannot hold (orjson refuses the last two, so the whole
text is then the standard library's, as ``canonical_json`` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson
from pydantic import BaseModel, PlainSerializer, TypeAdapter, WrapSerializer

from envcraft.core.tracking import TrackedDict, TrackedList, TrackedSet

NATIVE = (str, int, float, bool, type(None))
_SORT = orjson.OPT_SORT_KEYS
# orjson on a whole container only when every value in it is a JSON scalar: subclasses
# (tracked containers, str enums), dataclasses and datetimes reach ``_refuse``.
_SCALARS_ONLY = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


class Slow(Exception):
    """The fast path cannot reproduce the whole-dump bytes here: dump the whole state."""


def _refuse(value: Any) -> Any:
    raise TypeError


@dataclass(frozen=True)
class ModelPlan:
    """How to serialize one model class piece by piece: its fields in canonical order."""

    fields: tuple[tuple[str, bytes], ...]  # (name, b'"name":'), sorted by name
    custom: frozenset[str]  # fields pydantic must serialize (their own serializers)


@cache
def model_plan(cls: type[BaseModel]) -> ModelPlan | None:
    """``None`` when the model's dump is not just its fields by name (then: the whole dump)."""
    decorators = cls.__pydantic_decorators__
    config = cls.model_config
    if decorators.model_serializers or cls.__pydantic_computed_fields__:
        return None
    if config.get("serialize_by_alias") or any(
        config.get(k) for k in ("ser_json_timedelta", "ser_json_bytes", "ser_json_inf_nan")
    ):
        return None
    custom: set[str] = set()
    for serializer in decorators.field_serializers.values():
        custom.update(serializer.info.fields)
    for name, info in cls.__pydantic_fields__.items():
        if info.exclude:
            return None
        if any(isinstance(m, PlainSerializer | WrapSerializer) for m in info.metadata):
            custom.add(name)
    fields = tuple((name, orjson.dumps(name) + b":") for name in sorted(cls.__pydantic_fields__))
    return ModelPlan(fields, frozenset(custom))


@cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def adapter(annotation: Any) -> TypeAdapter[Any]:
    """A cached ``TypeAdapter`` (annotations that cannot be hashed get a fresh one)."""
    try:
        return _adapter(annotation)
    except TypeError:
        return TypeAdapter(annotation)


def fragment(node: Any) -> bytes:
    """The canonical JSON bytes of a tracked node (cached until the node changes)."""
    cached: bytes | None = node._ec_frag
    if cached is not None:
        return cached
    if isinstance(node, BaseModel):
        text = _model(node)
    elif isinstance(node, TrackedDict):
        text = _dict(node)
    elif isinstance(node, TrackedList):
        text = _list(node)
    else:  # a set: its order is the dump's iteration order
        raise Slow
    node._ec_frag = text
    return text


def value_fragment(value: Any, annotation: Any) -> bytes:
    """The canonical bytes of ``value`` held where ``annotation`` is declared."""
    if isinstance(value, BaseModel | TrackedDict | TrackedList | TrackedSet):
        return fragment(value)
    if type(value) in NATIVE:
        return _orjson(value)
    return _orjson(adapter(annotation).dump_python(value, mode="json"))


def _orjson(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=_SORT)
    except (TypeError, orjson.JSONEncodeError):  # big integers, lone surrogates, odd keys
        raise Slow from None


def _model(model: BaseModel) -> bytes:
    cls = type(model)
    plan = model_plan(cls)
    if plan is None:
        return _orjson(model.model_dump(mode="json"))
    values = model.__dict__
    parts = []
    for name, prefix in plan.fields:
        value = values[name]
        if name in plan.custom:
            dumped = model.__pydantic_serializer__.to_python(model, mode="json", include={name})
            parts.append(prefix + _orjson(dumped[name]))
        elif isinstance(value, BaseModel | TrackedDict | TrackedList | TrackedSet):
            expected = cls.__pydantic_fields__[name].annotation
            if isinstance(value, BaseModel) and isinstance(expected, type) and type(value) is not expected:
                raise Slow  # pydantic dumps it as the declared class, not as its own
            parts.append(prefix + fragment(value))
        elif type(value) in NATIVE:
            parts.append(prefix + _orjson(value))
        else:
            dumped = model.__pydantic_serializer__.to_python(model, mode="json", include={name})
            parts.append(prefix + _orjson(dumped[name]))
    return b"{" + b",".join(parts) + b"}"


def _scalars(value: Any) -> bytes | None:
    """orjson over a container holding JSON scalars only; ``None`` if anything else is inside."""
    try:
        return orjson.dumps(value, option=_SCALARS_ONLY, default=_refuse)
    except (TypeError, orjson.JSONEncodeError):
        return None


def _dict(node: TrackedDict) -> bytes:
    if node._ec_pieces is None:
        whole = _scalars(dict(node))
        if whole is not None:
            return whole
        node._ec_pieces = {}
    pieces: dict[Any, bytes] = node._ec_pieces
    order = node._ec_order
    if order is None:
        if any(type(k) is not str for k in node):
            raise Slow
        order = node._ec_order = sorted(node)
    item = node._ec_item
    out = []
    for key in order:
        piece = pieces.get(key)
        if piece is None:
            piece = pieces[key] = orjson.dumps(key) + b":" + value_fragment(dict.__getitem__(node, key), item)
        out.append(piece)
    return b"{" + b",".join(out) + b"}"


def _list(node: TrackedList) -> bytes:
    whole = _scalars(list(node))
    if whole is not None:
        return whole
    item = node._ec_item
    return b"[" + b",".join(value_fragment(v, item) for v in node) + b"]"
