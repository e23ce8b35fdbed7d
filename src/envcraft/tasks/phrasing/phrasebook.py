"""An environment's phrasing declarations as the data engine uses them: names and goal phrases.

:class:`Phrasebook` answers the questions intent rendering, distractor making and the
verifier ask about one environment: which state fields are collections of records (and how
a person names one of those records so that it cannot be confused with its siblings), which
fields a user leaves free, which collections are logs, how a user asks for a tool's effect,
and which tools undo which. Environments without declarations (test fixtures, imported BFCL
classes) still work: every ``dict[str, record]`` field is a collection named by its id, and a
tool's goal falls back to its docstring summary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from email.utils import parseaddr
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from envcraft.core.package import EnvPackage
from envcraft.core.phrasing import Entity, Placeholder, Template, entity_map
from envcraft.tasks.values.args import singular

_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
NESTED_NAME_DEPTH = 2
# A parenthesized part of a name that shows a field ("Maya Patel (maya@northwind.example)",
# "driver Omar Silva (DRV-750)"): a detail a person adds only to tell two records apart.
_DETAIL = re.compile(r"\s*\([^()]*\{[^()]*\}[^()]*\)")


def is_time(value: Any) -> bool:
    return isinstance(value, str) and bool(_ISO_TIME.match(value) or _ISO_DATE.match(value))


_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS = {day[:3]: day.capitalize() + "s" for day in _DAYS}  # "sat": "Saturdays"


def _moment(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def show_value(value: Any, fmt: str | None = None) -> str:
    """A value as a person writes it: dates as dates, cents as amounts, lists joined."""
    if isinstance(value, list):
        return join_words([show_value(v, fmt) for v in value])
    if isinstance(value, bool):
        return "yes" if value else "no"
    if fmt == "cents" and isinstance(value, int):
        return f"{value / 100:.2f}"
    if fmt == "person" and isinstance(value, str):
        name, address = parseaddr(value)
        return name or address or value  # "Dana Li <dana.li@northwind.example>": "Dana Li"
    if fmt == "weekday" and isinstance(value, str) and value.lower()[:3] in _WEEKDAYS:
        return _WEEKDAYS[value.lower()[:3]]  # "sat": "Saturdays" (a weekly series meets on it)
    if fmt == "words" and isinstance(value, str):
        return re.sub(r"[-_]+", " ", value).strip()  # "boxing-fit": "boxing fit", as the desk says it
    if isinstance(value, str) and fmt in ("date", "time", "when") and (moment := _moment(value)):
        day = f"{moment.strftime('%B')} {moment.day}"
        if fmt == "date" or _ISO_DATE.match(value):
            return day
        clock = moment.strftime("%H:%M")
        return clock if fmt == "time" else f"{day} at {clock}"
    return str(value)


def join_words(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def humanize(name: str) -> str:
    """``"no_longer_needed"`` -> ``"no longer needed"``; ``"sev2"`` stays."""
    return name.replace("_", " ").strip()


class Phrasebook:
    """The phrasing declarations of one package (see the module docstring)."""

    def __init__(self, package: EnvPackage) -> None:
        self.package = package
        env_class = package.env_class
        self.declared = dict(entity_map(env_class.entities))
        self.collections = _collections(env_class.State)
        self.goals: dict[str, Template] = {}
        self.undoes: dict[str, tuple[str, ...]] = {}
        for name, spec in env_class.tools.items():
            if spec.annotations.goal:
                self.goals[name] = Template.parse(spec.annotations.goal)
            if spec.annotations.undoes:
                self.undoes[name] = spec.annotations.undoes
        self._templates = {c: e.templates() for c, e in self.declared.items()}
        self._plain = {c: tuple(_without_details(t) for t in ts) for c, ts in self._templates.items()}
        self._codes = _code_fields(env_class.State)

    # -- records ------------------------------------------------------------------------------
    def entity(self, collection: str) -> Entity:
        """The declaration of a collection (an undeclared one: named only by its id)."""
        found = self.declared.get(collection)
        if found is not None:
            return found
        return Entity(collection, singular(collection).replace("_", " "), id_known=True)

    def label(self, collection: str, field_name: str) -> str:
        """What a person calls a field of the collection's records (:attr:`Entity.labels`)."""
        return self.entity(collection).labels.get(field_name) or humanize(field_name)

    def is_log(self, collection: str) -> bool:
        return self.entity(collection).log

    def field_labels(self, collection: str) -> tuple[str, ...]:
        """What a person calls each field of the collection's records ("status", "reason"): the
        labels a report may give any record's values."""
        model = _record_models(self.package.env_class.State).get(collection)
        return tuple(self.label(collection, name) for name in (model.model_fields if model else ()))

    def free_fields(self, collection: str) -> tuple[str, ...]:
        return self.entity(collection).free

    def choices(self, collection: str) -> dict[str, tuple[str, ...]]:
        """The fields of the collection's records typed as a fixed list of strings, with the
        strings each may hold (a return's ``status``: "open", "received", "refunded", ...)."""
        models = _record_models(self.package.env_class.State)
        model = models.get(collection)
        if model is None:
            return {}
        fields = model.model_fields
        return {name: _code_values(fields[name].annotation) for name in self._codes.get(collection, ())}

    def collection_of(self, state: Mapping[str, Any], key: Any) -> str | None:
        """The collection of ``state`` that holds a record under ``key``, if any."""
        if not isinstance(key, str):
            return None
        for name in self.collections:
            records = state.get(name)
            if isinstance(records, dict) and key in records:
                return name
        return None

    def keyed_by_args(self, state: Mapping[str, Any], args: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The records a call names by two or more of its arguments rather than by an id: the
        one record of a collection whose fields hold those values ("partition 1 of the payments
        topic" of ``topic="payments", partition=1``), as ``(collection, key)``."""
        found = []
        for name in self.collections:
            records = state.get(name)
            if not isinstance(records, dict):
                continue
            matching = [
                key
                for key, record in records.items()
                if isinstance(record, dict) and _holds(record, args) >= 2
            ]
            if len(matching) == 1:
                found.append((name, matching[0]))
        return found

    def name_of(self, state: Mapping[str, Any], collection: str, key: str) -> str | None:
        """How a person names record ``key``: the first declared name that no other record of
        the collection shares, said without its parenthesized details (an email beside a name,
        an id beside a driver; in the records it names as well) where that alone tells the
        record apart. None if there is none."""
        records = state.get(collection)
        if not isinstance(records, dict) or key not in records:
            return None
        codes = self._codes.get(collection, frozenset())
        templates, plains = self._templates.get(collection, ()), self._plain.get(collection, ())
        for template, plain in zip(templates, plains, strict=True):
            said = None
            for form, bare in ((plain, True), (template, False)):
                text = self._render_record(state, records[key], form, 0, key, bare, codes)
                if text is None or text == said:
                    continue
                said = text
                folded = text.lower()
                if not any(
                    other != key
                    and (self._render_record(state, rec, form, 0, other, bare, codes) or "").lower() == folded
                    for other, rec in records.items()
                ):
                    return text
        return None

    def short_name(self, state: Mapping[str, Any], collection: str, key: str) -> str | None:
        """Record ``key``'s first declared name that renders, without its parenthesized details
        and those of the records it names: beside its id nothing else has to tell it apart
        ("the trip of driver Elena Lopez for James Lopez's ride request")."""
        records = state.get(collection)
        if not isinstance(records, dict) or key not in records:
            return None
        codes = self._codes.get(collection, frozenset())
        for plain in self._plain.get(collection, ()):
            text = self._render_record(state, records[key], plain, 0, key, True, codes)
            if text is not None:
                return text
        return None

    def id_phrase(self, collection: str, key: str) -> str:
        """A record by its id, as a user who holds it says it: ``order ORD-100012``; an id that
        starts with the noun stands alone (``SKU-13408``, not ``SKU SKU-13408``)."""
        noun = self.entity(collection).noun
        if re.match(re.escape(noun.split()[-1]) + r"(?![A-Za-z])", key, re.IGNORECASE):
            return key
        return f"{noun} {key}"

    def _render_record(
        self,
        state: Mapping[str, Any],
        record: Any,
        template: Template,
        depth: int,
        key: str = "",
        bare: bool = False,
        codes: frozenset[str] = frozenset(),
    ) -> str | None:
        """``record`` named by ``template`` (``codes``: its fields that hold a code from a fixed
        list, said in words: "the hotel overbooking at hotel HTL-FCO-01")."""
        if not isinstance(record, dict):
            return None

        def show(part: Placeholder) -> str | None:
            value = record.get(part.name)
            if value is None or value == "" or value == []:
                return None
            if part.choices:
                return part.choose(value)
            if part.name in codes and isinstance(value, str):
                return humanize(value)
            if value == key:
                return show_value(value, part.fmt)  # the record's own id, not a reference
            return self.show_field(state, value, part.fmt, depth, bare)

        return template.render(show)

    def show_field(
        self, state: Mapping[str, Any], value: Any, fmt: str | None, depth: int = 0, bare: bool = False
    ) -> str:
        """A field value in a name: another record's id shows that record's name (``bare``:
        without its parenthesized details)."""
        if isinstance(value, list):
            return join_words([self.show_field(state, v, fmt, depth, bare) for v in value])
        other = self.collection_of(state, value)
        if other is not None and depth < NESTED_NAME_DEPTH:
            forms = self._plain if bare else self._templates
            codes = self._codes.get(other, frozenset())
            for template in forms.get(other, ()):
                text = self._render_record(
                    state, state[other][value], template, depth + 1, value, bare, codes
                )
                if text is not None:
                    return text
        return show_value(value, fmt)


def _holds(record: Mapping[str, Any], args: Mapping[str, Any]) -> int:
    """How many of ``args`` the record's own fields hold, value and type alike."""
    return sum(1 for p, v in args.items() if p in record and record[p] == v and type(record[p]) is type(v))


def _without_details(template: Template) -> Template:
    """``template`` without its parenthesized parts that show a field; itself if it has none, or
    if nothing but the details would be left to say."""
    plain = _DETAIL.sub("", template.text)
    if plain == template.text or "{" not in plain:
        return template
    return Template.parse(plain)


def _code_fields(state_model: type) -> dict[str, frozenset[str]]:
    """Per collection of ``state_model``, the fields of its records typed as a fixed list of
    strings (a ``Literal``, optional or not): codes like ``"hotel_overbooking"``."""
    return {
        name: frozenset(field for field, spec in record.model_fields.items() if _is_code(spec.annotation))
        for name, record in _record_models(state_model).items()
    }


def _code_values(annotation: Any) -> tuple[str, ...]:
    """The strings a code field's type allows (its ``Literal``, optional or not)."""
    if get_origin(annotation) is Literal:
        return tuple(str(v) for v in get_args(annotation))
    options = [a for a in get_args(annotation) if a is not type(None)]
    return _code_values(options[0]) if len(options) == 1 else ()


def _is_code(annotation: Any) -> bool:
    if get_origin(annotation) is Literal:
        return all(isinstance(v, str) for v in get_args(annotation))
    if get_origin(annotation) in (Union, UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return len(options) == 1 and _is_code(options[0])
    return False


def _collections(state_model: type) -> tuple[str, ...]:
    """State fields typed ``dict[str, <record model>]``."""
    return tuple(_record_models(state_model))


def _record_models(state_model: type) -> dict[str, Any]:
    """The State fields typed ``dict[str, <record model>]``, each with its record model."""
    found: dict[str, Any] = {}
    for name, info in getattr(state_model, "model_fields", {}).items():
        args: tuple[Any, ...] = tuple(getattr(info.annotation, "__args__", ()))
        if len(args) == 2 and args[0] is str and hasattr(args[1], "model_fields"):
            found[name] = args[1]
    return found


_BOOKS: dict[type, Phrasebook] = {}


def phrasebook(package: EnvPackage) -> Phrasebook:
    """One package's phrasebook (built once per environment class)."""
    book = _BOOKS.get(package.env_class)
    if book is None:
        book = _BOOKS[package.env_class] = Phrasebook(package)
    return book
