"""PinchBench's grading harness, as it runs inside the isolated worker (stdlib only).

An imported task's verifier source is this module's text followed by one ``GRADING = {...}``
line (see :func:`envcraft.integrations.pinchbench.convert.verifier_source`). ``verify(ctx)``
does what PinchBench's ``lib_grading._grade_automated`` does, on envcraft's episode:

* the workspace after the run (``ctx["files"]``) is written into a fresh directory of the
  worker's private ``/tmp`` (binary files as their ``<binary sha256:...>`` placeholder;
  empty directories are not kept by a workspace snapshot);
* the conversation (``ctx["messages"]``, OpenAI chat messages) becomes the transcript
  PinchBench reads: OpenClaw's session JSONL entries, a ``session`` header and then
  ``{"type": "message", "message": {...}}`` with roles ``user``, ``assistant`` (content blocks
  ``text`` and ``toolCall`` with ``name`` and ``arguments``) and ``toolResult`` (``toolCallId``,
  ``toolName``, ``content``, ``isError``);
* the task's ``grade(transcript, workspace_path)`` is executed and its numeric values
  averaged, exactly as PinchBench averages them.

For a judged task it also returns ``judge_prompt``: PinchBench's judge prompt over its own
summary of the transcript, for the host to send to a judge model.
"""

import json
import os
import shutil
import tempfile
from typing import Any

GRADING: dict[str, Any] = {}  # replaced by the task's own: grade code, prompt, rubric, type


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _entry(message: dict[str, Any], index: int) -> dict[str, Any]:
    return {"type": "message", "id": f"m{index}", "message": message}


def openclaw_transcript(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages -> OpenClaw session entries (the system prompt is not in a session)."""
    entries: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "envcraft", "cwd": "/workspace"}]
    names: dict[Any, str] = {}
    for message in messages:
        role = message.get("role")
        body: dict[str, Any]
        if role == "user":
            body = {"role": "user", "content": [{"type": "text", "text": _text(message.get("content"))}]}
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            text = _text(message.get("content"))
            if text:
                blocks.append({"type": "text", "text": text})
            calls = message.get("tool_calls") or []
            for call in calls:
                function = call.get("function") or {}
                names[call.get("id")] = function.get("name", "")
                blocks.append(
                    {
                        "type": "toolCall",
                        "id": call.get("id", ""),
                        "name": function.get("name", ""),
                        "arguments": _arguments(function.get("arguments")),
                    }
                )
            body = {"role": "assistant", "content": blocks, "stopReason": "toolUse" if calls else "stop"}
        elif role == "tool":
            text = _text(message.get("content"))
            body = {
                "role": "toolResult",
                "toolCallId": message.get("tool_call_id", ""),
                "toolName": names.get(message.get("tool_call_id"), ""),
                "content": [{"type": "text", "text": text}],
                "isError": text.startswith('{"error"'),
            }
        else:
            continue
        entries.append(_entry(body, len(entries)))
    return entries


def _materialize(files: dict[str, str]) -> str:
    root = tempfile.mkdtemp(prefix="pinchbench-")
    for rel, content in files.items():
        target = os.path.join(root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(content)
    return root


def _average(scores: dict[Any, Any]) -> float:
    """``lib_grading._average_scores``: every int or float value (bools included) counts."""
    values = [float(v) for v in scores.values() if isinstance(v, (int, float))]
    return sum(values) / len(values) if values else 0.0


def _components(scores: dict[Any, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in scores.items():
        try:
            out[str(key)] = min(1.0, max(0.0, float(value)))
        except (TypeError, ValueError):
            continue
    return out


def summarize(transcript: list[dict[str, Any]]) -> str:
    """``lib_grading._summarize_transcript``, line for line (what the judge reads)."""
    parts: list[str] = []
    for event in transcript:
        if event.get("type") != "message":
            continue
        msg = event.get("message", {})
        role = msg.get("role")
        if role == "assistant":
            for item in msg.get("content", []):
                if item.get("type") == "toolCall":
                    parts.append(f"Tool: {item.get('name')}({json.dumps(item.get('arguments', {}))})")
        elif role == "toolResult":
            content = msg.get("content", [])
            if content:
                parts.append(f"Result: {str(content[0])[:200]}")
        elif role == "user":
            content = msg.get("content", [])
            if content:
                parts.append(f"User: {content[0]}")
    return "\n".join(parts)


def judge_prompt(transcript: list[dict[str, Any]]) -> str:
    """``lib_grading._build_judge_prompt`` with the task's rubric (or its grading criteria)."""
    return (
        "You are a grading function. Your ONLY job is to output a single JSON object.\n\n"
        "CRITICAL RULES:\n"
        "- Do NOT use any tools (no Read, Write, exec, or any other tool calls)\n"
        "- Do NOT create files or run commands\n"
        "- Do NOT write any prose, explanation, or commentary outside the JSON\n"
        "- Respond with ONLY a JSON object \u2014 nothing else\n\n"
        "Be a strict evaluator. Reserve 1.0 for genuinely excellent performance. "
        "An average acceptable completion should score around 0.6-0.7. "
        "Deduct points for unnecessary steps, verbose output, and inefficient tool usage.\n\n"
        "## Task\n"
        + GRADING["prompt"]
        + "\n\n## Expected Behavior\n"
        + GRADING["expected_behavior"]
        + "\n\n## Agent Transcript (summarized)\n"
        + summarize(transcript)
        + "\n\n## Grading Rubric\n"
        + GRADING["rubric"]
        + "\n\nScore each criterion from 0.0 to 1.0.\n\n"
        "Respond with ONLY this JSON structure (no markdown, no code fences, no extra text):\n"
        '{"scores": {"criterion_name": 0.0}, "total": 0.0, "notes": "brief justification"}'
    )


def grade_automated(
    transcript: list[dict[str, Any]], files: dict[str, str]
) -> tuple[float, dict[str, float]]:
    """The task's ``grade`` on a workspace made of ``files``: ``(score, components)``."""
    if not GRADING.get("code"):
        return 0.0, {}
    root = _materialize(files)
    try:
        namespace: dict[str, Any] = {}
        exec(GRADING["code"], namespace)
        grade = namespace.get("grade")
        if not callable(grade):
            raise ValueError("the automated checks define no grade function")
        scores = grade(transcript, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not isinstance(scores, dict):
        scores = {}
    return _average(scores), _components(scores)


def verify(ctx: dict[str, Any]) -> dict[str, Any]:
    transcript = openclaw_transcript(ctx.get("messages") or [])
    result: dict[str, Any] = {"score": 0.0, "components": {}}
    if GRADING["type"] in ("automated", "hybrid"):
        result["score"], result["components"] = grade_automated(transcript, ctx["files"])
    if GRADING["type"] in ("llm_judge", "hybrid"):
        result["judge_prompt"] = judge_prompt(transcript)
    return result
