"""``envcraft eval``: k rollouts per task, the Table 3 figures, a JSON summary and an HTML report.

Output directory::

    DIR/trajectories.jsonl   one trajectory a line (resumable; ``tasks score`` reads it)
    DIR/eval.json            the summary (overall, per env, per kind, per task) and the job
    DIR/report.html          tables and plots
    DIR/cache/               the response cache of a remote model (a re-run costs nothing)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from envcraft.core.workspace import atomic_write_bytes
from envcraft.llm.provider import Provider
from envcraft.rollout.loop import Trajectory
from envcraft.rollout.metrics import summarize
from envcraft.rollout.report import render_report
from envcraft.rollout.runner import Job, OnDone, run_rollouts
from envcraft.tasks.format.io import write_json

TRAJECTORIES_FILE = "trajectories.jsonl"
SUMMARY_FILE = "eval.json"
REPORT_FILE = "report.html"
CACHE_DIR = "cache"


def evaluate(
    job: Job,
    provider: Provider,
    out: str | Path,
    *,
    meta: dict[str, Any] | None = None,
    on_done: OnDone | None = None,
) -> dict[str, Any]:
    """Run ``job`` (resuming from ``out``), then write the summary and the report; returns the summary."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)

    async def main() -> list[Trajectory]:
        try:
            return await run_rollouts(job, provider, root / TRAJECTORIES_FILE, on_done=on_done)
        finally:
            await provider.aclose()
            if job.judge is not None:
                await job.judge.aclose()
            if job.user is not None:
                await job.user.aclose()

    trajectories = asyncio.run(main())
    return write_summary(job, trajectories, root, meta=meta, usage=provider.meter.to_json())


def write_summary(
    job: Job,
    trajectories: Sequence[Trajectory],
    root: Path,
    *,
    meta: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    summary = summarize(trajectories, job.k)
    summary["meta"] = {
        **(meta or {}),
        "k": job.k,
        "concurrency": job.concurrency,
        "config": asdict(job.config),
        "spent": usage or {},
    }
    write_json(root / SUMMARY_FILE, summary)
    atomic_write_bytes(root / REPORT_FILE, render_report(summary, trajectories).encode("utf-8"))
    return summary
