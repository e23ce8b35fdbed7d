"""Guard checks: what the user did not ask to change stays as it was, at every turn's end.

Every other record of every collection (distractors named separately), the fields of an edited
record the task did not set, no extra records where the task creates a given number, the changes
a requested step makes elsewhere, and every S0 file the task never touches. Top-level counters
and timestamps are never pinned; a field a user leaves free (a note) is free only on the records
the work edits, and a log collection (the world appends to it) may gain records, but its existing
ones are guarded like any other (acknowledging a notification nobody asked about is a change);
where the work asks for an entry of a log, every new entry is one asked for (a health check of
each service is not the check of the one the user named; the asked one run twice still is).

The same guards hold for every user turn's window (from the end of the turn before to the end
of this one), built from what the golden run changed in that window: a later turn's work done
early, or work nobody asked for undone before the end, breaks the window's guard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envcraft.core.pointer import escape_token
from envcraft.core.state import MISSING, diff, get_path
from envcraft.tasks.phrasing.phrasebook import is_time
from envcraft.tasks.play.execute import tail_runs
from envcraft.tasks.play.outcome import Outcome
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import (
    CHOICE,
    NAME_LIMIT,
    PERSON_NAME,
    CheckList,
    id_shaped,
    identities,
    is_counter,
    is_free,
    is_timestamp,
    member,
    pattern_of,
    scalars,
    short,
    split_path,
    states_at,
    under_any,
    wild,
    window,
)
from envcraft.tasks.verifier.repeats import repeat_guards

# Fields that only say when a record was last touched (a profile run bumps a dataset's): no guard reads them.
STAMPS = frozenset({"/updated_at", "/modified_at", "/last_modified", "/last_updated"})


class GuardChecks(CheckList):
    """The guard half of the verifier's checks (see the module docstring)."""

    # -- guards -----------------------------------------------------------------------------------
    def guards(self, protected: Sequence[Mapping[str, str]], turn_checks: bool = True) -> None:
        """The guards of the whole run, then (``turn_checks``) of every turn's window but the
        last (whose end is the run's end)."""
        windows: list[int | None] = [None]
        if turn_checks:
            windows += range(len(self.golden.turns) - 1)
        for turn in windows:
            self._window_guards(protected, turn)
        for spec in repeat_guards(self.golden):  # an asked write made again: the action log shows it
            args = (
                ", ".join(f"{k}={short(v)}" for k, v in spec["args"].items())
                if isinstance(spec["args"], dict)
                else ""
            )
            self._guard(
                f"{spec['env']}.{spec['tool']}({args}) made at most {spec['count']} time(s)",
                None,
                kind="repeats",
                subject=f"repeats {spec['env']} {spec['tool']}",
                **spec,
            )

    def _window_guards(self, protected: Sequence[Mapping[str, str]], turn: int | None) -> None:
        _, after, before_files, after_files = self._window(turn)
        distractors = {(d["env"], d["path"]) for d in protected if d.get("env") in after}
        for env, path in sorted(distractors):
            if get_path(after[env], path) is MISSING:
                continue
            ignore = self._record_ignore(env, path, turn)
            looked = self.world.looked.get(env, {}).get(split_path(path)[0] or "")
            self._guard(
                f"distractor {env}:{path} untouched",
                turn,
                kind="unchanged",
                env=env,
                path=path,
                **({"ignore": ignore} if ignore else {}),
                **({"looked": looked} if looked else {}),
            )
        for env in sorted(after):
            self._collection_guards(env, {p for e, p in distractors if e == env}, turn)
        windows = [window(run, turn) for run in self.world.runs(turn)]  # a recovery rewrites a sink file
        kept = sorted(
            p
            for p in before_files
            if p not in self.world.exogenous_files and all(w[3].get(p) == w[2].get(p) for w in windows)
        )
        if kept:
            self._guard(
                f"{len(kept)} other workspace files untouched",
                turn,
                kind="files_unchanged",
                paths=kept,
            )
        either = {  # what a documented recovery rewrites (a sink, a dead-letter file): as one of them
            p: sorted(
                {
                    vr.untimed(c) if c is not None else ""
                    for c in (before_files[p], *(w[3].get(p) for w in windows))
                }
            )
            for p in sorted(before_files)
            if p not in kept and p not in self.world.exogenous_files and after_files.get(p) == before_files[p]
        }
        if either:
            self._guard(
                f"{len(either)} other workspace files as a correct run leaves them",
                turn,
                kind="files_either",
                paths=either,
            )
        if after_files or before_files:  # a Claw task: no file nobody asked for
            made = set(self.world.exogenous_files)
            for run in self.world.runs(turn):
                _, _, start, end = window(run, turn)
                made |= set(end) - set(start)
            # (a file of what the world brought in is named by its id, whenever it came)
            numbered = self.created | self._arrived()
            shaped = [id_shaped(p, numbered) for p in sorted(made) if p not in self.agent_files]
            like = [p for p in shaped if isinstance(p, dict)]  # a file the env names by an id it numbers
            self._guard(
                "no other workspace file created",
                turn,
                kind="no_new_files",
                allowed=sorted(made),
                **({"allowed_like": like} if like else {}),
            )

    def _collection_guards(self, env: str, distractors: set[str], turn: int | None) -> None:
        book = self.world.books[env]
        start, end, _, _ = self._window(turn)
        before, after = start[env], end[env]
        changed_records: dict[str, set[str]] = {}
        consequences: list[str] = []
        world_made: list[str] = []
        dictated = self._dictated(env)  # what a free note on another record may not carry
        for change in diff(before, after):
            collection, key, rest = split_path(change["path"])
            if collection is not None and collection in book.collections and not rest:
                made = change["op"] == "added" and under_any(
                    change["path"], self.world.exogenous.get(env, set())
                )
                if made:
                    world_made.append(change["path"])  # a record the world added while the agent worked
                continue
            if collection is None or collection not in book.collections or not rest:
                top = collection is None and change["path"] not in self.goal_paths[env]
                if top and not is_counter(change) and not self.world.moves(env, change["path"]):
                    consequences.append(change["path"])
                continue
            if key not in before.get(collection, {}):
                continue
            record = f"/{escape_token(collection)}/{escape_token(key)}"
            changed_records.setdefault(record, set()).add(rest)
            named = (env, collection, key) in self.named
            keyed = (env, collection, key) in self.keyed  # its goals are what the user gave
            exogenous = under_any(change["path"], self.world.exogenous.get(env, set()))
            if (
                not named
                and not (keyed and str(change.get("after")) in self.asked)  # a value the user gave
                and not exogenous
                and not is_free(book, collection, rest)
                and not is_timestamp(change)
                and not self.numbered_change(env, change)
                and not self._uninspected(env, change["path"], change)
            ):
                consequences.append(change["path"])
        for path in consequences:
            values = self.world.values(env, path, turn)
            if all(v is MISSING for v in values):
                continue
            expected = self.expected(values, about=path)
            if wild(expected):
                continue
            self._guard(
                f"{env}:{path} = {short(expected)} (a consequence of the work)",
                turn,
                kind="matches",
                env=env,
                path=path,
                expected=expected,
            )
        for path in world_made:  # as the world made it: a notification nobody asked about stays unread
            values = self.world.values(env, path, turn)
            if any(v is MISSING for v in values) or not isinstance(values[0], dict):
                continue
            expected = pattern_of(values)
            if wild(expected):
                continue
            self._guard(
                f"{env}:{path} as the world made it",
                turn,
                kind="matches",
                env=env,
                path=path,
                expected=expected,
                unmade=True,  # a run of fewer calls ends before the world's clock makes it
            )
        for record, fields in sorted(changed_records.items()):
            kind = split_path(record + "/x")[0] or ""
            free = {f"/{escape_token(name)}" for name in book.free_fields(kind) if "/" not in name}
            # what looking at the record changes (a message read gains "seen") is excused, in a
            # field the work left or changed only so; anything else there is not (a flag nobody
            # asked for)
            shifting = set(self._record_ignore(env, record, turn)) | fields
            looking = {
                f: members
                for f, members in self.world.looked.get(env, {}).get(kind, {}).items()
                if f not in shifting
                or _only_looked(get_path(before, record + f), get_path(after, record + f), members)
            }
            ignore = sorted((shifting - set(looking)) | free | set(self._inspected(env, record)))
            set_to = [get_path(after, record + f) for f in sorted(fields)]  # what the work set it to
            acts = sorted({w for v in set_to if isinstance(v, str) and len(v) <= 40 for w in vr.words(v)})
            # what a free note may not say: who and what else the world knows, and what the
            # record is not (round 30: "Done by amara", "Cancelled", "Duplicate of AI-659" on
            # an item closed as done by emil)
            others = self._unsaid_others(env, kind, after, self._record_words(env, get_path(after, record)))
            elsewhere = [text for text, holders in dictated if record not in holders]
            self._guard(
                f"rest of {env}:{record} unchanged",
                turn,
                kind="unchanged",
                env=env,
                path=record,
                ignore=ignore,
                **({"looked": looking} if looking else {}),
                **(
                    {
                        "unsaid": {
                            "fields": sorted(free),
                            "acts": acts,
                            "others": sorted(others),
                            **({"elsewhere": elsewhere} if elsewhere else {}),
                        }
                    }
                    if free and acts
                    else {}
                ),
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
            self._guard(
                f"rest of {env}:{path} unchanged",
                turn,
                kind="unchanged",
                env=env,
                path=path,
                **({"ignore": ignore} if ignore else {}),
            )
        for collection in book.collections:
            members = before.get(collection)
            if not isinstance(members, dict):
                continue
            path = f"/{escape_token(collection)}"
            skip = {
                k for k in members if member(path, k) in changed_records or member(path, k) in distractors
            }
            keep = [k for k in members if k not in skip]
            if keep:
                spec: dict[str, Any] = {"except": sorted(skip)}
                stamps = sorted(
                    {f"/{f}" for k in keep if isinstance(members[k], dict) for f in members[k]} & STAMPS
                )
                if stamps:
                    spec["ignore"] = stamps  # when a record was last touched says nothing of what changed
                looked = self.world.looked.get(env, {}).get(collection)
                if looked:
                    spec["looked"] = looked  # what reading a record marks on it (a message "seen")
                by_key = {
                    k: ig
                    for k in keep
                    if (
                        ig := self._record_ignore(env, member(path, k), turn)
                        + self._inspected(env, member(path, k))
                    )
                }
                if by_key:
                    spec["ignore_by_key"] = by_key
                bounds = {
                    k: took
                    for k, fields in by_key.items()
                    if (took := self._took(env, member(path, k), fields))
                }
                if bounds:
                    spec["may_become"] = bounds  # a request the clock expires, never one cancelled
                    moves = _moves(members, bounds)
                    if moves:  # ... and what the clock does to one record it may do to any
                        spec["may_move"] = moves
                noun = book.entity(collection).noun
                self._guard(
                    f"other {noun} records of {env} untouched",
                    turn,
                    kind="others_unchanged",
                    env=env,
                    path=path,
                    **spec,
                )
            asked = self.made.get((env, path, turn))
            log = book.is_log(collection)
            if log and not asked:
                unset = self._left_unset(env, collection) if turn is None else {}
                if unset:  # ... and nobody asked to act on what it appends (close a notification)
                    self._guard(
                        f"every {book.entity(collection).noun} the world adds to {env} left as it comes",
                        turn,
                        kind="only_asked",
                        env=env,
                        path=path,
                        expected=[{"$fields": unset}],
                    )
                continue  # the world appends to a log as a by-product of looking
            voided = self.world.voiding(env)  # made and voided: none
            subject = f"new {env} {path}"  # too many new records, or one of another person: one harm
            arrivals = self._arrivals(env, collection)
            if not log:  # a log entry the work asks for may come twice (a health check run again)
                new = max(
                    self._new_members(run, env, collection, turn, arrivals) for run in self.world.runs(turn)
                )
                self._guard(  # as many as a correct run may end with (the world may add some while it waits)
                    f"{env}:{path} gains at most {new} new",
                    turn,
                    kind="no_extra",
                    env=env,
                    path=path,
                    count=new,
                    subject=subject,
                    **({"arrivals": arrivals} if arrivals else {}),
                    **voided,
                )
            if asked and not any(under_any(p, {path}) for p in world_made):
                noun = book.entity(collection).noun
                unsaid = self._new_unsaid(env, collection, after, asked, dictated)
                repeats = self._repeated(env, asked) if log else []
                self._guard(  # a message to the wrong traveler: the asked one missing AND a harm
                    f"every new {noun} of {env} is one asked for",
                    turn,
                    kind="only_asked",
                    env=env,
                    path=path,
                    expected=asked,
                    subject=subject,
                    **({"unsaid": unsaid} if unsaid else {}),
                    **({"arrivals": arrivals} if arrivals else {}),
                    **({"repeats": repeats} if repeats else {}),
                    **voided,
                )

    def _guard(self, name: str, turn: int | None, **spec: Any) -> None:
        """A guard of the whole run (``turn`` None) or of one turn's window. Both copies protect
        the same thing, their ``subject`` (the kind of check, its record or field): one unasked
        write that both see costs one halving (the runtime's ``harms``)."""
        spec.setdefault("subject", " ".join(str(spec[k]) for k in ("kind", "env", "path") if k in spec))
        window = {} if turn is None else {"turn": turn}
        self._add(name if turn is None else f"turn {turn + 1}: {name}", "guard", **spec, **window)

    def _new_unsaid(
        self,
        env: str,
        collection: str,
        after: dict[str, Any],
        patterns: Sequence[Any],
        texts: list[tuple[list[str], set[str]]],
    ) -> dict[str, Any]:
        """What a free note of a new record may not say, as of an edited one (the runtime's
        ``_took_back``, ``claimed`` and ``_misplaced``): that the record is not what the work
        made it, who and what else the world knows (round 36: an item added and completed at
        once with the note "Not done yet - emil still working on it" paid 1.0), or a text the
        user dictated for another record (``texts``, :meth:`_dictated`; ``dictated``: per
        pattern of ``patterns``, the texts the new record it stands for holds). Empty where the
        collection's records hold no free field an agent writes, or the run made none of them."""
        book = self.world.books[env]
        # the free fields an agent writes (a tool takes a parameter of the name: a note), never
        # one the environment fills in itself (a booking's "source": "direct" or "series")
        written = {
            p for spec in book.package.env_class.tools.values() for p in spec.parameters.get("properties", {})
        }
        before = self.golden.initial.get(env, {}).get(collection) or {}
        made = [r for k, r in (after.get(collection) or {}).items() if k not in before]
        free = sorted(  # a list's items' own ("lines/*/note") too
            "/" + "/".join(map(escape_token, name.split("/")))
            for name in book.free_fields(collection)
            if name.rsplit("/", 1)[-1] in written
        )
        if not free or not made:
            return {}
        acts = sorted(
            {w for r in made for v in scalars(r) if isinstance(v, str) and len(v) <= 40 for w in vr.words(v)}
        )
        own = set().union(*(self._record_words(env, r) for r in made))
        others = self._unsaid_others(env, collection, after, own)
        path = f"/{escape_token(collection)}"
        made_at = {member(path, k): r for k, r in (after.get(collection) or {}).items() if k not in before}
        dictated = [
            [text for text, held in texts if any(vr.matches(made_at[h], p) for h in held & set(made_at))]
            for p in patterns
        ]
        elsewhere = [text for text, holders in texts if not holders & set(made_at)]
        return {
            "fields": free,
            "acts": acts,
            "others": sorted(others),
            **({"dictated": dictated} if len(patterns) > 1 and any(dictated) else {}),
            **({"elsewhere": elsewhere} if elsewhere else {}),
        }

    def _dictated(self, env: str) -> list[tuple[list[str], set[str]]]:
        """Each text the user dictated into a free field of ``env``'s records (a note, a
        reason) as its own words (none of the user's framing, no plain word or number; two at
        least, or no other note could be said to carry it), with the paths of the records that
        hold it at the end: what a note on any other record may not carry (the runtime's
        ``_misplaced``)."""
        book = self.world.books[env]
        final = self.golden.final.get(env, {})
        held: dict[str, set[str]] = {}
        for collection in book.collections:
            table = final.get(collection)
            if not isinstance(table, dict):
                continue
            free = book.free_fields(collection)
            for key, record in table.items():
                for name in free:
                    text = record.get(name) if isinstance(record, dict) else None
                    if isinstance(text, str) and text.strip():
                        held.setdefault(text.strip(), set()).add(member(f"/{escape_token(collection)}", key))
        found: list[tuple[list[str], set[str]]] = []
        for action in self.golden.actions:
            if action.env != env or not isinstance(action.args, dict):
                continue
            for name, value in action.args.items():
                if action.provenance.get(name) != "user" or not isinstance(value, str):
                    continue
                own = [
                    w
                    for w in dict.fromkeys(vr.words(value))
                    if w not in self.world.framing and w not in vr.PLAIN | vr.POLITE and not w.isdigit()
                ]
                holders = held.get(value.strip())
                if holders and len(own) >= 2 and (own, holders) not in found:
                    found.append((own, holders))
        return found

    def _unsaid_others(self, env: str, kind: str, after: dict[str, Any], own: set[str]) -> set[str]:
        """What a free note nobody asked for may not say of a record whose own words are ``own``:
        someone or something else of the world (:meth:`_elsewhere`), unless the user said it
        and it names nobody ("Done by farah" of an item amara did, farah named in another turn:
        round 42, R4: 1.0)."""
        told = own | (self.world.said - _people(after))
        return self._elsewhere(env, kind, after) - told

    def _record_words(self, env: str, record: Any) -> set[str]:
        """The words of a record's short texts as the run left it (its title, its owner, its
        status), and the names of the records they point at, wherever the state keeps them
        ("Emil Sorensen" of the owner "emil")."""
        texts = [v for v in scalars(record) if isinstance(v, str) and len(v) <= NAME_LIMIT]
        tables = [t for t in self.golden.final.get(env, {}).values() if isinstance(t, dict)]
        pointed = [name for v in texts for table in tables if v in table for name in _named_by(table[v])]
        return {w for v in [*texts, *pointed] for w in vr.words(v)}

    def _elsewhere(self, env: str, kind: str, state: dict[str, Any]) -> set[str]:
        """The words that name someone or something else of the world, or a state a record of
        ``kind`` can be in: every record's ids, names and titles (a handle's person too), the
        choice words the records of ``kind`` hold ("open", "cancelled") and the runtime's
        ``OUTCOMES``. A free note that uses one the edited record and the user never do says
        something of another record, or that this one is what it is not."""
        found: set[str] = set()
        # the collections' records only: the desk's own settings (the ``operator`` the agent
        # works as) are no one else, and may sign ("Corrected after a recount. - Alex"; round 43)
        collections = self.world.books[env].collections
        for table in (state[c] for c in collections if isinstance(state.get(c), dict)):
            for key, record in table.items():
                found |= {w for name in [str(key), *_named_by(record)] for w in vr.words(name)}
        for record in (state.get(kind) or {}).values():
            found |= {v for v in scalars(record) if isinstance(v, str) and CHOICE.fullmatch(v)}
        return (found | vr.OUTCOMES) - vr.POLITE - vr.MENTION - vr.REPORTING

    def _left_unset(self, env: str, collection: str) -> dict[str, Any]:
        """The fields every record the world adds to ``collection`` holds empty (null, "", false,
        [], {}) in every run that shows one: the golden run, the correct variants and the idle
        runs, at each turn's end and at the end (a notification's ``acknowledged_at``), but for
        what looking at a record fills in. A run that fills one acted on a record the user never
        mentioned (round 29: a gate-change notification acknowledged, that fired only because
        the agent's reads moved the clock past it, paid 1.0)."""
        old = self.golden.initial.get(env, {}).get(collection) or {}
        records = [
            record
            for run in [self.golden, *self.world.variants, *self.world.idle]
            for state in [*(t.final for t in run.turns), run.final]
            for key, record in (state.get(env, {}).get(collection) or {}).items()
            if key not in old and isinstance(record, dict)
        ]
        if not records:
            return {}
        looked = self.world.looked.get(env, {}).get(collection, {})
        return {
            name: value
            for name, value in sorted(records[0].items())
            if f"/{escape_token(name)}" not in looked
            and any(value == empty and type(value) is type(empty) for empty in _EMPTY)
            and all(name in r and type(r[name]) is type(value) and r[name] == value for r in records)
        }

    def _arrivals(self, env: str, collection: str) -> list[dict[str, Any]]:
        """What the world brings into ``collection`` once the work is done, as the tail runs show
        it (a reply that lands in the inbox when an agent fetches its mail after sending), each as
        its fields but its own id, its times and what reading it marks (a reply opened is "seen";
        round 70, R3: 0.5): a new record like one of them is the world's, not one the agent
        made, at the end and at each turn's end alike (an agent that fetches its mail right after
        sending, in the turn that sent; round 67, R4: 0.25)."""
        made = self.golden.final.get(env, {}).get(collection) or {}
        looked = self.world.looked.get(env, {}).get(collection, {})  # read once it came: "seen"
        found: list[dict[str, Any]] = []
        for run in tail_runs(self.golden):
            for key, record in sorted((run.final.get(env, {}).get(collection) or {}).items()):
                if key in made or not isinstance(record, dict):
                    continue
                fields = {
                    k: v
                    for k, v in record.items()
                    if v != key and not is_time(v) and f"/{escape_token(k)}" not in looked
                }
                if (pattern := {"$fields": fields}) not in found:
                    found.append(pattern)
        return found

    def _repeated(self, env: str, asked: list[Any]) -> list[dict[str, Any]]:
        """The asked entries of a log as the asked act would make them again: only the fields a
        call chose (the service a health check is of), none it observed (which replicas failed).
        A log bounds no count, so a check run again after the asked one, to confirm a drain, is
        the asked act again (round 70, R1: 0.5); a check of another service is not, nor one run
        before the asked one (before the drain the user asked for first)."""
        passed = {
            v
            for a in self.golden.actions
            if a.env == env
            for v in scalars(a.args)
            if isinstance(v, str) and v
        }
        found: list[dict[str, Any]] = []
        for pattern in asked:
            fields = pattern.get("$fields", {}) if isinstance(pattern, dict) else {}
            chosen = {k: v for k, v in fields.items() if isinstance(v, str) and v in passed}
            if chosen and {"$fields": chosen} not in found:
                found.append({"$fields": chosen})
        return found

    def _arrived(self) -> set[str]:
        """The ids of the records the world brings in once the work is done (:meth:`_arrivals`)."""
        return {
            key
            for run in tail_runs(self.golden)
            for env, state in run.final.items()
            for collection, records in state.items()
            if isinstance(records, dict)
            for key, record in records.items()
            if isinstance(record, dict) and key not in (self.golden.final.get(env, {}).get(collection) or {})
        }

    @staticmethod
    def _new_members(
        run: Outcome, env: str, collection: str, turn: int | None, arrivals: list[dict[str, Any]]
    ) -> int:
        """How many records ``run`` adds to ``collection`` in the window, less what the world
        brought in (``arrivals``)."""
        start, end, _, _ = window(run, turn)
        before = start.get(env, {}).get(collection) or {}
        now = end.get(env, {}).get(collection) or {}
        return len(
            [k for k, v in now.items() if k not in before and not any(vr.matches(v, p) for p in arrivals)]
        )

    def _took(self, env: str, record: str, fields: list[str]) -> dict[str, list[Any]]:
        """Of a record's fields that move by themselves, those that only ever hold a choice word,
        with the words they take in the runs that show them (:meth:`World.took`)."""
        return {f: took for f in fields if (took := self.world.took(env, record + f)) is not None}

    def _record_ignore(self, env: str, record: str, turn: int | None = None) -> list[str]:
        """Fields of a record (relative paths) that move by themselves: in the world's clock, or
        between the correct runs at the check's moment or at the end. What a slower correct run
        shows moving by the end can move within an earlier turn of an agent that looks more (a
        long job of another run finishes while it reads: job_scheduler-d67c0a67f81d)."""
        fields: set[str] = set()
        for path in self.world.exogenous.get(env, set()):
            if path.startswith(record + "/"):
                fields.add(path[len(record) :])
        for moment in dict.fromkeys((turn, None)):
            value = get_path(states_at(self.golden, moment).get(env, {}), record)
            for run in self.world.runs(moment)[1:]:
                moved = get_path(states_at(run, moment).get(env, {}), record)
                if value is not MISSING and moved is not MISSING:
                    fields |= {c["path"] for c in diff(value, moved)}
        return sorted(f for f in fields if f)


def _moves(members: dict[str, Any], bounds: dict[str, dict[str, list[Any]]]) -> dict[str, list[list[Any]]]:
    """Per field, the moves ``[from, to]`` the world's clock makes to some records of a
    collection (``bounds``: what each such record's field may become): a driver whose shift
    ends goes from "available" to "offline". A slower correct run lets the clock reach other
    records' moves too (round 30, H2: 120 lookups and five other drivers' shifts ended: 0.5);
    the same move on any record is the world's, any other change of it is not."""
    found: dict[str, list[list[Any]]] = {}
    for key, fields in sorted(bounds.items()):
        for field, values in sorted(fields.items()):
            start = get_path(members.get(key), field)
            for value in values:
                move = [start, value]
                if start is not MISSING and start != value and move not in found.setdefault(field, []):
                    found[field].append(move)
    return {field: moves for field, moves in found.items() if moves}


def _people(state: Mapping[str, Any]) -> set[str]:
    """The words of the people's names a state holds, written as names ("Farah Haddad"), and
    the handles they are kept under ("farah": "Farah Haddad")."""
    found: set[str] = set()
    for table in (t for t in state.values() if isinstance(t, dict)):
        for key, record in table.items():
            names = [v for v in scalars(record) if isinstance(v, str) and PERSON_NAME.fullmatch(v)]
            if isinstance(record, str) and names:
                names.append(str(key))
            found |= {w for name in names for w in vr.words(name)}
    return found


def _named_by(record: Any) -> list[str]:
    """What a record is known by: its ids, names and titles, or the text it is (a member's name
    under its handle)."""
    return [record] if isinstance(record, str) else identities(record)


_EMPTY: tuple[Any, ...] = (None, "", False, [], {})  # what a field holds before anyone acts on it


def _only_looked(before: Any, after: Any, members: list[Any] | None) -> bool:
    """Whether a field went from ``before`` to ``after`` as looking at its record moves it: a
    value reading sets (``members`` None), or a list that gained only what reading adds."""
    if members is None:
        return True
    if not isinstance(before, list) or not isinstance(after, list):
        return False
    return all(m in after for m in before) and all(m in before or m in members for m in after)
