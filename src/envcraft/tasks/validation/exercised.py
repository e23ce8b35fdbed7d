"""Instructions the world exercises: a choice the user states must make a difference.

A user turn that says "dead-letter invalid records" asks for a behaviour; if processing stops
at a duplicate before the first invalid record, halting instead ends the run the same way and
the verifier cannot tell the two apart, so the instruction is never tested (an agent that
ignores it is paid 1.0). Such a task is refused: the reference is replayed with each stated
choice (an argument of a fixed set of values, or a flag, that the user gave) set to each other
value it allows, and each whole number the user gave set one lower and one higher; when every
alternative ends in the same world as the reference, the choice was never exercised. A flag
the call leaves out is stated too where the turn says the default
its goal phrase gives it ("halting at the first duplicate"). So that such a default is said
only where it matters, :func:`quiet_defaults` finds, before the turns are written, the
left-out flags whose other values change nothing: the turn leaves them unsaid.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.phrasing import Part, Placeholder, Template
from envcraft.core.state import canonical_json
from envcraft.tasks.format.model import GoldenCall, Source, Task
from envcraft.tasks.play.execute import reference_turns, run_calls
from envcraft.tasks.play.outcome import Outcome


def unexercised_choices(task: Task, golden: Outcome, packages: Mapping[str, EnvPackage]) -> list[str]:
    """``tool.argument`` of every stated choice whose alternatives all end the run as the reference does."""
    found: list[str] = []
    end = _end(golden)
    turns = reference_turns(task)
    flat = [(t, n) for t, calls in enumerate(turns) for n in range(len(calls))]
    said = " ".join(turn.user for turn in task.turns).lower()
    for index, call in enumerate(task.reference.calls):
        package = packages.get(call.env)
        spec = package.env_class.tools.get(call.tool) if package is not None else None
        if spec is None or not isinstance(call.args, dict):
            continue
        defaults = {n: v for n, (v, text) in _said_defaults(spec).items() if text.strip().lower() in said}
        for name, value in {**defaults, **call.args}.items():
            if name in call.args and Source.parse(call.provenance.get(name, "user")).kind != "user":
                continue
            schema = spec.parameters["properties"].get(name, {})
            world = (packages, task.initial_state, task.workspace)
            choices = [o for o in _choices(schema) if o != value]
            if choices:  # a choice is put to the test when another one would end the run otherwise
                alike = _ends_alike(world, turns, flat[index], name, choices, end)
            else:  # a number, when every near one would: one that ends alike is paid as the asked one
                numbers = _neighbours(schema, value)
                alike = any(_ends_alike(world, turns, flat[index], name, [n], end) for n in numbers)
            if alike:
                found.append(f"{call.tool}.{name}")
    return found


def quiet_defaults(
    calls: Sequence[GoldenCall],
    packages: Mapping[str, EnvPackage],
    initial: Mapping[str, Any],
    files: Mapping[str, str],
) -> frozenset[tuple[int, str]]:
    """``(call, argument)`` of every flag a call leaves out whose goal phrase would say its
    default, where no other value of it changes how the run ends: a person would not say it,
    and the turn does not (saying it is an instruction nobody can be checked on)."""
    plain: list[dict[str, Any]] = [{"env": c.env, "tool": c.tool, "args": dict(c.args)} for c in calls]
    end: str | None = None
    quiet: set[tuple[int, str]] = set()
    for index, call in enumerate(calls):
        spec = packages[call.env].env_class.tools.get(call.tool)
        if spec is None:
            continue
        for name, (default, _) in _said_defaults(spec).items():
            if name in call.args:
                continue
            if end is None:
                end = _end(run_calls(packages, initial, files, [plain]))
            others = [o for o in _choices(spec.parameters["properties"][name]) if o != default]
            if _ends_alike((packages, initial, files), [plain], (0, index), name, others, end):
                quiet.add((index, name))
    return frozenset(quiet)


def _ends_alike(
    world: tuple[Mapping[str, EnvPackage], Mapping[str, Any], Mapping[str, str]],
    turns: list[list[dict[str, Any]]],
    where: tuple[int, int],
    name: str,
    others: list[Any],
    end: str,
) -> bool:
    """Whether the calls replayed in ``world`` (packages, S0, files) with argument ``name`` of the
    call at ``where`` (turn, position) set to each of ``others`` all end as ``end``."""
    t, n = where
    for other in others:
        changed = copy.deepcopy(turns)
        changed[t][n]["args"][name] = other
        if _end(run_calls(*world, changed)) != end:
            return False
    return True


def _said_defaults(spec: Any) -> dict[str, tuple[Any, str]]:
    """The choices a goal phrase says even when the call leaves them out, with the words that
    say them: a choice placeholder of an argument with a default says the default ("process
    partition 0, halting at the first duplicate, stopping at the first invalid record")."""
    if not spec.annotations.goal:
        return {}
    properties = spec.parameters["properties"]
    found: dict[str, tuple[Any, str]] = {}
    for part in _placeholders(Template.parse(spec.annotations.goal).parts):
        if part.choices and "default" in properties.get(part.name, {}):
            default = properties[part.name]["default"]
            text = part.choose(default)
            if text:
                found[part.name] = (default, text)
    return found


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


def _neighbours(schema: Mapping[str, Any], value: Any) -> list[int]:
    """A whole number the user stated, one less, one more and the default (within the schema's
    bounds): where one of them does not change how the run ends, the number is not put to the
    test ("with 1 minute of waiting" where the first 3 minutes are free: 0, 2 or none paid the
    same; round 40, R4; "with 3 minutes of waiting" paid as none, though 4 would cost more;
    round 59, R4)."""
    if schema.get("type") != "integer" or type(value) is not int:
        return []
    low, high = schema.get("minimum"), schema.get("maximum")
    default = schema.get("default")
    near = [
        value - 1,
        value + 1,
        *([default] if type(default) is int and default not in (value, value - 1) else []),
    ]
    return [
        n for n in near if (not isinstance(low, int) or n >= low) and (not isinstance(high, int) or n <= high)
    ]


def _end(run: Outcome) -> str:
    """The world at every turn's end: the verifier checks each boundary, so a value a later turn
    overwrites (a count recorded, then recounted) is still put to the test where it stood."""
    return canonical_json([{"state": turn.final, "files": turn.files} for turn in run.turns])
