"""``tasks show`` gives each tool's parameters as an agent needs them: the type, the values an
enum takes and which may be left out (round 20: an agent learned ``open_return``'s reasons and
``compose_draft``'s list of recipients only from a refusal)."""

from __future__ import annotations

from envcraft.cli.playing import _tool_summary
from envcraft.core.package import load_package


def summary(env: str, tool: str) -> dict[str, object]:
    return _tool_summary(load_package(env).env_class.tools[tool].openai_schema())


def test_an_enum_lists_its_values_and_a_list_its_item_type() -> None:
    returns = summary("returns_desk", "open_return")
    assert returns["params"] == ["order_id", "sku", "quantity", "reason"]
    assert returns["signature"] == [
        "order_id: string",
        "sku: string",
        "quantity: integer",
        "reason: damaged|wrong_item|not_as_described|no_longer_needed",
    ]
    draft = summary("mail_triage", "compose_draft")
    assert draft["signature"] == ["to: list[string]", "subject: string", "body: string", "cc?: list[string]"]
