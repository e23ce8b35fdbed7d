"""The deterministic check a rewritten user turn must pass before it replaces the template's.

A writer (:mod:`envcraft.tasks.phrasing.writer`) may reword a turn freely, but the task's
reference, verifier and validation were made for what the template turn says. So a rewrite is
used only if, turn by turn, it still says the same things and nothing more:

* every value the template turn states is there as rendered (:func:`required_values`: the
  recorded mentions, ids, numbers, dates, paths and addresses it says); dictated text exactly,
  inside its curly quotes, and no other quoted text (the verifier's dictated-text checks compare
  what the agent writes with the quoted words);
* nothing a later turn asks for is said earlier (the verifier checks every turn's boundary), and
  no id, number, date or address that no turn so far gives (a new value is an unasked request);
* no hidden value (:func:`~envcraft.tasks.phrasing.leaks.hidden_values`), no tool or parameter
  name the template does not say (:func:`~envcraft.tasks.phrasing.leaks.names_said`);
* no negation, retraction or correction the template does not have (a dictated text "not" sent,
  "ignore that": the meaning the verifier pays for would be contradicted by the request);
* the text scan (:mod:`envcraft.tasks.phrasing.lint`) finds nothing in it, across turns too;
* and, on the task with the accepted turns in place, :func:`find_leaks` and
  :func:`missing_user_values` find nothing, as for every template task.

A refused turn keeps the template text; :func:`review` says why for each turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from envcraft.tasks.format.model import Task, Turn
from envcraft.tasks.phrasing.leaks import find_leaks, hidden_values, missing_user_values, names_said
from envcraft.tasks.phrasing.lint import TURN_CHECKS, repeated_values
from envcraft.tasks.phrasing.words import QUOTED, says

_STRAIGHT = re.compile(r"\"[^\"\n]*\"")
# a word that is a value, not English: it has a digit, an @ or a slash (ids, amounts, dates,
# times, addresses, paths)
_VALUE_TOKEN = re.compile(r"[^\s,;()“”\"]*[\d@/][^\s,;()“”\"]*")
# words that negate, retract or correct what a message asks for
NEGATIONS = (
    r"\bnot\b",
    r"n't\b",
    r"\bnever\b",
    r"\bno longer\b",
    r"\binstead\b",
    r"\bignore\b",
    r"\bdisregard\b",
    r"\bcorrection\b",
    r"\bscratch that\b",
    r"\bnever mind\b",
    r"\brather than\b",
    r"\bunless\b",
)
PRONOUNS = frozenset({"it", "them", "that", "this"})


def required_values(task: Task, template: Sequence[str], turn: int) -> list[str]:
    """What template turn ``turn`` states that a rewrite of it must state as well: each recorded
    mention, quoted text, the asked file's path and what it must give, and every value-like word
    (a digit, ``@`` or ``/`` in it) found in the turn. A phrase said once, inside a longer one,
    is left out (saying the longer one says it)."""
    phrases = _phrases(task, template[turn])
    return [
        p
        for p in phrases
        if not (_count(p, template[turn]) == 1 and any(p != q and _count(p, q) for q in phrases))
    ]


def _phrases(task: Task, text: str) -> list[str]:
    folded = text.casefold()
    candidates = [m["text"] for m in task.provenance.get("mentions", [])]
    request = task.provenance.get("file_request") or {}
    candidates += [str(request.get("path", ""))] + [str(i.get("what", "")) for i in request.get("items", [])]
    phrases = [
        c for c in candidates if len(c) >= 3 and c.casefold() not in PRONOUNS and c.casefold() in folded
    ]
    phrases += QUOTED.findall(text)
    phrases += _value_tokens(text)
    return list(dict.fromkeys(p for p in phrases if p.strip() and _count(p, text)))


def _value_tokens(text: str) -> list[str]:
    """The value-like words of ``text`` outside its quotes (a digit, ``@`` or ``/`` in them)."""
    tokens = (w.rstrip(".:!?'") for w in _VALUE_TOKEN.findall(QUOTED.sub(" ", text)))
    return [w for w in tokens if w]


def _count(phrase: str, text: str) -> int:
    """How often ``text`` says ``phrase`` as whole words: exactly for a quoted text, else case aside."""
    if phrase.startswith("“"):
        return text.count(phrase)
    pattern = r"(?<![A-Za-z0-9])" + re.escape(phrase.casefold()) + r"(?![A-Za-z0-9])"
    return len(re.findall(pattern, text.casefold()))


def review(task: Task, rewrite: Sequence[str], names: Iterable[str]) -> list[str | None]:
    """Per turn, None where the rewritten turn is accepted, else why it is refused (the template
    text stays there). ``names`` are the tool and parameter names of the task's environments."""
    template = [t.user for t in task.turns]
    if len(rewrite) != len(template):
        return ["turn_count"] * len(template)
    names = set(names)
    reasons = [_turn_reason(task, template, rewrite, t, names) for t in range(len(template))]
    baseline = set(repeated_values(template))
    while True:  # the checks across turns, on the turns accepted so far, until none is refused
        mixed = [rewrite[t] if reasons[t] is None else template[t] for t in range(len(template))]
        found = _across_turns(task, mixed, baseline, [r is None for r in reasons])
        refused = {t: why for t, why in found if reasons[t] is None}
        if not refused:
            return reasons
        for t, why in refused.items():
            reasons[t] = why


def _turn_reason(
    task: Task, template: Sequence[str], rewrite: Sequence[str], t: int, names: set[str]
) -> str | None:
    text, before = rewrite[t], template[t]
    if not text.strip():
        return "empty"
    # each phrase as often as the template says it (two classes in room RM-11 stay two); a
    # dictated text exactly as often (twice could be two messages)
    short = [p for p in _phrases(task, before) if _count(p, text) < _count(p, before)]
    quotes, allowed = QUOTED.findall(text), QUOTED.findall(before)
    straight = len(_STRAIGHT.findall(text)) > len(_STRAIGHT.findall(before))
    if (
        any(p.startswith("“") for p in short)
        or any(quotes.count(q) > allowed.count(q) for q in quotes)
        or straight
    ):
        return "dictated_text"
    if short:
        return "user_value"
    earlier = "\n".join(template[: t + 1])
    later = {v for u in range(t + 1, len(template)) for v in _phrases(task, template[u])}
    if any(_count(v, text) for v in later if not _count(v, earlier)):
        return "early_value"
    if any(says(text, v) for v in hidden_values(task)):
        return "hidden_value"
    if any(not _count(v, earlier) for v in _value_tokens(text)):
        return "new_value"  # an id, number, date or address no turn so far gives: an unasked ask
    if set(names_said(text, names)) - set(names_said(before, names)):
        return "tool_name"
    if any(
        len(re.findall(cue, text, re.IGNORECASE)) > len(re.findall(cue, before, re.IGNORECASE))
        for cue in NEGATIONS
    ):
        return "meaning"
    for check, scan in TURN_CHECKS.items():
        if scan(text):
            return f"text_scan:{check}"
    return None


def _across_turns(
    task: Task, turns: list[str], baseline: set[tuple[int, str]], rewritten: list[bool]
) -> list[tuple[int, str]]:
    """``(turn, reason)`` for what only the whole conversation shows: a long value said again
    (the text scan's ``repeated_values``, unless the template repeats it too: blamed on the turn
    that repeats it, or where that is the template's, on the rewritten turns before it), a leak,
    a value the agent needs and no turn says up to its call's turn."""
    found: list[tuple[int, str]] = []
    for u, text in repeated_values(turns):
        if (u, text) not in baseline:
            found += [(t, "text_scan:repeated_values") for t in ([u] if rewritten[u] else range(u))]
    candidate = task.model_copy(update={"turns": [Turn(user=text) for text in turns]})
    found += [(leak["turn"], "hidden_value") for leak in find_leaks(candidate)]
    calls = candidate.reference.calls
    for missing in missing_user_values(candidate):
        # said up to its call's turn: any of those turns may have dropped it
        found += [(t, "user_value") for t in range(calls[missing["call"]].turn + 1)]
    return found
