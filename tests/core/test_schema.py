"""Tool schemas come from type hints and Google docstrings, and stay flat."""

from __future__ import annotations

import enum
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

from envcraft.core import Environment, tool
from envcraft.core.docstrings import parse_docstring
from envcraft.core.schema import SchemaError
from envcraft.core.tool import RESERVED_NAMES, build_spec


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


@tool
def ticket(
    self: Any,
    title: str,
    hours: float,
    count: int,
    urgent: bool,
    channel: Literal["email", "phone"],
    priority: Priority,
    labels: list[str],
    scores: list[int] | None = None,
    note: Optional[str] = None,  # noqa: UP045 - the old spelling must work too
    level: Level = Level.TWO,
    retries: int = 3,
    mode: Literal["fast", "safe"] = "safe",
) -> dict[str, Any]:
    """Open a support ticket.

    Tickets are routed by channel and priority.

    Args:
        title: Short title
            that continues on a second line.
        hours: Estimated effort in hours.
        count (int): Number of affected users.
        urgent: Page the on-call engineer.
        channel: Where the customer wrote in.
        priority: Triage priority.
        labels: Free-form labels.
        scores: Optional scores.
        note: Optional internal note.
        level: Support level.
        retries: Delivery retries.
        mode: Processing mode.

    Returns:
        The ticket id.
    """
    return {}


def test_every_flat_type_maps_to_json_schema() -> None:
    spec = build_spec("ticket", ticket)
    props = spec.parameters["properties"]
    assert props["title"]["type"] == "string"
    assert props["hours"]["type"] == "number"
    assert props["count"]["type"] == "integer"
    assert props["urgent"]["type"] == "boolean"
    assert props["channel"] == {
        "type": "string",
        "enum": ["email", "phone"],
        "description": props["channel"]["description"],
    }
    assert props["priority"]["enum"] == ["low", "high"] and props["priority"]["type"] == "string"
    assert props["level"]["enum"] == [1, 2] and props["level"]["type"] == "integer"
    assert props["labels"]["type"] == "array" and props["labels"]["items"] == {"type": "string"}
    assert props["scores"]["items"] == {"type": "integer"}
    assert props["note"]["type"] == "string"


def test_required_optional_and_defaults() -> None:
    spec = build_spec("ticket", ticket)
    params = spec.parameters
    assert params["type"] == "object"
    assert params["required"] == ["title", "hours", "count", "urgent", "channel", "priority", "labels"]
    props = params["properties"]
    assert "default" not in props["scores"] and "default" not in props["note"]
    assert props["retries"]["default"] == 3
    assert props["mode"]["default"] == "safe"
    assert props["level"]["default"] == 2, "enum defaults are exported as their JSON value"


def test_docstring_supplies_descriptions() -> None:
    spec = build_spec("ticket", ticket)
    props = spec.parameters["properties"]
    assert spec.description == "Open a support ticket.\n\nTickets are routed by channel and priority."
    assert props["title"]["description"] == "Short title that continues on a second line."
    assert props["count"]["description"] == "Number of affected users."
    assert spec.returns == "The ticket id."
    assert spec.openai_schema() == {
        "type": "function",
        "function": {"name": "ticket", "description": spec.description, "parameters": spec.parameters},
    }


def test_validation_applies_defaults_and_coerces_enums() -> None:
    spec = build_spec("ticket", ticket)
    args = {
        "title": "t",
        "hours": 2,
        "count": 1,
        "urgent": False,
        "channel": "phone",
        "priority": "high",
        "labels": [],
    }
    kwargs = spec.validate(args)
    assert kwargs["priority"] is Priority.HIGH
    assert kwargs["hours"] == 2.0
    assert (kwargs["retries"], kwargs["mode"], kwargs["note"], kwargs["level"]) == (
        3,
        "safe",
        None,
        Level.TWO,
    )


def test_docstring_without_sections() -> None:
    doc = parse_docstring("Just one line.")
    assert (doc.summary, doc.description, doc.args, doc.returns) == ("Just one line.", "", {}, "")
    assert parse_docstring(None).summary == ""


@pytest.mark.parametrize("name", [*sorted(RESERVED_NAMES), "_private"])
def test_reserved_tool_names_are_rejected(name: str) -> None:
    def method(self: Any) -> dict[str, Any]:
        """Collide."""
        return {}

    with pytest.raises(SchemaError, match="reserved"):
        build_spec(name, tool(method))


def test_a_tools_example_texts_go_into_its_parameters_schema() -> None:
    def cancel(self: Any, booking_id: str, reason: str) -> dict[str, Any]:
        """Cancel a booking.

        Args:
            booking_id: The booking.
            reason: Why, in a few words.
        """
        return {}

    spec = build_spec("cancel", tool(examples={"reason": ["plans changed", "booked twice"]})(cancel))
    assert spec.parameters["properties"]["reason"]["examples"] == ["plans changed", "booked twice"]
    assert "examples" not in spec.parameters["properties"]["booking_id"]
    with pytest.raises(SchemaError, match="examples for no parameter: note"):
        build_spec("cancel", tool(examples={"note": ["x"]})(cancel))


def test_reserved_name_fails_at_class_definition() -> None:
    with pytest.raises(SchemaError):

        class Broken(Environment):
            @tool
            def step(self) -> dict[str, Any]:
                """Would shadow the trainer's step."""
                return {}


class Point(BaseModel):
    x: int


@pytest.mark.parametrize(
    "annotation",
    [
        dict[str, int],
        list[list[int]],
        str | int,
        Point,
        tuple[int, int],
        set[str],
        Any,
        bytes,
        Literal["a", 1],
        list[dict[str, int]],
    ],
    ids=lambda a: repr(a),
)
def test_non_flat_parameter_types_are_rejected(annotation: Any) -> None:
    def method(self: Any, value: Any) -> dict[str, Any]:
        """Take a value.

        Args:
            value: The value.
        """
        return {}

    method.__annotations__["value"] = annotation
    with pytest.raises(SchemaError):
        build_spec("method", method)


def test_var_args_and_missing_hints_are_rejected() -> None:
    def star(self: Any, *names: str) -> dict[str, Any]:
        return {}

    def loose(self: Any, name) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        return {}

    with pytest.raises(SchemaError, match="args"):
        build_spec("star", star)
    with pytest.raises(SchemaError, match="type hint"):
        build_spec("loose", loose)


def test_tool_hints_are_kept() -> None:
    @tool(produces=["order_id"], consumes=["customer_id"], read_only=True)
    def lookup(self: Any, customer_id: str) -> dict[str, Any]:
        """Look up.

        Args:
            customer_id: Who.
        """
        return {}

    hints = build_spec("lookup", lookup).annotations
    assert (hints.produces, hints.consumes, hints.read_only, hints.exclusive) == (
        ("order_id",),
        ("customer_id",),
        True,
        True,
    )


def test_int_or_float_is_a_number_that_keeps_integers() -> None:
    @tool
    def add(self: Any, a: int | float, b: list[int | float], c: float | int | None = None) -> dict[str, Any]:
        """Add.

        Args:
            a: First.
            b: More.
            c: Optional.
        """
        return {}

    spec = build_spec("add", add)
    props = spec.parameters["properties"]
    assert props["a"]["type"] == "number" and props["b"]["items"] == {"type": "number"}
    assert props["c"]["type"] == "number" and spec.parameters["required"] == ["a", "b"]
    kwargs = spec.validate({"a": 3, "b": [1, 2.5], "c": 2})
    assert kwargs == {"a": 3, "b": [1, 2.5], "c": 2}
    assert [type(kwargs["a"]), type(kwargs["b"][0]), type(kwargs["c"])] == [int, int, int]
    assert type(spec.validate({"a": 3.0, "b": []})["a"]) is float
