"""An LLM writer for user turns: one request per task, built from the structured intent.

The offline :class:`~envcraft.tasks.phrasing.render.TemplateRenderer` says every goal of an
:class:`~envcraft.tasks.phrasing.intents.IntentPlan` correctly but reads like a template. A
model can say the same in a person's words, if it is told what must be said and what must not:

* :func:`intent_of` keeps what the plan decided per turn (each goal's clause, the values only
  the user knows, whether it may be refused or acts on the record before it) and the persona.
  It never holds a tool or parameter name: the model writes what a person wants, not calls.
* :func:`writer_messages` is the request: the intent, the template text of each turn as a
  draft, the values to say as written and the values the agent must find (never to be said).
* :func:`parse_turns` reads the answer (a JSON object ``{"turns": [...]}``, fenced or not).

Whether a rewritten turn is used is decided by the deterministic checks of
:mod:`envcraft.tasks.phrasing.review`, never by the model. A :class:`TurnWriter` is whatever
answers the requests (a model behind :mod:`envcraft.llm`, wired up above the data engine).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import Goal, IntentPlan
from envcraft.tasks.phrasing.leaks import hidden_values
from envcraft.tasks.phrasing.render import Persona
from envcraft.tasks.phrasing.review import required_values

Messages = list[dict[str, str]]

SYSTEM = """\
You rewrite the messages a person sends to an assistant who does work for them in software \
systems. You get the person (name, job, tone, how much they say) and, per turn, what they want \
done (goals) with a template draft that says it correctly but stiffly. Write what this person \
would really type, one message per turn, the same number of turns.

Rules, all of them hard:
- Keep every text listed in must_say exactly as written (same characters, case aside), in the \
turn it is listed for. A text in curly quotes “...” is dictated: keep it inside the same curly \
quotes, word for word, and ask for it as it is (never negate, correct or comment on it).
- Never write anything listed in never_say, and never an id or value the draft does not give.
- Ask in each turn only for that turn's goals, never for a later turn's.
- State the outcome the person wants; leave the steps, their order and the system's function, \
tool, field and parameter names to the assistant. Do not write code or identifiers.
- The tone and verbosity come from the person. Do not introduce the person ("I'm ..., a ..."), \
do not add filler ("Hope you're doing well."), do not repeat a long description in a later turn \
(refer back: "that booking"). No negation ("not", "n't", "never", "no longer"), "instead", \
"unless" or correction that the draft does not have: such words are read as changing the request.
Answer with one JSON object and nothing else: {"turns": ["<message of turn 1>", ...]}"""


def intent_of(plan: IntentPlan, persona: Persona) -> dict[str, Any]:
    """The structured intent of a task's turns (JSON): goals per turn, the closing request, the
    persona. Stored beside the task when it is made (see ``ShardResult.intents``)."""
    turns: list[dict[str, Any]] = [{"goals": [_goal(g) for g in goals]} for goals in plan.turns]
    if plan.closing and turns:
        turns[-1]["closing"] = plan.closing
    return {
        "persona": {
            "name": persona.name,
            "role": persona.role,
            "tone": persona.tone,
            "verbosity": persona.verbosity,
        },
        "turns": turns,
    }


def _goal(goal: Goal) -> dict[str, Any]:
    kind = (
        "context"
        if goal.about
        else "fact"
        if goal.fact
        else "may_be_refused"
        if goal.planned_error
        else "goal"
    )
    entry: dict[str, Any] = {"ask": goal.text, "kind": kind}
    if goal.leads:  # what "that recipe" in the ask refers to, said just before it
        entry["said_before"] = goal.leads
    if goal.follows:
        entry["acts_on_the_record_before"] = True
    return entry


def writer_messages(task: Task, intent: dict[str, Any]) -> Messages:
    """The one request for ``task``: system rules, then the intent with each turn's draft, the
    values it must say (:func:`~envcraft.tasks.phrasing.review.required_values`) and the values
    no turn may say (:func:`~envcraft.tasks.phrasing.leaks.hidden_values`)."""
    template = [t.user for t in task.turns]
    turns = []
    for t, text in enumerate(template):
        planned = intent["turns"][t] if t < len(intent.get("turns", [])) else {}
        turns.append({**planned, "must_say": required_values(task, template, t), "draft": text})
    body = {"person": intent.get("persona", {}), "turns": turns, "never_say": hidden_values(task)}
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": json.dumps(body, ensure_ascii=False, indent=1)},
    ]


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_turns(answer: str) -> list[str] | None:
    """The turns of a writer's answer, or None when it is not ``{"turns": [str, ...]}`` (a
    fenced block or text around the object is read past)."""
    fenced = _FENCE.search(answer)
    text = fenced.group(1) if fenced else answer
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start : end + 1])
    except ValueError:
        return None
    turns = value.get("turns") if isinstance(value, dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
        return None
    return [t.strip() for t in turns]


@dataclass(frozen=True)
class Reply:
    """A writer's answer to one request: its text, or that it waits (Batch API files) or failed."""

    text: str | None = None
    waiting: bool = False
    error: str = ""


class TurnWriter(Protocol):
    """Answers writer requests (one per task, in order); ``model`` names it in the records."""

    model: str

    def write(self, requests: Sequence[Messages]) -> list[Reply]: ...
