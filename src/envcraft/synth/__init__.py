"""Environment synthesis: the scenario catalog and archetype retrieval it starts from."""

from envcraft.synth.catalog import Scenario, get_scenario, load_catalog, scenarios
from envcraft.synth.retrieval import ARCHETYPE_KEYWORDS, retrieve_archetypes, score_archetypes

__all__ = [
    "ARCHETYPE_KEYWORDS",
    "Scenario",
    "get_scenario",
    "load_catalog",
    "retrieve_archetypes",
    "scenarios",
    "score_archetypes",
]
