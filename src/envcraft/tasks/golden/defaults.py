"""Defaults the world exercises are said: a value a call left to the environment, spelled out.

A call that leaves an optional argument out gets the environment's default ("the current
period"). Where the world offers another value the tool would take, and taking it ends the run
differently (a journal opened in the still-open December period instead of January), the
default is a choice the user made without saying it: an agent that picks the other value did
nothing wrong by the turn's words, yet fails the verifier. :func:`spell_out_defaults` passes such
an argument explicitly, with the value the environment resolved it to (the call's result names
it), so the turn states it like any other value the user gives. Codes are considered (a
period, an id: no spaces; free text has no "other value the world offers"), batch sizes: an
integer with a positive default that a bigger batch would exceed ("process partition 2" of a
25-record backlog with the default batch of 20 says "up to 20 records"), and switches and
closed options with a default: "replay it" of a replay that the default halts at a duplicate
paid only the agent that did not drop duplicates, as the docs advise (round 36); it now says
"halting at the first duplicate".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.state import canonical_json
from envcraft.tasks.golden.run import GoldenRun, replay
from envcraft.tasks.play.execute import run_calls
from envcraft.tasks.values.args import flatten

MAX_OTHERS = 3  # other values tried per left-out argument


def spell_out_defaults(
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    initial: Mapping[str, dict[str, Any]],
    files: Mapping[str, str],
) -> GoldenRun:
    """``run`` with every left-out code argument that the world exercises passed as the value the
    environment resolved it to (replayed); ``run`` itself when there is none or the replay differs."""
    plain = [{"env": c.env, "tool": c.tool, "args": dict(c.args)} for c in run.calls]
    end = canonical_json({"state": run.final, "files": run.final_files})
    spelled: dict[int, dict[str, Any]] = {}
    for index, call in enumerate(run.calls):
        if not call.ok or call.expected_error:
            continue
        spec = packages[call.env].env_class.tools.get(call.tool)
        if spec is None or spec.annotations.read_only:
            continue
        required = set(spec.parameters.get("required", []))
        for name, schema in spec.parameters["properties"].items():
            if name in call.args or name in required:
                continue
            limit = _limit(schema)
            if limit is not None:  # a batch size: would a bigger batch end the run otherwise?
                if _exercised(packages, initial, files, plain, index, name, [limit[1]], end):
                    spelled.setdefault(index, {})[name] = limit[0]
                continue
            choices = _choices(schema)
            if choices:  # a switch or an option: would the other setting end the run otherwise?
                if _exercised(packages, initial, files, plain, index, name, choices[1:], end):
                    spelled.setdefault(index, {})[name] = choices[0]
                continue
            resolved = call.result.get(name) if isinstance(call.result, dict) else None
            if schema.get("type") != "string" or not isinstance(resolved, str) or not _code(resolved):
                continue
            others = _offered(name, resolved, initial.get(call.env, {}), run)
            if _exercised(packages, initial, files, plain, index, name, others, end):
                spelled.setdefault(index, {})[name] = resolved
    if not spelled:
        return run
    calls = copy.deepcopy(run.calls)
    for index, args in spelled.items():
        calls[index].args.update(args)
        calls[index].provenance.update({name: "user" for name in args})
    again = replay(calls, packages, initial, files)
    if again is None or canonical_json({"state": again.final, "files": again.final_files}) != end:
        return run
    return again


def _limit(schema: Mapping[str, Any]) -> tuple[int, int] | None:
    """An integer argument with a positive default (a batch of 20 records) and the bigger value
    an agent reading "process the partition" might pass instead (the schema's maximum, else five
    times the default); None for any other argument."""
    default = schema.get("default")
    if schema.get("type") != "integer" or not isinstance(default, int) or isinstance(default, bool):
        return None
    if default <= 0:
        return None
    bigger = schema.get("maximum", default * 5)
    return (default, bigger) if isinstance(bigger, int) and bigger > default else None


def _choices(schema: Mapping[str, Any]) -> list[Any]:
    """A switch's or a closed option's default, then the other settings an agent might pick
    ("dropping duplicates" where the default halts at the first one); none for other arguments."""
    default = schema.get("default")
    if schema.get("type") == "boolean" and isinstance(default, bool):
        return [default, not default]
    options = schema.get("enum")
    if isinstance(options, list) and default in options:
        return [default, *[o for o in options if o != default][:MAX_OTHERS]]
    return []


def _code(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not any(c.isspace() for c in value)


def _offered(name: str, resolved: str, state: Mapping[str, Any], run: GoldenRun) -> list[str]:
    """Other codes the world holds under the argument's name (S0's periods), or that another call
    of the run passed for it (turn 1 named December), most recently passed first."""
    passed = [c.args[name] for c in reversed(run.calls) if isinstance(c.args.get(name), str)]
    held = [value for path, value in flatten(state) if path.rsplit(".", 1)[-1] == name]
    found = [v for v in dict.fromkeys([*passed, *sorted(map(str, held))]) if _code(v) and v != resolved]
    return found[:MAX_OTHERS]


def _exercised(
    packages: Mapping[str, EnvPackage],
    initial: Mapping[str, Any],
    files: Mapping[str, str],
    plain: list[dict[str, Any]],
    index: int,
    name: str,
    others: list[Any],
    end: str,
) -> bool:
    """Whether the call at ``index`` takes one of ``others`` for ``name`` and the run then ends
    otherwise than ``end``."""
    for other in others:
        changed = copy.deepcopy(plain)
        changed[index]["args"][name] = other
        outcome = run_calls(packages, initial, files, [changed])
        if "error" in outcome.actions[index].result:
            continue  # the tool refuses it (a closed period): no choice the agent could make
        if canonical_json({"state": outcome.final, "files": outcome.files}) != end:
            return True
    return False
