"""Weighted random walks: determinism, length bounds, graph-following, coverage weighting, crossings."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from envcraft.core import load_package
from envcraft.tasks.graphs.graph import ToolGraph, WorkflowGraph, build_tool_graph, build_workflow_graph
from envcraft.tasks.graphs.walk import DEEP_MAX_LEN, MAX_LEN, MIN_LEN, Coverage, Step, sample_walk

COUNTER = Path(__file__).resolve().parents[1] / "fixtures" / "counter"
_GRAPHS: dict[str, ToolGraph] = {}


def graphs(*refs: str | Path) -> tuple[dict[str, ToolGraph], WorkflowGraph]:
    for ref in refs:
        if str(ref) not in _GRAPHS:
            _GRAPHS[str(ref)] = build_tool_graph(load_package(ref))
    chosen = {_GRAPHS[str(r)].env: _GRAPHS[str(r)] for r in refs}
    return chosen, build_workflow_graph(list(chosen.values()))


def walks(
    seed: int, count: int, start: str, *refs: str | Path, p_cross: float = 0.3
) -> list[list[Step] | None]:
    gs, workflow = graphs(*refs)
    rng, coverage = random.Random(seed), Coverage()
    return [sample_walk(gs, workflow, start, rng, coverage, p_cross) for _ in range(count)]


def test_same_seed_same_walks_other_seed_other_walks() -> None:
    first = walks(7, 40, "returns_desk", "returns_desk", "inventory_ledger")
    assert first == walks(7, 40, "returns_desk", "returns_desk", "inventory_ledger")
    assert first != walks(8, 40, "returns_desk", "returns_desk", "inventory_ledger")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), p_cross=st.sampled_from([0.0, 0.5, 1.0]))
def test_walks_follow_edges_within_bounds_and_change_something(seed: int, p_cross: float) -> None:
    gs, workflow = graphs("returns_desk", "inventory_ledger")
    cross_edges = {(e.src_env, e.src, e.dst_env, e.dst) for e in workflow.edges}
    for chain in walks(seed, 8, "returns_desk", "returns_desk", "inventory_ledger", p_cross=p_cross):
        if chain is None:
            continue
        assert MIN_LEN <= len(chain) <= MAX_LEN
        assert any(gs[s.env].nodes[s.tool].mutates for s in chain)
        for a, b in itertools.pairwise(chain):
            if a.env == b.env:
                assert (a.tool, b.tool) in gs[a.env].edges
            else:
                assert (a.env, a.tool, b.env, b.tool) in cross_edges


def test_a_deeper_corpus_walks_longer_within_its_bound() -> None:
    gs, workflow = graphs("returns_desk", "inventory_ledger")
    rng, coverage = random.Random(3), Coverage()
    deep = [sample_walk(gs, workflow, "inventory_ledger", rng, coverage, 0.0, min_len=6) for _ in range(60)]
    usual = [sample_walk(gs, workflow, "inventory_ledger", rng, coverage, 0.0) for _ in range(60)]
    deep_lengths = [len(c) for c in deep if c is not None]
    usual_lengths = [len(c) for c in usual if c is not None]
    assert deep_lengths and max(deep_lengths) <= DEEP_MAX_LEN
    assert max(deep_lengths) > MAX_LEN
    assert sum(deep_lengths) / len(deep_lengths) > sum(usual_lengths) / len(usual_lengths) + 2


def test_walks_prefer_uncovered_edges() -> None:
    gs, workflow = graphs(COUNTER)
    coverage = Coverage()
    for src, dst in gs["counter"].edges:
        if (src, dst) != ("get", "increment"):
            coverage.edges[("counter", src, dst)] = 50
    rng = random.Random(3)
    chains = [sample_walk(gs, workflow, "counter", rng, coverage) for _ in range(40)]
    hits = sum(
        any((a.tool, b.tool) == ("get", "increment") for a, b in itertools.pairwise(c)) for c in chains if c
    )
    assert hits >= 30


def test_accepting_a_chain_counts_its_edges() -> None:
    gs, _ = graphs(COUNTER)
    coverage = Coverage()
    coverage.accept([Step("counter", "increment"), Step("counter", "get"), Step("counter", "increment")], gs)
    assert coverage.edges[("counter", "increment", "get")] == 1
    assert coverage.edges[("counter", "get", "increment")] == 1


def test_cross_probability_one_always_crosses_where_workflow_edges_exist() -> None:
    chains = [c for c in walks(5, 30, "returns_desk", "returns_desk", "inventory_ledger", p_cross=1.0) if c]
    assert chains and all(len({s.env for s in c}) == 2 for c in chains)
    assert not any(
        len({s.env for s in c}) > 1
        for c in walks(5, 30, "returns_desk", "returns_desk", "inventory_ledger", p_cross=0.0)
        if c
    )


def test_creator_is_put_before_a_step_that_needs_a_fresh_id() -> None:
    gs, workflow = graphs("inventory_ledger")
    rng, coverage = random.Random(11), Coverage()
    chains = [
        c for c in (sample_walk(gs, workflow, "inventory_ledger", rng, coverage) for _ in range(150)) if c
    ]
    # a journal line tool needs a draft journal: a journal-minting tool precedes it in most chains
    with_line = [c for c in chains if any(s.tool == "add_transfer_line" for s in c)]
    minted = [
        c
        for c in with_line
        if any(
            s.tool in ("begin_transaction", "ship_order", "reconcile_cycle_count")
            for s in c[: [s.tool for s in c].index("add_transfer_line")]
        )
    ]
    assert with_line and len(minted) >= len(with_line) // 2
