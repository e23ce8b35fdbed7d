"""One BFCL multi-turn entry as an envcraft :class:`Task`.

* ``turns``: BFCL's user turns; a turn that only reveals held-out functions (miss_func) says
  what BFCL says then (``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``).
* ``initial_state``: per involved class, the instance after BFCL's ``_load_scenario`` (with
  ``long_context=True`` for that category; classes that keep the flag hold it in their state).
* ``reference``: the ground truth, parsed into ``{turn, env, tool, args}`` calls; turns with
  an empty ground truth have no calls.
* ``verifier``: :mod:`objgraph` + :mod:`checker` + this task's spec, built from the ground truth
  replayed in envcraft sessions: the expected public attributes after each judged turn (as a
  patch of S0) and the text of each ground-truth result.
* ``quality["ground_truth_refused"]``: ground-truth calls the runtime refuses at the schema
  (BFCL's data has one: entry 173 passes ``close_ticket`` a string id its docs type as integer).
* ``provenance["unavailable_tools"]``: for each turn, the ``env.tool`` names a rollout must not
  offer yet (BFCL's ``missed_function``: held out until the turn that reveals them);
  ``provenance["bfcl"]`` keeps the entry's own fields, its ground-truth strings included.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from envcraft.core.errors import is_error
from envcraft.core.package import EnvPackage
from envcraft.core.state import diff
from envcraft.integrations.bfcl import checker, objgraph, shapes, source, state
from envcraft.integrations.bfcl.source import Entry
from envcraft.tasks.format.model import Reference, ReferenceCall, Task, Turn, Verifier
from envcraft.tasks.play.execute import run_calls
from envcraft.tasks.play.outcome import Outcome, outcome_hash

GENERATOR = "envcraft.integrations.bfcl"


def reference_calls(entry: Entry) -> list[ReferenceCall]:
    """The ground truth as envcraft calls (``shapes.CallError`` if one has no translation)."""
    calls: list[ReferenceCall] = []
    for turn, strings in enumerate(entry.ground_truth):
        for text in strings:
            name, args, kwargs = shapes.parse_call(text)
            owner = shapes.owner(entry.involved_classes, name)
            if owner is None:
                raise shapes.CallError(f"{entry.id}: no involved class has a function {name!r}")
            flat = shapes.from_bfcl(shapes.shapes(owner)[name], args, kwargs)
            calls.append(ReferenceCall(turn=turn, env=source.env_id(owner), tool=name, args=flat))
    return calls


def initial_states(entry: Entry) -> dict[str, dict[str, Any]]:
    return {
        source.env_id(c): state.initial_state(c, entry.initial_config.get(c, {}), entry.long_context)
        for c in entry.involved_classes
    }


def user_turns(entry: Entry) -> list[Turn]:
    turns = []
    for index, messages in enumerate(entry.turns):
        if messages:
            text = "\n\n".join(str(m.get("content", "")) for m in messages)
        elif str(index) in entry.missed_function:
            text = source.additional_function_prompt()
        else:
            raise shapes.CallError(f"{entry.id}: turn {index} has no message and reveals nothing")
        turns.append(Turn(user=text))
    return turns


def unavailable_tools(entry: Entry) -> list[list[str]]:
    """Per turn, the ``env.tool`` names held out (revealed from the turn whose key names them)."""
    hidden: list[list[str]] = [[] for _ in entry.turns]
    for reveal, names in entry.missed_function.items():
        for name in names:
            owner = shapes.owner(entry.involved_classes, name)
            if owner is None:
                raise shapes.CallError(f"{entry.id}: held-out function {name!r} belongs to no class")
            for turn in range(min(int(reveal), len(hidden))):
                hidden[turn].append(f"{source.env_id(owner)}.{name}")
    return hidden


def convert(entry: Entry, packages: Mapping[str, EnvPackage]) -> Task:
    """The task of one entry; ``packages`` are the written environment packages by id."""
    calls = reference_calls(entry)
    initial = initial_states(entry)
    envs = list(initial)
    grouped = [
        [{"env": c.env, "tool": c.tool, "args": c.args} for c in calls if c.turn == t]
        for t in range(len(entry.turns))
    ]
    golden = run_calls({e: packages[e] for e in envs}, initial, {}, grouped)
    spec = verifier_spec(entry, envs, golden)
    refused = refused_calls(golden)
    return Task(
        id=entry.id,
        envs=envs,
        kind="tool",
        turns=user_turns(entry),
        initial_state=initial,
        verifier=Verifier(source=verifier_source(spec), checks=checks(spec)),
        reference=Reference(calls=calls, final_hash=outcome_hash(golden)),
        provenance={
            "generator": GENERATOR,
            "packages": {e: str(packages[e].root) for e in envs},
            "unavailable_tools": unavailable_tools(entry),
            "bfcl": {
                "version": source.version(),
                "id": entry.id,
                "category": entry.category,
                "involved_classes": entry.involved_classes,
                "long_context": entry.long_context,
                "missed_function": entry.missed_function,
                "excluded_function": entry.excluded_function,
                "path": entry.path,
                "ground_truth": entry.ground_truth,
            },
        },
        quality={"ground_truth_refused": refused} if refused else {},
    )


def refused_calls(golden: Outcome) -> list[str]:
    """Ground-truth calls the runtime refused before BFCL's method ran (an argument that does not
    fit BFCL's documented type; BFCL's ``eval`` would have run the method with it)."""
    return [
        f"turn {a.turn}: {a.tool}({a.args}): {a.result['error']['message']}"
        for a in golden.actions
        if is_error(a.result) and "bfcl_exception" not in a.result["error"]
    ]


def verifier_spec(entry: Entry, envs: list[str], golden: Outcome) -> dict[str, Any]:
    """What the verifier of one task needs, from the ground truth replayed in envcraft."""
    judged = [t for t, calls in enumerate(entry.ground_truth) if calls]
    expected: dict[str, dict[str, list[list[Any]]]] = {}
    responses: dict[str, list[str]] = {}
    for turn in judged:
        start = {e: golden.initial[e]["attributes"] for e in envs}
        after = {e: golden.turns[turn].final[e]["attributes"] for e in envs}
        expected[str(turn)] = {e: patch(start[e], after[e]) for e in envs if start[e] != after[e]}
        responses[str(turn)] = [checker.rendered(a.result) for a in golden.actions if a.turn == turn]
    return {
        "envs": envs,
        "checked": judged,
        "quiet_turns": [t for t, calls in enumerate(entry.ground_truth) if not calls],
        "expected": expected,
        "responses": responses,
        "eq_fields": {name: list(fields) for name, fields in state.EQ_FIELDS.items()},
    }


def patch(before: Any, after: Any) -> list[list[Any]]:
    """``[pointer, value]`` / ``[pointer]`` changes turning ``before`` into ``after``."""
    return [[c["path"]] if c["op"] == "removed" else [c["path"], c["after"]] for c in diff(before, after)]


def verifier_source(spec: dict[str, Any]) -> str:
    """The stdlib-only verifier: the decoder, BFCL's verdict, this task's spec."""
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
    entry = "def verify(ctx):\n    return verify_with(ctx, SPEC, decode)\n"
    return f"{_runtime()}\n\nSPEC = json.loads({text!r})\n\n\n{entry}"


def spec_of(task: Task) -> dict[str, Any]:
    """The spec inside an imported task's verifier source."""
    for node in ast.parse(task.verifier.source).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SPEC"]:
            call = node.value
            text = call.args[0] if isinstance(call, ast.Call) and call.args else None
            if isinstance(text, ast.Constant) and isinstance(text.value, str):
                spec: dict[str, Any] = json.loads(text.value)
                return spec
    raise ValueError(f"task {task.id}: not a BFCL verifier (no SPEC)")


@cache
def _runtime() -> str:
    return f"{inspect.getsource(objgraph)}\n\n{inspect.getsource(checker)}"


def checks(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The verifier's checks in declarative form (one per judged turn)."""
    return [
        {
            "kind": "bfcl_turn",
            "turn": turn,
            "non_empty": True,
            "state_envs": spec["envs"],
            "changed_envs": sorted(spec["expected"][str(turn)]),
            "responses": len(spec["responses"][str(turn)]),
        }
        for turn in spec["checked"]
    ]
