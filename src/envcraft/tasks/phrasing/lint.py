"""A scan of user turns for the marks of generated text that no person writes.

Every check here is one pattern seen in generated corpora (issue 21): text a reader recognises
at once as a template's seam rather than a person with a goal. Each function takes text and
returns the offending snippets (empty: clean), so a test can show it on one example and
:func:`scan` can run them all over a whole task set. The scan reads only the turns' text, so it
answers for any task set on disk, however it was made.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from envcraft.tasks.format.model import Task

_DOUBLED_QUOTES = re.compile(r"“\s*“|”\s*”|\"\s*\"|“\s*”")
# one to three words said twice in a row ("period period", "record quarantined record quarantined")
_DOUBLED_WORD = re.compile(r"(?<![\w-])(\w+(?:\s+\w+){0,2})\s+\1(?!\w)", re.IGNORECASE)
# a noun said again one word later ("in period accounting period 2026-01")
_ECHOED_NOUN = re.compile(r"(?<![\w-])([a-z]{4,}) [a-z]+ \1(?= [A-Z0-9])")
_PERSONA_PREFIX = re.compile(r"\bI(?:'m| am) [A-Z][\w-]*, (?:an?|the) [^.!?]{2,60}[.!?]")
_CHAIN_LEFTOVER = re.compile(r"\bit concerns\b", re.IGNORECASE)
_NESTED_PREFIX = re.compile(r"(?:\b[A-Z]\w* [A-Z][A-Z0-9]*-\d+:\s*){2,}")
# a step on a record this very turn makes: "... After that send the new message."
_DICTATED_STEP = re.compile(
    r"(?:^|[.!?]\s+|,\s*|;\s*)(?:then|after that|and then|finally|next)[,:]?\s+(?:\w+\s+){1,3}?"
    r"(?:the new|that new)\s+[\w -]+",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
# a time of day said by the user: the world's clock may say otherwise ("Good afternoon." at 06:30)
_CLOCK_CLAIM = re.compile(
    r"\bgood (?:morning|afternoon|evening)\b|\bmorning!|\bthis (?:morning|afternoon|evening)\b|\btonight\b",
    re.IGNORECASE,
)
# words that answer something, opening a conversation that has nothing yet to answer
_REPLY_OPENER = re.compile(r"^(?:okay|ok|right|perfect|great|fine|sure|alright)\b[.,!]", re.IGNORECASE)
_QUOTED = re.compile(r"“([^”]*)”")
_DOUBLED_STOP = re.compile(r"[.!?][”’\"'][.!?]")

# Sentences that carry no meaning: said to anyone about anything, they tell the agent nothing.
EMPTY_OPENERS = (
    "Last time this went wrong, so please be careful.",
    "Let's get this right this time.",
    "Hi hi! Fun one today.",
    "Hello! Happy to have you on this.",
    "Here is exactly what I need.",
    "Here is what I need, in order.",
    "Could you please help me with the following.",
    "Apologies for the trouble, but I need a hand.",
    "Hope you're doing well.",
    "Thanks for helping out.",
    "I need this done now.",
    "Quick one, please.",
    "Double-check that, then",
    "Assuming that worked, now",
    "Tell me when each part is done.",
    "You're the best, thanks!",
)
REPEAT_MIN_CHARS = 24  # a quoted value this long, said twice, is a copy, not a reference
REPEAT_MIN_WORDS = 8  # as many words in a row, said in two turns, are a description pasted twice


def doubled_quotes(text: str) -> list[str]:
    """Two quote marks in a row (a value quoted twice: ``““Running late.””``) or an empty quote."""
    return [m.group(0) for m in _DOUBLED_QUOTES.finditer(text)]


def doubled_words(text: str) -> list[str]:
    """Words said twice in a row: ``period period 2026-01``, ``SKU SKU-10217``, ``run RUN-0003``,
    ``quarantined record quarantined record`` (up to three words), or a noun again one word
    later (``in period accounting period 2026-01``)."""
    return [m.group(0) for m in (*_DOUBLED_WORD.finditer(text), *_ECHOED_NOUN.finditer(text))]


def doubled_stops(text: str) -> list[str]:
    """A sentence ended twice, inside a quote and after it: ``saying “Running late.”.``"""
    return [m.group(0) for m in _DOUBLED_STOP.finditer(text)]


def persona_prefix(text: str) -> list[str]:
    """A self-introduction stuck on a request: ``I'm Dmitri, a night-shift warehouse lead.``"""
    return [m.group(0) for m in _PERSONA_PREFIX.finditer(text)]


def empty_openers(text: str) -> list[str]:
    """Stock phrases that say nothing about the job (:data:`EMPTY_OPENERS`)."""
    folded = text.casefold()
    return [phrase for phrase in EMPTY_OPENERS if phrase.casefold() in folded]


def chain_leftovers(text: str) -> list[str]:
    """What a planner says when it does not know how to say a value: ``It concerns Maria Novak.``"""
    return [m.group(0) for m in _CHAIN_LEFTOVER.finditer(text)]


def dictated_steps(text: str) -> list[str]:
    """A tool step on a record the same message has the agent make: ``... After that send the new
    message.`` A person states the outcome ("send Alex a note saying ..."); the steps are the agent's."""
    return [m.group(0).strip(" ,;.") for m in _DICTATED_STEP.finditer(text)]


def clock_claims(text: str) -> list[str]:
    """A time of day the user states ("Good afternoon.", "this morning's alerts"): the world's
    clock is the task's, and a greeting that contradicts it reads as a template."""
    return [m.group(0) for m in _CLOCK_CLAIM.finditer(text)]


def reply_openers(text: str) -> list[str]:
    """A first message that opens as a reply ("Okay.", "Right.", "Perfect, thanks!"): nothing has
    been said yet for the user to answer."""
    return [m.group(0) for m in _REPLY_OPENER.finditer(text.strip())]


def nested_prefixes(text: str) -> list[str]:
    """Id prefixes stacked on free text: ``Message MSG-0001: Message MSG-0004: Follow up.``"""
    return [m.group(0).strip() for m in _NESTED_PREFIX.finditer(text)]


TURN_CHECKS: dict[str, Callable[[str], list[str]]] = {
    "doubled_quotes": doubled_quotes,
    "doubled_words": doubled_words,
    "doubled_stops": doubled_stops,
    "persona_prefix": persona_prefix,
    "empty_openers": empty_openers,
    "chain_leftovers": chain_leftovers,
    "dictated_steps": dictated_steps,
    "nested_prefixes": nested_prefixes,
    "clock_claims": clock_claims,
}
# Checks of the first turn alone (what opens the conversation).
FIRST_TURN_CHECKS: dict[str, Callable[[str], list[str]]] = {"reply_openers": reply_openers}


def repeated_values(turns: Sequence[str]) -> list[tuple[int, str]]:
    """``(turn, text)`` for a long value or description that an earlier turn already said word for
    word: a quoted value of :data:`REPEAT_MIN_CHARS`+ characters, or :data:`REPEAT_MIN_WORDS`+
    words in a row. A later turn refers back ("that message", "the booking you just made")."""
    found: list[tuple[int, str]] = []
    seen_quotes: set[str] = set()
    seen_runs: set[tuple[str, ...]] = set()
    for t, text in enumerate(turns):
        quotes = {q.strip() for q in _QUOTED.findall(text) if len(q.strip()) >= REPEAT_MIN_CHARS}
        found += [(t, q) for q in sorted(quotes & seen_quotes)]
        words = _QUOTED.sub(" ", text).split()
        runs = [tuple(words[i : i + REPEAT_MIN_WORDS]) for i in range(len(words) - REPEAT_MIN_WORDS + 1)]
        found += [(t, " ".join(words[a:b])) for a, b in _spans([run in seen_runs for run in runs])]
        seen_quotes |= quotes
        seen_runs |= set(runs)
    return found


def _spans(hits: list[bool]) -> list[tuple[int, int]]:
    """Word ranges covered by consecutive repeated runs (a run starting at i covers i..i+n)."""
    spans: list[tuple[int, int]] = []
    for i, hit in enumerate(hits):
        if not hit:
            continue
        if spans and spans[-1][1] >= i + REPEAT_MIN_WORDS - 1:
            spans[-1] = (spans[-1][0], i + REPEAT_MIN_WORDS)
        else:
            spans.append((i, i + REPEAT_MIN_WORDS))
    return spans


@dataclass(frozen=True)
class Finding:
    """One artifact: which task and turn, which check, and the offending text."""

    task: str
    turn: int
    check: str
    text: str


def scan_turns(task_id: str, turns: Sequence[str]) -> list[Finding]:
    """Every check over one task's user turns, in turn order."""
    found = [
        Finding(task_id, t, name, snippet)
        for t, text in enumerate(turns)
        for name, check in TURN_CHECKS.items()
        for snippet in check(text)
    ]
    found += [
        Finding(task_id, 0, name, snippet)
        for name, check in FIRST_TURN_CHECKS.items()
        for snippet in (check(turns[0]) if turns else [])
    ]
    found += [Finding(task_id, t, "repeated_values", text) for t, text in repeated_values(turns)]
    return sorted(found, key=lambda f: (f.turn, f.check))


def scan(tasks: Iterable[Task]) -> list[Finding]:
    """Every check over every task of a set."""
    return [f for task in tasks for f in scan_turns(task.id, [turn.user for turn in task.turns])]


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per check, every check listed (zeros included), in :data:`TURN_CHECKS` order."""
    per = Counter(f.check for f in findings)
    return {name: per[name] for name in [*TURN_CHECKS, *FIRST_TURN_CHECKS, "repeated_values"]}
