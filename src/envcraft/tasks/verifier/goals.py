"""Goal checks: what the user asked for, on the records the chain acts on and in the workspace.

Every change to a record a call names or creates, with the value asked for (in any form the
correct variant runs show); every workspace file the run writes, moves or deletes; a file the
user asked for, parsed (JSON keys, CSV rows, Markdown sections). A goal must change relative to
S0 (or to the turn before), so a do-nothing run fails every one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.state import MISSING, diff, get_path, objects_in
from envcraft.sandbox.profiles import SYSTEM_TOOLS
from envcraft.tasks.phrasing.phrasebook import Phrasebook, humanize, is_time
from envcraft.tasks.play.execute import closing_reads
from envcraft.tasks.play.outcome import Action
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import (
    BODY_PARAMS,
    CHOICE,
    ID_LIKE,
    ID_SHAPE,
    ISO_DAY,
    NAME_LIMIT,
    CheckList,
    FileRequest,
    acts_itself,
    acts_on,
    affirmed,
    asked_values,
    carried_context,
    columns_free,
    counters_free,
    desk_acts,
    entries_held,
    file_format,
    guard_on_time,
    holds_option,
    id_shaped,
    is_counter,
    optional_fields,
    options_free,
    pattern_of,
    route_ends,
    said_numbers,
    scalars,
    sent_records,
    short,
    split_path,
    states_at,
    under_any,
    wild,
    window,
    word_forms,
    written_words,
)

SUCCEEDED = frozenset({"succeeded", "success", "successful", "successfully"})  # a result's "ok" said back
_SHORT = 40  # characters of a result's text whose words a report may say back
# the words of an empty text field's name say nothing happened: "reason" of an empty
# decline_reason is no claim the trip was declined ("decline" is)
# a record's id: "SO-20375", "WH-ATL", a host's "notify-a1" (round 42, R2: 0.923)
_CODE = re.compile(r"^[A-Za-z]+[-_]?\d+$|^[A-Z]+[-_][A-Z0-9]+$|^(?=.*\d)[a-z]+(?:-[a-z0-9]+)+$")
REMARKS = frozenset({"reason", "reasons", "comment", "comments", "note", "notes", "remark", "description"})


class GoalChecks(CheckList):
    """The goal half of the verifier's checks (see the module docstring)."""

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
                collection, key, rest = split_path(path)
                if collection is None or collection not in book.collections:
                    self._top_level(env, change, prefix, extra, turn)  # not a record: the value itself
                    continue
                if not rest:  # a whole record added or removed
                    if change["op"] == "added" and not under_any(path, self.world.exogenous.get(env, set())):
                        created.setdefault(collection, []).append(key)  # (not one the world adds itself)
                    elif change["op"] == "removed" and (env, collection, key) in self.named:
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
                if (env, collection, key) not in self.named | self.keyed:
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
                guard_on_time(check)

    def _top_level(
        self, env: str, change: dict[str, Any], prefix: str, extra: dict[str, Any], turn: int | None
    ) -> None:
        path = change["path"]
        if is_counter(change):
            return
        if change["op"] == "removed":
            self._add(f"{prefix}{env}:{path} deleted", "goal", kind="absent", env=env, path=path, **extra)
            return
        values = self.world.values(env, path, turn)
        expected = self.expected(values)  # a top-level list is pinned whole: no extra members
        if wild(expected) or (self.world.moves(env, path) and not isinstance(expected, dict)):
            return  # what the clock decides, not the agent
        self._value(env, path, expected, prefix, extra)

    def _value(self, env: str, path: str, expected: Any, prefix: str, extra: dict[str, Any]) -> None:
        """A goal: ``path`` set to ``expected`` (and so changed from the window's start)."""
        self._add(
            f"{prefix}{env}:{path} = {short(expected)}",
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
        if self.numbered_change(env, change):
            return  # a counter or a number the world assigns moves with how the work was done
        if self._looked_only(env, path, change):
            return  # looking marked it (a message read gains "seen"): no step asks for that
        if self._uninspected(env, path, change):
            return  # left for an inspection to fill (a sheet registered again: no profile yet)
        values = self.world.values(env, path, turn) + (self._settling(env, path) if turn is None else [])
        if change["op"] == "removed":
            if all(v is MISSING for v in values):
                self._add(f"{prefix}{env}:{path} deleted", "goal", kind="absent", env=env, path=path, **extra)
            return
        expected = self._unlooked(env, path, self.expected(values, change.get("before", MISSING), path))
        unpassed = self._unpassed_options(env, turn)
        expected = options_free(expected, unpassed)
        if expected == "" and holds_option(path.rsplit("/", 1)[-1], unpassed):
            # the option itself changed in place (a rule moved up a list into another's slot):
            # nobody named it, so the agent's pick stands (a dedupe rule given "last"; round 64,
            # R1: 0.996)
            expected = {"$any": "str"}
        if wild(expected) and (is_time(change["after"]) or ID_LIKE.match(str(change["after"]))):
            return  # a timestamp or a fresh id: bookkeeping, never what the user asked for
        self._value(env, path, expected, prefix, extra)

    def _unasked(self, value: Any) -> bool:
        """Whether a free field's value is none the chain filled: empty, or not what the user said."""
        return value in (None, "", [], 0, False) or not set(map(str, scalars(value))) <= self.asked

    def _items_unfree(self, book: Phrasebook, collection: str, name: str, value: Any) -> Any:
        """A list field's items without the free fields of each (``LIST/*/FIELD`` of the
        collection's ``free``) that the chain did not fill: a note on a journal line is the
        agent's to write or leave (round 53, R3: "Shelf check: 2 boxes damaged" scored 0.333)."""
        inner = [f.split("/*/", 1)[1] for f in book.free_fields(collection) if f.startswith(f"{name}/*/")]
        if not inner or not isinstance(value, list):
            return value
        return [
            {k: v for k, v in item.items() if k not in inner or not self._unasked(v)}
            if isinstance(item, dict)
            else item
            for item in value
        ]

    def _settling(self, env: str, path: str) -> list[Any]:
        """The states a status the run set passes through by the clock alone: its values at the
        ends of the golden turns from the last one whose calls named its record (a host drained
        in turn 3 is "draining" then, "maintenance" by the end). A correct run that makes fewer
        calls after the act ends earlier on that path, and the end may show any of them (two
        right runs of round 38, P2: 0.889). Nothing where a later call names the record, or the
        field holds more than a choice word."""
        _, key, _ = split_path(path)
        named = [
            action.turn
            for action in self.golden.actions
            if action.env == env
            and "error" not in action.result
            and key in {str(v) for v in scalars(action.args)}
        ]
        if not named or max(named) >= len(self.golden.turns) - 1:
            return []
        seen = [
            get_path(states_at(self.golden, t).get(env, {}), path)
            for t in range(max(named), len(self.golden.turns))
        ]
        return seen if all(isinstance(v, str) and CHOICE.fullmatch(v) for v in seen) else []

    def _looked_only(self, env: str, path: str, change: dict[str, Any]) -> bool:
        """Whether the change only adds members looking at the record adds (:func:`looking_changes`).
        Looking is done by read-only tools, which no user turn asks for (they declare no goal), so
        such a change is how the reference happened to look (``read_message``, where ``cat`` of
        the message file marks nothing), never the work; a change of the same field by a write
        (a flag set with the mark) is more than that and stays a goal."""
        before, after = change.get("before"), change.get("after")
        if not isinstance(before, list) or not isinstance(after, list) or any(m not in after for m in before):
            return False
        collection, _, rest = split_path(path)
        marks = self.world.looked.get(env, {}).get(collection or "", {}).get(rest) or []
        added = [m for m in after if m not in before]
        return bool(added) and all(m in marks for m in added)

    def _unlooked(self, env: str, path: str, expected: Any) -> Any:
        """A list goal without the members looking at the record adds (a message read gains
        "seen", :func:`looking_changes`): the reference read it, the user asked for the flag; an
        agent that flags it unread did the work. Unless that is all the change (then it is no
        goal at all: :meth:`_looked_only`)."""
        members = expected.get("$members") if isinstance(expected, dict) and len(expected) == 1 else None
        if not isinstance(members, dict):
            return expected
        collection, _, rest = split_path(path)
        marks = self.world.looked.get(env, {}).get(collection or "", {}).get(rest) or []
        if "within" in members:  # an agent that looks at the record may leave its marks
            members = {
                **members,
                "within": [*members["within"], *(m for m in marks if m not in members["within"])],
            }
        has = [m for m in members.get("has", []) if m not in marks]
        if has == members.get("has", []) or not (has or members.get("lacks")):
            return {"$members": members}
        return {"$members": {**members, "has": has}}

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
        unpassed = self._unpassed_options(env, turn)
        # a field naming a record of S0 says which one (the class booked): never bookkeeping
        initial = self.golden.initial.get(env, {})
        existing = {k for members in initial.values() if isinstance(members, dict) for k in members}
        patterns = []
        for n, key in enumerate(keys):
            record = after[collection][key]
            others = []
            for run in self.world.runs(turn)[1:]:
                start, end, _, _ = window(run, turn)
                states, old = end.get(env, {}), start.get(env, {})
                fresh = [k for k in states.get(collection, {}) if k not in old.get(collection, {})]
                if len(fresh) == len(keys):
                    others.append(states[collection][fresh[n]])
            fields: dict[str, Any] = {}
            acted = self._acted_on(env, key, turn)
            for name, value in record.items():
                if name in book.free_fields(collection) and self._unasked(value):
                    marked = self._marked(env, collection, name, [value] + [o.get(name) for o in others])
                    if acted and marked:  # a later asked call set it: a flag put on the new message
                        fields[name] = {"$members": {"has": marked, "lacks": []}}
                    continue  # a free field the chain did not fill, or the tool filled (how it was made)
                if holds_option(name, unpassed) and value in ("", None):
                    # an optional argument's empty default: nobody asked for it either way, but a
                    # link names a record the turn is about, or none (round 58, R3: a to-do
                    # linked to an unrelated message paid 1.0)
                    if name.endswith("_id"):
                        fields[name] = {"$one_of": ["", *self._linkable(env, key)]}
                    continue
                seen = [
                    self._items_unfree(book, collection, name, v)
                    for v in [value] + [o.get(name, MISSING) for o in others]
                ]
                # an option nobody named is the agent's inside the record too: a recipe's rules
                # (a dedupe rule given "first"; round 59, R3: 0.41)
                expected = options_free(self.expected(seen), unpassed)
                if (
                    name in unpassed
                    and name in BODY_PARAMS
                    and isinstance(expected, str)
                    and vr.words(expected)
                ):
                    # the env's own text where the call left its note out (a forward's quote): a
                    # courtesy the agent puts in front is no claim ("FYI, see below.")
                    maker = next((a for a in self.golden.actions if key in scalars(a.result)), None)
                    told = self._note_words(maker, [key]) if maker is not None else []
                    quoted = self._quoted_words(maker) - set(told) if maker is not None else set()
                    framing = sorted(vr.COURTESY_LINES | set(told))
                    spec = {"says": expected, "carries": [], "framing": framing}
                    expected = {"$composed": {**spec, "quoted": sorted(quoted)} if quoted else spec}
                if (
                    wild(expected)
                    or (value == key and name.endswith("id"))
                    or (self.numbered(env, name, value) and value not in existing | self.created)
                ):
                    continue  # timestamps, the record's own id, what the world numbers: bookkeeping
                # ... but a record the run made says which one it is for (the first class of the new
                # series, whatever id it gets: renamed), never any class (round 30: a booking into
                # an old class beside a new series paid 1.0)
                fields[name] = expected
            patterns.append({"$fields": fields})
        noun = book.entity(collection).noun
        voided = self.world.voiding(env)
        said = sorted({name for p in patterns for name, value in p["$fields"].items() if dictated(value)})
        identity = [{"$fields": {k: v for k, v in p["$fields"].items() if k not in said}} for p in patterns]
        self.made[(env, f"/{escape_token(collection)}", turn)] = identity
        self._add(
            f"{prefix}{env}:/{collection} gains {len(keys)} new {noun}",
            "goal",
            kind="created_in",
            env=env,
            path=f"/{escape_token(collection)}",
            expected=identity,
            **voided,
            **extra,
        )
        for name in said:  # the words the user dictated for it: a goal of their own (a title),
            # on the record it was dictated for (the email's words, not the text message's)
            texts = [
                {"$fields": {**mine["$fields"], name: p["$fields"][name]}}
                for p, mine in zip(patterns, identity, strict=True)
                if name in p["$fields"]
            ]
            self._add(
                f"{prefix}{env}:/{collection} gains {len(texts)} new {noun} with the {humanize(name)} "
                + short(texts[0]["$fields"][name]),
                "goal",
                kind="created_in",
                env=env,
                path=f"/{escape_token(collection)}",
                expected=texts,
                **voided,
                **extra,
            )
        self.goal_paths[env].add(f"/{escape_token(collection)}")

    def _acted_on(self, env: str, key: str, turn: int | None) -> bool:
        """Whether a call of the window after the one that made record ``key`` names it (a flag
        put on the message just drafted): what it set in a free field is asked work."""
        made = False
        for action in self.golden.actions:
            if action.env != env or "error" in action.result or (turn is not None and action.turn != turn):
                continue
            if made and key in scalars(action.args):
                return True
            made = made or key in scalars(action.result)
        return False

    def _marked(self, env: str, collection: str, name: str, seen: list[Any]) -> list[Any]:
        """The members every run's list field holds, less the marks looking at a record adds."""
        if not all(isinstance(v, list) for v in seen):
            return []
        marks = self.world.looked.get(env, {}).get(collection, {}).get(name) or []
        return [m for m in seen[0] if m not in marks and all(m in v for v in seen[1:])]

    def _linkable(self, env: str, key: str) -> list[str]:
        """The records a new record may be linked to where the reference linked none: those the
        calls of the turn that made it name or make (a to-do linked to the message the turn
        forwards: round 48, R1), never another one (what a listing returned is no such record)."""
        maker = next((a for a in self.golden.actions if a.env == env and key in scalars(a.result)), None)
        if maker is None:
            return []
        final = self.golden.final.get(env, {})
        book = self.world.books[env]
        named = {
            v
            for a in self.golden.actions
            if a.env == env and a.turn == maker.turn and "error" not in a.result
            for v in [*scalars(a.args), *(v for v in scalars(a.result) if v in self.created)]
            if isinstance(v, str) and v != key and book.collection_of(final, v) is not None
        }
        return sorted(named)

    def _unpassed_options(self, env: str, turn: int | None, through: bool = False) -> set[str]:
        """The optional text arguments (empty by default) that a call of the window's reference
        left out: the user never named them (see :func:`envcraft.tasks.verifier.checks.empty_options`).
        ``through``: of the turns up to the window's too, as a file the env keeps shows what every
        turn before it did (a rule turn 1 added, in turn 2's lineage; round 44, R2: 0.889)."""
        options = self.world.options.get(env, {})
        found: set[str] = set()
        for action in self.golden.actions:
            if action.env == env and (
                turn is None or action.turn == turn or (through and action.turn < turn)
            ):
                passed = set(action.args) if isinstance(action.args, dict) else set()
                found |= options.get(action.tool, set()) - passed
        return found

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
                        **_read_back(request),
                        **(
                            # (a table of items and values tells an object: its rows are keys)
                            {"extra_keys": "facts", "verbs": self._verbs(), **self._held_by(request)}
                            if request.format == "json"
                            or (request.format == "csv" and len(request.expected.get("header", ())) == 2)
                            else {}
                        ),
                        **self._section_framing(request),
                    )
                    continue
                rendered = path not in self.agent_files
                like = id_shaped(path, self.created) if rendered else path
                where = {"path_like": like} if isinstance(like, dict) else {}  # a path the env numbers
                if new is None:
                    self._add(
                        f"{prefix}file {path} deleted",
                        "goal",
                        kind="file_absent",
                        path=path,
                        **where,
                        **extra,
                    )
                    if turn is not None and path not in self.golden.files:
                        guard_on_time(self.checks[-1])
                    continue
                fmt, expected = self._file_expectation(path, new, turn)
                expected = self.file_pattern(fmt, expected)
                if rendered:
                    if fmt == "lines":
                        expected = [self._record_line(line) for line in expected]
                    expected = self.ids_free(expected)  # the env's own lines name what it numbered
                    unpassed = set().union(
                        *(self._unpassed_options(env, turn, through=True) for env in self.golden.final)
                    )
                    if fmt == "json":
                        expected = entries_held(counters_free(options_free(expected, unpassed)))
                    if fmt in ("csv", "tsv"):
                        expected = columns_free(expected, unpassed)
                    expected = optional_fields(expected, unpassed)
                if fmt == "lines" and not expected:
                    continue  # every line moves with the clock: nothing to pin
                label = "written" if old is None else "updated"
                note = self._free_note(path, turn) if rendered and fmt == "lines" else None
                count = (
                    self._line_count(path, new, turn, expected) if fmt == "lines" and note is None else None
                )
                later = self._later_lines(path, new, turn) if fmt == "lines" else []
                timed = fmt == "lines" and (old is not None or rendered) and _adds_dated_lines(old or "", new)
                until = self._dated_until(path, turn, old or "") if timed else None
                known = self._known_lines(path, turn) if fmt == "lines" and count is None else None
                logs = self._by_products() if fmt == "lines" and rendered else []
                self._add(
                    f"{prefix}file {path} {label}",
                    "goal",
                    kind="file",
                    path=path,
                    format=fmt,
                    expected=expected,
                    **where,
                    **({"line_count": count} if count is not None else {}),
                    **({"known_lines": known} if known is not None else {}),
                    **({"free_note": note} if note is not None else {}),
                    **({"later_lines": later} if later else {}),
                    **({"chronological": True} if timed else {}),
                    **({"dated_until": until} if until else {}),
                    **({"by_products": logs} if logs else {}),
                    **extra,
                )
                if turn is not None and self.golden.files.get(path) == new:
                    guard_on_time(self.checks[-1])  # the end shows it too: asked then, done then

    def _by_products(self) -> list[list[Any]]:
        """The log collections (``Entity(log=True)``: health checks): a line an environment writes
        into a file about a record made there (a health check's entry in the incident's timeline)
        is a by-product of looking, as the record itself is (runtime ``without_by_products``).
        Where the correct run made such records, their number comes third: that many of the
        file's lines about them are the asked ones, and a second health check's line is one
        more by-product (round 28, FC: 0.8 for two health checks where one was asked)."""
        found: list[list[Any]] = []
        for env, final in sorted(self.golden.final.items()):
            book = self.world.books.get(env)
            if book is None:
                continue
            initial = self.golden.initial.get(env, {})
            for collection in book.collections:
                made = set(final.get(collection) or {}) - set(initial.get(collection) or {})
                if book.is_log(collection):
                    found.append([env, collection, len(made)] if made else [env, collection])
        return found

    def _free_note(self, path: str, turn: int | None) -> list[str] | dict[str, list[str]] | None:
        """The words a note of the agent's own may use in a file the environment renders for a
        record made by a call that left out an optional text (a forward's ``body``, which the
        user never dictated; :meth:`_note_words`). None when no such call made the file's record."""
        for action in self.golden.actions:
            if (turn is not None and action.turn > turn) or "error" in action.result:
                continue
            passed = set(action.args) if isinstance(action.args, dict) else set()
            if not self.world.options.get(action.env, {}).get(action.tool, set()) - passed:
                continue
            made = [
                v for v in scalars(action.result) if isinstance(v, str) and ID_LIKE.match(v) and v in path
            ]
            if made:
                told, quoted = self._note_words(action, made), self._quoted_words(action)
                return {"words": told, "quoted": sorted(quoted - set(told))} if quoted - set(told) else told
        return None

    def _note_words(self, action: Action, made: list[str], quoting: bool = True) -> list[str]:
        """What a note nobody dictated may say on the records ``made`` by ``action`` (the
        runtime's ``noted``; a forward's cover line): what the world and the user say of them and
        the acts on them, and what the records the call names say in their short texts ("FYI,
        forwarding the escalation contact for this month"; never a forwarded mail's body, whose
        words are no fact of the run: "Payment confirmation sent to Cascade Freight Billing."
        from the phishing mail forwarded paid 1.0, round 45, R2)."""
        book = self.world.books.get(action.env)
        found = set(carried_context(self.golden, book, made)) | self.world.said
        found |= {w for v in made for w in acts_on(self.golden, v)}
        found |= {w for v in self._named_texts(action) if len(v) <= NAME_LIMIT for w in affirmed(v)}
        found |= {w for line in self._noted_lines(action) for w in affirmed(line)}
        if quoting:  # ... and what a note may say on a record the run made that it names (a
            # forward of the forward quotes its cover note; round 51, R3: 0.889)
            for maker, value in self._makers(action):
                found |= set(self._note_words(maker, [value], quoting=False))
        return sorted(found - vr.NEGATIONS - vr.RETRACTIONS)

    def _makers(self, action: Action) -> list[tuple[Action, str]]:
        """The earlier calls that made a record ``action`` names, each with that record's id."""
        earlier = self.golden.actions[: self.golden.actions.index(action)]
        book = self.world.books.get(action.env)
        state = self.golden.initial.get(action.env, {})
        found: list[tuple[Action, str]] = []
        for value in (v for v in scalars(action.args) if isinstance(v, str) and ID_LIKE.match(v)):
            if book is None or book.collection_of(state, value) is not None:
                continue  # a record of S0
            maker = next((a for a in earlier if a.env == action.env and value in scalars(a.result)), None)
            if maker is not None:
                found.append((maker, value))
        return found

    def _noted_lines(self, action: Action) -> list[str]:
        """The lines of the workspace's own notes (S0 files) that name a record ``action`` names
        and no other: what the desk says of it, which a cover note may repeat ("Needs action
        today, per the shift handoff" of a message the handoff says "needs action today" of;
        round 51, R3: 0.778)."""
        named = {v for v in scalars(action.args) if isinstance(v, str) and ID_LIKE.match(v)}
        return [
            line
            for content in self.golden.initial_files.values()
            for line in content.splitlines()
            if len(line) <= 4 * NAME_LIMIT and (ids := set(ID_SHAPE.findall(line))) and ids <= named
        ]

    def _quoted_words(self, action: Action) -> set[str]:
        """The words of the long texts of the records ``action`` names (a forwarded mail's
        body): what a cover note may tell it forwards, in a sentence that says so (the
        runtime's ``_quoting``), never as its own words."""
        found = {w for v in self._named_texts(action) if len(v) > NAME_LIMIT for w in affirmed(v)}
        return found - vr.NEGATIONS - vr.RETRACTIONS - vr.SENDING

    def _named_texts(self, action: Action) -> list[str]:
        """The texts of the records ``action``'s arguments name, as S0 held them."""
        book = self.world.books.get(action.env)
        state = self.golden.initial.get(action.env, {})
        texts: list[str] = []
        for value in scalars(action.args):
            collection = book.collection_of(state, value) if book is not None else None
            if collection is not None:
                texts += [v for v in scalars(state[collection][value]) if isinstance(v, str)]
        return texts

    def _record_line(self, line: Any) -> Any:
        """A line the environment renders as a record of a collection with free fields (a dead
        letter's JSON line, its ``note``) read by its other fields (``$json`` of ``$fields``):
        the free fields are the agent's words, in the line as in the record; ``line`` as it was
        for any other line."""
        parsed = line["$json"] if isinstance(line, dict) and set(line) == {"$json"} else line
        if isinstance(parsed, str):
            try:
                parsed = json.loads(parsed) if parsed.startswith("{") else None
            except ValueError:
                parsed = None
        if not isinstance(parsed, dict):
            return line
        free = {
            name
            for env, book in self.world.books.items()
            for value in parsed.values()
            if (collection := book.collection_of(self.golden.final.get(env, {}), value)) is not None
            for name in book.free_fields(collection)
        }
        if not free & set(parsed):
            return line
        return {"$json": self.ids_free({"$fields": {k: v for k, v in parsed.items() if k not in free}})}

    def _later_lines(self, path: str, content: str, turn: int | None) -> list[str]:
        """The lines a later turn adds to this file, in every correct run: at the end of ``turn``
        they must not be there yet (a later turn's note written early)."""
        if turn is None:
            return []
        now = set(vr.parse_file(content, "lines"))
        later: set[str] | None = None
        for run in [self.golden, *self.world.variants]:
            final = run.files.get(path)
            lines = set(vr.parse_file(final, "lines")) if final is not None else set()
            later = lines if later is None else later & lines
        return sorted(line for line in (later or set()) - now if any(ch.isalnum() for ch in line))

    def _line_count(self, path: str, content: str, turn: int | None, expected: Any) -> int | None:
        """The number of non-blank lines every correct run's file has, if they agree: no line
        added, none repeated. For a file the agent writes itself, and for one the environment
        renders from records (an incident's timeline: a note appended to it by an unasked call
        is a line too many) unless it holds text the user dictated as a message (a mail's body
        may carry the greeting a user would accept on lines of its own)."""
        if path not in self.agent_files and dictated_message(expected):
            return None
        texts = [content, *(window(run, turn)[3].get(path) for run in self.world.runs(turn)[1:])]
        counts = {len(vr.counted_lines(t)) for t in texts if t is not None}
        return counts.pop() if len(counts) == 1 else None

    def _verbs(self) -> list[str]:
        """The acts of the task's environments (``World.acts``: ``book`` of ``book_series``), which
        an extra key of an asked JSON object may not claim of what it holds unless the run's act
        did it (the runtime's ``object_matches``)."""
        return sorted(self.world.acts)

    def _held_by(self, request: FileRequest) -> dict[str, Any]:
        """The records the asked values are fields of (``held_by``: ``[env, path]``, a booking of
        "the status of that booking afterwards"): an extra key may repeat what they say too
        (round 24: ``"session_id"`` beside a booking's asked status scored 0.67)."""
        found = [
            [env, "/".join(where.split("/")[:3])]
            for env, where in request.sources
            if len(where.split("/")) > 3
        ]
        return {"held_by": found} if found else {}

    def _days_of(self, env: str, key: str, record: Any) -> set[str]:
        """The days (ISO times and dates, lower-cased) a record and the records it names hold, as
        the run left them, and those the calls that name it were told (a message's "sent" time):
        what a report may date it by ("BKG-50066 (January 10)" of a booking into a class on
        2026-01-10), and no other day (the runtime's ``wrong_dates``)."""
        final = self.golden.final.get(env, {})
        tables = [t for t in final.values() if isinstance(t, dict)]
        named = [t[v] for v in scalars(record) if isinstance(v, str) for t in tables if v in t]
        told = [a.result for a in self.golden.actions if a.env == env and key in map(str, scalars(a.result))]
        held = [v for r in [record, *named, *told] for v in scalars(r) if isinstance(v, str)]
        return {v.lower() for v in held if ISO_DAY.match(v)}

    def _section_framing(self, request: FileRequest) -> dict[str, Any]:
        """For a Markdown section: the words it may hold beside the asked values (the runtime's
        ``section_fault``): the section's name, the fields asked for and the names of the text
        and number fields of their records with the numbers they hold (labels: "Owner: Farah",
        "offset 7"; a flag's name alone is a claim: "DS-009 validated"), and what the world says
        about the records the values come from (:func:`carried_context`: "RET-0042, the return of
        ORD-5 for Maria Novak"). Anything else is a claim nobody made."""
        if request.format != "markdown":
            return {}
        found = {w for name in request.expected for w in vr.words(name)}
        found |= {w for value in asked_values(request) for w in acts_on(self.golden, value)}
        found |= desk_acts(self.golden, self.world.books)
        found |= self._asked_verbs(request)
        reported, numbers = self._reported(request)  # a whole-number field's label -> what it held
        # what the environments the values come from call the records the work added: "aggregated
        # 15 events" (never a kind it made none of: "duplicate" of a dead letter it made)
        found |= {
            w
            for env, _ in request.sources
            if (book := self.world.books.get(env)) is not None
            for collection in book.collections
            if set(self.golden.final.get(env, {}).get(collection) or ())
            - set(self.golden.initial.get(env, {}).get(collection) or ())
            for w in vr.words(book.entity(collection).noun)
        }
        now = {label: set(held) for label, held in numbers.items()}  # ... and holds (or a call told)
        found |= reported
        unheld: set[str] = set()  # the words of the fields that hold nothing: what did not happen
        for (env, where), _ in zip(request.sources, asked_values(request), strict=False):
            parts = where.split("/")
            record = get_path(self.golden.final.get(env, {}), "/".join(parts[:3]))
            labels = [parts[3]] if len(parts) > 3 else []
            if len(parts) > 2:  # the record's own key, as the environment names it: "payments/p0"
                key = unescape_token(parts[2])
                found.update(w for part in [key, *key.split("/")] for w in vr.words(part))
            if isinstance(record, dict):  # a label with its value, never a flag's name alone
                # nor the name of a field that holds nothing: "cancelled" of an empty cancelled_by
                # says the trip was cancelled (round 22: "TRP-40501 (status: cancelled)" paid 1.0)
                fields = {k: v for k, v in record.items() if isinstance(v, str | int | float) and v != ""}
                labels += [k for k, v in fields.items() if not isinstance(v, bool)]
                unheld |= {w for k, v in record.items() if v in ("", None) for w in vr.words(humanize(k))}
                then = get_path(self.golden.initial.get(env, {}), "/".join(parts[:3]))
                for k, v in fields.items():
                    if type(v) is int:
                        said = said_numbers(k, v)
                        found.update(said)
                        was = then.get(k) if isinstance(then, dict) else None
                        label = " ".join(vr.words(humanize(k)))
                        numbers.setdefault(label, set()).update(
                            said, said_numbers(k, was) if type(was) is int else ()
                        )
                        now.setdefault(label, set()).update(said)
                record_path = "/".join(parts[:3])
                found |= self._held_between(env, record_path, numbers)
                found |= self._viewed(env, record, numbers, now)
            found.update(w for label in labels for w in vr.words(humanize(label)))
            if len(parts) > 2:
                found |= self._days_of(env, unescape_token(parts[2]), record)
        for label, was, held in self._changed_numbers():  # "on-hand at Atlanta is now 60" of 60 -> 51
            numbers.setdefault(label, set()).update(was, held)
            now.setdefault(label, set()).update(held)
        _, _, before_files, after_files = self._window(None)
        found |= {  # the files the environment keeps its records in: "TODO-01, added to todo.md"
            path
            for path in set(before_files) | set(after_files)
            if path not in self.agent_files and before_files.get(path) != after_files.get(path)
        }
        context = self._asked_context(request)
        drafted = sorted(vr.SENDING - found) if "draft" in context else []  # a draft went nowhere
        # and where the run sent nothing at all, nobody was told anything: "Omar has been
        # notified" beside a cycle count only started is a claim (round 27, ED: 1.0)
        claims = drafted or (sorted(vr.SENDING - found) if not self._sent_anything() else [])
        # a field that holds nothing says what did not happen: "started" of a trip whose
        # started_at is empty is a claim, whatever a report's words may otherwise be (round 22:
        # "TRP-40501, matched and started at pickup" paid 1.0 for a trip only proposed), the
        # user's own words included ("Thanks, this is confirmed." dictated elsewhere in the task
        # makes no "TRP-40501 confirmed")
        untrue = unheld - found - context - vr.MENTION - vr.POLITE - vr.REPORTING - REMARKS
        found |= self.world.said - set(claims)  # the user's words: "the urgent item of exports/worklist.csv"
        told = section_labels(asked_values(request), request.labels)
        changed = self._changed_records()
        about = self._touched_context(changed)
        acts = {v.lower(): acts_on(self.golden, v) for v in asked_values(request)}
        sent = None if drafted else sent_records({**{k: set(v) for k, v in about.items()}, **acts})
        about = {**self._touched_context(self._named_records(set(changed))), **about}
        route: dict[str, list[str]] = {}
        for (env, _), value in zip(request.sources, asked_values(request), strict=False):
            for side, ends in route_ends(self.golden, self.world.books.get(env), [str(value)]).items():
                route[side] = sorted({*route.get(side, []), *ends})
        before = {
            k: sorted(v - now.get(k, set())) for k, v in sorted(numbers.items()) if v - now.get(k, set())
        }
        levels = {name: self.world.headings[name] for name in request.expected if name in self.world.headings}
        return {
            **({"levels": levels} if levels else {}),
            "framing": sorted(found | context),
            **({"route": route} if route else {}),
            **({"claims": sorted({*claims, *untrue})} if claims or untrue else {}),
            **({"sent": sent} if sent is not None else {}),
            **({"labels": told} if told else {}),
            **(
                {"states": states, "kinds": self._kinds(states, request)}
                if (states := self._other_states(request))
                else {}
            ),
            **({"acts": verbs} if (verbs := self._desk_verbs()) else {}),
            **({"foreign": foreign} if (foreign := self._foreign_words(request, about, changed)) else {}),
            **({"about": about} if about else {}),
            **({"numbers": {k: sorted(v) for k, v in sorted(numbers.items())}} if numbers else {}),
            **({"numbers_before": before} if before else {}),
        }

    def _held_between(self, env: str, path: str, numbers: dict[str, set[str]]) -> set[str]:
        """What the record at ``path`` held at the end of each turn of the golden run, which a
        report may tell as what it went through: its whole numbers join ``numbers`` as held
        before ("rewound from 27" of an offset committed at 27 in turn 1 and sought back to 4 in
        turn 3), which a line may give only as what was (the runtime's ``section_fault``), and a
        list that held nothing is ``empty`` ("RCP-03, empty at first, now 2 rules"; round 55,
        R4: 0.909)."""
        found: set[str] = set()
        for snapshot in self.golden.turns:
            then = get_path(snapshot.final.get(env, {}), path)
            if not isinstance(then, dict):
                continue
            for key, value in then.items():
                if type(value) is int:
                    said = said_numbers(key, value)
                    numbers.setdefault(" ".join(vr.words(humanize(key))), set()).update(said)
                elif isinstance(value, list | dict) and not value:
                    found.add("empty")
        return found

    def _viewed(
        self, env: str, record: dict[str, Any], numbers: dict[str, set[str]], now: dict[str, set[str]]
    ) -> set[str]:
        """What the lookups an agent may make before it reports (:func:`closing_reads`) show of
        ``record`` beyond its own fields, which a report may say back: a row of their answers
        that agrees with the record on every field both have (two at least, a text among them)
        is the record as that tool shows it, and the names of its other fields, their short
        texts and their whole numbers (by label, into ``numbers`` and ``now``) are true of it
        ("committed 4 (log end 53, lag 49)" of list_partitions' row; round 55, R1: 0.889). A
        flag's name alone stays a claim."""
        found: set[str] = set()
        for action in closing_reads(self.golden):
            if action.env != env:
                continue
            for row in objects_in(action.result):
                shared = [k for k in row if k in record and isinstance(record[k], str | int | float | bool)]
                texts = [k for k in shared if isinstance(record[k], str) and record[k]]
                if len(shared) < 2 or not texts or any(not vr.same(row[k], record[k]) for k in shared):
                    continue
                for key, value in row.items():
                    if key in record:
                        continue
                    label = vr.words(humanize(str(key)))
                    if type(value) is int:
                        said = said_numbers(str(key), value)
                        numbers.setdefault(" ".join(label), set()).update(said)
                        now.setdefault(" ".join(label), set()).update(said)
                        found.update([*label, *said])
                    elif isinstance(value, str) and len(value) <= _SHORT:
                        found.update([*label, *vr.words(value)])
        return found - vr.NEGATIONS - vr.RETRACTIONS

    def _sent_anything(self) -> bool:
        """Whether a call of the golden run that went through sends, notifies or tells someone
        (its tool's verb, or its forms, is a sending word: ``send_draft``, ``notify_traveler``;
        never ``read_message``)."""
        return any(
            {verb, *word_forms(verb)} & vr.SENDING
            for action in self.golden.actions
            if "error" not in action.result
            for verb in vr.words(humanize(action.tool))[:1]
        )

    def _reported(self, request: FileRequest) -> tuple[set[str], dict[str, set[str]]]:
        """What the world answered a call that reported an asked value under its field's name
        (process_batch's ``"position": 23``, ``"halted_at": {"verdict": "duplicate"}``,
        ``"sink_write": "ok"``) or that holds an asked record's id (start_cycle_count's
        ``"count_id": "CC-0002"``, ``"frozen"``), told to the agent about that record, so a report
        may say it back (round 25, CA: "halted at the first duplicate", "sink write succeeded"
        scored 0.75): the words of its fields' names and short texts, and per name of a whole-number
        field, or of a field holding one ("halted_at": {"offset": 23}), what it held
        (``numbers``: "consumed 5" of a batch that consumed 2, or "halted at 21", is untrue). A
        field nested in another ("offset" of ``halted_at``) lends no name: beside a number it
        would label other records' offsets too, so nothing could check it. Never a negation or a
        retraction."""
        pairs = list(zip(request.sources, asked_values(request), strict=False))
        fields = {where.split("/")[3]: str(value) for (_, where), value in pairs if len(where.split("/")) > 3}
        keys = {str(value) for (_, where), value in pairs if len(where.split("/")) == 3}  # a record's id
        envs = {env for (env, _), _ in pairs}
        found: set[str] = set()
        numbers: dict[str, set[str]] = {}
        before = {  # what the asked fields held before the asked values, as the calls reported it
            str(result[k])
            for action in self.golden.actions
            if isinstance(result := action.result, dict)
            for k, v in fields.items()
            if k in result and str(result[k]) != v
        }
        for action in self.golden.actions:
            result = action.result if isinstance(action.result, dict) else {}
            told = any(str(result.get(k)) == v for k, v in fields.items())
            # ... or a call of the work that reported the asked field before it came to hold the
            # asked value: process_batch's "committed": 6, then the commit made it 22; its
            # "halted_at" is what the world said of the same work ("Halted at offset 22
            # (schema_violation: refund_of missing)"; round 70, R4: 0.833)
            wrote = action.env in envs and action.tool not in self.world.reads.get(action.env, [])
            earlier = not told and wrote and any(k in result for k in fields)
            made = any(isinstance(v, str) and v in keys for v in result.values())  # "count_id": "CC-0002"
            if "error" in result or not (told or made or earlier):
                continue
            for key, value in result.items():
                label = vr.words(humanize(str(key)))
                if value not in ([], {}, "", None, False):  # a name over nothing says it did not happen
                    found.update(label)  # ("dead_lettered": [] makes no "dead-lettered offset 22")
                whole = [v for v in value.values() if type(v) is int] if isinstance(value, dict) else [value]
                # "halted at 23": the one number it holds (not what the field held before the
                # asked value: "current committed offset: 27" of one rewound to 4 is untrue)
                if len(whole) == 1 and type(whole[0]) is int and not earlier:
                    numbers.setdefault(" ".join(label), set()).update(said_numbers(str(key), whole[0]))
                if isinstance(value, list) and value:  # how many it names: "dropped 1 duplicate"
                    found.add(str(len(value)))
                for node in scalars(value):
                    if isinstance(node, str) and len(node) <= _SHORT:
                        said = re.findall(r"[^\W_]+", node.lower())
                        found |= set(said) | (SUCCEEDED if said == ["ok"] else set())
                    elif type(node) is int and not (earlier and str(node) in before):
                        found.add(str(node))  # (never what the asked field held before it)
        return found - vr.NEGATIONS - vr.RETRACTIONS, numbers

    def _asked_verbs(self, request: FileRequest) -> set[str]:
        """The verb the user's phrase for an act on the asked records opens with ("offer" of
        propose_match's "offer {request_id} to {driver_id}"), with its past and -ing forms: a
        report saying "offered" says back what the user asked done (round 22, ZA: 0.75)."""
        values = {str(v) for v in asked_values(request)}
        found: set[str] = set()
        for action in self.golden.actions:
            book = self.world.books.get(action.env)
            goal = book.goals.get(action.tool) if book is not None else None
            if goal is None or "error" in action.result:
                continue
            if any(acts_itself(action, value) for value in values):
                verb = goal.text.split(" ", 1)[0].lower()
                if verb.isalpha():
                    found |= {verb, *word_forms(verb)}
        return found

    def _touched_context(self, records: list[tuple[str, str, str]]) -> dict[str, list[str]]:
        """Per record of ``records`` (by its id, lower-cased, and by the words of its name:
        "Atlanta" of WH-ATL, "Atlanta DC"), what the world says of it and of the acts on it, with
        the numbers those calls passed ("Removed rule 12 from RCP-01"), the numbers it holds ("9
        units of SKU-17680 for SO-20375") and what the run wrote into it (:func:`written_words`):
        the words a report's line naming it may use."""
        found: dict[str, set[str]] = {}
        for env, collection, key in records:
            book = self.world.books.get(env)
            if (book is not None and collection not in book.collections) or not _CODE.match(key):
                continue
            words = set(carried_context(self.golden, book, [key])) | acts_on(self.golden, key)
            words |= {
                str(v)
                for action in self.golden.actions
                if key in {str(a) for a in scalars(action.args)}
                for v in scalars(action.args)
                if type(v) is int
            }
            before = (self.golden.initial.get(env, {}).get(collection) or {}).get(key, MISSING)
            after = self.golden.final[env][collection].get(key, MISSING)
            words |= {str(abs(v)) for v in scalars(after) if type(v) is int}
            words |= written_words(before, after)
            name = after.get("name") if isinstance(after, dict) else None
            for said in [key.lower(), *(vr.words(name) if isinstance(name, str) else ())]:
                if said == key.lower() or (said.isalpha() and len(said) > 3 and said not in vr.REPORTING):
                    found.setdefault(said, set()).update(words - vr.NEGATIONS - vr.RETRACTIONS)
        return {said: sorted(words) for said, words in found.items()}

    def _changed_numbers(self) -> list[tuple[str, list[str], list[str]]]:
        """``(label, what it held, what it holds)`` of every whole number the run changed in a
        record ("on hand", ["60"], ["51"]): a report that gives that label a number the field
        never held, or the old one as what it is now, says something untrue (:func:`misnumbered`)."""
        found = []
        for env, collection, key in self._changed_records():
            before = (self.golden.initial.get(env, {}).get(collection) or {}).get(key)
            for change in diff(before, self.golden.final[env][collection].get(key)):
                was, now, name = change["before"], change["after"], change["path"].rsplit("/", 1)[-1]
                label = " ".join(vr.words(humanize(unescape_token(name))))
                if type(was) is int and type(now) is int and label.replace(" ", "").isalpha():
                    # a field's name, not a key ("rooms_left/2026-03-13": no label "2026-03-13")
                    found.append((label, said_numbers(name, was), said_numbers(name, now)))
        return found

    def _changed_records(self) -> list[tuple[str, str, str]]:
        """``(env, collection, key)`` of every record the golden run made or changed."""
        return [
            (env, collection, key)
            for env, final in self.golden.final.items()
            for collection, records in final.items()
            if isinstance(records, dict)
            for key, record in records.items()
            if record != (self.golden.initial.get(env, {}).get(collection) or {}).get(key)
        ]

    def _named_records(self, changed: set[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """``(env, collection, key)`` of every record a call of the golden run that went through
        named and left as it was (not among ``changed``): the records the work was done from (the
        dataset a clean read, the message a reply answers). A report's line may name one with
        what the world says of it ("- The escalated dataset in the watch log was DS-007." of a
        clean from DS-007 paid 0.875; round 37, O4), as it may a record the run changed."""
        found: list[tuple[str, str, str]] = []
        for action in self.golden.actions:
            book = self.world.books.get(action.env)
            if book is None or "error" in action.result or action.tool in SYSTEM_TOOLS:
                continue
            state = self.golden.initial.get(action.env, {})
            for value in scalars(action.args):
                key = str(value)
                collection = book.collection_of(state, key) if _CODE.match(key) else None
                record = (action.env, collection, key) if collection is not None else None
                if record is not None and record not in changed and record not in found:
                    found.append(record)
        return found

    def _other_states(self, request: FileRequest) -> dict[str, list[str]]:
        """Per asked record id (lower-cased), the states its kind of record can be in and it is
        not, nowhere in the record as the run left it nor a form of an act the run did on it
        ("open" of a return that is "refunded" is untrue; "received" and "opened" tell what was
        done to it on the way): what a line naming it may not call it (the runtime's ``section_fault``;
        "Return RMA-00001 (refunded)" paid 1.0; round 46, R2). A state of several words is said
        as words ("store credit" of a refund's ``store_credit`` method: "Note: refund was issued
        as store credit" of a refund to the original payment paid 1.0; round 64, R1)."""
        found: dict[str, list[str]] = {}
        for (env, where), value in zip(request.sources, asked_values(request), strict=False):
            parts = where.split("/")
            book = self.world.books.get(env)
            if len(parts) < 3 or book is None or not ID_LIKE.match(str(value)):
                continue
            record = get_path(self.golden.final.get(env, {}), "/".join(parts[:3]))
            if not isinstance(record, dict):
                continue
            values = {v for v in scalars(record) if isinstance(v, str)}
            held = {w for v in values for w in vr.words(v)}
            # (an act's past or -ing form, never its base, which may be the state: "open")
            acts = acts_on(self.golden, str(value))
            done = {form for word in acts for form in word_forms(word)} & acts
            codes = {code for values in book.choices(parts[1]).values() for code in values}
            words = {code for code in codes if "_" not in code} - held - done - vr.NEGATIONS
            phrases = {" ".join(code.split("_")) for code in codes if "_" in code and code not in values}
            if words | phrases:
                found[str(value).lower()] = sorted(words | phrases)
        return found

    def _desk_verbs(self) -> dict[str, list[str]]:
        """The words of the tools that change the task's environments, each with its past and
        -ing forms (``reconcile_count``: "reconcile", "reconciled", "count", "counted"): what a
        report may say is still to come for the next shift (the runtime's ``to_come``)."""
        found: dict[str, list[str]] = {}
        for env in self.golden.final:
            book = self.world.books.get(env)
            tools = book.package.env_class.tools if book is not None else {}
            for name, spec in tools.items():
                if name in SYSTEM_TOOLS or spec.annotations.read_only:
                    continue
                for word in vr.words(humanize(name)):
                    found[word] = sorted(word_forms(word))
        return dict(sorted(found.items()))

    def _kinds(self, states: dict[str, list[str]], request: FileRequest) -> dict[str, list[str]]:
        """Per asked record id of ``states``, the words of its kind ("refunds" of a refund): a
        line naming no id names the asked record of the kind it names (the runtime's
        ``section_fault``)."""
        found: dict[str, list[str]] = {}
        for (_, where), value in zip(request.sources, asked_values(request), strict=False):
            parts = where.split("/")
            if str(value).lower() in states and len(parts) > 2:
                found[str(value).lower()] = vr.words(humanize(parts[1]))
        return found

    def _foreign_words(
        self, request: FileRequest, about: dict[str, list[str]], changed: list[tuple[str, str, str]]
    ) -> dict[str, list[str]]:
        """Per asked record id (lower-cased), what the world says only of the other records of
        its environment the run changed that it does not point at nor they at it (``about``): a
        line naming it may not give it their facts (the runtime's ``foreign_words``: "Return
        RMA-00001 (reason: found a better price elsewhere)" of a return opened as wrong_item, the
        reason another order was cancelled; "Refund RF-00002 for return RMA-00001" of a refund
        of that order; round 46, R2: each paid 1.0). Never the label of a field of theirs
        ("reason", "status"), a plain word, or a number under 100 ("2 units")."""
        found: dict[str, list[str]] = {}
        for (env, _), value in zip(request.sources, asked_values(request), strict=False):
            own = str(value).lower()
            book = self.world.books.get(env)
            if own not in about or book is None:
                continue
            others = {key.lower() for e, _, key in changed if e == env and key.lower() in about} - {own}
            near = {o for o in others if o in about[own] or own in about[o]}
            kinds = {collection for e, collection, _ in changed if e == env}
            labels = {w for kind in kinds for label in book.field_labels(kind) for w in vr.words(label)}
            mine = {w for o in {own, *near, *(set(about[own]) & set(about))} for w in about[o]}
            theirs = {w for o in others - near for w in about[o]}
            words = theirs - mine - labels - vr.PLAIN - vr.MENTION
            if words := {w for w in words if not (w.isdigit() and len(w) < 3)}:
                found[own] = sorted(words)
        return found

    def _asked_context(self, request: FileRequest) -> set[str]:
        """What the world says about the records the asked values come from and those they point
        at (:func:`carried_context`: "RET-0042, the return of ORD-5 for Maria Novak")."""
        found: set[str] = set()
        for (env, where), value in zip(request.sources, asked_values(request), strict=False):
            book = self.world.books.get(env)
            found.update(carried_context(self.golden, book, [*where.split("/")[2:3], value]))
        return found

    def _dated_until(self, path: str, turn: int | None, old: str) -> str | None:
        """The latest moment an entry added to a timeline may carry: a day after the latest one
        a correct run added (every correct run writes its entry now, give or take the calls it
        made on the way: a day is 1,440 calls at the default tick). An entry dated years ahead
        is a forged record, not the asked one. None where no run added a UTC-dated entry."""
        before = set(vr.norm_text(old).split("\n"))
        added = [
            moment
            for run in self.world.runs(turn)
            for line in vr.norm_text(window(run, turn)[3].get(path) or "").split("\n")
            if line not in before and (moment := vr.utc_moment(line))
        ]
        if not added:
            return None
        latest = datetime.fromisoformat(max(added)) + timedelta(days=1)
        return latest.strftime("%Y-%m-%dT%H:%M:%S")

    def _known_lines(self, path: str, turn: int | None) -> list[str] | None:
        """Where the number of lines is not fixed (the world appends to an incident's timeline
        while the agent waits; a mail's greeting may stand on lines of its own), the lines some
        correct run's file holds: any other line no entry reads is someone's unasked one ("invsync-b1
        back to healthy, issue resolved" on a host that crash-loops, a "Cc:" added to a draft).
        None for a file the agent writes."""
        if path in self.agent_files:
            return None
        known: set[str] = set()
        for run in self.world.runs(turn):
            content = window(run, turn)[3].get(path)
            if content is not None:
                known.update(vr.parse_file(content, "lines"))
        return sorted(known)

    def _only_ids(self, request: FileRequest) -> dict[str, Any]:
        """For a table or a section that gives record ids: no other id of their shape but those of
        the records the run touched or the asked ones point at (the judge's shotgun: "RCP-01 RCP-02
        RCP-03" scored 1; "the forward of MSG-0003: MSG-0010" names the record forwarded)."""
        if request.format not in ("csv", "markdown"):
            return {}
        asked = [v for v in asked_values(request) if ID_LIKE.match(v)]
        prefixes = sorted({v.rstrip("0123456789").lower() for v in asked})  # "RCP-03" -> "rcp-"
        if not prefixes:
            return {}
        touched = {key for _, _, key in self._changed_records()}
        # the records the asked ones point at: "the forward of MSG-0003: MSG-0010"
        context = {word for word in self._asked_context(request) if any(c.isdigit() for c in word)}
        return {"only_ids": {"prefixes": prefixes, "allowed": sorted({*asked, *touched, *context})}}

    def _file_expectation(self, path: str, content: str, turn: int | None) -> tuple[str, Any]:
        fmt = file_format(path, content)
        others = [window(run, turn)[3].get(path) for run in self.world.runs(turn)[1:]]
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


def _adds_dated_lines(old: str, new: str) -> bool:
    """Whether the golden run added dated lines to a file whose dated lines keep time (a
    timeline, a log): then every correct run's entries come after the entries already there.
    A file the run made keeps time when it holds two dated lines or more, in order: a new
    incident's timeline, whose note no correct run dates before the incident opened (a note
    written in by hand an hour back paid 1.0; round 62, R2)."""
    before = {line for line in vr.norm_text(old).split("\n") if vr.utc_moment(line)}
    added = [line for line in vr.norm_text(new).split("\n") if vr.utc_moment(line) and line not in before]
    return (bool(before) or len(added) > 1) and bool(added) and vr.in_time_order(new, old)


def dictated_message(pattern: Any) -> bool:
    """Whether a file pattern holds a dictated message (``$says``, ``$composed``, ``$block``)."""
    if isinstance(pattern, dict):
        return any(k in ("$says", "$composed", "$block") or dictated_message(v) for k, v in pattern.items())
    if isinstance(pattern, list):
        return any(dictated_message(v) for v in pattern)
    return False


def dictated(pattern: Any) -> bool:
    """Whether a field's pattern is text the user dictated (``$text``, ``$says``, ``$composed``,
    or one inside an env's own words): read as a goal of its own, so a record made right with its
    words not as dictated ("duplicate request (per on-call)") is half the work, and the failing
    check names the words."""
    if not isinstance(pattern, dict) or len(pattern) != 1:
        return False
    op, arg = next(iter(pattern.items()))
    if op == "$framed":
        return dictated(arg[1])
    return op in ("$text", "$says", "$composed")


_LABEL_GLUE = frozenset(["a", "an", "the", "of", "to", "for", "in", "on", "by", "with", "from", "afterwards"])


def section_labels(values: list[str], labels: Sequence[str]) -> dict[str, list[str]]:
    """For each asked value of a Markdown section, the words only its own description holds
    ("traveler" of "the id of the new message to the traveler" beside "the id of the new
    message"): the runtime's ``section_fault`` reads a value labelled with another's words as the
    two given for each other. Empty when nothing sets the descriptions apart."""
    if len(values) < 2 or len(labels) != len(values):
        return {}
    told = [set(vr.words(label)) - _LABEL_GLUE - vr.REPORTING for label in labels]
    found = {
        value.lower(): sorted(mine - set().union(*(o for j, o in enumerate(told) if j != i)))
        for i, (value, mine) in enumerate(zip(values, told, strict=True))
    }
    return {value: own for value, own in found.items() if own}


def _read_back(request: FileRequest) -> dict[str, Any]:
    """The asked values that are a field of a record the world keeps (``/collection/key/field``,
    not a new record's id): the runtime reads each back from the run's own end state
    (:func:`envcraft.tasks.verifier.runtime.read_back`), never the reference's counter."""
    fields = [[i, env, where] for i, (env, where) in enumerate(request.sources) if where.count("/") == 3]
    return {"read_back": fields} if fields else {}
