"""The user's voice: personas, and the offline renderer that turns an intent plan into messages.

:func:`envcraft.tasks.phrasing.intents.plan_intents` decides *what* each turn says; an
:class:`IntentRenderer` decides *how*, in a :class:`Persona`'s tone and verbosity. The
:class:`TemplateRenderer` does it offline, seeded, with no model; another renderer (a model) can
replace it without touching what must be said.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from envcraft.tasks.phrasing.intents import Goal, IntentPlan
from envcraft.tasks.phrasing.words import article, capital, lower_first, possessives

PERSONAS_FILE = Path(__file__).with_name("personas.json")


@dataclass(frozen=True)
class Persona:
    id: str
    name: str
    role: str
    tone: str
    verbosity: str

    def describe(self) -> str:
        return f"{self.id}: {self.name}, {self.role} ({self.tone}, {self.verbosity})"


@cache
def personas() -> tuple[Persona, ...]:
    """The shipped persona set (``personas.json``)."""
    return tuple(Persona(**p) for p in json.loads(PERSONAS_FILE.read_text(encoding="utf-8")))


class IntentRenderer(Protocol):
    """Turns an :class:`IntentPlan` into one user message per turn."""

    def render(self, plan: IntentPlan, persona: Persona) -> list[str]: ...


# -- the offline renderer --------------------------------------------------------------------------
OPENERS = {
    "formal": (
        "Good day. Could you please help me with the following.",
        "Hello, I would appreciate your help.",
    ),
    "casual": ("Hey!", "Hi there,"),
    "terse": ("",),
    "friendly": ("Hi! Hope you're doing well.", "Hello! Thanks for helping out."),
    "anxious": ("Hi, sorry, I'm a bit stressed about this.", "Hello, I really need this sorted today."),
    "impatient": ("I need this done now.", "Quick one, please."),
    "cheerful": ("Hi hi! Fun one today.", "Hello! Happy to have you on this."),
    "methodical": ("Hello. Here is what I need, in order.", "Hi. Here is exactly what I need."),
    "apologetic": ("Sorry to bother you!", "Apologies for the trouble, but I need a hand."),
    "skeptical": ("Last time this went wrong, so please be careful.", "Let's get this right this time."),
}
CONNECTORS = {
    "formal": ("Thank you. Next, please", "Very good. Now please"),
    "casual": ("Cool, now", "Nice. Next up:"),
    "terse": ("Next:", "Now"),
    "friendly": ("Thanks so much! Now could you", "Great, thank you! Next, please"),
    "anxious": ("Okay, thank you. Now, please", "Phew. Next, could you"),
    "impatient": ("Fine. Now", "Next:"),
    "cheerful": ("Awesome! Now", "Yay, thanks! Next,"),
    "methodical": ("Done? Good. Next,", "Good. The next thing:"),
    "apologetic": ("Thanks, and sorry again, but could you also", "Sorry, one more thing:"),
    "skeptical": ("Assuming that worked, now", "Double-check that, then"),
}
CLOSINGS = {
    "formal": "Thank you in advance.",
    "casual": "Thanks!",
    "friendly": "You're the best, thanks!",
    "anxious": "Please let me know when it's done.",
    "impatient": "Be quick.",
    "cheerful": "Thanks a bunch!",
    "methodical": "Tell me when each part is done.",
    "apologetic": "Sorry again, and thank you.",
    "skeptical": "Tell me exactly what you changed.",
}
THEN = ("then", "after that", "and then")


class TemplateRenderer:
    """Offline rendering: the plan's clauses joined in a persona's voice."""

    def __init__(self, seed: int | str = 0) -> None:
        self.seed = seed

    def render(self, plan: IntentPlan, persona: Persona) -> list[str]:
        rng = random.Random(f"{self.seed}:{persona.id}")
        messages = []
        for t, goals in enumerate(plan.turns):
            body = self._body(goals, rng)
            if t == len(plan.turns) - 1 and plan.closing:
                body = f"{body} {plan.closing}".strip()
            messages.append(possessives(self._voice(persona, t, body, rng)))
        return messages

    def _body(self, goals: list[Goal], rng: random.Random) -> str:
        sentences: list[str] = []
        facts = [g.text for g in goals if g.fact]
        steps = [g for g in goals if not g.fact]
        i = 0
        clauses: list[str] = []
        while i < len(steps):
            goal = steps[i]
            if goal.planned_error and i + 1 < len(steps):
                clauses.append(f"try to {goal.text}; if that is not possible, {steps[i + 1].text} instead")
                i += 2
                continue
            clauses.append(goal.text)
            i += 1
        for n, clause in enumerate(clauses):
            lead = "" if n == 0 else rng.choice(THEN).capitalize() + " "
            sentences.append(capital(f"{lead}{clause}".strip()) + ".")
        sentences = [capital(f) + "." for f in facts] + sentences
        return " ".join(sentences)

    def _voice(self, persona: Persona, turn: int, body: str, rng: random.Random) -> str:
        if turn == 0:
            opener = rng.choice(OPENERS.get(persona.tone, ("",)))
            if persona.verbosity == "chatty":
                opener = f"{opener} I'm {persona.name}, {article(persona.role)} {persona.role}.".strip()
            parts = [opener, body] if persona.verbosity != "terse" else [body]
        else:
            connector = rng.choice(CONNECTORS.get(persona.tone, ("Next,",)))
            parts = [connector, lower_first(body)] if persona.verbosity != "terse" else [body]
        if persona.verbosity == "chatty" and persona.tone in CLOSINGS:
            parts.append(CLOSINGS[persona.tone])
        return " ".join(p for p in parts if p)
