"""Google-style docstring parsing: summary, ``Args:`` and ``Returns:`` sections."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")
_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


@dataclass
class Docstring:
    summary: str = ""
    description: str = ""
    args: dict[str, str] = field(default_factory=dict)
    returns: str = ""


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring; unknown sections are kept in the description."""
    text = inspect.cleandoc(doc or "")
    if not text:
        return Docstring()
    lines = text.splitlines()
    intro: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        match = _SECTION.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if match:
            current = sections.setdefault(match.group(1), [])
            continue
        (intro if current is None else current).append(line)
    paragraphs = "\n".join(intro).strip().split("\n\n", 1)
    summary = " ".join(paragraphs[0].split())
    description = paragraphs[1].strip() if len(paragraphs) > 1 else ""
    args = _parse_args(sections.get("Args", sections.get("Arguments", sections.get("Parameters", []))))
    returns = " ".join(" ".join(sections.get("Returns", [])).split())
    return Docstring(summary=summary, description=description, args=args, returns=returns)


def _parse_args(lines: list[str]) -> dict[str, str]:
    args: dict[str, str] = {}
    indent: int | None = None
    name: str | None = None
    for raw in lines:
        if not raw.strip():
            continue
        depth = len(raw) - len(raw.lstrip())
        if indent is None:
            indent = depth
        match = _ARG.match(raw.strip())
        if depth <= indent and match:
            name = match.group(1).lstrip("*")
            args[name] = match.group(3).strip()
        elif name is not None:
            args[name] = f"{args[name]} {raw.strip()}".strip()
    return args
