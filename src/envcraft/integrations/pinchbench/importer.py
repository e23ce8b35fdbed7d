"""``envcraft import pinchbench PATH --out DIR``: a PinchBench checkout as one task set.

Writes ``DIR/envs/claw_workspace/`` (the bare workspace package), ``DIR/tasks/tasks.jsonl``
(every importable task) and ``DIR/import.json``: counts per category and grading type, the
tasks marked as needing the internet, and every task file not imported with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.integrations.clawbench.package import write_workspace_package
from envcraft.integrations.pinchbench.convert import Skipped, convert
from envcraft.integrations.pinchbench.source import PinchBenchError, load_task, task_files
from envcraft.tasks.format.io import write_json, write_tasks
from envcraft.tasks.format.model import Task

SUMMARY_FILE = "import.json"
TASKS_DIR = "tasks"


@dataclass
class ImportSummary:
    out: str
    checkout: str
    tasks: list[Task] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def grading(task: Task) -> dict[str, Any]:
            return dict(task.provenance["grading"])

        offline = [t.id for t in self.tasks if grading(t)["skip"]]
        return {
            "benchmark": "pinchbench",
            "checkout": self.checkout,
            "out": self.out,
            "files": len(self.tasks) + len(self.skipped),
            "imported": len(self.tasks),
            "by_category": dict(
                sorted(Counter(t.provenance["pinchbench"]["category"] for t in self.tasks).items())
            ),
            "by_grading_type": dict(sorted(Counter(grading(t)["type"] for t in self.tasks).items())),
            "needs_internet": {t.id: grading(t)["skip"] for t in self.tasks if t.id in offline},
            "skipped": [
                {"id": s.id, "category": s.category, "grading_type": s.grading_type, "reason": s.reason}
                for s in self.skipped
            ],
        }


def import_pinchbench(
    checkout: Path, out: Path, *, advance: Callable[[str], None] | None = None
) -> ImportSummary:
    """Import every task file of ``checkout`` into ``out``; :class:`PinchBenchError` for a bad checkout.

    A task file that cannot be read or converted is skipped with its reason (never fatal).
    """
    files = task_files(checkout)
    package = write_workspace_package(out)
    summary = ImportSummary(str(out), str(checkout))
    seen: set[str] = set()
    for path in files:
        try:
            result: Task | Skipped = convert(load_task(path), checkout, package)
        except (PinchBenchError, OSError, UnicodeDecodeError, TypeError, ValueError) as exc:
            result = Skipped(path.stem, "", "", str(exc).splitlines()[0][:300])
        if isinstance(result, Task) and result.id in seen:
            result = Skipped(result.id, "", "", f"duplicate id (also in an earlier file): {path.name}")
        if isinstance(result, Task):
            seen.add(result.id)
            summary.tasks.append(result)
        else:
            summary.skipped.append(result)
        if advance is not None:
            advance(path.name)
    write_tasks(out / TASKS_DIR, summary.tasks)
    write_json(out / SUMMARY_FILE, summary.to_json())
    return summary
