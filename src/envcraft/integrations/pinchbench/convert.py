"""One PinchBench task file -> one envcraft Claw task, or the reason it cannot be one.

The task runs in the bare workspace environment (:mod:`envcraft.integrations.clawbench`)
under the OpenClaw profile; its workspace holds the files of ``workspace_files``; its user
turns are the prompt (or, for a ``multi_session`` task, each session's prompt in order, all in
one conversation). The verifier is :mod:`.harness` with the task's grading data, so the
task's own ``grade`` runs in the isolated worker; a judged task's verifier also hands back
PinchBench's judge prompt. ``provenance["grading"]`` is what ``envcraft eval`` reads (see
:mod:`envcraft.rollout.grading`): the grading type, PinchBench's weights, that the verifier
reads the transcript, and why the task is skipped offline, if it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.integrations.pinchbench import harness
from envcraft.integrations.pinchbench.source import GRADING_TYPES, SourceTask
from envcraft.tasks.format.model import Reference, Task, Turn, Verifier

BENCHMARK = "pinchbench"
DEFAULT_WEIGHTS = {"automated": 0.5, "llm_judge": 0.5}  # lib_grading._combine_grades' default
# What a task asks for that an offline sandbox cannot give, unless it offers a way without it.
_ONLINE = (
    (re.compile(r"\bcurrent stock price\b", re.I), "asks for a live stock price"),
    (re.compile(r"\bupcoming\b.*\bconferences?\b", re.I), "asks for upcoming events (web search)"),
    (re.compile(r"\bgenerate an image\b", re.I), "needs an image-generation service"),
    (
        re.compile(r"/install\b|\bskill registry\b|\bclawd?hub\b", re.I),
        "installs a skill from the online registry",
    ),
)
_OFFLINE_FALLBACK = re.compile(r"\bif the skill isn't available\b|\botherwise, use your knowledge\b", re.I)


@dataclass(frozen=True)
class Skipped:
    """A task file that is not imported, and why."""

    id: str
    category: str
    grading_type: str
    reason: str


def needs_internet(task: SourceTask) -> str | None:
    """Why the task needs the internet, or None (a stated offline fallback clears it)."""
    text = "\n".join([task.prompt, *_session_prompts(task)])
    if _OFFLINE_FALLBACK.search(text):
        return None
    for pattern, why in _ONLINE:
        if pattern.search(text):
            return why
    return None


def convert(task: SourceTask, checkout: Path, package: EnvPackage) -> Task | Skipped:
    """The envcraft task of ``task`` (files read from ``checkout/assets``), or why not."""

    def skip(reason: str) -> Skipped:
        return Skipped(task.id or task.path.stem, task.category, task.grading_type, reason)

    if not task.id:
        return skip("the front matter has no id")
    if task.grading_type not in GRADING_TYPES:
        return skip(f"unknown grading_type {task.grading_type!r}")
    if task.grading_type != "llm_judge" and not task.grade_code:
        return skip("no grade() in a python fence under '## Automated Checks'")
    turns = _session_prompts(task) or ([task.prompt] if task.prompt else [])
    if not turns:
        return skip("no prompt")
    files: dict[str, str] = {}
    for spec in task.workspace_files:
        problem = _add_file(files, spec, checkout)
        if problem is not None:
            return skip(problem)
    weights = {**DEFAULT_WEIGHTS, **(task.grading_weights or {})}
    online = needs_internet(task)
    grading: dict[str, Any] = {
        "benchmark": BENCHMARK,
        "type": task.grading_type,
        "weights": {k: float(weights[k]) for k in DEFAULT_WEIGHTS},
        "reads_transcript": True,
        "skip": f"needs the internet: {online}" if online else None,
    }
    return Task(
        id=task.id,
        envs=[package.manifest.id],
        kind="claw",
        turns=[Turn(user=text) for text in turns],
        initial_state={package.manifest.id: {}},
        workspace=files,
        verifier=Verifier(source=verifier_source(task)),
        reference=Reference(calls=[], final_hash=""),
        provenance={
            "source": BENCHMARK,
            "packages": {package.manifest.id: str(package.root)},
            "grading": grading,
            BENCHMARK: {
                "file": task.path.name,
                "name": task.name,
                "category": task.category,
                "timeout_seconds": task.timeout_seconds,
                "multi_session": bool(task.frontmatter.get("multi_session")),
            },
        },
    )


def verifier_source(task: SourceTask) -> str:
    """:mod:`.harness` with the task's grading data bound (stdlib-only, runs isolated)."""
    data = {
        "type": task.grading_type,
        "code": task.grade_code,
        "prompt": task.prompt,
        "expected_behavior": task.expected_behavior,
        "rubric": task.rubric,
    }
    return harness_text() + f"\nGRADING = json.loads({json.dumps(json.dumps(data))})\n"


def harness_text() -> str:
    return Path(harness.__file__).read_text(encoding="utf-8")


def _session_prompts(task: SourceTask) -> list[str]:
    sessions = task.frontmatter.get("sessions")
    if not isinstance(sessions, list):
        return []
    return [str(s["prompt"]).strip() for s in sessions if isinstance(s, dict) and s.get("prompt")]


def _add_file(files: dict[str, str], spec: Any, checkout: Path) -> str | None:
    """Put one ``workspace_files`` entry into ``files``; the reason it cannot be, or None."""
    if not isinstance(spec, dict):
        return f"a workspace_files entry is not a mapping: {spec!r}"[:200]
    if "content" in spec:
        files[str(spec.get("path", ""))] = str(spec["content"])
        return None
    source, dest = spec.get("source"), spec.get("dest")
    if not source or not dest:
        return f"a workspace_files entry has neither content nor source and dest: {spec!r}"[:200]
    path = checkout / "assets" / str(source)
    if not path.is_file():
        return f"asset {source!r} is missing from the checkout"
    try:
        files[str(dest)] = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return f"asset {source!r} is binary (a task workspace holds text files only)"
    return None
