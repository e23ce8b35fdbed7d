"""Synthesize a task's verifier: what the user asked for, and what a user would object to.

**Goals** come from what the golden run did to the records the chain acts on: every change
to a record a call names or creates, with the value asked for; every workspace file it
writes, moves or deletes; a file the user asked for, parsed (JSON keys, CSV rows, Markdown
sections). A goal must change relative to S0, so a do-nothing run fails every one.

**Guards** protect what the user did not ask to change: every other record of every
collection (distractors named separately), the fields of an edited record the task did not
set, no extra records where the task creates a given number, the changes a requested step
makes elsewhere (a consequence must come out as the golden run's), and every S0 file the
task never touches. Fields a user leaves free (declared ``free``: notes, comments), log
collections (``log``: health checks), top-level counters and timestamps are never pinned.

**What moves by itself is never the agent's doing.** The golden run is replayed with failed
calls before every call (``shifted_runs``: the clock moves between steps), followed by idle
time (``tail_runs``), and S0 is left alone as long (``clock_run``). A value that differs
between these correct runs is accepted in any of the forms they show (a timestamp as any
string, a status as any of the states seen); a path that only the world's own dynamics
change is neither a goal nor guarded. Finally every check must pass on each of those runs,
so extra harmless calls or the clock drift they cause never cost a correct run.

The verifier is the :mod:`envcraft.tasks.verifier.runtime` source with its ``CHECKS``
(exactly the :class:`Verifier`'s ``checks``) appended: readable, stdlib-only, run isolated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.core.package import load_package
from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.state import MISSING, diff, get_path
from envcraft.tasks.format.model import Source, Verifier
from envcraft.tasks.phrasing.phrasebook import Phrasebook, is_time, phrasebook
from envcraft.tasks.play.execute import clock_run, shifted_runs, tail_runs
from envcraft.tasks.play.outcome import Outcome
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.scoring import build_context
from envcraft.tasks.verifier.source import render

FILE_FORMATS = {".json": "json", ".csv": "csv", ".tsv": "tsv"}
_NAME_LIMIT = 60
_ID_LIKE = re.compile(r"^[A-Za-z]+[-_]?\d+$")
MAX_CHOICES = 4
# Arguments that carry a message the user dictated: a greeting or a sign-off around the words is
# still the message asked for ($says), while a name or a title must be the words given ($text).
BODY_PARAMS = frozenset({"body", "comment", "memo", "message", "note", "summary", "text"})


@dataclass(frozen=True)
class FileRequest:
    """A file the user asks for by its content: ``expected`` in the runtime's file-check form;
    ``sources`` are the (env, state path) where each value asked for lives."""

    path: str
    format: str  # json | csv | markdown
    expected: Any
    sources: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "expected": self.expected}


def _guard_on_time(check: dict[str, Any]) -> None:
    check["role"] = "guard"
    check["name"] += " (on time)"


def _asked_values(request: FileRequest) -> list[str]:
    """The values a table or a section request asks for, as the user would write them."""
    if request.format == "csv":
        return [str(row[1]) for row in request.expected["rows"] if len(row) > 1]
    return [str(v) for texts in request.expected.values() for v in texts]


def file_format(path: str, content: str) -> str:
    """How a file is compared: parsed JSON / CSV / TSV by extension, else normalized text."""
    fmt = next((f for ext, f in FILE_FORMATS.items() if path.lower().endswith(ext)), "text")
    if fmt != "text":
        try:
            vr.parse_file(content, fmt)
        except ValueError:
            return "text"
    return fmt


def record_path(path: str) -> str | None:
    """The record a deep path lies in (``/orders/O-1`` for ``/orders/O-1/status``), if any."""
    parts = path.split("/")
    return "/".join(parts[:3]) if len(parts) > 3 else None


def synthesize_verifier(
    initial: Mapping[str, Mapping[str, Any]],
    initial_files: Mapping[str, str],
    golden: Outcome,
    protected: Sequence[Mapping[str, str]] = (),
    turn_checks: bool = True,
    requests: Sequence[FileRequest] = (),
) -> Verifier | None:
    """The verifier for a golden run, or None when nothing it did can be asked for.

    ``initial``/``initial_files`` are the task's S0 as stored (the golden outcome's S0 is the
    same up to defaults the sessions fill in); ``protected`` lists distractor records
    ``{"env", "path"}``; ``requests`` the files the user asked for by content.
    """
    _check_same_start(initial, initial_files, golden)
    world = World.of(golden)
    builder = _Builder(golden, world)
    builder.goals(None)
    if turn_checks:
        for turn in range(len(golden.turns) - 1):
            builder.goals(turn)
    builder.file_goals(requests)
    if not any(c["role"] == "goal" for c in builder.checks):
        return None
    builder.guards(protected)
    checks = robust(builder.checks, world.variants)
    if not any(c["role"] == "goal" for c in checks):
        return None  # everything the run did is undone or redone by the passing of time
    return Verifier(source=render(checks), checks=checks)


def robust(checks: list[dict[str, Any]], runs: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The checks every correct variant run passes (one that fails pins what the clock decides)."""
    contexts = [build_context(run) for run in runs]

    def passes(check: dict[str, Any], ctx: dict[str, Any]) -> bool:
        try:
            return vr.run_check(ctx, check) >= 1.0
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            return False

    return [c for c in checks if all(passes(c, ctx) for ctx in contexts)]


# -- what moves by itself ---------------------------------------------------------------------------
@dataclass
class World:
    """The golden run with its correct variants, and what in them moves without the agent."""

    golden: Outcome
    variants: list[Outcome]  # correct runs: shifted and tail replays
    books: dict[str, Phrasebook]
    exogenous: dict[str, set[str]] = field(default_factory=dict)  # env -> paths the world changes
    exogenous_files: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, golden: Outcome) -> World:
        books = {env: phrasebook(load_package(path)) for env, path in golden.packages.items()}
        tails = tail_runs(golden)
        world = cls(golden, [*shifted_runs(golden), *tails], books)
        clock = clock_run(golden)
        for env in golden.final:
            paths = {c["path"] for c in diff(golden.initial[env], clock.final[env])}
            for tail in tails:
                paths |= {c["path"] for c in diff(golden.final[env], tail.final[env])}
            world.exogenous[env] = paths
        moved = [(golden.initial_files, clock.files)] + [(golden.files, t.files) for t in tails]
        for before, after in moved:
            world.exogenous_files |= {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
        return world

    def values(self, env: str, path: str, turn: int | None = None) -> list[Any]:
        """The value at ``path`` in the golden run and every variant (MISSING where absent)."""
        runs = [self.golden, *self.variants] if turn is None else [self.golden, *self.variants[:2]]
        return [get_path(_states(run, turn).get(env, {}), path) for run in runs]

    def holds(self, env: str, path: str) -> bool:
        """Whether every correct run ends with what the golden one has at ``path``: the same
        record (a record path: it exists, whatever its timestamps) or the same value."""
        gold, *others = self.values(env, path)
        if path.count("/") == 2:
            return all(o is not MISSING for o in others)
        return not _under_any(path, self.exogenous.get(env, set())) and all(vr.same(gold, o) for o in others)

    def moves(self, env: str, path: str) -> bool:
        """Whether a variant shows another value here, or the world changes it on its own."""
        if _under_any(path, self.exogenous.get(env, set())):
            return True
        gold, *others = self.values(env, path)
        return any(not vr.same(gold, other) for other in others)


def _states(run: Outcome, turn: int | None) -> dict[str, Any]:
    return run.final if turn is None else run.turns[turn].final


def pattern_of(values: Sequence[Any]) -> Any:
    """The pattern accepting each of ``values`` (the golden one first), as tight as they allow."""
    present = [v for v in values if v is not MISSING]
    gold = present[0]
    if all(vr.same(gold, v) for v in present):
        return gold
    if all(isinstance(v, dict) for v in present) and all(set(v) == set(gold) for v in present):
        return {key: pattern_of([v[key] for v in present]) for key in gold}
    if all(isinstance(v, list) for v in present) and all(len(v) == len(gold) for v in present):
        return [pattern_of([v[i] for v in present]) for i in range(len(gold))]
    kinds = {vr.kind_of(v) for v in present}
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if kind == "str" and (all(is_time(v) for v in present) or all(_ID_LIKE.match(v) for v in present)):
            return {"$any": "str"}
        if kind in ("list", "dict"):
            return {"$any": kind}
    distinct: list[Any] = []
    for v in present:
        if not any(vr.same(v, d) for d in distinct):
            distinct.append(v)
    if len(distinct) <= MAX_CHOICES and all(not isinstance(v, dict | list) for v in distinct):
        return {"$one_of": distinct}
    return {"$any": vr.kind_of(gold)} if len(kinds) == 1 else {"$one_of": distinct[:MAX_CHOICES]}


def _wild(pattern: Any) -> bool:
    return isinstance(pattern, dict) and set(pattern) == {"$any"}


# -- building checks -------------------------------------------------------------------------------
class _Builder:
    """Accumulates checks with unique readable names."""

    def __init__(self, golden: Outcome, world: World) -> None:
        self.golden = golden
        self.world = world
        self.checks: list[dict[str, Any]] = []
        self._names: set[str] = set()
        self.named = _named_records(golden, world.books)
        self.texts = _free_texts(golden)
        self.goal_paths: dict[str, set[str]] = {env: set() for env in golden.final}

    def _add(self, name: str, role: str, **spec: Any) -> None:
        unique, n = name, 2
        while unique in self._names:
            unique, n = f"{name} #{n}", n + 1
        self._names.add(unique)
        self.checks.append({"name": unique, "role": role, "weight": 1.0, **spec})

    def _window(
        self, turn: int | None
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], dict[str, str]]:
        run = self.golden
        if turn is None:
            return run.initial, run.final, run.initial_files, run.files
        before = run.turns[turn - 1] if turn > 0 else None
        return (
            before.final if before else run.initial,
            run.turns[turn].final,
            before.files if before else run.initial_files,
            run.turns[turn].files,
        )

    # -- goals ------------------------------------------------------------------------------------
    def goals(self, turn: int | None) -> None:
        """Changes to the records the chain names or creates.

        Turn checks (``turn``: the window of one user turn but the last) are goals where a later
        turn overwrites the change (the end of the run cannot see it); where the end still shows
        it, the turn check is an on-time guard (a broken one halves the reward like any guard):
        work asked for in one turn and done only turns later is not the job done (a judge's agent
        did every turn's work in the last one and scored 1), yet it does not dilute the goals.
        """
        start = len(self.checks)
        before, after, _, _ = self._window(turn)
        prefix = "" if turn is None else f"turn {turn + 1}: "
        extra = {} if turn is None else {"turn": turn}
        for env in sorted(after):
            book = self.world.books[env]
            created: dict[str, list[str]] = {}
            for change in diff(before.get(env, {}), after[env]):
                path = change["path"]
                collection, key, rest = _split(path)
                if collection is None or collection not in book.collections:
                    self._top_level(env, change, prefix, extra, turn)  # not a record: the value itself
                    continue
                if not rest:  # a whole record added or removed
                    if change["op"] == "added" and not _under_any(path, self.world.exogenous.get(env, set())):
                        created.setdefault(collection, []).append(key)  # (not one the world adds itself)
                    elif (env, collection, key) in self.named:
                        self._add(
                            f"{prefix}{env}:{path} deleted",
                            "goal",
                            kind="absent",
                            env=env,
                            path=path,
                            **extra,
                        )
                    continue
                if key not in before.get(env, {}).get(collection, {}):
                    continue  # inside a record created in this window: its created_in check covers it
                if (env, collection, key) not in self.named:
                    continue  # a consequence of the work: guarded, not a goal
                self._value_goal(env, path, change, prefix, extra, turn)
            for collection, keys in created.items():
                self._created(env, collection, keys, before[env], after[env], prefix, extra, turn)
        if turn is not None:
            self._on_time(self.checks[start:], before, after)

    def _on_time(
        self, checks: list[dict[str, Any]], before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> None:
        """Turn checks whose subject the end of the run still shows become on-time guards."""
        for check in checks:
            env, path = check.get("env"), check.get("path")
            if env is None or path is None:
                continue
            now, then = get_path(self.golden.final[env], path), get_path(after[env], path)
            if check["kind"] == "created_in" and isinstance(now, dict) and isinstance(then, dict):
                old = get_path(before.get(env, {}), path)
                made = [k for k in then if not isinstance(old, dict) or k not in old]
                visible = all(k in now and vr.same(then[k], now[k]) for k in made)
            else:
                visible = vr.same(now, then)
            if visible:
                _guard_on_time(check)

    def _top_level(
        self, env: str, change: dict[str, Any], prefix: str, extra: dict[str, Any], turn: int | None
    ) -> None:
        path = change["path"]
        if _counter(change):
            return
        if change["op"] == "removed":
            self._add(f"{prefix}{env}:{path} deleted", "goal", kind="absent", env=env, path=path, **extra)
            return
        values = self.world.values(env, path, turn)
        expected = self._expected(values)  # a top-level list is pinned whole: no extra members
        if _wild(expected) or (self.world.moves(env, path) and not isinstance(expected, dict)):
            return  # what the clock decides, not the agent
        self._add(
            f"{prefix}{env}:{path} = {_short(expected)}",
            "goal",
            kind="value",
            env=env,
            path=path,
            expected=expected,
            **extra,
        )
        self.goal_paths[env].add(path)

    def _value_goal(
        self,
        env: str,
        path: str,
        change: dict[str, Any],
        prefix: str,
        extra: dict[str, Any],
        turn: int | None,
    ) -> None:
        values = self.world.values(env, path, turn)
        if change["op"] == "removed":
            if all(v is MISSING for v in values):
                self._add(f"{prefix}{env}:{path} deleted", "goal", kind="absent", env=env, path=path, **extra)
            return
        expected = self._expected(values, change.get("before", MISSING))
        if _wild(expected) and (is_time(change["after"]) or _ID_LIKE.match(str(change["after"]))):
            return  # a timestamp or a fresh id: bookkeeping, never what the user asked for
        self._add(
            f"{prefix}{env}:{path} = {_short(expected)}",
            "goal",
            kind="value",
            env=env,
            path=path,
            expected=expected,
            **extra,
        )
        self.goal_paths[env].add(path)

    def _expected(self, values: Sequence[Any], before: Any = MISSING) -> Any:
        """The pattern for a value a goal sets: free text up to spacing, a list of flags or labels
        by what was added and removed (other members may come and go), else :func:`pattern_of`."""
        gold = values[0]
        if (
            _scalar_list(gold)
            and _scalar_list(before)
            and all(_scalar_list(v) for v in values if v is not MISSING)
        ):
            added = [v for v in gold if v not in before]
            removed = [v for v in before if v not in gold]
            same_change = all(
                [x for x in v if x not in before] == added
                and not [x for x in before if x in v and x in removed]
                for v in values
                if v is not MISSING
            )
            if (added or removed) and same_change:
                return {"$members": {"has": added, "lacks": removed}}
        if isinstance(gold, str):
            for text, embedded, param in self.texts:
                if gold == text or (text and text in gold and len(text) > 8):
                    if embedded:
                        return {"$contains": embedded}
                    if gold != text:
                        return pattern_of(values)
                    return {"$says": gold} if param in BODY_PARAMS else {"$text": gold}
        return pattern_of(values)

    def _created(
        self,
        env: str,
        collection: str,
        keys: list[str],
        before: dict[str, Any],
        after: dict[str, Any],
        prefix: str,
        extra: dict[str, Any],
        turn: int | None,
    ) -> None:
        """New records, matched by content (their ids depend on what else was created first)."""
        book = self.world.books[env]
        variants = self.world.variants if turn is None else self.world.variants[:2]
        patterns = []
        for n, key in enumerate(keys):
            record = after[collection][key]
            others = []
            for run in variants:
                states = _states(run, turn).get(env, {})
                old = (run.initial if turn is None else _states_before(run, turn)).get(env, {})
                fresh = [k for k in states.get(collection, {}) if k not in old.get(collection, {})]
                if len(fresh) == len(keys):
                    others.append(states[collection][fresh[n]])
            fields: dict[str, Any] = {}
            for name, value in record.items():
                if name in book.free_fields(collection) and value in (None, "", [], 0, False):
                    continue  # a free field the chain did not fill
                seen = [value] + [o.get(name, MISSING) for o in others]
                expected = self._expected(seen)
                if _wild(expected) or (value == key and name.endswith("id")):
                    continue  # timestamps and the record's own id: bookkeeping
                fields[name] = expected
            patterns.append({"$fields": fields})
        self._add(
            f"{prefix}{env}:/{collection} gains {len(keys)} new {book.entity(collection).noun}",
            "goal",
            kind="created_in",
            env=env,
            path=f"/{escape_token(collection)}",
            expected=patterns,
            **extra,
        )
        self.goal_paths[env].add(f"/{escape_token(collection)}")

    def file_goals(self, requests: Sequence[FileRequest]) -> None:
        """Files the run wrote, moved or deleted; requested files parsed as the user asked."""
        asked = {r.path: r for r in requests}
        for turn in [None, *(range(len(self.golden.turns) - 1))]:
            _, _, before, after = self._window(turn)
            prefix = "" if turn is None else f"turn {turn + 1}: "
            extra = {} if turn is None else {"turn": turn}
            for path in sorted(set(before) | set(after)):
                old, new = before.get(path), after.get(path)
                if old == new:
                    continue
                if path in asked and turn is None:
                    request = asked[path]
                    if not all(self.world.holds(env, where) for env, where in request.sources):
                        continue  # a correct run could hold another value: nothing fair to ask for
                    self._add(
                        f"file {path} holds what was asked",
                        "goal",
                        kind="file",
                        path=path,
                        format=request.format,
                        expected=request.expected,
                        **self._only_ids(request),
                    )
                    continue
                if new is None:
                    self._add(f"{prefix}file {path} deleted", "goal", kind="file_absent", path=path, **extra)
                    if turn is not None and path not in self.golden.files:
                        _guard_on_time(self.checks[-1])
                    continue
                fmt, expected = self._file_expectation(path, new, turn)
                if fmt == "lines" and not expected:
                    continue  # every line moves with the clock: nothing to pin
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
                if turn is not None and self.golden.files.get(path) == new:
                    _guard_on_time(self.checks[-1])  # the end shows it too: asked then, done then

    def _only_ids(self, request: FileRequest) -> dict[str, Any]:
        """For a table or a section that gives record ids: no other id of their shape but those of
        the records the run touched (the judge's shotgun: "RCP-01 RCP-02 RCP-03" scored 1)."""
        if request.format not in ("csv", "markdown"):
            return {}
        asked = [v for v in _asked_values(request) if _ID_LIKE.match(v)]
        prefixes = sorted({v.rstrip("0123456789").lower() for v in asked})  # "RCP-03" -> "rcp-"
        if not prefixes:
            return {}
        touched = {
            key
            for env, final in self.golden.final.items()
            for collection, records in final.items()
            if isinstance(records, dict)
            for key, record in records.items()
            if record != (self.golden.initial.get(env, {}).get(collection) or {}).get(key)
        }
        return {"only_ids": {"prefixes": prefixes, "allowed": sorted({*asked, *touched})}}

    def _file_expectation(self, path: str, content: str, turn: int | None) -> tuple[str, Any]:
        fmt = file_format(path, content)
        runs = self.world.variants if turn is None else self.world.variants[:2]
        others = [(run.files if turn is None else run.turns[turn].files).get(path) for run in runs]
        if all(o == content for o in others):
            return fmt, vr.parse_file(content, fmt)
        if fmt in ("json", "csv", "tsv"):
            try:
                parsed = [
                    vr.parse_file(content, fmt),
                    *(vr.parse_file(o, fmt) for o in others if o is not None),
                ]
            except ValueError:
                parsed = []
            if parsed and fmt == "json":
                return fmt, pattern_of(parsed)
            if parsed and all(len(p["rows"]) == len(parsed[0]["rows"]) for p in parsed):
                rows = [pattern_of([p["rows"][i] for p in parsed]) for i in range(len(parsed[0]["rows"]))]
                return fmt, {"header": parsed[0]["header"], "rows": rows}
        stable = set(vr.parse_file(content, "lines"))
        for other in others:
            stable &= set(vr.parse_file(other, "lines")) if other is not None else set()
        return "lines", [line for line in vr.parse_file(content, "lines") if line in stable and line.strip()]

    # -- guards -----------------------------------------------------------------------------------
    def guards(self, protected: Sequence[Mapping[str, str]]) -> None:
        golden = self.golden
        distractors = {(d["env"], d["path"]) for d in protected if d.get("env") in golden.final}
        for env, path in sorted(distractors):
            if get_path(golden.final[env], path) is MISSING:
                continue
            ignore = self._record_ignore(env, path)
            self._add(
                f"distractor {env}:{path} untouched",
                "guard",
                kind="unchanged",
                env=env,
                path=path,
                **({"ignore": ignore} if ignore else {}),
            )
        for env in sorted(golden.final):
            self._collection_guards(env, {p for e, p in distractors if e == env})
        kept = sorted(
            p
            for p, c in golden.initial_files.items()
            if golden.files.get(p) == c and p not in self.world.exogenous_files
        )
        if kept:
            self._add(
                f"{len(kept)} other workspace files untouched", "guard", kind="files_unchanged", paths=kept
            )

    def _collection_guards(self, env: str, distractors: set[str]) -> None:
        book = self.world.books[env]
        before, after = self.golden.initial[env], self.golden.final[env]
        changed_records: dict[str, set[str]] = {}
        consequences: list[str] = []
        for change in diff(before, after):
            collection, key, rest = _split(change["path"])
            if collection is None or collection not in book.collections or not rest:
                top = collection is None and change["path"] not in self.goal_paths[env]
                if top and not _counter(change) and not self.world.moves(env, change["path"]):
                    consequences.append(change["path"])
                continue
            if key not in before.get(collection, {}):
                continue
            record = f"/{escape_token(collection)}/{escape_token(key)}"
            changed_records.setdefault(record, set()).add(rest)
            named = (env, collection, key) in self.named
            exogenous = _under_any(change["path"], self.world.exogenous.get(env, set()))
            if (
                not named
                and not exogenous
                and not _is_free(book, collection, rest)
                and not _timestamp(change)
            ):
                consequences.append(change["path"])
        for path in consequences:
            values = self.world.values(env, path)
            if all(v is MISSING for v in values):
                continue
            expected = self._expected(values)
            if _wild(expected):
                continue
            self._add(
                f"{env}:{path} = {_short(expected)} (a consequence of the work)",
                "guard",
                kind="matches",
                env=env,
                path=path,
                expected=expected,
            )
        for record, fields in sorted(changed_records.items()):
            ignore = sorted(set(self._record_ignore(env, record)) | fields)
            self._add(
                f"rest of {env}:{record} unchanged",
                "guard",
                kind="unchanged",
                env=env,
                path=record,
                ignore=ignore,
            )
        for key, value in sorted(before.items()):  # other top-level values: left as they were
            if key in book.collections or isinstance(value, int | float | bool) or value is None:
                continue
            path = f"/{escape_token(key)}"
            moved = sorted(
                {p for p in self.world.exogenous.get(env, set()) if p == path or p.startswith(path + "/")}
            )
            changed = (
                sorted({c["path"] for c in diff(value, after.get(key, MISSING))}) if key in after else [""]
            )
            if path in moved or "" in changed or (changed and not isinstance(value, dict)):
                continue
            ignore = sorted({*changed, *(p[len(path) :] for p in moved)})
            self._add(
                f"rest of {env}:{path} unchanged",
                "guard",
                kind="unchanged",
                env=env,
                path=path,
                **({"ignore": ignore} if ignore else {}),
            )
        for collection in book.collections:
            members = before.get(collection)
            if not isinstance(members, dict) or book.is_log(collection):
                continue
            path = f"/{escape_token(collection)}"
            skip = {
                k for k in members if _member(path, k) in changed_records or _member(path, k) in distractors
            }
            keep = [k for k in members if k not in skip]
            if keep:
                spec: dict[str, Any] = {"except": sorted(skip)}
                free = [f"/{escape_token(name)}" for name in book.free_fields(collection)]
                if free:
                    spec["ignore"] = free
                by_key = {k: ig for k in keep if (ig := self._record_ignore(env, _member(path, k)))}
                if by_key:
                    spec["ignore_by_key"] = by_key
                noun = book.entity(collection).noun
                self._add(
                    f"other {noun} records of {env} untouched",
                    "guard",
                    kind="others_unchanged",
                    env=env,
                    path=path,
                    **spec,
                )
            new = max(
                len([k for k in (run.final[env].get(collection) or {}) if k not in members])
                for run in [self.golden, *self.world.variants]
            )  # as many as a correct run may end with (the world may add some while it waits)
            self._add(
                f"{env}:{path} gains at most {new} new",
                "guard",
                kind="no_extra",
                env=env,
                path=path,
                count=new,
            )

    def _record_ignore(self, env: str, record: str) -> list[str]:
        """Fields of a record (relative paths) that move by themselves or that the user leaves free."""
        collection, _, _ = _split(record + "/x")
        book = self.world.books[env]
        fields = {f"/{escape_token(name)}" for name in book.free_fields(collection or "")}
        for path in self.world.exogenous.get(env, set()):
            if path.startswith(record + "/"):
                fields.add(path[len(record) :])
        value = get_path(self.golden.final[env], record)
        for run in self.world.variants:
            moved = get_path(run.final.get(env, {}), record)
            if value is not MISSING and moved is not MISSING:
                fields |= {c["path"] for c in diff(value, moved)}
        return sorted(f for f in fields if f)


def _member(collection_path: str, key: str) -> str:
    return f"{collection_path}/{escape_token(key)}"


# -- helpers -----------------------------------------------------------------------------------------
def _named_records(golden: Outcome, books: Mapping[str, Phrasebook]) -> set[tuple[str, str, str]]:
    """(env, collection, key) of the records the chain's calls name or create."""
    found: set[tuple[str, str, str]] = set()
    for action in golden.actions:
        if action.env not in books or not isinstance(action.args, dict) or "error" in action.result:
            continue
        book = books[action.env]
        for value in _scalars(action.args):
            for state in (golden.initial[action.env], golden.final[action.env]):
                collection = book.collection_of(state, value)
                if collection is not None:
                    found.add((action.env, collection, value))
    for env, book in books.items():
        for collection in book.collections:
            before = golden.initial[env].get(collection) or {}
            for key in golden.final[env].get(collection) or {}:
                if key not in before:
                    found.add((env, collection, key))
    return found


def _free_texts(golden: Outcome) -> list[tuple[str, list[str], str]]:
    """Free text the run passed (``$text`` / ``$says`` checks): (text, the values embedded ones
    must carry, the argument's name)."""
    found = []
    for action in golden.actions:
        if not isinstance(action.args, dict):
            continue
        for name, value in action.args.items():
            if not isinstance(value, str) or " " not in value.strip():
                continue
            source = Source.parse(action.provenance.get(name, "user"))
            embedded: list[str] = []
            if source.kind == "embed":
                embedded = [w for w in value.split() if _ID_LIKE.match(w.strip(":,."))][:1]
                embedded = [w.strip(":,.") for w in embedded]
            found.append((value, embedded, name))
    return found


def _scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    else:
        yield value


def _split(path: str) -> tuple[str | None, str, str]:
    """``/orders/O-1/status`` -> ("orders", "O-1", "/status"); top-level paths -> (None, "", "")."""
    parts = path.split("/")
    if len(parts) < 3:
        return None, "", ""
    rest = "/".join(["", *parts[3:]]) if len(parts) > 3 else ""
    return unescape_token(parts[1]), unescape_token(parts[2]), rest


def _is_free(book: Phrasebook, collection: str, rest: str) -> bool:
    top = rest.split("/")[1] if rest.count("/") >= 1 else ""
    return unescape_token(top) in book.free_fields(collection)


def _timestamp(change: dict[str, Any]) -> bool:
    return is_time(change.get("after")) or is_time(change.get("before"))


def _counter(change: dict[str, Any]) -> bool:
    return change["path"].count("/") == 1 and isinstance(change.get("after"), int | float)


def _states_before(run: Outcome, turn: int) -> dict[str, Any]:
    return run.turns[turn - 1].final if turn > 0 else run.initial


def _under_any(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith(r + "/") or r.startswith(path + "/") for r in roots)


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
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("$"):
        op, arg = next(iter(value.items()))
        return _Kind(f"{op[1:]} {arg!r}")
    if isinstance(value, dict):
        return {k: _display(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_display(v) for v in value]
    return value
