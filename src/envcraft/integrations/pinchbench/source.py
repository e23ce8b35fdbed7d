"""Read a PinchBench checkout: ``tasks/task_*.md`` and the ``assets/`` their workspaces copy.

A task file is YAML front matter (``id``, ``name``, ``category``, ``grading_type``,
``timeout_seconds``, ``workspace_files``, optional ``grading_weights`` and ``sessions``) and
``## `` sections (``Prompt``, ``Expected Behavior``, ``Grading Criteria``, ``Automated
Checks`` holding a ``grade`` function in a python fence, ``LLM Judge Rubric``), parsed the way
PinchBench's ``lib_tasks.TaskLoader`` parses them (same regexes, same defaults).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_FRONT = re.compile(r"^---\s*\n(.*?)\n---\s*\n(.*)$", re.DOTALL)
_HEADER = re.compile(r"^##\s+(.+)$")
_CRITERION = re.compile(r"^-\s+\[[ x]\]\s+(.+)$")
_CODE = re.compile(r"```python\s*(.*?)\s*```", re.DOTALL)
GRADING_TYPES = ("automated", "llm_judge", "hybrid")


class PinchBenchError(ValueError):
    """A checkout or task file that cannot be read; the message says which and why."""


@dataclass
class SourceTask:
    """One task file as PinchBench reads it."""

    path: Path
    id: str
    name: str
    category: str
    grading_type: str
    timeout_seconds: int
    workspace_files: list[dict[str, Any]]
    prompt: str
    expected_behavior: str
    grading_criteria: list[str]
    automated_checks: str | None
    llm_judge_rubric: str | None
    grading_weights: dict[str, float] | None
    frontmatter: dict[str, Any] = field(default_factory=dict)

    @property
    def grade_code(self) -> str:
        """The python fence of ``## Automated Checks`` (``lib_grading._extract_grading_code``)."""
        if not self.automated_checks:
            return ""
        match = _CODE.search(self.automated_checks)
        return match.group(1) if match else ""

    @property
    def rubric(self) -> str:
        """The judge's rubric: the task's own, else its grading criteria as a list."""
        return self.llm_judge_rubric or "\n".join(f"- {c}" for c in self.grading_criteria)


def task_files(root: Path) -> list[Path]:
    """The checkout's task files in PinchBench's order (``tasks/task_*.md``, sorted)."""
    tasks = root / "tasks"
    if not tasks.is_dir():
        raise PinchBenchError(f"{root} is not a PinchBench checkout (no tasks/ directory)")
    found = sorted(tasks.glob("task_*.md"))
    if not found:
        raise PinchBenchError(f"{tasks} holds no task_*.md files")
    return found


def load_task(path: Path) -> SourceTask:
    """One task file; :class:`PinchBenchError` when it has no front matter or bad YAML."""
    match = _FRONT.match(path.read_text(encoding="utf-8"))
    if match is None:
        raise PinchBenchError(f"{path.name}: no YAML front matter")
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise PinchBenchError(f"{path.name}: invalid YAML front matter: {str(exc).splitlines()[0]}") from None
    if not isinstance(meta, dict):
        raise PinchBenchError(f"{path.name}: the front matter is not a mapping")
    sections = _sections(match.group(2))
    criteria = [
        m.group(1)
        for line in sections.get("Grading Criteria", "").split("\n")
        if (m := _CRITERION.match(line.strip()))
    ]
    return SourceTask(
        path=path,
        id=str(meta.get("id", "")),
        name=str(meta.get("name", "")),
        category=str(meta.get("category", "")),
        grading_type=str(meta.get("grading_type", "automated")),
        timeout_seconds=int(meta.get("timeout_seconds", 120)),
        workspace_files=list(meta.get("workspace_files") or []),
        prompt=sections.get("Prompt", "").strip(),
        expected_behavior=sections.get("Expected Behavior", "").strip(),
        grading_criteria=criteria,
        automated_checks=sections.get("Automated Checks"),
        llm_judge_rubric=sections.get("LLM Judge Rubric"),
        grading_weights=meta.get("grading_weights"),
        frontmatter=meta,
    )


def _sections(body: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in body.split("\n"):
        header = _HEADER.match(line)
        if header:
            if current:
                sections[current] = "\n".join(lines).strip()
            current, lines = header.group(1), []
        elif current:
            lines.append(line)
    if current:
        sections[current] = "\n".join(lines).strip()
    return sections
