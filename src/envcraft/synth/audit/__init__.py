"""Audits of a synthesized environment package, in order (:data:`STAGES`).

:func:`audit_package` runs the static stage on the host (the code is parsed, never run),
fetches wheels for declared requirements on the host (the sandbox has no network), then
every stage that executes the candidate inside one confined run (:mod:`.confined`,
:mod:`.runner`). It stops at the first failing stage and never raises.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.synth.audit.confined import failed_run, run_confined
from envcraft.synth.audit.findings import (
    STAGE_SUMMARIES,
    STAGES,
    AuditReport,
    Finding,
    Stage,
    StageResult,
    dedupe,
    stage_result,
)
from envcraft.synth.audit.runner import SANDBOX_STAGES
from envcraft.synth.audit.static import audit_static, read_requirements

__all__ = [
    "STAGES",
    "STAGE_SUMMARIES",
    "AuditConfig",
    "AuditReport",
    "Finding",
    "StageResult",
    "audit_package",
    "dedupe",
]

DOWNLOAD_SECONDS = 300


@dataclass(frozen=True)
class AuditConfig:
    """How thoroughly to audit; the defaults are what ``envcraft synth`` uses."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    sizes: tuple[int, ...] = (1, 2, 3)
    explore: dict[str, Any] = field(default_factory=dict)  # ExploreConfig fields
    yield_tasks: int = 3
    require_coverage: bool = True  # a tool that never succeeded fails the yield stage (else a warning)
    timeout: float = 600.0
    wheel_cache: Path | None = None  # where downloaded wheels are kept between runs
    pip_index_args: tuple[str, ...] = ()  # e.g. ("--no-index", "--find-links", DIR) in tests
    stages: tuple[Stage, ...] = STAGES  # a prefix of STAGES, to stop early on purpose

    def runner_options(self) -> dict[str, Any]:
        return {
            "seeds": list(self.seeds),
            "sizes": list(self.sizes),
            "explore": self.explore,
            "yield_tasks": self.yield_tasks,
            "require_coverage": self.require_coverage,
        }


def audit_package(root: Path, config: AuditConfig | None = None) -> AuditReport:
    """Audit the package at ``root`` from the static stage on (the response stage is the engine's)."""
    config = config or AuditConfig()
    started = time.monotonic()
    report = AuditReport(planned=[s for s in STAGES if s in config.stages and s != "response"])
    try:
        return _audit(root, config, report)
    finally:
        report.wall_seconds = round(time.monotonic() - started, 3)


def _audit(root: Path, config: AuditConfig, report: AuditReport) -> AuditReport:
    static = audit_static(root)
    report.stages.append(static)
    if not static.ok or "dependencies" not in config.stages:
        return report
    requirements, _ = read_requirements(root)
    third_party: list[str] = static.facts.get("third_party_imports", [])
    wheels: Path | None = None
    sandbox_stages: list[Stage] = [s for s in SANDBOX_STAGES if s in config.stages]
    if requirements:
        wheels, problem, seconds = download_wheels([r.line for r in requirements], config)
        if problem:
            report.stages.append(
                stage_result(
                    "dependencies", [Finding(stage="dependencies", code="download", message=problem)], seconds
                )
            )
            return report
    else:
        facts: dict[str, Any] = {"requirements": []}
        report.stages.append(stage_result("dependencies", [], 0.0, facts))
        sandbox_stages.remove("dependencies")
    run = run_confined(
        root,
        sandbox_stages,
        options=config.runner_options(),
        requirements=[r.line for r in requirements],
        third_party=third_party,
        wheels=wheels,
        timeout=config.timeout,
    )
    report.stages += run.stages
    if run.error and len(run.stages) < len(sandbox_stages):
        report.stages.append(failed_run(sandbox_stages[len(run.stages)], run))
    return report


def download_wheels(requirements: list[str], config: AuditConfig) -> tuple[Path | None, str, float]:
    """Wheels (never sources: no build code runs) for the requirements and their dependencies.

    Fetched on the host, from the package index pip is configured for; kept per requirement
    set under ``config.wheel_cache`` so a re-run downloads nothing. ``(dir, problem, seconds)``.
    """
    started = time.monotonic()
    key = hashlib.sha256("\n".join(sorted(requirements) + list(config.pip_index_args)).encode()).hexdigest()[
        :16
    ]
    base = config.wheel_cache or Path(tempfile.gettempdir()) / "envcraft-wheels"
    dest = base / key
    if (dest / ".complete").is_file():
        return dest, "", time.monotonic() - started
    dest.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--only-binary=:all:",
        "--dest",
        str(dest),
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        *config.pip_index_args,
        *requirements,
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return None, f"downloading wheels took over {DOWNLOAD_SECONDS}s", time.monotonic() - started
    if done.returncode != 0:
        lines = [
            line for line in done.stderr.strip().splitlines() if "ERROR" in line
        ] or done.stderr.splitlines()
        tail = (lines or [f"exit status {done.returncode}"])[-1].strip()
        return None, f"no wheels for {', '.join(requirements)}: {tail[:400]}", time.monotonic() - started
    (dest / ".complete").write_text("\n".join(requirements), encoding="utf-8")
    return dest, "", time.monotonic() - started


def summarize_stage(result: StageResult) -> str:
    """One line: the stage, pass or fail, and its first error."""
    head = f"{result.stage}: {'ok' if result.ok else 'FAILED'} ({result.seconds:.1f}s)"
    first = next(iter(result.errors), None)
    return head if first is None else f"{head}: {first.message}"
