"""Agent Skills checks: ``skills/<name>/SKILL.md`` front matter per agentskills.io.

Two layers. The checks here read the front matter line by line (quoted values, indented
continuations, ``|``/``>`` block scalars) so a finding names its line, and add what the
specification only recommends (a body, under 500 lines). Then the maintained reference
validator, ``skills-ref`` (:func:`envcraft.core.skills.validate_skill`), has the final
word: a skill it rejects is a ``skill-spec`` error even when the line checks pass (strict
YAML, Unicode names, ...). It runs only when the line checks found nothing in the front
matter, so one problem is reported once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envcraft.core.lint.report import Finding, finding
from envcraft.core.skills import validate_skill

SKILL_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
FIELDS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY, MAX_BODY_LINES = 64, 1024, 500, 500
_KEY = re.compile(r"^([A-Za-z0-9_-]+):(.*)$")
_BLOCK = frozenset({"|", ">", "|-", ">-", "|+", ">+"})


class FrontMatterError(ValueError):
    """Front matter that cannot be read; ``line`` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class FrontMatter:
    fields: dict[str, str]
    lines: dict[str, int]  # key -> 1-based line
    body: list[str]


def parse_front_matter(text: str) -> FrontMatter:
    """Split ``---``-delimited front matter from the Markdown body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("SKILL.md must start with '---' front matter", 1)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise FrontMatterError("front matter is not closed by a '---' line", 1)
    parts: dict[str, list[str]] = {}
    styles: dict[str, str] = {}
    where: dict[str, int] = {}
    key: str | None = None
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if key is None:
                raise FrontMatterError("indented line before any key", number)
            parts[key].append(line.strip())
            continue
        match = _KEY.match(line)
        if not match:
            raise FrontMatterError(f"expected 'key: value', got {line.strip()[:40]!r}", number)
        key, raw = match.group(1), match.group(2).strip()
        if key in parts:
            raise FrontMatterError(f"duplicate key {key!r}", number)
        where[key] = number
        styles[key] = raw if raw in _BLOCK else ""
        parts[key] = [] if raw in _BLOCK or not raw else [_unquote(raw)]
    fields = {k: ("\n" if styles[k].startswith("|") else " ").join(v).strip() for k, v in parts.items()}
    return FrontMatter(fields=fields, lines=where, body=lines[end + 1 :])


def _unquote(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def check_skills(root: Path) -> list[Finding]:
    """Every skill folder has a valid SKILL.md; a package without skills gets a warning."""
    base = root / "skills"
    folders = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    if not folders:
        return [finding("skill-missing", "skills", 0, "no skills/<name>/SKILL.md: agents get no guidance")]
    findings: list[Finding] = []
    for folder in folders:
        path = folder / "SKILL.md"
        rel = path.relative_to(root).as_posix()
        if not path.is_file():
            findings.append(
                finding("skill-frontmatter", rel, 0, f"skill folder {folder.name} has no SKILL.md")
            )
            continue
        own = _check_skill(path.read_text(encoding="utf-8", errors="replace"), folder.name, rel)
        findings.extend(own)
        if not any(f.rule == "skill-frontmatter" for f in own):
            findings.extend(finding("skill-spec", rel, 0, f"skills-ref: {m}") for m in validate_skill(folder))
    return findings


def _check_skill(text: str, folder: str, rel: str) -> list[Finding]:
    try:
        front = parse_front_matter(text)
    except FrontMatterError as exc:
        return [finding("skill-frontmatter", rel, exc.line, str(exc))]
    out: list[Finding] = []

    def bad(key: str, message: str) -> None:
        out.append(finding("skill-frontmatter", rel, front.lines.get(key, 1), message))

    name = front.fields.get("name", "")
    if not name:
        bad("name", "front matter needs a non-empty 'name'")
    elif not SKILL_NAME.match(name) or len(name) > MAX_NAME:
        bad("name", f"name {name!r} must be 1-{MAX_NAME} chars of a-z, 0-9 and single inner hyphens")
    elif name != folder:
        bad("name", f"name {name!r} must equal its folder name {folder!r}")
    description = front.fields.get("description", "")
    if not description:
        bad("description", "front matter needs a non-empty 'description'")
    elif len(description) > MAX_DESCRIPTION:
        bad("description", f"description is {len(description)} chars; at most {MAX_DESCRIPTION}")
    if len(front.fields.get("compatibility", "")) > MAX_COMPATIBILITY:
        bad("compatibility", f"compatibility is longer than {MAX_COMPATIBILITY} chars")
    for key in sorted(set(front.fields) - FIELDS):
        bad(key, f"unknown front matter key {key!r}; allowed: {', '.join(sorted(FIELDS))}")
    body = [line for line in front.body if line.strip()]
    if not body:
        out.append(finding("skill-body", rel, 0, "the skill has no instructions after its front matter"))
    elif len(front.body) > MAX_BODY_LINES:
        out.append(finding("skill-body", rel, 0, f"body is {len(front.body)} lines; keep it under 500"))
    return out
