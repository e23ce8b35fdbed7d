"""Information hiding checks on a task's user turns: what they must not say, and what they must.

:func:`find_leaks` lists values the agent must find for itself (derived ids, named records' ids,
file contents) that a turn states anyway; :func:`missing_user_values` lists values only the user
knows that no turn states. The data engine drops a candidate with either; ``envcraft tasks
check`` recomputes both from the text of any task set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.words import says


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [value] if isinstance(value, str | int | float | bool) else []


def find_leaks(task: Task) -> list[dict[str, Any]]:
    """Values the agent must find (derived ids, named records' ids, file contents) that a turn states."""
    leaks: list[dict[str, Any]] = []
    for i, name, value in _hidden(task):
        for t, turn in enumerate(task.turns):
            if says(turn.user, value):
                leaks.append({"turn": t, "call": i, "arg": name, "value": value})
    return leaks


def hidden_values(task: Task) -> list[str]:
    """What :func:`find_leaks` looks for, each value once, in call order: no turn may say these."""
    return list(dict.fromkeys(str(value) for _, _, value in _hidden(task)))


def _hidden(task: Task) -> list[tuple[int, str, Any]]:
    """``(call, arg, value)`` for every hidden value long enough to be told apart in text (three
    characters or more, not a number or flag) that no goal's user-stated argument says as well."""
    goals = set(task.provenance.get("goal_calls", range(len(task.reference.calls))))
    stated = {
        str(v)
        for i, c in enumerate(task.reference.calls)
        if i in goals
        for k in c.args
        if c.source(k).kind == "user"
        for v in _scalars(c.args.get(k))
    }
    found: list[tuple[int, str, Any]] = []
    for i, call in enumerate(task.reference.calls):
        for name in call.args:
            source = call.source(name)
            if not source.hidden or source.kind == "embed":
                continue
            for value in _scalars(call.args.get(name)):
                if isinstance(value, bool | int | float) or str(value) in stated or len(str(value)) < 3:
                    continue
                found.append((i, name, value))
    return found


def names_said(text: str, names: Iterable[str]) -> list[str]:
    """Tool or parameter names ``text`` writes as names: an identifier (``cancel_order``,
    ``orderId``, ``v2``) as a whole word, or any name as code (```refund```, ``refund(``); a
    plain word (``reason``) in prose is English, not a leak."""
    found = []
    for name in sorted(set(names)):
        word = re.escape(name)
        identifier = bool(re.search(r"[_\d]|[a-z][A-Z]", name))
        pattern = rf"(?<![\w-]){word}(?![\w-])" if identifier else rf"`{word}`|(?<![\w-]){word}\("
        if re.search(pattern, text):
            found.append(name)
    return found


def missing_user_values(task: Task) -> list[dict[str, Any]]:
    """Values the agent needs from the user that no turn says: every user-stated or named argument
    of a goal must have its mention in a turn (``provenance["mentions"]``), and a user-stated value
    without a recorded mention must appear verbatim; a value from a workspace file or cited by a
    note in another environment needs its mention (the pointer to the file or the note)."""
    recorded = {(m["call"], m["arg"]): m["text"] for m in task.provenance.get("mentions", [])}
    goals = set(task.provenance.get("goal_calls", range(len(task.reference.calls))))
    missing: list[dict[str, Any]] = []
    for i, call in enumerate(task.reference.calls):
        if i not in goals:
            continue
        text = "\n".join(t.user for t in task.turns[: call.turn + 1])
        for name in call.args:
            source = call.source(name)
            if source.kind not in ("user", "named") and not source.pointed:
                continue
            value = call.args.get(name)
            mention = recorded.get((i, name))
            if mention is not None:
                present = mention.lower() in text.lower()
            elif source.pointed:
                present = False
            elif isinstance(value, bool):
                present = says(text, name.replace("_", " "))
            else:
                present = all(says(text, v) for v in _scalars(value))
            if not present:
                missing.append({"call": i, "arg": name, "value": value})
    return missing
