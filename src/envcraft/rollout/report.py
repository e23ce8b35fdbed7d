"""The evaluation report: one self-contained HTML page (tables and inline SVG plots, no scripts).

Plots: mean reward by environment, tokens against reward (one dot per trajectory), and the
number of user turns and model steps per trajectory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from envcraft.core.html import page, table
from envcraft.rollout.loop import Trajectory
from envcraft.rollout.metrics import ENV_OVERLAP, KIND_OVERLAP, overlap_note

_STYLE = """
th, td { text-align: right; }
th:first-child, td:first-child { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 1.5em; }
"""  # numbers right-aligned, and the plots; the rest is envcraft.core.html.STYLE


def render_report(summary: Mapping[str, Any], trajectories: Sequence[Trajectory]) -> str:
    """The HTML page for one evaluation (``summary`` as :func:`metrics.summarize` gives it, plus ``meta``)."""
    meta = summary.get("meta", {})
    k = summary["k"]
    title = f"envcraft eval: {meta.get('model', '?')} on {meta.get('tasks_path', '?')}"
    pass_columns = ["pass@1"] if k == 1 else ["pass@1", f"pass@{k}"]  # with k = 1 they are one
    columns = ["tasks", "trajectories", *pass_columns, "mean reward", "mean tokens", "mean turns", "errors"]
    overall = [_row("all", summary["overall"], k)]
    by_env = [_row(env, row, k) for env, row in summary["by_env"].items()]
    by_kind = [_row(kind, row, k) for kind, row in summary["by_kind"].items()]
    total = summary["overall"]["tasks"]
    rewards = {env: row["mean_reward"] for env, row in summary["by_env"].items()}
    stops = ", ".join(f"{name} {count}" for name, count in sorted(summary["stops"].items()))
    parts = [
        f"<h1>{escape(title)}</h1>",
        f"<p>k = {k}; mode {escape(str(meta.get('mode', 'auto')))}; stops: {escape(stops)}</p>",
        *_imported(meta.get("imported")),
        table(["", *columns], overall),
        "<h2>By environment</h2>",
        table(["env", *columns], by_env),
        _overlap_note(summary["by_env"], total, ENV_OVERLAP),
        "<h2>By kind</h2>",
        table(["kind", *columns], by_kind),
        _overlap_note(summary["by_kind"], total, KIND_OVERLAP),
        "<div class='plots'>",
        bar_svg("mean reward by environment", rewards, maximum=1.0),
        scatter_svg("tokens vs reward", [(t.usage.total_tokens, t.score) for t in trajectories]),
        histogram_svg("user turns per trajectory", Counter(t.turns_played for t in trajectories)),
        histogram_svg("model steps per trajectory", Counter(t.steps for t in trajectories)),
        "</div>",
        "<h2>Tasks</h2>",
        table(
            ["task", "envs", "kind", "samples", "passed", "pass rate", "mean reward"],
            [
                [
                    row["task_id"],
                    ", ".join(row["envs"]),
                    row["kind"],
                    row["samples"],
                    row["passed"],
                    f"{row['pass_rate']:.2f}",
                    f"{row['mean_reward']:.3f}",
                ]
                for row in summary["tasks"]
            ],
        ),
    ]
    return page(title, parts, _STYLE)


def _imported(plan: Any) -> list[str]:
    """What an eval of imported benchmark tasks left out or scored in part (rollout.grading.Plan)."""
    if not isinstance(plan, Mapping):
        return []
    lines = [
        f"skipped {len(ids)} task(s): {reason} ({', '.join(ids)})" for reason, ids in plan["skipped"].items()
    ]
    if plan["automated_part_only"]:
        ids = ", ".join(plan["automated_part_only"])
        lines.append(f"scored on their automated part only (no --judge): {ids}")
    return [f"<p>{escape(line)}</p>" for line in lines]


def _overlap_note(rows: Mapping[str, Mapping[str, Any]], total: int, why: str) -> str:
    note = overlap_note(rows, total, why)
    return f"<p><small>{escape(note.capitalize())}.</small></p>" if note else ""


def _row(name: str, row: Mapping[str, Any], k: int) -> list[Any]:
    passes = [f"{row['pass@1']:.3f}"] if k == 1 else [f"{row['pass@1']:.3f}", f"{row['pass@k']:.3f}"]
    return [
        name,
        row["tasks"],
        row["trajectories"],
        *passes,
        f"{row['mean_reward']:.3f}",
        f"{row['mean_tokens']:.0f}",
        f"{row['mean_turns']:.2f}",
        row["errors"],
    ]


def _frame(title: str, width: int, height: int) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="10"><title>{escape(title)}</title>'
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="14" text-anchor="middle" font-size="12">{escape(title)}</text>',
    ]


def bar_svg(title: str, values: Mapping[str, float], maximum: float | None = None) -> str:
    """Horizontal bars, one per key (labels left, value right)."""
    width, bar, left = 420, 16, 130
    height = 30 + bar * max(1, len(values)) + 10
    top = max(maximum or 0.0, *values.values(), 1e-9) if values else 1.0
    out = _frame(title, width, height)
    if values and not any(values.values()):  # else a page of labels and no bars looks broken
        out.append(f'<text x="{width - 6}" y="14" text-anchor="end" fill="#c0392b">all 0</text>')
    for i, (name, value) in enumerate(values.items()):
        y = 26 + i * bar
        length = (width - left - 50) * value / top
        out.append(f'<text x="{left - 4}" y="{y + 11}" text-anchor="end">{escape(name)}</text>')
        out.append(  # the scale's full length, so a zero is an empty gauge, not a missing bar
            f'<rect x="{left}" y="{y + 2}" width="{width - left - 50}" height="{bar - 4}" fill="#ecf0f1"/>'
        )
        out.append(f'<rect x="{left}" y="{y + 2}" width="{length:.1f}" height="{bar - 4}" fill="#2980b9"/>')
        out.append(f'<text x="{left + length + 4:.1f}" y="{y + 11}">{value:.2f}</text>')
    out.append("</svg>")
    return "".join(out)


def scatter_svg(title: str, points: Sequence[tuple[float, float]]) -> str:
    """One dot per (x = tokens, y = reward in [0, 1])."""
    width, height, pad = 420, 260, 40
    out = _frame(title, width, height)
    xmax = max((x for x, _ in points), default=1.0) or 1.0
    out.append(f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" stroke="#555"/>')
    out.append(f'<line x1="{pad}" y1="{height - pad}" x2="{pad}" y2="24" stroke="#555"/>')
    out.append(f'<text x="{width - 10}" y="{height - pad + 14}" text-anchor="end">{xmax:.0f} tokens</text>')
    out.append(f'<text x="{pad - 4}" y="30" text-anchor="end">1</text>')
    out.append(f'<text x="{pad - 4}" y="{height - pad}" text-anchor="end">0</text>')
    for x, y in points:
        cx = pad + (width - 10 - pad) * x / xmax
        cy = height - pad - (height - pad - 24) * min(1.0, max(0.0, y))
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="#e67e22" fill-opacity="0.6"/>')
    out.append("</svg>")
    return "".join(out)


def histogram_svg(title: str, counts: Mapping[int, int]) -> str:
    """Vertical bars of how many trajectories had each value."""
    width, height, pad = 320, 200, 30
    out = _frame(title, width, height)
    keys = sorted(counts)
    top = max(counts.values(), default=1)
    slot = (width - 2 * pad) / max(1, len(keys))
    for i, key in enumerate(keys):
        h = (height - 2 * pad) * counts[key] / top
        x = pad + i * slot
        out.append(
            f'<rect x="{x + 2:.1f}" y="{height - pad - h:.1f}" width="{max(1.0, slot - 4):.1f}" '
            f'height="{h:.1f}" fill="#27ae60"/>'
        )
        out.append(f'<text x="{x + slot / 2:.1f}" y="{height - pad + 12}" text-anchor="middle">{key}</text>')
        label_y = height - pad - h - 3
        out.append(
            f'<text x="{x + slot / 2:.1f}" y="{label_y:.1f}" text-anchor="middle">{counts[key]}</text>'
        )
    out.append("</svg>")
    return "".join(out)
