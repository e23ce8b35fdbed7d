"""Guard checks: what the user did not ask to change stays as it was.

Every other record of every collection (distractors named separately), the fields of an edited
record the task did not set, no extra records where the task creates a given number, the changes
a requested step makes elsewhere, and every S0 file the task never touches. Fields a user leaves
free, log collections, top-level counters and timestamps are never pinned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envcraft.core.pointer import escape_token
from envcraft.core.state import MISSING, diff, get_path
from envcraft.tasks.verifier.checks import (
    CheckList,
    is_counter,
    is_free,
    is_timestamp,
    member,
    short,
    split_path,
    under_any,
    wild,
)


class GuardChecks(CheckList):
    """The guard half of the verifier's checks (see the module docstring)."""

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
            collection, key, rest = split_path(change["path"])
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
            exogenous = under_any(change["path"], self.world.exogenous.get(env, set()))
            if (
                not named
                and not exogenous
                and not is_free(book, collection, rest)
                and not is_timestamp(change)
            ):
                consequences.append(change["path"])
        for path in consequences:
            values = self.world.values(env, path)
            if all(v is MISSING for v in values):
                continue
            expected = self.expected(values)
            if wild(expected):
                continue
            self._add(
                f"{env}:{path} = {short(expected)} (a consequence of the work)",
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
                k for k in members if member(path, k) in changed_records or member(path, k) in distractors
            }
            keep = [k for k in members if k not in skip]
            if keep:
                spec: dict[str, Any] = {"except": sorted(skip)}
                free = [f"/{escape_token(name)}" for name in book.free_fields(collection)]
                if free:
                    spec["ignore"] = free
                by_key = {k: ig for k in keep if (ig := self._record_ignore(env, member(path, k)))}
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
        collection, _, _ = split_path(record + "/x")
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
