"""How each BFCL function looks as an envcraft tool, and calls translated both ways.

A tool's parameters come from BFCL's function doc (what a BFCL model is shown); whether a
parameter is required, and its default, come from the Python method (what BFCL executes).
Doc types map to flat types: string, integer and boolean to themselves, ``float`` to
``int | float`` (a JSON number passed through unchanged, as BFCL's ``eval`` passes the
literal the model wrote: ``add(a=3, b=5)`` returns ``8``, not ``8.0``), arrays to lists.

The one non-flat parameter in the eight classes is ``TicketAPI.edit_ticket(updates: dict)``.
A ``dict`` parameter with declared properties becomes one optional flat parameter per
property; the wrapper rebuilds the dict from the ones given (``None`` = not given, which is
also how ``edit_ticket`` treats ``None`` values). A dict key outside the declared properties
cannot be expressed; BFCL would answer it with its own error dict, the runtime refuses the
call as an unknown argument.

BFCL call strings (``cd(folder='document')``, ``sort('final_report.pdf')``) are parsed with
``ast`` (literal arguments only; positional ones bound by the method's signature) and
rendered back with ``repr``, which BFCL's ``eval`` reads.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from functools import cache
from typing import Any

from envcraft.integrations.bfcl import source

_REQUIRED = inspect.Parameter.empty
_TYPES = {"string": "str", "integer": "int", "float": "int | float", "boolean": "bool"}


class CallError(ValueError):
    """A call that has no faithful translation (unknown function, argument, or a non-literal)."""


@dataclass(frozen=True)
class Param:
    """One flat tool parameter and where its value goes in the BFCL call."""

    name: str
    annotation: str
    description: str
    required: bool
    default: Any  # signature default (None when BFCL's default is not a scalar, e.g. [])
    bfcl_name: str
    field: str | None = None  # the key inside BFCL's dict parameter ``bfcl_name``
    omit_none: bool = False  # None means "BFCL's own default" (left out of the call)


@dataclass(frozen=True)
class Shape:
    """One BFCL method as a tool."""

    class_name: str
    name: str
    summary: str
    returns: str
    params: tuple[Param, ...]
    signature: tuple[str, ...]  # BFCL's positional order
    dict_params: frozenset[str]
    required_dicts: frozenset[str]


@cache
def shapes(class_name: str) -> dict[str, Shape]:
    """Every tool of one class, in BFCL's doc order."""
    cls = source.bfcl_class(class_name)
    return {doc["name"]: _shape(class_name, cls, doc) for doc in source.func_docs(class_name)}


def class_description(class_name: str) -> str:
    """The sentence BFCL prefixes to every function of the class."""
    docs = source.func_docs(class_name)
    return docs[0]["description"].split("Tool description: ", 1)[0].strip() if docs else class_name


def _shape(class_name: str, cls: type, doc: dict[str, Any]) -> Shape:
    method = inspect.signature(getattr(cls, doc["name"]))
    bfcl_params = [p for p in method.parameters.values() if p.name != "self"]
    props = doc["parameters"].get("properties", {})
    params: list[Param] = []
    dicts: set[str] = set()
    required_dicts: set[str] = set()
    for p in bfcl_params:
        spec = props.get(p.name)
        if spec is None:
            raise CallError(f"{class_name}.{doc['name']}: parameter {p.name} is not documented")
        if spec["type"] == "dict":
            dicts.add(p.name)
            if p.default is _REQUIRED:
                required_dicts.add(p.name)
            for key, sub in spec.get("properties", {}).items():
                note = f"{sub.get('description', '')} (the {key!r} entry of BFCL's {p.name!r} dict)".strip()
                params.append(Param(key, _annotation(sub), note, False, None, p.name, key))
            continue
        required = p.default is _REQUIRED
        scalar = p.default is None or isinstance(p.default, bool | int | float | str)
        default = None if required or not scalar else p.default
        description = spec.get("description", "")
        if not required and not scalar:
            description = f"{description} Defaults to {p.default!r}.".strip()
        omit_none = not required and p.default is not None
        params.append(
            Param(p.name, _annotation(spec), description, required, default, p.name, None, omit_none)
        )
    doc_order = {name: i for i, name in enumerate(props)}
    # Required first (a Python signature needs it), each group in BFCL's doc order.
    params.sort(key=lambda q: (not q.required, doc_order.get(q.bfcl_name, len(doc_order))))
    names = [q.name for q in params]
    if len(set(names)) != len(names):
        raise CallError(f"{class_name}.{doc['name']}: flattened parameters collide: {names}")
    return Shape(
        class_name=class_name,
        name=doc["name"],
        summary=doc["description"].split("Tool description: ", 1)[-1].strip(),
        returns=_returns(doc.get("response", {})),
        params=tuple(params),
        signature=tuple(p.name for p in bfcl_params),
        dict_params=frozenset(dicts),
        required_dicts=frozenset(required_dicts),
    )


def _annotation(spec: dict[str, Any]) -> str:
    kind = spec.get("type")
    if kind == "array":
        item = spec.get("items", {}).get("type")
        if item not in _TYPES:
            raise CallError(f"array of {item!r} has no flat form")
        return f"list[{_TYPES[item]}]"
    if kind not in _TYPES:
        raise CallError(f"type {kind!r} has no flat form")
    return _TYPES[kind]


def _returns(response: dict[str, Any]) -> str:
    props = response.get("properties", {})
    if not props:
        return "BFCL documents no result fields."
    parts = [
        f"{name} ({spec.get('type', 'any')}): {spec.get('description', '').strip().rstrip('.')}"
        for name, spec in props.items()
    ]
    return "; ".join(parts) + "."


# -- translation -------------------------------------------------------------------------------
def to_bfcl(shape: Shape, args: dict[str, Any]) -> dict[str, Any]:
    """Flat tool arguments -> BFCL keyword arguments (absent or None optional values left out)."""
    kwargs: dict[str, Any] = {name: {} for name in shape.required_dicts}
    for param in shape.params:
        value = args.get(param.name)
        if param.field is not None:
            if value is not None:
                kwargs.setdefault(param.bfcl_name, {})[param.field] = value
        elif param.name in args and not (value is None and param.omit_none):
            kwargs[param.bfcl_name] = value
    return {name: kwargs[name] for name in shape.signature if name in kwargs}


def from_bfcl(shape: Shape, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """BFCL call arguments (positional bound by the signature) -> flat tool arguments."""
    if len(args) > len(shape.signature):
        raise CallError(
            f"{shape.name}: {len(args)} positional arguments, signature has {len(shape.signature)}"
        )
    bound = dict(zip(shape.signature, args, strict=False))
    for name, value in kwargs.items():
        if name in bound or name not in shape.signature:
            raise CallError(f"{shape.name}: unexpected or repeated argument {name!r}")
        bound[name] = value
    fields = {(p.bfcl_name, p.field): p.name for p in shape.params if p.field is not None}
    flat: dict[str, Any] = {}
    for name, value in bound.items():
        if name not in shape.dict_params:
            flat[name] = value
            continue
        if not isinstance(value, dict) or any((name, key) not in fields for key in value):
            raise CallError(f"{shape.name}: {name}={value!r} has keys outside its documented fields")
        flat.update({fields[(name, key)]: item for key, item in value.items()})
    return flat


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``name(args...)`` with literal arguments -> (name, positional, keyword)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise CallError(f"not a plain function call: {text!r}")
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except (SyntaxError, ValueError) as exc:
        raise CallError(f"cannot parse {text!r}: {exc}") from None
    if len(kwargs) != len(node.keywords):
        raise CallError(f"**kwargs in {text!r}")
    return node.func.id, args, kwargs


def render_call(name: str, kwargs: dict[str, Any]) -> str:
    """A BFCL call string that BFCL's ``eval`` reads back to the same arguments."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


def owner(involved: list[str], function: str) -> str | None:
    """BFCL's rule (multi_turn_utils): the last involved class with a method of that name."""
    found = None
    for class_name in involved:
        if function in shapes(class_name):
            found = class_name
    return found
