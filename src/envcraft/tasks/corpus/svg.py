"""Self-contained SVG pictures of the tool graphs, the workflow graph and small histograms.

No graphviz, no network, no scripts: a circular layout (nodes evenly on a circle, edges as
straight arrows, self-loops as small arcs), colours by edge evidence, and line weight by how
often the corpus covered an edge. The output embeds directly in ``report.html``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape

from envcraft.tasks.graphs.graph import ToolGraph, WorkflowGraph

# Colour of an edge by its strongest evidence (first match wins).
EDGE_COLOURS = (
    ("workspace", "#8e44ad"),
    ("name", "#27ae60"),
    ("annotation", "#e67e22"),
    ("state", "#2980b9"),
    ("entity", "#e67e22"),
)
NODE_FILL = {"mutating": "#fdebd0", "read_only": "#e8f6f3", "system": "#eeeeee"}


def _colour(sources: list[str]) -> str:
    for source, colour in EDGE_COLOURS:
        if source in sources:
            return colour
    return "#7f8c8d"


def _circle(count: int, cx: float, cy: float, radius: float) -> list[tuple[float, float]]:
    return [
        (
            cx + radius * math.cos(2 * math.pi * i / max(count, 1) - math.pi / 2),
            cy + radius * math.sin(2 * math.pi * i / max(count, 1) - math.pi / 2),
        )
        for i in range(count)
    ]


def _arrow(x1: float, y1: float, x2: float, y2: float, inset: float) -> tuple[float, float, float, float]:
    """Shorten a segment by ``inset`` at both ends so arrows stop at the node boxes."""
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    return x1 + ux * inset, y1 + uy * inset, x2 - ux * inset, y2 - uy * inset


def _header(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'markerUnits="userSpaceOnUse" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]


def _legend(x: float, y: float) -> list[str]:
    parts = []
    for i, (source, colour) in enumerate(EDGE_COLOURS[:4]):
        parts.append(
            f'<line x1="{x}" y1="{y + 14 * i}" x2="{x + 22}" y2="{y + 14 * i}" stroke="{colour}" '
            f'stroke-width="2"/><text x="{x + 27}" y="{y + 14 * i + 4}">{source}</text>'
        )
    return parts


def tool_graph_svg(graph: ToolGraph, covered: Mapping[tuple[str, str], int] | None = None) -> str:
    """The tool dependency graph of one environment; covered edges drawn solid and thicker."""
    covered = covered or {}
    names = list(graph.nodes)
    size = max(420, 60 * len(names) + 120)
    cx = cy = size / 2
    positions = dict(zip(names, _circle(len(names), cx, cy, size / 2 - 90), strict=True))
    parts = _header(size, size + 30, f"tool graph of {graph.env}")
    parts.append(f'<text x="10" y="18" font-size="14" font-weight="bold">{escape(graph.title)}</text>')
    for (src, dst), edge in sorted(graph.edges.items()):
        colour = _colour(edge.sources)
        uses = covered.get((src, dst), 0)
        style = f'stroke="{colour}" stroke-width="{1 + min(uses, 6) * 0.5:.1f}" ' + (
            'stroke-opacity="0.9"' if uses else 'stroke-opacity="0.35" stroke-dasharray="4 3"'
        )
        tip = escape(f"{src} -> {dst}: {', '.join(edge.sources)}; covered {uses}x")
        x1, y1 = positions[src]
        if src == dst:
            parts.append(
                f'<circle cx="{x1:.1f}" cy="{y1 - 22:.1f}" r="10" fill="none" {style}><title>{tip}</title>'
                "</circle>"
            )
            continue
        x2, y2 = positions[dst]
        a, b, c, d = _arrow(x1, y1, x2, y2, 26)
        parts.append(
            f'<line x1="{a:.1f}" y1="{b:.1f}" x2="{c:.1f}" y2="{d:.1f}" {style} '
            f'marker-end="url(#arrow)"><title>{tip}</title></line>'
        )
    for name, (x, y) in positions.items():
        node = graph.nodes[name]
        kind = "system" if node.system else "read_only" if node.read_only else "mutating"
        width = 8 + 6.2 * len(name)
        border = "#2c3e50" if node.executable else "#c0392b"
        tip = escape(f"{name}: {node.summary} | reads {node.reads} writes {node.writes}")
        parts.append(
            f'<g><title>{tip}</title><rect x="{x - width / 2:.1f}" y="{y - 10:.1f}" '
            f'width="{width:.1f}" height="20" '
            f'rx="5" fill="{NODE_FILL[kind]}" stroke="{border}"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{escape(name)}</text></g>'
        )
    parts += _legend(10, size - 50)
    parts.append(
        f'<text x="10" y="{size + 20}" fill="#555">{len(graph.nodes)} tools, {len(graph.edges)} edges; '
        "solid = covered by the corpus, dashed = not covered; red border = never ran</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def workflow_svg(workflow: WorkflowGraph, used: Mapping[tuple[str, str], int] | None = None) -> str:
    """Environments and the entity kinds / artifacts linking them (edge label = what flows)."""
    used = used or {}
    envs = workflow.envs
    size = max(420, 80 * len(envs) + 160)
    cx = cy = size / 2
    positions = dict(zip(envs, _circle(len(envs), cx, cy, size / 2 - 110), strict=True))
    parts = _header(size, size, "workflow graph")
    parts.append(
        '<text x="10" y="18" font-size="14" font-weight="bold">Workflow graph across environments</text>'
    )
    for (src, dst), labels in workflow.env_edges().items():
        (x1, y1), (x2, y2) = positions[src], positions[dst]
        a, b, c, d = _arrow(x1, y1, x2, y2, 40)
        # offset the two directions of a pair so they do not overlap
        nx, ny = -(d - b), (c - a)
        norm = math.hypot(nx, ny) or 1.0
        a, b, c, d = a + 5 * nx / norm, b + 5 * ny / norm, c + 5 * nx / norm, d + 5 * ny / norm
        count = used.get((src, dst), 0)
        label = escape(", ".join(labels[:4]) + (" …" if len(labels) > 4 else ""))
        parts.append(
            f'<line x1="{a:.1f}" y1="{b:.1f}" x2="{c:.1f}" y2="{d:.1f}" stroke="#e67e22" '
            f'stroke-width="{1 + min(count, 40) / 8:.1f}" marker-end="url(#arrow)">'
            f"<title>{escape(src)} -> {escape(dst)}: {label}; {count} tasks</title></line>"
        )
    for env, (x, y) in positions.items():
        width = 10 + 6.4 * len(env)
        parts.append(
            f'<rect x="{x - width / 2:.1f}" y="{y - 12:.1f}" width="{width:.1f}" height="24" rx="6" '
            f'fill="#eaf2f8" stroke="#2c3e50"/><text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">'
            f"{escape(env)}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


CHAR_WIDTH = 6.2  # a generous average advance of an 11px sans-serif character
LABEL_ANGLE = 40  # degrees: axis labels too wide for their bar are drawn slanted


def bar_chart_svg(title: str, counts: Mapping[str, int], width: int = 320, height: int = 160) -> str:
    """A small vertical bar chart (histograms in the report). Axis labels wider than their bar
    (environment names) are slanted, and the chart grows downwards to hold them, so that they
    never overlap."""
    left = 10.0
    slot = (width - 2 * left) / max(len(counts), 1)
    longest = max((len(str(label)) for label in counts), default=0) * CHAR_WIDTH
    slanted = longest > slot - 2
    angle = math.radians(LABEL_ANGLE)
    if slanted:  # the first label runs down-left from under its bar: room for it on the left
        left = max(left, longest * math.cos(angle) - slot / 2 + 4)
        slot = (width - left - 10) / len(counts)
    below = longest * math.sin(angle) + 8 if slanted else 0.0
    full = height + math.ceil(below)
    parts = _header(width, full, title)
    parts.append(f'<text x="8" y="16" font-weight="bold">{escape(title)}</text>')
    if counts:
        top = max(counts.values()) or 1
        for i, (label, value) in enumerate(counts.items()):
            bar = (height - 60) * value / top
            x = left + i * slot
            centre = x + slot / 2
            if slanted:
                axis = (
                    f'<text x="{centre:.1f}" y="{height - 20}" text-anchor="end" '
                    f'transform="rotate(-{LABEL_ANGLE} {centre:.1f} {height - 20})">{escape(label)}</text>'
                )
            else:
                axis = f'<text x="{centre:.1f}" y="{height - 16}" text-anchor="middle">{escape(label)}</text>'
            parts.append(
                f'<rect x="{x + 2:.1f}" y="{height - 30 - bar:.1f}" width="{max(slot - 4, 1):.1f}" '
                f'height="{bar:.1f}" fill="#5d8aa8"><title>{escape(label)}: {value}</title></rect>'
                + axis
                + f'<text x="{centre:.1f}" y="{height - 34 - bar:.1f}" text-anchor="middle" '
                f'font-size="9">{value}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts)
