"""Argument values for tool calls: what a user could supply, and which outputs may feed a parameter.

Two questions recur across the engine. *Which output field can feed this parameter?* —
answered by name, type and entity kind (:func:`param_matches`: a result key ``order_id``,
``order_ids[]`` or ``orders[].id`` feeds a parameter ``order_id``). *What would a user
say for it?* — answered from S0 (:class:`StateIndex`: ids and names of entities the user
would know), the schema (enums, booleans, documented ranges) or a bank of plausible free
text. Everything is seeded by the caller's ``random.Random``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

# Parameter names that never carry an entity's identity, so a same-named output is no evidence.
GENERIC = frozenset(
    {
        "status",
        "type",
        "kind",
        "reason",
        "note",
        "notes",
        "message",
        "description",
        "query",
        "content",
        "text",
        "comment",
        "title",
        "limit",
        "offset",
        "page",
        "quantity",
        "amount",
        "count",
        "value",
        "method",
        "memo",
        "body",
        "subject",
        "recursive",
        "replace_all",
        "old",
        "new",
        "category",
        "max_results",
        "condition",
        "priority",
        "label",
        "tag",
        "tags",
    }
)
QUERY_PARAMS = frozenset({"query", "search", "keyword", "keywords", "q", "text_query"})
NAME_KEYS = ("name", "title", "label", "subject")
TAKEN_KEYS = ("name", "title", "label")  # what a new record is called (a subject may well repeat)


def same_name(a: Any, b: Any) -> bool:
    """Whether two names are the same up to case and spacing (a new record's name against a
    record's: ``taken_name``)."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


PATH_PARAMS = frozenset({"path", "file", "filename", "file_path", "filepath", "src", "dst", "destination"})
# names that are a path only where the parameter says so (a flight's destination is an airport)
MAYBE_PATH_PARAMS = frozenset({"src", "dst", "destination"})


def is_path_param(param: str, prop: dict[str, Any]) -> bool:
    """Whether ``param`` takes a workspace path: a path's name (``output_path``, ``file``), where
    an ambiguous one (``destination``) is described as a path or a file."""
    name = param.lower()
    if name in MAYBE_PATH_PARAMS:
        return bool(re.search(r"\b(path|file|folder|directory)\b", str(prop.get("description", "")), re.I))
    return name in PATH_PARAMS or name.endswith("_path")


# parameters naming whom a message goes to: never the world's own user ("forward it to Alex" in
# Alex's own mailbox)
RECIPIENT_PARAMS = frozenset({"to", "cc", "bcc", "recipient", "recipients"})
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_type(value: Any) -> str | None:
    """The JSON Schema type name of a scalar (bool before int: ``True`` is an int in Python)."""
    if isinstance(value, bool):
        return "boolean"
    for kind, name in JSON_TYPES.items():
        if isinstance(value, kind):
            return name
    return None


@cache  # pure in a few hundred names, asked millions of times while golden runs feed arguments
def singular(word: str) -> str:
    """Crude English singular, enough for collection names (``orders`` -> ``order``)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


@cache
def id_kind(name: str) -> str | None:
    """Entity kind of an id-like name: ``order_id``/``order_ids`` -> ``order``; else None."""
    lowered = name.lower()
    for suffix in ("_ids", "_id"):
        if lowered.endswith(suffix) and len(lowered) > len(suffix):
            return lowered[: -len(suffix)]
    return None


@cache
def output_kind(schema_path: str) -> str | None:
    """Entity kind of an output leaf: ``orders[].order_id``, ``order_ids[]``, ``orders[].id``."""
    parts = [p for p in schema_path.replace("[]", "").split(".") if p]
    if not parts:
        return None
    kind = id_kind(parts[-1])
    if kind is not None:
        return kind
    if parts[-1] == "id" and len(parts) >= 2:
        return singular(parts[-2])
    return None


def param_type(prop: dict[str, Any]) -> str:
    """The scalar JSON type a parameter takes (the item type for arrays)."""
    if prop.get("type") == "array":
        return str(prop.get("items", {}).get("type", "string"))
    return str(prop.get("type", "string"))


def param_matches(param: str, prop: dict[str, Any], schema_path: str, value_type: str | None) -> bool:
    """Whether output leaves at ``schema_path`` (of ``value_type``) can feed ``param``."""
    if "enum" in prop or prop.get("items", {}).get("enum") or value_type != param_type(prop):
        return False
    return _name_matches(param, schema_path, value_type)


@cache  # the names alone decide: a few thousand pairs, asked millions of times per shard
def _name_matches(param: str, schema_path: str, value_type: str | None) -> bool:
    wanted = id_kind(param)
    leaf = singular(schema_path.replace("[]", "").split(".")[-1])
    if wanted is not None:
        kind = output_kind(schema_path)
        return kind is not None and (
            kind == wanted or wanted.endswith("_" + kind) or kind.endswith("_" + wanted)
        )
    name = singular(param.lower())
    return value_type == "string" and name not in GENERIC and param.lower() not in GENERIC and leaf == name


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted path, scalar)`` for every scalar leaf: ``orders.2.order_id``, ``order_ids.0``.

    Collected into a list first (the data engine flattens whole states: nested generators
    cost a frame per level for every leaf)."""
    leaves: list[tuple[str, Any]] = []
    _flatten_into(value, prefix, leaves)
    return iter(leaves)


def _flatten_into(value: Any, prefix: str, leaves: list[tuple[str, Any]]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _flatten_into(child, f"{prefix}.{key}" if prefix else str(key), leaves)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            _flatten_into(child, f"{prefix}.{i}" if prefix else str(i), leaves)
    elif value is not None:
        leaves.append((prefix, value))


def schema_path(path: str) -> str:
    """``orders.2.order_id`` -> ``orders[].order_id``: list indices become ``[]`` and keys that are
    data rather than field names (``reserved.SKU-1`` -> ``reserved.*``) become ``*``."""
    out: list[str] = []
    for part in path.split("."):
        if part.isdigit() and out:
            out[-1] += "[]"
        else:
            out.append(part if _FIELD_NAME.fullmatch(part) else "*")
    return ".".join(out)


def _field_of(path: str) -> str:
    """The field a leaf at ``path`` is filed under: its last key, or for list items the key of
    the list (``legs.3`` -> ``legs``), ``*`` for data keys; what
    ``schema_path(path).replace("[]", "")`` ends with, without building it."""
    parts = path.split(".")
    last = len(parts) - 1
    if not parts[last].isdigit():
        return parts[last]
    while last > 0 and parts[last].isdigit():
        last -= 1
    return parts[last] if _FIELD_NAME.fullmatch(parts[last]) else "*"


def read_path(value: Any, path: str) -> Any:
    """Follow a dotted path (as :func:`flatten` writes it); ``KeyError`` when absent."""
    node = value
    for part in path.split(".") if path else []:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(path)
    return node


def value_at(value: Any, path: str) -> Any:
    """:func:`read_path`, but None when the path is absent (a result that lacks the field)."""
    try:
        return read_path(value, path)
    except KeyError:
        return None


@dataclass
class StateIndex:
    """Values a user could name, found in one S0: by field name and by collection."""

    by_key: dict[str, list[Any]] = field(default_factory=dict)
    collections: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    owners: dict[Any, set[str]] = field(default_factory=dict)  # value -> entities holding it
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # entity id -> its scalar fields
    # the addresses of the world's own user (a mailbox's owner: S0's values outside every collection)
    own_addresses: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, state: dict[str, Any], files: dict[str, str] | None = None) -> StateIndex:
        index = cls(files=sorted(files or {}))
        for name, value in state.items():
            if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
                index.collections[name] = sorted(str(k) for k in value)
        leaves: list[tuple[str, Any]] = []  # flatten(state), each record's leaves kept apart too
        of_record: dict[tuple[str, str], list[tuple[str, Any]]] = {}
        for name, value in state.items():
            if name in index.collections:
                for entity, record in value.items():
                    start = len(leaves)
                    _flatten_into(record, f"{name}.{entity}", leaves)
                    of_record[(name, str(entity))] = leaves[start:]
            else:
                start = len(leaves)
                _flatten_into(value, str(name), leaves)
                index.own_addresses |= {
                    m.lower()
                    for _, leaf in leaves[start:]
                    if isinstance(leaf, str)
                    for m in _ADDRESS.findall(leaf)
                }
        for name, ids in index.collections.items():
            for entity in ids:
                owner = f"{name}/{entity}"
                index.records.setdefault(
                    entity,
                    {k: v for k, v in state[name][entity].items() if isinstance(v, str | int | float | bool)},
                )
                index.owners.setdefault(entity, set()).add(owner)
                for _, leaf in of_record[(name, entity)]:
                    index.owners.setdefault(leaf, set()).add(owner)
                for key in _nested_keys(state[name][entity]):
                    index.owners.setdefault(key, set()).add(owner)
        seen: dict[str, set[Any]] = {}  # each bucket's values, for membership in O(1) (same == as a list)
        for path, leaf in leaves:
            key = _field_of(path)
            bucket = index.by_key.setdefault(key, [])
            members = seen.setdefault(key, set())
            if leaf not in members:
                members.add(leaf)
                bucket.append(leaf)
        return index

    def ids_of(self, kind: str) -> list[str]:
        """Ids of entities of ``kind``: keys of a collection named like it, or fields ``<kind>_id``.
        A qualified kind falls back to its last words (``from_warehouse`` -> ``warehouse``)."""
        words = kind.split("_")
        for start in range(len(words)):
            found = self._ids_of("_".join(words[start:]))
            if found:
                return found
        return []

    def _ids_of(self, kind: str) -> list[str]:
        found: list[str] = []
        for name, ids in self.collections.items():
            if singular(name) == kind or name == kind or singular(name).endswith("_" + kind):
                found += [i for i in ids if i not in found]
        for key in (f"{kind}_id", kind):
            found += [v for v in self.by_key.get(key, []) if isinstance(v, str) and v not in found]
        return found

    def values_for(self, param: str, prop: dict[str, Any]) -> list[Any]:
        """S0 values that fit ``param`` by name (ids by entity kind), with the right type."""
        wanted = param_type(prop)
        kind = id_kind(param)
        if kind is not None:
            values: list[Any] = self.ids_of(kind)
        elif is_path_param(param, prop):
            values = list(self.files)
        elif param.lower() in QUERY_PARAMS:
            values = sorted(
                {
                    w.strip(",.()")
                    for key in NAME_KEYS
                    for v in self.by_key.get(key, [])
                    if isinstance(v, str)
                    for w in v.split()
                    if len(w.strip(",.()")) >= 4
                }
            )
        else:
            # a folder of the world's list of folders: the plural names the list
            values = list(self.by_key.get(param, [])) or (
                list(self.collections.get(param + "s", []) or self.by_key.get(param + "s", []))
                if wanted == "string"
                else []
            )
        return [
            v for v in values if json_type(v) == wanted or (wanted == "number" and json_type(v) == "integer")
        ]


def _nested_keys(entity: dict[str, Any]) -> Iterator[str]:
    """Keys of dicts nested in an entity that are data, not field names (``stock: {"SKU-1": ...}``):
    the entity holds those ids as keys rather than as values."""
    for child in entity.values():
        yield from _data_keys(child)


def _data_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        keyed = bool(value) and all(isinstance(v, dict) for v in value.values())
        for key, child in value.items():
            if keyed or not _FIELD_NAME.fullmatch(str(key)):
                yield str(key)
            yield from _data_keys(child)
    elif isinstance(value, list):
        for child in value:
            yield from _data_keys(child)


# -- free text a user could plausibly write --------------------------------------------------
FREE_TEXT: dict[str, tuple[str, ...]] = {
    "reason": (
        "requested by the owner",
        "created by mistake",
        "duplicate request",
        "superseded by a newer request",
        "plans changed",
        "no longer needed",
    ),
    "note": (
        "Handled per the customer's phone call.",
        "Please double-check before closing.",
        "Follow up next week.",
        "Agreed with the team lead.",
        "Priority for this week.",
    ),
    "title": (
        "Quarterly review",
        "Weekly sync notes",
        "Supplier follow-up",
        "Onboarding checklist",
        "Incident summary",
        "Budget draft",
    ),
    "content": (
        "# Notes\n\n- Confirmed the details with the requester.\n- Next step: review on Friday.\n",
        "Summary\n=======\nAll items were checked and reconciled.\n",
        "TODO\n- call the supplier\n- update the tracker\n",
    ),
    "query": ("report", "summary", "weekly", "draft", "plan"),
    "name": ("Project Atlas", "Blue Harbor", "Northwind review", "Spring launch", "Cedar team"),
    "email": ("sam.rivera@example.com", "lee.chen@example.com", "ana.costa@example.com"),
    "memo": ("Monthly correction", "Restock after audit", "Transfer for promotion", "Year-end adjustment"),
    "message": ("Thanks, this is confirmed.", "Could you share an update?", "Running a few minutes late."),
}
LETTER_WORDS = 16  # more words than a dictated note or reason has
_ALIASES = {
    "notes": "note",
    "comment": "note",
    "comments": "note",
    "description": "note",
    "details": "note",
    "subject": "title",
    "summary": "title",
    "label": "title",
    "body": "message",
    "text": "note",
    "search": "query",
    "keyword": "query",
    "keywords": "query",
    "new": "content",
}
_RANGE = re.compile(r"(?:between\s+)?(-?\d+)\s*(?:to|and|-|–)\s*(-?\d+)")
_SIGNED = re.compile(r"\b(negative|signed|decrease)", re.IGNORECASE)
_AT_LEAST = re.compile(r"at least\s+(-?\d+)")
_AT_MOST = re.compile(r"(?:at most|up to|maximum of)\s+(-?\d+)")


def numeric_bounds(prop: dict[str, Any]) -> tuple[int | None, int | None]:
    """Bounds a docstring states for a number ("1 to 100", "at least 1"); None where unstated."""
    text = str(prop.get("description", "")).lower()
    low = int(m.group(1)) if (m := _AT_LEAST.search(text)) else None
    high = int(m.group(1)) if (m := _AT_MOST.search(text)) else None
    if (m := _RANGE.search(text)) and int(m.group(1)) <= int(m.group(2)):
        low, high = int(m.group(1)), int(m.group(2))
    if low is None and prop.get("type") in ("integer", "number"):
        low = prop.get("minimum")
    if high is None:
        high = prop.get("maximum")
    return low, high


_PAREN_LIST = re.compile(r"\(([^()]*,[^()]*)\)")
_ONE_OF = re.compile(r"one of:?\s+([^.;]+)", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*")


def described_options(prop: dict[str, Any]) -> list[str]:
    """Values a docstring lists for a string parameter: "(electronics, apparel, home)" or
    "one of draft, posted or void"; empty when the description lists none."""
    text = str(prop.get("description", ""))
    for match in (*_ONE_OF.finditer(text), *_PAREN_LIST.finditer(text)):
        tokens = [t.strip().strip("'\"`") for t in re.split(r",|\bor\b|\band\b", match.group(1))]
        tokens = [t for t in tokens if t]
        if len(tokens) >= 2 and all(_TOKEN.fullmatch(t) for t in tokens):
            return tokens
    return []


def _addressed_to(value: Any, addresses: set[str]) -> bool:
    """Whether a recipient value names one of ``addresses`` ("Alex Moreno <alex.moreno@...>")."""
    return isinstance(value, str) and any(m.lower() in addresses for m in _ADDRESS.findall(value))


def _free_text_name(param: str) -> bool:
    key = _ALIASES.get(param.lower(), param.lower())
    return any(
        key == stem or key.endswith("_" + stem) for stem in ("reason", "note", "message", "memo", "content")
    )


def _letter(text: str) -> bool:
    """A text of several lines or sentences: a message somebody wrote, not a note to pass on."""
    return "\n" in text.strip() or len(text.split()) > LETTER_WORDS


def _shape(text: str) -> set[str]:
    """The kinds of characters ``text`` is made of: letters by case, digits, and each other
    character as itself ("q1-invoices": lower, digit and "-")."""
    return {
        "lower" if c.islower() else "upper" if c.isupper() else "digit" if c.isdigit() else c for c in text
    }


def shaped_like(value: Any, examples: Sequence[str]) -> bool:
    """Whether ``value`` is a text made of the kinds of characters the examples are made of (a
    lowercase slug for slugs; no spaces where no example has one)."""
    allowed = set().union(*(_shape(e) for e in examples))
    return isinstance(value, str) and bool(value) and _shape(value) <= allowed


def free_text(param: str, rng: random.Random, examples: Sequence[Any] = ()) -> str:
    """A plausible value for a free-text parameter: one of the texts its tool declares
    (``@tool(examples=...)``: what a user of that desk dictates), else one picked by the
    parameter's name from a bank shared by every desk."""
    declared = [e for e in examples if isinstance(e, str)]
    if declared and _free_text_name(param):
        return rng.choice(declared)
    key = param.lower()
    key = _ALIASES.get(key, key)
    for stem, bank in FREE_TEXT.items():
        if key == stem or key.endswith("_" + stem):
            return rng.choice(bank)
    return rng.choice(FREE_TEXT["note"])


def _key_word(key: str) -> re.Pattern[str]:
    """``key`` standing as a word of its own (not inside "auth-service-2")."""
    return re.compile(rf"(?<![\w-]){re.escape(key)}(?![\w-])")


def names_key(text: str, key: str) -> bool:
    """Whether ``text`` names ``key`` as a word of its own ("auth-service disk usage ...")."""
    return _key_word(key).search(text) is not None


def retargeted(text: Any, args: dict[str, Any], index: StateIndex) -> Any:
    """A text (words, not a code) with every other record of a collection whose record the
    call's arguments name replaced by that record: S0's title of auth-service's incident, "auth-service
    disk usage above 85%", for a new incident on inventory-sync says inventory-sync. Copied
    unchanged, it would contradict the call it is for."""
    if not isinstance(text, str) or " " not in text.strip():
        return text
    for value in args.values():
        if not isinstance(value, str):
            continue
        for ids in index.collections.values():
            if value in ids:
                for other in ids:
                    if other != value:
                        text = _key_word(other).sub(value.replace("\\", "\\\\"), text)
    return text


def near_first(values: list[Any], index: StateIndex, near: set[str]) -> list[Any]:
    """Values held by one of the entities in ``near`` first (keeps one call's arguments coherent:
    the sku of *that* order), order otherwise kept."""
    if not near:
        return values
    close = [v for v in values if _hashable(v) and index.owners.get(v, set()) & near]
    return close + [v for v in values if v not in close]


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def user_values(
    param: str,
    prop: dict[str, Any],
    index: StateIndex,
    rng: random.Random,
    limit: int = 6,
    near: set[str] | None = None,
) -> list[Any]:
    """Candidate user-provided values for one parameter, most plausible first (at most ``limit``);
    values of the entities in ``near`` come first."""
    kind = prop.get("type")
    if "enum" in prop:
        options = list(prop["enum"])
        rng.shuffle(options)
        return options[:limit]
    if kind == "boolean":
        return rng.sample([True, False], 2)
    if kind == "array":
        item = prop.get("items", {})
        # the examples a desk declares for a list parameter are examples of its items
        shapes = [x for e in prop.get("examples", ()) for x in (e if isinstance(e, list | tuple) else [e])]
        item = item | {"description": prop.get("description", "")} | ({"examples": shapes} if shapes else {})
        pool = user_values(param, item, index, rng, limit)
        if not pool:
            return []
        return [rng.sample(pool, min(len(pool), rng.choice((1, 1, 2)))) for _ in range(min(limit, 3))]
    # an empty field of S0 ("pause_reason": "") is no value anyone states: a tool refuses it
    found = [v for v in index.values_for(param, prop) if not (isinstance(v, str) and not v.strip())]
    if param.lower() in RECIPIENT_PARAMS and index.own_addresses:
        found = [v for v in found if not _addressed_to(v, index.own_addresses)]
    examples = [e for e in prop.get("examples", ()) if isinstance(e, str)]
    if is_path_param(param, prop):
        if examples:
            return rng.sample(examples, min(limit, len(examples)))  # the desk says where such paths are
        rng.shuffle(found)
        # a new file beside one of the workspace's, of its kind: a stage writing a .csv output
        # needs a .csv path no earlier output holds
        folder, _, name = (found[0] if found else "notes/x.md").rpartition("/")
        suffix = name.rpartition(".")[2] if "." in name else "md"
        fresh = f"{folder or 'notes'}/{rng.choice(FREE_TEXT['query'])}-{rng.randint(1, 99)}.{suffix}"
        return [*found[: limit - 1], fresh]
    if kind in ("integer", "number"):
        low, high = numeric_bounds(prop)
        found = [v for v in found if (low is None or v >= low) and (high is None or v <= high)]
        if not found:
            start = low if low is not None else 1
            stop = high if high is not None else start + 4
            found = sorted({start, min(stop, start + 1), min(stop, start + 2), min(stop, max(start, 5))})
            if low is None and _SIGNED.search(str(prop.get("description", ""))):
                found += [-v for v in found if v > 0]
        rng.shuffle(found)
        return near_first(found, index, near or set())[:limit]
    if examples and not _free_text_name(param):
        # what the desk declares a user gives ("finance" for a label): S0's values of that shape,
        # else the examples (S0's "label" of another kind of record, "the tracking number", is
        # no label a message takes)
        found = [v for v in found if shaped_like(v, examples)] or examples
    if found and _free_text_name(param):
        # S0's codes ("no_longer_needed") are no free text, and a letter of S0 is someone's own:
        # a reply saying the customer's complaint back to them is nobody's goal
        found = [v for v in found if not (isinstance(v, str) and (("_" in v and " " not in v) or _letter(v)))]
    if found:
        rng.shuffle(found)
        return near_first(found, index, near or set())[:limit]
    listed = described_options(prop)
    if listed:
        rng.shuffle(listed)
        return listed[:limit]
    if id_kind(param) is not None:
        return []
    return [free_text(param, rng, prop.get("examples", ()))]
