"""Domain rules of :class:`~.env.NotesDesk`: the CSV export format.

The tool that exports and the S0 generator (which ships an up-to-date export) both write it
with :func:`render_csv`, so the file an agent finds and the file it writes agree.
"""

from __future__ import annotations

import csv
import io

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
