"""Mutations of a golden outcome: wrong outcomes a verifier must score below 1.

Each mutation changes one thing that a check of the verifier pins: one change dropped, one
changed value altered, a distractor touched, an unrequested field of an edited record changed,
an output file deleted or corrupted, one user turn skipped. Values that legitimately move with the
action index (clock, seeded ids; found by :func:`~envcraft.tasks.play.execute.shifted_replay`)
are not altered, and a change that a correct run with more calls also ends without (a hold that
lapses) is not dropped. :func:`envcraft.tasks.validation.validate.validate` scores them with the
golden run, the do-nothing run and the scripted agents in one isolated batch.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.state import MISSING, diff, get_path
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute, recovered_runs, reference_turns, shifted_runs
from envcraft.tasks.play.outcome import ExecutionError, Outcome, TurnSnapshot, outcome_hash
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import file_format, record_path
from envcraft.tasks.verifier.scoring import build_context

PER_KIND_LIMIT = 12  # mutations of one kind at most (the first ones, in a fixed order)

Ctx = dict[str, Any]


class Mutator:
    """Wrong outcomes derived from the golden one, each a verifier context."""

    def __init__(self, task: Task, golden: Outcome, shifted: Outcome | None) -> None:
        self.task = task
        self.golden = golden
        self.shifted = shifted
        self.runs = [*shifted_runs(golden), *recovered_runs(golden)]  # correct runs: their ends are right
        self.base = build_context(golden)
        self.loose = 0

    def all(self) -> Iterator[tuple[str, str, Ctx]]:
        for kind, name, ctx in self._generate():
            if self._pinned(kind, name):
                yield kind, name, ctx

    def _pinned(self, kind: str, name: str) -> bool:
        """Whether some check pins what the mutation changed (a field the task leaves free, a
        counter or a log record is no wrong run)."""
        if kind in ("revert_turn", "delete_file", "corrupt_file") or " file " in f" {name} ":
            return True
        env, _, path = name.rsplit(" ", 1)[-1].partition(":")
        parts = path.split("/")
        new = len(parts) > 2 and get_path(self.golden.initial.get(env, {}), "/".join(parts[:3])) is MISSING
        return any(_covers(check, env, path, new) for check in self.task.verifier.checks)

    def _generate(self) -> Iterator[tuple[str, str, Ctx]]:
        for kind, source in (
            ("drop_change", self._drop_changes()),
            ("alter_value", self._alter_values()),
            ("touch_distractor", self._touch_distractors()),
            ("side_effect", self._side_effects()),
            ("delete_file", self._delete_files()),
            ("corrupt_file", self._corrupt_files()),
            ("revert_turn", self._revert_turns()),
        ):
            for count, (name, ctx) in enumerate(source):
                if count == PER_KIND_LIMIT:
                    break
                yield kind, name, ctx

    # -- building contexts ----------------------------------------------------------------
    def _with_state(self, env: str, path: str, value: Any) -> Ctx:
        """The golden context with one state path set (``MISSING`` deletes it) at the end of the run."""
        final = dict(self.base["final"])
        final[env] = _set_path(final[env], path, value)
        return self._with_end(final, self.base["files"])

    def _with_file(self, path: str, content: str | None) -> Ctx:
        files = dict(self.base["files"])
        if content is None:
            files.pop(path, None)
        else:
            files[path] = content
        return self._with_end(self.base["final"], files)

    def _with_end(self, final: dict[str, Any], files: dict[str, str]) -> Ctx:
        turns = list(self.base["turns"])
        if turns:
            turns[-1] = {"final": final, "files": files}
        return {**self.base, "final": final, "files": files, "turns": turns}

    def _stable(self, env: str, path: str, value: Any) -> bool:
        """True unless the shifted replay shows this value moving with the action index."""
        if self.shifted is None:
            return True
        return _same(get_path(self.shifted.final.get(env, {}), path), value)

    # -- the mutation classes ----------------------------------------------------------------
    def _changes(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for env in sorted(self.golden.final):
            for change in diff(self.golden.initial.get(env, {}), self.golden.final[env]):
                yield env, change

    def _drop_changes(self) -> Iterator[tuple[str, Ctx]]:
        for env, change in self._changes():
            before = MISSING if change["op"] == "added" else change["before"]
            if any(_same(get_path(r.final.get(env, {}), change["path"]), before) for r in self.runs):
                self.loose += (
                    1  # a correct run ends like this too: the clock or a documented recovery undoes it
                )
                continue
            yield f"drop {env}:{change['path']}", self._with_state(env, change["path"], before)
        for path in sorted(set(self.golden.initial_files) | set(self.golden.files)):
            old, new = self.golden.initial_files.get(path), self.golden.files.get(path)
            if old != new and old is not None:  # a created file dropped is a deleted file (below)
                yield f"revert file {path}", self._with_file(path, old)

    def _alter_values(self) -> Iterator[tuple[str, Ctx]]:
        for env, change in self._changes():
            if change["op"] == "removed":
                continue
            initial = self.golden.initial.get(env, {})
            changed = [
                (change["path"] + suffix, leaf)
                for suffix, leaf in _leaves(change["after"])
                if not _same(get_path(initial, change["path"] + suffix), leaf)
            ]
            stable = [(path, leaf) for path, leaf in changed if self._stable(env, path, leaf)]
            if not stable:  # every value it set moves with the clock: nothing a verifier may pin
                self.loose += 1
                continue
            path, leaf = stable[0]
            yield f"alter {env}:{path}", self._with_state(env, path, _altered(leaf))

    def _distractors(self) -> list[tuple[str, str]]:
        declared = self.task.provenance.get("distractors", [])
        found = {(d["env"], d["path"]) for d in declared if isinstance(d, dict) and {"env", "path"} <= set(d)}
        found |= {(c["env"], c["path"]) for c in self.task.verifier.checks if c.get("kind") == "unchanged"}
        return sorted(found)

    def _touch_distractors(self) -> Iterator[tuple[str, Ctx]]:
        for env, path in self._distractors():
            if env not in self.golden.final:
                continue
            value = get_path(self.golden.final[env], path)
            if value is MISSING or not _same(value, get_path(self.golden.initial[env], path)):
                continue
            stable = [(s, leaf) for s, leaf in _leaves(value) if self._stable(env, path + s, leaf)]
            if not stable:  # the environment itself changes it as time passes
                self.loose += 1
                continue
            suffix, leaf = stable[0]
            yield f"touch {env}:{path}{suffix}", self._with_state(env, path + suffix, _altered(leaf))
        for path, content in sorted(self.golden.initial_files.items()):
            if self.golden.files.get(path) == content:
                yield f"touch file {path}", self._with_file(path, content + "\naltered\n")
                break

    def _side_effects(self) -> Iterator[tuple[str, Ctx]]:
        """An S0 record the run edited, with one more field changed that the task never asked for."""
        for env in sorted(self.golden.final):
            initial, final = self.golden.initial[env], self.golden.final[env]
            records = dict.fromkeys(
                r for c in diff(initial, final) if (r := record_path(c["path"])) is not None
            )
            for record in records:
                before, after = get_path(initial, record), get_path(final, record)
                if not isinstance(before, dict) or not isinstance(after, dict):
                    continue
                for suffix, leaf in _leaves(after):
                    path = record + suffix
                    if _same(get_path(initial, path), leaf) and self._stable(env, path, leaf):
                        yield f"side effect {env}:{path}", self._with_state(env, path, _altered(leaf))
                        break

    def _written_files(self) -> list[str]:
        return [p for p, c in sorted(self.golden.files.items()) if self.golden.initial_files.get(p) != c]

    def _delete_files(self) -> Iterator[tuple[str, Ctx]]:
        for path in self._written_files():
            yield f"delete file {path}", self._with_file(path, None)

    def _corrupt_files(self) -> Iterator[tuple[str, Ctx]]:
        for path in self._written_files():
            content = self.golden.files[path]
            moved = self.shifted.files.get(path) if self.shifted else content
            corrupted = _corrupt(path, content, moved)
            if corrupted is None:
                self.loose += 1
                continue
            yield f"corrupt file {path}", self._with_file(path, corrupted)

    def _revert_turns(self) -> Iterator[tuple[str, Ctx]]:
        """The run with one user turn's calls left out.

        Kept only when that loses something: the end state differs where the shifted replay
        agrees with the golden one, or some effect of the turn never shows up in any later
        snapshot. A turn whose effects merely come later (lookups that let an environment's
        timers fire, work done in the next turn) is no wrong run.
        """
        if len(self.task.turns) < 2:
            return
        turns = reference_turns(self.task)
        for skipped, calls in enumerate(turns):
            if not calls:
                continue
            partial = [[] if i == skipped else t for i, t in enumerate(turns)]
            try:
                outcome = execute(self.task, partial)
            except ExecutionError:
                continue
            if self._same_end(outcome) and self._effects_reappear(outcome, skipped):
                continue
            yield f"skip turn {skipped + 1}", build_context(outcome)

    def _same_end(self, other: Outcome) -> bool:
        """Same final state and files as the golden run wherever the shifted replay agrees with it."""
        if self.shifted is None:
            return outcome_hash(other) == outcome_hash(self.golden)
        for env, state in self.golden.final.items():
            volatile = {c["path"] for c in diff(state, self.shifted.final.get(env, {}))}
            if any(not _under_any(c["path"], volatile) for c in diff(state, other.final.get(env, {}))):
                return False
        gold, moved, seen = self.golden.files, self.shifted.files, other.files
        return all(gold.get(p) == seen.get(p) or gold.get(p) != moved.get(p) for p in set(gold) | set(seen))

    def _effects_reappear(self, other: Outcome, turn: int) -> bool:
        """Every stable change of ``turn`` in the golden run shows up in ``other`` then or later."""
        before = (
            self.golden.turns[turn - 1]
            if turn
            else TurnSnapshot(self.golden.initial, self.golden.initial_files)
        )
        after = self.golden.turns[turn]
        moved = self.shifted.turns[turn] if self.shifted else after
        later = other.turns[turn:]
        for env, state in after.final.items():
            volatile = {c["path"] for c in diff(state, moved.final.get(env, {}))}
            for change in diff(before.final.get(env, {}), state):
                if _under_any(change["path"], volatile):
                    continue
                value = get_path(state, change["path"])
                if not any(_same(get_path(snap.final.get(env, {}), change["path"]), value) for snap in later):
                    return False
        for path in set(before.files) | set(after.files):
            content = after.files.get(path)
            stable_change = content != before.files.get(path) and content == moved.files.get(path)
            if stable_change and not any(snap.files.get(path) == content for snap in later):
                return False
        return True


def _covers(check: dict[str, Any], env: str, path: str, new: bool = False) -> bool:
    """Whether ``check`` looks at state ``path`` of ``env`` (so changing it can matter); ``new``:
    the path lies in a record the run created (collection checks of S0 members do not see it).
    A mutation changes the end of the run: a check of a turn's end does not see it."""
    if check.get("env") != env or "path" not in check or check.get("turn") is not None:
        return False
    root = check["path"]
    kind = check["kind"]
    if kind in ("value", "matches", "absent"):
        if check.get("unmade") and not path.startswith(root + "/"):
            return False  # a record the world makes in time: a run may end before it is made
        return path == root or path.startswith(root + "/") or root.startswith(path + "/")
    if not (path == root or path.startswith(root + "/")):
        return False
    rest = path[len(root) :]
    # a field looking at a record sets is excused as an ignored one is: the golden run's change
    # there (a note read: "seen") is no work a mutation could take back
    looked = list(check.get("looked") or {})
    if kind == "unchanged":
        return not any(rest == i or rest.startswith(i + "/") for i in [*check.get("ignore", []), *looked])
    if kind == "others_unchanged":
        if new:
            return False
        parts = rest.split("/")
        if len(parts) < 2:
            return True
        key = unescape_token(parts[1])
        field_path = "/" + "/".join(parts[2:]) if len(parts) > 2 else ""
        ignored = [*check.get("ignore", []), *check.get("ignore_by_key", {}).get(key, []), *looked]
        return key not in check.get("except", []) and not any(
            field_path == i or field_path.startswith(i + "/") for i in ignored
        )
    if kind == "created_in":  # a new record's field counts only if some expected record pins it
        if not new:
            return False
        parts = rest.split("/")
        fields = {
            name
            for expected in check.get("expected", [])
            if isinstance(expected, dict)
            for name in expected.get("$fields", expected)
        }
        return len(parts) < 3 or unescape_token(parts[2]) in fields
    return kind == "no_extra" and rest.count("/") == 1  # a whole record more or less


def _under_any(path: str, roots: set[str]) -> bool:
    """``path`` is one of ``roots``, inside one, or contains one (a value that moved as a whole)."""
    return any(path == r or path.startswith(r + "/") or r.startswith(path + "/") for r in roots)


def _corrupt(path: str, content: str, moved: str | None) -> str | None:
    """``content`` with one value the shifted run agrees on changed, in the file's own format."""
    fmt = file_format(path, content)
    if fmt == "json":
        parsed = json.loads(content)
        other = _parse_or_missing(moved, "json")
        for suffix, leaf in _leaves(parsed):
            if other is MISSING or _same(get_path(other, suffix), leaf):
                return json.dumps(_set_path(parsed, suffix, _altered(leaf)), indent=2)
        return None
    if fmt in ("csv", "tsv"):
        return _corrupt_table(content, moved, "\t" if fmt == "tsv" else ",")
    lines = content.split("\n")
    stable = {vr.untimed(line) for line in (moved.split("\n") if moved is not None else lines)}
    corrupted = [_scramble(line) if vr.untimed(line) in stable else line for line in lines]
    return "\n".join(corrupted) if corrupted != lines else None


def _scramble(line: str) -> str:
    """The line with every letter shifted by one (``INC-2042`` -> ``JOD-2042``): same shape, other words."""
    return "".join(
        chr((ord(ch) - base + 1) % 26 + base) if ch.isascii() and ch.isalpha() else ch
        for ch in line
        for base in [ord("a") if ch.islower() else ord("A")]
    )


def _corrupt_table(content: str, moved: str | None, delimiter: str) -> str | None:
    """Change one cell the shifted run agrees on (a data cell if there is one, else the header)."""
    rows = list(csv.reader(io.StringIO(content), delimiter=delimiter))
    other = list(csv.reader(io.StringIO(moved), delimiter=delimiter)) if moved is not None else rows
    order = [*range(1, len(rows)), 0]
    for i in order:
        for j, cell in enumerate(rows[i] if i < len(rows) else []):
            agreed = i < len(other) and j < len(other[i]) and other[i][j] == cell
            if cell.strip() and agreed:
                rows[i] = [*rows[i][:j], cell + "_altered", *rows[i][j + 1 :]]
                out = io.StringIO()
                csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(rows)
                return out.getvalue()
    return None


def _parse_or_missing(text: str | None, fmt: str) -> Any:
    if text is None:
        return MISSING
    try:
        return vr.parse_file(text, fmt)
    except ValueError:
        return MISSING


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(path suffix, leaf)`` in document order; empty containers are leaves too."""
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            yield from _leaves(sub, f"{prefix}/{escape_token(str(key))}")
    elif isinstance(value, list) and value:
        for i, sub in enumerate(value):
            yield from _leaves(sub, f"{prefix}/{i}")
    else:
        yield prefix, value


def _altered(value: Any) -> Any:
    """A plausible wrong value of the same kind (a wrong amount, a wrong name, a flipped flag)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):  # other words, not the same words with more around them
        return "altered" if value != "altered" else "changed"
    if isinstance(value, list):
        return [*value, "altered"]
    if isinstance(value, dict):
        return {**value, "altered": True}
    return "altered"


def _set_path(root: Any, path: str, value: Any) -> Any:
    """A copy of ``root`` with ``path`` set (``MISSING`` deletes); only the spine is copied."""
    parts = [unescape_token(p) for p in path.removeprefix("/").split("/")] if path else []
    return _set_parts(root, parts, value)


def _set_parts(node: Any, parts: Sequence[str], value: Any) -> Any:
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(node, list):
        copy_list = list(node)
        index = int(head)
        if value is MISSING and not rest:
            del copy_list[index]
        else:
            copy_list[index] = _set_parts(copy_list[index], rest, value)
        return copy_list
    copy_dict = dict(node) if isinstance(node, dict) else {}
    if value is MISSING and not rest:
        copy_dict.pop(head, None)
    else:
        copy_dict[head] = _set_parts(copy_dict.get(head, {}), rest, value)
    return copy_dict


def _same(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return vr.same(a, b)
