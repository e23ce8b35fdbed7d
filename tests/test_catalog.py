"""The scenario catalog against the paper's seed tables, the archetype retriever, and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from envcraft.core.package import ARCHETYPES
from envcraft.synth import (
    ARCHETYPE_KEYWORDS,
    Scenario,
    get_scenario,
    load_catalog,
    rank_archetypes,
    retrieve_archetypes,
    scenarios,
    score_archetypes,
)
from envcraft.synth.retrieval import VOCABULARY_WEIGHT

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
ENVCRAFT = Path(sys.executable).parent / "envcraft"
PAPER_ENV_TOTALS = {"general": 70, "claw": 69}  # paper Table 2: passed environments per kind
PAPER_SCENARIO_COUNTS = {"general": 41, "claw": 42}


@pytest.fixture(scope="module")
def seed_tables() -> str:
    """The appendix scenario tables (5-14) of the paper, as the seed text has them.

    They live in the project's ``shared/`` folder beside the checkout (as on developer
    machines and in CI), not in the repository itself.
    """
    found = sorted(SEEDS.glob("003_*.txt"))
    if not found:
        pytest.skip(f"paper seed tables not found under {SEEDS} (shared/ is not beside this checkout)")
    (path,) = found
    text = path.read_text(encoding="utf-8")
    return text[text.index("Fine-Grained Scenario") : text.index("Table 14:")]


def test_counts_match_the_paper() -> None:
    counts = Counter(s.category for s in load_catalog())
    assert counts == PAPER_SCENARIO_COUNTS
    assert len({s.id for s in load_catalog()}) == len(load_catalog())


def test_every_scenario_maps_to_one_or_two_known_archetypes() -> None:
    for scenario in load_catalog():
        assert 1 <= len(scenario.archetypes) <= 2
        assert set(scenario.archetypes) <= set(ARCHETYPES)
    used = {a for s in load_catalog() for a in s.archetypes}
    assert used == set(ARCHETYPES)  # every archetype anchors some scenario


def test_paper_rows_are_the_seed_rows(seed_tables: str) -> None:
    """Each numbered paper row appears as number, title, #envs, description; none is missing."""
    paper = [s for s in load_catalog() if s.source == "paper"]
    for s in paper:
        if s.number is not None:
            assert f"\n{s.number}\n{s.title}\n{s.n_envs}\n{s.description}\n" in seed_tables, s.id
        else:
            assert f"\n{s.description}\n" in seed_tables and s.n_envs is None, s.id
    seed_descriptions = {
        line
        for line in seed_tables.splitlines()
        if line.endswith(".") and (" supporting " in line or " covering " in line)
    }
    assert {s.description for s in paper} == seed_descriptions
    assert len(paper) == len(seed_descriptions) == 40


def test_added_rows_claim_nothing_from_the_paper(seed_tables: str) -> None:
    for s in scenarios():
        if s.source == "added":
            assert s.number is None and s.n_envs is None
            assert s.description not in seed_tables


def test_paper_numbers_and_env_counts_are_consistent() -> None:
    for category, total in PAPER_ENV_TOTALS.items():
        rows = scenarios(category)  # type: ignore[arg-type]
        numbers = [s.number for s in rows if s.number is not None]
        assert len(numbers) == len(set(numbers))
        assert all(1 <= n <= PAPER_SCENARIO_COUNTS[category] for n in numbers)
        assert sum(s.n_envs or 0 for s in rows) <= total


def test_lookup() -> None:
    scenario = get_scenario("support-ticketing")
    assert (scenario.category, scenario.number, scenario.n_envs) == ("general", 38, 1)
    assert [s.id for s in scenarios("claw")][:2] == [
        "office-email-automation",
        "ecommerce-logistics-management",
    ]
    with pytest.raises(KeyError, match="no scenario 'nope'"):
        get_scenario("nope")


@pytest.mark.parametrize(
    "change",
    [
        {"archetypes": ["chatbot"]},
        {"archetypes": ["temporal_scheduling", "temporal_scheduling"]},
        {"archetypes": list(ARCHETYPES[:3])},
        {"archetypes": []},
        {"id": "Bad_Id"},
        {"category": "web"},
        {"source": "guessed"},
    ],
)
def test_scenario_model_refuses_bad_rows(change: dict[str, object]) -> None:
    row = get_scenario("hotel-booking").model_dump() | change
    with pytest.raises(ValidationError):
        Scenario.model_validate(row)


# -- archetype retrieval -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "first"),
    [
        (
            "A ride-hailing platform that matches drivers to riders by distance and rating",
            "bilateral_matching",
        ),
        ("Nightly ETL jobs with dependencies, retries and a DAG of stages", "workflow_orchestration"),
        ("Ingest application logs and compute error metrics over a sliding window", "stream_processing"),
        ("Book meeting rooms in free time slots on team calendars", "temporal_scheduling"),
        (
            "Orders move from placed to shipped to delivered, with cancellations and refunds",
            "constraint_state_machine",
        ),
        (
            "Customer support chat where the agent asks the user to confirm before acting",
            "human_agent_interaction",
        ),
        ("Edit documents in a workspace with atomic commits and rollback", "transactional_workspace"),
        ("Extract tables from CSV files, merge them and write a summary report", "cross_tool_pipeline"),
        ("Send a notification when a webhook event triggers an alert", "async_event_trigger"),
    ],
)
def test_retrieval_picks_the_obvious_archetype(spec: str, first: str) -> None:
    assert retrieve_archetypes(spec)[0] == first


def test_retrieval_accepts_keywords_and_ranks_by_bm25() -> None:
    assert retrieve_archetypes(["state machine", "refund"], k=1) == ["constraint_state_machine"]
    scores = score_archetypes("a two-sided marketplace")
    assert max(scores, key=lambda a: scores[a]) == "bilateral_matching"
    assert retrieve_archetypes("zzzz qqqq xxyyzz") == []
    ranking = rank_archetypes("dispatch couriers to delivery orders")
    assert [s.rank for s in ranking] == list(range(1, 10))
    assert {s.archetype for s in ranking} == set(ARCHETYPES)
    assert all(s.score == s.documents + VOCABULARY_WEIGHT * s.vocabulary for s in ranking)
    assert ranking[0].reference == "rideshare_dispatch"


def test_retrieval_reads_the_reference_documents_not_only_the_vocabulary() -> None:
    """Words found only in a reference's ARCHETYPE.md, README or tool docs still rank it."""
    ranking = rank_archetypes("waitlist promotion of a coach")  # class_booking's vocabulary, not the list's
    assert ranking[0].archetype == "temporal_scheduling"
    assert ranking[0].vocabulary == 0 and ranking[0].documents > 0


def test_retrieval_agrees_with_the_hand_labels() -> None:
    """Descriptions alone (no keywords, no titles) retrieve a labelled archetype in the top two."""
    catalog = load_catalog()
    hits = sum(bool(set(retrieve_archetypes(s.description)) & set(s.archetypes)) for s in catalog)
    assert hits / len(catalog) >= 0.9


def test_keyword_lists_cover_the_nine_archetypes() -> None:
    assert tuple(ARCHETYPE_KEYWORDS) == ARCHETYPES
    words = [w for keywords in ARCHETYPE_KEYWORDS.values() for w in keywords]
    assert len(words) == len(set(words))  # a keyword belongs to one archetype


@given(st.text(max_size=300), st.integers(min_value=0, max_value=9))
def test_retrieval_properties(spec: str, k: int) -> None:
    result = retrieve_archetypes(spec, k=k)
    scores = score_archetypes(spec)
    assert len(result) <= k and len(set(result)) == len(result)
    assert all(scores[a] > 0 for a in result)
    assert [scores[a] for a in result] == sorted((scores[a] for a in result), reverse=True)
    left_out = [a for a in ARCHETYPES if a not in result]
    if len(result) < k:
        assert all(scores[a] == 0 for a in left_out)


# -- the command line, through the installed console script -----------------------------------
def envcraft(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENVCRAFT), *args], capture_output=True, text=True, timeout=60)


def test_cli_lists_scenarios() -> None:
    everything = envcraft("scenarios", "list", "--json")
    assert everything.returncode == 0
    rows = json.loads(everything.stdout)
    assert [r["id"] for r in rows] == [s.id for s in load_catalog()]
    claw = json.loads(envcraft("scenarios", "list", "--category", "claw", "--json").stdout)
    assert len(claw) == 42 and {r["category"] for r in claw} == {"claw"}
    table = envcraft("scenarios", "list", "--category", "general")
    assert table.returncode == 0 and "support-ticketing" in table.stdout and "41 scenarios" in table.stdout
    assert envcraft("scenarios", "list", "--category", "web").returncode == 2


def test_the_docs_say_how_many_rows_are_the_papers_and_how_many_were_added() -> None:
    """Regression (issue 23 item 15): the README called all 83 rows "the paper's 41 + 42"."""
    rows = load_catalog()
    paper = sum(s.source == "paper" for s in rows)
    added = sum(s.source == "added" for s in rows)
    root = Path(__file__).resolve().parents[1]
    readme = " ".join((root / "README.md").read_text(encoding="utf-8").split())
    line = readme.split("**A scenario catalog**")[1].split("* **")[0]
    assert f"{paper} rows are the paper's own" in line and f"{added} were written here" in line
    assert "the paper's 41" not in readme
    architecture = " ".join((root / "docs" / "architecture.md").read_text(encoding="utf-8").split())
    assert f"{paper} rows from the paper's tables, {added} added" in architecture
