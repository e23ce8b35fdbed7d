"""Environment synthesis: scenario specs, archetype retrieval, prompts, audits and repair."""

from envcraft.synth.catalog import Scenario, get_scenario, load_catalog, scenarios
from envcraft.synth.retrieval import (
    ARCHETYPE_KEYWORDS,
    ArchetypeScore,
    rank_archetypes,
    retrieve_archetypes,
    score_archetypes,
)
from envcraft.synth.spec import ScenarioSpec, SpecError, load_spec

__all__ = [
    "ARCHETYPE_KEYWORDS",
    "ArchetypeScore",
    "Scenario",
    "ScenarioSpec",
    "SpecError",
    "get_scenario",
    "load_catalog",
    "load_spec",
    "rank_archetypes",
    "retrieve_archetypes",
    "scenarios",
    "score_archetypes",
]
