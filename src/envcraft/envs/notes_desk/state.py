"""The State of :class:`~.env.NotesDesk`: the team and the tracked action items.

The meeting notes themselves are workspace files, not State; the rules over this State live in
``rules.py``, the tools in ``env.py``.
"""

from __future__ import annotations

from typing import Literal

from envcraft import StateModel

ItemStatus = Literal["open", "done"]


class ActionItem(StateModel):
    item_id: str
    title: str
    owner: str  # a member handle
    due: str  # YYYY-MM-DD
    status: ItemStatus
    meeting: str = ""  # the workspace path of the note it came from
    created_at: str
    closed_at: str | None = None
    note: str = ""


class NotesDeskState(StateModel):
    members: dict[str, str] = {}  # handle -> full name
    items: dict[str, ActionItem] = {}
    next_item_number: int = 1
