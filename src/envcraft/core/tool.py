"""The ``@tool`` declaration and the argument validation behind it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from envcraft.core.docstrings import parse_docstring
from envcraft.core.errors import ErrorCategory, error_result
from envcraft.core.jsonio import MAX_DEPTH, depth, unencodable
from envcraft.core.schema import SchemaError, type_schema

F = TypeVar("F", bound=Callable[..., dict[str, Any]])

RESERVED_NAMES = frozenset({"reset", "step", "state", "close", "now", "fail", "data", "workspace"})
TOOL_ATTR = "__envcraft_tool__"


@dataclass(frozen=True)
class ToolAnnotations:
    """Optional hints for the tool dependency graph and for trainers.

    ``produces``/``consumes`` name entity kinds (e.g. ``"order_id"``); ``reads``/``writes``
    name state fields when static analysis cannot see them; ``read_only`` marks query tools.
    ``exclusive=False`` marks a system tool (shell, file tools) that never touches
    ``self.state``: it runs outside the session lock, so commands it starts can call domain
    tools of the same session through ``Environment.call_tool``.

    ``goal`` says how a user asks for what the tool does, as a template over its parameters
    (:mod:`envcraft.core.phrasing`): ``"cancel {order_id}, because {reason}"``. ``undoes``
    names the tools whose effect this one takes back (``cancel_booking`` undoes
    ``book_class``): a task never asks for both on the same record. ``examples`` gives, per
    free-text parameter, texts a user of this desk would dictate for it ("Instructor out sick"
    for a class's cancellation reason): they go into the parameter's JSON schema, and where the
    world holds no such text the data engine dictates one of them, not one of a bank shared by
    every desk. ``inspects`` marks a tool that writes down only what it found looking at one
    record (a dataset's profile): asked for, it is work like any; done unasked, it is a look, as
    a read-only tool's marks are (a message read gains "seen"), and no verifier holds it against
    the agent. ``fetches`` marks a tool that only brings in what the world has already decided
    (send/receive: the replies that have arrived): what it delivers is the world's doing, so the
    data engine's idle runs call it too, and an agent that fetches is no agent that did harm.
    """

    produces: tuple[str, ...] = ()
    consumes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    read_only: bool | None = None
    exclusive: bool = True
    goal: str | None = None
    undoes: tuple[str, ...] = ()
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    inspects: bool = False
    fetches: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """Everything the runtime knows about one tool; built once per environment class."""

    name: str
    description: str
    parameters: dict[str, Any]
    returns: str
    function: Callable[..., Any]
    arg_model: type[BaseModel]
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool form (also accepted by VERL, TRL and vLLM)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, args: Any) -> dict[str, Any] | dict[str, dict[str, Any]]:
        """Return validated keyword arguments, or an error result naming the bad field."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return error_result(
                ErrorCategory.INVALID_ARGUMENT,
                f"arguments to {self.name} must be a JSON object, got {type(args).__name__}",
            )
        nested = any(isinstance(v, dict | list) for v in args.values())
        if nested and depth(args) > MAX_DEPTH:
            message = f"arguments to {self.name} nest deeper than {MAX_DEPTH} levels"
            return error_result(ErrorCategory.INVALID_ARGUMENT, message)
        where = unencodable(args)
        if where is not None:  # a lone surrogate: no state, log line or file name can hold it
            name = ".".join(str(part) for part in where) or "arguments"
            return error_result(
                ErrorCategory.INVALID_ARGUMENT,
                f"invalid value for '{name}' in {self.name}: text that is not valid Unicode "
                "(a lone surrogate); send UTF-8 text",
                field=name,
            )
        try:
            model = self.arg_model.model_validate(args)
        except ValidationError as exc:
            return self._argument_error(exc)
        return {info.alias or name: getattr(model, name) for name, info in type(model).model_fields.items()}

    def _argument_error(self, exc: ValidationError) -> dict[str, Any]:
        first = exc.errors(include_url=False)[0]
        name = ".".join(str(p) for p in first["loc"]) or "arguments"
        prop = self.parameters["properties"].get(str(first["loc"][0]) if first["loc"] else "", {})
        requirement = _requirement(prop)
        if first["type"] == "missing":
            return error_result(
                ErrorCategory.MISSING_FIELD,
                f"missing required argument '{name}' for {self.name}: {requirement}",
                field=name,
                requirement=requirement,
            )
        if first["type"] == "extra_forbidden":
            accepted = sorted(self.parameters["properties"])
            return error_result(
                ErrorCategory.INVALID_ARGUMENT,
                f"unknown argument '{name}' for {self.name}; accepted: {', '.join(accepted)}",
                field=name,
                accepted=accepted,
            )
        return error_result(
            ErrorCategory.INVALID_ARGUMENT,
            f"invalid value for '{name}' in {self.name}: {first['msg']} (expected {requirement})",
            field=name,
            requirement=requirement,
        )


def _requirement(prop: dict[str, Any]) -> str:
    kind = prop.get("type", "value")
    if "enum" in prop:
        kind = "one of " + ", ".join(repr(v) for v in prop["enum"])
    elif kind == "array":
        kind = f"array of {prop.get('items', {}).get('type', 'value')}"
    desc = prop.get("description")
    return f"{kind} — {desc}" if desc else str(kind)


@overload
def tool(function: F) -> F: ...
@overload
def tool(
    *,
    produces: tuple[str, ...] | list[str] = (),
    consumes: tuple[str, ...] | list[str] = (),
    reads: tuple[str, ...] | list[str] = (),
    writes: tuple[str, ...] | list[str] = (),
    read_only: bool | None = None,
    exclusive: bool = True,
    goal: str | None = None,
    undoes: tuple[str, ...] | list[str] = (),
    examples: Mapping[str, Sequence[str]] | None = None,
    inspects: bool = False,
    fetches: bool = False,
) -> Callable[[F], F]: ...
def tool(function: Any = None, **hints: Any) -> Any:
    """Declare an environment method as a tool.

    The schema comes from the type hints and the Google-style docstring; the method must
    return a dict. Use as ``@tool`` or ``@tool(produces=["order_id"], read_only=True)``;
    ``goal=`` and ``undoes=`` are described on :class:`ToolAnnotations`.
    """

    def mark(fn: F) -> F:
        normalized: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list | tuple) else v for k, v in hints.items()
        }
        normalized["examples"] = {k: tuple(v) for k, v in (hints.get("examples") or {}).items()}
        annotations = ToolAnnotations(**normalized)
        setattr(fn, TOOL_ATTR, annotations)
        return fn

    return mark(function) if function is not None else mark


def build_spec(name: str, fn: Callable[..., Any]) -> ToolSpec:
    """Compile a decorated method into a :class:`ToolSpec` (schema + validator)."""
    if name in RESERVED_NAMES or name.startswith("_"):
        raise SchemaError(f"tool name {name!r} is reserved")
    doc = parse_docstring(fn.__doc__)
    hints = get_type_hints(fn)
    signature = inspect.signature(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}  # prefixed names + aliases: a parameter may be called "schema"
    examples = getattr(fn, TOOL_ATTR, ToolAnnotations()).examples
    unknown = sorted(set(examples) - set(list(signature.parameters)[1:]))
    if unknown:
        raise SchemaError(f"{name}: examples for no parameter: {', '.join(unknown)}")
    for pname, param in list(signature.parameters.items())[1:]:
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise SchemaError(f"{name}: *args/**kwargs are not allowed in tools")
        if pname not in hints:
            raise SchemaError(f"{name}: parameter {pname!r} has no type hint")
        annotation = hints[pname]
        prop = type_schema(annotation)
        if pname in doc.args:
            prop["description"] = doc.args[pname]
        if pname in examples:
            prop["examples"] = list(examples[pname])
        if param.default is inspect.Parameter.empty:
            required.append(pname)
            fields[f"p_{pname}"] = (annotation, Field(..., alias=pname))
        else:
            if param.default is not None:
                prop["default"] = _json_default(param.default)
            fields[f"p_{pname}"] = (annotation, Field(param.default, alias=pname))
        properties[pname] = prop
    # JSON has no NaN or infinity: a float argument holding one is refused by name.
    config = ConfigDict(extra="forbid", allow_inf_nan=False)
    arg_model = create_model(f"{name}_args", __config__=config, **fields)
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    description = doc.summary if not doc.description else f"{doc.summary}\n\n{doc.description}"
    return ToolSpec(
        name=name,
        description=description,
        parameters=parameters,
        returns=doc.returns,
        function=fn,
        arg_model=arg_model,
        annotations=getattr(fn, TOOL_ATTR),
    )


def _json_default(value: Any) -> Any:
    return value.value if hasattr(value, "value") else value
