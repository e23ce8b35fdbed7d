"""What the verifier synthesizer builds on: the check list, the golden run's world, the shared helpers.

:class:`CheckList` accumulates checks under unique readable names; :class:`World` holds the
golden run and the correct variant runs (shifted, idle, clock-only) whose differences show what
moves by itself; :func:`pattern_of` turns the values those runs show into the value a check
accepts. :mod:`envcraft.tasks.verifier.goals` and :mod:`envcraft.tasks.verifier.guards` add the
checks; :mod:`envcraft.tasks.verifier.synthesis` runs them in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from envcraft.core.package import EnvPackage, load_package
from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.repository import thaw
from envcraft.core.state import MISSING, diff, get_path
from envcraft.sandbox.profiles import SYSTEM_TOOLS
from envcraft.tasks.format.model import Source
from envcraft.tasks.graphs.effects import tool_effects
from envcraft.tasks.phrasing.phrasebook import Phrasebook, humanize, is_time, phrasebook
from envcraft.tasks.phrasing.render import situations
from envcraft.tasks.phrasing.words import QUOTED
from envcraft.tasks.play.execute import (
    brisk_runs,
    clock_run,
    late_runs,
    recovered_runs,
    run_calls,
    settled_runs,
    shifted_runs,
    tail_runs,
)
from envcraft.tasks.play.outcome import Action, Outcome
from envcraft.tasks.values.args import NAME_KEYS, singular, value_at
from envcraft.tasks.verifier import runtime as vr

FILE_FORMATS = {".json": "json", ".csv": "csv", ".tsv": "tsv"}
NAME_LIMIT = 60
ID_LIKE = re.compile(r"^[A-Za-z]+[-_]?\d+$")
# patterns whose values may be ids
ID_HOLDERS = ("$fields", "$items", "$holds", "$members", "has", "lacks", "within")
_NAME_WORD = re.compile(r"[^\W\d_]{2,}")
ID_SHAPE = re.compile(r"[A-Za-z]+[-_]?\d+")  # an id an environment numbers: a prefix and digits
MAX_CHOICES = 4
SEQUENCE_FIELDS = frozenset({"seq", "sequence", "position", "version", "revision"})
SEQUENCE_SUFFIXES = ("_no", "_seq", "_number")
# Arguments that carry a message the user dictated ($says); other free text (a name, a title, a
# reason) is $text. Both read the words within reason (see the runtime's docstring).
BODY_PARAMS = frozenset({"body", "comment", "memo", "message", "note", "summary", "text"})
# Other free text a short attribution may follow ("plans changed (per Ximena)"): a reason or a
# note, not a name or a title.
REASON_WORDS = ("reason", "note", "comment", "remark", "why", "cause")
# A mail header that lists addresses: read by address (display names optional).
HEADER = re.compile(r"((?:To|Cc|Bcc|From|Reply-To): )(.*@.*)", re.IGNORECASE)


@dataclass(frozen=True)
class FileRequest:
    """A file the user asks for by its content: ``expected`` in the runtime's file-check form;
    ``sources`` are the (env, state path) where each value asked for lives."""

    path: str
    format: str  # json | csv | markdown
    expected: Any
    sources: tuple[tuple[str, str], ...] = ()
    labels: tuple[str, ...] = ()  # how the user describes each asked value ("the id of the new return")

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "expected": self.expected}


def guard_on_time(check: dict[str, Any]) -> None:
    """A turn's goal the end of the run still shows, made a guard that the work was done in time
    (``on_time``: the runtime also passes it when the turn ended as the run ends, so a value
    written wrong on time costs its goal once, not the goal and a halving)."""
    check["role"] = "guard"
    check["name"] += " (on time)"
    check["on_time"] = True


def asked_values(request: FileRequest) -> list[str]:
    """The values a table or a section request asks for, as the user would write them."""
    return vr.asked_texts(request.expected, request.format)


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


_WRITTEN_HEADING = re.compile(r"(?<![#\w])(#{1,6}) +([^\W\d_][^”\"’'\n]*?)\s*[”\"’']")


def written_headings(said: Sequence[str]) -> dict[str, int]:
    """The Markdown headings the user wrote out in quotes ("a “## Result” section"), by their
    lower-cased names: the level asked is part of what was asked."""
    return {name.lower(): len(hashes) for text in said for hashes, name in _WRITTEN_HEADING.findall(text)}


@dataclass
class World:
    """The golden run with its correct variants, and what in them moves without the agent."""

    golden: Outcome
    variants: list[Outcome]  # correct runs: shifted, recovered, settled, then tail replays
    books: dict[str, Phrasebook]
    turned: int = 2  # the variants that end each turn as the golden run's turns (not the tails)
    exogenous: dict[str, set[str]] = field(default_factory=dict)  # env -> paths the world changes
    exogenous_files: set[str] = field(default_factory=set)
    # env -> collection -> what looking at a record changes in it (see looking_changes)
    looked: dict[str, dict[str, dict[str, list[Any] | None]]] = field(default_factory=dict)
    # what inspecting a record writes down (a profile): excused only on the records the work
    # names, where a careful agent inspects before it acts ("Profile before cleaning"; round 53,
    # R3: 0.5), never on another (an unasked profile of the Q4 sheet; rounds 41-51: wrong)
    inspected: dict[str, dict[str, dict[str, list[Any] | None]]] = field(default_factory=dict)
    # env -> the [tool, parameter] calls that void a record the run created (see voiding_calls)
    voiders: dict[str, list[list[str]]] = field(default_factory=dict)
    # env -> the [tool, parameter] calls that give a made record consequences (see keeping_calls)
    keepers: dict[str, list[list[str]]] = field(default_factory=dict)
    # env -> its read-only tools, sorted: looking at a record moves nothing
    reads: dict[str, list[str]] = field(default_factory=dict)
    # env -> tool -> its optional text parameters that default to nothing (see empty_options)
    options: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    # the words the user said in the turns, with their forms (see user_words)
    said: frozenset[str] = frozenset()
    # the same of the turns up to each turn: what a text written in that turn may restate
    said_by_turn: list[frozenset[str]] = field(default_factory=list)
    # the words the user said outside the texts they dictated (“...”): their own framing; the
    # rest of a dictated text's words belong to the record it was dictated for
    framing: frozenset[str] = frozenset()
    # the acts of the environments' tools, by their first word ("cancel"; see acts_of)
    acts: frozenset[str] = frozenset()
    # env -> the fields that copy another kind of record's counter (see counter_copies)
    copies: dict[str, frozenset[str]] = field(default_factory=dict)
    # a Markdown heading the user wrote out, by its lower-cased name: its level ("## Result": 2)
    headings: dict[str, int] = field(default_factory=dict)
    # the runs where the world moves on its own: S0 left alone, the late and the idle-tail runs
    idle: list[Outcome] = field(default_factory=list)

    @classmethod
    def of(cls, golden: Outcome, said: Sequence[str] = ()) -> World:
        """The world of ``golden``; ``said`` holds the text of the user's turns."""
        packages = {env: load_package(path) for env, path in golden.packages.items()}
        books = {env: phrasebook(package) for env, package in packages.items()}
        tails = tail_runs(golden)
        # the correct runs aligned with the golden turns
        lookups = {env: pure_lookups(package) for env, package in packages.items()}
        brisk = brisk_runs(golden, lookups)
        turned = [*shifted_runs(golden), *recovered_runs(golden), *settled_runs(golden), *brisk]
        acts = acts_of(packages.values())
        said = unsituated(said, list(packages))
        world = cls(
            golden,
            [*turned, *tails],
            books,
            turned=len(turned),
            said=user_words(said, acts),
            said_by_turn=[user_words(said[: turn + 1], acts) for turn in range(len(said))],
            framing=user_words([QUOTED.sub(" ", text) for text in said], acts),
            acts=acts,
            copies={env: counter_copies(state) for env, state in golden.initial.items()},
            headings=written_headings(said),
        )
        world.looked = looking_changes(golden, packages, books)
        world.inspected = looking_changes(golden, packages, books, inspecting=True)
        world.voiders = {env: found for env, package in packages.items() if (found := voiding_calls(package))}
        world.keepers = {env: keeping_calls(packages[env], world.voiders[env]) for env in world.voiders}
        world.options = {env: empty_options(package) for env, package in packages.items()}
        world.reads = {
            env: sorted(name for name, spec in package.env_class.tools.items() if spec.annotations.read_only)
            for env, package in packages.items()
        }
        clock = clock_run(golden)
        late = late_runs(golden)
        world.idle = [clock, *late, *tails]
        for env in golden.final:
            paths = {c["path"] for c in diff(golden.initial[env], clock.final[env])}
            for tail in tails:
                paths |= {c["path"] for c in diff(golden.final[env], tail.final[env])}
            start, end = golden.initial[env], golden.final[env]
            for run in late:  # only where the golden run left the state alone: the world's doing
                paths |= {
                    c["path"]
                    for c in diff(end, run.final[env])
                    if vr.same(get_path(start, c["path"]), get_path(end, c["path"]))
                }
            world.exogenous[env] = paths
        moved = [(golden.initial_files, clock.files)] + [(golden.files, t.files) for t in tails]
        for before, after in moved:
            world.exogenous_files |= {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
        return world

    def runs(self, turn: int | None = None) -> list[Outcome]:
        """The golden run and the correct variants that show ``turn``'s window (the shifted
        replays and the recovered runs; the tail runs differ from the golden one only after its
        last turn)."""
        return [self.golden, *(self.variants if turn is None else self.variants[: self.turned])]

    def values(self, env: str, path: str, turn: int | None = None) -> list[Any]:
        """The value at ``path`` in the golden run and every variant (MISSING where absent)."""
        return [get_path(states_at(run, turn).get(env, {}), path) for run in self.runs(turn)]

    def holds(self, env: str, path: str) -> bool:
        """Whether every correct run ends with what the golden one has at ``path``: the same
        record (a record path: it exists, whatever its timestamps) or the same value."""
        gold, *others = self.values(env, path)
        if path.count("/") == 2:
            return all(o is not MISSING for o in others)
        return not under_any(path, self.exogenous.get(env, set())) and all(vr.same(gold, o) for o in others)

    def took(self, env: str, path: str) -> list[Any] | None:
        """The values a field the world moves by itself takes in every run that shows it (S0, each
        turn's end and the end of the golden run and of every correct, late and idle run), when
        they are all choice words (a status: "open", "expired"); None for any other field (a
        time, a count, a text: it may reach values no run shows). A field that moves only as the
        clock says may become only what it became there: a request that expires is no request
        cancelled."""
        runs = [self.golden, *self.variants, *self.idle]
        seen = [get_path(self.golden.initial.get(env, {}), path)]
        turns = range(len(self.golden.turns))
        seen += [get_path(states_at(self.golden, t).get(env, {}), path) for t in turns]
        seen += [get_path(run.final.get(env, {}), path) for run in runs]
        if not all(isinstance(v, str) and CHOICE.fullmatch(v) for v in seen):
            return None
        return sorted(set(seen))

    def voiding(self, env: str) -> dict[str, Any]:
        """What a check of ``env``'s new records needs to leave out the ones the run voided or
        the world let lapse (the runtime's ``live``): the voiding calls, the calls after which a
        void no longer unmakes a record, and the read-only tools (a record that moved while only
        they named it moved by the world's doing: ``redone``)."""
        voided, reads = self.voiders.get(env), self.reads.get(env)
        kept = self.keepers.get(env) if voided else None
        return {
            **({"voided_by": voided} if voided else {}),
            **({"kept_by": kept} if kept else {}),
            **({"reads": reads} if reads else {}),
        }

    def moves(self, env: str, path: str) -> bool:
        """Whether a variant shows another value here, or the world changes it on its own."""
        if under_any(path, self.exogenous.get(env, set())):
            return True
        gold, *others = self.values(env, path)
        return any(not vr.same(gold, other) for other in others)


def empty_options(package: EnvPackage) -> dict[str, set[str]]:
    """Per tool, its optional text parameters whose default is nothing (``""`` or null, no
    enum): a memo, a comment, a reference an agent may add. A record field that only holds such
    a default because the reference did not pass it is not what the user asked for: an agent that
    writes a memo on a transfer did the asked transfer. (A number, a flag or a choice with a
    default of its own changes the work: a tip, a quantity, a priority stay pinned.)"""
    found: dict[str, set[str]] = {}
    for name, spec in package.env_class.tools.items():
        required = set(spec.parameters.get("required", []))
        found[name] = {
            param
            for param, schema in spec.parameters.get("properties", {}).items()
            if param not in required
            and isinstance(schema, dict)
            and schema.get("default", MISSING) in ("", None)
            and "enum" not in schema
            and schema.get("type", "string") in ("string", ["string", "null"])
        }
    return found


def voiding_calls(package: EnvPackage) -> list[list[str]]:
    """The ``[tool, parameter]`` calls that void a record: a tool declared to undo another
    (``undoes``) that consumes the kind of id the undone tool produces (``cancel_booking`` undoes
    ``book_class``, which produces a ``booking_id``: the booking it names is void, whatever its
    status is called). A record the run created and voided is no extra record: booking, cancelling
    and booking again is the work done once. (``remove_line`` undoes ``add_receipt_line``, which
    produces no journal: the journal it names stays live.)"""
    tools = package.env_class.tools
    found = []
    for name, spec in sorted(tools.items()):
        params = spec.parameters.get("properties", {})
        undone = [tools[u].annotations.produces for u in spec.annotations.undoes if u in tools]
        for kind in spec.annotations.consumes:
            if kind in params and any(kind in produced for produced in undone):
                found.append([name, kind])
    return found


def keeping_calls(package: EnvPackage, voiders: list[list[str]]) -> list[list[str]]:
    """The ``[tool, parameter]`` calls that give a record consequences a void cannot take back:
    a tool that writes state beyond the record's own collection (no read, no voiding call) and
    consumes the kind of id a voiding call names (``run_ready_jobs`` executes the jobs of a
    ``run_id``). Submitting a run and cancelling it is no run; submitting it, running a wave of
    its jobs and cancelling it leaves work done that nobody asked for. A call that edits only the
    record (a line staged in a journal, then rolled back with it) leaves nothing behind (round
    23, AC: a journal opened, given a line and rolled back cost half the reward)."""
    tools = package.env_class.tools
    effects = tool_effects(package.env_class)
    voiding = {tool for tool, _ in voiders}
    kinds = {kind for _, kind in voiders}
    return [
        [name, kind]
        for name, spec in sorted(tools.items())
        if not spec.annotations.read_only and name not in voiding
        for kind in spec.annotations.consumes
        if kind in kinds
        and kind in spec.parameters.get("properties", {})
        and _beyond(effects[name].writes, kind)
    ]


def _beyond(writes: Iterable[str], kind: str) -> bool:
    """Whether a tool writes state other than the collection of records of ``kind`` (``journals``
    of ``journal_id``) and the counters that number new records (``next_transfer``)."""
    own = kind.removesuffix("_id") + "s"
    return any(w != own and not w.startswith("next_") for w in writes)


def pure_lookups(package: EnvPackage) -> frozenset[str]:
    """The tools of ``package`` that only look: read-only, fetching nothing and writing nothing
    (a read that marks a message "seen" or applies the world's clock as it looks writes)."""
    effects = tool_effects(package.env_class)
    return frozenset(
        name
        for name, spec in package.env_class.tools.items()
        if spec.annotations.read_only is True
        and not spec.annotations.fetches
        and (name not in effects or not effects[name].writes)
    )


def looking_changes(
    golden: Outcome,
    packages: Mapping[str, EnvPackage],
    books: Mapping[str, Phrasebook],
    inspecting: bool = False,
) -> dict[str, dict[str, dict[str, list[Any] | None]]]:
    """What looking at a record changes in it: a read-only tool that marks what it showed (a
    message read gains the flag "seen"), or (``inspecting``) a tool that ``inspects`` it and
    writes down what it found (a dataset profiled gains its issues and ``profiled_sha``).
    Learned by looking, from S0, with every such tool that writes state: a read-only tool at one
    record of every collection, an inspecting one at each record (what it writes down depends on
    what it finds: a raw sheet becomes validated, a clean one already is): ``{env: {collection:
    {field path: the members a list gains, or None for a value that changes}}}``. Anything else
    a run changes on a record nobody asked about is the agent's doing."""
    found: dict[str, dict[str, dict[str, list[Any] | None]]] = {}
    for env, package in packages.items():
        effects = tool_effects(package.env_class)
        calls = []
        for name, spec in sorted(package.env_class.tools.items()):
            required = spec.parameters.get("required", [])
            writes = effects.get(name)
            looks = spec.annotations.inspects if inspecting else spec.annotations.read_only
            if not looks or writes is None or not writes.writes or len(required) != 1:
                continue
            for collection in books[env].collections:
                records = golden.initial[env].get(collection)
                if isinstance(records, dict) and records:
                    keys = sorted(records) if inspecting else [min(records)]
                    calls += [{"env": env, "tool": name, "args": {required[0]: key}} for key in keys]
        if not calls:
            continue
        looked = run_calls({env: package}, {env: golden.initial[env]}, golden.initial_files, [calls])
        for change in diff(golden.initial[env], looked.final[env]):
            marked, _, rest = split_path(change["path"])
            if marked is None or not rest:
                continue
            before, after = change.get("before"), change.get("after")
            fields = found.setdefault(env, {}).setdefault(marked, {})
            gained = (
                [m for m in after if m not in before]
                if isinstance(before, list) and isinstance(after, list)
                else None
            )
            known = fields.get(rest, [])
            # one path learned from several records: the members any of them gained
            fields[rest] = (
                None if gained is None or known is None else known + [m for m in gained if m not in known]
            )
    return found


def window(
    run: Outcome, turn: int | None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], dict[str, str]]:
    """(states before, states after, files before, files after) of one user turn's window of a
    run (from the end of the turn before), or of the whole run (``turn`` None)."""
    if turn is None:
        return run.initial, run.final, run.initial_files, run.files
    before = run.turns[turn - 1] if turn > 0 else None
    return (
        before.final if before else run.initial,
        run.turns[turn].final,
        before.files if before else run.initial_files,
        run.turns[turn].files,
    )


def states_at(run: Outcome, turn: int | None) -> dict[str, Any]:
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
        if kind == "number":
            return {"$any": "number"}  # a number correct runs disagree on: the clock's (a score, a fee)
        if kind == "str" and (all(is_time(v) for v in present) or all(ID_LIKE.match(v) for v in present)):
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


def generated(name: str, value: Any, asked: set[str]) -> bool:
    """Whether a record's field holds what the environment numbered, not what the user asked:
    a sequence counter or line number, or an id the run never passed (redoing a step, or doing
    steps in another order, numbers them otherwise; a user who names one passes it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (
            name.startswith("next_") or name in SEQUENCE_FIELDS or name.endswith(("_no", "_seq", "_number"))
        )
    return isinstance(value, str) and bool(ID_LIKE.match(value)) and value not in asked


def counter_copies(state: Mapping[str, Any]) -> frozenset[str]:
    """The fields that copy a counter of another kind of record: ``recipe_version`` where the
    recipes hold a ``version`` (a dataset cleaned with the recipe as it was then). The counter
    moves with how the work was done (a rule added, removed by mistake and added again leaves
    version 16 for 14), and so does its copy (round 35, M2: 0.933); ``schema_version``, of no
    kind of record, is content."""
    found = set()
    for collection, records in state.items():
        if not isinstance(records, dict) or not all(isinstance(r, dict) for r in records.values()):
            continue
        for name in SEQUENCE_FIELDS:
            counts = [r.get(name) for r in records.values()]
            if any(isinstance(n, int) and not isinstance(n, bool) for n in counts):
                found.add(f"{singular(collection)}_{name}")
    return frozenset(found)


def counters_free(pattern: Any) -> Any:
    """A file the environment renders from its records (``pattern``, parsed JSON) with each
    number a field the environment numbers holds (:func:`generated`: a recipe's ``version``, a
    rule's ``rule_no``) read as any number, as the records' own checks read them: a rule added,
    removed by mistake and added again leaves the same recipe at version 3 (round 32, J3: 0.833)."""
    if isinstance(pattern, list):
        return [counters_free(p) for p in pattern]
    if not isinstance(pattern, dict) or any(str(k).startswith("$") for k in pattern):
        return pattern
    return {
        k: {"$any": "number"} if isinstance(v, int) and generated(str(k), v, set()) else counters_free(v)
        for k, v in pattern.items()
    }


def entries_held(pattern: Any) -> Any:
    """A file the environment renders from its records (``pattern``, parsed JSON) with each list
    of records read as ``$holds``: the reference's entries each there, in any order, beside any
    others. An entry the file holds beyond them is a record the run made (a pipeline run of a
    clean redone, a pivot built again with the asked aggregation), which the checks of the
    records themselves judge: the run log of ``pipeline/lineage.json`` pinned as a list paid a
    clean run twice 0.733 while ``/runs gains 3 new pipeline run`` held (round 35, M2)."""
    if isinstance(pattern, list):
        entries = [entries_held(p) for p in pattern]
        records = all(isinstance(p, dict) and not any(str(k).startswith("$") for k in p) for p in pattern)
        return {"$holds": entries} if entries and records else entries
    if not isinstance(pattern, dict) or any(str(k).startswith("$") for k in pattern):
        return pattern
    return {k: entries_held(v) for k, v in pattern.items()}


def content_items(
    pattern: Any, gold: Any, asked: set[str], text: Callable[[str], Any], before: Any = None
) -> Any:
    """A list of records matched by content: each record by its asked fields, in any order, a
    field's text as ``text`` reads it (the dictated note of a journal line, within reason); the
    records it held ``before`` the work as they were stay in their order (a recipe's rules run
    in order: its dedupe rule removed and added again after the derive rule, unasked, paid 1.0;
    round 44, R2)."""
    if not (
        isinstance(pattern, list)
        and pattern
        and all(isinstance(p, dict) and not any(k.startswith("$") for k in p) for p in pattern)
    ):
        return pattern
    items = [
        {
            "$fields": {
                k: text(v) if isinstance(v, str) else v
                for k, v in p.items()
                if not generated(k, record.get(k), asked)
            }
        }
        for p, record in zip(pattern, gold, strict=True)
    ]

    def own(record: Any) -> Any:  # a record but for what the world numbers (a rule renumbered)
        return (
            {k: v for k, v in record.items() if not generated(k, v, asked)}
            if isinstance(record, dict)
            else record
        )

    # ... renumbered or not: rule 3 removed, the rules after it keep their order (round 51, R3:
    # the dedupe rule moved after the derive rule paid 1.0 once the rules were renumbered)
    old = [own(record) for record in before] if isinstance(before, list) else []
    kept = [i for i, record in enumerate(gold) if own(record) in old]
    return {"$items": {"rows": items, "in_order": kept}} if len(kept) > 1 else {"$items": items}


def holds_option(field_name: str, options: set[str]) -> bool:
    """Whether a record's field holds one of ``options`` (optional arguments): under the same
    name, or the name the record keeps it by (a to-do's ``source_message_id`` holds add_todo's
    ``message_id``: a to-do linked to the message it comes from, where the reference linked
    none, failed three checks; round 48, R1: 0.4)."""
    return field_name in options or any(field_name.endswith(f"_{option}") for option in options)


def options_free(pattern: Any, options: set[str]) -> Any:
    """``pattern`` with every field named after one of ``options`` (optional text arguments the
    reference left out, :func:`empty_options`) that holds their empty default read as any text:
    the user never named it, so the option an agent picks ("keep the last copy" for a dedupe
    rule nobody said how to apply) is its choice, in the record and in a file the environment
    renders from it."""
    if not options:
        return pattern
    if isinstance(pattern, list):
        return [options_free(p, options) for p in pattern]
    if not isinstance(pattern, dict):
        return pattern
    return {
        k: {"$any": "str"} if holds_option(k, options) and v == "" else options_free(v, options)
        for k, v in pattern.items()
    }


def columns_free(table: Any, options: set[str]) -> Any:
    """A table the environment renders (``{"header", "rows"}``) with each cell under a column
    named after one of ``options`` that holds its empty default read as any text, as
    :func:`options_free` reads a JSON file: an action item linked to the meeting note it comes
    from, where the reference linked none, showed its note in ``action_items.csv``'s ``meeting``
    column and failed the export (0.875) while the record's own check held."""
    if not options or not isinstance(table, dict) or not isinstance(table.get("header"), list):
        return table
    free = [i for i, name in enumerate(table["header"]) if isinstance(name, str) and name.strip() in options]
    if not free:
        return table
    rows = [
        [{"$any": "str"} if i in free and cell == "" else cell for i, cell in enumerate(row)]
        if isinstance(row, list)
        else row
        for row in table.get("rows", [])
    ]
    return {**table, "rows": rows}


def optional_fields(pattern: Any, options: set[str]) -> Any:
    """``pattern`` (a file the environment renders) with each dictated text in it told the words
    of ``options`` (optional text arguments the reference left out, :func:`empty_options`), which
    the environment may render beside the words with their value: "(due 2026-01-15)" after a
    to-do an agent gave a due date (:func:`envcraft.tasks.verifier.runtime.rendered_options`)."""
    if not options:
        return pattern
    if isinstance(pattern, list):
        return [optional_fields(p, options) for p in pattern]
    if not isinstance(pattern, dict):
        return pattern
    # (a composed text too: "Check the invoice totals (AI-006) (from MSG-0009, due 2026-03-02)";
    # round 62, R3: 0.875)
    said = pattern.get("$says", pattern.get("$text", pattern.get("$composed")))
    if len(pattern) == 1 and isinstance(said, dict):
        words = sorted({w for option in options for w in vr.words(humanize(option))})
        return {op: {**arg, "optional": words} for op, arg in pattern.items()}
    return {k: optional_fields(v, options) for k, v in pattern.items()}


def wild(pattern: Any) -> bool:
    return isinstance(pattern, dict) and set(pattern) == {"$any"}


# -- building checks -------------------------------------------------------------------------------


class CheckList:
    """Accumulates checks with unique readable names (goals and guards add to it)."""

    def __init__(self, golden: Outcome, world: World) -> None:
        self.golden = golden
        self.world = world
        self.checks: list[dict[str, Any]] = []
        self._names: set[str] = set()
        self.named = named_records(golden, world.books)
        # named by their arguments' values: what the work set there is asked for (a pause), and
        # what else moved stays a consequence the correct runs agree on (where a batch halted)
        self.keyed = keyed_records(golden, world.books) - self.named
        self.texts = free_texts(golden, world.books, world.said_by_turn)
        self.asked = {str(v) for a in golden.actions if isinstance(a.args, dict) for v in scalars(a.args)}
        self.goal_paths: dict[str, set[str]] = {env: set() for env in golden.final}
        self.created = created_keys(golden, world.books)
        # (env, collection path, turn) -> the asked new records of a window, without their dictated
        # text: who and what they are (goals fill it; a guard holds every new record to it)
        self.made: dict[tuple[str, str, int | None], list[Any]] = {}
        # files the agent writes itself; every other file the run changes, an env renders
        self.agent_files = {
            str(a.args.get("path"))
            for a in golden.actions
            if a.tool in ("write_file", "edit_file") and isinstance(a.args, dict)
        }

    def numbered(self, env: str, name: str, value: Any) -> bool:
        """Whether a field holds what the environment numbers (:func:`generated`) or a copy of
        such a counter (:func:`counter_copies`): either moves with how the work was done."""
        copied = name in self.world.copies.get(env, frozenset()) and isinstance(value, int)
        return copied or generated(name, value, self.asked)

    def numbered_change(self, env: str, change: dict[str, Any]) -> bool:
        """:meth:`numbered` of the field a change (a diff entry) sets."""
        return self.numbered(env, unescape_token(change["path"].rsplit("/", 1)[-1]), change.get("after"))

    def _add(self, name: str, role: str, **spec: Any) -> None:
        unique, n = name, 2
        while unique in self._names:
            unique, n = f"{name} #{n}", n + 1
        self._names.add(unique)
        spec.update(self.renames({k: v for k, v in spec.items() if k != "turn"}, spec.get("turn")))
        self.checks.append({"name": unique, "role": role, "weight": 1.0, **spec})

    def expected(self, values: Sequence[Any], before: Any = MISSING, about: str = "") -> Any:
        """The pattern for a value a goal sets: free text the run passed by its words within reason
        (:func:`text_pattern`; inside an env's own words, :func:`frame`), a list of flags or labels
        by what was added and removed (and no member no correct run holds), else :func:`pattern_of`;
        the ids of records the run created inside a list or a record by their shape
        (:meth:`ids_free`). A value that is itself such an id stays as it is: the same shape
        would accept the id it held before (a dataset's recipe put back), and a goal's record
        is named by the golden run's id anyway. ``about``: the path of the value (which call's
        text it is, where several calls passed the same)."""
        found = self._expected(values, before, about)
        return found if isinstance(found, str) else self.ids_free(found)

    def _expected(self, values: Sequence[Any], before: Any = MISSING, about: str = "") -> Any:
        gold = values[0]
        if (
            scalar_list(gold)
            and scalar_list(before)
            and all(scalar_list(v) for v in values if v is not MISSING)
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
                # every member a correct run's list holds, or it held before: no other may come
                within = list(dict.fromkeys([*before, *(x for v in values if v is not MISSING for x in v)]))
                return {"$members": {"has": added, "lacks": removed, "within": within}}
        if isinstance(gold, str):
            said = self.said_in(gold, about)
            if said:
                if gold in said:
                    return said[gold]
                if all(vr.same(gold, v) for v in values if v is not MISSING):
                    return frame(gold, said)  # the env wrote them inside its own words
                return pattern_of(values)
        return content_items(pattern_of(values), gold, self.asked, self._in_text, before)

    def file_pattern(self, fmt: str, expected: Any) -> Any:
        """A file's expected content with the dictated texts it holds read within reason and the
        e-mail addresses of its headers read by address (an env's rendering of the agent's words:
        a to-do line, a mail's body and ``To:`` header); other lines stay as they are."""
        if fmt == "text" and isinstance(expected, str):
            return self._in_line(expected)
        if fmt == "json":
            return self._in_values(expected)
        if fmt in ("csv", "tsv") and isinstance(expected, dict):
            return {**expected, "rows": self._in_values(expected["rows"])}
        if fmt != "lines" or not isinstance(expected, list):
            return expected
        lines = [
            self._in_json(line) or self._in_line(line) if isinstance(line, str) else line for line in expected
        ]
        for free in self.texts:
            lines = as_block(lines, free.text, text_pattern(free))
        return lines

    def _in_json(self, line: str) -> dict[str, Any] | None:
        """A JSON line holding a dictated text as one of its values, as ``$json``: the text is
        read within reason as a value, where its escapes (a greeting's ``\\n``) would break it."""
        if not line.startswith(("{", "[")):
            return None
        try:
            parsed = json.loads(line)
        except ValueError:
            return None
        pattern = self._in_values(parsed)
        return {"$json": pattern} if pattern != parsed else None

    def ids_free(self, value: Any) -> Any:
        """``value`` with every id of a record the run created read by its shape (``$ids``): an
        environment numbers what it creates by what was created before, so redoing a step (a
        draft discarded and written again) gives the same work another id."""
        if isinstance(value, str):
            return id_shaped(value, self.created)
        if isinstance(value, list):
            return [self.ids_free(v) for v in value]
        if isinstance(value, dict) and all(not str(k).startswith("$") or k in ID_HOLDERS for k in value):
            return {k: self.ids_free(v) for k, v in value.items()}
        return value

    def renames(self, spec: Any, turn: int | None = None) -> dict[str, Any]:
        """``{"renamed": ...}`` for a check whose spec names a record the run created (its path, its
        expected value, the records it excepts; see the runtime's ``renamed``): per collection of
        such a record, the golden run's live new ids at the check's moment, in the order it made
        them; ``{}`` if it names none."""
        text = json.dumps(spec)
        named = [
            k for k in self.created if re.search(r"(?<![A-Za-z0-9])" + re.escape(k) + r"(?![0-9])", text)
        ]
        found: dict[str, Any] = {}
        states = states_at(self.golden, turn)
        for key in sorted(named):
            for env, book in self.world.books.items():
                collection = book.collection_of(states.get(env, {}), key)
                if collection is None or f"{env}:{collection}" in found:
                    continue
                old = self.golden.initial[env].get(collection) or {}
                made = sorted((k for k in states[env][collection] if k not in old), key=vr.made_order)
                found[f"{env}:{collection}"] = {
                    "env": env,
                    "path": f"/{escape_token(collection)}",
                    "ids": made,
                    "looks": {k: self._looks(states[env][collection][k], k) for k in made},
                    **self.world.voiding(env),
                }
        return {"renamed": found} if found else {}

    def _looks(self, record: Any, key: str) -> dict[str, Any]:
        """What tells a record the golden run made from the others it made: its short texts and
        S0's ids (a journal's memo, status and period; a booking's member and class), never a
        time, a number or an id the run made. The runtime pairs the run's new records with the
        golden run's by these before it pairs the rest by the order they were made (round 55, R2:
        a draft journal redone after the transfer journal was paired with the transfer)."""
        if not isinstance(record, dict):
            return {"$fields": {}}
        return {
            "$fields": {
                name: value
                for name, value in record.items()
                if isinstance(value, str)
                and value != key
                and value not in self.created
                and not is_time(value)
                and len(value) <= 80
            }
        }

    def _in_line(self, line: str) -> Any:
        header = HEADER.fullmatch(line)
        if header is not None:
            return {"$framed": [header.group(1), {"$addresses": vr.addresses(header.group(2))}, ""]}
        return self._in_text(line)

    def _in_text(self, value: str) -> Any:
        said = self.said_in(value)
        if not said:
            return value
        return said[value] if value in said else frame(value, said)

    def said_in(self, value: str, about: str = "") -> dict[str, Any]:
        """The free texts of the run that ``value`` is or holds (one longer than a few characters
        inside it), each with how it is read (:func:`text_pattern`): the value itself alone if it
        is one of them, as the call that names the most records of the path ``about`` passed it
        where several passed it (the same reason dictated for two jobs: an aside may name the job
        the note is on; round 56, R1: 0.9)."""
        said: dict[str, Any] = {}
        same = [free for free in self.texts if value == free.text]
        if same:
            # a path's parts and the words and numbers in them: "payments", "p1" and "1" of
            # "/partitions/payments~1p1/pause_reason"
            parts = {unescape_token(part) for part in about.split("/")}
            parts |= {w for part in set(parts) for w in re.findall(r"[^\W_]+", part)}
            parts |= {n for part in set(parts) for n in re.findall(r"\d+", part)}
            return {value: text_pattern(max(same, key=lambda free: len(parts & set(free.keys))))}
        for free in self.texts:
            if len(free.text) > 8 and free.text in value:
                said.setdefault(free.text, text_pattern(free))
        return said

    def _in_values(self, value: Any) -> Any:
        """A parsed JSON or table pattern with its string values read as :meth:`_in_text` does."""
        if isinstance(value, str):
            return self._in_text(value)
        if isinstance(value, list):
            return [self._in_values(v) for v in value]
        if isinstance(value, dict) and not any(str(k).startswith("$") for k in value):
            return {k: self._in_values(v) for k, v in value.items()}
        return value

    def _window(
        self, turn: int | None
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], dict[str, str]]:
        return window(self.golden, turn)

    def _inspected(self, env: str, record: str) -> list[str]:
        """The fields inspecting ``record`` writes down (``World.inspected``: a profile's
        findings) where the reference's calls name it or change it (a sheet registered again by
        its path): the record the work is about, which a careful agent inspects before or after it
        acts on it; never another record."""
        collection, key, _ = split_path(record + "/x")
        fields = self.world.inspected.get(env, {}).get(collection or "", {})
        if not fields:  # no tool of the environment inspects this collection: nothing to read
            return []
        named = any(
            key in {str(v) for v in scalars(action.args)}
            for action in self.golden.actions
            if action.env == env and "error" not in action.result
        )
        changed = get_path(self.golden.initial.get(env, {}), record) != get_path(
            self.golden.final.get(env, {}), record
        )
        return sorted(fields) if named or changed else []

    def _uninspected(self, env: str, path: str, change: dict[str, Any]) -> bool:
        """Whether ``change`` leaves empty a field that inspecting the record writes down (a
        dataset registered again has no ``profiled_sha`` or issues yet): what the work left
        for an inspection to fill, which a careful agent then makes (the environment's own docs
        say to profile a sheet once registered; round 56, R3: 0.029), so neither a goal nor a
        consequence. Where the work itself inspected, the findings stay asked."""
        collection, key, rest = split_path(path)
        if collection is None or key is None or change.get("after") not in (None, "", [], {}, False):
            return False
        return rest in self._inspected(env, f"/{escape_token(collection)}/{escape_token(key)}")


def member(collection_path: str, key: str) -> str:
    return f"{collection_path}/{escape_token(key)}"


# -- helpers -----------------------------------------------------------------------------------------
def named_records(golden: Outcome, books: Mapping[str, Phrasebook]) -> set[tuple[str, str, str]]:
    """(env, collection, key) of the records the chain's calls name by id or create."""
    found: set[tuple[str, str, str]] = set()
    for action in golden.actions:
        if action.env not in books or not isinstance(action.args, dict) or "error" in action.result:
            continue
        book = books[action.env]
        for value in scalars(action.args):
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


def keyed_records(golden: Outcome, books: Mapping[str, Phrasebook]) -> set[tuple[str, str, str]]:
    """(env, collection, key) of the records the chain's calls name by the values of two or more
    arguments rather than by an id (a partition by its topic and number)."""
    found: set[tuple[str, str, str]] = set()
    for action in golden.actions:
        if action.env in books and isinstance(action.args, dict) and "error" not in action.result:
            keyed = books[action.env].keyed_by_args(golden.initial[action.env], action.args)
            found |= {(action.env, collection, key) for collection, key in keyed}
    return found


def created_keys(golden: Outcome, books: Mapping[str, Phrasebook]) -> set[str]:
    """The ids of the records the run created (at any turn's end), shaped like ids (``MSG-0010``)."""
    found: set[str] = set()
    for env, book in books.items():
        for collection in book.collections:
            before = golden.initial[env].get(collection) or {}
            for states in [golden.final, *(t.final for t in golden.turns)]:
                records = states.get(env, {}).get(collection)
                if isinstance(records, dict):
                    found |= {k for k in records if k not in before and ID_SHAPE.fullmatch(k)}
    return found


def id_shaped(text: str, ids: set[str]) -> Any:
    """``text`` as an ``$ids`` pattern where it holds one of ``ids`` as a whole word (each read as
    its prefix and any digits), else ``text`` itself."""
    found = [i for i in ids if i in text]
    if not found:
        return text
    pattern = re.compile(
        r"(?<![A-Za-z0-9])("
        + "|".join(re.escape(i) for i in sorted(found, key=len, reverse=True))
        + r")(?![0-9])"
    )
    parts, last = [], 0
    for hit in pattern.finditer(text):
        parts += [text[last : hit.start()], hit.group(1).rstrip("0123456789")]
        last = hit.end()
    if not parts:
        return text
    return {"$ids": [*parts, text[last:]]}


class FreeText(NamedTuple):
    """A free text the golden run passed, and what reading it needs (:func:`text_pattern`)."""

    text: str
    embedded: list[str]  # the values a composed text carries (empty: a dictated text)
    param: str  # the argument it was passed as
    names: dict[str, Any]  # the names a greeting or sign-off around it may hold (:func:`addressed`)
    context: list[str]  # the words the world says about the records it carries (:func:`carried_context`)
    restated: list[str] = []  # the user's own words, less the environment's acts (:func:`free_texts`)
    later_times: list[str] = []  # times of day the user gives only in later turns (:func:`free_texts`)
    keys: list[str] = []  # the call's other text arguments: the records it names ("RUN-7625", a job)


def free_texts(
    golden: Outcome, books: Mapping[str, Phrasebook], said: Sequence[frozenset[str]] = ()
) -> list[FreeText]:
    """Free text the run passed (``$text`` / ``$says`` / ``$composed`` checks); ``said`` is the
    user's own words up to each turn (:func:`user_words`): a note or an aside may restate how
    the user put it by then ("Re: booking 959RYC" of "the trip booked under reference 959RYC";
    never a later turn's "17:20" in a turn-2 email; round 42, R1: 1.0), never an act they did
    not ask for (the words of the environment's tools stay out, though not the kinds of record
    they name: "the airport transfer" of ``reschedule_transfer``; round 42, R1: 0.857)."""
    nouns = {w for book in books.values() for kind in book.declared for w in vr.words(book.entity(kind).noun)}
    acts = {
        w
        for book in books.values()
        for tool in book.package.env_class.tools
        for w in vr.words(humanize(tool))
    } - nouns
    found = []
    for action in golden.actions:
        if not isinstance(action.args, dict) or "error" in action.result:
            continue  # a refused call's text lands nowhere: the fallback's is read with its own
            # records ("public holiday (RUN-7368)" on the run the fallback skipped a job of;
            # round 52, R2: 0.5, and "(RUN-7367)", the run the try named, 1.0)
        now = said[min(action.turn, len(said) - 1)] if said else frozenset()
        restated = sorted(now - acts)
        later = sorted(_clocks(said[-1]) - _clocks(now)) if said else []
        names: dict[str, Any] | None = None
        for name, value in action.args.items():
            if not isinstance(value, str) or (
                " " not in value.strip() and not _one_word_text(books, action, name)
            ):
                continue
            source = Source.parse(action.provenance.get(name, "user"))
            embedded: list[str] = []
            if source.kind == "embed":
                embedded = [carried(golden, source, value)]
            if names is None:
                names = addressed(golden, books, action)
            context: list[str] = []
            if embedded:
                origin = golden.actions[source.call].env if source.call is not None else action.env
                context = carried_context(golden, books.get(origin), embedded)
                context = sorted({*context, *(w for v in embedded for w in acts_on(golden, v))})
            # (a number too: the partition a pause names, "payments/p1" of partition 1)
            keys = [str(v) for k, v in action.args.items() if k != name and isinstance(v, str | int)]
            found.append(FreeText(value, embedded, name, names, context, restated, later, keys))
    return found


def _clocks(said: Iterable[str]) -> set[str]:
    """The times of day among words, without a leading zero ("16:45", "9:05")."""
    return {vr.clock(t) for w in said for t in vr.TIME_OF_DAY.findall(w)}


def _one_word_text(books: Mapping[str, Phrasebook], action: Action, name: str) -> bool:
    """Whether a one-word value of this argument is dictated text all the same: a reason, a
    note or a message (by the parameter's name) that the schema leaves free (a string with no
    enum, pattern or format), holding a word, not a code ("Damaged" is "damaged"; "SKU-1" is an id)."""
    book = books.get(action.env)
    spec = book.package.env_class.tools.get(action.tool) if book is not None else None
    value = action.args.get(name) if isinstance(action.args, dict) else None
    if spec is None or not isinstance(value, str) or not value.strip().rstrip(".!").isalpha():
        return False
    if name not in BODY_PARAMS and not any(w in name for w in REASON_WORDS):
        return False
    schema = spec.parameters.get("properties", {}).get(name)
    return (
        isinstance(schema, dict)
        and schema.get("type", "string") in ("string", ["string", "null"])
        and not {"enum", "pattern", "format", "const"} & set(schema)
    )


def acts_of(packages: Iterable[EnvPackage]) -> frozenset[str]:
    """The acts the environments' tools do, by the first word of each that changes something
    ("cancel" of ``cancel_booking``): which record such an act was done to is the run's to show
    (:func:`acts_on`), never the user's words."""
    return frozenset(
        name.split("_")[0]
        for package in packages
        for name, spec in package.env_class.tools.items()
        if not spec.annotations.read_only
    )


def unsituated(texts: Sequence[str], envs: Sequence[str]) -> list[str]:
    """The user's turns without the sentence a person at the desk opens with (the phrasing's
    ``situations``: "I'm working the disruption desk today."): why they write, not what they ask,
    so none of its words is a framing a note or a report may say of the records ("Disruption:
    Please call the travel desk ..." to a traveler whose trip has none; round 56, R1: 1.0)."""
    openers = [line for env in envs for line in situations().get(env, ())]
    found = []
    for text in texts:
        for line in openers:
            text = text.replace(line, " ")
        found.append(text)
    return found


def user_words(texts: Sequence[str], acts: frozenset[str] = frozenset()) -> frozenset[str]:
    """The words of the user's turns (lower-cased), with the forms a restatement takes of them
    ("booked" is said as "booking" too, "file" as "filed": a report tells what was asked as
    done; see :func:`word_forms`), never a negation or a retraction, no form that says something
    was sent unless the user said it, and no new form of an act of the environments' tools
    (``acts``, :func:`acts_of`): "canceled" of "Cancel BKG-50006" would say any booking was
    cancelled ("New booking BKG-50062 was canceled.", of the one promoted from the waitlist);
    what an act did to which record is the run's (:func:`acts_on`). The user's own framing,
    which a report or a note may repeat. ("Filed the newsletter in travel." of "File that
    message in a new folder travel" scored 0.875: round 35, M4.)"""
    found: set[str] = set()
    said = {w for text in texts for w in vr.words(text)}
    said |= {part for w in said for part in re.split(r"[-_/.]", w) if len(part) > 1}  # a path's words
    for word in (w for w in said if w.isalpha()):
        bases = set()
        for ending in ("ed", "ing"):
            if word.endswith(ending) and len(word) > len(ending) + 2:
                stem = word[: -len(ending)]
                bases |= {stem, stem + "e", stem[:-1] if stem[-1] == stem[-2] else stem}  # "cancelled"
        if not bases:  # a verb as the user said it, not already a past or -ing form: "file", "flags"
            base = word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 4 else word
            bases = set() if base.endswith(("ed", "ing")) or base in acts else {base}
        found |= {form for base in bases for form in word_forms(base)} - vr.SENDING
    return frozenset((found | said) - vr.NEGATIONS - vr.RETRACTIONS)


def acts_on(golden: Outcome, value: str) -> set[str]:
    """The words of the acts that made or touched the record ``value`` names, and their past and
    -ing forms (:func:`word_forms`): what a note or a report may say was done to it ("health
    check HC-0001 has been run", "drafted a reply: MSG-0010"), never what was done to another."""
    found: set[str] = set()
    for action in golden.actions:
        if action.tool in SYSTEM_TOOLS:
            continue
        for word in _act_words(action, value):
            found |= {word, *word_forms(word)}
    return found


def desk_acts(golden: Outcome, books: Mapping[str, Phrasebook]) -> set[str]:
    """The words of the acts the run did on the whole desk (a tool that needs no argument: an
    export of every tracked item), and their past and -ing forms: true of the run as a whole,
    a report may say them beside the asked values ("Exported 6 tracked items"; round 52, R4:
    0.833). An act on a record (a partition paused) stays the record's (:func:`acts_on`)."""
    found: set[str] = set()
    for action in golden.actions:
        book = books.get(action.env)
        spec = book.package.env_class.tools.get(action.tool) if book is not None else None
        if spec is None or action.tool in SYSTEM_TOOLS or "error" in action.result:
            continue
        if not spec.parameters.get("required") and not spec.annotations.read_only:
            for word in vr.words(humanize(action.tool)):
                found |= {word, *word_forms(word)}
    return found


def acts_itself(action: Action, value: str) -> bool:
    """Whether ``action`` acted on the record ``value`` names as its own act (the tool's words
    say what it did to it), not on another record whose result holds it apart (a cancellation
    that promoted a waitlist booking did not cancel that booking)."""
    words = _act_words(action, value)
    return bool(words) and words == vr.words(humanize(action.tool))


def _act_words(action: Action, value: str) -> list[str]:
    """The words of what ``action`` did to the record ``value`` names: the tool's where the call
    named it, or its result holds it as the act's own record (top level, beside what the call
    named, or in a result that holds nothing the call named: a record it made); the result key's
    where the result holds it apart ("promoted" for the waitlist booking a cancellation freed a
    place for, never "cancelled")."""
    named = {str(v) for v in scalars(action.args)}
    if value in named:
        return vr.words(humanize(action.tool))
    result = action.result if isinstance(action.result, dict) else {"result": action.result}
    held = {key: {str(v) for v in scalars(sub)} for key, sub in result.items()}
    if not any(value in found for found in held.values()):
        return []
    own = any(
        value in found and (not isinstance(result[key], dict | list) or found & named)
        for key, found in held.items()
    )
    if own or not any(found & named for found in held.values()):
        return vr.words(humanize(action.tool))
    return [w for key, found in held.items() if value in found for w in vr.words(humanize(key))]


IRREGULAR = {  # short or irregular verbs whose forms are known, not guessed
    "run": {"ran", "running", "runs"},
    "make": {"made", "making"},
    "write": {"wrote", "written"},
    "add": {"added", "adding"},
    "log": {"logged", "logging"},
    "send": {"sent", "sending"},
    "take": {"took", "taken", "taking"},  # "taken out of rotation" (round 42, R2: 0.923)
    "give": {"gave", "given", "giving"},  # "waitlist place given up" (round 44, R1: 0.667)
    "open": {"opened", "opening"},  # stressed first, its n never doubles ("openned")
    "edit": {"edited", "editing"},
}


def word_forms(word: str) -> set[str]:
    """A verb's past and -ing forms as a report writes them ("drafted", "replied", "replying",
    "created", "creating", "flagged", "ran"); a word of fewer than four letters has none but the
    irregular ones (its forms would be guesses)."""
    if word in IRREGULAR:
        return set(IRREGULAR[word])
    if len(word) < 4:
        return set()
    stem = word[:-1] if word.endswith("e") else word
    if len(word) == 4 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        stem = word + word[-1]  # one syllable ending consonant-vowel-consonant: "flag", "skip"
    past = word[:-1] + "ied" if word.endswith("y") and word[-2] not in "aeiou" else stem + "ed"
    return {past, stem + "ing"}


ROUTE_ENDS = {"from": {"pickup", "origin", "departure"}, "to": {"dropoff", "destination", "arrival"}}


def route_ends(golden: Outcome, book: Phrasebook | None, values: list[str]) -> dict[str, list[str]]:
    """Where the records ``values`` name, and those they point at, start and end (lower-cased;
    a field named for a pickup, an origin or a departure, or led by "from", and for a drop-off,
    a destination or an arrival, or led by "to", in the record or in the lines it holds), each
    end by its value and by what the record it names is known by (a transfer line's
    ``from_warehouse_id`` WH-RNX, and "Reno Overflow"): a text that says "from" the end or "to"
    the start gives the route reversed (round 22: "TRP-40501 to Z-DTN from Z-HBR" paid 1.0 for a
    ride from Z-DTN to Z-HBR; round 58, R1: a memo's "(Columbus DC to Reno Overflow)" of a
    transfer out of Reno Overflow, 1.0)."""
    ends: dict[str, set[str]] = {"from": set(), "to": set()}
    if book is None:
        return {}
    state = golden.final.get(book.package.id, {})
    todo, seen = list(values), set()
    for _depth in range(2):
        nxt: list[str] = []
        for key in todo:
            collection = None if key in seen else book.collection_of(state, key)
            seen.add(key)
            if collection is None:
                continue
            for name, value, way in _routed_strings(state[collection][key]):
                parts = name.lower().split("_")
                for side, named in ROUTE_ENDS.items():
                    if (
                        set(parts) & named
                        or parts[0] == side
                        or (way == side and (parts[-1] == "id" or ID_LIKE.match(value)))
                    ):
                        place = book.collection_of(state, value)
                        ends[side] |= {
                            v.lower() for v in [value, *(_names(state[place][value]) if place else [])]
                        }
                nxt.append(value)
        todo = nxt
    if not ends["from"] or not ends["to"]:
        return {}
    return {side: sorted(found) for side, found in ends.items()}


def _routed_strings(value: Any, way: str = "") -> Iterable[tuple[str, str, str]]:
    """Every keyed string of a record with the way its part of the record goes: "from" in a part
    whose code says out ("transfer_out"), "to" in one whose code says in ("transfer_in"), else
    the way of the part around it (a journal's lines: the warehouse each line names)."""
    if isinstance(value, dict):
        codes = {p for v in value.values() if isinstance(v, str) and _CODE.fullmatch(v) for p in v.split("_")}
        way = "from" if "out" in codes else "to" if "in" in codes else way
        for name, item in value.items():
            if isinstance(item, str) and item:
                yield str(name), item, way
            elif isinstance(item, dict | list):
                yield from _routed_strings(item, way)
    elif isinstance(value, list):
        for item in value:
            yield from _routed_strings(item, way)


_CODE = re.compile(r"[a-z]+(?:_[a-z]+)+")  # a code of several words: "transfer_out"


def _names(record: Any) -> list[str]:
    """What a record is called: its own name and title fields (a warehouse's "Reno Overflow"),
    never the ids it holds (the stock it keeps)."""
    if not isinstance(record, dict):
        return []
    return [
        v for k, v in record.items() if isinstance(v, str) and v and any(n in k.lower() for n in NAME_KEYS)
    ]


def said_numbers(key: str, value: int) -> list[str]:
    """How a report may say a record's whole number: as it is, and an amount kept in cents also
    in its currency's units ("12.93" of ``quoted_fare_cents`` 1293: round 22's true "$12.93")."""
    if "cents" in key.lower().split("_"):
        return [str(value), f"{value / 100:.2f}"]
    return [str(value)]


def _as_now(record: Any, now: Any) -> Any:
    """``record`` less the fields the run changed since (``now``: the record at the end): a
    return received since is no longer "open" ("RMA-00001 status open" of a received return
    paid 1.0; round 45, R4)."""
    if not isinstance(record, dict) or not isinstance(now, dict):
        return record
    return {k: v for k, v in record.items() if vr.same(v, now.get(k, MISSING))}


def carried_context(golden: Outcome, book: Phrasebook | None, values: list[str]) -> list[str]:
    """The words the world of the environment a composed text's values come from says about the
    records they name and those they point at (lower-cased): their kinds, ids and short values
    (never a field's name: "validated" beside a dataset that is not is a claim). A to-do that
    mentions a message may say what the message is ("re: email MSG-0001 to the traveler of
    ITN-4001", "draft MSG-0010 to Customer Operations") in the world's own words (of a record
    pointed at, only its names and ids: a service's status is no word about a check of it; and
    no words of a value that negates them: "notify-a1 is not healthy" says no "healthy"); words
    of no such record ("approved by finance") stay claims nobody made. A record the run made or
    changed that the world keeps as a file (a draft's ``.eml``, named by its id) says the same in
    its short lines. Negation and retraction words are never context, nor are numbers and times,
    but for those of a record's name or title ("error rate above 5%": the record called by its
    title). Names reach two records away: the customer of the order a refund is for ("RF-00002
    (customer Chloe Fischer)" scored 0.75; round 36, N1)."""
    if book is None:
        return []
    env = book.package.id
    found: set[str] = set()
    titled: set[str] = set()  # the numbers of the records' names and titles
    todo = list(values)
    seen: set[str] = set()
    for _depth in range(3):  # the records carried, those they point at, and the records those name
        nxt: list[str] = []
        for key in todo:
            if key in seen:
                continue
            seen.add(key)
            start, end = golden.initial.get(env, {}), golden.final.get(env, {})
            for state in (start, end):
                collection = book.collection_of(state, key)
                if collection is None:
                    continue
                record = _as_now(state[collection][key], (end.get(collection) or {}).get(key, MISSING))
                found.update(vr.words(book.entity(collection).noun))
                found.update(vr.words(humanize(collection)))
                strings = [v for v in scalars(record) if isinstance(v, str)]
                said = strings if _depth == 0 else identities(record)  # what it points at: by name
                found.update(w for v in said if len(v) <= NAME_LIMIT for w in affirmed(v))
                found.update(w for v in strings if "@" in v for w in vr.words(" ".join(_addressees(v))))
                titled.update(
                    w
                    for k, v in _keyed_strings(record)
                    if k is not None and any(n in k.lower() for n in NAME_KEYS) and len(v) <= NAME_LIMIT
                    for w in vr.words(v)
                    if w.isdigit()
                )
                if _depth == 0:
                    found |= verdict_words(record)
                nxt += [v for v in strings if v != key]
        todo = nxt
    for path, content in sorted(golden.files.items()):  # a record kept as a file: a draft's .eml
        if golden.initial_files.get(path) == content:
            continue  # a file the run left alone: maybe another env's record of the same id
        if any(v in path for v in values):
            # a mail's headers, never its body: a forward holds the forwarded mail, whose words
            # are no fact of the run ("Payment confirmation sent to Cascade Freight Billing." from
            # the words of the phishing mail forwarded paid 1.0; round 45, R2)
            lines = (
                content.split("\n\n", 1)[0].splitlines() if path.endswith(".eml") else content.splitlines()
            )
            for line in lines:
                found.update(vr.words(line if len(line) <= NAME_LIMIT else " ".join(_addressees(line))))
    words = {
        w
        for w in found
        if not any(c.isdigit() for c in w) or ID_SHAPE.fullmatch(w) or _code(w) or _SLUG.fullmatch(w)
    }
    return sorted((words | titled) - vr.NEGATIONS - vr.RETRACTIONS)


VERDICTS = ("passed", "succeeded", "healthy", "ok", "valid")  # a record's flag of how it came out
FAILED = frozenset({"failed", "fail", "fails", "failing", "failure"})


def verdict_words(record: Any) -> set[str]:
    """How a record says it came out, in the words a person reports it with: a verdict flag
    (``passed``, ``healthy``) true says its own name, false says "failed"; a list of failures
    that holds any says "failed" too ("Health check HC-0001 failed" of a check with ``passed:
    false``). A verdict the record does not hold stays a claim ("HC-0001 passed")."""
    if not isinstance(record, dict):
        return set()
    found: set[str] = set()
    for key, value in record.items():
        name = str(key).lower()
        if name in VERDICTS and isinstance(value, bool):
            found |= {name} if value else set(FAILED)
        elif name in ("failures", "errors") and isinstance(value, list) and value:
            found |= FAILED
    return found


CHOICE = re.compile(r"[a-z]+(?:_[a-z]+)*")  # a choice word a state field holds: "open", "in_progress"
_SLUG = re.compile(r"[a-z]{3,}(?:-[a-z0-9]+)+")  # a host or a service by its name: "notify-a1"


def affirmed(text: str) -> list[str]:
    """The words a text says are so: all but a negation and the word it negates ("notify-a1 is
    not healthy (down)" says "notify-a1", "down", never "healthy")."""
    found: list[str] = []
    negated = False
    for word in vr.words(text):
        if word in vr.NEGATIONS:
            negated = True
        elif negated:
            negated = False
        else:
            found.append(word)
    return found


def _addressees(text: str) -> list[str]:
    """The people a header-like value names, by display name and address ("Customer Operations
    <cs-team@northwind.example>": a note may say whom a draft is to)."""
    return [*person_names(text), *re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text)]


def _code(word: str) -> bool:
    """Whether a word is a record's own code of letters and digits (a booking reference
    "M5WAUS"): what the world says of the record, never a number or a time ("10am", "1500")."""
    letters = sum(c.isalpha() for c in word)
    return word.isalnum() and 5 <= len(word) <= 8 and letters >= 2 and letters < len(word)


def addressed(golden: Outcome, books: Mapping[str, Phrasebook], action: Action) -> dict[str, Any]:
    """The names a greeting or a sign-off around a text this call passes may hold (lower-cased):
    ``names``, the words of the records the call names and of those they point at (the message
    replied to and its sender, the itinerary and its traveler), of its other arguments and result
    (the addresses it writes to) and of the environment's top-level values (the mailbox owner): a
    greeting names the addressee; ``others``, the names of the other records of those
    collections (the other travelers, the other senders): no sign-off may name them either (the
    sender, the user, is no record: "Kind regards, Rosa" is hers to add). "Hi Liam," in a message
    to Daniel names someone the message is not for. ``aside``: the other words a short aside
    about those records may hold (their kinds, field names and the digits of their values: "(offset 22)",
    "(Power Spin, Jan 5 07:00)"), never a greeting's; ``titles``: the words such an aside may name
    those records by (their ids, codes, names and titles, the call's own values), never what the
    records say (a status, a description: "(training succeeded)", "- retry and publish model"
    are claims); ``label``: the words that may label the text
    without a colon, the kind of the records the call names or of a record without a name they
    point at, and the words of its act ("Trip cancelled by mistake", "Request created by
    mistake", "Cancellation requested by the owner"), never a field's or a named party's ("driver
    created by mistake" says who was made by mistake)."""
    book = books.get(action.env)
    states = [golden.initial.get(action.env, {}), golden.final.get(action.env, {})]
    seen: set[str] = set()
    near: list[Any] = [action.args, action.result]
    kinds: set[str] = set()
    own: set[str] = set()  # the kinds of the records the call names, and of the unnamed ones they point at
    records: set[str] = set()  # the ids of the records found
    persons: list[tuple[str, Any]] = []  # the people the call's records point at
    pointed: set[str] = set()  # the values the records the call names hold
    todo = [v for v in scalars(action.args) if isinstance(v, str)]
    named = set(todo)
    # ... and the record it makes, as the run left it: a journal opened under a memo holds the
    # purchase order its lines receive against ("Rebalance between warehouses (PO-4506)",
    # round 29: 0.8)
    result = action.result if isinstance(action.result, dict) else {}
    todo += [v for v in result.values() if isinstance(v, str) and ID_LIKE.match(v)]
    for depth in range(2):  # the records the call names, and those they point at
        found = []
        for key in todo:
            for state in states:
                collection = book.collection_of(state, key) if book is not None and key not in seen else None
                if collection is not None:
                    kinds.add(collection)
                    records.add(key)
                    record = _only_named(state[collection][key], named)
                    if depth == 0 or (isinstance(record, dict) and "name" not in record):
                        own.add(collection)  # what the call acts on, or a thing it serves (a request)
                    elif person_names(record):
                        persons.append((collection, record))  # whom they are for: the order's customer
                    near.append(record)
                    found += [v for v in scalars(state[collection][key]) if isinstance(v, str) and v != key]
            if book is not None and key not in records and key not in seen:
                near += reference_rows(book, key)  # a code of the world's reference data: LHR
            seen.add(key)
        if depth == 0:
            pointed = set(found)
        todo = found if depth == 0 else []
    for state in states:
        near += [v for k, v in state.items() if book is None or k not in book.collections]
    names = {w.lower() for t in near for v in scalars(t) if isinstance(v, str) for w in _NAME_WORD.findall(v)}
    known_by = [*records, *(v for v in scalars(action.args) if isinstance(v, str))]
    for record in near:
        known_by += identities(record)
    titles = {w.lower() for v in known_by for w in _NAME_WORD.findall(v)}
    aside = {  # what an aside naming those records may say besides their names: kinds, labels, numbers
        *(w for c in kinds for w in vr.words(book.entity(c).noun if book is not None else c)),
        # the name of a field that holds nothing says what did not happen: "(period 2026-01
        # closed)" of an open period whose closed_at is empty (round 27, EA: 1.0)
        *(
            w
            for t in near
            if isinstance(t, dict)
            for k, v in t.items()
            if v not in ("", None, False, [], {})
            for w in vr.words(humanize(str(k)))
        ),
        *(n for t in near for v in scalars(t) for n in re.findall(r"\d+", str(v))),
        # ... and the days they hold as such, so a day an aside gives is one of theirs ("New
        # pickup: March 05" of a pickup on March 13; round 54, R1: 1.0)
        *(d for t in near for v in scalars(t) if isinstance(v, str) for d in ISO_DAY.findall(v)),
    }
    others = {
        w.lower()
        for state in states
        for collection in sorted(kinds)
        for key, record in (state.get(collection) or {}).items()
        if key not in seen
        for text in person_names(record)
        for w in _NAME_WORD.findall(text)
    }
    aside -= vr.NEGATIONS | vr.RETRACTIONS
    # a number the call passes is its record's own, by the parameter's name: "(partition 0)" of
    # a seek on partition 0, never "(partition 2)" (round 58, R2: a pause reason naming
    # another partition paid 1.0, and the seek's true "(partition 0)", "(offset 13)" 0.857)
    numbered = {
        humanize(k): [str(v)]
        for k, v in action.args.items()
        if isinstance(v, int) and not isinstance(v, bool)
    }
    label = (
        {
            *(w for c in own for w in vr.words(book.entity(c).noun if book is not None else c)),
            *vr.words(humanize(action.tool)),
            *(w for k in numbered for w in vr.words(k)),
        }
        - vr.NEGATIONS
        - vr.RETRACTIONS
    )
    acted = {  # the words of the call's own arguments, but for ids: "notify_finance" of a job
        w.lower()
        for v in scalars(action.args)
        if isinstance(v, str) and not ID_LIKE.match(v)
        for w in _NAME_WORD.findall(v)
    } | {str(v) for v in scalars(action.args) if type(v) is int}  # and its numbers: "p2" of partition 2
    party, near_people = _party(book, states, action, acted), _people(near)
    subjects = {  # who a reason may say did it: "Customer found a better price", "Wei ordered ..."
        w
        for collection, record in persons
        if not party or _people(record) & party
        for w in [*vr.words(book.entity(collection).noun if book else collection), *_people(record)]
    } | party
    # ... or whom a handle its records hold stands for in the world's roster ("amara": "Amara
    # Okafor"): the owner of the item completed ("Shared in the team channel. (amara)"; round 69,
    # R4: 0.75)
    rostered_people = rostered(states, pointed, book)
    subjects |= {w.lower() for handle, name in rostered_people for w in [handle, *name.split()]}
    # ... or what it tells of: the record the call names ("archive_reports replaced by the new
    # pipeline" for the dictated "replaced by the new pipeline", round 28 FA: 0.5)
    subjects |= {
        w for v in action.args.values() if isinstance(v, str) and 0 < len(v.split()) == 1 for w in vr.words(v)
    }
    done = _done_words(golden, book, action, {v for v in result.values() if isinstance(v, str)})
    route = route_ends(
        golden, book, [v for v in scalars(action.args) if isinstance(v, str)] + sorted(records)
    )
    # the names of several words an aside may give whole, never mixed: "Reno DC" of Reno
    # Overflow and Columbus DC (round 58, R1: 1.0)
    phrases = {v.lower() for record in near for v in _names(record) if len(_NAME_WORD.findall(v)) > 1}
    return {
        **({"done": sorted(done)} if done else {}),
        **({"route": route} if route else {}),
        **({"numbered": numbered} if numbered else {}),
        **({"phrases": sorted(phrases)} if phrases else {}),
        "names": sorted(names),
        "others": sorted(others - names),
        "aside": sorted(aside),
        "label": sorted(label),
        "titles": sorted(titles),
        "acted": sorted(acted),
        # a word the world keeps in lower case (a status, a class, a feature: "dispatched",
        # "child_seat") is no name a sign-off or an attribution may hold, whatever its case in
        # the text (round 26, DD: "plans changed, Child Seat" paid 1.0)
        "things": sorted(_kept_lower(near) - near_people - _people(states) - vr.POLITE),
        **({"party": sorted(party), "bystanders": sorted(near_people - party)} if party else {}),
        **({"subjects": sorted(subjects - vr.NEGATIONS - vr.RETRACTIONS)} if subjects else {}),
    }


ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")  # an ISO date or the day of an ISO time


def _done_words(golden: Outcome, book: Phrasebook | None, action: Action, made: set[str]) -> set[str]:
    """What the run had done by the end of the call's turn to the records of the call's
    environment that its calls name, but for those the call itself makes (``made``): their
    kinds, the fields it wrote with the values they hold now (:func:`written_words`), so a
    sentence of a text the call passes may say it ("Your transfer pickup has been moved to
    12:25."; round 30, three such messages scored 0.667). What the world did on its own to
    records no call named (a flight delayed elsewhere) is no part of it, nor is a word of
    negation, retraction or sending: "... has not been moved", "... and the driver notified"."""
    if book is None:
        return set()
    start = golden.initial.get(action.env, {})
    end = states_at(golden, action.turn).get(action.env, {})
    calls = [a for a in golden.actions if a.env == action.env and a.turn <= action.turn]
    named = {str(v) for a in calls for v in scalars(a.args)}
    found: set[str] = set()
    for collection in book.collections:
        old, new = start.get(collection) or {}, end.get(collection) or {}
        if not isinstance(old, dict) or not isinstance(new, dict):
            continue
        for key in sorted((set(old) | set(new)) & named - made):
            before, after = old.get(key, MISSING), new.get(key, MISSING)
            if not vr.same(before, after):
                # what it holds now: "moved to 12:25", never the 12:15 it held
                found |= written_words(before, after, replaced=False)
                found |= set(vr.words(book.entity(collection).noun))
                found |= _named_words(after)
                # ... and by what the world's reference data say of it: "your transfer at London
                # Heathrow" of a transfer by Heathrow Executive Cars, whose airport is LHR (round
                # 66, R4: 0.667)
                found |= {w for row in reference_closure(book, after) for w in _named_words(row)}
    return found - vr.NEGATIONS - vr.RETRACTIONS - vr.SENDING


def _named_words(record: Any) -> set[str]:
    """The words of a record's short texts that are no id and no time (the provider of an
    airport transfer, "Dublin Chauffeur Direct"): what the record is called, which a sentence
    telling its change may name it by ("your pickup in Dublin has been moved to 14:25"; round
    44, R4: 0.667)."""
    return {
        w
        for v in scalars(record)
        if isinstance(v, str) and len(v) <= NAME_LIMIT and not ID_LIKE.match(v) and not is_time(v)
        for w in vr.words(v)
    }


def _people(values: Any) -> set[str]:
    """The words of the people's names ``values`` hold (lower-cased): fields called ``*name*``,
    the display names of addresses, and any value written as a person's name ("Bruno Costa")."""
    written = [text for _, text in _keyed_strings(values) if PERSON_NAME.fullmatch(text)]
    return {w.lower() for text in [*person_names(values), *written] for w in _NAME_WORD.findall(text)}


PERSON_NAME = re.compile(r"[A-Z][a-z]+(?: [A-Z][a-z]+){1,2}")


def rostered(states: list[Any], handles: set[str], book: Phrasebook | None) -> list[tuple[str, str]]:
    """The handles among ``handles`` that a top-level roster of the world maps to a person's
    name (notes_desk's ``members``: "amara" -> "Amara Okafor"), each with that name: the people
    a record holding the handle is for, as a person record's name would say."""
    found: list[tuple[str, str]] = []
    for state in states:
        for key, table in state.items():
            if not isinstance(table, dict) or (book is not None and key in book.collections):
                continue
            for handle in sorted(handles):
                name = table.get(handle)
                if isinstance(name, str) and PERSON_NAME.fullmatch(name) and (handle, name) not in found:
                    found.append((handle, name))
    return found


def _kept_lower(near: list[Any]) -> set[str]:
    """The words of the values the world keeps in lower case (a status, a class, a feature),
    never of an address or a path."""
    return {
        w.lower()
        for t in near
        for _, v in _keyed_strings(t)
        if v == v.lower() and "@" not in v and "/" not in v
        for w in _NAME_WORD.findall(v)
    }


def _party(book: Phrasebook | None, states: list[Any], action: Action, acted: set[str]) -> set[str]:
    """The words of the name of the party a call acts for, when one of its arguments names that
    party's kind (``cancelled_by="rider"``): the person of that kind the call's records lead to
    within three steps (the trip's request's rider), whom an attribution may name ("plans changed
    (per Chloe Silva)"), and no other person of those records (the trip's driver)."""
    if book is None or not acted:
        return set()
    kinds = {c for c in book.collections if set(vr.words(book.entity(c).noun)) & acted}
    found: set[str] = set()
    todo, seen = [v for v in scalars(action.args) if isinstance(v, str)], set()
    for _depth in range(3):
        nxt = []
        for key in todo:
            for state in states:
                collection = book.collection_of(state, key) if key not in seen else None
                if collection is None:
                    continue
                record = state[collection][key]
                if collection in kinds:
                    found |= {w.lower() for text in person_names(record) for w in _NAME_WORD.findall(text)}
                nxt += [v for v in scalars(record) if isinstance(v, str) and v != key]
            seen.add(key)
        todo = nxt
    return found


def _only_named(record: Any, named: set[str]) -> Any:
    """``record`` with each collection nested in it that holds one of ``named`` (under its key,
    or as a value of an entry: a run's jobs, one of them the call's ``job``) cut down to that
    entry: the others are other things, neither names, asides nor subjects of what the call acts
    on ("Send invoices replaced by the new pipeline" as the reason compute_invoices was
    cancelled; round 48, R2: 1.0)."""
    if isinstance(record, list):  # a workflow's jobs: the one whose name the call gives
        picked = [e for e in record if isinstance(e, dict) and named & {str(v) for v in e.values()}]
        return picked if picked else [_only_named(e, named) for e in record]
    if not isinstance(record, dict):
        return record
    keyed = bool(record) and all(isinstance(v, dict) for v in record.values())
    if keyed and named & set(record):
        return {k: v for k, v in record.items() if k in named}
    return {k: _only_named(v, named) for k, v in record.items()}


_REFERENCE_KEY = re.compile(r"(^|_)(ref|reference|locator|pnr)$")  # a booking's own code


_CODE_KEY = re.compile(r"^(?:code|id|name)$|_(?:code|id)$")  # what names a row of reference data
_REFERENCE_ROWS: dict[str, dict[str, list[dict[str, Any]]]] = {}


def reference_rows(book: Phrasebook, code: str) -> list[dict[str, Any]]:
    """The rows of the environment's reference data (``data/*.json``: airports, transfer
    companies, hotels) a value names by their own code, id or name ("LHR": the airport, London
    Heathrow): what the world says of a code a record holds, which a text may say of it ("your
    transfer at London Heathrow" of a transfer at LHR; round 66, R4: 0.667). Read once per
    environment."""
    index = _REFERENCE_ROWS.get(book.package.id)
    if index is None:
        index = {}
        data = book.package.data
        for name in data.files():
            if name.endswith(".json"):
                for row in _rows_in(thaw(data.json(name))):
                    for key, value in row.items():
                        if isinstance(value, str) and _CODE_KEY.search(key):
                            index.setdefault(value, []).append(row)
        _REFERENCE_ROWS[book.package.id] = index
    return index.get(code, [])


def reference_closure(book: Phrasebook, record: Any) -> list[dict[str, Any]]:
    """The rows of reference data a record's values name, and those their values name in turn
    (a transfer's provider, Heathrow Executive Cars, and that company's airport, LHR)."""
    found: list[dict[str, Any]] = []
    values = [v for v in scalars(record) if isinstance(v, str)]
    for _depth in range(2):
        rows: list[dict[str, Any]] = []
        for row in (row for v in values for row in reference_rows(book, v)):
            if row not in found and row not in rows:
                rows.append(row)
        found += rows
        values = [v for row in rows for v in row.values() if isinstance(v, str)]
    return found


def _rows_in(node: Any) -> list[dict[str, Any]]:
    """The objects of a JSON document that hold no object: its rows."""
    if isinstance(node, list):
        return [row for item in node for row in _rows_in(item)]
    if isinstance(node, dict):
        inner = [row for value in node.values() for row in _rows_in(value)]
        return inner or ([node] if not any(isinstance(v, dict | list) for v in node.values()) else [])
    return []


def identities(record: Any) -> list[str]:
    """The values a record is known by: its ids and codes, its names, titles and subjects, its
    reference (the "BNDXOZ" a trip is booked under: "(booking BNDXOZ)" names the trip; round 50,
    R1: 0.833) and its type (the "boxing-fit" of "the Boxing Fit class"; also of the records
    nested in it), never its other values (a status, a description: what the world says
    happened to it)."""
    return [
        value
        for key, value in _keyed_strings(record)
        if key is not None
        and (
            any(k in key.lower() for k in NAME_KEYS)
            or key.lower().endswith("type")
            or (_REFERENCE_KEY.search(key.lower()) is not None and value.isalnum())
            or ID_LIKE.match(value)
            or _code(value)
            or "@" in value
        )
    ]


def person_names(record: Any) -> list[str]:
    """The names of people a record holds: fields called ``*name*`` and the display names of
    ``Name <address>`` strings."""
    found: list[str] = []
    for key, value in _keyed_strings(record):
        if key is not None and "name" in key.lower() and "@" not in value:
            found.append(value)
        elif "<" in value and "@" in value:
            found.append(value.split("<", 1)[0])
    return found


def _keyed_strings(value: Any, key: str | None = None) -> Iterable[tuple[str | None, str]]:
    """Every string a value holds, with the key it stands under (None for a list's item or a
    bare string: a field's name says nothing of the members of its list)."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _keyed_strings(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _keyed_strings(item)
    elif isinstance(value, str):
        yield key, value


def carried(golden: Outcome, source: Source, text: str) -> str:
    """The value a composed text carries: the one its source call's result shows, else (a result
    that no longer shows it) the first id-like word of the text."""
    if source.call is not None and source.call < len(golden.actions):
        value = value_at(golden.actions[source.call].result, source.path or "")
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value) in text:
            return str(value)
    ids = [w.strip(":,.") for w in text.split() if ID_LIKE.match(w.strip(":,."))]
    return ids[0] if ids else text


SENDS = frozenset({"send", "notify", "contact", "inform"})  # a tool's verb that sends what it makes


def sent_records(acts: Mapping[str, set[str]]) -> list[str] | None:
    """Of the records a report may name (id -> the words of the acts on them), the ones the run
    sent, when it also left a draft unsent; None when it left none (nothing a sending word
    could falsely say went out)."""
    sending = vr.SENDING | SENDS
    if not any("draft" in words and not words & sending for words in acts.values()):
        return None
    return sorted(key for key, words in acts.items() if words & sending)


def sending_claims(framing: set[str], acts: set[str]) -> list[str]:
    """The sending words ("sent", "texted") a text about a draft may not use, less its own
    framing: a draft went nowhere. None where the acts on the records it names sent one of
    them (an SMS to the traveler, then a forward carrying its id): "texted the traveler" is
    then true, and which record a word is about is past what a word check can tell."""
    if acts & (vr.SENDING | SENDS):
        return []
    return sorted(vr.SENDING - framing)


def text_pattern(free: FreeText) -> Any:
    """How a free text is read: composed (carrying values) by those values and its own dictated
    words (``$composed``), a dictated message or note by its words within reason (``$says``), a
    name or a title likewise (``$text``), with the names a greeting or a sign-off around it may
    name (:func:`addressed`); see :mod:`envcraft.tasks.verifier.runtime`."""
    text, embedded = free.text, free.embedded
    if embedded:
        value = embedded[0]
        rest = text.split(value, 1)[1].lstrip(": ").strip() if value in text else ""
        framing = set(vr.words(text)) - set(vr.words(rest)) - {w for v in embedded for w in vr.words(v)}
        spec = {"says": rest, "carries": embedded, "framing": sorted(framing | set(free.restated))}
        if free.later_times:  # a time the user asks for only later is no fact yet
            spec["later_times"] = free.later_times
        if free.names:  # whom a greeting may name, as around dictated words (:func:`addressed`)
            spec |= {"names": sorted(free.names["names"]), "others": sorted(free.names.get("others", ()))}
        # ... and what the run did to the records the call names ("your pickup is now at 16:45"
        # of the transfer the turn moved), as around dictated words (:func:`addressed`)
        told = set(free.context) | set(free.names.get("done", ()))
        # ... and the records the call itself names: the message a to-do is linked to ("Check
        # the invoice totals - action item AI-006, re MSG-0009"; round 62, R3: 0.75)
        told |= {w for key in free.keys if ID_LIKE.match(key) for w in vr.words(key)}
        context = sorted(told - framing - vr.POLITE - vr.MENTION - vr.POINTING)
        if "draft" in free.context:  # a note about a draft may not say it went out
            claims = sending_claims(framing, set(free.context))
            if claims:
                spec["claims"] = claims
        return {"$composed": {**spec, "context": context} if context else spec}
    names = dict(free.names)
    party, bystanders = set(names.pop("party", ())), set(names.pop("bystanders", ()))
    subjects = names.pop("subjects", [])
    reason = any(w in free.param for w in REASON_WORDS)
    if party and reason:  # who asked may be named, no one else
        names["others"] = sorted((set(names.get("others", ())) | bystanders) - party)
    if subjects and reason:  # and may be said to have done it
        names["subjects"] = subjects
    if "acted" in names:  # the words of the call's own arguments, less the text's own
        names["acted"] = sorted(set(names["acted"]) - set(vr.words(text)))
    if "aside" in names:  # labelled with what the text is ("Reason: ..."), or as the user put it
        names["aside"] = sorted({*names["aside"], *vr.words(humanize(free.param)), *free.restated})
        names["label"] = sorted({*names.get("label", ()), *vr.words(humanize(free.param))})
    if free.param in BODY_PARAMS:
        return {"$says": {"text": text, **names}}
    attributed = {"attributed": True} if any(w in free.param for w in REASON_WORDS) else {}
    return {"$text": {"text": text, **names, **attributed}}


def as_block(lines: list[Any], text: str, said: Any) -> list[Any]:
    """``lines`` with the lines of a text of several lines made one ``$block`` entry read as
    ``said``: as written (a mail's body) or quoted with "> " (a reply quoting it), the quoted
    blank lines inside it dropped; unchanged unless every line of the text is there."""
    parts = [part.strip() for part in text.split("\n") if part.strip()]
    if len(parts) < 2:
        return lines
    for quote in ("", "> "):
        taken: list[int] = []
        for part in parts:
            hit = next(
                (
                    i
                    for i, line in enumerate(lines)
                    if i not in taken and isinstance(line, str) and line.strip() == quote + part
                ),
                None,
            )
            if hit is None:
                break
            taken.append(hit)
        else:
            first, last = min(taken), max(taken)
            drop = set(taken) | {i for i in range(first, last) if quote and lines[i] == quote.strip()}
            return [
                {"$block": said} if i == first else line
                for i, line in enumerate(lines)
                if i == first or i not in drop
            ]
    return lines


def frame(whole: str, said: Mapping[str, Any]) -> Any:
    """``whole`` (which holds the texts of ``said``) with each text read as ``said`` says wherever
    it stands (a file listing two to-dos, each with its dictated words) and the rest as written;
    a longer text first where two overlap."""
    found = re.compile("|".join(re.escape(t) for t in sorted(said, key=len, reverse=True)))
    parts: list[Any] = []
    last = 0
    for hit in found.finditer(whole):
        parts += [whole[last : hit.start()], said[hit.group(0)]]
        last = hit.end()
    return {"$framed": [*parts, whole[last:]]}


def scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)


def scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from scalars(v)
    else:
        yield value


def split_path(path: str) -> tuple[str | None, str, str]:
    """``/orders/O-1/status`` -> ("orders", "O-1", "/status"); top-level paths -> (None, "", "")."""
    parts = path.split("/")
    if len(parts) < 3:
        return None, "", ""
    rest = "/".join(["", *parts[3:]]) if len(parts) > 3 else ""
    return unescape_token(parts[1]), unescape_token(parts[2]), rest


def is_free(book: Phrasebook, collection: str, rest: str) -> bool:
    top = rest.split("/")[1] if rest.count("/") >= 1 else ""
    return unescape_token(top) in book.free_fields(collection)


def is_timestamp(change: dict[str, Any]) -> bool:
    return is_time(change.get("after")) or is_time(change.get("before"))


def is_counter(change: dict[str, Any]) -> bool:
    return change["path"].count("/") == 1 and isinstance(change.get("after"), int | float)


def under_any(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith(r + "/") or r.startswith(path + "/") for r in roots)


def short(value: Any) -> str:
    """A check name's rendering of an expected value (wildcards shown as ``<kind>``)."""
    text = repr(_display(value))
    return text if len(text) <= NAME_LIMIT else text[: NAME_LIMIT - 3] + "..."


class _Kind(str):
    def __repr__(self) -> str:
        return f"<{self}>"


def _display(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$any"}:
        return _Kind(value["$any"])
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("$"):
        op, arg = next(iter(value.items()))
        if op in ("$says", "$text") and isinstance(arg, dict):
            arg = arg["text"]  # the names a greeting may hold are no part of a check's name
        return _Kind(f"{op[1:]} {arg!r}")
    if isinstance(value, dict):
        return {k: _display(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_display(v) for v in value]
    return value


def written_words(before: Any, after: Any, replaced: bool = True) -> set[str]:
    """What a run wrote into one record (``MISSING`` before: it made it), as a report may state
    it done: every value it set and, where ``replaced``, the value it replaced ("from 60 to
    51"), with the names of their fields and the keys their paths pass ("posted in period
    2026-01", "on-hand of SKU-17680 is now 51"; round 29, true details that scored 0.75). A flag
    set false and an emptied field say nothing happened: their names are left out."""
    found: set[str] = set()
    old = None if before is MISSING else before
    new = None if after is MISSING else after
    for change in diff(old, new):
        steps = [unescape_token(p) for p in change["path"].split("/")[1:]]
        last = steps[-1] if steps else ""
        was = _leaves(change["before"], last) if replaced else []
        for name, value in [*_leaves(change["after"], last), *was]:
            if value is False or value in ("", None):
                continue
            found.update(w for step in steps[:-1] for w in vr.words(humanize(step)))
            found.update(vr.words(humanize(name)))
            if type(value) is int:
                found.update(said_numbers(name, abs(value)))
            elif isinstance(value, str) and len(value) <= NAME_LIMIT:
                found.update(affirmed(value))
    return found


def _leaves(value: Any, name: str) -> list[tuple[str, Any]]:
    """``(field name, value)`` of every scalar of a written value (``name`` for a scalar)."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, str(k))]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, name)]
    return [(name, value)]
