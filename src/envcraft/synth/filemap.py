"""The one response format of the synthesis model: a file map, parsed strictly.

A response is nothing but file blocks (blank lines between them are fine)::

    <file path="env.py">
    ...the file's exact content...
    </file>
    <delete path="data/old.json"/>

An opening tag and ``</file>`` stand on lines of their own; the content between them is
the file, verbatim. A repair response carries only the files it changes, plus ``<delete>``
lines for files to remove. Anything else (prose, a Markdown fence around the blocks or
inside one, a path outside the package layout, a file given twice) is a
:class:`FileMapError` listing every problem with its line, which the engine hands back
to the model as the finding of the ``response`` audit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_FILE_BYTES = 200_000
MAX_TOTAL_BYTES = 1_000_000
MAX_FILES = 200
REQUIRED = ("envcraft.toml", "README.md", "env.py")
_OPEN = re.compile(r'^<file path="([^"]*)">$')
_DELETE = re.compile(r'^<delete path="([^"]*)"\s*/>$')
_CLOSE = "</file>"
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_MODULE = re.compile(r"^[a-z_][a-z0-9_]*\.py$")
_SKILL = re.compile(r"^skills/[a-z0-9]+(-[a-z0-9]+)*/SKILL\.md$")
_ROOT_FILES = frozenset({"envcraft.toml", "README.md", "ARCHETYPE.md"})
_DATA_SUFFIXES = frozenset({".json", ".jsonl", ".csv", ".md", ".txt", ".yaml", ".yml", ".toml"})


class FileMapError(ValueError):
    """A response that is not a valid file map; ``problems`` are ``(line, message)`` pairs."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        super().__init__(f"line {first[0]}: {first[1]}{more}")


@dataclass
class FileMap:
    """The files a response writes and the paths it deletes."""

    files: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)

    def applied_to(self, previous: Mapping[str, str]) -> dict[str, str]:
        """The package after this (repair) response: ``previous`` with these changes."""
        merged = {path: text for path, text in previous.items() if path not in self.deleted}
        merged.update(self.files)
        return dict(sorted(merged.items()))


def parse_file_map(text: str) -> FileMap:
    """Parse a response strictly; :class:`FileMapError` lists every problem found."""
    result = FileMap()
    problems: list[tuple[int, str]] = []
    lines = text.splitlines(keepends=True)
    number = 0
    while number < len(lines):
        line = lines[number].rstrip("\r\n")
        number += 1
        if not line.strip():
            continue
        opened, deleted = _OPEN.match(line.strip()), _DELETE.match(line.strip())
        if deleted:
            path = deleted.group(1)
            problems += [(number, p) for p in _path_problems(path)]
            result.deleted.append(path)
            continue
        if not opened:
            problems.append((number, f"text outside a <file> block: {_excerpt(line)}"))
            continue
        path, start = opened.group(1), number
        body: list[str] = []
        closed = False
        while number < len(lines):
            inner = lines[number]
            number += 1
            if inner.rstrip("\r\n") == _CLOSE:
                closed = True
                break
            if _OPEN.match(inner.strip()):
                number -= 1
                break
            body.append(inner)
        if not closed:
            problems.append((start, f'<file path="{path}"> is not closed by a {_CLOSE} line'))
            continue
        problems += [(start, p) for p in _path_problems(path)]
        content = "".join(body)
        if path in result.files:
            problems.append((start, f"{path} is given twice"))
        if content.lstrip().startswith("```") and content.rstrip().endswith("```"):
            problems.append(
                (start, f"{path} is wrapped in a Markdown code fence; give the file content only")
            )
        if len(content.encode("utf-8")) > MAX_FILE_BYTES:
            problems.append((start, f"{path} is over {MAX_FILE_BYTES:,} bytes"))
        result.files[path] = content
    if not result.files and not result.deleted and not problems:
        problems.append((1, 'no <file path="..."> blocks: the response must be a file map'))
    if len(result.files) > MAX_FILES:
        problems.append((1, f"{len(result.files)} files; at most {MAX_FILES}"))
    if sum(len(t.encode("utf-8")) for t in result.files.values()) > MAX_TOTAL_BYTES:
        problems.append((1, f"the files add up to over {MAX_TOTAL_BYTES:,} bytes"))
    overlap = sorted(set(result.deleted) & set(result.files))
    if overlap:
        problems.append((1, f"{', '.join(overlap)} both written and deleted"))
    if problems:
        raise FileMapError(problems)
    return result


def missing_required(files: Mapping[str, str]) -> list[str]:
    """Files every package needs that ``files`` lacks (``skills/*/SKILL.md`` counts as one)."""
    missing = [path for path in REQUIRED if path not in files]
    if not any(_SKILL.match(path) for path in files):
        missing.append("skills/<name>/SKILL.md")
    return missing


def _path_problems(path: str) -> list[str]:
    """Why ``path`` cannot be a file of an environment package (empty if it can)."""
    pure = PurePosixPath(path)
    if not path or path.startswith("/") or "\\" in path or pure.is_absolute():
        return [f"path {path!r} must be relative, with / separators"]
    parts = path.split("/")
    if any(not _SEGMENT.match(part) or part in (".", "..") for part in parts):
        return [f"path {path!r} has an empty, hidden or unusual segment (letters, digits, _ . - only)"]
    if len(parts) == 1:
        if path in _ROOT_FILES or _MODULE.match(path):
            return []
        return [f"{path} cannot be at the package root (envcraft.toml, README.md, modules like rules.py)"]
    top = parts[0]
    if top == "skills":
        return [] if len(parts) >= 3 else [f"{path}: a skill is skills/<name>/SKILL.md"]
    if top == "data":
        suffix = pure.suffix.lower()
        if suffix in _DATA_SUFFIXES:
            return []
        return [f"{path}: data files are {', '.join(sorted(_DATA_SUFFIXES))}"]
    if top == "workspace":
        return []
    return [f"{path}: files live at the root or under data/, skills/ or workspace/"]


def _excerpt(line: str) -> str:
    text = line.strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


def render_file_map(files: Mapping[str, str]) -> str:
    """Files as a file map (how references and the current attempt are shown to the model)."""
    blocks = []
    for path, text in files.items():
        body = text if text.endswith("\n") or not text else text + "\n"
        blocks.append(f'<file path="{path}">\n{body}{_CLOSE}\n')
    return "\n".join(blocks)


def write_files(root: Path, files: Mapping[str, str]) -> None:
    """Write a parsed file map under ``root`` (paths were validated by the parser)."""
    base = root.resolve()
    for path, text in files.items():
        if _path_problems(path):
            raise ValueError(f"refusing to write {path!r}")
        target = (base / path).resolve()
        if base not in target.parents:
            raise ValueError(f"refusing to write {path!r} outside {root}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def read_files(root: Path) -> dict[str, str]:
    """A package directory as a file map (text files only; caches skipped)."""
    files = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in rel.split("/"):
            continue
        try:
            files[rel] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return files
