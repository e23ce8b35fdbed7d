"""User intents: a golden chain told as 1–4 user turns in a persona's voice, hiding what the agent must find.

Rendering is offline and template-based: each call becomes an imperative built from its
tool's docstring summary ("Cancel an order that has not shipped yet") plus its arguments.
User-provided values are stated; a derived value is never stated — the turn says how to find
it instead ("the order whose placed_at is 2026-01-03T18:00:00Z, from the earlier step (list a
customer's orders)"). A planned error step becomes "Try to X; if that is not possible, Y".
:class:`IntentRenderer` is the hook for an LLM renderer; whatever renders, :func:`find_leaks`
and :func:`missing_user_values` check the result against the reference's provenance.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from envcraft.tasks.args import id_kind
from envcraft.tasks.golden import GoldenCall
from envcraft.tasks.graph import ToolGraph
from envcraft.tasks.model import Task

PERSONAS_FILE = Path(__file__).with_name("personas.json")
MAX_TURNS = 4


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
    """Turns a golden chain into user messages, one per turn (``turns`` lists call indices)."""

    def render(
        self,
        chain: list[GoldenCall],
        persona: Persona,
        *,
        turns: list[list[int]],
        graphs: Mapping[str, ToolGraph],
    ) -> list[str]: ...


def split_turns(chain: list[GoldenCall], rng: random.Random) -> list[list[int]]:
    """Contiguous groups of call indices, 1–4 of them; a planned error stays with its recovery."""
    units: list[list[int]] = []
    for i in range(len(chain)):
        if units and chain[i - 1].expected_error and i - 1 in units[-1]:
            units[-1].append(i)
        else:
            units.append([i])
    count = rng.randint(1, min(MAX_TURNS, len(units)))
    cuts = sorted(rng.sample(range(1, len(units)), count - 1))
    bounds = [0, *cuts, len(units)]
    return [[i for unit in units[a:b] for i in unit] for a, b in itertools.pairwise(bounds)]


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
    "methodical": ("Hello. Please go through these steps in order.", "Hi. Here is exactly what I need."),
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
    "methodical": ("Step done. Next,", "Good. The next step:"),
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
    "methodical": "Confirm each step when done.",
    "apologetic": "Sorry again, and thank you.",
    "skeptical": "Tell me exactly what you changed.",
}
NOT_VERBS = frozenset({"a", "an", "the", "this", "one", "returns", "tool", "helper", "internal"})


class TemplateRenderer:
    """Offline rendering from docstring summaries and a persona's tone and verbosity."""

    def __init__(self, seed: int | str = 0) -> None:
        self.seed = seed

    def render(
        self,
        chain: list[GoldenCall],
        persona: Persona,
        *,
        turns: list[list[int]],
        graphs: Mapping[str, ToolGraph],
    ) -> list[str]:
        rng = random.Random(f"{self.seed}:{persona.id}")
        multi_env = len({c.env for c in chain}) > 1
        messages: list[str] = []
        env_before: str | None = None
        for t, indices in enumerate(turns):
            sentences: list[str] = []
            i = 0
            while i < len(indices):
                call = chain[indices[i]]
                prefix = ""
                if multi_env and call.env != env_before:
                    prefix = f"In {graphs[call.env].title}: "
                env_before = call.env
                if call.expected_error and i + 1 < len(indices):
                    recovery = chain[indices[i + 1]]
                    sentences.append(
                        f"{prefix}Try to {self._phrase(call, chain, graphs)}. If that is not possible, "
                        f"{self._phrase(recovery, chain, graphs)} instead."
                    )
                    i += 2
                    continue
                sentences.append(f"{prefix}{_capital(self._phrase(call, chain, graphs))}.")
                i += 1
            messages.append(self._voice(persona, t, sentences, rng))
        return messages

    def _voice(self, persona: Persona, turn: int, sentences: list[str], rng: random.Random) -> str:
        body = " ".join(sentences)
        if turn == 0:
            opener = rng.choice(OPENERS.get(persona.tone, ("",)))
            if persona.verbosity == "chatty":
                opener = f"{opener} I'm {persona.name}, {_article(persona.role)} {persona.role}.".strip()
            parts = [opener, body] if persona.verbosity != "terse" else [body]
        else:
            connector = rng.choice(CONNECTORS.get(persona.tone, ("Next,",)))
            parts = [connector, _lower_first(body)] if persona.verbosity != "terse" else [body]
        if persona.verbosity == "chatty" and persona.tone in CLOSINGS:
            parts.append(CLOSINGS[persona.tone])
        return " ".join(p for p in parts if p)

    def _phrase(self, call: GoldenCall, chain: list[GoldenCall], graphs: Mapping[str, ToolGraph]) -> str:
        node = graphs[call.env].nodes[call.tool]
        action = imperative(node.summary, call.tool)
        details = [self._argument(name, value, call, chain, graphs) for name, value in call.args.items()]
        return f"{action} ({'; '.join(details)})" if details else action

    def _argument(
        self,
        name: str,
        value: Any,
        call: GoldenCall,
        chain: list[GoldenCall],
        graphs: Mapping[str, ToolGraph],
    ) -> str:
        label = name.replace("_", " ")
        hint = call.hints.get(name)
        if call.provenance.get(name, "user") == "user" or hint is None:
            return f"{label}: {format_value(value)}"
        source = chain[hint.call]
        where = imperative(graphs[source.env].nodes[source.tool].summary, source.tool)
        leaf = call.provenance[name].rsplit(".", 1)[-1]
        own = id_kind(leaf) == hint.entity or leaf == "id"  # the record's own id
        what = f"the {hint.entity}" if own else f"the {leaf.replace('_', ' ')} of the {hint.entity}"
        if hint.field is not None:
            what += f" whose {hint.field.replace('_', ' ')} is {format_value(hint.value)}"
        return f"{label}: {what}, from the result of the earlier step “{where}”"


def imperative(summary: str, tool: str) -> str:
    """``"Finds a customer by email."`` -> ``"find a customer by email"``: the summary's main
    clause (explanations after ";" or ":" dropped) in the imperative; non-verb summaries fall
    back to naming the tool."""
    text = re.split(r";|: | — | - ", summary.strip(), maxsplit=1)[0]
    text = re.sub(r"\s*\([^()]*\)", "", text).rstrip(".").strip()  # asides in parentheses
    words = text.split(" ", 1)
    if not text or words[0].lower() in NOT_VERBS:
        return f"use {tool}" + (f" ({_lower_first(text)})" if text else "")
    verb = words[0]
    lowered = verb.lower()
    if lowered.endswith("ies") and len(lowered) > 4:
        verb = verb[:-3] + "y"
    elif lowered.endswith(("ches", "shes", "sses", "xes")):
        verb = verb[:-2]
    elif lowered.endswith("s") and not lowered.endswith(("ss", "us", "is")):
        verb = verb[:-1]
    return _lower_first(verb) + (" " + words[1] if len(words) > 1 else "")


def format_value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and ("\n" in value or " " in value.strip()):
        return f"“{value}”"
    return str(value)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    """Lower-case the first letter unless the first word is an acronym ("SKU", "CSV")."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


# -- information hiding checks ----------------------------------------------------------------------
def _scalars(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [value] if isinstance(value, str | int | float | bool) else []


def _mentions(text: str, value: Any) -> bool:
    needle = str(value).strip()
    if not needle:
        return True
    pattern = r"(?<![A-Za-z0-9])" + re.escape(needle.lower()) + r"(?![A-Za-z0-9])"
    return re.search(pattern, text.lower()) is not None


def find_leaks(task: Task) -> list[dict[str, Any]]:
    """Derived values (which the agent must obtain through tools) that a user turn states."""
    stated = {
        str(v)
        for c in task.reference.calls
        for k, label in c.provenance.items()
        if label == "user"
        for v in _scalars(c.args.get(k))
    }
    leaks: list[dict[str, Any]] = []
    for i, call in enumerate(task.reference.calls):
        for name, label in call.provenance.items():
            if label == "user":
                continue
            for value in _scalars(call.args.get(name)):
                if isinstance(value, bool) or str(value) in stated:
                    continue
                for t, turn in enumerate(task.turns):
                    if _mentions(turn.user, value):
                        leaks.append({"turn": t, "call": i, "arg": name, "value": value})
    return leaks


def missing_user_values(task: Task) -> list[dict[str, Any]]:
    """User-provided argument values that no user turn states (the agent could not know them)."""
    text = "\n".join(t.user for t in task.turns)
    missing: list[dict[str, Any]] = []
    for i, call in enumerate(task.reference.calls):
        for name, label in call.provenance.items():
            if label != "user":
                continue
            value = call.args.get(name)
            if isinstance(value, bool):
                present = _mentions(text, name.replace("_", " "))
            else:
                present = all(_mentions(text, v) for v in _scalars(value))
            if not present:
                missing.append({"call": i, "arg": name, "value": value})
    return missing
