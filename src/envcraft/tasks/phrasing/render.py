"""The user's voice: personas, and the offline renderer that turns an intent plan into messages.

:func:`envcraft.tasks.phrasing.intents.plan_intents` decides *what* each turn says; an
:class:`IntentRenderer` decides *how*, in a :class:`Persona`'s tone and verbosity. The
:class:`TemplateRenderer` does it offline, seeded, with no model; another renderer (a model) can
replace it without touching what must be said.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from envcraft.tasks.phrasing.intents import Goal, IntentPlan
from envcraft.tasks.phrasing.phrasebook import join_words
from envcraft.tasks.phrasing.words import capital, lower_first, possessives, sentence

PERSONAS_FILE = Path(__file__).with_name("personas.json")
DESKS_FILE = Path(__file__).with_name("desks.json")


@dataclass(frozen=True)
class Persona:
    """Who is asking: a name, the job that puts them at this desk, a tone and how much they say.

    ``envs`` are the environments a person in this role would work in (empty: any, the pool for
    environments no persona names). The persona shapes the text (greeting, the situation they
    mention, how they close) but never introduces itself: nobody opens a request with their CV.
    """

    id: str
    name: str
    role: str
    tone: str
    verbosity: str
    envs: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"{self.id}: {self.name}, {self.role} ({self.tone}, {self.verbosity})"


@cache
def personas() -> tuple[Persona, ...]:
    """The shipped persona set (``personas.json``)."""
    return tuple(
        Persona(**{**p, "envs": tuple(p.get("envs", ()))})
        for p in json.loads(PERSONAS_FILE.read_text(encoding="utf-8"))
    )


PERSONA_DRAW = 40  # one draw of this size per task, whatever the pool: the draws after it stay put


def draw_persona(rng: random.Random, envs: Sequence[str]) -> Persona:
    """A persona who would run this desk: one of those made for the task's first environment
    that has any (a cross-environment task is asked by the person the work starts with), else
    one of the generic ones. It takes one ``randrange(PERSONA_DRAW)`` from ``rng`` (what drawing
    from the former 40-persona list took), so the tasks of a seed stay the tasks they were."""
    draw = rng.randrange(PERSONA_DRAW)
    pool = personas()
    fitting = next(
        ([p for p in pool if env in p.envs] for env in envs if any(env in p.envs for p in pool)), []
    )
    fitting = fitting or [p for p in pool if not p.envs] or list(pool)
    return fitting[draw % len(fitting)]


@cache
def situations() -> dict[str, tuple[str, ...]]:
    """Per environment, sentences a person at that desk opens with: why they are writing."""
    return {env: tuple(lines) for env, lines in json.loads(DESKS_FILE.read_text(encoding="utf-8")).items()}


class IntentRenderer(Protocol):
    """Turns an :class:`IntentPlan` into one user message per turn."""

    def render(self, plan: IntentPlan, persona: Persona) -> list[str]: ...


# -- the offline renderer --------------------------------------------------------------------------
# A greeting per tone (a terse person skips it); what follows it is the situation, not filler.
# No time of day (the world's clock is the task's) and nothing that answers ("Okay.", "Right."):
# the first message opens the conversation.
GREETINGS = {
    "formal": ("Hello.", "Hello, I hope you can help.", ""),
    "casual": ("Hey!", "Hi there!", "Hey there.", ""),
    "terse": ("",),
    "friendly": ("Hi!", "Hello!", "Hi, hope your day is going well.", "Hey, hope all is well!"),
    "anxious": ("Hi, sorry to rush you.", "Hi, I need a hand.", "Hi, this is a bit urgent.", ""),
    "impatient": ("", "Hi.", "Hey."),
    "cheerful": ("Hi!", "Hey there!", "Hello there!", "Hi, hope you're well!"),
    "methodical": ("Hello.", "Hi.", ""),
    "apologetic": ("Sorry to bother you.", "Hi, sorry for the trouble.", "Hello, sorry to interrupt.", "Hi."),
    "skeptical": ("Hi.", "Hello.", ""),
}
# Situations that speak of several things ("A few rides need sorting out."): said only where the
# message asks for more than one.
_PLURAL = re.compile(r"\b(?:few|some|couple|several)\b", re.IGNORECASE)
# How a later turn picks up after the agent answered the last one.
CONNECTORS = {
    "formal": ("Thank you. One more thing:", "Thank you. Also,"),
    "casual": ("Cool. Also,", "Nice. Now"),
    "terse": ("Also:", "Now"),
    "friendly": ("Thanks! One more thing:", "Great, thank you! Now"),
    "anxious": ("Okay, thank you. One more thing:", "Okay, good. Now"),
    "impatient": ("Next:", "Now"),
    "cheerful": ("Great! Now", "Perfect, thanks! Also,"),
    "methodical": ("Good. Next,", "Thanks. Next,"),
    "apologetic": ("Sorry, one more thing:", "Thanks, and sorry, but also"),
    "skeptical": ("Okay. Now", "Fine. Next,"),
}
# How a chatty person ends, in their tone. Never a request for an answer ("tell me what you
# changed"): the reward reads the world, not the agent's reply, so a task may not ask for one.
CLOSINGS = {
    "formal": "Thank you in advance.",
    "casual": "Thanks!",
    "friendly": "Thanks so much!",
    "anxious": "Thanks, this really helps.",
    "impatient": "That's all.",
    "cheerful": "Thanks a lot!",
    "methodical": "That's everything for now.",
    "apologetic": "Sorry for the extra work, and thank you.",
    "skeptical": "I'll check the result afterwards.",
}
# After a tone's own connectors are used up: a person does not open every turn the same way.
PLAIN_CONNECTORS = ("Next,", "Also,", "And now", "Then")
THEN = ("then", "after that", "and then")


class TemplateRenderer:
    """Offline rendering: the plan's clauses joined in a persona's voice."""

    def __init__(self, seed: int | str = 0) -> None:
        self.seed = seed
        self._connectors: list[str] = []  # the openers of this task's later turns, in order

    def render(self, plan: IntentPlan, persona: Persona) -> list[str]:
        rng = random.Random(f"{self.seed}:{persona.id}")
        env = next((g.env for goals in plan.turns for g in goals), "")
        messages = []
        connectors = list(CONNECTORS.get(persona.tone, ()))
        rng.shuffle(connectors)  # each used once, so no two turns open alike
        self._connectors = [*connectors, *(c for c in PLAIN_CONNECTORS if c not in connectors)]
        many = sum(len(goals) for goals in plan.turns) > 1  # a situation of several things fits
        for t, goals in enumerate(plan.turns):
            body = self._body(goals, rng)
            if t == len(plan.turns) - 1 and plan.closing:
                # asked in a turn of its own, the write-up is no "finally" of anything
                closing = plan.closing if body else capital(plan.closing.removeprefix("Finally, "))
                body = f"{body} {closing}".strip()
            last = t == len(plan.turns) - 1
            messages.append(possessives(self._voice(persona, env, t, last, body, rng, many)))
        return messages

    def _body(self, goals: list[Goal], rng: random.Random) -> str:
        """The goals as sentences: the facts first, then a sentence per clause (a goal and what
        the user then wants done with its record); a goal's leads just before its sentence."""
        sentences: list[str] = []
        facts = [s for g in goals if g.fact and not g.about for s in (*g.leads, g.text)]
        about = [g.text for g in goals if g.about]
        steps = [g for g in goals if not g.fact]
        i = 0
        clauses: list[list[str]] = []  # each: a goal and what the user then wants done with its record
        leads: list[list[str]] = []  # each clause's leads (the first's with the about goals')
        while i < len(steps):
            goal = steps[i]
            if goal.planned_error and i + 1 < len(steps):
                clauses.append([f"try to {goal.text}; if that is not possible, {steps[i + 1].text} instead"])
                leads.append([*goal.leads, *steps[i + 1].leads])
                i += 2
                continue
            if goal.follows and clauses:  # acts on what the clause before makes: one sentence
                clauses[-1].append(goal.text)
                leads[-1] += goal.leads
            else:
                clauses.append([goal.text])
                leads.append(list(goal.leads))
            i += 1
        before = [s for g in goals if g.about for s in g.leads]  # said with the first clause
        if leads:
            leads[0][:0] = before
        else:
            sentences += [sentence(s) for s in before]
        for n, (first, *then) in enumerate(clauses):
            sentences += [sentence(s) for s in leads[n]]
            lead = "" if n == 0 else rng.choice(THEN).capitalize() + " "
            if n == 0 and about:  # what the work is for, said with the work
                lead = f"for {join_words(about)}, "
            if len(then) == 1:
                first += f", and {then[0]}"
            elif then:
                first += f", {join_words(then)}"
            clause = first
            sentences.append(sentence(f"{lead}{clause}".strip()))
        if about and not clauses:
            sentences.append(f"It's about {join_words(about)}.")
        sentences = [sentence(f) for f in facts] + sentences
        return " ".join(sentences)

    def _voice(
        self, persona: Persona, env: str, turn: int, last: bool, body: str, rng: random.Random, many: bool
    ) -> str:
        """The turn's words in the persona's voice: a greeting and the desk's situation open the
        first (a situation of several things only where ``many`` goals are asked), a connector a
        later one, a closing the last."""
        if persona.verbosity == "terse":
            return body
        if turn == 0:
            parts = [rng.choice(GREETINGS.get(persona.tone, ("",)))]
            fitting = [line for line in situations().get(env, ()) if many or not _PLURAL.search(line)]
            if persona.verbosity == "chatty" and fitting:
                parts.append(rng.choice(fitting))
            parts.append(body)
        else:
            parts = [self._connectors[(turn - 1) % len(self._connectors)], lower_first(body)]
        if last and persona.verbosity == "chatty" and persona.tone in CLOSINGS:  # said once, at the end
            parts.append(CLOSINGS[persona.tone])
        return " ".join(p for p in parts if p)
