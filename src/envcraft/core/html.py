"""The pieces the self-contained HTML reports share: one page frame, one style, one table.

``envcraft run`` (``tasks/corpus/report.py``), ``envcraft eval`` (``rollout/report.py``) and
``envcraft synth`` (``synth/report.py``) each write a ``report.html`` with no scripts and no
external assets. They look alike because they are built alike: :func:`page` wraps the body in the
same head and :data:`STYLE` (a report adds only the rules of its own pictures), and :func:`table`
escapes every cell unless told the cells are already HTML.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; font-size: 13px; vertical-align: top; }
.ok { color: #1e8449; font-weight: bold; } .bad { color: #c0392b; font-weight: bold; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; font-size: 12px; max-height: 420px; }
"""


def page(title: str, body: Iterable[str], style: str = "") -> str:
    """A whole HTML document: ``title`` (escaped) in the head, the shared style plus ``style``."""
    head = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
    return f"{head}<style>{STYLE}{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], raw: bool = False) -> str:
    """A ``<table>``: header cells escaped; row cells escaped unless ``raw`` (already HTML)."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell if raw else escape(str(cell))}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
