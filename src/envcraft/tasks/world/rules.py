"""The rules every task's world keeps, whatever its environments: checked on a finished task.

A task's S0 is composed from several parts (each environment's generator, the Claw templates,
files that hide a fact, look-alike records), and each part can contradict another. A world
that contradicts itself is a bad task: the agent reads a mailbox in a notes desk, a log written
hours after "now", or a look-alike its tools refuse (acting on it is no mistake, so it tests
nothing). :func:`world_violations` names every such contradiction of a task, by class:

- ``env_rules``: S0 breaks its environment's ``State`` model or declared semantic rules
  (:meth:`~envcraft.core.environment.Environment.rule_violations`);
- ``foreign_files``: the workspace holds files that only another Claw environment makes;
- ``future_times``: a workspace file carries a time after the clock start of the environment
  that made it (a file the task made itself: after the earliest clock of the task's envs), or
  an S0 record says something already happened (``placed_at``, ``opened_at``) after it;
- ``refused_lookalike``: the first write the reference makes on a record is refused when made
  on that record's look-alike;
- ``fallback_owner``: the record a user names as the fallback, when the asked call fails ("if
  that is not possible, cancel ... instead"), belongs to another person (customer, traveler)
  than the one it replaces: no person asks that;
- ``foreign_text``: a text the user dictates for a call (a title, a note, a body) names another
  record of a collection the call acts on (an incident on inventory-sync titled "auth-service
  disk usage above 85%": S0's text of another record, copied): no person writes that;
- ``taken_name``: a record the user asks to make takes the name or title a record of the same
  collection already has ("Track a new action item “Set up the churn cohort report”" beside an
  open item of that title; "Create a recipe called “Drop orders exported twice”" beside RCP-02):
  a person would point at the one there, and the agent cannot tell which is meant.

Synthesis drops a task with any of them (``world:<class>``, counted in ``stats.json``);
``scripts/scan_worlds.py`` counts them over a corpus.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from envcraft.core.errors import is_error
from envcraft.core.package import EnvPackage
from envcraft.core.pointer import unescape_token
from envcraft.tasks.format.model import Task
from envcraft.tasks.golden.run import LiveSessions
from envcraft.tasks.graphs.effects import tool_effects
from envcraft.tasks.values.args import TAKEN_KEYS, names_key, same_name

# A date and a time of day (seconds, fraction and zone optional): what a log line or a record carries.
_STAMP = re.compile(r"\b(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
# A bare time of day opening a log line: read as on the day the clock starts.
_LOG_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})\b", re.MULTILINE)
# State fields naming a moment that has already happened (a schedule, an ETA, a landing time may
# lie ahead; these may not).
PAST_FIELDS = re.compile(
    r"^(?:created|opened|closed|finished|received|sent|issued|placed|delivered|started|reconciled|"
    r"updated|submitted|booked|cancelled|completed|resolved|acknowledged|posted|committed|logged|"
    r"last_seen|requested|paid|refunded)_at$|^date$"
)
CLASSES = (
    "env_rules",
    "foreign_files",
    "future_times",
    "refused_lookalike",
    "fallback_owner",
    "foreign_text",
    "taken_name",
)


@dataclass(frozen=True)
class Violation:
    kind: str  # one of CLASSES
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def world_violations(
    task: Task,
    packages: Mapping[str, EnvPackage],
    others: Iterable[EnvPackage] = (),
    owners: Mapping[str, str] | None = None,
) -> list[Violation]:
    """Every contradiction in ``task``'s world. ``packages`` holds the task's environments,
    ``others`` the other Claw environments whose files must not appear in its workspace;
    ``owners`` maps each S0 file to the environment that made it (when the caller knows it,
    as synthesis does; else :func:`workspace_owners` finds it)."""
    if owners is None:
        owners = workspace_owners(task, [*packages.values(), *(p for p in others if p.id not in packages)])
    found: list[Violation] = []
    found += _env_rules(task, packages)
    found += _foreign_files(task, owners)
    found += _future_times(task, packages, owners)
    found += _refused_lookalikes(task, packages)
    found += _fallback_owners(task)
    found += _foreign_texts(task)
    found += _taken_names(task, packages)
    return found


# -- env_rules ---------------------------------------------------------------------------------
def _env_rules(task: Task, packages: Mapping[str, EnvPackage]) -> list[Violation]:
    found = []
    for env, state in task.initial_state.items():
        env_class = packages[env].env_class
        try:
            model = env_class.State.model_validate(state)
        except ValidationError as exc:
            found.append(Violation("env_rules", f"{env}: S0 fails its State model: {exc.errors()[0]['msg']}"))
            continue
        found += [
            Violation("env_rules", f"{env}: {m}") for m in env_class.rule_violations(model, task.workspace)
        ]
    return found


# -- foreign_files -----------------------------------------------------------------------------
def generator_seed(tag: str, env: str) -> int:
    """The seed synthesis gives ``env``'s generator for the task tagged ``tag`` (its
    ``provenance.seed``): so a task's S0 files can be made again and their makers known."""
    return int.from_bytes(hashlib.sha256(f"{tag}:{env}".encode()).digest()[:4], "big")


def workspace_owners(task: Task, packages: Iterable[EnvPackage], size: int = 1) -> dict[str, str]:
    """Which Claw environment made each S0 workspace file of ``task``: each of ``packages`` is
    generated again with the task's seed (a file none of them makes is the task's own)."""
    tag = str(task.provenance.get("seed", ""))
    owners: dict[str, str] = {}
    for package in packages:
        if package.kind != "claw":
            continue
        generated = package.env_class.generate(
            seed=generator_seed(tag, package.id), size=size, data=package.data
        )
        for path in {**package.workspace_template, **generated.files}:
            if path in task.workspace:
                owners.setdefault(path, package.id)
    return owners


def _foreign_files(task: Task, owners: Mapping[str, str]) -> list[Violation]:
    found = []
    for path in sorted(task.workspace):
        owner = owners.get(path)
        if owner is not None and owner not in task.envs:
            found.append(
                Violation("foreign_files", f"{path} is a {owner} file; the task's envs are {task.envs}")
            )
    return found


# -- future_times ------------------------------------------------------------------------------
def file_times(text: str, day: datetime) -> list[datetime]:
    """The moments a file's text names: full timestamps (naive ones as UTC) and bare times of
    day opening a line (on ``day``)."""
    moments = []
    for match in _STAMP.finditer(text):
        date, clock, zone = match.groups()
        stamp = f"{date}T{clock}{'' if zone in (None, 'Z') else zone}"
        try:
            parsed = datetime.fromisoformat(stamp)
        except ValueError:
            continue
        moments.append(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
    for hour, minute, second in _LOG_TIME.findall(text):
        if int(hour) < 24 and int(minute) < 60 and int(second) < 60:
            moments.append(day.replace(hour=int(hour), minute=int(minute), second=int(second), microsecond=0))
    return moments


def late_state_times(state: Any, start: datetime, pointer: str = "") -> list[str]:
    """``pointer: time`` of every field of ``state`` that names a past moment (:data:`PAST_FIELDS`)
    yet lies after ``start``."""
    found = []
    if isinstance(state, dict):
        for key, value in state.items():
            here = f"{pointer}/{key}"
            if isinstance(value, str) and PAST_FIELDS.match(str(key)):
                moments = file_times(value, start)
                if moments and moments[0] > start:
                    found.append(f"{here}: {value}")
            else:
                found += late_state_times(value, start, here)
    elif isinstance(state, list):
        for index, value in enumerate(state):
            found += late_state_times(value, start, f"{pointer}/{index}")
    return found


def _future_times(
    task: Task, packages: Mapping[str, EnvPackage], owners: Mapping[str, str]
) -> list[Violation]:
    starts = {env: packages[env].clock.base_time for env in task.envs}
    earliest = min(starts.values())
    found = [
        Violation("future_times", f"{env} S0 {late} is after the clock start {starts[env].isoformat()}")
        for env, state in task.initial_state.items()
        for late in late_state_times(state, starts[env])
    ]
    for path, text in sorted(task.workspace.items()):
        start = starts.get(owners.get(path, ""), earliest)
        late = [m for m in file_times(text, start) if m > start]
        if late:
            found.append(
                Violation(
                    "future_times",
                    f"{path}: {max(late).isoformat()} is after the clock start {start.isoformat()}",
                )
            )
    return found


# -- refused_lookalike -------------------------------------------------------------------------
def _refused_lookalikes(task: Task, packages: Mapping[str, EnvPackage]) -> list[Violation]:
    calls = [(c.env, c.tool, c.args) for c in task.reference.calls]
    expected = {s["call"] for s in task.provenance.get("steps", [])}
    found = []
    for distractor in task.provenance.get("distractors", []):
        refusal = lookalike_refusal(calls, expected, packages, task.initial_state, task.workspace, distractor)
        if refusal is not None:
            found.append(Violation("refused_lookalike", f"{distractor['path']}: {refusal}"))
    return found


Call = tuple[str, str, dict[str, Any]]  # env, tool, args


def lookalike_refusal(
    calls: Sequence[Call],
    expected: Collection[int],
    packages: Mapping[str, EnvPackage],
    initial: Mapping[str, dict[str, Any]],
    files: Mapping[str, str],
    distractor: Mapping[str, Any],
) -> str | None:
    """Why the tools refuse the look-alike (None if they accept it): the first write of ``calls``
    that names the original record (not one of the ``expected`` errors), made on the look-alike
    in fresh sessions of ``initial`` after the calls before it."""
    original = unescape_token(str(distractor["of"]).rsplit("/", 1)[-1])
    copy = unescape_token(str(distractor["path"]).rsplit("/", 1)[-1])
    for index, (env, tool, args) in enumerate(calls):
        if env != distractor["env"] or index in expected or not _writes(packages[env], tool):
            continue
        if not _mentions(args, original):
            continue
        with LiveSessions(packages, initial, files) as live:
            for before in calls[:index]:
                live.call(*before)
            result = live.call(env, tool, _swap(args, original, copy))
        if is_error(result):
            error = result["error"]
            return f"{tool} on it: {error['category']}: {error['message']}"
        return None
    return None


def _writes(package: EnvPackage, tool: str) -> bool:
    """Whether ``tool`` may change the world (as the tool graph reads it: declared, else analysed)."""
    spec = package.env_class.tools.get(tool)
    if spec is None:
        return False
    if spec.annotations.read_only is not None:
        return not spec.annotations.read_only
    effects = tool_effects(package.env_class)[tool]
    return bool(effects.writes or effects.ws_writes)


def _mentions(value: Any, key: str) -> bool:
    if isinstance(value, dict):
        return any(_mentions(v, key) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, key) for v in value)
    return value == key


def _swap(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: _swap(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    return new if value == old else value


# -- fallback_owner ----------------------------------------------------------------------------
def _fallback_owners(task: Task) -> list[Violation]:
    """A failing call of the reference and its fallback (the next call of the same tool) name
    records of one collection; the people those records refer to must be the same."""
    calls = task.reference.calls
    found = []
    for step in task.provenance.get("steps", []):
        failed = calls[step["call"]]
        fallback = next(
            (c for c in calls[step["call"] + 1 :] if (c.env, c.tool) == (failed.env, failed.tool)), None
        )
        if fallback is None:
            continue
        state = task.initial_state[failed.env]
        for arg, value in failed.args.items():
            other = fallback.args.get(arg)
            collection = _collection_of(state, value)
            if other == value or collection is None or _collection_of(state, other) != collection:
                continue
            first, second = state[collection][value], state[collection][other]
            for key, owner in first.items():
                person = _collection_of(state, owner)
                if (
                    person is not None
                    and key != arg
                    and owner != second.get(key)
                    and _is_person(state[person][owner])
                ):
                    found.append(
                        Violation(
                            "fallback_owner",
                            f"{failed.tool}: the fallback {other} belongs to {second.get(key)}, "
                            f"{value} to {owner}",
                        )
                    )
    return found


# -- foreign_text ------------------------------------------------------------------------------
def _foreign_texts(task: Task) -> list[Violation]:
    """A text argument the user gives (words, not a code) that names, by its key, a record of a
    collection whose record the same call names by another key."""
    found = []
    for call in task.reference.calls:
        state = task.initial_state.get(call.env, {})
        named: dict[str, set[str]] = {}
        texts = []
        for arg, value in call.args.items():
            collection = _collection_of(state, value)
            if collection is not None:
                named.setdefault(collection, set()).add(value)
            elif isinstance(value, str) and " " in value.strip() and call.source(arg).kind == "user":
                texts.append(value)
        for text in texts:
            for collection, keys in named.items():
                other = next((k for k in state[collection] if k not in keys and names_key(text, k)), None)
                if other is not None:
                    about = ", ".join(sorted(keys))
                    found.append(
                        Violation("foreign_text", f"{call.tool}: {text!r} names {other}, not {about}")
                    )
    return found


# -- taken_name --------------------------------------------------------------------------------


def _taken_names(task: Task, packages: Mapping[str, EnvPackage]) -> list[Violation]:
    """A name the user gives a call (``name``, ``title``, ``label``) that a record of a collection
    the call writes already has in S0, where the call names no record of that collection (so it
    makes one: a rename of that very record is no clash)."""
    found = []
    for call in task.reference.calls:
        package = packages.get(call.env)
        effects = tool_effects(package.env_class).get(call.tool) if package is not None else None
        if effects is None:
            continue
        state = task.initial_state.get(call.env, {})
        named = {_collection_of(state, v) for v in call.args.values()}
        for arg, value in call.args.items():
            if arg not in TAKEN_KEYS or not isinstance(value, str) or call.source(arg).kind != "user":
                continue
            for collection in sorted(effects.writes - named):
                records = state.get(collection)
                taken = _named(records, arg, value) if isinstance(records, dict) else None
                if taken is not None:
                    found.append(Violation("taken_name", f"{call.tool}: {arg} {value!r} is {taken}'s"))
    return found


def _named(records: Mapping[str, Any], field: str, value: str) -> str | None:
    """The key of the record whose ``field`` is ``value`` (up to case and spacing), if any."""
    for key, record in records.items():
        if isinstance(record, dict) and same_name(str(record.get(field, "")), value):
            return str(key)
    return None


def _collection_of(state: Mapping[str, Any], key: Any) -> str | None:
    """The collection of ``state`` whose record ``key`` is (None: no record's key)."""
    if not isinstance(key, str):
        return None
    for name, records in state.items():
        if isinstance(records, dict) and isinstance(records.get(key), dict):
            return name
    return None


def _is_person(record: Mapping[str, Any]) -> bool:
    """A customer, traveler, member: someone reachable by email or phone."""
    return any(isinstance(record.get(k), str) and record.get(k) for k in ("email", "phone"))
