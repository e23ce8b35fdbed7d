"""``envcraft import claw-eval PATH --out DIR``: read a Claw-Eval checkout's ``tasks/*/task.yaml``.

What a Claw-Eval task needs before envcraft can run it, in the order it is checked:

* ``user_agent.enabled``: a simulated user (``--user MODEL``), not built yet;
* ``services``: the task's mock HTTP services (``mock_services/<name>``, FastAPI) started on
  loopback inside the episode's network namespace and reset between rollouts, not built yet
  (``web_real`` services reach the live web: the task needs the internet);
* its ``grader.py``: a subclass of ``claw_eval.graders.base.AbstractGrader`` over the package's
  pydantic trace models, which the stdlib-only isolated worker cannot import.

So no task is imported yet: every task is listed in ``DIR/import.json`` with the first reason
that applies, and counted per category and per grading kind (from ``scoring_components``:
``automated`` when every check is a rule such as ``keywords_present`` or ``tool_called``,
``llm_judge`` when every check is a judge, ``hybrid`` when both, ``grader_only`` when it declares
none and its grader.py is the whole grading). ``DIR/tasks/tasks.jsonl`` is
written empty so the set's commands (``eval``, ``export``) report it as such.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from envcraft.tasks.io import write_json, write_tasks

SUMMARY_FILE = "import.json"
USER_AGENT = "plays with a simulated user (--user): not built yet"
SERVICES = "needs its mock service(s) {names} on loopback: not built yet"
INTERNET = "needs the internet (live web service {names})"
GRADER = (
    "its grader.py needs the claw_eval package (pydantic models), which the isolated worker cannot import"
)


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


def skip_reason(task: dict[str, Any]) -> str:
    """The first thing the task needs that envcraft does not have yet (see the module docstring)."""
    if (task.get("user_agent") or {}).get("enabled"):
        return USER_AGENT
    names = sorted({str(s.get("name")) for s in task.get("services") or [] if isinstance(s, dict)})
    online = [n for n in names if n.startswith("web_real")]
    if online:
        return INTERNET.format(names=", ".join(online))
    if names:
        return SERVICES.format(names=", ".join(names))
    return GRADER


def import_claweval(checkout: Path, out: Path) -> dict[str, Any]:
    """Read every ``tasks/*/task.yaml``; write ``OUT/import.json`` and an empty task set."""
    tasks_dir = checkout / "tasks"
    if not tasks_dir.is_dir():
        raise ClawEvalError(f"{checkout} is not a Claw-Eval checkout (no tasks/ directory)")
    files = sorted(tasks_dir.glob("*/task.yaml"))
    if not files:
        raise ClawEvalError(f"{tasks_dir} holds no */task.yaml files")
    skipped: list[dict[str, str]] = []
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
        skipped.append({**entry, "reason": skip_reason(task)})
    write_tasks(out / "tasks", [])
    summary = {
        "benchmark": "claw-eval",
        "checkout": str(checkout),
        "out": str(out),
        "files": len(files),
        "imported": 0,
        "by_category": dict(sorted(categories.items())),
        "by_grading_type": dict(sorted(kinds.items())),
        "skip_reasons": dict(Counter(_reason_class(s["reason"]) for s in skipped).most_common()),
        "skipped": skipped,
    }
    write_json(out / SUMMARY_FILE, summary)
    return summary


def _reason_class(reason: str) -> str:
    """A reason without its service names (for the counts)."""
    for template in (SERVICES, INTERNET):
        head = template.split("{")[0]
        if reason.startswith(head):
            return head.rstrip() + " ..."
    return reason
