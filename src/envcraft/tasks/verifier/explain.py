"""Why a run scored what it did: each check's verdict, the score's arithmetic, the failed calls.

A player (or whoever debugs a task) sees a number from ``tasks score``; this says where it came
from. The verdicts are the verifier's own: its ``components``, computed as for any score (in the
isolated worker or, for a declarative verifier, in-process), never re-judged here. What this
module adds is read from the run's ``ctx`` with the runtime's own readers
(:func:`~envcraft.tasks.verifier.runtime.snapshot`, :func:`~envcraft.tasks.verifier.runtime.get`):
for a failed check, what it expected and what the run had at the moment it looked.

A verifier is itemized only when its checks are known and agree with its answer: the task's
declarative checks, each named in the components, giving the very score by
mean(goals) x HARM^(subjects of the broken guards). Any other verifier (an imported benchmark's grader, a
hand-written one) gets its score, its named components as they are, and the failed calls.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.core.errors import is_error
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute
from envcraft.tasks.play.outcome import ExecutionError, Outcome
from envcraft.tasks.verifier import runtime
from envcraft.tasks.verifier.scoring import Score, build_context, run_verifier
from envcraft.tasks.verifier.source import declared_checks

SHORT = 140  # characters of one value shown
CHANGES = 3  # changed fields (or members) named per check
NOT_ITEMIZED = (
    "checks are not itemized: this verifier is its own code (an imported benchmark's grader, a"
    " hand-written one), not envcraft's declarative checks"
)


@dataclass
class Explanation:
    """What ``tasks score --explain`` prints for one run (and ``--json`` carries as ``explain``)."""

    checks: list[dict[str, Any]] | None  # None: the verifier is not itemized
    arithmetic: dict[str, Any] | None
    failed_calls: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None  # why the checks are not itemized

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "itemized": self.checks is not None,
            "checks": self.checks,
            "arithmetic": self.arithmetic,
            "failed_calls": self.failed_calls,
        }
        if self.note is not None:
            data["note"] = self.note
        return data


def explain_trajectory(
    task: Task,
    turns: Sequence[Sequence[Any]],
    *,
    messages: Sequence[dict[str, Any]] | None = None,
) -> tuple[Score, Explanation]:
    """Score a trajectory exactly as :func:`~envcraft.tasks.verifier.scoring.score_trajectory`
    does, and say why."""
    try:
        outcome = execute(task, turns)
    except ExecutionError as exc:
        return Score(0.0, {}, str(exc)), Explanation(None, None, note=f"the run could not be played: {exc}")
    score = run_verifier(task, outcome, messages=messages)
    return score, explain(task, outcome, score)


def score_with_failed_calls(
    task: Task,
    turns: Sequence[Sequence[Any]],
    *,
    messages: Sequence[dict[str, Any]] | None = None,
) -> tuple[Score, list[dict[str, Any]]]:
    """Score a trajectory as :func:`~envcraft.tasks.verifier.scoring.score_trajectory` does, with
    the calls that came back as errors (``tasks score --json``): a refused wrong write leaves the
    state as it was, and a player tells it from a verifier's miss by them."""
    try:
        outcome = execute(task, turns)
    except ExecutionError as exc:
        return Score(0.0, {}, str(exc)), []
    return run_verifier(task, outcome, messages=messages), failed_calls(outcome)


def explain(task: Task, outcome: Outcome, score: Score) -> Explanation:
    """The explanation of ``score``, the verifier's verdict on ``outcome``."""
    failed = failed_calls(outcome)
    if score.error is not None:
        return Explanation(None, None, failed, note=f"the verifier gave no verdict: {score.error}")
    checks = list(declared_checks(task.verifier.source) or task.verifier.checks)
    arithmetic = _arithmetic(checks, score) if checks else None
    if arithmetic is None:
        return Explanation(None, None, failed, note=NOT_ITEMIZED)
    ctx = build_context(outcome)
    items = [_item(check, score.components[check["name"]], ctx) for check in checks]
    return Explanation(items, arithmetic, failed)


def failed_calls(outcome: Outcome) -> list[dict[str, Any]]:
    """Every call of the run that came back as a structured error, with its turn and position."""
    found = []
    position: dict[int, int] = {}
    for action in outcome.actions:
        position[action.turn] = position.get(action.turn, 0) + 1
        if is_error(action.result):
            error = action.result["error"]
            found.append(
                {
                    "turn": action.turn + 1,
                    "call": position[action.turn],
                    "env": action.env,
                    "tool": action.tool,
                    "args": short(action.args),
                    "code": str(error.get("category", "")),
                    "message": str(error.get("message", "")),
                }
            )
    return found


def _arithmetic(checks: list[dict[str, Any]], score: Score) -> dict[str, Any] | None:
    """The score as the runtime computes it, or None when these checks do not give ``score``
    (a component they lack or do not name, a role or weight it does not know): not itemized."""
    try:
        if {c["name"] for c in checks} != set(score.components) or len(checks) != len(score.components):
            return None
        goals = [c for c in checks if c["role"] == "goal"]
        guards = [c for c in checks if c["role"] == "guard"]
        if len(goals) + len(guards) != len(checks):
            return None
        achieved = sum(c["weight"] * score.components[c["name"]] for c in goals)
        wanted = float(sum(c["weight"] for c in goals))
        broken = sum(score.components[c["name"]] < 1.0 for c in guards)
        harms = runtime.harms(checks, score.components)
    except (KeyError, TypeError):
        return None
    goal = achieved / wanted if wanted else 0.0
    total = goal * runtime.HARM**harms
    if not math.isclose(min(1.0, max(0.0, total)), score.score, abs_tol=1e-9):
        return None
    return {
        "goals": len(goals),
        "goal_achieved": achieved,
        "goal_wanted": wanted,
        "goal_mean": goal,
        "guards": len(guards),
        "guards_broken": broken,
        "harms": harms,
        "harm": runtime.HARM,
        "score": score.score,
    }


def _item(check: dict[str, Any], value: float, ctx: dict[str, Any]) -> dict[str, Any]:
    turn = check.get("turn")
    item: dict[str, Any] = {
        "name": check["name"],
        "role": check["role"],
        "kind": check.get("kind"),
        "turn": turn + 1 if isinstance(turn, int) and turn >= 0 else None,
        "value": value,
        "passed": value >= 1.0,
    }
    if value < 1.0:
        try:
            expected, had = _why(check, ctx)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            expected, had = short(check.get("expected", "?")), "?"
        moment = f"after turn {item['turn']}: " if item["turn"] is not None else ""
        item.update(expected=moment + expected, had=had)
        try:
            reading = _reading(check, ctx)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            reading = None
        if reading is not None:
            item["reading"] = reading
    return item


def _reading(check: dict[str, Any], ctx: dict[str, Any]) -> str | None:
    """For a failed check that reads free text (a dictated reason, a composed to-do), which words
    broke the reading, by the runtime's own reader (:func:`runtime.text_fault`), for the first
    value the check could have meant: a player sees "words that are no framing: 'approved'", not
    only the pattern."""
    expected = check.get("expected")
    text = json.dumps(expected)
    if not any(op in text for op in ('"$text"', '"$says"', '"$composed"')):
        return None
    kind = check.get("kind")
    patterns = [expected]
    if kind == "file":
        _, files = runtime.snapshot(ctx, check.get("turn"))
        values: list[Any] = [files.get(check["path"])]
        if check.get("format") == "lines" and isinstance(expected, list) and isinstance(values[0], str):
            return _line_reading(expected, values[0])
    else:
        after, before = _seen(check, ctx)
        if kind in ("created_in", "only_asked"):
            values = [after[k] for k in _new_keys(after, before)] if isinstance(after, dict) else []
            patterns = expected if isinstance(expected, list) else [expected]
        else:
            values = [after]
    for pattern in patterns:
        for value in values:
            fault = _text_fault(pattern, value)
            if fault is not None:
                return fault
    return None


def _line_reading(expected: list[Any], content: str) -> str | None:
    """For a text file whose asked line reads free text (a timeline note): why the lines no
    entry holds do not read as it, the one that carries its values first ("words that are no
    framing: 'asks'"), so a player does not see only "no such line"."""
    lines = runtime.parse_file(content, "lines")
    free = [line for line in lines if not any(runtime.matches(line, e) for e in expected)]
    faults = [
        fault
        for entry in expected
        if isinstance(entry, dict) and not any(runtime.matches(line, entry) for line in lines)
        for line in free
        if (fault := _text_fault(entry, line)) is not None
    ]
    told = [f for f in faults if not f.startswith(("the words", "it does not carry", "not a text"))]
    found = told or faults
    return found[0] if found else None


def _text_fault(pattern: Any, value: Any) -> str | None:
    """The first free text of ``value`` that ``pattern`` does not read, and why (see :func:`_reading`)."""
    fault = runtime.text_fault(value, pattern)
    if fault is not None or not isinstance(pattern, dict):
        return fault
    if len(pattern) == 1:
        ((op, arg),) = pattern.items()
        if op == "$fields" and isinstance(value, dict):
            return next(
                (f for k, p in arg.items() if (f := _text_fault(p, runtime.get(value, "/" + k))) is not None),
                None,
            )
        if op == "$framed" and isinstance(value, str) and len(arg) == 3:
            head, middle, tail = arg
            if value.startswith(head) and value.endswith(tail) and len(value) >= len(head) + len(tail):
                return _text_fault(middle, value[len(head) : len(value) - len(tail)])
        if str(op).startswith("$"):
            return None
    if isinstance(value, dict):
        return next(
            (f for k, p in pattern.items() if (f := _text_fault(p, value.get(k))) is not None),
            None,
        )
    return None


def _why(check: dict[str, Any], ctx: dict[str, Any]) -> tuple[str, str]:
    """(what a failed check expected, what the run had), short, read where the check reads."""
    turn = check.get("turn")
    _, files = runtime.snapshot(ctx, turn)
    _, before_files = runtime.snapshot(ctx, -1 if turn is None else turn - 1)
    kind = check.get("kind")
    if kind == "file":
        path = check["path"]
        like = check.get("path_like")  # a file the env numbers: the one of the golden id if this
        # run wrote it too (a second draft's file, not the first's; round 61, R3), else the first
        if like is not None:
            written = [
                p for p in sorted(files) if runtime.matches(p, like) and files[p] != before_files.get(p)
            ]
            path = path if path in written else next(iter(written), path)
        content = files.get(path)
        if content is None:
            had = "no such file"
        elif content == before_files.get(path):
            had = "unchanged: the file as it was before"
        else:
            return _file_why(check, content)
        return f"{path} ({check.get('format')}): {short(check.get('expected'))}", had
    if kind == "repeats":
        return f"{check['tool']} on these arguments at most {check['count']} time(s)", (
            f"{runtime.times_made(ctx, check)} time(s), less those undone"
        )
    if kind == "file_absent":
        path = check["path"]
        return f"{path} deleted", "still there" if path in files else "not there before either"
    if kind == "files_unchanged":
        changed = [p for p in check["paths"] if files.get(p) != before_files.get(p)]
        return "files as they were", "changed: " + _some(changed)
    if kind == "no_new_files":
        like = check.get("allowed_like", [])
        made = [
            p
            for p in sorted(files)
            if p not in before_files
            and p not in check["allowed"]
            and not any(runtime.matches(p, a) for a in like)
        ]
        return "no file but those a correct run creates", "also created: " + _some(made)
    if kind == "files_either":
        other = [
            p for p, allowed in check["paths"].items() if runtime.untimed(files.get(p) or "") not in allowed
        ]
        return "files as a correct run leaves them", "otherwise: " + _some(other)
    after, before = _seen(check, ctx)
    where = f"{check['env']}:{check['path']}"
    if kind == "value":
        same = runtime.same(after, before)
        return f"{where} = {short(check['expected'])} (changed)", short(after) + (
            " (as it was before)" if same else ""
        )
    if kind == "matches":
        return f"{where} = {short(check['expected'])}", short(after)
    if kind == "absent":
        return f"{where} deleted", "not there before either" if before is runtime.MISSING else short(after)
    if kind == "unchanged":
        said = runtime.claimed(check.get("unsaid"), after, before)
        if said and not changes(before, after, check.get("ignore", [])):
            return f"{where}: a note that names nothing else of the world", (
                "words of other records or states: " + ", ".join(repr(w) for w in said[:4])
            )
        return f"{where} as before", _some(changes(before, after, check.get("ignore", [])))
    if kind == "others_unchanged":
        return f"other members of {where} as before", _others(check, after, before)
    if kind == "no_extra":
        new = _new_keys(after, before)
        return f"at most {check['count']} new in {where}", f"{len(new)} new: {_some(new)}"
    if kind in ("created_in", "only_asked"):
        new = _new_keys(after, before)
        members = [after[k] for k in new] if isinstance(after, dict) else []
        return f"new in {where}: {short(check['expected'])}", (
            f"{len(new)} new: " + _some([f"{k} {short(m)}" for k, m in zip(new, members, strict=True)])
        )
    return f"{where} = {short(check.get('expected'))}", short(after)


def _seen(check: dict[str, Any], ctx: dict[str, Any]) -> tuple[Any, Any]:
    """What a state check saw at its moment and at the start of its window, read as it reads
    them: a new record's path as this run's, what the run voided left out, this run's new ids
    as the golden run's."""
    turn = check.get("turn")
    states, _ = runtime.snapshot(ctx, turn)
    before_states, _ = runtime.snapshot(ctx, -1 if turn is None else turn - 1)
    path = runtime.path_in_run(check["path"], runtime.renaming(ctx, check))
    after = runtime.get(states.get(check["env"], runtime.MISSING), path)
    before = runtime.get(before_states.get(check["env"], runtime.MISSING), path)
    if check.get("kind") in ("no_extra", "created_in", "only_asked"):
        after = runtime.live(ctx, check, after)  # what the run voided is not there
    return runtime.renamed(ctx, check, after), runtime.renamed(ctx, check, before)


def _file_why(check: dict[str, Any], content: str) -> tuple[str, str]:
    """What a written file lacks: the expected rows, lines or section texts it does not hold
    (read as the check reads them), else its parsed content against the pattern."""
    path, fmt, expected = check["path"], check["format"], check["expected"]
    try:
        parsed = runtime.parse_file(content, fmt)
    except ValueError as exc:
        return f"{path} as {fmt}", f"does not parse: {exc}"
    if fmt in ("csv", "tsv"):
        if [runtime.norm_words(h) for h in parsed["header"]] != [
            runtime.norm_words(h) for h in expected["header"]
        ]:
            return f"{path} header {short(expected['header'])}", f"header {short(parsed['header'])}"
        unused, missing = list(parsed["rows"]), []
        for pattern in expected["rows"]:
            hit = next((i for i, row in enumerate(unused) if runtime.matches(row, pattern)), None)
            if hit is None:
                missing.append(pattern)
            else:
                unused.pop(hit)
        if missing:
            return (
                f"{path} rows {_some([short(r) for r in missing])}",
                f"no such row; {len(parsed['rows'])} rows",
            )
        if expected.get("exact", True) and unused:
            return (
                f"{path}: exactly the {len(expected['rows'])} rows",
                f"also {_some([short(r) for r in unused])}",
            )
    elif fmt == "lines":
        missing = [
            entry
            for entry in expected
            if (isinstance(entry, str) and entry not in parsed)
            or (
                isinstance(entry, dict)
                and "$block" not in entry
                and not any(runtime.matches(x, entry) for x in parsed)
            )
        ]
        if missing:
            return (
                f"{path} lines {_some([short(line) for line in missing])}",
                f"no such line; {len(parsed)} lines",
            )
        known = check.get("known_lines")
        note = check.get("free_note")
        unknown = runtime.unasked_lines(parsed, expected, known, note) if known is not None else []
        if unknown:
            return f"{path}: only lines the correct runs write", f"also {_some([short(x) for x in unknown])}"
        count = check.get("line_count")
        said = runtime.counted_lines(content)
        if count is not None and len(said) != count:
            return f"{path}: {count} lines that say something", f"{len(said)} such lines"
        if check.get("chronological") and not runtime.in_time_order(content, None):
            return f"{path}: dated entries in time order", "an entry dated before the one above it"
        until = check.get("dated_until")
        ahead = [line for line in content.split("\n") if until and (runtime.utc_moment(line) or "") > until]
        if ahead:
            return f"{path}: entries dated no later than {until}Z", f"also {_some([short(x) for x in ahead])}"
    elif fmt == "markdown":
        missing = [
            f"## {name}: {short(text)}"
            for name, texts in expected.items()
            for text in texts
            if (body := runtime.section(parsed, name)) is None or text.lower() not in body.lower()
        ]
        if missing:
            return f"{path} sections {_some(missing)}", f"sections {short(list(parsed))}"
        level = runtime.misleveled(content, check.get("levels") or {})
        if level is not None:
            return f"{path}: the sections at the levels asked", level
        fault = runtime.section_fault(content, check) if check.get("framing") is not None else None
        if fault is not None:
            return f"{path}: the asked values and what the world says of their records", fault
    elif not runtime.matches(parsed, expected):
        return f"{path} ({fmt}): {short(expected)}", short(parsed)
    spec = check.get("only_ids")
    if spec is not None and not runtime.only_ids(content, fmt, expected, spec):
        return f"{path}: no ids but the asked ones, one row each", "other ids, or an id in several rows"
    return f"{path} ({fmt}): {short(expected)}", short(content)


def changes(before: Any, after: Any, ignore: Sequence[str] = (), prefix: str = "") -> list[str]:
    """The fields that differ, ``/path: before -> after`` (at most :data:`CHANGES`; ``ignore``d
    paths, as a guard lists them, left out)."""
    if ignore:
        before, after = runtime.without(before, list(ignore)), runtime.without(after, list(ignore))
    if runtime.same(before, after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in [*before, *(k for k in after if k not in before)]:
            found += changes(
                before.get(key, runtime.MISSING), after.get(key, runtime.MISSING), (), f"{prefix}/{key}"
            )
            if len(found) >= CHANGES:
                break
        return found[:CHANGES]
    return [f"{prefix or '/'}: {short(before)} -> {short(after)}"]


def _others(check: dict[str, Any], after: Any, before: Any) -> str:
    """The members an ``others_unchanged`` guard saw changed or removed, with their first changes."""
    now = after if isinstance(after, dict) else {}
    ignore, by_key = check.get("ignore", []), check.get("ignore_by_key", {})
    told = []
    for key, old in (before if isinstance(before, dict) else {}).items():
        if key in check.get("except", []):
            continue
        if key not in now:
            told.append(f"{key} removed")
        elif not runtime.same_without(now[key], old, ignore + by_key.get(key, [])):
            told.append(f"{key} " + ", ".join(changes(old, now[key], ignore + by_key.get(key, []))))
        else:
            told += [
                f"{key} {path}: {short(runtime.get(old, path))} -> {short(runtime.get(now[key], path))}"
                f" (by itself it only becomes {', '.join(map(str, values))})"
                for path, values in check.get("may_become", {}).get(key, {}).items()
                if not runtime.within(now[key], old, {path: values})
            ]
    return _some(told)


def _new_keys(after: Any, before: Any) -> list[str]:
    old = before if isinstance(before, dict) else {}
    return [k for k in after if k not in old] if isinstance(after, dict) else []


def _some(items: Sequence[str]) -> str:
    if not items:
        return "none"
    more = f"; and {len(items) - CHANGES} more" if len(items) > CHANGES else ""
    return "; ".join(items[:CHANGES]) + more


def short(value: Any) -> str:
    """A value as compact JSON, cut to :data:`SHORT` characters ("missing" for an absent one; a
    pattern's ``{"$fields": {...}}`` as the fields it asks for, which is what a reader wants)."""
    if value is runtime.MISSING:
        return "missing"
    shown = json.dumps(_unwrapped(value), ensure_ascii=False, default=str)
    return shown if len(shown) <= SHORT else shown[: SHORT - 1] + "…"


def _unwrapped(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "$fields" in value and isinstance(value["$fields"], dict):
            return _unwrapped(value["$fields"])
        return {key: _unwrapped(sub) for key, sub in value.items()}
    if isinstance(value, list):
        return [_unwrapped(sub) for sub in value]
    return value


def render(explanation: Explanation, components: dict[str, float]) -> list[str]:
    """The explanation as plain text lines: the checks (failed ones first) and the score's sum,
    or, for a verifier that is not itemized, why and its own named components; the failed calls."""
    lines = []
    if explanation.checks is None:
        lines.append(explanation.note or NOT_ITEMIZED)
        lines += [f"component {name}: {value:.3f}" for name, value in components.items()]
    else:
        for item in sorted(explanation.checks, key=lambda i: i["passed"]):
            mark = "pass" if item["passed"] else "FAIL"
            lines.append(f"{mark} {item['role']:<5} {item['name']}")
            if not item["passed"]:
                lines.append(f"     expected: {item['expected']}")
                lines.append(f"     had:      {item['had']}")
                if item.get("reading"):
                    lines.append(f"     reading:  {item['reading']}")
    if explanation.arithmetic is not None:
        a = explanation.arithmetic
        guards = f"{a['guards_broken']} of {a['guards']} guards broken"
        if a["harms"] != a["guards_broken"]:
            guards += f" on {a['harms']} subjects (a guard's copy at a turn's end counts with it)"
        lines.append(
            f"score = goal weight {a['goal_achieved']:g}/{a['goal_wanted']:g} = {a['goal_mean']:.3f}"
            f" x {a['harm']:g}^{a['harms']} ({guards}) = {a['score']:.3f}"
        )
    if explanation.failed_calls:
        lines.append(f"failed calls ({len(explanation.failed_calls)}):")
        for call in explanation.failed_calls:
            lines.append(
                f"  turn {call['turn']} call {call['call']}: {call['env']}.{call['tool']} {call['args']}"
                f" -> {call['code']}: {call['message']}"
            )
    else:
        lines.append("failed calls: none")
    return lines
