"""A file the user asks for at the end of a Claw task, whose content the verifier parses.

Claw agents live in a workspace; a task that never needs it trains nothing about it. After
the work of a chain, the user may ask for a small handover file: a JSON object with named
keys, a CSV with one row per item, or a Markdown section, holding values the agent can only
know from the work (the id of the record it created, the state a record ended in). The
reference writes it with ``write_file``; the verifier parses the file and checks each value,
whatever the formatting; a shell ``echo`` or a file tool are equally right.

Only values that do not move by themselves are asked for (record ids the chain created,
fields of a record it changed): :class:`Request` names the state path of each, and the
verifier synthesizer refuses a request whose value a correct run could end up with
differently. In a chain that crosses environments, values from the other environment are
preferred, so the file carries the work of one environment into the other's workspace.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.pointer import unescape_token
from envcraft.core.state import diff
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.run import GoldenRun
from envcraft.tasks.phrasing.phrasebook import is_time, join_words, phrasebook
from envcraft.tasks.values.args import flatten
from envcraft.tasks.verifier.checks import FileRequest
from envcraft.tasks.verifier.runtime import norm_cell

FOLDERS = ("reports", "handover", "notes")
# why a person wants the values in a file of that folder: what makes the request a need, not a
# step ("put the id of the new booking in handover/status.json for the next shift")
PURPOSES = {"reports": "for the report", "handover": "for the next shift", "notes": "for my notes"}
SLUGS = ("summary", "handover", "result", "status")
MAX_ITEMS = 3


@dataclass
class Item:
    key: str
    value: str | int
    what: str  # how the user describes it ("the id of the new return")
    env: str
    path: str  # where the value lives in the final state (a JSON pointer)
    call: int | None  # the call whose result shows it, if one does
    result_path: str | None


@dataclass
class Request:
    """The file step: the reference call, what the verifier checks, and the user's sentence."""

    call: GoldenCall
    file: FileRequest
    clause: str
    items: list[Item]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.file.to_json(),
            "items": [{"key": i.key, "env": i.env, "state_path": i.path, "what": i.what} for i in self.items],
        }


def request_file(
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    names: Mapping[tuple[str, str], str],
    rng: random.Random,
    carry: bool = False,
) -> Request | None:
    """A file request for this run (None: no Claw environment, or nothing worth reporting).

    ``names`` maps (env, record key) to how the turns named a record. With ``carry``, the first
    value must come from an environment other than the one whose file tool writes the file
    (a crossing chain carries it across); None when there is no such value."""
    claw = next((c.env for c in run.calls if packages[c.env].kind == "claw"), None)
    if claw is None:
        claw = next((e for e, p in packages.items() if p.kind == "claw"), None)
    if claw is None:
        return None
    items = _items(run, packages, names)
    if carry:
        items.sort(key=lambda i: i.env == claw)
        if not items or items[0].env == claw:
            return None
    unique: dict[str, Item] = {}
    for item in items:
        unique.setdefault(item.key, item)  # one value per key: the file must say which is which
    items = list(unique.values())
    if not items:
        return None
    items = items[: rng.randint(1, min(MAX_ITEMS, len(items)))]
    fmt = rng.choices(("json", "csv", "markdown"), weights=(5, 3, 2))[0]
    if fmt == "json" and any(type(i.value) is int for i in items):
        fmt = "csv"  # 41 and "41" are two JSON values: a number is asked for in a text format
    ext = {"json": "json", "csv": "csv", "markdown": "md"}[fmt]
    taken = set(run.final_files)
    path = ""
    for _ in range(10):
        path = f"{rng.choice(FOLDERS)}/{rng.choice(SLUGS)}.{ext}"
        if path not in taken:
            break
    else:
        return None
    content, expected, clause = _render(fmt, path, items)
    source = next((i for i in items if i.call is not None), None)
    label = f"embed:{source.call}.{source.result_path}" if source is not None else "user"
    call = GoldenCall(
        claw, "write_file", {"path": path, "content": content}, {"path": "user", "content": label}, {}
    )
    sources = tuple((i.env, i.path) for i in items)
    labels = tuple(i.what for i in items)
    return Request(call, FileRequest(path, fmt, expected, sources, labels), clause, items)


def _back_references(
    run: GoldenRun, packages: Mapping[str, EnvPackage], names: Mapping[tuple[str, str], str]
) -> dict[tuple[str, str], str]:
    """How the closing ask refers back to a record the work's turns named ("that run"): where
    it is the only record of its kind the calls name or the work made, and a step that changed
    something names it (so a turn asked about it). A person who said "the run of the Orders ETL
    (eu) workflow submitted on January 5 at 05:45" once does not say it again to ask for its
    status."""
    kinds: dict[tuple[str, str], set[str]] = {}  # the S0 records each call names, by kind
    acted: set[tuple[str, str]] = set()
    for i, call in enumerate(run.calls):
        book, state = phrasebook(packages[call.env]), run.initial[call.env]
        named = [
            (collection, value)
            for _, value in flatten(call.args)
            if isinstance(value, str) and (collection := book.collection_of(state, value)) is not None
        ]
        changed = call.ok and run.changed_by(i)
        for collection, key in [*named, *book.keyed_by_args(state, call.args)]:
            kinds.setdefault((call.env, collection), set()).add(key)
            if changed:
                acted.add((call.env, key))
    for (env, collection), keys in kinds.items():  # a record the work made is of the kind too
        keys |= set(run.final[env].get(collection) or {}) - set(run.initial[env].get(collection) or {})
    return {
        (env, key): f"that {phrasebook(packages[env]).entity(collection).noun}"
        for (env, collection), keys in kinds.items()
        for key in keys
        if len(keys) == 1 and (env, key) in acted and (env, key) in names
    }


def _items(
    run: GoldenRun, packages: Mapping[str, EnvPackage], names: Mapping[tuple[str, str], str]
) -> list[Item]:
    back = _back_references(run, packages, names)
    found: list[Item] = []
    seen: set[str] = set()
    for env, before in run.initial.items():
        book = phrasebook(packages[env])
        after = run.final[env]
        for collection in book.collections:
            if book.is_log(collection):
                continue
            old = before.get(collection) or {}
            fresh = [k for k in after.get(collection) or {} if k not in old]
            noun = book.entity(collection).noun
            for key in fresh[:1] if len(fresh) == 1 else []:
                call, where = _shown_in(run, env, key)
                item = Item(
                    f"new_{_slug(noun)}",
                    key,
                    f"the id of the new {noun}",
                    env,
                    f"/{collection}/{key}",
                    call,
                    where,
                )
                found.append(item)
                seen.add(key)
        for change in diff(before, after):
            parts = change["path"].split("/")
            if len(parts) != 4 or change["op"] != "changed":
                continue
            collection, key, field_name = parts[1], unescape_token(parts[2]), parts[3]
            value = change["after"]
            if (
                collection not in book.collections
                or book.is_log(collection)
                or (env, key) not in names
                or not _reportable(value)
                or field_name in book.free_fields(collection)
                or key in seen
            ):
                continue
            noun = book.entity(collection).noun
            record = back.get((env, key)) or names[(env, key)]
            what = f"the {book.label(collection, field_name)} of {record} afterwards"
            call, where = _shown_in(run, env, value)
            found.append(Item(f"{_slug(noun)}_{field_name}", value, what, env, change["path"], call, where))
            seen.add(key)
    return found


def _reportable(value: Any) -> bool:
    """A changed field a report may give: a short code ("drained") or a whole number (a
    partition's position after the batch: what the work left, read back by the agent); never a
    time, a flag or prose."""
    if type(value) is int:
        return True
    return isinstance(value, str) and 0 < len(value) <= 24 and not is_time(value) and " " not in value


def _shown_in(run: GoldenRun, env: str, value: str | int) -> tuple[int | None, str | None]:
    for i, call in enumerate(run.calls):
        if call.env != env or not call.ok:
            continue
        for path, leaf in flatten(call.result):
            if leaf == value and type(leaf) is type(value):
                return i, path
    return None, None


def _slug(noun: str) -> str:
    return "_".join(noun.lower().split())


def _render(fmt: str, path: str, items: list[Item]) -> tuple[str, Any, str]:
    """The file's content as the reference writes it, its expected form, and the sentence that
    asks for it the way a person hands over a place to put things: what goes in, where and why,
    then the shape ("Finally, put the id of the new message in handover/result.json for the
    next shift, as a JSON object with the key “new_message”.")."""
    whats = join_words([i.what for i in items])
    keys = join_words([f"“{i.key}”" for i in items])
    many = len(items) > 1
    why = PURPOSES.get(path.split("/")[0])
    where = f"{path} {why}" if why else path
    if fmt == "json":
        content = json.dumps({i.key: i.value for i in items}, indent=2) + "\n"
        expected: dict[str, Any] = {i.key: i.value for i in items}  # these keys, no invented ones
        under = f"the keys {keys}" if many else f"the key {keys}"
        return content, expected, f"Finally, put {whats} in {where}, as a JSON object with {under}."
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["item", "value"])
        writer.writerows([i.key, i.value] for i in items)
        rows = [[norm_cell(i.key), norm_cell(str(i.value))] for i in items]
        expected = {"header": ["item", "value"], "rows": rows, "exact": True}  # no invented row
        named = f"the items {keys}" if many else f"the item {keys}"
        each = "a row each" if many else "a row"
        return (
            out.getvalue(),
            expected,
            f"Finally, log {whats} in {where}, {each} under the columns item and value ({named}).",
        )
    body = "\n".join(f"- {i.key}: {i.value}" for i in items)
    content = f"# Summary\n\n## Result\n{body}\n"
    expected = {"result": [str(i.value) for i in items]}
    return content, expected, f"Finally, write up {whats} in {where}, under a “## Result” heading."
