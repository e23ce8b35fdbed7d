"""Synthesize a task's verifier from what its golden run changed.

The checks come from the structural diff of S0 against the golden final state (and
workspace): every value the run set, every entity it created or deleted, every file it
wrote or removed is checked *as a change relative to S0*, so a run that does nothing fails
every goal check. Distractor entities and untouched workspace files become guard checks.

Values that any correct run may legitimately produce differently — clock times, seeded
random ids, anything else that moves with the action index — are found by replaying the
golden run with a failed probe call before every call (:func:`shifted_replay`): where the
two runs differ, the check accepts any value of the same type (the change itself is still
required). Everything else is checked by value. Finally every check must pass on those
shifted runs themselves (each is a correct run with more calls); one that fails pins what
the clock decides (a hold that lapses, a timer that fires) and is left out.

The result is a readable ``verify(ctx)`` (stdlib-only Python): the declarative ``CHECKS``
list, exactly the ``checks`` of the returned :class:`Verifier`, and a small interpreter.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from envcraft.core.state import MISSING, diff, get_path
from envcraft.tasks.execute import shifted_replay, shifted_runs
from envcraft.tasks.model import Verifier
from envcraft.tasks.outcome import Outcome
from envcraft.tasks.verify import build_context

# Helpers shared by the generated verifier and by this module (files are parsed the same
# way on both sides, so the golden run always matches its own expectations).
RUNTIME = r'''
MISSING = object()
WILDCARD = "$any"


def get(node, path):
    """Read a JSON Pointer ("/orders/O-1/status"; "" is the whole value); MISSING when absent."""
    if path == "":
        return node
    for raw in path[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return MISSING
    return node


def kind_of(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "other"


def matches(value, pattern):
    """Equal to the expected value; {"$any": kind} accepts any value of that kind."""
    if value is MISSING:
        return False
    if isinstance(pattern, dict) and set(pattern) == {WILDCARD}:
        return kind_of(value) == pattern[WILDCARD]
    if isinstance(pattern, dict):
        return (
            isinstance(value, dict)
            and set(value) == set(pattern)
            and all(matches(value[key], sub) for key, sub in pattern.items())
        )
    if isinstance(pattern, list):
        return (
            isinstance(value, list)
            and len(value) == len(pattern)
            and all(matches(v, p) for v, p in zip(value, pattern))
        )
    return kind_of(value) == kind_of(pattern) and value == pattern


def same(a, b):
    """Identical JSON values (MISSING only equals MISSING)."""
    if a is MISSING or b is MISSING:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def without(value, paths):
    """A copy of value with the given paths removed (list items blanked, so indices hold)."""
    if value is MISSING or not paths:
        return value
    value = json.loads(json.dumps(value))
    for path in paths:
        parent_path, _, raw = path.rpartition("/")
        parent = get(value, parent_path)
        last = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(parent, dict):
            parent.pop(last, None)
        elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
            parent[int(last)] = None
    return value


def norm_text(text):
    """Text up to line endings, trailing spaces and blank lines at either end."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def norm_cell(cell):
    """A CSV cell up to surrounding spaces and number formatting ("3", "3.0", " 3 ")."""
    cell = cell.strip()
    try:
        number = float(cell)
    except ValueError:
        return cell
    return repr(number) if math.isfinite(number) else cell


def csv_table(text, delimiter):
    rows = [
        [norm_cell(cell) for cell in row]
        for row in csv.reader(io.StringIO(text), delimiter=delimiter)
        if any(cell.strip() for cell in row)
    ]
    return {"header": rows[0] if rows else [], "rows": rows[1:]}


def parse_file(text, fmt):
    """A file's content in the form its check compares (raises if it does not parse)."""
    if fmt == "json":
        return json.loads(text)
    if fmt == "csv":
        return csv_table(text, ",")
    if fmt == "tsv":
        return csv_table(text, "\t")
    if fmt == "lines":
        return norm_text(text).split("\n")
    return norm_text(text)


def rows_match(rows, patterns):
    """Every expected row matched by a distinct actual row, in any order, nothing extra."""
    if len(rows) != len(patterns):
        return False
    unused = list(rows)
    for pattern in patterns:
        hit = next((i for i, row in enumerate(unused) if matches(row, pattern)), None)
        if hit is None:
            return False
        unused.pop(hit)
    return True


def content_matches(content, fmt, expected):
    try:
        parsed = parse_file(content, fmt)
    except ValueError:
        return False
    if fmt in ("csv", "tsv"):
        return parsed["header"] == expected["header"] and rows_match(parsed["rows"], expected["rows"])
    if fmt == "lines":
        return all(line in parsed for line in expected)
    return matches(parsed, expected)
'''

_INTERPRETER = r'''

def snapshot(ctx, turn):
    """(states, files) after a turn; turn None is the end of the run, -1 is S0."""
    if turn is None:
        return ctx["final"], ctx["files"]
    if turn < 0:
        return ctx["initial"], ctx["initial_files"]
    return ctx["turns"][turn]["final"], ctx["turns"][turn]["files"]


def run_check(ctx, check):
    """One check's score in [0, 1]. "Before" is S0 for end-of-run checks, else the previous turn."""
    turn = check.get("turn")
    states, files = snapshot(ctx, turn)
    before_states, before_files = snapshot(ctx, -1 if turn is None else turn - 1)
    kind = check["kind"]
    if kind in ("value", "absent", "created_in", "unchanged"):
        after = get(states.get(check["env"], MISSING), check["path"])
        before = get(before_states.get(check["env"], MISSING), check["path"])
        if kind == "value":  # set to the expected value (and so changed from before)
            return float(matches(after, check["expected"]) and not same(after, before))
        if kind == "absent":  # deleted
            return float(after is MISSING and before is not MISSING)
        if kind == "unchanged":  # guard: left as in S0, apart from the fields the task sets
            ignore = check.get("ignore", [])
            return float(same(without(after, ignore), without(before, ignore)))
        new = [v for k, v in after.items() if k not in before] if isinstance(after, dict) else []
        found = 0
        for pattern in check["expected"]:  # created: a distinct new member per expected entity
            hit = next((i for i, member in enumerate(new) if matches(member, pattern)), None)
            if hit is not None:
                found += 1
                new.pop(hit)
        return found / len(check["expected"])
    if kind == "file":  # written with the expected content (and so changed from before)
        content = files.get(check["path"])
        if content is None or content == before_files.get(check["path"]):
            return 0.0
        return float(content_matches(content, check["format"], check["expected"]))
    if kind == "file_absent":
        return float(check["path"] not in files and check["path"] in before_files)
    if kind == "files_unchanged":  # guard: every listed file exactly as in S0
        kept = [files.get(p) == before_files.get(p) for p in check["paths"]]
        return sum(kept) / len(kept)
    raise ValueError("unknown check kind " + repr(kind))


def verify(ctx):
    components = {}
    totals = {"goal": [0.0, 0.0], "guard": [0.0, 0.0]}
    for check in CHECKS:
        try:
            value = run_check(ctx, check)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            value = 0.0
        components[check["name"]] = value
        total = totals[check["role"]]
        total[0] += check["weight"] * value
        total[1] += check["weight"]
    goal = totals["goal"][0] / totals["goal"][1] if totals["goal"][1] else 0.0
    guard = totals["guard"][0] / totals["guard"][1] if totals["guard"][1] else 1.0
    return {"score": goal * guard, "components": components}
'''

_HEADER = '''"""Verifier generated by envcraft from the task's golden run.

{goals} goal checks on what the run must change relative to S0, {guards} guard checks on what
it must leave as it was. score = weighted mean of the goal checks x weighted mean of the
guard checks, so a run that changes nothing scores 0. "$any" marks a value that moves with
the clock or the action count: any value of that kind is accepted, but it must change.
"""

import csv
import io
import json
import math

CHECKS = json.loads(
    r"""
{checks}
"""
)
'''

FILE_FORMATS = {".json": "json", ".csv": "csv", ".tsv": "tsv"}
_NAME_LIMIT = 60


@cache
def runtime() -> dict[str, Any]:
    """The generated verifier's helper functions, loaded here too (trusted constant code)."""
    namespace: dict[str, Any] = {}
    source = "import csv, io, json, math\nCHECKS = []\n" + RUNTIME + _INTERPRETER
    exec(compile(source, "<verifier runtime>", "exec"), namespace)
    return namespace


def synthesize_verifier(
    initial: Mapping[str, Mapping[str, Any]],
    initial_files: Mapping[str, str],
    golden: Outcome,
    protected: Sequence[Mapping[str, str]] = (),
    turn_checks: bool = True,
) -> Verifier | None:
    """The verifier for a golden run, or None when the run changed nothing (not a task).

    ``initial``/``initial_files`` are the task's S0 as stored; diffs are taken against the
    golden outcome's S0, the same state as the sessions normalized it (defaults filled in),
    which is what a verifier later sees. ``protected`` lists distractor entities
    ``{"env", "path"}`` that must stay untouched; ``turn_checks`` adds checks on
    intermediate turns for changes a later turn overwrites.
    """
    _check_same_start(initial, initial_files, golden)
    shifted = shifted_replay(golden)
    builder = _Builder(golden, shifted)
    builder.state_checks(None)
    builder.file_checks(None)
    if turn_checks:
        for turn in range(len(golden.turns) - 1):
            builder.state_checks(turn)
            builder.file_checks(turn)
    if not builder.checks:
        return None
    builder.restored_checks()
    builder.guards(protected)
    checks = _robust(builder.checks, shifted_runs(golden))
    if not any(c["role"] == "goal" for c in checks):
        return None  # everything the run did is undone or redone by the passing of time
    return Verifier(source=render(checks), checks=checks)


def _robust(checks: list[dict[str, Any]], runs: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The checks every shifted run (a correct run with more calls) passes.

    A check one of them fails pins something the clock decides (a hold that lapses, a
    timer that fires, a record the environment changes on its own), not the agent.
    """
    run_check = runtime()["run_check"]
    contexts = [build_context(run) for run in runs]

    def passes(check: dict[str, Any], ctx: dict[str, Any]) -> bool:
        try:
            return bool(run_check(ctx, check) >= 1.0)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            return False

    return [c for c in checks if all(passes(c, ctx) for ctx in contexts)]


def render(checks: list[dict[str, Any]]) -> str:
    """The verifier source for ``checks``: its ``CHECKS`` are exactly ``checks``.

    They are embedded as JSON text (JSON never holds three quotes in a row, so the raw
    string cannot end early): parsing JSON is far cheaper than compiling a large literal,
    and every reward computation compiles the verifier afresh.
    """
    goals = sum(c["role"] == "goal" for c in checks)
    literal = json.dumps(checks, indent=1, ensure_ascii=False)
    header = _HEADER.format(goals=goals, guards=len(checks) - goals, checks=literal)
    return header + RUNTIME + _INTERPRETER


def file_format(path: str, content: str) -> str:
    """How a file is compared: parsed JSON / CSV / TSV by extension, else normalized text."""
    fmt = next((f for ext, f in FILE_FORMATS.items() if path.lower().endswith(ext)), "text")
    if fmt != "text":
        try:
            runtime()["parse_file"](content, fmt)
        except ValueError:
            return "text"
    return fmt


def pattern(golden: Any, shifted: Any) -> Any:
    """The expected value: ``golden`` where the shifted run agrees, a wildcard where it moved."""
    if shifted is MISSING:
        return golden
    if isinstance(golden, dict) and isinstance(shifted, dict) and set(golden) == set(shifted):
        return {key: pattern(golden[key], shifted[key]) for key in golden}
    if isinstance(golden, list) and isinstance(shifted, list) and len(golden) == len(shifted):
        return [pattern(g, s) for g, s in zip(golden, shifted, strict=True)]
    if runtime()["same"](golden, shifted):
        return golden
    return {"$any": runtime()["kind_of"](golden)}


def _check_same_start(
    initial: Mapping[str, Mapping[str, Any]], initial_files: Mapping[str, str], golden: Outcome
) -> None:
    """The golden run must start from this S0 (up to defaults the sessions fill in)."""
    if set(initial) != set(golden.initial):
        raise ValueError(f"golden run covers {sorted(golden.initial)}, S0 has {sorted(initial)}")
    for env, state in initial.items():
        if any(c["op"] != "added" for c in diff(dict(state), golden.initial[env])):
            raise ValueError(f"golden run of '{env}' did not start from this S0")
    if dict(initial_files) != golden.initial_files:
        raise ValueError("golden run did not start from this workspace")


class _Builder:
    """Accumulates checks with unique readable names."""

    def __init__(self, golden: Outcome, shifted: Outcome | None) -> None:
        self.golden = golden
        self.shifted = shifted
        self.checks: list[dict[str, Any]] = []
        self._names: set[str] = set()

    def _add(self, name: str, role: str, **spec: Any) -> None:
        unique, n = name, 2
        while unique in self._names:
            unique, n = f"{name} #{n}", n + 1
        self._names.add(unique)
        self.checks.append({"name": unique, "role": role, "weight": 1.0, **spec})

    def _window(self, run: Outcome, turn: int | None) -> tuple[Any, Any, Any, Any]:
        """(states before, states after, files before, files after) of a check window."""
        if turn is None:
            return run.initial, run.final, run.initial_files, run.files
        before = run.turns[turn - 1] if turn > 0 else None
        return (
            before.final if before else run.initial,
            run.turns[turn].final,
            before.files if before else run.initial_files,
            run.turns[turn].files,
        )

    def restored_checks(self) -> None:
        """Values a turn changed that must be back at their S0 value at the end (reserve, then release)."""
        golden, snapshots = self.golden, self.golden.turns
        for env in sorted(golden.final):
            final, moved = (
                golden.final[env],
                self.shifted.final.get(env, {}) if self.shifted else golden.final[env],
            )
            volatile = {c["path"] for c in diff(final, moved)}
            touched = {c["path"] for c in diff(golden.initial[env], final)}
            paths: dict[str, None] = {}
            states = [golden.initial, *(t.final for t in snapshots)]
            for before, after in itertools.pairwise(states):
                for change in diff(before.get(env, {}), after.get(env, {})):
                    path = change["path"]
                    if not any(_within(path, p) for p in touched | volatile):
                        paths[path] = None
            for path in paths:
                self._add(f"{env}:{path} back to its S0 value", "goal", kind="unchanged", env=env, path=path)
        for path in sorted(
            {p for t in snapshots for p in t.files if t.files.get(p) != golden.initial_files.get(p)}
        ):
            if golden.files.get(path) == golden.initial_files.get(path):
                self._add(f"file {path} back to its S0 content", "goal", kind="files_unchanged", paths=[path])

    def state_checks(self, turn: int | None) -> None:
        """Checks for every state change in a window (turn checks: only those overwritten later)."""
        before, after, _, _ = self._window(self.golden, turn)
        shifted_after = self._window(self.shifted, turn)[1] if self.shifted else None
        prefix = "" if turn is None else f"turn {turn + 1}: "
        extra = {} if turn is None else {"turn": turn}
        for env in sorted(after):
            volatile_new: dict[str, list[tuple[str, Any]]] = {}
            for change in diff(before.get(env, {}), after[env]):
                path, op = change["path"], change["op"]
                now = get_path(after[env], path)
                if turn is not None and _same_value(get_path(self.golden.final[env], path), now):
                    continue  # still visible at the end: the end-of-run check covers it
                where = f"{env}:{path}"
                if op == "removed":
                    self._add(f"{prefix}{where} deleted", "goal", kind="absent", env=env, path=path, **extra)
                    continue
                moved = get_path(shifted_after[env], path) if shifted_after else change["after"]
                if moved is MISSING and op == "added":
                    parent, _, _ = path.rpartition("/")
                    volatile_new.setdefault(parent, []).append((path, change["after"]))
                    continue
                expected = pattern(change["after"], moved)
                label = f"{'created ' if op == 'added' else ''}= {_short(expected)}"
                self._add(
                    f"{prefix}{where} {label}",
                    "goal",
                    kind="value",
                    env=env,
                    path=path,
                    expected=expected,
                    **extra,
                )
            for parent, members in volatile_new.items():
                patterns = self._created_patterns(env, parent, members, turn)
                self._add(
                    f"{prefix}{env}:{parent or '/'} gains {len(patterns)} new",
                    "goal",
                    kind="created_in",
                    env=env,
                    path=parent,
                    expected=patterns,
                    **extra,
                )

    def _created_patterns(
        self, env: str, parent: str, members: list[tuple[str, Any]], turn: int | None
    ) -> list[Any]:
        """Entities created under keys that move with the action index, matched by content."""
        if self.shifted is None:
            return [value for _, value in members]
        before, after, _, _ = self._window(self.shifted, turn)
        old = get_path(before.get(env, {}), parent)
        new_coll = get_path(after[env], parent)
        if not isinstance(new_coll, dict):
            return [value for _, value in members]
        fresh = [v for k, v in new_coll.items() if not isinstance(old, dict) or k not in old]
        if len(fresh) != len(members):
            return [value for _, value in members]
        return [pattern(value, other) for (_, value), other in zip(members, fresh, strict=True)]

    def file_checks(self, turn: int | None) -> None:
        _, _, before, after = self._window(self.golden, turn)
        shifted_after = self._window(self.shifted, turn)[3] if self.shifted else None
        prefix = "" if turn is None else f"turn {turn + 1}: "
        extra = {} if turn is None else {"turn": turn}
        for path in sorted(set(before) | set(after)):
            old, new = before.get(path), after.get(path)
            if old == new or (turn is not None and self.golden.files.get(path) == new):
                continue
            if new is None:
                self._add(f"{prefix}file {path} deleted", "goal", kind="file_absent", path=path, **extra)
                continue
            fmt, expected = self._file_expectation(
                path, new, shifted_after.get(path) if shifted_after else new
            )
            label = "written" if old is None else "updated"
            self._add(
                f"{prefix}file {path} {label}",
                "goal",
                kind="file",
                path=path,
                format=fmt,
                expected=expected,
                **extra,
            )

    def _file_expectation(self, path: str, content: str, moved: str | None) -> tuple[str, Any]:
        helpers = runtime()
        fmt = file_format(path, content)
        parsed = helpers["parse_file"](content, fmt)
        if moved is None or moved == content:
            return fmt, parsed
        if fmt == "text":  # lines both runs wrote are required; the rest moved with the clock
            other = set(helpers["parse_file"](moved, "lines"))
            return "lines", [line for line in helpers["parse_file"](content, "lines") if line in other]
        try:
            other_parsed = helpers["parse_file"](moved, fmt)
        except ValueError:
            return fmt, parsed
        if fmt == "json":
            return fmt, pattern(parsed, other_parsed)
        rows = parsed["rows"]
        other_rows = other_parsed["rows"]
        if len(rows) == len(other_rows):
            rows = [pattern(row, o) for row, o in zip(rows, other_rows, strict=True)]
        return fmt, {"header": parsed["header"], "rows": rows}

    def guards(self, protected: Sequence[Mapping[str, str]]) -> None:
        """Distractors untouched, the rest of each edited record as it was, other S0 files kept."""
        for entry in protected:
            env, path = entry["env"], entry["path"]
            if env not in self.golden.final:
                continue
            value = get_path(self.golden.final[env], path)
            if not _same_value(value, get_path(self.golden.initial[env], path)):
                continue
            moved = get_path(self.shifted.final.get(env, {}), path) if self.shifted else value
            ignore = sorted({c["path"] for c in diff(value, moved)}) if moved is not MISSING else []
            extra = {"ignore": ignore} if ignore else {}
            self._add(
                f"distractor {env}:{path} untouched", "guard", kind="unchanged", env=env, path=path, **extra
            )
        for env in sorted(self.golden.final):
            for record, ignore in self._edited_records(env).items():
                self._add(
                    f"rest of {env}:{record} unchanged",
                    "guard",
                    kind="unchanged",
                    env=env,
                    path=record,
                    ignore=ignore,
                )
        kept = sorted(p for p, c in self.golden.initial_files.items() if self.golden.files.get(p) == c)
        if kept:
            self._add(
                f"{len(kept)} other workspace files untouched", "guard", kind="files_unchanged", paths=kept
            )

    def _edited_records(self, env: str) -> dict[str, list[str]]:
        """S0 records the golden run edited, each with the fields it set or that move with the clock."""
        before, after = self.golden.initial[env], self.golden.final[env]
        edited: dict[str, set[str]] = {}
        for change in diff(before, after):
            record = record_path(change["path"])
            if (
                record is not None
                and isinstance(get_path(before, record), dict)
                and isinstance(get_path(after, record), dict)
            ):
                edited.setdefault(record, set()).add(change["path"][len(record) :])
        if self.shifted is not None:
            for record, fields in edited.items():
                moved = get_path(self.shifted.final.get(env, {}), record)
                if isinstance(moved, dict):
                    fields.update(c["path"] for c in diff(get_path(after, record), moved))
        return {record: sorted(fields) for record, fields in edited.items()}


def _within(path: str, root: str) -> bool:
    """``path`` is ``root``, inside it, or holds it."""
    return path == root or path.startswith(root + "/") or root.startswith(path + "/")


def record_path(path: str) -> str | None:
    """The record a deep path lies in (``/orders/O-1`` for ``/orders/O-1/status``), if any."""
    parts = path.split("/")
    return "/".join(parts[:3]) if len(parts) > 3 else None


def _same_value(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    same: bool = runtime()["same"](a, b)
    return same


def _short(value: Any) -> str:
    """A check name's rendering of an expected value (wildcards shown as ``<kind>``)."""
    text = repr(_display(value))
    return text if len(text) <= _NAME_LIMIT else text[: _NAME_LIMIT - 3] + "..."


class _Kind(str):
    def __repr__(self) -> str:
        return f"<{self}>"


def _display(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$any"}:
        return _Kind(value["$any"])
    if isinstance(value, dict):
        return {k: _display(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_display(v) for v in value]
    return value
