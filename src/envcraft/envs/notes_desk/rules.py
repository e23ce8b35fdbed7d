"""Domain rules of :class:`~.env.NotesDesk`: the CSV export format, and what a note may claim.

The tool that exports and the S0 generator (which ships an up-to-date export) both write it
with :func:`render_csv`, so the file an agent finds and the file it writes agree. An item links
to the note that lists it (:func:`lists_item`): a note is the record of its meeting.
:func:`note_violations` holds a meeting note to its own checklist: a count of unowned items it
states is the count its action items show (every item the desk tracks has an owner).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping

from .state import ActionItem

CSV_FIELDS = ("item_id", "title", "owner", "due", "status", "meeting")


def render_csv(items: list[ActionItem]) -> str:
    """The export format: one row per item, the columns of :data:`CSV_FIELDS`."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for item in items:
        writer.writerow({field: getattr(item, field) for field in CSV_FIELDS})
    return buffer.getvalue()


_NUMBERS = ("no", "one", "two", "three", "four", "five")  # a count in words: its index
_UNOWNED_CLAIM = re.compile(r"\b(no|one|two|three|four|five|\d+) items? (?:is|are) still unowned\b", re.I)
_ITEM = re.compile(r"^- \[[ x]\] (@\S+: )?", re.M)


_LISTED = re.compile(r"^- \[[ x]\] (?:@\S+: )?(.*?)(?: \(due [^)]*\))?\s*$", re.M)


def lists_item(note: str, title: str) -> bool:
    """Whether a meeting note's checklist holds an item of this title (up to case and spacing):
    the note an item comes from is the one that lists it."""
    wanted = " ".join(title.split()).lower()
    return any(" ".join(m.group(1).split()).lower() == wanted for m in _LISTED.finditer(note))


def note_violations(files: Mapping[str, str]) -> list[str]:
    """Meeting notes whose text counts unowned action items their checklist does not have."""
    problems = []
    for path, text in sorted(files.items()):
        if not (path.startswith("notes/") and path.endswith(".md")):
            continue
        unowned = sum(match.group(1) is None for match in _ITEM.finditer(text))
        for claim in _UNOWNED_CLAIM.finditer(text):
            word = claim.group(1).lower()
            said = int(word) if word.isdigit() else _NUMBERS.index(word)
            if said != unowned:
                problems.append(f"{path} says {claim.group(0)!r}, its action items have {unowned} unowned")
    return problems
