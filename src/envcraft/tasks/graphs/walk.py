"""Weighted random walks over the tool graphs: the tool chains tasks are made from.

A walk is 2–8 steps long, follows dependency edges, and contains at least one tool that
can change state or files (a chain of pure reads gives a verifier nothing to check). Edge
choice is weighted toward edges the accepted corpus has not covered yet
(``1 / (1 + uses)^2``), and away from tools that keep failing in golden runs. With
probability ``p_cross`` a walk crosses into another environment along a workflow edge. Walks
are a pure function of the graphs, the coverage counts and the seeded ``random.Random``.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from envcraft.core.phrasing import Job
from envcraft.tasks.graphs.graph import ToolGraph, WorkflowGraph
from envcraft.tasks.values.args import id_kind

MIN_LEN, MAX_LEN = 2, 8
LENGTH_WEIGHTS = (6, 6, 5, 4, 3, 2, 1)  # for lengths 2..8: short chains are likelier to run
DEEP_MAX_LEN = 12  # the longest walk of a deeper corpus (``min_len`` above MIN_LEN)
# Arguments are programs or whole file contents: nothing sensible to sample (a file the user wants
# written comes from envcraft.tasks.world.requests instead).
NOT_WALKED = frozenset({"shell", "write_file", "edit_file"})
SYSTEM_WEIGHT = 0.25
P_CREATOR = 0.7  # chance to insert a creating tool before a step that needs what it creates


@dataclass(frozen=True)
class Step:
    env: str
    tool: str


@dataclass
class Coverage:
    """How often each edge appears in accepted tasks, and how tools fare in golden runs."""

    edges: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (env, src, dst)
    cross: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)  # (env, src, env, dst)
    ok: Counter[tuple[str, str]] = field(default_factory=Counter)
    failed: Counter[tuple[str, str]] = field(default_factory=Counter)
    executed: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # ran in a golden run
    feeds: Counter[tuple[str, str, str, bool]] = field(default_factory=Counter)  # (env, src, dst, ok)
    jobs: Counter[tuple[str, str]] = field(default_factory=Counter)  # (env, job name) asked in accepted tasks
    jobs_refused: Counter[tuple[str, str]] = field(default_factory=Counter)  # (env, job name) walked, no task

    def accept(self, chain: list[Step], graphs: dict[str, ToolGraph]) -> None:
        """Count the edges of an accepted chain (consecutive steps that are graph edges)."""
        for a, b in itertools.pairwise(chain):
            if a.env == b.env and (a.tool, b.tool) in graphs[a.env].edges:
                self.edges[(a.env, a.tool, b.tool)] += 1
            elif a.env != b.env:
                self.cross[(a.env, a.tool, b.env, b.tool)] += 1

    def observe(self, chain: list[Step], graphs: Mapping[str, ToolGraph]) -> None:
        """Count edges a golden run executed (both calls succeeded, one after the other), whether
        or not its task is accepted: evidence that the edge is reachable at all."""
        for a, b in itertools.pairwise(chain):
            if a.env == b.env and (a.tool, b.tool) in graphs[a.env].edges:
                self.executed[(a.env, a.tool, b.tool)] += 1

    def record(self, step: Step, succeeded: bool) -> None:
        (self.ok if succeeded else self.failed)[(step.env, step.tool)] += 1

    def feed(self, env: str, src: str, dst: str, ok: bool) -> None:
        """A call of ``dst`` using a value derived from ``src`` succeeded or failed."""
        self.feeds[(env, src, dst, ok)] += 1

    def feed_weight(self, env: str, src: str, dst: str) -> float:
        ok, failed = self.feeds[(env, src, dst, True)], self.feeds[(env, src, dst, False)]
        return ((ok + 1) / (ok + failed + 2)) ** 2

    def tool_weight(self, step: Step) -> float:
        key = (step.env, step.tool)
        return 1.0 if self.ok[key] else 1.0 / (1.0 + self.failed[key])


def sample_walk(
    graphs: dict[str, ToolGraph],
    workflow: WorkflowGraph,
    start_env: str,
    rng: random.Random,
    coverage: Coverage,
    p_cross: float = 0.3,
    min_len: int = MIN_LEN,
) -> list[Step] | None:
    """One chain starting in ``start_env`` (crossing out of it with probability ``p_cross``);
    None when no valid chain came out of this draw (the caller draws again). With ``min_len``
    above :data:`MIN_LEN` (a deeper corpus) the walk is ``min_len`` to :data:`DEEP_MAX_LEN`
    steps, any length alike."""
    if min_len > MIN_LEN:
        length = rng.randint(min(min_len, DEEP_MAX_LEN), DEEP_MAX_LEN)
    else:
        length = rng.choices(range(MIN_LEN, MAX_LEN + 1), weights=LENGTH_WEIGHTS)[0]
    crossings = [
        e
        for e in workflow.edges
        if e.src_env == start_env
        and e.dst_env in graphs
        and _walkable(graphs[e.src_env], e.src)
        and _walkable(graphs[e.dst_env], e.dst)
    ]
    if crossings and rng.random() < p_cross:
        weights = [
            _cross_weight(coverage, e.src_env, e.src, e.dst_env, e.dst)
            * coverage.tool_weight(Step(e.src_env, e.src))
            * coverage.tool_weight(Step(e.dst_env, e.dst))
            * (CARRIES if _can_carry(graphs, e.src_env, e.dst_env, e.dst) else 1.0)
            for e in crossings
        ]
        edge = rng.choices(crossings, weights=weights)[0]
        head_len = rng.randint(1, max(1, length - 1))
        head = _backward(graphs[edge.src_env], edge.src, head_len, rng, coverage)
        tail = _forward(graphs[edge.dst_env], Step(edge.dst_env, edge.dst), length - len(head), rng, coverage)
        chain = head + tail
    else:
        start = _start(graphs[start_env], rng, coverage)
        if start is None:
            return None
        chain = _forward(graphs[start_env], start, length, rng, coverage)
    limit = DEEP_MAX_LEN if min_len > MIN_LEN else MAX_LEN
    finished = _end_with_change(chain, graphs, rng, coverage, limit)
    if finished is None:
        return None
    finished = _with_creators(finished, graphs, rng, coverage, limit)
    return finished if len(finished) >= MIN_LEN else None


def job_walk(env: str, jobs: Sequence[Job], rng: random.Random, coverage: Coverage) -> tuple[Job, list[Step]]:
    """The steps of one of the environment's declared jobs, a job the accepted corpus asked
    for less often likelier (``1 / (1 + uses)^2``) and one that came out as no task more often
    less likely (times the square of its share of walks that made one, smoothed; once would not
    outweigh the first): the work the desk exists
    for, with its preconditions in order, which a random walk over a dense tool graph seldom
    strings together (the lookups each step needs are added later, by the lookup stage).
    Weighted by use alone, a job the world seldom lets through was walked ever again."""
    weights = [_job_weight(coverage.jobs[(env, j.name)], coverage.jobs_refused[(env, j.name)]) for j in jobs]
    job = rng.choices(list(jobs), weights=weights)[0]
    return job, [Step(env, tool) for tool in job.steps]


def _job_weight(uses: int, refused: int) -> float:
    return ((uses + 1) / (uses + refused + 2)) ** 2 / (1 + uses) ** 2


def continue_walk(
    graphs: dict[str, ToolGraph], last: Step, length: int, rng: random.Random, coverage: Coverage
) -> list[Step] | None:
    """A follow-up of ``length`` steps or fewer along the out-edges of ``last`` (the last step of
    a job already made), ending in a change; None when the graph offers none. A deeper corpus
    grows a job that came out short with it rather than throwing the job away."""
    graph = graphs[last.env]
    first = _next(graph, last.tool, rng, coverage)
    if first is None:
        return None
    chain = _forward(graph, first, length, rng, coverage)
    finished = _end_with_change(chain, graphs, rng, coverage, max(length, MIN_LEN))
    return None if finished is None else _with_creators(finished, graphs, rng, coverage, DEEP_MAX_LEN)


CARRIES = 4.0  # weight of a crossing that can carry a value over (free text, or a Claw workspace)
_FREE_TEXT = ("note", "notes", "message", "body", "text", "comment", "memo", "summary", "title")


def _can_carry(graphs: Mapping[str, ToolGraph], src_env: str, dst_env: str, dst: str) -> bool:
    """A crossing into a tool that takes free text, or into or out of a Claw environment (whose
    workspace can hold a file with the other environment's values)."""
    node = graphs[dst_env].nodes[dst]
    text = any(
        p.split("_")[-1] in _FREE_TEXT and prop.get("type") == "string" for p, prop in node.params.items()
    )
    return text or graphs[dst_env].kind == "claw" or graphs[src_env].kind == "claw"


def _walkable(graph: ToolGraph, tool: str) -> bool:
    return tool not in NOT_WALKED and tool in graph.nodes


def _edge_weight(coverage: Coverage, env: str, src: str, dst: str) -> float:
    return 1.0 / (1.0 + coverage.edges[(env, src, dst)]) ** 2


def _cross_weight(coverage: Coverage, src_env: str, src: str, dst_env: str, dst: str) -> float:
    return 1.0 / (1.0 + coverage.cross[(src_env, src, dst_env, dst)]) ** 2


def _node_weight(graph: ToolGraph, step: Step, coverage: Coverage) -> float:
    base = SYSTEM_WEIGHT if graph.nodes[step.tool].system else 1.0
    return base * coverage.tool_weight(step)


def _start(graph: ToolGraph, rng: random.Random, coverage: Coverage) -> Step | None:
    """A first tool, weighted by how much uncovered ground its outgoing edges offer."""
    steps = [Step(graph.env, t) for t in sorted(graph.nodes) if _walkable(graph, t)]
    weights = [
        _node_weight(graph, s, coverage)
        * (0.05 + sum(_edge_weight(coverage, graph.env, s.tool, e.dst) for e in graph.successors(s.tool)))
        for s in steps
    ]
    if not steps or sum(weights) <= 0:
        return None
    return rng.choices(steps, weights=weights)[0]


def _forward(
    graph: ToolGraph, start: Step, length: int, rng: random.Random, coverage: Coverage
) -> list[Step]:
    chain = [start]
    while len(chain) < length:
        repeat = len(chain) >= 2 and chain[-1] == chain[-2]
        nxt = _next(graph, chain[-1].tool, rng, coverage, avoid_self=repeat)
        if nxt is None:
            break
        chain.append(nxt)
    return chain


def _next(
    graph: ToolGraph, tool: str, rng: random.Random, coverage: Coverage, avoid_self: bool = False
) -> Step | None:
    """The next step along an out-edge (``avoid_self``: no third call of the same tool in a row)."""
    options = [
        Step(graph.env, e.dst)
        for e in graph.successors(tool)
        if _walkable(graph, e.dst) and not (avoid_self and e.dst == tool)
    ]
    if not options:
        return None
    weights = [
        _edge_weight(coverage, graph.env, tool, s.tool) * _node_weight(graph, s, coverage) for s in options
    ]
    return rng.choices(options, weights=weights)[0]


def _backward(graph: ToolGraph, end: str, length: int, rng: random.Random, coverage: Coverage) -> list[Step]:
    """A path of ``length`` steps that ends at ``end`` (walking edges in reverse)."""
    chain = [Step(graph.env, end)]
    while len(chain) < length:
        head = chain[0].tool
        options = [Step(graph.env, s) for (s, d) in sorted(graph.edges) if d == head and _walkable(graph, s)]
        if not options:
            break
        weights = [
            _edge_weight(coverage, graph.env, s.tool, head) * _node_weight(graph, s, coverage)
            for s in options
        ]
        chain.insert(0, rng.choices(options, weights=weights)[0])
    return chain


def _with_creators(
    chain: list[Step],
    graphs: Mapping[str, ToolGraph],
    rng: random.Random,
    coverage: Coverage,
    limit: int = MAX_LEN,
) -> list[Step]:
    """Put a creating tool before a step that needs an id no earlier step minted
    (``begin_transaction`` before ``add_transfer_line``): S0 may hold no usable one, so the
    step would otherwise be dropped and the edge into it never covered. Only where the chain
    keeps following edges and stays within ``limit`` steps."""
    out: list[Step] = []
    for i, step in enumerate(chain):
        graph = graphs[step.env]
        prev = out[-1] if out else None
        for param in graph.nodes[step.tool].required:
            kind = id_kind(param)
            if kind is None or len(out) + len(chain) - i >= limit:
                continue
            if any(s.env == step.env and _creates(graph, s.tool, kind) for s in out):
                continue
            creators = sorted(
                t
                for t in graph.nodes
                if _creates(graph, t, kind)
                and (t, step.tool) in graph.edges
                and _walkable(graph, t)
                and (prev is None or (prev.env == step.env and (prev.tool, t) in graph.edges))
            )
            if creators and rng.random() < P_CREATOR:
                weights = [coverage.feed_weight(step.env, t, step.tool) for t in creators]
                out.append(Step(step.env, rng.choices(creators, weights=weights)[0]))
                break
        out.append(step)
    return out


def _creates(graph: ToolGraph, tool: str, kind: str) -> bool:
    """A mutating tool that mints ids of ``kind`` (outputs them without taking one as input)."""
    node = graph.nodes[tool]
    return node.mutates and kind in node.produces and kind not in node.consumes


def _end_with_change(
    chain: list[Step],
    graphs: dict[str, ToolGraph],
    rng: random.Random,
    coverage: Coverage,
    limit: int = MAX_LEN,
) -> list[Step] | None:
    """Make sure the chain changes something: extend it toward a mutating tool if it does not."""

    def mutates(step: Step) -> bool:
        return graphs[step.env].nodes[step.tool].mutates

    while not any(mutates(s) for s in chain) and len(chain) < limit:
        graph = graphs[chain[-1].env]
        options = [
            Step(graph.env, e.dst)
            for e in graph.successors(chain[-1].tool)
            if _walkable(graph, e.dst) and graph.nodes[e.dst].mutates
        ]
        nxt = rng.choice(options) if options else _next(graph, chain[-1].tool, rng, coverage)
        if nxt is None:
            return None
        chain.append(nxt)
    return chain if any(mutates(s) for s in chain) else None
