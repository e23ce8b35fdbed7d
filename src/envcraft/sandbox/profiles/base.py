"""What a tool profile is: the Claw system tools under another agent's names and shapes.

A Claw agent is trained on the tools of the harness it will meet at test time (OpenClaw's
``read``/``write``/``edit``/``exec``, Claude Code's ``Read``/``Write``/``Edit``/``Bash``).
A :class:`Profile` renames and reshapes the canonical system tools of
:class:`~envcraft.sandbox.claw.ClawEnvironment` (``shell``, ``read_file``, ``write_file``,
``edit_file``, ``list_files``) without adding a second implementation: every profile tool
is a translation that ends in **at most one canonical call**, made through a
:class:`Canonical` the caller provides (an :class:`~envcraft.tasks.play.episode.Episode`
records it; a bare :class:`~envcraft.core.session.Session` just runs it).

The rules that make trajectories of every profile score the same:

* what is stored is the canonical call (``edit{path, edits:[one]}`` is stored as
  ``edit_file{path, old, new}``), so ``envcraft tasks score`` replays it unchanged;
* every call an agent makes consumes exactly one action index, live and on replay: a
  call with no canonical equivalent (bad arguments, ``process``) is recorded as a failed
  call to ``<profile>:<tool>``, a name no environment can declare, so a replay fails it
  too, with no effect;
* paths the shell shows (``/workspace/...``) are workspace paths for the file tools too,
  and any other absolute path reaches the canonical tool unchanged, which refuses it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from envcraft.core.errors import ErrorCategory, error_result, is_error

WORKSPACE_MOUNT = "/workspace"  # where the shell sees the workspace (sandbox.shell)
JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


class Canonical(Protocol):
    """What a profile tool may do: one canonical system-tool call, and unrecorded reads."""

    @property
    def max_timeout(self) -> float:
        """The longest ``shell`` timeout the environment allows (seconds)."""
        ...

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Make the canonical call (recorded, one action index)."""
        ...

    def read_text(self, path: str) -> str | dict[str, Any]:
        """The workspace file's text, or a structured error; changes and records nothing."""
        ...

    def record_inert(self, tool: str, args: Any, result: dict[str, Any]) -> None:
        """Record a call that reached no canonical tool (one action index, no effect)."""
        ...


Runner = Callable[[dict[str, Any], Canonical], dict[str, Any]]


@dataclass(frozen=True)
class ProfileTool:
    """One tool as the profile's agent knows it: name, JSON Schema, and its translation."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Runner

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class Profile:
    """A named set of system tools; empty ``tools`` means the canonical tools as they are."""

    name: str
    tools: tuple[ProfileTool, ...] = ()
    read_tool: str = "read_file"
    absolute_paths: bool = False  # whether the skills listing names /workspace/... paths
    by_name: dict[str, ProfileTool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {t.name: t for t in self.tools})

    @property
    def canonical(self) -> bool:
        return not self.tools

    def failure_name(self, tool: str) -> str:
        """The recorded name of a call that reached no canonical tool (never a tool name)."""
        return f"{self.name}:{tool}"

    def call(self, name: str, args: Any, canonical: Canonical) -> dict[str, Any]:
        """Run profile tool ``name``: validate, translate, at most one canonical call."""
        tool = self.by_name[name]
        problem = check_arguments(tool.parameters, args)
        if problem is not None:
            canonical.record_inert(self.failure_name(name), args, problem)
            return problem
        return tool.run(dict(args), canonical)

    def skill_location(self, relative: str) -> str:
        """Where the agent finds a workspace file, in the form its read tool takes."""
        return f"{WORKSPACE_MOUNT}/{relative}" if self.absolute_paths else relative


def workspace_path(path: str) -> str:
    """``/workspace/x`` (the shell's view) as the workspace path ``x``; anything else as given."""
    if path == WORKSPACE_MOUNT:
        return "."
    if path.startswith(WORKSPACE_MOUNT + "/"):
        return path[len(WORKSPACE_MOUNT) + 1 :] or "."
    return path


def check_arguments(schema: Mapping[str, Any], args: Any) -> dict[str, Any] | None:
    """A structured error when ``args`` do not fit a flat profile schema, else None."""
    if not isinstance(args, dict):
        return error_result(ErrorCategory.INVALID_ARGUMENT, "arguments must be a JSON object")
    for name in schema.get("required", []):
        if name not in args:
            return error_result(
                ErrorCategory.MISSING_FIELD, f"missing required argument '{name}'", field=name
            )
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None:
            continue  # unknown extras are ignored, as the real harnesses do
        problem = _check_value(name, spec, value)
        if problem is not None:
            return error_result(ErrorCategory.INVALID_ARGUMENT, problem, field=name)
    return None


def _check_value(name: str, spec: Mapping[str, Any], value: Any) -> str | None:
    kind = spec.get("type")
    if kind is not None and not JSON_TYPES[kind](value):
        return f"argument '{name}' must be of type {kind}"
    if kind == "array":
        items = spec.get("items", {})
        if len(value) < spec.get("minItems", 0):
            return f"argument '{name}' must hold at least {spec['minItems']} item(s)"
        for index, item in enumerate(value):
            if items.get("type") == "object":
                if not isinstance(item, dict):
                    return f"{name}[{index}] must be an object"
                for key in items.get("required", []):
                    if key not in item:
                        return f"{name}[{index}] is missing '{key}'"
                for key, sub in items.get("properties", {}).items():
                    if key in item and (problem := _check_value(f"{name}[{index}].{key}", sub, item[key])):
                        return problem
            elif "type" in items and not JSON_TYPES[items["type"]](item):
                return f"{name}[{index}] must be of type {items['type']}"
    if kind == "object" and "additionalProperties" in spec:
        inner = spec["additionalProperties"].get("type")
        for key, item in value.items():
            if inner and not JSON_TYPES[inner](item):
                return f"{name}.{key} must be of type {inner}"
    return None


def text_result(text: str, **details: Any) -> dict[str, Any]:
    """A successful profile result: what the harness shows the model, plus machine details."""
    return {"content": [{"type": "text", "text": text}], "details": details}


def result_text(result: Any) -> str:
    """The text a model sees for a tool result, as the profile's harness would show it.

    Text content (profile tools) is shown as is; an error as its message; any other result
    (domain tools, canonical tools) as indented JSON, as OpenClaw shows a JSON tool result.
    """
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        parts = [p.get("text", "") for p in result["content"] if isinstance(p, dict)]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(parts)
    return json.dumps(result, ensure_ascii=False, indent=2)


def shell_text(result: dict[str, Any], timeout: float) -> str:
    """stdout and stderr as one block, with the exit status when it is not a plain success."""
    output = (result.get("stdout") or "") + (result.get("stderr") or "")
    text = output.rstrip("\n") or "(no output)"
    if result.get("timed_out"):
        text += f"\n\nCommand timed out after {timeout:g} seconds"
    elif result.get("exit_code") not in (0, None):
        text += f"\n\nCommand exited with code {result['exit_code']}"
    if result.get("truncated"):
        text += "\n\n[Output truncated]"
    return text


def clamp_timeout(seconds: float | None, limit: float, default: int = 30) -> int:
    """A requested timeout as the canonical ``shell`` takes it: whole seconds in [1, limit]."""
    if seconds is None or seconds <= 0:
        return min(default, int(limit))
    return max(1, min(int(limit), math.ceil(seconds)))


def passthrough_error(result: dict[str, Any]) -> dict[str, Any] | None:
    """The canonical call's error result, if it failed."""
    return result if is_error(result) else None
