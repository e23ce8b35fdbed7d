"""How people talk about an environment: goal phrases for tools and names for records.

An environment author declares, next to the code, how a user would *ask* for what a tool
does (``@tool(goal="cancel {order_id}, because {reason}")``) and how a user would *name* a
record of a state collection (``Entity("orders", "order", "{customer_id}'s order from
{placed_at:date}")``). The data engine turns golden tool chains into user turns from these
declarations, so a turn states goals and names things the way a person does, never a tool
or a parameter. The same declarations are what the synthesis engine asks an LLM to write for
a new environment, so they are small and declarative.

**Templates** are text with placeholders:

* ``{name}`` - a tool argument (goal phrases) or a record field (entity names); the data
  engine renders it for a person: a record id becomes that record's name, a date a date,
  free text a quote. ``{name:fmt}`` picks a format: ``date``, ``time``, ``when`` (date and
  time), ``cents`` (an integer amount in cents shown as units), ``person`` (an address
  ``Name <email>`` shown as the name), ``weekday`` (a day as a weekly series meets on it:
  ``sat`` is "Saturdays"), ``words`` (a code said as words: ``boxing-fit`` is "boxing fit"),
  ``plain`` (the value as is).
* ``{name|a=text|b=text|*=text}`` - a choice by value (booleans are ``true`` / ``false``;
  ``*`` is any other value). The chosen text is literal.
* ``[ ... ]`` - an optional part, dropped when a placeholder inside has no value (an omitted
  optional argument, an empty field).

This module only parses and checks templates (the linter uses it); rendering values for a
person is the data engine's job (:mod:`envcraft.tasks.phrasing.intents`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

FORMATS = frozenset({"date", "time", "when", "cents", "person", "weekday", "words", "plain"})
_PLACEHOLDER = re.compile(
    r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)(?::([a-z]+))?((?:\|[^|{}]*)*)\}"
)
_TOKEN = re.compile(r"\{[^{}]*\}|\[|\]|[^{}\[\]]+|[{}]")


class TemplateError(ValueError):
    """A goal phrase or entity name that does not parse."""


@dataclass(frozen=True)
class Placeholder:
    name: str
    fmt: str | None = None
    choices: tuple[tuple[str, str], ...] = ()  # (value key, text); key "*" matches any other value

    def choose(self, value: Any) -> str | None:
        key = ("true" if value else "false") if isinstance(value, bool) else str(value)
        fallback = None
        for option, text in self.choices:
            if option == key:
                return text
            if option == "*":
                fallback = text
        return fallback


Part = str | Placeholder | tuple["Part", ...]  # a tuple is an optional section


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text, placeholders and optional sections."""

    text: str
    parts: tuple[Part, ...]

    @classmethod
    def parse(cls, text: str) -> Template:
        stack: list[list[Part]] = [[]]
        for token in _TOKEN.findall(text):
            if token == "[":
                stack.append([])
            elif token == "]":
                if len(stack) == 1:
                    raise TemplateError(f"unbalanced ']' in {text!r}")
                section = tuple(stack.pop())
                stack[-1].append(section)
            elif token.startswith("{"):
                match = _PLACEHOLDER.fullmatch(token)
                if match is None:
                    raise TemplateError(f"bad placeholder {token} in {text!r}")
                name, fmt, raw = match.groups()
                if fmt is not None and fmt not in FORMATS:
                    raise TemplateError(
                        f"unknown format {fmt!r} in {token} (known: {', '.join(sorted(FORMATS))})"
                    )
                choices = []
                for option in raw.split("|")[1:]:
                    key, sep, shown = option.partition("=")
                    if not sep or not key.strip():
                        raise TemplateError(f"a choice needs value=text, got {option!r} in {token}")
                    choices.append((key.strip(), shown))
                stack[-1].append(Placeholder(name, fmt, tuple(choices)))
            elif token in "{}":
                raise TemplateError(f"unbalanced {token!r} in {text!r}")
            else:
                stack[-1].append(token)
        if len(stack) != 1:
            raise TemplateError(f"unclosed '[' in {text!r}")
        return cls(text, tuple(stack[0]))

    def fields(self) -> set[str]:
        """Every placeholder name the template uses."""
        found: set[str] = set()

        def walk(parts: tuple[Part, ...]) -> None:
            for part in parts:
                if isinstance(part, Placeholder):
                    found.add(part.name)
                elif isinstance(part, tuple):
                    walk(part)

        walk(self.parts)
        return found

    def required(self) -> list[Placeholder]:
        """The placeholders outside every optional section: the text cannot be said without them."""
        return [part for part in self.parts if isinstance(part, Placeholder)]

    def render(self, show: Callable[[Placeholder], str | None]) -> str | None:
        """The text with every placeholder shown by ``show`` (None: no value); None when a
        placeholder outside an optional section has no value."""

        def walk(parts: tuple[Part, ...]) -> str | None:
            out: list[str] = []
            for part in parts:
                if isinstance(part, str):
                    out.append(part)
                elif isinstance(part, Placeholder):
                    shown = show(part)
                    if shown is None:
                        return None
                    out.append(shown)
                else:
                    section = walk(part)
                    if section is not None:
                        out.append(section)
            return "".join(out)

        text = walk(self.parts)
        return re.sub(r"[ \t]+", " ", text).strip() if text is not None else None


@dataclass(frozen=True)
class Entity:
    """How a user names the records of one state collection, and how look-alikes may differ.

    ``collection`` is a ``dict[str, Record]`` field of the State model, ``noun`` what one
    record is called ("order"). ``names`` are templates over the record's fields, most
    natural first; the data engine uses the first one that tells the record apart from every
    other record of the collection (a field holding another record's id shows that record's
    name), said without its parenthesized parts (``"{name} ({email})"``) wherever the rest
    alone tells the record apart: a person adds the email only to tell two namesakes apart.
    ``id_known``: users hold these ids themselves (an order number from a
    confirmation mail, a flight number), so a turn may quote them. ``vary``: fields a
    distractor (a look-alike record the agent must not touch) may differ in; without them
    the collection gets no look-alikes. ``free``: fields a user leaves to the agent (notes,
    comments): no check pins them; ``LIST/*/FIELD`` names a field of each item of a list (a
    journal line's ``lines/*/note``). ``log``: records the environment writes as a by-product
    of looking (health checks, delivered replies): an agent that adds more harms nothing.
    ``labels``: what a person calls a field whose name alone says it badly (``committed``: the
    "committed offset"); the others are said as their names.
    """

    collection: str
    noun: str
    names: tuple[str, ...] = ()
    id_known: bool = False
    vary: tuple[str, ...] = ()
    free: tuple[str, ...] = ()
    log: bool = False
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)

    def templates(self) -> tuple[Template, ...]:
        return tuple(Template.parse(text) for text in self.names)


@dataclass(frozen=True)
class Job:
    """A piece of work the desk exists for, that a person asks for as one outcome.

    ``steps`` are tools in the order they run on one record's way: the tools that change things
    (each after the first acting on what an earlier one made or touched: the journal just opened,
    the trip just proposed), and where a later step needs an answer only a lookup gives (a flight
    on the leg's route), that read-only tool before it. ``goal`` is how the user asks for the
    whole ("receive {quantity} unit(s) of {sku_id} against {po_id} into the ledger"): its
    placeholders are parameters of the steps, ``{param}`` the first step's that has it and
    ``{tool.param}`` that step's own (two steps both taking an ``owner``), rendered like a tool's
    goal phrase. A user who states the outcome leaves the steps, their order and their
    preconditions to the agent; the data engine walks jobs as well as random chains, and says a
    job's state-changing steps with this one phrase wherever a turn holds them all.
    """

    name: str
    steps: tuple[str, ...]
    goal: str
    # what a user says for a free-text parameter in this job, where the tool's own examples fit
    # another job ("memo": a receipt's memo, not "Month-end stock correction"): ``param`` for
    # every step that takes it, ``tool.param`` for that step alone
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    # what the last step answers when the outcome the goal states came about (a dispatch:
    # ``{"status": "dispatched"}``); a run whose last step answered otherwise (the rider
    # declined the fare) did not carry the job out, and its goal would claim it did
    reaches: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def template(self) -> Template:
        return Template.parse(self.goal)

    def examples_for(self, tool: str) -> dict[str, tuple[str, ...]]:
        """The job's examples for ``tool``'s parameters (``tool.param`` over ``param``)."""
        found = {key: texts for key, texts in self.examples.items() if "." not in key}
        found |= {
            key.partition(".")[2]: texts
            for key, texts in self.examples.items()
            if key.partition(".")[0] == tool
        }
        return found


def check_jobs(
    jobs: tuple[Job, ...], params: Mapping[str, set[str]], reads: frozenset[str] = frozenset()
) -> list[str]:
    """Problems of an environment's job declarations: each on its own (:func:`check_job`), and
    two jobs of the same state-changing steps (a run of them would be either job)."""
    problems = [p for job in jobs for p in check_job(job, params, reads)]
    seen: dict[tuple[str, ...], str] = {}
    for job in jobs:
        acts = tuple(step for step in job.steps if step not in reads)
        if acts in seen:
            problems.append(f"jobs {seen[acts]!r} and {job.name!r} change things with the same steps")
        seen.setdefault(acts, job.name)
    return problems


def check_job(job: Job, params: Mapping[str, set[str]], reads: frozenset[str] = frozenset()) -> list[str]:
    """Problems of one job declaration against the environment's tools (``params``: each tool's
    parameters; ``reads``: the read-only ones)."""
    unknown = [step for step in job.steps if step not in params]
    if unknown:
        return [f"job {job.name!r} names unknown tools {', '.join(unknown)}"]
    if sum(step not in reads for step in job.steps) < 2:
        return [f"job {job.name!r} has fewer than two steps that change things (one is a tool's goal phrase)"]
    try:
        template = job.template()
    except TemplateError as exc:
        return [f"job {job.name!r}: {exc}"]
    known = set().union(*(params[step] for step in job.steps))
    known |= {f"{step}.{p}" for step in job.steps for p in params[step]}
    unknown = sorted(template.fields() - known)
    if unknown:
        return [f"job {job.name!r} goal names unknown parameters {', '.join(unknown)}"]
    problems = [
        f"job {job.name!r} has examples for unknown parameter {key}"
        for key in job.examples
        if key not in known
    ]
    problems += [
        f"job {job.name!r} examples of {key} are not a tuple of texts"
        for key, texts in job.examples.items()
        if not texts
        or not isinstance(texts, tuple)
        or not all(isinstance(t, str) and t.strip() for t in texts)
    ]
    return problems


def entity_map(entities: tuple[Entity, ...]) -> Mapping[str, Entity]:
    """The declarations by collection name."""
    return {e.collection: e for e in entities}


def check_goal(goal: str, params: set[str]) -> list[str]:
    """Problems of one tool's goal phrase (parse errors, placeholders that are not parameters)."""
    try:
        template = Template.parse(goal)
    except TemplateError as exc:
        return [str(exc)]
    unknown = sorted(template.fields() - params)
    return [f"goal names unknown parameters {', '.join(unknown)}"] if unknown else []


def check_entity(entity: Entity, fields: set[str]) -> list[str]:
    """Problems of one entity declaration against its record's fields."""
    problems: list[str] = []
    for text in entity.names:
        try:
            template = Template.parse(text)
        except TemplateError as exc:
            problems.append(str(exc))
            continue
        unknown = sorted(template.fields() - fields)
        if unknown:
            problems.append(f"name {text!r} uses unknown fields {', '.join(unknown)}")
    for kind, names in (("vary", entity.vary), ("free", entity.free), ("labels", tuple(entity.labels))):
        unknown = sorted(set(names) - fields)
        if unknown:
            problems.append(f"{kind} lists unknown fields {', '.join(unknown)}")
    return problems
