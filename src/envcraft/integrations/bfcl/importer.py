"""``envcraft import bfcl``: BFCL's eight multi-turn classes as environment packages under
``OUT/envs/`` and its multi-turn entries as task sets under ``OUT/tasks/<category>/``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.core.package import EnvPackage, load_package
from envcraft.integrations.bfcl import shapes, source
from envcraft.integrations.bfcl.convert import convert
from envcraft.integrations.bfcl.envgen import write_package
from envcraft.tasks.format.io import write_json, write_tasks
from envcraft.tasks.format.model import Task

SUMMARY_FILE = "import.json"


@dataclass
class ImportSummary:
    out: str
    version: str
    envs: dict[str, str] = field(default_factory=dict)
    categories: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        total = sum(c["tasks"] for c in self.categories.values())
        return {
            "out": self.out,
            "bfcl_version": self.version,
            "envs": self.envs,
            "tasks": total,
            "categories": self.categories,
            "failures": self.failures,
            "warnings": self.warnings,
        }


def write_envs(out: Path) -> dict[str, EnvPackage]:
    """The eight packages, each with every BFCL scenario of its class (all categories)."""
    configs: dict[str, list[dict[str, Any]]] = {c: [] for c in source.CLASSES}
    for category in source.CATEGORIES:
        for entry in source.load_entries(category):
            for name in entry.involved_classes:
                configs[name].append(entry.initial_config.get(name, {}))
    packages: dict[str, EnvPackage] = {}
    for name in source.CLASSES:
        root = write_package(out / "envs", name, configs[name])
        packages[source.env_id(name)] = load_package(root, fresh=True)
    return packages


def import_bfcl(
    out: Path,
    categories: Iterable[str] = source.CATEGORIES,
    *,
    limit: int | None = None,
    advance: Callable[[str], None] | None = None,
) -> ImportSummary:
    """Write packages and task sets; ``limit`` keeps the first N entries of each category."""
    version = source.require()
    chosen = list(categories)
    for category in chosen:
        if category not in source.CATEGORIES:
            raise ValueError(f"unknown BFCL category {category!r}; known: {', '.join(source.CATEGORIES)}")
    packages = write_envs(out)
    summary = ImportSummary(str(out), version, {e: str(p.root) for e, p in packages.items()})
    for category in chosen:
        entries = source.load_entries(category)[:limit]
        tasks: list[Task] = []
        for entry in entries:
            try:
                task = convert(entry, packages)
            except shapes.CallError as exc:
                summary.failures.append({"id": entry.id, "error": str(exc)})
            else:
                tasks.append(task)
                if task.quality.get("ground_truth_refused"):
                    summary.warnings.append({"id": entry.id, "refused": task.quality["ground_truth_refused"]})
            if advance is not None:
                advance(entry.id)
        write_tasks(out / "tasks" / category, tasks)
        summary.categories[category] = _counts(tasks)
    write_json(out / SUMMARY_FILE, summary.to_json())
    return summary


def entry_count(categories: Iterable[str], limit: int | None) -> int:
    return sum(len(source.load_entries(c)[:limit]) for c in categories)


def _counts(tasks: list[Task]) -> dict[str, int]:
    judged = sum(len(t.verifier.checks) for t in tasks)
    return {
        "tasks": len(tasks),
        "turns": sum(len(t.turns) for t in tasks),
        "judged_turns": judged,
        "empty_ground_truth_turns": sum(len(t.turns) for t in tasks) - judged,
        "reference_calls": sum(len(t.reference.calls) for t in tasks),
        "long_context": sum(bool(t.provenance["bfcl"]["long_context"]) for t in tasks),
        "held_out_tools": sum(bool(t.provenance["bfcl"]["missed_function"]) for t in tasks),
        "multi_env": sum(len(t.envs) > 1 for t in tasks),
    }
