"""User intents: a golden chain told as 1-4 user turns that state goals, not calls.

Two stages, so that the wording can be replaced without touching what must be said:

* :func:`plan_intents` decides *what* each turn asks for. Every call that changes something
  becomes a :class:`Goal`: its tool's goal phrase (``@tool(goal=...)``) with each argument
  shown as a person would say it (:class:`Mention`): a record of S0 by its declared name
  ("Maya Patel's order from January 3") or, where users hold ids, by its id; a record an
  earlier step created as "the new return"; a value found in an earlier result by the record
  that holds it; enums through the phrase's choices; free text quoted. Read-only calls are the
  agent's business and are not asked for, unless they need a fact only the user knows. A
  value no declaration can name makes the chain unusable (the reason is returned).
* an :class:`~envcraft.tasks.phrasing.render.IntentRenderer` turns the plan into text in a
  persona's voice (:mod:`envcraft.tasks.phrasing.render`). The offline renderer can be replaced
  by an LLM renderer as long as every mention's text survives, which
  :func:`envcraft.tasks.phrasing.leaks.missing_user_values` checks.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.phrasing import Job, Placeholder, Template
from envcraft.tasks.format.model import GoldenCall, Source
from envcraft.tasks.phrasing.phrasebook import humanize, is_time, join_words, phrasebook, show_value
from envcraft.tasks.phrasing.words import QUOTED, imperative, join_facts, possessives, quote, says
from envcraft.tasks.values.args import flatten, value_at

YOUR_NEW = "your new "  # a record the goal just before made, beside another of its kind it named
MAX_TURNS = 4
REPEAT_QUOTE = 24  # free text this long, dictated again, is "the same as before"
FREE_TEXT_PARAMS = re.compile(
    r"(^|_)(reason|note|notes|message|text|body|title|subject|comment|memo|summary|description|content)$"
)
# the free texts that are all there is to say (a note, a message body): a value they must carry
# goes in them; a title or a reason could instead leave it to a note beside them
MESSAGE_PARAMS = re.compile(r"(^|_)(note|notes|message|text|body|comment|content)$")


# -- the plan ---------------------------------------------------------------------------------------
@dataclass
class Mention:
    """One argument as a turn must say it (``text``), and where its value comes from."""

    call: int
    arg: str
    value: Any
    text: str
    source: str  # the argument's provenance label after planning
    # a back-reference ("that message") stands for what an earlier goal said in full: recorded
    # as the mention, so the check that the user says it still reads the full words
    said_as: str = ""
    # ``said_as`` is a sentence of its own said just before the goal ("The handoff note in
    # shift/escalation.md flags a recipe as needing action."), which ``text`` ("that recipe")
    # then refers to
    lead: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "arg": self.arg, "text": self.said_as or self.text, "source": self.source}


@dataclass
class Goal:
    """What one call achieves, as a clause ("cancel Maya Patel's order from January 3")."""

    call: int
    env: str
    tool: str
    text: str
    mentions: list[Mention] = field(default_factory=list)
    planned_error: bool = False  # the user expects this to be refused, then the next goal instead
    fact: bool = False  # a read-only call's facts (what only the user knows), not a goal
    follows: bool = False  # acts on ("it") the record the goal before it in this turn made or acted on
    about: bool = False  # a fact that only names what the turn's work is for ("For host web-1, ...")
    steps: tuple[int, ...] = ()  # a declared job's calls, asked as one outcome (``call`` is the first)
    job: str = ""  # that job's name

    @property
    def calls(self) -> tuple[int, ...]:
        """The calls this goal asks for."""
        return self.steps or (self.call,)

    @property
    def leads(self) -> list[str]:
        """The sentences said just before the goal, that its words refer to ("that recipe")."""
        return [m.said_as for m in self.mentions if m.lead]


@dataclass
class IntentPlan:
    """Everything the turns must say, turn by turn; ``closing`` ends the last turn (a report)."""

    turns: list[list[Goal]]
    closing: str = ""

    def mentions(self) -> list[Mention]:
        return [m for goals in self.turns for g in goals for m in g.mentions]


# -- turns -------------------------------------------------------------------------------------------
def split_turns(
    mutating: Sequence[bool], held: Sequence[bool], rng: random.Random, min_turns: int = 1
) -> list[list[int]]:
    """Contiguous groups of call indices, 1-4 of them (at least ``min_turns`` where the job has as
    many writes), each holding at least one call that changes something (reads belong to the
    write they prepare); a call in ``held`` stays with the write after it (a planned error with
    its recovery, a declared job's step with the job's next step: one outcome, one turn)."""
    units: list[list[int]] = [[]]
    for i, writes in enumerate(mutating):
        units[-1].append(i)
        if writes and not held[i]:
            units.append([])
    if not units[-1]:
        units.pop()
    elif len(units) > 1:
        units[-2].extend(units.pop())  # trailing reads join the last write
    count = rng.randint(min(min_turns, len(units)), min(MAX_TURNS, len(units)))
    cuts = sorted(rng.sample(range(1, len(units)), count - 1))
    bounds = [0, *cuts, len(units)]
    return [[i for unit in units[a:b] for i in unit] for a, b in itertools.pairwise(bounds)]


# -- planning --------------------------------------------------------------------------------------
class Unnameable(ValueError):
    """A value the declarations give no way to say (the chain is dropped with this reason)."""


@dataclass
class ChainView:
    """What planning needs to know about a golden run (see :class:`envcraft.tasks.golden.run.GoldenRun`)."""

    calls: list[GoldenCall]
    initial: dict[str, dict[str, Any]]
    after: Callable[[int], dict[str, dict[str, Any]]]  # every env's state after call i
    mutating: list[bool]
    # (env, value) -> how the user points at a value that lives in a workspace file
    pointers: Mapping[tuple[str, Any], str] = field(default_factory=dict)
    # (call, argument) of left-out flags whose default no turn says: nothing in the world tests it
    quiet: frozenset[tuple[int, str]] = frozenset()
    # (env, value) -> the pointer as a sentence of its own ("The handoff note in ... flags a
    # recipe as needing action"): said before the goal, which then says "that recipe"
    leads: Mapping[tuple[str, Any], str] = field(default_factory=dict)


def plan_intents(
    view: ChainView,
    turns: list[list[int]],
    packages: Mapping[str, EnvPackage],
    rng: random.Random,
    *,
    skip: set[int] | frozenset[int] = frozenset(),
    closing: str = "",
    jobs: Sequence[tuple[Job, list[int]]] = (),
) -> IntentPlan:
    """The plan for a chain split into ``turns``; :class:`Unnameable` if some value cannot be said.

    Calls in ``skip`` are asked for by ``closing`` (the last turn's final sentence) instead of a
    goal. Each of ``jobs`` (a declared job and the calls that carry it out) whose calls one turn
    holds is asked for as the job's one outcome, not step by step. Call provenance is updated in
    place: a record named by description becomes ``named``.
    """
    planner = _Planner(view, packages, rng, {i: t for t, indices in enumerate(turns) for i in indices})
    found: dict[int, Goal] = {}
    for indices in turns:  # the goals first: a lookup needs a fact only if no goal says it
        for i in indices:
            if i not in skip and (view.mutating[i] or view.calls[i].expected_error):
                goal = planner.goal(i)
                if goal is not None:
                    found[i] = goal
    said_by_turn: list[set[str]] = []
    for indices in turns:
        earlier = said_by_turn[-1] if said_by_turn else set()
        said_by_turn.append(
            earlier | {m.said_as or m.text for i in indices if i in found for m in found[i].mentions}
        )
    for t, indices in enumerate(turns):
        planner.said = set(said_by_turn[t])
        for i in indices:
            if i not in skip and i not in found:
                fact = planner.goal(i)
                if fact is not None:
                    found[i] = fact
                    said_by_turn[t] |= {m.said_as or m.text for m in fact.mentions}
                else:
                    planner.label_untold(i, said_by_turn[-1])
    turn_of = {i: t for t, indices in enumerate(turns) for i in indices}
    for job, span in jobs:
        if len({turn_of.get(i) for i in span}) == 1 and all(i in found for i in span):
            merged = planner.job_goal(job, span, [found[i] for i in span])
            if merged is not None:
                found[span[0]] = merged
                for i in span[1:]:
                    del found[i]
    plan = IntentPlan([], closing)
    for indices in turns:
        plan.turns.append([found[i] for i in indices if i in found])
    for goal in found.values():  # what the renderer will print, mentions included
        goal.text = possessives(goal.text)
        for mention in goal.mentions:
            mention.text = possessives(mention.text)
            if mention.lead:
                mention.said_as = possessives(mention.said_as)
    _leads_said_once(plan, planner)
    return plan


POINTED_BACK = "the same {noun} as before"  # a pointed record, where "that message" could be another
# what a pointer sentence says of its record (outside its quotes), and the word a later goal then
# refers back to it by where "that {noun}" could be a record of its kind the work made
POINTED_MARKS = (("flags", "flagged"), ("escalated", "escalated"), ("urgent", "urgent"))


def pointed_back(lead: str, noun: str) -> str:
    """How a later goal refers back to the record a pointer sentence pointed at, where "that
    {noun}" could be another of its kind the work made: by what the sentence said of it ("the
    flagged cleaning recipe" after "Create a cleaning recipe called “Northwind review”. The
    handoff note ... flags a cleaning recipe as needing action ..."; round 48, R4: "that
    cleaning recipe" read as the new one, 0.0), else "the same {noun} as before"."""
    said = set(re.findall(r"[a-z]+", QUOTED.sub(" ", lead).lower()))
    mark = next((mark for word, mark in POINTED_MARKS if word in said), None)
    return f"the {mark} {noun}" if mark else POINTED_BACK.format(noun=noun)


def _leads_said_once(plan: IntentPlan, planner: _Planner) -> None:
    """A pointer sentence ("The handoff note in ... flags a message as needing action.") is said
    where the turns first need it, and a later goal about the same record refers back: "that
    message", or "the same message as before" where the work has made another of its kind
    since (a forward is a message too). Goals are planned out of turn order (the changes first,
    then the lookups they need), so each planned its own pointer sentence; said twice, it reads
    as two records, and no person says it again. Where the work made a record of its kind
    before, "that message" could be that one: :func:`pointed_back` says which."""
    first: dict[str, Mention] = {}
    for goals in plan.turns:
        for goal in goals:
            for mention in goal.mentions:
                if not mention.lead or first.setdefault(mention.said_as.lower(), mention) is mention:
                    continue
                env = planner.view.calls[mention.call].env
                book = phrasebook(planner.packages[env])
                collection = book.collection_of(planner.view.initial[env], mention.value)
                if collection is None:
                    continue
                noun = book.entity(collection).noun
                earlier = first[mention.said_as.lower()]
                if planner.rivals(env, collection, mention.value):
                    raise Unnameable(f"'that {noun}' could be another one said")
                if planner.made_before(mention.call, env, collection):
                    back, that = pointed_back(earlier.said_as, noun), f"that {noun}"
                    if goal.text.count(that) != 1 or mention.text != that:
                        continue  # which "that message" is it: the sentence stays
                    goal.text, mention.text = goal.text.replace(that, back), back
                mention.lead = False


class _Planner:
    def __init__(
        self, view: ChainView, packages: Mapping[str, EnvPackage], rng: random.Random, turn_of: dict[int, int]
    ) -> None:
        self.view = view
        self.packages = packages
        self.rng = rng
        self.turn_of = turn_of  # call index -> user turn
        self.said: set[str] = set()  # mention texts already in the turns
        self.named: dict[tuple[str, Any], tuple[str, str]] = {}  # how each record was said
        self.named_at: dict[tuple[str, Any], int] = {}  # the call whose phrase first said it
        self.named_in: dict[tuple[str, str], list[Any]] = {}  # (env, collection) -> keys said, in order
        self.said_for: dict[tuple[str, Any], int] = {}  # (env, key) -> the call it was first said for
        self.quoted: set[str] = set()  # free text already quoted in full
        self.quoted_at: dict[str, int] = {}  # ... and the call it was first quoted for
        self.latest: dict[str, str] = {}  # per free-text parameter, the text said for it last
        self.identified: set[tuple[int, str]] = set()  # (call, arg) whose mention says the value itself
        self.last_goal: GoldenCall | None = None  # the goal planned just before, and its turn
        self.last_turn = -1
        self.pronoun: bool = False  # the goal being planned refers to its predecessor's record as "it"

    def goal(self, i: int) -> Goal | None:
        call = self.view.calls[i]
        book = phrasebook(self.packages[call.env])
        mentions: dict[str, Mention] = {}
        if not self.view.mutating[i] and not call.expected_error:
            needed = {a: v for a, v in call.args.items() if self._fact_needed(call, a, v)}
            if not needed or not self._result_used(i):  # (asked in this order, the seed's draws stay put)
                return None  # a lookup nothing later needs: the agent's business, not the user's
            for arg, value in needed.items():
                mentions[arg] = self._mention(i, arg, value)
            template = book.goals.get(call.tool)
            text = self._realize(template, i, mentions) if template else None
            about = text is None
            if text is None:
                text = join_words([m.text for m in mentions.values()])
            self._remember(mentions)
            return Goal(i, call.env, call.tool, text, list(mentions.values()), fact=True, about=about)
        self.pronoun = False
        for arg, value in call.args.items():
            mentions[arg] = self._mention(i, arg, value)
        template = book.goals.get(call.tool)
        text = self._realize(template, i, mentions) if template else None
        if text is None:
            text = _fallback_goal(self.packages[call.env], call, mentions)
        used = [m for a, m in mentions.items() if template is None or a in template.fields()]
        missing = [m for a, m in mentions.items() if m not in used and self._must_say(call, a)]
        if missing:  # the phrase leaves out a value the agent needs: say it with the goal
            text += " (" + join_facts([m.text for m in missing]) + ")"
            used += missing
        follows = self.pronoun and any(m.text == "it" or m.text.startswith(YOUR_NEW) for m in used)
        self._remember({m.arg: m for m in used})
        self.last_goal, self.last_turn = call, self.turn_of.get(i, -1)
        text = _single_words(text, [m.text for m in used])
        return Goal(
            i, call.env, call.tool, text, used, planned_error=bool(call.expected_error), follows=follows
        )

    def job_goal(self, job: Job, span: list[int], goals: list[Goal]) -> Goal | None:
        """The goals of a job's steps said as the job's one outcome (its goal phrase), or None
        where the phrase cannot be said (the steps are then asked one by one). ``{param}`` shows
        the first step's mention of it, ``{tool.param}`` that step's own. What a step took from
        an earlier step (the journal it opened, the trip it proposed) goes unsaid; a later step's
        mention of a value an earlier mention says is recorded in that mention's words; a value
        the steps need said that the phrase leaves out is said with it. A later step's other value
        under a name the phrase already shows cannot be said by it: the steps are asked one by one."""
        calls = self.view.calls
        template = job.template()
        fields = template.fields()
        made: set[str] = set()  # what the job's own steps answered: the agent has it
        shown: dict[str, Mention] = {}  # placeholder name -> the mention it shows
        step_of: dict[str, int] = {}
        again: list[tuple[Mention, Mention]] = []  # (a later mention, the kept one saying its value)
        others: list[Mention] = []  # a later step's mention of another value under a kept name
        for i in span:
            for arg in calls[i].args:
                step_of.setdefault(arg, i)
                step_of[f"{calls[i].tool}.{arg}"] = i
            for mention in next(g for g in goals if g.call == i).mentions:
                own = f"{calls[i].tool}.{mention.arg}"
                if own in fields:
                    if mention.text == "it":  # one phrase for all steps: "it" could be any record
                        new = self._created(i, calls[i].env, mention.value, pronoun=False)
                        mention = replace(mention, text=new or mention.text)
                    shown[own] = mention
                    continue
                source = calls[i].source(mention.arg)
                first = shown.get(mention.arg)
                if first is not None and first.value == mention.value:
                    again.append((mention, first))
                elif first is not None and mention.arg in fields:
                    others.append(mention)  # "{message_id}" of the message answered and of the reply
                elif (source.from_call and source.call in span) or (
                    isinstance(mention.value, str) and mention.value in made
                ):
                    continue
                elif first is not None:
                    others.append(mention)
                else:
                    shown[mention.arg] = mention
            made |= {v for _, v in flatten(calls[i].result) if isinstance(v, str)}
        said = [part.name for part in template.required() if not part.choices]  # (a choice says its default)
        if any(self._omits(calls[i], name, fields) for name in said for i in span):
            return None  # "put that message on my to-do list" of a to-do the step linked to nothing
        if others:  # one phrase, two values: "replay partition 2 ..., then commit the result (for
            # 0)"; "clean that dataset" of a profile of DS-009 and a clean of DS-001 (round 38, P4)
            return None
        text = self._realize(template, span[0], shown, step_of)
        if text is None:
            return None
        used = [m for name, m in shown.items() if name in fields]
        left = [m for name, m in shown.items() if name not in fields]
        missing = [m for m in left if self._must_say(calls[m.call], m.arg)]
        used += [m for m in missing if _says_switch(text, m)]  # "flag the message" says flagged=true
        missing = [m for m in missing if m not in used]
        if missing:
            text += " (" + join_facts([m.text for m in missing]) + ")"
            used += missing
        for mention, first in again:  # recorded as said in the words of the mention that says it
            if first in used:
                used.append(replace(mention, text=first.text, said_as=first.said_as, lead=False))
        follows = goals[0].follows and any(m.text == "it" or m.text.startswith(YOUR_NEW) for m in used)
        text = _single_words(text, [m.text for m in used])
        last = calls[span[-1]]
        return Goal(
            span[0], last.env, last.tool, text, used, follows=follows, steps=tuple(span), job=job.name
        )

    def _omits(self, call: GoldenCall, name: str, fields: set[str]) -> bool:
        """Whether a job's step leaves out a parameter of its tool that the job's phrase says
        (an unqualified ``{name}`` says it of every step that takes it and has no ``{tool.name}``
        of its own): the phrase would ask for what the step does not do."""
        params = self.packages[call.env].env_class.tools[call.tool].parameters["properties"]
        own = f"{call.tool}.{name}" in fields
        return "." not in name and name in params and name not in call.args and not own

    def _remember(self, mentions: Mapping[str, Mention]) -> None:
        self.said |= {m.said_as or m.text for m in mentions.values()}

    def _result_used(self, i: int) -> bool:
        """Whether a later call needs a value from call ``i``'s result that its own words do not
        say (an id carried in free text, or an argument of a call not planned yet): a goal that
        names the record it acts on needs no lookup told to it."""
        return any(
            (j, arg) not in self.identified
            for j, later in enumerate(self.view.calls[i + 1 :], start=i + 1)
            for arg in later.args
            if later.source(arg).from_call and later.source(arg).call == i
        )

    def _said_inside(self, env: str, collection: str, key: str, name: str) -> bool:
        """Whether an earlier mention already said ``name`` inside its own (a class inside a
        booking's name), and no other record of the collection was said that way: "that class"."""
        if not self._is_said(name):
            return False
        state = self.view.initial[env]
        book = phrasebook(self.packages[env])
        return not any(
            other != key and (text := book.name_of(state, collection, other)) and self._is_said(text)
            for other in state.get(collection) or {}
        )

    def _say(self, env: str, collection: str, key: Any, i: int) -> None:
        """Record that a turn names ``key`` of ``collection`` (by name, id or a pointer to it),
        first for call ``i``."""
        keys = self.named_in.setdefault((env, collection), [])
        if key not in keys:
            keys.append(key)
        self.said_for.setdefault((env, key), i)

    def _tried_on_another(self, i: int, env: str, collection: str, key: Any) -> bool:
        """Whether call ``i`` is the fallback of a planned error one sentence says with it ("try
        to ...; if that is not possible, ... instead"), and the try names another record of
        ``collection``: a pointer sentence before that sentence cannot then be "that run"."""
        calls, acting, turn = self.view.calls, self.view.mutating, self.turn_of.get(i)
        steps = [j for j in range(i) if acting[j] or calls[j].expected_error]  # (a try writes nothing)
        before = [j for j in steps if self.turn_of.get(j) == turn]
        if not before or not calls[before[-1]].expected_error:
            return False
        return any(
            other != key and self.said_for.get((env, other)) == before[-1]
            for other in self.named_in.get((env, collection), [])
        )

    def rivals(self, env: str, collection: str, key: Any) -> bool:
        """Whether the turns name another record of ``collection`` than ``key``: then "that
        service" could be either ("open an incident for the payments-gateway service ... the
        note flags a service ... open an incident for that service ... run a health check of
        that service"; round 41, R2: 0.364)."""
        return any(other != key for other in self.named_in.get((env, collection), []))

    def label_untold(self, i: int, said: set[str]) -> None:
        """A lookup no turn asks for: the records of S0 it reads are the agent's to find
        (``named``), unless some turn states the id itself (``user``)."""
        call = self.view.calls[i]
        book = phrasebook(self.packages[call.env])
        for arg, value in call.args.items():
            if call.source(arg).kind == "user" and book.collection_of(self.view.initial[call.env], value):
                call.provenance[arg] = "user" if any(says(text, value) for text in said) else "named"

    def _is_said(self, text: str) -> bool:
        """Whether ``text`` is already in what the turns say (inside a longer mention too)."""
        folded = text.lower()
        return any(folded in said.lower() for said in self.said)

    def _fact_needed(self, call: GoldenCall, arg: str, value: Any) -> bool:
        """A read's argument the user must supply: an identifying S0 value not said yet."""
        source = call.source(arg)
        if source.from_call or isinstance(value, bool) or value in (None, "", []):
            return False
        state = self.view.initial[call.env]
        book = phrasebook(self.packages[call.env])
        if book.collection_of(state, value) is not None:
            mention = self._mention(len(self.view.calls), arg, value, call=call)
            return not self._is_said(mention.said_as or mention.text)
        if not isinstance(value, str) or FREE_TEXT_PARAMS.search(arg) or arg in ("query", "q", "search"):
            return False
        return _held_by_record(state, value) and not self._is_said(show_value(value))

    def _must_say(self, call: GoldenCall, arg: str) -> bool:
        source = call.source(arg)
        return source.kind in ("user", "named") or source.pointed  # pointed: the pointer to it

    def _realize(
        self,
        template: Template,
        i: int,
        mentions: Mapping[str, Mention],
        step_of: Mapping[str, int] | None = None,
    ) -> str | None:
        """``template`` said with ``mentions``; a placeholder's parameter is call ``i``'s, or
        (a job's phrase) that of the step ``step_of`` names."""

        def show(part: Placeholder) -> str | None:
            j = step_of.get(part.name, i) if step_of else i
            call = self.view.calls[j]
            params = self.packages[call.env].env_class.tools[call.tool].parameters["properties"]
            mention = mentions.get(part.name)
            name = part.name.rpartition(".")[2]  # a job's "{tool.param}"
            if mention is None and part.choices and "default" in params.get(name, {}):
                if (j, name) in self.view.quiet:
                    return None  # a default that changes nothing here goes unsaid
                return part.choose(params[name]["default"])  # an omitted flag says its default
            if mention is None or mention.value in (None, "", []):
                return None
            if part.choices:
                chosen = part.choose(mention.value)
                if chosen is None:
                    return None
                mention.text = chosen.strip() or mention.text
                return chosen
            if part.fmt and mention.source == "user":
                mention.text = show_value(mention.value, part.fmt)
            return mention.text

        return template.render(show)

    def _mention(self, i: int, arg: str, value: Any, call: GoldenCall | None = None) -> Mention:
        call = call or self.view.calls[i]
        source = call.source(arg)
        if isinstance(value, list) and value and all(not isinstance(v, dict | list) for v in value):
            parts = [self._mention(i, arg, v, call) for v in value]
            label = parts[0].source if all(p.source == parts[0].source for p in parts) else str(source)
            text = join_words([p.text for p in parts])
            mention = Mention(i, arg, value, text, label)
        else:
            mention = self._scalar(i, call, arg, value, source)
        if i < len(self.view.calls):
            call.provenance[arg] = mention.source
            if source.kind != "embed":
                self.identified.add((i, arg))
        return mention

    def _scalar(self, i: int, call: GoldenCall, arg: str, value: Any, source: Source) -> Mention:
        state = self.view.initial[call.env]
        book = phrasebook(self.packages[call.env])
        label = str(source)
        pointer = self.view.pointers.get((call.env, value)) if source.pointed else None
        if pointer is not None:  # the user points at the file line or the note that names it
            collection = book.collection_of(state, value)
            lead = self.view.leads.get((call.env, value), "") if collection is not None else ""
            if collection is not None and i < len(self.view.calls) and self._is_said(lead or pointer):
                if self.rivals(call.env, collection, value):
                    # "clean dataset DS-003 ..., and clean that dataset": the pointed one or
                    # DS-003? (round 41, R1: 0.116)
                    raise Unnameable(f"'that {book.entity(collection).noun}' could be another one said")
                if not self.made_before(i, call.env, collection):
                    noun = book.entity(collection).noun
                    return Mention(i, arg, value, f"that {noun}", label, said_as=lead or pointer)
            if collection is not None and i < len(self.view.calls):
                self._say(call.env, collection, value, i)
            if lead and collection is not None and i < len(self.view.calls):  # a sentence of its own first
                noun = book.entity(collection).noun
                if self._tried_on_another(i, call.env, collection, value):
                    # "The message ... says a run still needs attention. Try to skip a job of the
                    # run submitted on January 4 ...; if that is not possible, skip one of that
                    # run": the run just described, or the message's? (round 47, R3: 0.0)
                    raise Unnameable(f"'that {noun}' could be another one said")
                return Mention(i, arg, value, f"that {noun}", label, said_as=lead, lead=True)
            return Mention(i, arg, value, pointer, label, said_as=lead)
        collection = book.collection_of(state, value) if source.kind != "embed" else None
        if collection is not None and (call.env, value) in self.named:  # said once: referred back to
            text, kind = self.named[(call.env, value)]
            kind = kind if kind == "user" or not source.from_call else label
            since = self.named_at.get((call.env, value), 0)
            if (
                i < len(self.view.calls)
                and self.turn_of.get(since) != self.turn_of.get(i)
                and self.made_before(since, call.env, collection)
                and not self.made_before(i, call.env, collection, since=since)
            ):
                # in a later turn, a record of its kind the work made before it was named is a
                # rival too: "Create a recipe “Blue Harbor”. After that remove rule 1 from the
                # recipe “Quarterly sales cleanup”." then "Add a trim rule to that recipe" reads
                # as either, a new recipe being the one to fill (round 50, R2: 0.009); its name
                # said again in another turn repeats a value (the lint's repeated_values)
                raise Unnameable(f"'that {book.entity(collection).noun}' could be the one made before")
            if (
                i < len(self.view.calls)
                and self.named_in.get((call.env, collection)) == [value]
                and not self.made_before(i, call.env, collection, since=since)
            ):
                return Mention(i, arg, value, f"that {book.entity(collection).noun}", kind, said_as=text)
            return Mention(i, arg, value, text, kind)
        if collection is not None and i < len(self.view.calls):
            self._say(call.env, collection, value, i)
        if collection is not None:  # a record of S0
            entity = book.entity(collection)
            name = book.name_of(self._spoken_state(i, call.env), collection, value)
            quote_id = entity.id_known and (
                name is None or (source.kind == "user" and self.rng.random() < 0.5)
            )
            if quote_id:
                self.named[(call.env, value)] = (book.id_phrase(collection, value), "user")
                self.named_at[(call.env, value)] = i
                return Mention(i, arg, value, book.id_phrase(collection, value), "user")
            if name is None:
                raise Unnameable(f"no declared name tells {call.env}:{collection}/{value} apart")
            kind = "user" if says(name, value) else "named"  # a name may hold the id itself
            self.named[(call.env, value)] = (name, kind)
            self.named_at[(call.env, value)] = i
            kind = kind if kind == "user" or not source.from_call else label
            if (
                i < len(self.view.calls)
                and self._said_inside(call.env, collection, value, name)
                and not self.made_before(i, call.env, collection)
            ):
                return Mention(i, arg, value, f"that {entity.noun}", kind, said_as=name)
            return Mention(i, arg, value, name, kind)
        created = self._created(i, call.env, value)
        if created is not None:
            return Mention(i, arg, value, created, label)
        if source.kind == "embed":
            text, named = self._embedded(i, call, arg, value, source)
            if named and i < len(self.view.calls):
                self.identified.add((i, arg))
            return Mention(i, arg, value, text, label)
        if source.from_call:
            holder = self._holder(call.env, value)
            if holder is not None:
                return Mention(i, arg, value, holder, label)
            if isinstance(value, str) and _held_by_record(state, value):
                return Mention(i, arg, value, show_value(value), "user")  # visible in S0: the user says it
            if not isinstance(value, str) or isinstance(value, bool):
                return Mention(i, arg, value, show_value(value), "user")
            raise Unnameable(f"{call.tool}.{arg}: a value from an earlier result with no declared name")
        if isinstance(value, str) and (FREE_TEXT_PARAMS.search(arg) or " " in value.strip()):
            # "the same as before" only of the text said last for this parameter: a reason given
            # in turn 1, another in turn 2, then turn 1's again is two readings (round 38, P1)
            free = FREE_TEXT_PARAMS.search(arg) is not None  # (an address is one of a list's)
            again = value in self.quoted and (not free or self.latest.get(arg, value) == value)
            if i < len(self.view.calls):
                self.quoted.add(value)
                self.quoted_at.setdefault(value, i)
                if free:
                    self.latest[arg] = value
            # ... and an address only where it is the one address said before: "to the same address
            # as before" after a forward to two is either (round 61, R3: 0.8)
            alone = "@" not in value or not any(
                "@" in q and q != value and at < i for q, at in self.quoted_at.items()
            )
            if again and alone and len(value) >= REPEAT_QUOTE and i < len(self.view.calls):
                return Mention(i, arg, value, _same_again(arg, value), "user", said_as=quote(value))
            return Mention(i, arg, value, quote(value), "user")
        prop = self.packages[call.env].env_class.tools[call.tool].parameters["properties"].get(arg, {})
        if (
            isinstance(value, str)
            and "_" in value
            and (value in prop.get("enum", []) or value in prop.get("items", {}).get("enum", []))
        ):
            return Mention(i, arg, value, humanize(value), "user")  # a code from a fixed list, said in words
        return Mention(i, arg, value, show_value(value, "when" if is_time(value) else None), "user")

    def _embedded(self, i: int, call: GoldenCall, arg: str, value: Any, source: Source) -> tuple[str, bool]:
        """Free text that must carry a value from another step: its own words, and which value
        (by the words the user used for it, when the user said it to the step that found it),
        said to go in the text where a note could carry it as well ("titled “...”, mentioning
        the message you created by its id in the title": an agent that noted the id on the
        incident instead scored 0.75; round 47, R2); and whether those words name the value
        itself (no lookup needs telling)."""
        carried = value_at(self.view.calls[source.call or 0].result, source.path or "")
        rest = str(value)
        if isinstance(carried, str) and carried in rest:
            rest = rest.split(carried, 1)[1].lstrip(": ").strip()
        origin = self.view.calls[source.call or 0]
        created = self._created(i, origin.env, carried, pronoun=False)
        field = (source.path or "value").rsplit(".", 1)[-1]
        asked = [a for a, v in origin.args.items() if v == carried and origin.source(a).kind == "user"]
        named = False
        if created is not None:
            what = f"{created} by its id"
        elif asked and isinstance(carried, str) and (origin.env, carried) not in self.named:
            # a record the user names only here (to a lookup): "mentioning host notify-b1"
            what, named = self._mention(len(self.view.calls), asked[0], carried, call=origin).text, True
            if carried not in what:  # named by what it is: the text carries its id, and says so
                what += " by its id"
        elif field.endswith("_id") and origin.args.get(field, carried) != carried:
            # the step took one dataset and gave another: "that dataset" could be either
            what = f"the id of the resulting {humanize(field.removesuffix('_id'))}"
        elif field.endswith("_id"):  # "incident_id": the id of that incident
            what = f"the id of that {humanize(field.removesuffix('_id'))}"
            said = self.named.get((origin.env, carried))
            if said is not None and self._rivalled(i, origin.env, carried):
                # "that recipe" of the recipe edited in turn 2 after another made in turn 1
                # (round 48, R1: either reading is the user's): the recipe as the user named it
                what = f"the id of {said[0]}"
        else:
            what = f"that {humanize(field)}"
        where = "" if MESSAGE_PARAMS.search(arg) else f" in the {humanize(arg)}"
        return f"{quote(rest)}, mentioning {what}{where}", named

    def _spoken_state(self, i: int, env: str) -> dict[str, Any]:
        """S0 and the records the job made before call ``i``: what the user's name for a record
        must tell it apart from ("the recipe “Drop orders exported twice”" after the job made a
        second recipe of that name is either of them)."""
        initial = self.view.initial[env]
        if i == 0:
            return initial
        now = self.view.after(min(i, len(self.view.calls)) - 1).get(env, {})
        spoken = dict(initial)
        for collection, records in now.items():
            before = initial.get(collection)
            if (
                isinstance(records, dict)
                and isinstance(before, dict)
                and any(k not in before for k in records)
            ):
                spoken[collection] = {**{k: v for k, v in records.items() if k not in before}, **before}
        return spoken

    def _rivalled(self, i: int, env: str, key: Any) -> bool:
        """Whether the turns name, or the work up to call ``i`` made, another record of the
        collection holding ``key``: "that recipe" could be that one."""
        state = self.view.after(min(i, len(self.view.calls)) - 1) if i else self.view.initial
        collection = phrasebook(self.packages[env]).collection_of(state.get(env, {}), key)
        if collection is None:
            return False
        return self.rivals(env, collection, key) or self.made_before(i, env, collection)

    def made_before(self, i: int, env: str, collection: str, since: int = 0) -> bool:
        """Whether a call from ``since`` up to ``i`` created a record of ``collection``: then
        "that trip" could be the one just made (a trip offered to a driver) as well as the one
        named at call ``since``. A record made before the naming in the same turn is no rival:
        the user's "that" points back to the last record they said."""
        if i == 0 or since >= i:
            return False
        made = self.view.after(min(i, len(self.view.calls)) - 1).get(env, {}).get(collection)
        before = (self.view.after(since - 1) if since else self.view.initial).get(env, {}).get(
            collection
        ) or {}
        return isinstance(made, dict) and any(k not in before for k in made)

    def _created(self, i: int, env: str, value: Any, pronoun: bool = True) -> str | None:
        """A record an earlier call of this chain created, as the user refers back to it: "it"
        when the goal just before in this turn made or acted on it, "your new message" when that
        goal also named another record of its kind ("forward the message ... and add the to-do
        ... for it" could mean either message), "the new return" elsewhere in the same turn, "the
        return you created" in a later turn."""
        if not isinstance(value, str):
            return None
        book = phrasebook(self.packages[env])
        before = self.view.initial[env]
        for j in range(min(i, len(self.view.calls))):
            after = self.view.after(j)[env]
            collection = book.collection_of(after, value)
            if collection is None or value in before.get(collection, {}):
                continue
            noun = book.entity(collection).noun
            fresh = [k for k in after[collection] if k not in before.get(collection, {})]
            name = book.name_of(after, collection, value) if len(fresh) > 1 else None
            if len(fresh) > 1 and not name:
                return None
            turn, creator_turn = self.turn_of.get(i), self.turn_of.get(j)
            last = self.last_goal
            if (
                pronoun
                and turn is not None
                and last is not None
                and self.last_turn == turn
                and not self.pronoun
                and value in _leaf_values([last.args, last.result])
            ):
                self.pronoun = True
                named = {v for v in _leaf_values(last.args) if isinstance(v, str) and v in after[collection]}
                # ... or any record of its kind the turn has named: "Answer that message, ...,
                # and flag it" flagged the message answered, not the reply (round 58, R4: 0.179)
                named |= {
                    k
                    for k in self.named_in.get((env, collection), [])
                    if turn
                    in {self.turn_of.get(at.get((env, k), -1)) for at in (self.named_at, self.said_for)}
                }
                return f"{YOUR_NEW}{noun}" if named - {value} else "it"
            # ... and by the time of the call that refers back: "the message you created" of a
            # reply, where a forward was made since, is either (round 43, R3: 0.364)
            now = self.view.after(min(i, len(self.view.calls)) - 1)[env].get(collection) or {}
            if not name and any(k not in before.get(collection, {}) and k != value for k in now):
                return None
            if turn is not None and creator_turn is not None and turn > creator_turn:
                return f"the {noun} you created" + (f" ({name})" if name else "")
            return f"the new {noun}" + (f" ({name})" if name else "")
        return None

    def _holder(self, env: str, value: Any) -> str | None:
        """ "Maya Patel's email" for a value held by exactly one named record of S0."""
        state = self.view.initial[env]
        book = phrasebook(self.packages[env])
        holders = [
            (collection, key, name)
            for collection in book.declared
            for key, record in (state.get(collection) or {}).items()
            if isinstance(record, dict)
            for name, field_value in record.items()
            if field_value == value and name != book.entity(collection).noun
        ]
        if len(holders) != 1:
            return None
        collection, key, field_name = holders[0]
        owner = book.name_of(state, collection, key)
        if owner is None:
            return None
        return f"{owner}'s {humanize(field_name).removesuffix(' id')}"


def _held_by_record(state: Mapping[str, Any], value: str) -> bool:
    """Whether some record of S0 holds ``value`` (so the user can know and say it)."""
    return any(isinstance(records, dict) and value in _leaf_values(records) for records in state.values())


def _leaf_values(node: Any) -> set[Any]:
    if isinstance(node, dict):
        return {v for child in node.values() for v in _leaf_values(child)}
    if isinstance(node, list):
        return {v for child in node for v in _leaf_values(child)}
    return {node} if isinstance(node, str | int | float | bool) else set()


def _fallback_goal(package: EnvPackage, call: GoldenCall, mentions: Mapping[str, Mention]) -> str:
    """An environment without a goal phrase for this tool: its docstring summary and the values,
    a record found earlier in the job included by how the user says it (a lookup the user
    expects refused says for what: "list drivers free ...: Aisha Patel's ride request ...")."""
    spec = package.env_class.tools[call.tool]
    action = imperative(spec.description.split("\n", 1)[0])
    values = [
        m.text
        for m in mentions.values()
        if m.source in ("user", "named") or m.text.startswith("the ") or (m.text and m.text != str(m.value))
    ]
    return f"{action}: {join_words(values)}" if values else action


_DOUBLED = re.compile(r"(?<![\w-])(\w+)\s+\1(?!\w)", re.IGNORECASE)


def _same_again(arg: str, value: str) -> str:
    """A long value the turns said before, said again: a text is "the same as before", an
    address "the same address as before" (beside another recipient, "and the same as before"
    also read as "also a forward"), anything else (a name) in full."""
    if FREE_TEXT_PARAMS.search(arg):
        return "the same as before"
    return "the same address as before" if "@" in value else quote(value)


def _says_switch(text: str, mention: Mention) -> bool:
    """Whether a job's phrase already says a switch its step passes in the words the switch is
    said by ("flag the message for follow-up" of ``flagged=true``, said "flag"): appending
    "(for flag)" would repeat it as a fact nobody can read."""
    said = set(re.findall(r"[a-z]+", text.lower()))
    own = re.findall(r"[a-z]+", mention.text.lower())
    return isinstance(mention.value, bool) and bool(own) and set(own) <= said


def _single_words(text: str, keep: Sequence[str]) -> str:
    """A goal phrase whose words meet a mention's ("in period {period}" + "period 2025-12") says
    the word once, unless that would cut a mention or quoted text."""
    single = _DOUBLED.sub(r"\1", text)
    if single != text and all(k in single for k in keep) and single.count("“") == text.count("“"):
        text = single
    for mention in keep:  # "in period accounting period 2026-01": the mention says its own noun
        noun = _own_noun(mention)
        if noun:
            text = text.replace(f" {noun} {mention}", f" {mention}")
    return text


def _own_noun(mention: str) -> str:
    """The noun a mention names its record by: the word before its value ("accounting period
    2026-01") or its last word ("that accounting period"). None for quoted text, whose words
    ("cost for the board deck") are the record's own and say nothing of the phrase before it."""
    words = mention.split()
    if "“" in mention or len(words) < 2:
        return ""
    noun = words[-1] if words[-1].isalpha() else words[-2]
    return noun if noun.isalpha() and len(noun) > 3 else ""
