"""Scenario specs: what a synthesized environment is written from.

A spec is a catalog entry (``envcraft scenarios list``) or a user's file, TOML or Markdown,
with a title, a kind (``tool`` or ``claw``), a description and optional lists of entities,
operations and rules. TOML::

    title = "Library loans"
    kind = "tool"
    description = "A branch library lends books to members ..."
    entities = ["book: a title with copies", "member: a card holder"]
    operations = ["borrow a copy", "return it", "renew a loan"]
    rules = ["a member holds at most 3 loans", "a loan lasts 14 days"]

Markdown: a ``# Title`` line, ``key: value`` lines for ``kind`` (and optionally ``id``,
``keywords``), the description as prose, and ``## Entities`` / ``## Operations`` /
``## Rules`` sections of ``-`` bullets. :func:`load_spec` parses either strictly: an unknown
key or section is an error naming it, never silently dropped.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from envcraft.core.package import ENV_ID
from envcraft.synth.catalog import Scenario, get_scenario, load_catalog

Kind = Literal["tool", "claw"]
SPEC_SUFFIXES = (".toml", ".md", ".markdown")
_LIST_SECTIONS = ("entities", "operations", "rules")
_MD_KEYS = frozenset({"id", "kind", "keywords"})
_MD_KEY = re.compile(r"^([a-z_]+):\s*(.*)$")


class SpecError(ValueError):
    """A spec that cannot be used; the message says which file and what to fix."""


class ScenarioSpec(BaseModel):
    """One scenario to synthesize an environment for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str  # the environment id it becomes: [a-z][a-z0-9_]{1,63}
    title: str = Field(min_length=1)
    kind: Kind
    description: str = Field(min_length=1)
    entities: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    archetypes: tuple[str, ...] = ()  # the catalog's hand labels, where it has them
    source: str  # "catalog:<id>" or the file it was read from
    # the part of the scenario this environment is built around, when a scenario has several
    # (a catalog variant ``<id>@K``); empty for the scenario as a whole
    focus: str = ""

    @field_validator("id")
    @classmethod
    def _env_id(cls, value: str) -> str:
        if not ENV_ID.match(value):
            raise ValueError(f"id {value!r} must match [a-z][a-z0-9_]{{1,63}} (it names the environment)")
        return value

    @field_validator("entities", "operations", "rules", "keywords")
    @classmethod
    def _no_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        stripped = tuple(" ".join(item.split()) for item in value)
        if any(not item for item in stripped):
            raise ValueError("list items must not be blank")
        return stripped

    def text(self) -> str:
        """The spec as one text: what retrieval ranks archetypes by."""
        parts = [self.title, self.description, *self.entities, *self.operations, *self.rules]
        if self.focus:
            parts.append(self.focus)
        if self.keywords:
            parts.append(", ".join(self.keywords))
        return "\n".join(parts)

    def render(self) -> str:
        """The spec as the prompt shows it."""
        lines = [f"Title: {self.title}", f"Environment id: {self.id}", f"Kind: {self.kind}", ""]
        lines += [self.description]
        if self.focus:
            lines += [
                "",
                f"Focus: {self.focus}. This scenario gets several environments; build this one around "
                f"{self.focus}: its records, tools and rules are about that, not the scenario in general.",
            ]
        for name in _LIST_SECTIONS:
            items = getattr(self, name)
            if items:
                lines += ["", f"{name.capitalize()}:", *(f"- {item}" for item in items)]
        if self.keywords:
            lines += ["", f"Keywords: {', '.join(self.keywords)}"]
        return "\n".join(lines)


def env_id_for(name: str) -> str:
    """An environment id from a scenario id or a title: ``"Library Loans!"`` -> ``library_loans``."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:64].rstrip("_")
    if slug and not slug[0].isalpha():
        slug = f"env_{slug}"[:64]
    return slug


def from_scenario(scenario: Scenario) -> ScenarioSpec:
    """A catalog entry as a spec: general scenarios become tool environments, Claw ones claw."""
    return ScenarioSpec(
        id=env_id_for(scenario.id),
        title=scenario.title,
        kind="claw" if scenario.category == "claw" else "tool",
        description=scenario.description,
        keywords=scenario.keywords,
        archetypes=scenario.archetypes,
        source=f"catalog:{scenario.id}",
    )


def variant(scenario: Scenario, number: int) -> ScenarioSpec:
    """The ``number``-th environment of a catalog scenario (``<id>@<number>``).

    The first is the scenario as a whole; the K-th (K >= 2) is built around the scenario's K-th
    keyword, so the environments of one scenario differ in what they are about, and its id says
    which (``messaging_communication`` -> ``messaging_communication_email``).
    """
    spec = from_scenario(scenario)
    if number == 1:
        return spec
    if not 2 <= number <= len(scenario.keywords):
        raise SpecError(
            f"'{scenario.id}@{number}': variants run from 1 to {len(scenario.keywords)} "
            "(one per keyword of the scenario)"
        )
    focus = scenario.keywords[number - 1]
    env_id = env_id_for(f"{scenario.id} {focus}")
    return spec.model_copy(update={"id": env_id, "focus": focus, "source": f"catalog:{scenario.id}@{number}"})


def load_spec(ref: str | Path) -> ScenarioSpec:
    """A spec from a catalog id or a ``.toml`` / ``.md`` file; :class:`SpecError` says why not."""
    path = Path(ref)
    if path.suffix.lower() in SPEC_SUFFIXES or path.is_file():
        if not path.is_file():
            raise SpecError(f"{path}: no such file")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"{path}: cannot be read as UTF-8 text ({exc.__class__.__name__})") from None
        if path.suffix.lower() == ".toml":
            return _from_toml(text, path)
        return _from_markdown(text, path)
    name, at, number = str(ref).partition("@")
    if at and not number.isdigit():
        raise SpecError(f"'{ref}': a catalog variant is <scenario id>@<number>, e.g. {name}@2")
    try:
        return variant(get_scenario(name), int(number) if at else 1)
    except KeyError:
        known = len(load_catalog())
        raise SpecError(
            f"'{ref}' is neither a spec file (.toml, .md) nor one of the {known} catalog scenarios "
            "(envcraft scenarios list)"
        ) from None


def _from_toml(text: str, path: Path) -> ScenarioSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: invalid TOML: {exc}") from None
    return _validated(data, path)


def _from_markdown(text: str, path: Path) -> ScenarioSpec:
    data: dict[str, object] = {}
    prose: list[str] = []
    section: str | None = None
    lists: dict[str, list[str]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if line.startswith("# ") and "title" not in data:
            data["title"] = line[2:].strip()
        elif line.startswith("## "):
            section = line[3:].strip().lower()
            if section not in _LIST_SECTIONS:
                known = ", ".join(s.capitalize() for s in _LIST_SECTIONS)
                raise SpecError(f"{path}:{number}: unknown section {line[3:].strip()!r}; sections: {known}")
            lists.setdefault(section, [])
        elif section is not None:
            if line.lstrip().startswith(("- ", "* ")):
                lists[section].append(line.lstrip()[2:])
            elif line.startswith("  ") and lists[section]:
                lists[section][-1] += " " + line.strip()
            elif line.strip():
                raise SpecError(f"{path}:{number}: expected a '- ' bullet under ## {section.capitalize()}")
        elif "title" in data and not prose and (match := _MD_KEY.match(line)) and match.group(1) in _MD_KEYS:
            key, value = match.group(1), match.group(2).strip()
            data[key] = [k.strip() for k in value.split(",") if k.strip()] if key == "keywords" else value
        elif "title" in data:
            prose.append(line)
        elif line.strip():
            raise SpecError(f"{path}:{number}: a Markdown spec starts with a '# Title' line")
    data["description"] = "\n".join(prose).strip()
    data.update(lists)
    return _validated(data, path)


def _validated(data: dict[str, object], path: Path) -> ScenarioSpec:
    if "title" in data and "id" not in data and isinstance(data["title"], str):
        data["id"] = env_id_for(data["title"])
    try:
        return ScenarioSpec.model_validate({**data, "source": str(path)})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SpecError(f"{path}: {where}: {first['msg']}{more}") from None
