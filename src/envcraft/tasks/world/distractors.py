"""S0 with distractors: near-duplicates of the entities a task is about.

A task whose target is the only plausible entity in S0 rewards sloppy agents. We insert,
next to each target entity, a near-duplicate under a fresh id: the *same name* with another
value in one of the fields it may differ in, a *similar record* with one such field changed,
or a *neighbouring time slot* (one timestamp shifted). Which fields a look-alike may differ
in is the environment's declaration (``Entity(vary=...)``); a collection declared without
them gets no look-alikes, and an undeclared one (an environment without declarations) may
vary any field. Every copy must pass the environment's ``State`` model and the semantic
rules it declares (``Environment.rule_violations``), and name no past moment after the clock
start, or it is dropped: a look-alike never breaks a rule of the world the agent reads about.
The distractor paths go to the verifier synthesizer, which checks that they stay untouched.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from pydantic import ValidationError

from envcraft.core.errors import ErrorCategory, is_error
from envcraft.core.package import EnvPackage
from envcraft.core.pointer import escape_token, unescape_token
from envcraft.core.session import Session
from envcraft.tasks.graphs.graph import ToolGraph
from envcraft.tasks.phrasing.phrasebook import Phrasebook, phrasebook
from envcraft.tasks.values.args import id_kind
from envcraft.tasks.world.rules import late_state_times

MAX_DISTRACTORS = 3
TRIES = 3  # copies tried per target when the tools refuse a look-alike
NAME_FIELDS = ("name", "title", "full_name", "display_name", "label", "customer", "supplier")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:\d{2})?$")
_DAY = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")  # a date or a month: a value, never a handle


@dataclass(frozen=True)
class Distractor:
    env: str
    path: str  # JSON pointer of the new entity, e.g. /orders/ORD-100913
    of: str  # the target it imitates
    kind: str  # same_name | one_field | time_slot
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"env": self.env, "path": self.path, "of": self.of, "kind": self.kind, "field": self.field}


def add_distractors(
    initial: dict[str, dict[str, Any]],
    targets: list[dict[str, str]],
    packages: Mapping[str, EnvPackage],
    rng: random.Random,
    limit: int = MAX_DISTRACTORS,
    files: Mapping[str, str] | None = None,
    accept: Callable[[str, dict[str, Any]], bool] | None = None,
    usable: Callable[[Distractor, dict[str, dict[str, Any]]], bool] | None = None,
) -> tuple[dict[str, dict[str, Any]], list[Distractor]]:
    """A copy of ``initial`` with up to ``limit`` near-duplicates of the target entities, each one
    valid for the environment's State model and semantic rules (and ``accept(env, state)``).

    ``usable(distractor, states)`` says whether the tools accept the look-alike where the task
    acts on its original (a refused one tests nothing). A target whose copy is not usable, or
    says something happened after the clock start (a slot moved past "now"), gets up to
    ``TRIES`` copies in all (another field or shift), then the next target takes its turn."""
    states = {env: _copy(state) for env, state in initial.items()}
    made: list[Distractor] = []
    pool = [t for t in targets if _entity(states.get(t["env"], {}), t["path"]) is not None]
    rng.shuffle(pool)
    budget = limit  # targets to try; one whose copies the tools all refuse hands its turn on
    for target in pool:
        if budget == 0:
            break
        budget -= 1
        env = target["env"]
        package = packages[env]
        for attempt in range(TRIES):
            candidate = _copy(states[env])
            distractor = _insert(candidate, env, target["path"], rng, phrasebook(package))
            if distractor is None:
                break
            try:
                model = package.env_class.State.model_validate(candidate)
            except ValidationError:
                break
            if package.env_class.rule_violations(model, dict(files or {})):
                break
            if accept is not None and not accept(env, candidate):
                break
            if late_state_times(candidate, package.clock.base_time) or (  # an order placed tomorrow
                usable is not None and not usable(distractor, {**states, env: candidate})
            ):
                budget += attempt == TRIES - 1
                continue
            states[env] = candidate
            made.append(distractor)
            break
    return states, made


def _copy(value: Any) -> Any:
    """A deep copy of a JSON state, by an orjson round trip (ten times faster than ``deepcopy``);
    values the round trip would change (tuples, NaN, subclasses, big integers) go through ``deepcopy``."""
    try:
        copied = orjson.loads(orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_SUBCLASS))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)
    return copied if copied == value else copy.deepcopy(value)  # a tuple or NaN came back changed


def _entity(state: dict[str, Any], path: str) -> dict[str, Any] | None:
    parts = [unescape_token(p) for p in path.lstrip("/").split("/")]
    if len(parts) != 2:
        return None
    collection = state.get(parts[0])
    if not isinstance(collection, dict):
        return None
    entity = collection.get(parts[1])
    return entity if isinstance(entity, dict) else None


def _insert(
    state: dict[str, Any], env: str, path: str, rng: random.Random, book: Phrasebook
) -> Distractor | None:
    """Add one near-duplicate of the entity at ``path`` to ``state`` (in place)."""
    name, old_id = (unescape_token(p) for p in path.lstrip("/").split("/"))
    declared = book.declared.get(name)
    if declared is not None and not declared.vary:
        return None  # the environment says its records of this kind have no look-alikes
    collection: dict[str, Any] = state[name]
    new_id = _new_id(old_id, set(collection), rng)
    if new_id is None:
        return None
    clone = _replace_string(copy.deepcopy(collection[old_id]), old_id, new_id)
    kinds = _applicable(clone, declared.vary if declared is not None else None)
    if not kinds:
        return None
    kind, field_name = rng.choice(kinds)
    keep = {field_name} if kind == "same_name" else set()
    for key in _unique_strings(collection):
        value = clone.get(key)
        if key in keep or not isinstance(value, str):
            continue
        if declared is not None and " " in value.strip():
            continue  # a title or a name: a true look-alike shares it (only emails, handles must differ)
        clone[key] = _variant(value, rng)
    if kind == "one_field":
        assert field_name is not None
        clone[field_name] = _similar(clone[field_name], field_name, collection, rng)
    elif kind == "time_slot":
        assert field_name is not None
        delta = rng.choice(SHIFTS)
        moved = [field_name] if declared is None else [k for k in declared.vary if _is_iso(clone.get(k))]
        for key in moved:  # a declared slot moves as a whole (start and end together)
            clone[key] = _shift_time(clone[key], delta)
    collection[new_id] = clone
    _add_back_references(state, old_id, new_id)
    return Distractor(env, f"/{escape_token(name)}/{escape_token(new_id)}", path, kind, field_name)


def _applicable(entity: dict[str, Any], vary: tuple[str, ...] | None) -> list[tuple[str, str | None]]:
    """(kind, field) pairs a look-alike of ``entity`` can be: the fields it may differ in."""
    kinds: list[tuple[str, str | None]] = []
    names = [k for k in NAME_FIELDS if isinstance(entity.get(k), str)]
    if names and vary is None:
        kinds.append(("same_name", names[0]))
    for key, value in entity.items():
        if vary is not None and key not in vary:
            continue
        if vary is None and (id_kind(key) or key == "id" or key in names):
            continue
        if isinstance(value, str) and _ISO.match(value):
            kinds.append(("time_slot", key))
        elif isinstance(value, bool | int | float | str) and value != "":
            kinds.append(("one_field", key))
    return kinds


def _unique_strings(collection: dict[str, Any]) -> list[str]:
    """Non-id string fields whose values differ across all entities (emails, handles): a copy
    must not repeat them, or the environment's lookups by that field become ambiguous. Times,
    dates and months that happen to differ are values, not handles ("2026-03-04 5" is no date)."""
    entities = [e for e in collection.values() if isinstance(e, dict)]
    if len(entities) < 2:
        return []
    keys = set.intersection(*(set(e) for e in entities))
    unique = []
    for key in sorted(keys):
        values = [e[key] for e in entities]
        if (
            not id_kind(key)
            and key != "id"
            and all(isinstance(v, str) and v for v in values)
            and len(set(values)) == len(values)
            and not all(_ISO.match(v) or _DAY.match(v) for v in values)
        ):
            unique.append(key)
    return unique


def _variant(value: str, rng: random.Random) -> str:
    """A look-alike of a unique string: ``ann.lee@x.com`` -> ``ann.lee7@x.com``, ``Ann`` -> ``Ann 7``."""
    digit = str(rng.randint(2, 9))
    if "@" in value:
        local, domain = value.split("@", 1)
        return f"{local}{digit}@{domain}"
    return f"{value} {digit}"


def _similar(value: Any, field_name: str, collection: dict[str, Any], rng: random.Random) -> Any:
    """A plausible other value for one field: another value seen in the collection, or a nudge."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return max(0, value + rng.choice((-3, -2, -1, 1, 2, 3))) if value not in (0, 1) else value + 1
    if isinstance(value, float):
        return round(value * rng.choice((0.9, 1.1, 1.25)), 2) or 1.0
    seen = sorted(
        {e.get(field_name) for e in collection.values() if isinstance(e, dict)} - {value, None}, key=str
    )
    seen = [v for v in seen if isinstance(v, str)]
    return rng.choice(seen) if seen else f"{value} (2)"


SHIFTS = (timedelta(hours=1), timedelta(hours=-1), timedelta(days=1), timedelta(days=-1), timedelta(hours=2))


def _is_iso(value: Any) -> bool:
    return isinstance(value, str) and bool(_ISO.match(value))


def _shift_time(value: str, delta: timedelta) -> str:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    shifted = parsed + delta
    text = shifted.isoformat()
    if value.endswith("Z"):
        text = text.replace("+00:00", "Z")
    if len(value) == 16:  # minutes precision, no seconds
        text = text[:16]
    return text


def _new_id(old: str, taken: set[str], rng: random.Random) -> str | None:
    """A fresh id shaped like ``old`` (same prefix and width), far from ids a counter would mint."""
    match = _TRAILING_NUMBER.match(old)
    if not any(ch.isalpha() for ch in old):
        return None  # dates, periods, bare numbers: a shifted copy would be a different thing
    for _ in range(50):
        if match:
            prefix, digits = match.groups()
            number = int(digits) + rng.randint(500, 899)
            candidate = f"{prefix}{number:0{len(digits)}d}"
        else:
            candidate = f"{old}-{rng.randint(2, 99)}"
        if candidate not in taken:
            return candidate
    return None


def _replace_string(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: _replace_string(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_string(v, old, new) for v in value]
    return new if value == old else value


def _add_back_references(node: Any, old: str, new: str) -> None:
    """Where S0 lists the original's id (a customer's ``order_ids``), list the copy too."""
    if isinstance(node, dict):
        for child in node.values():
            _add_back_references(child, old, new)
    elif isinstance(node, list):
        if old in node and new not in node and all(isinstance(v, str) for v in node):
            node.append(new)
        else:
            for child in node:
                _add_back_references(child, old, new)


def breaks_lookups(
    package: EnvPackage,
    graph: ToolGraph,
    state: dict[str, Any],
    made: list[Distractor],
    files: dict[str, str],
) -> bool:
    """Whether the distractors make the environment's own lookups crash.

    A copy can pass the ``State`` model yet break an invariant the tools rely on (a service
    that must also exist in reference data): then a listing or a lookup of the copy returns
    ``internal_error``. We call every read-only tool that needs no argument, and every
    read-only tool taking one id with each distractor's id, on the distracted S0.
    """
    ids = [unescape_token(d.path.rsplit("/", 1)[-1]) for d in made if d.env == package.id]
    if not ids:
        return False
    with Session.memory(package, state=state, files=files) as session:
        for node in graph.nodes.values():
            if not node.read_only or node.system:
                continue
            if not node.required:
                trials: list[dict[str, Any]] = [{}]
            elif len(node.required) == 1 and id_kind(node.required[0]):
                trials = [{node.required[0]: i} for i in ids]
            else:
                continue
            for args in trials:
                result = session.call(node.name, args)
                if is_error(result) and result["error"]["category"] == ErrorCategory.INTERNAL_ERROR:
                    return True
    return False
