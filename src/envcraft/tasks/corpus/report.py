"""``report.html``: one self-contained page about a run (no scripts, no external assets).

It shows whether the run met its targets, the tool graphs with the edges the corpus
covered, the workflow graph, coverage and validation figures, histograms, and a few sample
tasks with their user turns, reference calls and verifier source.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from envcraft.core.html import page, table
from envcraft.tasks.corpus.compose import Library
from envcraft.tasks.corpus.svg import bar_chart_svg, tool_graph_svg, workflow_svg
from envcraft.tasks.format.model import Task
from envcraft.tasks.graphs.walk import Coverage

SAMPLES = 6
STYLE = """
.graphs { display: flex; flex-wrap: wrap; gap: 12px; } .charts { display: flex; flex-wrap: wrap; gap: 8px; }
details { margin: 0.4em 0; } .turn { background: #eef6fb; padding: 6px; margin: 4px 0; border-radius: 4px; }
"""  # the rules of this report's own pieces; the rest is envcraft.core.html.STYLE


def render_report(summary: dict[str, Any], library: Library, covered: Coverage, tasks: list[Task]) -> str:
    corpus = summary["corpus"]
    validation = summary["validation"]
    parts = [
        "<h1>envcraft run report</h1>",
        f"<p>{_count(corpus['tasks'], 'validated task')} from {_count(len(summary['envs']), 'environment')}; "
        f"output in <code>{escape(summary['out'])}</code>.</p>",
        _targets(summary["targets"]),
        "<h2>Validation</h2>",
        table(
            ["measure", "value"],
            [
                ["golden runs scoring 1", _pct(validation["golden_pass_rate"])],
                ["do-nothing runs scoring below 1", _pct(validation["noop_fail_rate"])],
                [
                    "mutations killed",
                    f"{validation['mutations_killed']} / {validation['mutations']} "
                    f"({_pct(validation['kill_rate'])})",
                ],
                ["derived values leaked into user turns", str(validation["leaks"])],
                ["user values missing from user turns", str(validation["missing_user_values"])],
                [
                    "cross-environment tasks",
                    f"{corpus['cross_env_tasks']} ({_pct(corpus['cross_env_share'])})",
                ],
                [
                    "candidates passing every adversarial agent",
                    f"{corpus['adversarial']['passed_every_policy']} / "
                    f"{corpus['adversarial']['reached_validation']} "
                    f"({_pct(corpus['adversarial']['pass_rate'])}); failures by policy: "
                    + (
                        ", ".join(f"{k} {v}" for k, v in corpus["adversarial"]["failed_by_policy"].items())
                        or "none"
                    ),
                ],
                [
                    "Claw tasks that read or write workspace files",
                    f"{corpus['claw_workspace']['any']} / {corpus['claw_tasks']} "
                    f"(file tools or an asked-for file: {_pct(corpus['claw_workspace']['share'])})",
                ],
                [
                    "Claw tasks that need a value only a workspace file holds",
                    f"{corpus['claw_workspace'].get('file_fact', 0)} / {corpus['claw_tasks']}",
                ],
                [
                    "cross-environment tasks carrying a value across",
                    f"{corpus['cross_env_carrying_values']} / {corpus['cross_env_tasks']}",
                ],
                ["tasks with a planned error-recovery step", str(corpus["error_recovery_tasks"])],
                ["duplicates removed", str(corpus.get("duplicates_removed", 0))],
                [
                    "walks tried / rejected by stage",
                    f"{corpus['attempts']} / "
                    + ", ".join(f"{stage} {n}" for stage, n in sorted(corpus["rejected"].items())),
                ],
            ],
        ),
        "<h2>Coverage of tool edges</h2>",
        "<p><i>edges</i>: all edges of the static graph; <i>between tools that ran</i>: edges whose two "
        "tools succeeded at least once; <i>reachable</i>: edges some golden run executed (both calls "
        "succeeded, one after the other); <i>coverage</i> = covered / reachable; <i>of graph</i> = covered / "
        "edges (static analysis over-approximates: many graph edges are never executable).</p>",
        table(
            [
                "environment",
                "tasks",
                "tools (ran)",
                "edges",
                "between tools that ran",
                "reachable",
                "covered",
                "coverage",
                "of graph",
            ],
            [
                [
                    env,
                    s["tasks"],
                    f"{s['tools']} ({s['tools_executed']})",
                    s["edges"],
                    s["edges_between_executed_tools"],
                    s["reachable_edges"],
                    s["covered_edges"],
                    _pct(s["edge_coverage"]),
                    _pct(s["graph_edge_coverage"]),
                ]
                for env, s in corpus["envs"].items()
            ],
        ),
        "<h2>Histograms</h2><div class='charts'>",
        bar_chart_svg("chain length (calls)", corpus["chain_length"]),
        bar_chart_svg("user turns", corpus["turns"]),
        bar_chart_svg("distractors per task", corpus["distractors"]),
        bar_chart_svg("tasks per environment", {e: s["tasks"] for e, s in corpus["envs"].items()}, width=520),
        "</div>",
        "<h2>Workflow graph</h2>",
        workflow_svg(library.workflow, _env_pairs(covered)),
        table(
            ["from", "to", "what flows (entity kinds, workspace paths)", "cross-environment edges used"],
            [
                [
                    src,
                    dst,
                    ", ".join(via),
                    sum(n for (a, _, b, _), n in covered.cross.items() if (a, b) == (src, dst)),
                ]
                for (src, dst), via in library.workflow.env_edges().items()
            ],
        ),
        "<h2>Tool graphs</h2><p>Edge colour: blue = state read/write (AST), green = output name matches a "
        "parameter, orange = produces/consumes annotation, purple = workspace file. Solid = covered.</p>",
        "<div class='graphs'>",
        *(tool_graph_svg(g, _env_edges(covered, env)) for env, g in library.graphs.items()),
        "</div>",
        "<h2>Sample tasks</h2>",
        *(_task(t) for t in _samples(tasks)),
        "<h2>Timings (s)</h2>",
        table(["stage", "seconds"], [[k, v] for k, v in summary["timings_s"].items()]),
        "<h2>Lint</h2>",
        table(
            ["package", "usable", "errors / reason"],
            [
                [
                    name,
                    "yes" if p["usable"] else "no",
                    escape("; ".join(p.get("errors", [])) or p.get("reason", "")),
                ]
                for name, p in summary["lint"]["packages"].items()
            ],
        ),
    ]
    return page("envcraft run report", parts, STYLE)


def _targets(targets: dict[str, Any]) -> str:
    rows = []
    for name, value in targets.items():
        if isinstance(value, dict):
            met = all(value.values())
            detail = ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in value.items())
        else:
            met, detail = bool(value), ""
        mark = "<span class='ok'>met</span>" if met else "<span class='bad'>not met</span>"
        rows.append([name.replace("_", " "), mark, escape(detail)])
    return "<h2>Targets</h2>" + table(["target", "status", "detail"], rows, raw=True)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _env_edges(covered: Coverage, env: str) -> dict[tuple[str, str], int]:
    return {(s, d): n for (e, s, d), n in covered.edges.items() if e == env}


def _env_pairs(covered: Coverage) -> dict[tuple[str, str], int]:
    pairs: dict[tuple[str, str], int] = {}
    for (src_env, _, dst_env, _), n in covered.cross.items():
        pairs[(src_env, dst_env)] = pairs.get((src_env, dst_env), 0) + n
    return pairs


def _samples(tasks: list[Task]) -> list[Task]:
    """A spread of samples: cross-environment, multi-turn, error-recovery and plain ones."""
    picks: list[Task] = []
    for wanted in (
        lambda t: len(t.envs) > 1,
        lambda t: bool(t.provenance.get("steps")),
        lambda t: len(t.turns) >= 3,
        lambda t: bool(t.provenance.get("distractors")),
        lambda t: t.kind == "claw",
        lambda t: True,
    ):
        found = next((t for t in tasks if wanted(t) and t not in picks), None)
        if found is not None:
            picks.append(found)
    return picks[:SAMPLES]


def _task(task: Task) -> str:
    turns = "".join(
        f"<div class='turn'><b>user {i + 1}:</b> {escape(t.user)}</div>" for i, t in enumerate(task.turns)
    )
    calls = table(
        ["turn", "env", "tool", "args", "provenance"],
        [
            [c.turn + 1, c.env, c.tool, json.dumps(c.args, ensure_ascii=False), json.dumps(c.provenance)]
            for c in task.reference.calls
        ],
    )
    distractors = task.provenance.get("distractors", [])
    quality = {k: task.quality.get(k) for k in ("kill_rate", "mutations_total", "golden_score", "noop_score")}
    return (
        f"<h3>{escape(task.id)} <small>({escape(', '.join(task.envs))}; "
        f"persona {escape(task.persona)})</small></h3>"
        f"{turns}{calls}"
        f"<p>distractors: {escape(json.dumps(distractors))}<br>quality: {escape(json.dumps(quality))}</p>"
        f"<details><summary>verifier source</summary><pre>{escape(task.verifier.source)}</pre></details>"
    )
