"""``synth.json`` and ``report.html``: what a synthesis run produced and why candidates failed.

``synth.json`` holds, per candidate, the retrieved archetypes with their scores, every
attempt (tokens, whether it changed the files, the audit result of each stage with its
findings), the status and, for a rejected one, the reasons; plus the funnel (candidates
whose best attempt passed each stage), the acceptance rate, tokens per accepted environment
and the failure causes. ``report.html`` shows the same on one self-contained page.
"""

from __future__ import annotations

import json
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

from envcraft.core.html import page
from envcraft.core.workspace import atomic_write_bytes
from envcraft.synth.audit.findings import STAGES
from envcraft.synth.engine import CandidateRecord, EngineOptions
from envcraft.synth.tokens import tokenizer_name

STYLE = """
.bar { background: #5dade2; height: 14px; display: inline-block; }
pre { padding: 6px; white-space: pre-wrap; margin: 2px 0; max-height: none; }
"""  # the funnel's bars and the wrapped reasons; the rest is envcraft.core.html.STYLE


def summarize(records: list[CandidateRecord], options: EngineOptions, model: str) -> dict[str, Any]:
    """The ``synth.json`` document."""
    accepted = [r for r in records if r.status == "accepted"]
    funnel = {"generated": len(records)}
    for stage in STAGES:
        funnel[stage] = sum(1 for r in records if passed_stage(r, stage))
    causes: Counter[str] = Counter()
    for record in records:
        best = record.best
        if record.status == "rejected" and best is not None:
            failed = best.report.failed_stage or "unknown"
            for finding in best.report.errors():
                causes[f"{failed}: {finding.code}"] += 1
    tokens = [r.tokens() for r in accepted]
    audit_seconds = [a.audit_seconds for r in records for a in r.attempts if a.audit_seconds]
    return {
        "model": model,
        "options": options.to_json(),
        "tokenizer": tokenizer_name(),
        "candidates": [_candidate(r) for r in records],
        "funnel": funnel,
        "accepted": len(accepted),
        "acceptance_rate": round(len(accepted) / len(records), 4) if records else 0.0,
        "status": dict(Counter(r.status for r in records)),
        "tokens_per_accepted_env": {
            key: round(sum(t[key] for t in tokens) / len(tokens), 1) if tokens else 0.0
            for key in ("prompt_tokens", "completion_tokens", "cached_tokens")
        },
        "audit_seconds_per_attempt": round(sum(audit_seconds) / len(audit_seconds), 3)
        if audit_seconds
        else 0.0,
        "failure_causes": dict(causes.most_common()),
    }


def passed_stage(record: CandidateRecord, stage: str) -> bool:
    """Whether the candidate's best attempt passed ``stage`` (the funnel's count, here and in the
    library's README)."""
    best = record.best
    if best is None:
        return False
    result = best.report.stage(stage)
    return result is not None and result.ok and best.report.stages.index(result) < best.report.progress


def _candidate(record: CandidateRecord) -> dict[str, Any]:
    data = record.model_dump(mode="json")
    data["tokens"] = record.tokens()
    return data


def write_outputs(out: Path, summary: dict[str, Any]) -> None:
    """``OUT/synth.json`` and ``OUT/report.html``, each replaced atomically."""
    _atomic(out / "synth.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    _atomic(out / "report.html", render_html(summary))


def render_html(summary: dict[str, Any]) -> str:
    funnel = summary["funnel"]
    top = max(funnel.values()) or 1
    rows = "".join(
        f"<tr><td>{escape(stage)}</td><td>{count}</td>"
        f"<td><span class='bar' style='width:{int(300 * count / top)}px'></span></td></tr>"
        for stage, count in funnel.items()
    )
    causes = (
        "".join(
            f"<tr><td>{escape(cause)}</td><td>{count}</td></tr>"
            for cause, count in summary["failure_causes"].items()
        )
        or "<tr><td colspan=2>none</td></tr>"
    )
    tokens = summary["tokens_per_accepted_env"]
    parts = [
        "<h1>Environment synthesis</h1>",
        f"<p>{summary['accepted']} of {funnel['generated']} candidates accepted "
        f"({summary['acceptance_rate']:.1%}) with model <code>{escape(summary['model'])}</code>; "
        f"audit time per attempt {summary['audit_seconds_per_attempt']:.1f}s.</p>",
        "<h2>Acceptance funnel</h2><p>Candidates whose best attempt passed each audit stage, in order.</p>",
        f"<table><tr><th>stage</th><th>candidates</th><th></th></tr>{rows}</table>",
        "<h2>Tokens per accepted environment</h2>",
        f"<table><tr><th>prompt</th><th>completion</th><th>cached</th></tr><tr><td>{tokens['prompt_tokens']}</td>"
        f"<td>{tokens['completion_tokens']}</td><td>{tokens['cached_tokens']}</td></tr></table>",
        "<h2>Failure causes</h2><p>Errors of the failing stage of each rejected candidate's best try.</p>",
        f"<table><tr><th>stage: finding</th><th>count</th></tr>{causes}</table>",
        "<h2>Candidates</h2>",
        "<table><tr><th>id</th><th>status</th><th>archetypes (BM25)</th><th>attempts</th><th>why</th></tr>",
    ]
    for candidate in summary["candidates"]:
        status = candidate["status"]
        css = "ok" if status == "accepted" else "bad"
        ranking = ", ".join(f"{r['archetype']} {r['score']:.1f}" for r in candidate["retrieval"][:2])
        attempts = "<br>".join(
            f"{a['number']}: {_reached(a)}" + ("" if a["changed"] else " (no change)")
            for a in candidate["attempts"]
        )
        why = "".join(f"<pre>{escape(line)}</pre>" for line in candidate["reasons"][:6])
        parts.append(
            f"<tr><td>{escape(candidate['id'])}</td><td class='{css}'>{escape(status)}</td>"
            f"<td>{escape(ranking)}</td><td>{attempts}</td><td>{why}</td></tr>"
        )
    parts.append("</table>")
    return page("envcraft synth report", parts, STYLE)


def _reached(attempt: dict[str, Any]) -> str:
    stages = attempt["report"]["stages"]
    failed = next((s["stage"] for s in stages if not s["ok"]), None)
    return "passed every stage" if failed is None else f"failed {escape(failed)}"


def _atomic(path: Path, text: str) -> None:
    """``text`` written atomically (a reader sees the old file or the new one, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, text.encode("utf-8"))
