"""``envcraft run``: the whole offline data job on the built-in library, resumable.

Stages: lint the packages (contract linter) -> build tool and workflow graphs -> synthesize
tasks in deterministic shards (per environment and chunk) on a process pool -> merge and
deduplicate -> export (JSONL, Parquet, VERL) -> ``summary.json`` + ``report.html``.

Every shard is a pure function of (library, environment, shard index, quota, config) and is
written atomically to ``OUT/shards/<fingerprint>/`` when done. A run interrupted at any
point (Ctrl-C, SIGKILL) and started again with the same ``--out`` skips the finished shards
and produces the same corpus, byte for byte, as an uninterrupted run. The fingerprint covers
the options and the source of the engine and of the environments, so shards made by other
code or options are never reused.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.core.lint import lint_package
from envcraft.core.package import PackageError, builtin_ids, load_package
from envcraft.core.session import Session
from envcraft.core.workspace import atomic_write_bytes
from envcraft.executor import Executor, open_executor
from envcraft.tasks.corpus.compose import (
    Library,
    SynthConfig,
    dedupe_key,
    generate_initial,
    load_library,
    merge,
    synthesize_shard,
)
from envcraft.tasks.corpus.export import FORMATS as EXPORT_FORMATS
from envcraft.tasks.corpus.export import ExportError, export_files
from envcraft.tasks.corpus.measures import ShardResult, accepted_steps
from envcraft.tasks.corpus.report import render_report
from envcraft.tasks.corpus.svg import tool_graph_svg, workflow_svg
from envcraft.tasks.corpus.writing import rewrite_tasks
from envcraft.tasks.format.io import write_json, write_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.graphs.walk import Coverage
from envcraft.tasks.phrasing.writer import TurnWriter

DEFAULT_OUT = Path("out/run")
TARGET_TASKS = 1100  # default corpus size over all environments (>= 1,000 after any drops)
MIN_PER_ENV = 40
CHUNK = 25  # tasks per shard: the unit of parallelism and of resumption

Progress = Callable[[str, int, int], None]


@dataclass
class RunOptions:
    out: Path = DEFAULT_OUT
    n_per_env: int | None = None  # None: TARGET_TASKS spread by graph size
    seed: int = 0
    envs: list[str] | None = None  # None: every built-in environment
    workers: int | None = None  # None: one per core
    executor: str = "local"  # where shards run: "local" processes or "ray" (envcraft.executor)
    ray_address: str | None = None  # an existing Ray cluster; None starts a local one
    synth: SynthConfig = field(default_factory=SynthConfig)
    export: bool = True
    # a model that rewrites the merged tasks' turns (None: the offline templates, the default)
    writer: TurnWriter | None = None


@dataclass(frozen=True)
class ShardSpec:
    env: str
    shard: int
    quota: int

    @property
    def name(self) -> str:
        return f"{self.env}-{self.shard:03d}"


def run(options: RunOptions, progress: Progress | None = None) -> dict[str, Any]:
    """Run (or resume) the job; returns the summary also written to ``OUT/summary.json``."""
    report = progress or (lambda stage, done, total: None)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    options.synth.seed = options.seed
    timings: dict[str, float] = {}
    clock = time.monotonic()

    refs = options.envs if options.envs is not None else builtin_ids()
    lint, usable = lint_stage(refs)
    write_json(out / "lint.json", lint)
    if not usable:
        raise PackageError("no usable environment: every package failed to load or lint")
    timings["lint"] = _lap(clock)

    clock = time.monotonic()
    library = load_library(usable)
    write_graphs(out / "graphs", library)
    timings["graphs"] = _lap(clock)

    clock = time.monotonic()
    specs = plan(library, options.n_per_env)
    shard_dir = out / "shards" / fingerprint(options, library, specs)
    _drop_stale(out / "shards", shard_dir)
    resumed = sum((shard_dir / f"{s.name}.json").is_file() for s in specs)
    with open_executor(options.executor, workers=options.workers, address=options.ray_address) as executor:
        run_shards(usable, specs, options.synth, shard_dir, executor, report)
    shards = [load_shard(shard_dir / f"{s.name}.json") for s in specs]
    timings["synthesize"] = _lap(clock)

    clock = time.monotonic()
    tasks, stats = merge(shards, library)
    if options.writer is not None:
        intents = {
            dedupe_key(t): i for shard in shards for t, i in zip(shard.tasks, shard.intents, strict=True)
        }
        stats["writer"] = rewrite_tasks(tasks, intents, options.writer, library.packages)
    tasks_dir = out / "tasks"
    write_tasks(tasks_dir, tasks)
    write_json(tasks_dir / "stats.json", stats)
    timings["merge"] = _lap(clock)

    clock = time.monotonic()
    exports = export_stage(tasks, out / "export") if options.export else {}
    timings["export"] = _lap(clock)

    summary = build_summary(options, lint, library, specs, resumed, tasks, stats, exports, timings)
    write_json(out / "summary.json", summary)
    covered = _covered(tasks, library)
    write_graphs(out / "graphs", library, covered)
    html = render_report(summary, library, covered, tasks)
    atomic_write_bytes(out / "report.html", html.encode("utf-8"))
    return summary


# -- stages -----------------------------------------------------------------------------------------
def lint_stage(refs: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Lint every package with the contract linter and generate one S0; packages that fail to
    load, generate or lint with errors are left out of the run (and listed with the reason)."""
    results: dict[str, Any] = {}
    usable: list[str] = []
    for ref in refs:
        entry: dict[str, Any] = {"ref": str(ref)}
        try:
            package = load_package(ref)
        except PackageError as exc:
            results[str(ref)] = {**entry, "usable": False, "reason": str(exc)}
            continue
        try:  # the S0 the graph probe uses (seed 0) and one synthesis-style S0 must both build
            Session.memory(package, seed=0).close()
            generate_initial({package.id: package}, "smoke", 1)
        except Exception as exc:  # environment code: any failure leaves the package out, with why
            results[package.id] = {**entry, "usable": False, "reason": f"generate failed: {exc}"[:500]}
            continue
        found = lint_package(ref)
        errors = [f"{f.rule} {f.location}: {f.message}" for f in found.errors]
        entry.update(errors=errors, warnings=len(found.warnings))
        if errors:
            results[package.id] = {**entry, "usable": False, "reason": "lint errors"}
            continue
        results[package.id] = {**entry, "usable": True}
        usable.append(str(ref))
    return {"packages": results}, usable


def write_graphs(directory: Path, library: Library, covered: Coverage | None = None) -> None:
    """Graphs as JSON and SVG; with ``covered``, the pictures show which edges the corpus used."""
    directory.mkdir(parents=True, exist_ok=True)
    coverage = covered or Coverage()
    for env, graph in library.graphs.items():
        write_json(directory / f"{env}.json", graph.to_json())
        edges = {(s, d): n for (e, s, d), n in coverage.edges.items() if e == env}
        atomic_write_bytes(directory / f"{env}.svg", tool_graph_svg(graph, edges).encode("utf-8"))
    pairs: Counter[tuple[str, str]] = Counter()
    for (src_env, _, dst_env, _), n in coverage.cross.items():
        pairs[(src_env, dst_env)] += n
    write_json(directory / "workflow.json", library.workflow.to_json())
    atomic_write_bytes(directory / "workflow.svg", workflow_svg(library.workflow, pairs).encode("utf-8"))


def plan(library: Library, n_per_env: int | None, total: int = TARGET_TASKS) -> list[ShardSpec]:
    """Shards per environment. By default ``total`` tasks are spread by the square root of each
    graph's edge count (more edges need more tasks to cover), at least ``MIN_PER_ENV`` each."""
    envs = sorted(library.graphs)
    if n_per_env is not None:
        quotas = {env: n_per_env for env in envs}
    else:
        weights = {env: math.sqrt(max(len(library.graphs[env].edges), 1)) for env in envs}
        scale = total / sum(weights.values())
        quotas = {env: max(MIN_PER_ENV, math.ceil(weights[env] * scale)) for env in envs}
    specs: list[ShardSpec] = []
    for env in envs:
        left, shard = quotas[env], 0
        while left > 0:
            specs.append(ShardSpec(env, shard, min(CHUNK, left)))
            left -= CHUNK
            shard += 1
    return specs


def fingerprint(options: RunOptions, library: Library, specs: list[ShardSpec]) -> str:
    """Identity of the work: options, shard plan, and the source of engine and environments."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            {"synth": options.synth.to_json(), "specs": [s.__dict__ for s in specs]}, sort_keys=True
        ).encode()
    )
    engine = Path(__file__).resolve().parent.parent
    sources = sorted(engine.rglob("*.py")) + sorted(engine.rglob("*.json"))
    for package in library.packages.values():
        sources += sorted(p for p in package.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in sources:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _drop_stale(shards_root: Path, keep: Path) -> None:
    """Shards of other fingerprints can never be reused: remove them."""
    if shards_root.is_dir():
        for child in shards_root.iterdir():
            if child.is_dir() and child != keep:
                shutil.rmtree(child, ignore_errors=True)


def run_shards(
    refs: list[str],
    specs: list[ShardSpec],
    config: SynthConfig,
    directory: Path,
    executor: Executor,
    progress: Progress,
) -> None:
    """Make every missing shard on ``executor`` (shards are independent: any order, any machine)."""
    directory.mkdir(parents=True, exist_ok=True)
    todo = [s for s in specs if not (directory / f"{s.name}.json").is_file()]
    done = len(specs) - len(todo)
    progress("synthesize", done, len(specs))
    jobs = [(refs, spec, config.to_json(), str(directory)) for spec in todo]
    for _ in executor.run(_shard_job, jobs):
        done += 1
        progress("synthesize", done, len(specs))


def _shard_job(refs: list[str], spec: ShardSpec, config: dict[str, Any], directory: str) -> str:
    """One shard, in a worker process: synthesize and write atomically."""
    library = load_library(refs)
    result = synthesize_shard(library, spec.env, spec.shard, spec.quota, SynthConfig(**config))
    body = {
        "spec": spec.__dict__,
        "result": result.to_json(),
        "tasks": [t.model_dump(mode="json") for t in result.tasks],
        "intents": result.intents,
    }
    path = Path(directory) / f"{spec.name}.json"
    atomic_write_bytes(path, json.dumps(body, ensure_ascii=False).encode("utf-8"))
    return spec.name


def load_shard(path: Path) -> ShardResult:
    body = json.loads(path.read_text(encoding="utf-8"))
    meta = body["result"]
    return ShardResult(
        env=meta["env"],
        shard=meta["shard"],
        tasks=[Task.model_validate(t) for t in body["tasks"]],
        attempts=meta["attempts"],
        rejected=Counter(meta["rejected"]),
        tool_ok=Counter(meta["tool_ok"]),
        executed=Counter(meta["executed"]),
        validated=Counter(meta.get("validated", {})),
        rejected_cross=Counter(meta.get("rejected_cross", {})),
        intents=body.get("intents", []),
    )


def export_stage(tasks: list[Task], out: Path) -> dict[str, Any]:
    """Write the corpus in every export format (:mod:`envcraft.tasks.corpus.export`)."""
    results: dict[str, Any] = {}
    for fmt in EXPORT_FORMATS:
        try:
            written = export_files(tasks, fmt, out / fmt)
        except (ExportError, OSError) as exc:  # an exporter failure must not lose the corpus written
            results[fmt] = {"error": str(exc)}
            continue
        main = written[0]  # path/rows/bytes: the main file; files: each file's own rows and bytes
        results[fmt] = {
            "path": str(main.path),
            "rows": main.rows,
            "bytes": main.path.stat().st_size,
            "files": {w.path.name: {"rows": w.rows, "bytes": w.path.stat().st_size} for w in written},
        }
    return results


# -- summary ----------------------------------------------------------------------------------------
def build_summary(
    options: RunOptions,
    lint: dict[str, Any],
    library: Library,
    specs: list[ShardSpec],
    resumed: int,
    tasks: list[Task],
    stats: dict[str, Any],
    exports: dict[str, Any],
    timings: dict[str, float],
) -> dict[str, Any]:
    """Everything ``report.html`` shows, as JSON; the ``targets`` block says which goals were met."""
    mutations = sum(t.quality.get("mutations_total", 0) for t in tasks)
    killed = sum(t.quality.get("mutations_killed", 0) for t in tasks)
    golden_pass = sum(t.quality.get("golden_score", 0.0) >= 1.0 for t in tasks)
    noop_fail = sum(t.quality.get("noop_score", 1.0) < 1.0 for t in tasks)
    coverage = {env: s["edge_coverage"] for env, s in stats["envs"].items()}
    validation = {
        "golden_pass_rate": golden_pass / len(tasks) if tasks else 0.0,
        "noop_fail_rate": noop_fail / len(tasks) if tasks else 0.0,
        "mutations": mutations,
        "mutations_killed": killed,
        "kill_rate": killed / mutations if mutations else 0.0,
        "leaks": stats["leaks"],
        "missing_user_values": sum(len(t.quality.get("missing_user_values", [])) for t in tasks),
    }
    return {
        "out": str(options.out),
        "options": {
            "seed": options.seed,
            "n_per_env": options.n_per_env,
            "workers": options.workers,
            **options.synth.to_json(),
            **({"writer": options.writer.model} if options.writer is not None else {}),
        },
        "envs": sorted(library.graphs),
        "lint": lint,
        "graphs": {
            env: {
                "tools": len(g.nodes),
                "edges": len(g.edges),
                "edges_by_source": dict(
                    sorted(Counter(s for e in g.edges.values() for s in e.sources).items())
                ),
            }
            for env, g in library.graphs.items()
        },
        "workflow_edges": {f"{s}->{d}": via for (s, d), via in library.workflow.env_edges().items()},
        "shards": {"total": len(specs), "resumed": resumed},
        "corpus": stats,
        "validation": validation,
        "exports": exports,
        "timings_s": timings,
        "targets": {
            "tasks_at_least_1000": len(tasks) >= 1000,
            "cross_env_share_at_least_20pct": stats["cross_env_share"] >= 0.2,
            "kill_rate_at_least_95pct": validation["kill_rate"] >= 0.95,
            "golden_pass_100pct": validation["golden_pass_rate"] == 1.0,
            "noop_fail_100pct": validation["noop_fail_rate"] == 1.0,
            "no_leaks": validation["leaks"] == 0,
            "edge_coverage_at_least_90pct": {env: c >= 0.9 for env, c in coverage.items()},
            "adversarial_pass_rate_at_least_95pct": stats["adversarial"]["pass_rate"] >= 0.95,
            "claw_tasks_using_workspace_files_at_least_50pct": stats["claw_workspace"]["share"] >= 0.5,
            "every_cross_env_task_carries_a_value": stats["cross_env_carrying_values"]
            == stats["cross_env_tasks"],
        },
    }


def _covered(tasks: list[Task], library: Library) -> Coverage:
    coverage = Coverage()
    for task in tasks:
        coverage.accept(accepted_steps(task), library.graphs)
    return coverage


def _lap(start: float) -> float:
    return round(time.monotonic() - start, 2)
