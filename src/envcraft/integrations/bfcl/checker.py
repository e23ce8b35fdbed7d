"""BFCL's multi-turn verdict, computed from an envcraft verifier context.

It follows ``multi_turn_checker`` (bfcl_eval/eval_checker/multi_turn_eval/multi_turn_checker.py):
for every turn whose ground truth is not empty, in order, the run fails at the first of

1. the agent made no call in that turn (``multi_turn:empty_turn_model_response``);
2. some class's public attributes differ from the ground truth's after that turn
   (``state_checker``: BFCL compares ``vars()`` entries with ``==``; decoded here with
   stand-in objects whose ``==`` is BFCL's ``__eq__`` per ``spec["eq_fields"]``);
3. the results of all the agent's calls so far, as text, do not contain (as a multiset)
   the ground truth's results of that turn (``response_checker``).

Turns with an empty ground truth (miss_func / miss_param: the agent should not act) are not
judged, as BFCL's checker does not judge them; the ``abstained`` component reports whether
the agent held back there (BFCL's ``multi_turn_irrelevance_checker``, which its runner does
not apply). The score is 1 when no turn fails, else 0.

The expected state of a turn is the initial public attributes with a patch applied
(``[pointer, value]`` sets, ``[pointer]`` removes). This module is embedded, after
:mod:`objgraph`, in every imported task's verifier: stdlib only, no ``from __future__``.
"""

import copy
import json
from collections.abc import Callable
from typing import Any

Spec = dict[str, Any]
Decode = Callable[[dict[str, Any], Callable[[str], Any], Callable[[str, Any], Any]], dict[str, Any]]

OUTPUT_KEY = "bfcl_output"
ERROR_PREFIX = "Error during execution: "


def verify_with(ctx: dict[str, Any], spec: Spec, decode: Decode) -> dict[str, Any]:
    make = stand_ins(spec["eq_fields"])

    def public(attributes: dict[str, Any]) -> dict[str, Any]:
        return decode(attributes, make, lambda name, payload: object())

    calls_in = [0] * len(ctx["turns"])
    for action in ctx["actions"]:
        if 0 <= action["turn"] < len(calls_in):
            calls_in[action["turn"]] += 1
    checked = spec["checked"]
    passed = 0
    reason = ""
    for turn in checked:
        texts = [rendered(a["result"]) for a in ctx["actions"] if a["turn"] <= turn]
        reason = judge_turn(ctx, spec, turn, calls_in[turn], texts, public)
        if reason:
            break
        passed += 1
    quiet = spec["quiet_turns"]
    components = {"turns_passed": passed / len(checked) if checked else 1.0}
    if quiet:
        components["abstained"] = sum(calls_in[t] == 0 for t in quiet if t < len(calls_in)) / len(quiet)
    return {"score": 0.0 if reason else 1.0, "components": components, "reason": reason}


def judge_turn(
    ctx: dict[str, Any],
    spec: Spec,
    turn: int,
    calls: int,
    texts: list[str],
    public: Callable[[dict[str, Any]], dict[str, Any]],
) -> str:
    """The first failure of one judged turn, or ``""``."""
    if calls == 0:
        return f"turn {turn}: no call (multi_turn:empty_turn_model_response)"
    expected = spec["expected"][str(turn)]
    for env in spec["envs"]:
        start = ctx["initial"][env]["attributes"]
        want = public(patched(start, expected.get(env, [])))
        got = public(ctx["turns"][turn]["final"][env]["attributes"])
        for name, value in want.items():
            if name not in got or got[name] != value:
                return f"turn {turn}: {env}.{name} differs (multi_turn:instance_state_mismatch)"
    remaining = list(texts)
    for text in spec["responses"][str(turn)]:
        if text not in remaining:
            return f"turn {turn}: a ground-truth result is missing (multi_turn:execution_response_mismatch)"
        remaining.remove(text)
    return ""


def rendered(result: Any) -> str:
    """The text BFCL's executor would have produced for one call's result."""
    if isinstance(result, dict):
        error = result.get("error")
        if isinstance(error, dict) and error.get("bfcl_error"):
            return json.dumps({"error": error.get("message", "")})
        if isinstance(error, dict):
            return ERROR_PREFIX + str(error.get("message", ""))
        if set(result) == {OUTPUT_KEY}:
            return str(result[OUTPUT_KEY])
        return json.dumps(result)
    return str(result)


def stand_ins(eq_fields: dict[str, list[str]]) -> Callable[[str], Any]:
    """``make_object`` for the decoder: classes equal as BFCL's ``__eq__`` says, else by identity."""
    classes: dict[str, type] = {}

    def make(name: str) -> Any:
        if name not in classes:
            fields = eq_fields.get(name)

            def eq(self: Any, other: Any, fields: list[str] | None = fields) -> bool:
                if fields is None:
                    return self is other
                if type(other) is not type(self):
                    return False
                return all(vars(self).get(f) == vars(other).get(f) for f in fields)

            classes[name] = type(name, (), {"__eq__": eq, "__hash__": None})
        return object.__new__(classes[name])

    return make


def patched(document: Any, patch: list[list[Any]]) -> Any:
    """A copy of ``document`` with ``[pointer, value]`` / ``[pointer]`` changes applied."""
    out = copy.deepcopy(document)
    for change in patch:
        pointer = change[0]
        if pointer == "":
            out = copy.deepcopy(change[1])
            continue
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]
        node = out
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last: Any = int(parts[-1]) if isinstance(node, list) else parts[-1]
        if len(change) == 1:
            del node[last]
        else:
            node[last] = copy.deepcopy(change[1])
    return out
