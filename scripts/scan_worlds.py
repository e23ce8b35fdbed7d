"""Count the contradictions of each class (``envcraft.tasks.world.rules``) over a task corpus.

Run: ``.venv/bin/python scripts/scan_worlds.py OUT [--examples N]`` (OUT: a directory holding
``tasks.jsonl``). Prints one JSON
object: the tasks scanned, per class the tasks with at least one violation and the violations,
and up to N example messages per class.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from envcraft.core.package import builtin_ids, load_package
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.world.rules import CLASSES, world_violations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--examples", type=int, default=3)
    options = parser.parse_args()
    if not (options.tasks / "tasks.jsonl").is_file():
        print(f"error: no tasks.jsonl in {options.tasks}", file=sys.stderr)
        return 2
    everyone = {p.id: p for p in (load_package(ref) for ref in builtin_ids())}
    tasks_hit: Counter[str] = Counter()
    any_hit = 0
    violations: Counter[str] = Counter()
    examples: dict[str, list[str]] = {kind: [] for kind in CLASSES}
    tasks = read_tasks(options.tasks)
    for task in tasks:
        packages = {env: everyone[env] for env in task.envs}
        found = world_violations(task, packages, everyone.values())
        any_hit += bool(found)
        for kind in {v.kind for v in found}:
            tasks_hit[kind] += 1
        for v in found:
            violations[v.kind] += 1
            if len(examples[v.kind]) < options.examples:
                examples[v.kind].append(f"{task.id}: {v.message}")
    report = {
        "tasks": len(tasks),
        "tasks_with_any": any_hit,
        "classes": {k: {"tasks": tasks_hit[k], "violations": violations[k]} for k in CLASSES},
        "examples": examples,
    }
    print(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
