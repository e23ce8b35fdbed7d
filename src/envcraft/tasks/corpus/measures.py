"""What a task set is made of: every statistic of a corpus, in one place.

Each measure of a task reads only the task (its reference, provenance and verifier checks), so
the same function answers for a fresh corpus, a shard, or a task set on disk. On top of them:
:func:`corpus_stats` (``stats.json`` of a synthesized set: edge coverage from the shards'
counters, histograms, the measures) and :func:`summarize` (what ``envcraft tasks check`` prints
for a validated set).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envcraft.tasks.format.model import Task
from envcraft.tasks.graphs.graph import ToolGraph
from envcraft.tasks.graphs.walk import Coverage, Step
from envcraft.tasks.phrasing.leaks import find_leaks
from envcraft.tasks.validation.validate import KILLED_BELOW, ValidationReport
from envcraft.tasks.verifier import runtime as vr

FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_files", "shell"})


def workspace_use(task: Task) -> set[str]:
    """How a task needs the workspace: ``"file_tool"`` (its reference reads or writes a file with
    a file tool), ``"asked_file"`` (the user asks for a file whose content the verifier parses),
    ``"parsed_output"`` (a goal parses a file a domain tool writes: CSV, JSON), ``"file_fact"``
    (a value the reference needs comes only from a workspace file it reads); empty if none."""
    found: set[str] = set()
    if reads_needed_value(task):
        found.add("file_fact")
    if any(c.tool in FILE_TOOLS for c in task.reference.calls):
        found.add("file_tool")
    if "file_request" in task.provenance:
        found.add("asked_file")
    for check in task.verifier.checks:
        if (
            check["role"] == "goal"
            and check["kind"] == "file"
            and check.get("format") in ("csv", "tsv", "json")
        ):
            found.add("parsed_output")
    return found


def reads_needed_value(task: Task) -> bool:
    """Whether some argument of the reference comes from a workspace file (``file:<path>``)
    that an earlier reference call reads, and no user turn states that value."""
    calls = task.reference.calls
    for i, call in enumerate(calls):
        for arg, value in call.args.items():
            source = call.source(arg)
            if source.kind != "file" or any(vr.times_said(t.user, value) for t in task.turns):
                continue
            if any(c.tool == "read_file" and c.args.get("path") == source.path for c in calls[:i]):
                return True
    return False


def carries_across(task: Task) -> bool:
    """Whether a value travels from one environment of the task into another: a call takes it
    from a call of another environment (ids carried in free text included), or the file the user
    asks for holds a value from an environment other than the one that writes it."""
    calls = task.reference.calls
    for call in calls:
        for arg in call.args:
            source = call.source(arg)
            if source.from_call and source.call is not None and calls[source.call].env != call.env:
                return True
    request = task.provenance.get("file_request")
    if isinstance(request, dict):
        writer = next((c.env for c in calls if c.tool == "write_file"), None)
        return any(item.get("env") != writer for item in request.get("items", []))
    return False


def adversarial_rate(validated: Iterable[Mapping[str, int]]) -> dict[str, Any]:
    """Candidates that reached validation, how many passed every adversarial policy, and the
    failures per policy (from the shards' ``validated`` counters)."""
    total: Counter[str] = Counter()
    for counts in validated:
        total.update(counts)
    reached, passed = total["reached"], total["passed"]
    failed = {k.split(":", 1)[1]: v for k, v in sorted(total.items()) if k.startswith("failed:")}
    applied = {k.split(":", 1)[1]: v for k, v in sorted(total.items()) if k.startswith("applied:")}
    return {
        "reached_validation": reached,
        "passed_every_policy": passed,
        "pass_rate": round(passed / reached, 4) if reached else 0.0,
        "failed_by_policy": failed,
        # per policy: the candidates it applied to, and the share whose verifier held against it
        "held_by_policy": {
            kind: {"applied": n, "held": round((n - failed.get(kind, 0)) / n, 4)}
            for kind, n in applied.items()
        },
    }


def corpus_measures(tasks: list[Task]) -> dict[str, Any]:
    """Workspace use of the Claw tasks, value passing of the cross-environment tasks, difficulty."""
    claw = [t for t in tasks if t.kind == "claw"]
    uses = [workspace_use(t) for t in claw]
    cross = [t for t in tasks if len(t.envs) > 1]
    features = [t.difficulty.get("features", {}) for t in tasks if t.difficulty]
    return {
        "claw_tasks": len(claw),
        "claw_workspace": {
            "file_tool": sum("file_tool" in u for u in uses),
            "asked_file": sum("asked_file" in u for u in uses),
            "parsed_output": sum("parsed_output" in u for u in uses),
            "file_fact": sum("file_fact" in u for u in uses),
            "file_fact_share": round(sum("file_fact" in u for u in uses) / len(claw), 4) if claw else 0.0,
            "any": sum(bool(u) for u in uses),
            "share": round(sum(bool(u & {"file_tool", "asked_file"}) for u in uses) / len(claw), 4)
            if claw
            else 0.0,
        },
        "cross_env_carrying_values": sum(carries_across(t) for t in cross),
        # of those: the record acted on is named by a colleague's note read in another environment
        "cross_env_cited": sum("cited_fact" in t.provenance for t in cross),
        "cross_env_tasks": len(cross),
        "difficulty": {
            key: histogram(int(f.get(key, 0)) for f in features)
            for key in ("calls", "writes", "hidden_values", "distractors", "files_written")
        },
        "per_task": per_task_distributions(tasks),
        "jobs": job_measures(tasks),
    }


def job_measures(tasks: Sequence[Task]) -> dict[str, Any]:
    """How many tasks ask for a declared job as one outcome (``provenance["jobs"]``), and how
    often each job (``env/name``) is asked."""
    asked = Counter(
        f"{task.reference.calls[j['calls'][0]].env}/{j['job']}"
        for task in tasks
        for j in task.provenance.get("jobs", [])
    )
    with_job = sum(bool(task.provenance.get("jobs")) for task in tasks)
    return {
        "tasks": with_job,
        "share": round(with_job / len(tasks), 4) if tasks else 0.0,
        "by_job": dict(sorted(asked.items())),
    }


SIZE_MEASURES = ("calls", "turns", "envs", "distinct_tools", "lookups")


def task_size(task: Task) -> dict[str, int]:
    """How much work one task is, from its reference: calls, user turns, environments, distinct
    tools and lookups (read-only calls, as the task's difficulty features count them; 0 without)."""
    features = (task.difficulty or {}).get("features", {})
    return {
        "calls": len(task.reference.calls),
        "turns": len(task.turns),
        "envs": len(task.envs),
        "distinct_tools": len({(c.env, c.tool) for c in task.reference.calls}),
        "lookups": int(features.get("reads", 0)),
    }


def per_task_distributions(tasks: Sequence[Task]) -> dict[str, Any]:
    """:func:`task_size` as distributions (:func:`distribution`), over the whole set, per
    environment (the one a task starts in, as ``envs.<env>.tasks`` counts) and per kind, so how
    deep the tasks are shows at a glance: a median of one call is a shallow corpus."""

    def of(group: Sequence[Task]) -> dict[str, Any]:
        sizes = [task_size(t) for t in group]
        return {key: distribution([s[key] for s in sizes]) for key in SIZE_MEASURES}

    envs = sorted({t.envs[0] for t in tasks if t.envs})
    kinds = sorted({t.kind for t in tasks})
    return {
        "overall": of(tasks),
        "by_env": {env: of([t for t in tasks if t.envs and t.envs[0] == env]) for env in envs},
        "by_kind": {kind: of([t for t in tasks if t.kind == kind]) for kind in kinds},
    }


def distribution(values: Sequence[int]) -> dict[str, Any]:
    """``n``, ``min``, ``p25``, ``median``, ``p75``, ``max`` (quantiles interpolated linearly between
    the two nearest values, rounded to 2 places) and the :func:`histogram`; zeros when empty."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "min": 0, "p25": 0, "median": 0, "p75": 0, "max": 0, "histogram": {}}

    def quantile(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        value = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
        return int(value) if value == int(value) else round(value, 2)

    return {
        "n": len(ordered),
        "min": ordered[0],
        "p25": quantile(0.25),
        "median": quantile(0.5),
        "p75": quantile(0.75),
        "max": ordered[-1],
        "histogram": histogram(ordered),
    }


def histogram(values: Iterable[int]) -> dict[str, int]:
    """``{value: count}`` with the values as strings in ascending order (a JSON object)."""
    counts = Counter(values)
    return {str(k): counts[k] for k in sorted(counts)}


@dataclass
class ShardResult:
    env: str
    shard: int
    tasks: list[Task]
    attempts: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    tool_ok: Counter[str] = field(default_factory=Counter)
    executed: Counter[str] = field(default_factory=Counter)  # "env.src>dst": edges golden runs executed
    validated: Counter[str] = field(default_factory=Counter)  # reached / passed / applied: / failed:<policy>
    rejected_cross: Counter[str] = field(default_factory=Counter)  # rejections of crossing chains
    # each task's structured intent (goals, values, persona), in task order: what an LLM writer
    # rewrites the turns from (kept beside the tasks, so the task set itself stays as it was)
    intents: list[dict[str, Any]] = field(default_factory=list)
    # the first detail of each rejection reason (which record, field or file, and its value): what
    # the synthesis audit tells a model whose environment yields no task; kept out of the shard files
    examples: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "shard": self.shard,
            "attempts": self.attempts,
            "accepted": len(self.tasks),
            "rejected": dict(sorted(self.rejected.items())),
            "tool_ok": dict(sorted(self.tool_ok.items())),
            "executed": dict(sorted(self.executed.items())),
            "validated": dict(sorted(self.validated.items())),
            "rejected_cross": dict(sorted(self.rejected_cross.items())),
        }


def accepted_steps(task: Task) -> list[Step]:
    """The successful calls of a task's reference as a chain (failed planned steps excluded)."""
    errors = {s["call"] for s in task.provenance.get("steps", [])}
    return [Step(c.env, c.tool) for i, c in enumerate(task.reference.calls) if i not in errors]


def corpus_stats(
    tasks: list[Task], graphs: Mapping[str, ToolGraph], shards: Sequence[ShardResult]
) -> dict[str, Any]:
    """Edge coverage per environment, cross-environment share and histograms."""
    coverage = Coverage()
    for task in tasks:
        coverage.accept(accepted_steps(task), dict(graphs))
    ran = Counter[str]()
    executed = Counter[str]()
    for shard in shards:
        ran.update(shard.tool_ok)
        executed.update(shard.executed)
    per_env: dict[str, Any] = {}
    for env, graph in graphs.items():
        ran_tools = {n for n, node in graph.nodes.items() if node.executable or ran[f"{env}.{n}"]}
        between_ran = [(s, d) for (s, d) in graph.edges if s in ran_tools and d in ran_tools]
        covered = {(s, d) for (s, d) in graph.edges if coverage.edges[(env, s, d)]}
        reachable = {(s, d) for (s, d) in graph.edges if executed[edge_key(env, s, d)]} | covered
        per_env[env] = {
            "tasks": sum(t.envs[0] == env for t in tasks),
            "tools": len(graph.nodes),
            "tools_executed": len(ran_tools),
            "edges": len(graph.edges),
            "edges_between_executed_tools": len(between_ran),
            "reachable_edges": len(reachable),
            "covered_edges": len(covered),
            "edge_coverage": round(len(covered) / len(reachable), 4) if reachable else 1.0,
            "graph_edge_coverage": round(len(covered) / len(graph.edges), 4) if graph.edges else 1.0,
        }
    cross = sum(len(t.envs) > 1 for t in tasks)
    kill = [t.quality.get("kill_rate", 0.0) for t in tasks]
    return {
        "tasks": len(tasks),
        "cross_env_share": round(cross / len(tasks), 4) if tasks else 0.0,
        "envs": per_env,
        "cross_edges_covered": len(coverage.cross),
        "chain_length": histogram(len(accepted_steps(t)) for t in tasks),
        "turns": histogram(len(t.turns) for t in tasks),
        "distractors": histogram(len(t.provenance.get("distractors", [])) for t in tasks),
        "error_recovery_tasks": sum(bool(t.provenance.get("steps")) for t in tasks),
        "mean_kill_rate": round(sum(kill) / len(kill), 4) if kill else 0.0,
        "leaks": sum(len(t.quality.get("leaks", [])) for t in tasks),
        "attempts": sum(s.attempts for s in shards),
        "rejected": dict(sorted(sum((s.rejected for s in shards), Counter[str]()).items())),
        "rejected_crossing_chains": dict(
            sorted(sum((s.rejected_cross for s in shards), Counter[str]()).items())
        ),
        "adversarial": adversarial_rate(s.validated for s in shards),
        **corpus_measures(tasks),
    }


def edge_key(env: str, src: str, dst: str) -> str:
    """The key of a tool edge in the shards' ``executed`` counters: ``env.src>dst``."""
    return f"{env}.{src}>{dst}"


def summarize(
    tasks: Sequence[Task], reports: Sequence[ValidationReport], stats: dict[str, Any] | None
) -> dict[str, Any]:
    """The figures ``envcraft tasks check`` prints for a whole task set (leaks recomputed from the text)."""
    n = len(reports)
    total = sum(len(r.mutations) for r in reports)
    by_kind: dict[str, list[int]] = {}
    for report in reports:
        for m in report.mutations:
            counts = by_kind.setdefault(m.kind, [0, 0])
            counts[0] += m.killed
            counts[1] += 1
    leaks = {t.id: len(find_leaks(t)) for t in tasks}
    policies: dict[str, list[int]] = {}
    for report in reports:
        for trial, score in report.trials:
            counts = policies.setdefault(trial.kind, [0, 0])
            counts[0] += trial.passes(score)
            counts[1] += 1
    return {
        "tasks": n,
        "valid": sum(r.valid for r in reports),
        "adversarial_pass_rate": _rate(sum(not r.failed_policies for r in reports), n),
        "adversarial_by_policy": {k: {"passed": v[0], "runs": v[1]} for k, v in sorted(policies.items())},
        "golden_pass_rate": _rate(sum(r.golden_score >= 1.0 and r.hash_ok for r in reports), n),
        "noop_fail_rate": _rate(sum(r.noop_score < KILLED_BELOW for r in reports), n),
        "kill_rate": _rate(sum(r.killed for r in reports), total) if total else 1.0,
        "mutations": total,
        "kill_rate_by_kind": {k: _rate(v[0], v[1]) for k, v in sorted(by_kind.items())},
        "leaks": sum(leaks.values()),
        "leaky_tasks": [task_id for task_id, count in leaks.items() if count],
        "cross_env_rate": _rate(sum(len(t.envs) > 1 for t in tasks), len(tasks)),
        "edge_coverage": _edge_coverage(stats),
        "chain_lengths": histogram(len(t.reference.calls) for t in tasks),
        "turns": histogram(len(t.turns) for t in tasks),
        "invalid": [
            {
                "task_id": r.task_id,
                "errors": r.errors,
                "survivors": r.survivors,
                "noop_score": r.noop_score,
                "failed_policies": r.failed_policies,
            }
            for r in reports
            if not r.valid
        ],
    }


def _edge_coverage(stats: dict[str, Any] | None) -> dict[str, float] | None:
    """Per-environment share of reachable tool edges the set covers, as the generator's stats record it."""
    envs = (stats or {}).get("envs")
    if not isinstance(envs, dict):
        return None
    found = {
        env: info["edge_coverage"]
        for env, info in envs.items()
        if isinstance(info, dict) and "edge_coverage" in info
    }
    return found or None


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0
