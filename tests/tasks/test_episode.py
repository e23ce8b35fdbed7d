"""Episode: a task opened for play, call by call, must score as its calls do through `tasks score`."""

from __future__ import annotations

from pathlib import Path

import pytest

from envcraft.core.session import Session
from envcraft.core.workspace import Workspace
from envcraft.tasks.play.episode import Episode, populate
from envcraft.tasks.play.execute import reference_turns
from envcraft.tasks.play.outcome import ExecutionError
from envcraft.tasks.verifier.scoring import run_verifier, score_trajectory

from .verify_support import COUNTER, REPORTS_ENV, make_task, write_package

TWO_TURNS = [
    [{"env": "counter", "tool": "increment", "args": {"name": "a"}}],
    [{"env": "counter", "tool": "increment", "args": {"name": "a"}}],
]


def test_played_call_by_call_the_reference_scores_one_and_matches_execute() -> None:
    task, golden = make_task(TWO_TURNS)
    with Episode.open(task) as episode:
        assert episode.user_message == "turn 0"
        assert {t.name for t in episode.tools()} >= {"increment"}
        for turn in reference_turns(task):
            for call in turn:
                assert "error" not in episode.call(call["env"], call["tool"], call["args"])
            episode.end_turn()
        assert episode.done and episode.user_message is None
        outcome = episode.outcome()
        trajectory = episode.trajectory(task.id)
    assert outcome.final == golden.final
    assert [t.final for t in outcome.turns] == [t.final for t in golden.turns]
    assert run_verifier(task, outcome).score == 1.0
    assert score_trajectory(task, trajectory["turns"]).score == 1.0


def test_a_run_that_stops_after_the_first_turn_keeps_its_state_for_the_rest() -> None:
    task, _ = make_task(TWO_TURNS)
    with Episode.open(task) as episode:
        episode.call("counter", "increment", {"name": "a"})
        outcome = episode.outcome()  # the second turn was never reached
    assert len(outcome.turns) == 2
    assert outcome.turns[1].final == outcome.final
    assert run_verifier(task, outcome).score == 0.0


def test_unknown_tools_and_environments_are_failed_calls_that_are_recorded() -> None:
    task, _ = make_task(TWO_TURNS)
    with Episode.open(task) as episode:
        missing_tool = episode.call_exposed("no_such_tool", {})
        missing_env = episode.call("elsewhere", "increment", {"name": "a"})
        bad_args = episode.call("counter", "increment", {"nme": "a"})
        assert missing_tool["error"]["category"] == "not_found"
        assert missing_env["error"]["category"] == "not_found"
        assert "error" in bad_args
        assert len(episode.actions) == 3
        assert episode.outcome().final == episode.initial


def test_claw_episode_populates_one_shared_workspace_and_reports_its_files(tmp_path: Path) -> None:
    reports = write_package(tmp_path / "reports", "reports", "claw", REPORTS_ENV)
    turns = [[{"env": "reports", "tool": "export_sales", "args": {"region": "north"}}]]
    task, golden = make_task(
        turns,
        packages={"reports": str(reports), "counter": str(COUNTER)},
        workspace={"notes/todo.md": "call the supplier\n"},
        source="def verify(ctx):\n    return {'score': 1.0, 'components': {}}\n",
        kind="claw",
    )
    with Episode.open(task) as episode:
        assert episode.initial_files == {"notes/todo.md": "call the supplier\n"}
        read = episode.call_exposed("read_file", {"path": "notes/todo.md"})
        assert read["content"] == "call the supplier\n"
        episode.call("reports", "export_sales", {"region": "north"})
        root = episode.workspace.root if episode.workspace else None
        assert root is not None and (root / "out" / "sales.csv").is_file()
        files = episode.files()
    assert not root.exists()  # the temporary workspace goes with the episode
    assert files.keys() == golden.files.keys()  # (the read moved the clock: stamps differ)
    assert files["notes/todo.md"] == "call the supplier\n"


def test_durable_episode_is_a_set_of_session_directories_another_process_can_open(tmp_path: Path) -> None:
    reports = write_package(tmp_path / "reports", "reports", "claw", REPORTS_ENV)
    task, _ = make_task(
        [[{"env": "reports", "tool": "export_sales", "args": {"region": "south"}}]],
        packages={"reports": str(reports)},
        workspace={"a.txt": "x"},
        kind="claw",
    )
    play = tmp_path / "play"
    with Episode.open(task, directory=play):
        assert (play / "workspace" / "a.txt").read_text() == "x"
    reopened = Session.open(play / "sessions" / "reports")
    assert reopened.workspace_root == (play / "workspace").resolve()
    assert "error" not in reopened.call("export_sales", {"region": "south"})
    assert (play / "workspace" / "out" / "sales.csv").is_file()
    assert play.is_dir()  # a durable episode keeps its directory


def test_clashing_domain_tool_names_are_exposed_with_their_environment(tmp_path: Path) -> None:
    twin = write_package(tmp_path / "twin", "twin", "tool", (COUNTER / "env.py").read_text())
    task, _ = make_task(TWO_TURNS, packages={"counter": str(COUNTER), "twin": str(twin)})
    with Episode.open(task) as episode:
        names = {t.name: (t.env, t.tool) for t in episode.tools()}
        assert names["counter__increment"] == ("counter", "increment")
        assert names["twin__increment"] == ("twin", "increment")
        assert "increment" not in names
        episode.call_exposed("twin__increment", {"name": "a"})
        assert episode.actions[-1].env == "twin"
        schemas = {s["function"]["name"] for s in episode.openai_tools()}
        assert schemas == set(names)


def test_an_initial_state_that_does_not_validate_is_an_execution_error() -> None:
    task, _ = make_task(TWO_TURNS)
    task.initial_state["counter"] = {"counters": "not a mapping"}
    with pytest.raises(ExecutionError, match="does not validate"):
        Episode.open(task)


def test_populate_confines_paths_and_does_not_follow_links_of_a_directory_in_use(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    populate(fresh, {"a/b/c.txt": "deep", "a/d.txt": "near", "top.md": "# top\n"})
    assert Workspace(fresh).snapshot() == {"a/b/c.txt": "deep", "a/d.txt": "near", "top.md": "# top\n"}
    for bad in ("../escape.txt", "/etc/passwd", "a/../../x", ".", "~/x"):
        with pytest.raises(ExecutionError, match="workspace file"):
            populate(tmp_path / "bad", {bad: "x"})
    outside = tmp_path / "outside"
    outside.mkdir()
    used = tmp_path / "used"
    used.mkdir()
    (used / "link").symlink_to(outside)
    with pytest.raises(ExecutionError, match="leaves the workspace"):
        populate(used, {"link/planted.txt": "x"})
    assert not (outside / "planted.txt").exists()


def test_a_closed_episode_keeps_its_last_outcome_and_refuses_to_make_a_new_one() -> None:
    task, golden = make_task(TWO_TURNS)
    with Episode.open(task) as episode:
        episode.call("counter", "increment", {"name": "a"})
        before = episode.outcome()
    assert episode.outcome().final == before.final  # nothing called since: the same snapshot
    assert "error" in episode.call("counter", "increment", {"name": "a"})
    with pytest.raises(ExecutionError, match="closed"):
        episode.outcome()
    with Episode.open(task) as again:  # the pooled session came back as S0
        assert again.outcome().final == golden.initial
