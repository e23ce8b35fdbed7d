"""Facts that live only in the workspace: a value the user would state, moved into a file.

A Claw agent works in a workspace of notes, logs and spreadsheets; a task whose every fact
sits in the user's message never makes it read one. :func:`hide_in_file` takes a record the
chain acts on that the user would have named (the order, the host, the note), writes it into
a realistic workspace file among look-alike lines about its siblings (a handoff note where
one item is flagged, a log where one entry is escalated, a CSV where one row is urgent), and
lets the user point at the file and the condition instead ("the order that the handoff note
in notes/handoff.md flags for action"). The reference reads the file before the first call
that needs the record, and every argument that carried the record is labelled
``file:<path>`` (see :class:`envcraft.tasks.format.model.Source`).

The lines name only real records of S0 with their declared names, and what they add (a
priority, a flag, a shift log) is nowhere in the environment's state, so no line contradicts
the world. The verifier is untouched: the goals stay the effects on the flagged record, and
an agent that acts on a sibling the file also lists fails them (the ``file_decoy`` policy of
:mod:`envcraft.tasks.validation.adversarial` proves it for every task that carries a file fact).
"""

from __future__ import annotations

import csv
import io
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from envcraft.core.clock import iso
from envcraft.core.package import EnvPackage
from envcraft.core.state import diff
from envcraft.tasks.format.model import GoldenCall, Source
from envcraft.tasks.golden.choose import scalars
from envcraft.tasks.golden.run import GoldenRun, keep_calls, replay
from envcraft.tasks.phrasing.intents import FREE_TEXT_PARAMS
from envcraft.tasks.phrasing.phrasebook import Phrasebook, humanize, phrasebook
from envcraft.tasks.phrasing.words import a
from envcraft.tasks.values.args import StateIndex, flatten, user_values

MIN_DECOYS, MAX_DECOYS = 1, 4
FORMATS = ("note", "log", "csv")  # a record to act on: one line of several flagged
VALUE_FORMATS = ("csv", "note")  # a value to pass: one row per record, the named record's row
P_VALUE = 0.4  # chance to hide a value rather than the record, when both are possible


@dataclass
class FileFact:
    """One record the user points at through a workspace file (stored in ``provenance``)."""

    env: str  # the environment holding the record
    collection: str  # the record's collection (kind "value": the collection of the row's record)
    value: Any  # what the agent must read from the file: the record's key, or the value to pass
    path: str  # the workspace file
    format: str  # note | log | csv
    pointer: str  # how the user points at it, as the turns say it (the lead, where that is said)
    decoys: list[Any]  # what the file also lists and must not be used: sibling records, other values
    read_call: int  # the reference call that reads the file
    kind: str = "record"  # record: the record to act on; value: a value to pass for a named record
    rows: list[str] = field(default_factory=list)  # kind "value": the records listed, the named one first
    row_field: str | None = None  # kind "value": rows name records by this field (a title), not by key
    # kind "record": the pointer as a sentence of its own, said before the work on "that <noun>"
    # ("The handoff note in shift/escalation.md flags a recipe as needing action"); not stored
    lead: str = ""

    def locate(self, calls: list[GoldenCall]) -> None:
        """Find the read again in ``calls`` (a later stage may insert calls before it)."""
        self.read_call = next(
            i for i, c in enumerate(calls) if c.tool == "read_file" and c.args.get("path") == self.path
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "env": self.env,
            "collection": self.collection,
            "value": self.value,
            "path": self.path,
            "format": self.format,
            "pointer": self.pointer,
            "decoys": self.decoys,
            "read_call": self.read_call,
            "rows": self.rows,
            "row_field": self.row_field,
        }


@dataclass(frozen=True)
class RecordCandidate:
    call: int  # the first call that names the record
    env: str
    collection: str
    value: str
    decoys: tuple[str, ...]


def hide_in_file(
    run: GoldenRun, packages: Mapping[str, EnvPackage], rng: random.Random
) -> tuple[GoldenRun, FileFact] | None:
    """The run with one user-stated record moved into a new workspace file and read from there,
    and what was hidden; None when the run has no Claw environment, no such record with enough
    siblings to list beside it, or the run no longer replays unchanged."""
    claw = next((e for e in dict.fromkeys(c.env for c in run.calls) if packages[e].kind == "claw"), None)
    if claw is None:
        return None
    records, values = record_candidates(run, packages), _value_candidates(run, packages, rng)
    if not records and not values:
        return None
    pick: RecordCandidate | _ValueCandidate
    if values and (not records or rng.random() < P_VALUE):
        pick = rng.choice(values)
        fmt = rng.choice(VALUE_FORMATS)
    else:
        pick = rng.choice(records)
        fmt = rng.choice(FORMATS)
    path = _fresh_path(fmt, phrasebook(packages[pick.env]).entity(pick.collection).noun, run.files, rng)
    if path is None:
        return None
    decoys = list(pick.decoys[: rng.randint(MIN_DECOYS, min(MAX_DECOYS, len(pick.decoys)))])
    if isinstance(pick, _ValueCandidate):
        content, pointer = _render_values(fmt, path, pick, len(decoys), run, packages, rng)
        lead = ""
    else:
        content, pointer, lead = _render(fmt, path, pick, decoys, run, packages, rng)
    read = GoldenCall(claw, "read_file", {"path": path}, {"path": "user"}, {})
    calls = shifted(run.calls, pick.call)
    if isinstance(pick, _ValueCandidate):
        calls[pick.call].provenance[pick.arg] = f"file:{path}"
    else:
        calls = [relabel(c, pick.value, f"file:{path}") for c in calls]
    calls.insert(pick.call, read)
    again = replay(calls, packages, run.initial, {**run.files, path: content})
    if again is None or not again.calls[pick.call].ok:
        return None
    again = without_idle_reads(again, packages, keep=pick.call)
    if again is None:
        return None
    at = next(i for i, c in enumerate(again.calls) if c.tool == "read_file" and c.args == read.args)
    if isinstance(pick, _ValueCandidate):
        rows = [pick.row, *pick.rows[: len(decoys)]]
        return again, FileFact(
            pick.env,
            pick.collection,
            pick.value,
            path,
            fmt,
            pointer,
            decoys,
            at,
            "value",
            rows,
            pick.row_field,
        )
    return again, FileFact(pick.env, pick.collection, pick.value, path, fmt, pointer, decoys, at, lead=lead)


def record_candidates(run: GoldenRun, packages: Mapping[str, EnvPackage]) -> list[RecordCandidate]:
    """Records of S0 whose first use in the chain is a value the user states or one found in a
    lookup's result (not a record an earlier step made or changed), that a successful step
    changes, in a collection with at least ``MIN_DECOYS`` siblings the chain never names and none
    of whose records a colleague's note already points at (the turn would say "that warehouse"
    of two warehouses: "move 5 units from that warehouse to that warehouse")."""
    named = {str(v) for c in run.calls for v in scalars(c.args)}
    cited = {
        (c.env, phrasebook(packages[c.env]).collection_of(run.initial[c.env], v))
        for c in run.calls
        for a, v in c.args.items()
        if c.source(a).kind == "cited"
    }
    # a value a call passes inside a list ("count SKU-17755 and SKU-10036") is said there: a
    # pointer to it would leave "(for that SKU)" beside the list that names it
    listed = {
        (c.env, v) for c in run.calls for a in c.args.values() if isinstance(a, list) for v in scalars(a)
    }
    seen: set[tuple[str, str]] = set()
    found: list[RecordCandidate] = []
    for i, call in enumerate(run.calls):
        book = phrasebook(packages[call.env])
        state = run.initial[call.env]
        for arg, value in call.args.items():
            if not isinstance(value, str) or (call.env, value) in seen or (call.env, value) in listed:
                continue
            seen.add((call.env, value))
            if not _from_user_or_lookup(call, arg, run):
                continue
            collection = book.collection_of(state, value)
            if collection is None or book.is_log(collection) or (call.env, collection) in cited:
                continue
            if not any(
                c.ok and not c.expected_error and run.changed_by(j) and value in c.args.values()
                for j, c in enumerate(run.calls)
            ):
                continue  # the record must be one the job changes (not only a planned refusal's)
            noun = book.entity(collection).noun
            if not all(
                _pointer_style(packages[c.env], c.tool, a, noun) == "plain"
                for c in run.calls
                for a, v in c.args.items()
                if v == value and c.env == call.env
            ):
                continue
            decoys = _look_alikes(state[collection], value, named)
            if len(decoys) >= MIN_DECOYS:
                found.append(RecordCandidate(i, call.env, collection, value, tuple(decoys)))
    return found


@dataclass(frozen=True)
class _ValueCandidate:
    call: int  # the call that passes the value
    env: str
    arg: str
    value: Any
    collection: str  # the collection of the record the same call names (the file's row key)
    row: str
    rows: tuple[str, ...]  # siblings of that record: the file's other rows
    decoys: tuple[Any, ...]  # the values those rows give (one each, none equal to ``value``)
    row_field: str | None = None  # rows keyed by this field's text (a new record's title), not by key


TITLE_FIELDS = ("title", "name", "subject")


def _row_of(
    call: GoldenCall, book: Phrasebook, state: Mapping[str, Any], named: set[str]
) -> tuple[str, str | None, str, list[str]] | None:
    """What the file's rows are keyed by for this call: a record of S0 the call names (its
    siblings are the other rows), else the title the user gives a new record (the titles of
    the records of S0 in the collection that has such titles are the other rows)."""
    for arg, value in call.args.items():
        if isinstance(value, str) and call.source(arg).kind == "user":
            collection = book.collection_of(state, value)
            if collection is not None and not book.is_log(collection):
                return value, None, collection, _look_alikes(state[collection], value, named)
    for arg in TITLE_FIELDS:
        value = call.args.get(arg)
        if not isinstance(value, str) or call.source(arg).kind != "user":
            continue
        for collection in book.collections:
            keyed = {k: r for k, r in (state.get(collection) or {}).items() if isinstance(r, dict)}
            records = list(keyed.values())
            # not the title of a record the job names: "that action item" would point at it too
            taken = {str(r.get(arg)) for k, r in keyed.items() if k in named}
            titles = sorted(
                {str(r[arg]) for r in records if isinstance(r.get(arg), str)} - {value} - named - taken
            )
            if titles and not book.is_log(collection):
                return value, arg, collection, titles[:MAX_DECOYS]
    return None


def _value_candidates(
    run: GoldenRun, packages: Mapping[str, EnvPackage], rng: random.Random
) -> list[_ValueCandidate]:
    """User-stated values of a changing call that the file can give for the record the same
    call names: a short code, a date or a number that occurs once in the chain, not a record
    key, not free text and not a choice from a fixed list (a goal phrase says those in words)."""
    counts = Counter(repr(v) for c in run.calls for v in scalars(c.args))
    named = {str(v) for c in run.calls for v in scalars(c.args)}
    found: list[_ValueCandidate] = []
    for i, call in enumerate(run.calls):
        if not call.ok or call.expected_error or not run.changed_by(i):
            continue
        book = phrasebook(packages[call.env])
        state = run.initial[call.env]
        props = packages[call.env].env_class.tools[call.tool].parameters["properties"]
        keyed = _row_of(call, book, state, named)
        if keyed is None:
            continue
        row, row_field, collection, siblings = keyed
        for arg, value in call.args.items():
            if arg == row_field:
                continue
            prop = props.get(arg, {})
            if (
                call.source(arg).kind != "user"
                or not _passable(arg, value, prop)
                or _pointer_style(packages[call.env], call.tool, arg, humanize(arg)) is None
                or counts[repr(value)] != 1
                or not _survives(run, call.env, value)
                or book.collection_of(state, value) is not None
            ):
                continue
            index = StateIndex.build(state, run.files)
            others = [
                v
                for v in user_values(arg, prop, index, random.Random(f"{i}:{arg}"), limit=8)
                if type(v) is type(value) and v != value and str(v) not in named
            ]
            others = list(dict.fromkeys(others))[: len(siblings)]
            if len(others) >= MIN_DECOYS:
                found.append(
                    _ValueCandidate(
                        i,
                        call.env,
                        arg,
                        value,
                        collection,
                        row,
                        tuple(siblings[: len(others)]),
                        tuple(others),
                        row_field,
                    )
                )
    rng.shuffle(found)
    return found


def _pointer_style(package: EnvPackage, tool: str, arg: str, words: str) -> str | None:
    """How the tool's goal phrase can take a pointer where it names ``arg``: ``"plain"`` ("the
    owner listed for ... in ..."), ``"as"`` after the value's own word ("due {due}": "due as
    listed ..."),
    None inside a noun phrase ("the {topic} topic", "the {column} column"), where none reads well."""
    goal = package.env_class.tools[tool].annotations.goal
    found = re.search(r"(\S*)\s*\{" + re.escape(arg) + r"(?:[:|][^}]*)?\}\s*([^\s\[\],;]*)", goal or "")
    if found is None:
        return "plain"  # not in the phrase: the plan says it as a fact
    before, after = found.group(1).lower(), found.group(2).lower().replace("(s)", "")
    tokens = words.lower().split()
    if before in ("the", "a", "an") or any(after and after.startswith(t[:5]) for t in tokens):
        return None
    return "as" if before in tokens else "plain"


def _survives(run: GoldenRun, env: str, value: Any) -> bool:
    """Whether the value is in what the job changed, at its end (a later step may overwrite it:
    an owner set and then reassigned; then the value is no goal, and no file fact)."""
    return any(
        leaf == value
        for change in diff(run.initial[env], run.final[env])
        for _, leaf in flatten(change.get("after"))
    )


def _passable(arg: str, value: Any, prop: Mapping[str, Any]) -> bool:
    if "enum" in prop or prop.get("type") not in ("string", "integer", "number"):
        return False
    if isinstance(value, bool) or not isinstance(value, str | int):
        return False
    if isinstance(value, int):
        return abs(value) >= 2  # 0 and 1 are flags more than amounts
    return not FREE_TEXT_PARAMS.search(arg) and " " not in value and 3 <= len(value) <= 40


def _look_alikes(records: Mapping[str, Any], key: str, named: set[str]) -> list[str]:
    """Siblings of ``key`` the chain never names, most alike first (they meet the same
    preconditions, so acting on one instead is a plausible and effective mistake)."""
    target = records[key] if isinstance(records[key], dict) else {}
    others = [k for k in sorted(records) if k != key and k not in named and isinstance(records[k], dict)]
    others.sort(key=lambda k: -sum(records[k].get(f) == v for f, v in target.items()))
    return others[:MAX_DECOYS]


def shifted(calls: list[GoldenCall], at: int) -> list[GoldenCall]:
    """The calls with every reference to call ``at`` or later moved one on (a call is inserted)."""
    out = []
    for call in calls:
        provenance = {}
        for name, label in call.provenance.items():
            source = Source.parse(label)
            if source.from_call and source.call is not None and source.call >= at:
                label = str(Source(source.kind, source.call + 1, source.path))
            provenance[name] = label
        out.append(
            GoldenCall(call.env, call.tool, call.args, provenance, call.result, {}, call.expected_error)
        )
    return out


def _from_user_or_lookup(call: GoldenCall, arg: str, run: GoldenRun) -> bool:
    """Stated by the user, or read from the result of a call that changed nothing."""
    source = call.source(arg)
    if source.kind == "user":
        return True
    return source.kind == "derived" and source.call is not None and not run.changed_by(source.call)


def relabel(call: GoldenCall, value: str, label: str) -> GoldenCall:
    """Every argument that carries ``value`` as a whole, stated or read from a result, now comes
    from where ``label`` says (a file, a note; ``call`` is a fresh copy from :func:`shifted`).
    Values read from results are relabelled too: the turns would otherwise name the record where
    it is used again, and a name that holds the id ("the auth-service service") would state it."""
    for name, arg in call.args.items():
        if arg == value and call.source(name).kind in ("user", "derived"):
            call.provenance[name] = label
    return call


def without_idle_reads(run: GoldenRun, packages: Mapping[str, EnvPackage], keep: int) -> GoldenRun | None:
    """The run without lookups whose results no call uses any more (the file gives the record
    now), replayed; ``keep`` is the file read."""
    used = {s.call for c in run.calls for a in c.args if (s := c.source(a)).from_call and s.call is not None}
    idle = {
        i
        for i, c in enumerate(run.calls)
        if i != keep and i not in used and not run.changed_by(i) and not c.expected_error
    }
    if not idle:
        return run
    return keep_calls(run, [i for i in range(len(run.calls)) if i not in idle], packages)


# Top-level folders of their own: an environment's tools may scan the folders its workspace
# already has (notes/, data/, logs/<host>/), so a new file never goes into one of those.
FOLDERS = {
    "note": ("handover", "inbox", "shift"),
    "log": ("logs", "watch", "ops-logs"),
    "csv": ("worklists", "exports", "tracking"),
}


def _fresh_path(fmt: str, noun: str, files: Mapping[str, str], rng: random.Random) -> str | None:
    """A new file in a folder the workspace does not have yet (None when every one is taken)."""
    taken = {p.split("/", 1)[0] for p in files}
    folders = [f for f in FOLDERS[fmt] if f not in taken]
    if not folders:
        return None
    slug = "-".join(noun.lower().split())
    stems = {
        "note": ("handoff", "escalation", "shift-notes"),
        "log": (f"{slug}-watch", "alerts", "followups"),
        "csv": (f"{slug}-followups", f"{slug}-review", "worklist"),
    }[fmt]
    ext = {"note": "md", "log": "log", "csv": "csv"}[fmt]
    return f"{rng.choice(folders)}/{rng.choice(stems)}.{ext}"


def bare_name(book: Phrasebook, state: Mapping[str, Any], collection: str, key: str) -> str:
    """The record's declared name without its details and the leading "the <noun>" (empty if it
    only repeats the id): what a colleague writes beside the id. A name that goes on with "of"
    or "for" keeps its noun: "TRP-40508 (the trip of driver Elena Lopez for James Lopez's ride
    request)", never "(of driver Elena Lopez (DRV-210) for James Lopez (+1-555-242-2563)'s ...)"
    (round 44, R3)."""
    noun = book.entity(collection).noun
    text = book.short_name(state, collection, key) or ""
    rest = text.removeprefix(f"the {noun} ").removeprefix("the ")
    if rest.split(" ", 1)[0] in _LINKING:
        rest = text
    return "" if key in rest else rest


_LINKING = frozenset({"of", "for", "on", "in", "at", "from", "to", "by", "with"})


def record_label(book: Phrasebook, state: Mapping[str, Any], collection: str, key: str) -> str:
    """How a note or a worklist names a record: its id, with its name where that adds one."""
    name = bare_name(book, state, collection, key)
    return f"{key} ({name})" if name else key


_CALM_NOTES = (
    "no action needed, just keeping an eye on it",
    "FYI only, already discussed",
    "waiting on the other side, leave it for now",
    "checked earlier, nothing to do",
)
_CALM_LOGS = ("INFO  checked, nothing to do", "INFO  reviewed, no change needed", "DEBUG seen, left as is")
_CALM_PRIORITY = ("low", "normal")


def _render(
    fmt: str,
    path: str,
    pick: RecordCandidate,
    decoys: list[str],
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    rng: random.Random,
) -> tuple[str, str, str]:
    """The file's content (the record among its look-alikes, one line flagged), the user's
    pointer to the flagged line, and the pointer as a sentence of its own."""
    book = phrasebook(packages[pick.env])
    state = run.initial[pick.env]
    noun = book.entity(pick.collection).noun
    keys = [pick.value, *decoys]
    rng.shuffle(keys)

    def name(key: str) -> str:
        return bare_name(book, state, pick.collection, key)

    def label(key: str) -> str:
        return record_label(book, state, pick.collection, key)

    if fmt == "note":
        lines = ["# Shift handoff", "", "Open items from the last shift:", ""]
        for key in keys:
            status = "**needs action today**" if key == pick.value else rng.choice(_CALM_NOTES)
            lines.append(f"- {noun} {label(key)}: {status}")
        return (
            "\n".join(lines) + "\n",
            f"the {noun} that the handoff note in {path} flags as needing action",
            f"the handoff note in {path} flags {a(noun)} as needing action",
        )
    if fmt == "log":
        entries: list[tuple[int, int, str]] = []  # (minute, second, text): minutes count up
        gap = minute = rng.randint(0, 20)
        for key in keys:
            minute += rng.randint(3, 17)
            second = rng.randint(0, 59)
            if key == pick.value:
                entries.append((minute, second, f"WARN  {noun}={key} escalated, follow-up required"))
            else:
                entries.append((minute, second, f"{rng.choice(_CALM_LOGS)} {noun}={key}"))
        # The last entry lies gap + 1 minutes before the earliest clock of the task's envs (a log
        # written after "now" contradicts the session).
        start = min(p.clock.base_time for p in packages.values())
        last = entries[-1][0]
        lines = [
            f"{iso(start - timedelta(minutes=last - m + gap + 1, seconds=-sec))} {text}"
            for m, sec, text in entries
        ]
        return (
            "\n".join(lines) + "\n",
            f"the {noun} that the escalated entry in {path} names",
            f"an entry in {path} says {a(noun)} was escalated",
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    column = "_".join(noun.lower().split())
    writer.writerow([column, "name", "priority"])
    for key in keys:
        priority = "urgent" if key == pick.value else rng.choice(_CALM_PRIORITY)
        writer.writerow([key, name(key), priority])
    return out.getvalue(), f"the {noun} marked urgent in {path}", f"{a(noun)} is marked urgent in {path}"


def _render_values(
    fmt: str,
    path: str,
    pick: _ValueCandidate,
    count: int,
    run: GoldenRun,
    packages: Mapping[str, EnvPackage],
    rng: random.Random,
) -> tuple[str, str]:
    """A worklist that gives one value per record (the named record's is the one to pass, the
    others are its siblings'), and the user's pointer to it."""
    book = phrasebook(packages[pick.env])
    state = run.initial[pick.env]
    noun = book.entity(pick.collection).noun
    rows = [(pick.row, pick.value), *zip(pick.rows[:count], pick.decoys[:count], strict=True)]
    rng.shuffle(rows)
    words = humanize(pick.arg)
    pointer = f"the {words} listed for that {noun} in {path}"
    if _pointer_style(packages[pick.env], run.calls[pick.call].tool, pick.arg, words) == "as":
        # the value's own word comes first, maybe before the record ("remove rule {rule_no} from
        # {recipe_id}"): "that cleaning recipe" would point ahead (round 51)
        pointer = f"as listed in {path}"

    def name(key: str) -> str:
        return bare_name(book, state, pick.collection, key)

    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        if pick.row_field is not None:
            writer.writerow([pick.row_field, pick.arg])
            writer.writerows([key, value] for key, value in rows)
        else:
            writer.writerow(["_".join(noun.lower().split()), "name", pick.arg])
            writer.writerows([key, name(key), value] for key, value in rows)
        return out.getvalue(), pointer
    lines = ["# Agreed changes", "", f"What we settled on per {noun}:", ""]
    for key, value in rows:
        label = record_label(book, state, pick.collection, key)
        if pick.row_field is not None:  # a new record: named by its title
            label = f"“{key}”"
        lines.append(f"- {noun} {label}: {words} {value}")
    return "\n".join(lines) + "\n", pointer
