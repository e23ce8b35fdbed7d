"""SmolLM2's ChatML rendering and tool-call parsing (the model runs in tests/rollout/test_smollm.py)."""

from __future__ import annotations

from envcraft.llm.smollm import parse_tool_calls, render_chatml


def test_tool_calls_are_rendered_and_parsed_in_hermes_form() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_order",
                "description": "Look up.\nMore.",
                "parameters": {"properties": {"order_id": {"type": "string"}}},
            },
        }
    ]
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "get_order", "arguments": '{"order_id": "O-1"}'},
    }
    text = render_chatml(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Where is O-1?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "content": '{"status": "shipped"}'},
        ],
        tools,
    )
    assert text.startswith("<|im_start|>system\nBe brief.") and text.endswith("<|im_start|>assistant\n")
    assert '{"name": "get_order", "description": "Look up.", "parameters": {"order_id": "string"}}' in text
    assert '<tool_call>\n{"name": "get_order", "arguments": {"order_id": "O-1"}}\n</tool_call>' in text
    assert '<tool_response>\n{"status": "shipped"}\n</tool_response>' in text
    parsed = parse_tool_calls(
        'Let me look.\n<tool_call>\n{"name": "get_order", "arguments": {"order_id": "O-2"}}'
    )
    assert parsed["content"] == "Let me look."
    assert parsed["tool_calls"][0]["function"] == {"name": "get_order", "arguments": '{"order_id": "O-2"}'}
    assert parse_tool_calls("<tool_call>not json</tool_call> hi") == {
        "role": "assistant",
        "content": "<tool_call>not json</tool_call> hi",
    }
