"""Agent Skills: read, validate and list ``skills/<name>/SKILL.md`` the way the harnesses do.

Validation is the maintained reference validator, ``skills-ref`` (the Agent Skills
project's own library); the linter adds only what it does not check (a body, its length).
:func:`format_skills_for_prompt` renders the listing exactly as OpenClaw puts it in its
system prompt (its ``formatSkillsForPrompt``, aligned byte for byte with the upstream Agent
Skills XML layout), and :func:`skills_section` the "Skills (mandatory)" section around it,
so a Claw-mode rollout prompts the model as OpenClaw would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import skills_ref


@dataclass(frozen=True)
class Skill:
    """One skill as an agent's prompt lists it: ``location`` is where its read tool finds it."""

    name: str
    description: str
    location: str


def validate_skill(folder: Path) -> list[str]:
    """``skills-ref``'s findings for one skill folder (empty when it is valid)."""
    try:
        return list(skills_ref.validate(folder))
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot read {folder.name}/SKILL.md: {exc}"]


def read_skill(folder: Path, location: str) -> Skill:
    """The skill's name and description (``skills_ref.SkillError`` if its front matter is bad)."""
    props = skills_ref.read_properties(folder)
    return Skill(props.name, props.description, location)


def _escape(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Sequence[Skill]) -> str:
    """OpenClaw's listing of the available skills ("" when there are none)."""
    if not skills:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory "
        "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in skills:
        lines += [
            "  <skill>",
            f"    <name>{_escape(skill.name)}</name>",
            f"    <description>{_escape(skill.description)}</description>",
            f"    <location>{_escape(skill.location)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def skills_section(skills: Iterable[Skill], read_tool: str = "read") -> str:
    """The system-prompt section OpenClaw builds around the listing ("" without skills)."""
    listing = format_skills_for_prompt(list(skills)).strip()
    if not listing:
        return ""
    return "\n".join(
        [
            "## Skills (mandatory)",
            "Before replying: scan <available_skills> <description> entries.",
            f"- If exactly one skill clearly applies: read its SKILL.md at <location> with `{read_tool}`, "
            "then follow it.",
            "- If multiple could apply: choose the most specific one, then read/follow it.",
            "- If none clearly apply: do not read any SKILL.md.",
            "Constraints: never read more than one skill up front; only read after selecting.",
            listing,
            "",
        ]
    )
