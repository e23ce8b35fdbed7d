"""The data engine on wrapped BFCL environments: effects read off BFCL's source, validated tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcraft.core import load_package
from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
from envcraft.tasks.graphs.graph import build_tool_graph

pytest.importorskip("bfcl_eval")
pytest.importorskip("mpmath")

from envcraft.integrations.bfcl import effects, importer, source


def test_effects_follow_aliases_helpers_and_object_methods() -> None:
    twitter = effects.class_effects("TwitterAPI")
    assert twitter["post_tweet"].writes == {"tweets", "tweet_counter"}
    assert twitter["mention"].writes == {"tweets"}  # tweet = self.tweets[id]; tweet["mentions"].extend(...)
    assert not twitter["get_tweet"].writes and "tweets" in twitter["get_tweet"].reads
    fs = effects.class_effects("GorillaFileSystem")
    assert fs["touch"].writes == {"_current_dir"}  # self._current_dir._add_file(...)
    assert not fs["cat"].writes and not fs["ls"].writes
    vehicle = effects.class_effects("VehicleControlAPI")
    assert not vehicle["get_current_speed"].writes and "_random" in vehicle["get_current_speed"].reads
    assert not effects.class_effects("TradingBot")["get_order_details"].writes  # edits a copy()
    assert all(not e.writes for e in effects.class_effects("MathAPI").values())


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("bfcl_envs")
    return {env: str(p.root) for env, p in importer.write_envs(out).items()}


def test_tool_graph_links_writers_to_readers(envs: dict[str, str]) -> None:
    graph = build_tool_graph(load_package(envs["bfcl_posting_api"]))
    assert graph.nodes["post_tweet"].mutates and not graph.nodes["get_tweet"].mutates
    assert ("post_tweet", "get_tweet") in graph.edges
    assert all(not n.mutates for n in build_tool_graph(load_package(envs["bfcl_math_api"])).nodes.values())


def test_synthesis_makes_validated_tasks_from_bfcl_scenarios(envs: dict[str, str]) -> None:
    library = load_library([envs["bfcl_ticket_api"]])
    shard = synthesize_shard(library, "bfcl_ticket_api", 0, 3, SynthConfig(seed=1, p_cross=0.0))
    assert len(shard.tasks) == 3, shard.to_json()
    for task in shard.tasks:
        assert (
            task.quality["valid"]
            and task.provenance["packages"]["bfcl_ticket_api"] == envs["bfcl_ticket_api"]
        )
        assert any(c.env == "bfcl_ticket_api" for c in task.reference.calls)
    assert Path(envs["bfcl_ticket_api"], "data", "scenarios.json").is_file()
    assert source.env_id("TicketAPI") == "bfcl_ticket_api"
