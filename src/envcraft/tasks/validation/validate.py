"""Proof that a task is solvable and that its reward discriminates.

``validate``: the golden run scores exactly 1, a do-nothing run scores below 1, every
mutation of the golden outcome that changes something a check pins scores below 1 (one
change dropped, one changed value altered, a distractor touched, an unrequested field of an
edited record changed, an output file deleted or corrupted, one user turn skipped), and the
scripted agents of :mod:`envcraft.tasks.validation.adversarial` score as they must (wrong ones below 1,
right ones exactly 1). Mutations only show that a verifier sees changes of its own golden
run; the agents play the task for real, which is what catches a verifier that pays for wrong
work or punishes harmless extra work. Values that legitimately move with the action index
(clock, seeded ids; found by :func:`shifted_replay`) are not altered, and a change that a
correct run with more calls also ends without (a hold that lapses) is not dropped.

``replay_task``: the golden calls, re-run in fresh sessions, reach the recorded final hash
and score 1.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from envcraft.core.state import MISSING, diff, get_path
from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import find_leaks
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import (
    execute,
    execute_reference,
    reference_turns,
    shifted_replay,
    shifted_runs,
)
from envcraft.tasks.play.outcome import ExecutionError, Outcome, TurnSnapshot, noop_outcome, outcome_hash
from envcraft.tasks.validation.adversarial import Adversary, Trial
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.scoring import build_context, run_verifier, score_contexts
from envcraft.tasks.verifier.synthesis import file_format, record_path

PER_KIND_LIMIT = 12
KILLED_BELOW = 1.0 - 1e-9

Ctx = dict[str, Any]


@dataclass
class MutationResult:
    kind: str
    name: str
    score: float

    @property
    def killed(self) -> bool:
        return self.score < KILLED_BELOW


@dataclass
class ValidationReport:
    """Everything validation learned about one task; :meth:`quality` goes into ``task.quality``."""

    task_id: str
    golden_score: float = 0.0
    noop_score: float = 1.0
    hash_ok: bool = False
    mutations: list[MutationResult] = field(default_factory=list)
    loose: int = 0
    errors: list[str] = field(default_factory=list)
    trials: list[tuple[Trial, float]] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)

    @property
    def killed(self) -> int:
        return sum(m.killed for m in self.mutations)

    @property
    def kill_rate(self) -> float:
        return self.killed / len(self.mutations) if self.mutations else 1.0

    @property
    def survivors(self) -> list[str]:
        return [m.name for m in self.mutations if not m.killed]

    @property
    def failed_policies(self) -> list[str]:
        """Adversarial policies whose agent did not score as it must (see :mod:`adversarial`)."""
        return sorted({trial.kind for trial, score in self.trials if not trial.passes(score)})

    @property
    def valid(self) -> bool:
        return (
            not self.errors
            and self.hash_ok
            and self.golden_score >= 1.0
            and self.noop_score < KILLED_BELOW
            and not self.survivors
            and not self.failed_policies
        )

    def adversarial(self) -> dict[str, Any]:
        """Per policy: what it must score, what its runs scored, and whether all came out right."""
        found: dict[str, Any] = {}
        for trial, score in self.trials:
            entry = found.setdefault(
                trial.kind, {"expect": trial.expect, "scores": [], "notes": [], "pass": True}
            )
            entry["scores"].append(round(score, 4))
            entry["notes"].append(trial.note)
            entry["pass"] = entry["pass"] and trial.passes(score)
        for kind in self.not_applicable:
            found.setdefault(kind, {"applicable": False})
        return found

    def quality(self) -> dict[str, Any]:
        by_kind: dict[str, list[int]] = {}
        for m in self.mutations:
            counts = by_kind.setdefault(m.kind, [0, 0])
            counts[0] += m.killed
            counts[1] += 1
        return {
            "valid": self.valid,
            "golden_score": self.golden_score,
            "noop_score": self.noop_score,
            "replay_hash_ok": self.hash_ok,
            "mutations_total": len(self.mutations),
            "mutations_killed": self.killed,
            "kill_rate": self.kill_rate,
            "mutations_by_kind": {k: {"killed": v[0], "total": v[1]} for k, v in sorted(by_kind.items())},
            "survivors": self.survivors,
            "loose_values": self.loose,
            "validation_errors": self.errors,
            "adversarial": self.adversarial(),
        }


def validate(
    task: Task, golden: Outcome | None = None, *, record: bool = True, adversarial: bool = True
) -> ValidationReport:
    """Validate ``task`` (golden outcome re-executed unless given): golden, do-nothing, mutations of
    the golden outcome and, with ``adversarial``, the scripted agents; results go into ``task.quality``."""
    report = ValidationReport(task.id)
    try:
        run = golden if golden is not None else execute_reference(task)
        packages = resolve_packages(task)
    except ExecutionError as exc:
        report.errors.append(str(exc))
        return _record(task, report, record)
    report.hash_ok = outcome_hash(run) == task.reference.final_hash
    if not report.hash_ok:
        report.errors.append("golden run does not reach the recorded final hash")
    mutations = _Mutator(task, run, shifted_replay(run))
    generated = list(mutations.all())
    report.loose = mutations.loose
    trials: list[Trial] = []
    if adversarial:
        trials, report.not_applicable = Adversary(task, packages).trials(run)
    contexts = [
        build_context(run),
        build_context(noop_outcome(run)),
        *(ctx for _, _, ctx in generated),
        *(build_context(t.outcome) for t in trials),
    ]
    for ctx in contexts[1:]:  # every run starts from S0: send it once (the payload shares by identity)
        ctx["initial"], ctx["initial_files"] = contexts[0]["initial"], contexts[0]["initial_files"]
    _share_equal_snapshots(contexts)
    scores = score_contexts(task.verifier.source, contexts)
    report.golden_score, report.noop_score = scores[0].score, scores[1].score
    if scores[0].error:
        report.errors.append(f"golden run: {scores[0].error}")
    report.mutations = [
        MutationResult(kind, name, score.score)
        for (kind, name, _), score in zip(generated, scores[2 : 2 + len(generated)], strict=True)
    ]
    report.trials = [(t, s.score) for t, s in zip(trials, scores[2 + len(generated) :], strict=True)]
    return _record(task, report, record)


def _share_equal_snapshots(contexts: list[Ctx]) -> None:
    """Make equal states and workspaces in ``contexts`` one object, so the verifier payload
    (which sends a container shared by identity once) carries each distinct snapshot once: most
    runs end most environments, and most turns, exactly as the golden run does. Only the
    contexts' own dicts are replaced; the outcomes they were built from stay as they are."""
    known: dict[bytes, Any] = {}

    def one(value: Any) -> Any:
        try:
            key = orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
        except (TypeError, orjson.JSONEncodeError):
            return value
        first = known.setdefault(key, value)
        return first if first is value or first == value else value  # NaN and null write alike

    def states(snapshot: dict[str, Any]) -> dict[str, Any]:
        return {env: one(state) for env, state in snapshot.items()}

    for ctx in contexts:
        ctx["final"], ctx["files"] = states(ctx["final"]), one(ctx["files"])
        ctx["turns"] = [{"final": states(t["final"]), "files": one(t["files"])} for t in ctx["turns"]]


def _record(task: Task, report: ValidationReport, record: bool) -> ValidationReport:
    if record:
        task.quality.update(report.quality())
    return report


class _Mutator:
    """Wrong outcomes derived from the golden one, each a verifier context."""

    def __init__(self, task: Task, golden: Outcome, shifted: Outcome | None) -> None:
        self.task = task
        self.golden = golden
        self.shifted = shifted
        self.runs = shifted_runs(golden)
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
                self.loose += 1  # a run with more calls ends like this too: the clock undoes it
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
    the path lies in a record the run created (collection checks of S0 members do not see it)."""
    if check.get("env") != env or "path" not in check:
        return False
    root = check["path"]
    kind = check["kind"]
    if kind in ("value", "matches", "absent"):
        return path == root or path.startswith(root + "/") or root.startswith(path + "/")
    if not (path == root or path.startswith(root + "/")):
        return False
    rest = path[len(root) :]
    if kind == "unchanged":
        return not any(rest == i or rest.startswith(i + "/") for i in check.get("ignore", []))
    if kind == "others_unchanged":
        if new:
            return False
        parts = rest.split("/")
        if len(parts) < 2:
            return True
        key = _unescape(parts[1])
        field_path = "/" + "/".join(parts[2:]) if len(parts) > 2 else ""
        ignored = [*check.get("ignore", []), *check.get("ignore_by_key", {}).get(key, [])]
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
        return len(parts) < 3 or _unescape(parts[2]) in fields
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
            yield from _leaves(sub, f"{prefix}/{_escape(str(key))}")
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
    parts = [_unescape(p) for p in path.removeprefix("/").split("/")] if path else []
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


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(key: str) -> str:
    return key.replace("~1", "/").replace("~0", "~")


def _same(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return vr.same(a, b)


def summarize(
    tasks: Sequence[Task], reports: Sequence[ValidationReport], stats: dict[str, Any] | None
) -> dict[str, Any]:
    """The figures ``envcraft tasks check`` prints for a whole task set (leaks recomputed from the text)."""
    n = len(reports)
    total = sum(len(r.mutations) for r in reports)
    by_kind: dict[str, list[int]] = {}
    for report in reports:
        for m in report.mutations:
            counts = by_kind.setdefault(m.kind, [0, 0])
            counts[0] += m.killed
            counts[1] += 1
    leaks = {t.id: len(find_leaks(t)) for t in tasks}
    policies: dict[str, list[int]] = {}
    for report in reports:
        for trial, score in report.trials:
            counts = policies.setdefault(trial.kind, [0, 0])
            counts[0] += trial.passes(score)
            counts[1] += 1
    return {
        "tasks": n,
        "valid": sum(r.valid for r in reports),
        "adversarial_pass_rate": _rate(sum(not r.failed_policies for r in reports), n),
        "adversarial_by_policy": {k: {"passed": v[0], "runs": v[1]} for k, v in sorted(policies.items())},
        "golden_pass_rate": _rate(sum(r.golden_score >= 1.0 and r.hash_ok for r in reports), n),
        "noop_fail_rate": _rate(sum(r.noop_score < KILLED_BELOW for r in reports), n),
        "kill_rate": _rate(sum(r.killed for r in reports), total) if total else 1.0,
        "mutations": total,
        "kill_rate_by_kind": {k: _rate(v[0], v[1]) for k, v in sorted(by_kind.items())},
        "leaks": sum(leaks.values()),
        "leaky_tasks": [task_id for task_id, count in leaks.items() if count],
        "cross_env_rate": _rate(sum(len(t.envs) > 1 for t in tasks), len(tasks)),
        "edge_coverage": _edge_coverage(stats),
        "chain_lengths": _histogram(len(t.reference.calls) for t in tasks),
        "turns": _histogram(len(t.turns) for t in tasks),
        "invalid": [
            {
                "task_id": r.task_id,
                "errors": r.errors,
                "survivors": r.survivors,
                "noop_score": r.noop_score,
                "failed_policies": r.failed_policies,
            }
            for r in reports
            if not r.valid
        ],
    }


def _edge_coverage(stats: dict[str, Any] | None) -> dict[str, float] | None:
    """Per-environment share of reachable tool edges the set covers, as the generator's stats record it."""
    envs = (stats or {}).get("envs")
    if not isinstance(envs, dict):
        return None
    found = {
        env: info["edge_coverage"]
        for env, info in envs.items()
        if isinstance(info, dict) and "edge_coverage" in info
    }
    return found or None


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _histogram(values: Iterator[int]) -> dict[str, int]:
    counts: dict[int, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return {str(k): counts[k] for k in sorted(counts)}


@dataclass
class ReplayResult:
    """One task's golden replay: did it reproduce the hash, and did the verifier give 1?"""

    task_id: str
    ok: bool
    hash_ok: bool
    score: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "task_id": self.task_id,
            "ok": self.ok,
            "hash_ok": self.hash_ok,
            "score": self.score,
        }
        if self.error is not None:
            data["error"] = self.error
        return data


def replay_task(task: Task) -> ReplayResult:
    """Re-run the golden calls in fresh sessions and score the outcome."""
    try:
        outcome = execute_reference(task)
    except ExecutionError as exc:
        return ReplayResult(task.id, False, False, 0.0, str(exc))
    hash_ok = outcome_hash(outcome) == task.reference.final_hash
    score = run_verifier(task, outcome)
    error = score.error
    if error is None and not hash_ok:
        error = "final state differs from the recorded golden hash"
    if error is None and score.score < 1.0:
        error = f"golden run scores {score.score:.3f}, not 1"
    return ReplayResult(task.id, hash_ok and score.score >= 1.0, hash_ok, score.score, error)
