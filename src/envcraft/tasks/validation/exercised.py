"""Instructions the world exercises: a choice the user states must make a difference.

A user turn that says "dead-letter invalid records" asks for a behaviour; if processing stops
at a duplicate before the first invalid record, halting instead ends the run the same way and
the verifier cannot tell the two apart, so the instruction is never tested (an agent that
ignores it is paid 1.0). Such a task is refused: the reference is replayed with each stated
choice (an argument of a fixed set of values, or a flag, that the user gave) set to each other
value it allows; when every alternative ends in the same world as the reference, the choice
was never exercised. A flag the call leaves out is stated too where the goal phrase says its
default ("keeping duplicates").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.phrasing import Part, Placeholder, Template
from envcraft.core.state import canonical_json
from envcraft.tasks.format.model import Source, Task
from envcraft.tasks.play.execute import reference_turns, run_calls
from envcraft.tasks.play.outcome import Outcome


def unexercised_choices(task: Task, golden: Outcome, packages: Mapping[str, EnvPackage]) -> list[str]:
    """``tool.argument`` of every stated choice whose alternatives all end the run as the reference does."""
    found: list[str] = []
    end = _end(golden)
    turns = reference_turns(task)
    flat = [(t, n) for t, calls in enumerate(turns) for n in range(len(calls))]
    goals = set(task.provenance.get("goal_calls", []))
    for index, call in enumerate(task.reference.calls):
        package = packages.get(call.env)
        spec = package.env_class.tools.get(call.tool) if package is not None else None
        if spec is None or not isinstance(call.args, dict):
            continue
        stated = {**(_said_defaults(spec) if index in goals else {}), **call.args}
        for name, value in stated.items():
            if name in call.args and Source.parse(call.provenance.get(name, "user")).kind != "user":
                continue
            others = [o for o in _choices(spec.parameters["properties"].get(name, {})) if o != value]
            if not others:
                continue
            t, n = flat[index]
            ends = []
            for other in others:
                changed = copy.deepcopy(turns)
                changed[t][n]["args"][name] = other
                ends.append(_end(run_calls(packages, task.initial_state, task.workspace, changed)))
            if all(e == end for e in ends):
                found.append(f"{call.tool}.{name}")
    return found


def _said_defaults(spec: Any) -> dict[str, Any]:
    """The choices a goal phrase states even when the call leaves them out: a choice placeholder
    of an argument with a default says the default ("process partition 0, keeping duplicates,
    stopping at the first invalid record" for a call that passed neither flag)."""
    if not spec.annotations.goal:
        return {}
    properties = spec.parameters["properties"]
    return {
        part.name: properties[part.name]["default"]
        for part in _placeholders(Template.parse(spec.annotations.goal).parts)
        if part.choices and "default" in properties.get(part.name, {})
    }


def _placeholders(parts: tuple[Part, ...]) -> list[Placeholder]:
    found: list[Placeholder] = []
    for part in parts:
        if isinstance(part, Placeholder):
            found.append(part)
        elif isinstance(part, tuple):
            found += _placeholders(part)
    return found


def _choices(schema: Mapping[str, Any]) -> list[Any]:
    """The values an argument allows when they are a small fixed set (an enum or a flag)."""
    if schema.get("type") == "boolean":
        return [True, False]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    for option in schema.get("anyOf", []):
        if isinstance(option, Mapping) and (values := _choices(option)):
            return values
    return []


def _end(run: Outcome) -> str:
    return canonical_json({"state": run.final, "files": run.files})
