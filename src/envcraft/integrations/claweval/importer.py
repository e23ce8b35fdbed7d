"""``envcraft import claw-eval PATH --out DIR``: a Claw-Eval checkout's ``tasks/*/task.yaml`` as one task set.

What a Claw-Eval task needs before envcraft can run it, in the order it is checked:

* ``web_real`` services reach the live web: the task needs the internet (other services are
  the task's mock HTTP services, ``mock_services/<name>``, FastAPI, which every episode starts
  on loopback inside its own network namespace: :mod:`envcraft.integrations.claweval.services`);
* then :func:`envcraft.integrations.claweval.convert.convert`: a grader that scores without a
  judge, media or browser grading; tools the OpenClaw profile's system tools stand in for;
  text files only. Such a task imports, scored by its own ``grader.py``.

Writes ``DIR/envs/claw_workspace/`` (the bare workspace package), ``DIR/services/`` (what
the imported tasks' mock services run from), ``DIR/tasks/tasks.jsonl``
(every imported task, each carrying the grader and the ``claw_eval`` modules it imports,
copied from the checkout) and ``DIR/import.json``: every task counted per category and per
grading kind (from ``scoring_components``: ``automated`` when every check is a rule such as
``keywords_present``, ``llm_judge`` when every check is a judge, ``hybrid`` when both,
``grader_only`` when it declares none and its grader.py is the whole grading), the imported
ones likewise, and every task not imported with the first reason that applies.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from envcraft.integrations.clawbench.package import write_workspace_package
from envcraft.integrations.claweval.convert import Skipped, convert, package_sources
from envcraft.tasks.format.io import write_json, write_tasks
from envcraft.tasks.format.model import Task

SUMMARY_FILE = "import.json"
INTERNET = "needs the internet (live web service {names})"


class ClawEvalError(ValueError):
    """A checkout that cannot be read; the message says why."""


def grading_kind(task: dict[str, Any]) -> str:
    """``automated``, ``llm_judge``, ``hybrid`` or ``grader_only`` from the task's scoring components."""
    kinds = {
        "llm_judge" if (c.get("check") or {}).get("type") == "llm_judge" else "automated"
        for c in task.get("scoring_components") or []
        if isinstance(c, dict)
    }
    if kinds == {"llm_judge"}:
        return "llm_judge"
    return "automated" if kinds == {"automated"} else "hybrid" if kinds else "grader_only"


def skip_reason(task: dict[str, Any]) -> str | None:
    """What the task needs that envcraft does not have: the internet (or None)."""
    names = sorted({str(s.get("name")) for s in task.get("services") or [] if isinstance(s, dict)})
    online = [n for n in names if n.startswith("web_real")]
    if online:
        return INTERNET.format(names=", ".join(online))
    return None


def import_claweval(checkout: Path, out: Path) -> dict[str, Any]:
    """Read every ``tasks/*/task.yaml``; write the task set and ``OUT/import.json``."""
    tasks_dir = checkout / "tasks"
    if not tasks_dir.is_dir():
        raise ClawEvalError(f"{checkout} is not a Claw-Eval checkout (no tasks/ directory)")
    files = sorted(tasks_dir.glob("*/task.yaml"))
    if not files:
        raise ClawEvalError(f"{tasks_dir} holds no */task.yaml files")
    sources = package_sources(checkout)
    package = write_workspace_package(out)
    skipped: list[dict[str, str]] = []
    tasks: list[Task] = []
    categories: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for path in files:
        try:
            task = yaml.safe_load(path.read_text(encoding="utf-8"))
            if not isinstance(task, dict):
                raise ValueError("task.yaml is not a mapping")
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            reason = f"unreadable task.yaml: {str(exc).splitlines()[0][:200]}"
            skipped.append({"id": path.parent.name, "category": "", "grading": "", "reason": reason})
            continue
        category, kind = str(task.get("category", "")), grading_kind(task)
        categories[category] += 1
        kinds[kind] += 1
        entry = {"id": str(task.get("task_id", path.parent.name)), "category": category, "grading": kind}
        why = skip_reason(task) or (sources if isinstance(sources, str) else None)
        if why is None:
            assert not isinstance(sources, str)
            result = convert(task, path.parent, sources, package, kind, out)
            if isinstance(result, Skipped):
                why = result.reason
            elif result.id in {t.id for t in tasks}:
                why = "duplicate task_id (also in an earlier task)"
            else:
                tasks.append(result)
                continue
        skipped.append({**entry, "reason": why})
    write_tasks(out / "tasks", tasks)

    def count(key: str) -> dict[str, int]:
        return dict(sorted(Counter(str(t.provenance["claw-eval"][key]) for t in tasks).items()))

    summary = {
        "benchmark": "claw-eval",
        "checkout": str(checkout),
        "out": str(out),
        "files": len(files),
        "imported": len(tasks),
        "by_category": dict(sorted(categories.items())),
        "by_grading_type": dict(sorted(kinds.items())),
        "imported_by_category": count("category"),
        "imported_by_grading_type": count("scoring"),
        "skip_reasons": dict(Counter(_reason_class(s["reason"]) for s in skipped).most_common()),
        "skipped": skipped,
    }
    write_json(out / SUMMARY_FILE, summary)
    return summary


def _reason_class(reason: str) -> str:
    """A reason without its service, file or task names (for the counts)."""
    reason = re.sub(r"^the grader of \S+ it builds on", "the grader it builds on", reason)
    head = INTERNET.split("{")[0]
    if reason.startswith(head):
        return head.rstrip() + " ..."
    for cut in (
        " imports claw_eval",
        "tools with no system-tool counterpart",
        " binary file ",
        "which envcraft does not bind for services",
        "which the checkout does not have",
    ):
        if cut in reason:
            return reason[: reason.index(cut) + len(cut)].rstrip() + " ..."
    return re.sub(r"^file .+? is (missing|binary)", r"file ... is \1", reason)
