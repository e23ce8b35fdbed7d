"""Small pieces of English the planner and the renderer share: quoting, joining, imperatives.

A goal clause is built by :mod:`envcraft.tasks.phrasing.intents` and voiced by
:mod:`envcraft.tasks.phrasing.render`; both write plurals, possessives, quotes and lists the
same way through these functions.
"""

from __future__ import annotations

import re
from typing import Any

from envcraft.tasks.phrasing.phrasebook import join_words


def quote(value: Any) -> str:
    """Free text as the user says it: in curly quotes."""
    return f"“{value}”"


QUOTED = re.compile(r"“[^”]*”")  # a text :func:`quote` wrote: what the user dictates


def join_facts(texts: list[str]) -> str:
    """Values only the user knows that a goal phrase leaves out, said with it ("for X and Y")."""
    return "for " + join_words(texts)


NOT_VERBS = frozenset({"a", "an", "the", "this", "one", "returns", "tool", "helper", "internal"})


def imperative(summary: str) -> str:
    """``"Finds a customer by email."`` -> ``"find a customer by email"``: the summary's main
    clause (explanations after ";" or ":" dropped) in the imperative."""
    text = re.split(r";|: | — | - ", summary.strip(), maxsplit=1)[0]
    text = re.sub(r"\s*\([^()]*\)", "", text).rstrip(".").strip()
    words = text.split(" ", 1)
    if not text:
        return "do this"
    if words[0].lower() in NOT_VERBS:
        return "work on " + lower_first(text)
    verb = words[0]
    lowered = verb.lower()
    if lowered.endswith("ies") and len(lowered) > 4:
        verb = verb[:-3] + "y"
    elif lowered.endswith(("ches", "shes", "sses", "xes")):
        verb = verb[:-2]
    elif lowered.endswith("s") and not lowered.endswith(("ss", "us", "is")):
        verb = verb[:-1]
    return lower_first(verb) + (" " + words[1] if len(words) > 1 else "")


def possessives(text: str) -> str:
    """``Wide World Importers's`` -> ``Wide World Importers'``; ``1 unit(s)`` -> ``1 unit``,
    ``1 counted unit(s)`` -> ``1 counted unit``, ``3 unit(s)`` -> ``3 units`` (goal phrases
    write plurals as ``(s)``)."""
    text = re.sub(r"(?<=[A-Za-z]s)'s\b", "'", text)
    text = re.sub(r"(?<![\d.])\b1 ((?:[A-Za-z-]+ )?[A-Za-z-]+)\(s\)", r"1 \1", text)
    return re.sub(r"([A-Za-z-]+)\(s\)", r"\1s", text)


def a(noun: str) -> str:
    """``noun`` with its indefinite article: "an order", "a pipeline run"."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def plural(noun: str) -> str:
    """The plural of a noun phrase, its last word inflected: "classes", "purchase orders",
    "deliveries" ("Classs for today" was a note's subject)."""
    head, _, word = noun.rpartition(" ")
    if re.search(r"(s|x|z|ch|sh)$", word):
        word += "es"
    elif re.search(r"[^aeiou]y$", word):
        word = word[:-1] + "ies"
    else:
        word += "s"
    return f"{head} {word}" if head else word


def capital(text: str) -> str:
    """``text`` with its first letter upper-case."""
    return text[:1].upper() + text[1:]


def sentence(text: str) -> str:
    """``text`` as a sentence: its first letter upper-case and a period at its end, unless it ends
    with a mark of its own, a quoted one included (saying “Running late.”, not “Running late.”.)."""
    text = capital(text)
    return text if text.rstrip("”’\"'").endswith((".", "!", "?")) else text + "."


def lower_first(text: str) -> str:
    """Lower-case the first letter unless the first word is an acronym ("SKU", "CSV")."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]


def says(text: str, value: Any) -> bool:
    """Whether ``text`` states ``value`` as a whole word, case aside (an empty value always)."""
    needle = str(value).strip()
    if not needle:
        return True
    pattern = r"(?<![A-Za-z0-9])" + re.escape(needle.lower()) + r"(?![A-Za-z0-9])"
    return re.search(pattern, text.lower()) is not None
