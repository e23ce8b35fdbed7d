"""Tool profiles: OpenClaw's and Claude Code's tools over the same sessions, scored the same.

A task is played call by call through an Episode in each profile, then its trajectory is
scored by ``envcraft tasks score`` (a real process replaying the canonical calls). A
correct agent scores 1 in every profile; a wrong agent scores the same below 1 in every
profile; a call that no profile tool maps can never become a real call on replay.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envcraft.core.skills import format_skills_for_prompt
from envcraft.sandbox.profiles import SYSTEM_TOOLS, result_text
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.verifier.scoring import run_verifier
from integrations.interop_support import (
    interop_tasks,
    player_calls,
    skipped_turn,
    tasks_score,
    write_task_set,
)

from .conftest import requires_bwrap

PROFILE_NAMES = ("envcraft", "openclaw", "claude-code")


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return interop_tasks()


@pytest.fixture(scope="module")
def task_dir(tasks: dict[str, Task], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task_set(tmp_path_factory.mktemp("tasks"), tasks)


def _play(task: Task, profile: str, skip_turn: int | None = None) -> tuple[float, dict]:
    with Episode.open(task, profile=profile) as episode:
        for turn, calls in enumerate(player_calls(task, profile)):
            for name, args in calls if turn != skip_turn else []:
                result = episode.call_exposed(name, args)
                assert "error" not in result, (name, args, result)
            episode.end_turn()
        live = run_verifier(task, episode.outcome()).score
        return live, episode.trajectory(task.id)


@requires_bwrap
@pytest.mark.parametrize("kind", ["claw", "cross"])
@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_the_reference_played_in_any_profile_scores_one_live_and_through_tasks_score(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path, kind: str, profile: str
) -> None:
    task = tasks[kind]
    live, trajectory = _play(task, profile)
    assert live == 1.0
    assert tasks_score(task_dir, trajectory, tmp_path) == 1.0
    stored = {call["tool"] for turn in trajectory["turns"] for call in turn}
    domain = {call.tool for call in task.reference.calls} - SYSTEM_TOOLS
    assert stored <= SYSTEM_TOOLS | domain, stored  # canonical calls only, whatever the profile


@requires_bwrap
@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_a_skipped_turn_scores_the_same_below_one_in_every_profile(
    tasks: dict[str, Task], task_dir: Path, tmp_path: Path, profile: str
) -> None:
    task = tasks["cross"]
    live, trajectory = _play(task, profile, skip_turn=skipped_turn(task))
    assert live < 1.0
    assert tasks_score(task_dir, trajectory, tmp_path) == live


def test_each_profile_shows_its_harness_tools_and_the_domain_tools(tasks: dict[str, Task]) -> None:
    expected = {
        "envcraft": {"shell", "read_file", "write_file", "edit_file", "list_files"},
        "openclaw": {"read", "write", "edit", "exec", "process"},
        "claude-code": {"Bash", "Read", "Write", "Edit"},
    }
    for profile, system in expected.items():
        with Episode.open(tasks["cross"], profile=profile) as episode:
            names = {t.name for t in episode.tools()}
            shown = {t.name for t in episode.tools() if t.system}
            assert shown == system, profile
            assert {"add_action_item", "list_messages"} <= names
            assert len(episode.openai_tools()) == len(names)
    with Episode.open(tasks["claw"], profile="openclaw") as episode:
        edit = next(t for t in episode.openai_tools() if t["function"]["name"] == "edit")["function"]
        item = edit["parameters"]["properties"]["edits"]["items"]
        assert edit["parameters"]["required"] == ["path", "edits"]
        assert set(item["properties"]) == {"oldText", "newText"}
        exec_ = next(t for t in episode.openai_tools() if t["function"]["name"] == "exec")["function"]
        assert {"command", "workdir", "timeout", "env", "yieldMs", "background"} <= set(
            exec_["parameters"]["properties"]
        )


@requires_bwrap
def test_skills_are_in_the_workspace_where_openclaw_looks_and_listed_as_it_lists_them(
    tasks: dict[str, Task],
) -> None:
    with Episode.open(tasks["cross"], profile="openclaw") as episode:
        skills = episode.skills()
        assert {s.name for s in skills} >= {"track-action-items", "triage-inbox"}
        prompt = episode.skills_prompt()
        assert prompt.startswith("## Skills (mandatory)") and "with `read`" in prompt
        assert format_skills_for_prompt(skills).strip() in prompt
        for skill in skills:
            assert skill.location == f"/workspace/skills/{skill.name}/SKILL.md"
            assert f"<location>{skill.location}</location>" in prompt
            text = result_text(episode.call_exposed("read", {"path": skill.location}))
            assert f"name: {skill.name}" in text
        listed = episode.call_exposed("exec", {"command": "ls skills"})
        assert "triage-inbox" in result_text(listed)
    with Episode.open(tasks["cross"]) as canonical:  # the canonical profile places nothing
        assert canonical.skills() == [] and canonical.skills_prompt() == ""
        assert not any(p.startswith("skills/") for p in canonical.files())


@requires_bwrap
def test_multi_edit_is_all_or_nothing_and_stored_as_one_canonical_write(tasks: dict[str, Task]) -> None:
    with Episode.open(tasks["claw"], profile="openclaw") as episode:
        episode.call_exposed("write", {"path": "/workspace/plan.md", "content": "alpha beta gamma\n"})
        bad = episode.call_exposed(
            "edit",
            {
                "path": "plan.md",
                "edits": [{"oldText": "alpha", "newText": "A"}, {"oldText": "zeta", "newText": "Z"}],
            },
        )
        assert bad["error"]["category"] == "not_found"
        assert episode.files()["plan.md"] == "alpha beta gamma\n"
        good = episode.call_exposed(
            "edit",
            {
                "path": "plan.md",
                "edits": [{"oldText": "gamma", "newText": "G"}, {"oldText": "alpha", "newText": "A"}],
            },
        )
        assert "error" not in good and episode.files()["plan.md"] == "A beta G\n"
        tools = [(a.tool, a.args) for a in episode.actions]
    assert tools[0] == ("write_file", {"path": "plan.md", "content": "alpha beta gamma\n"})
    assert tools[1][0] == "openclaw:edit"  # failed before any canonical call: inert on replay
    assert tools[2] == ("write_file", {"path": "plan.md", "content": "A beta G\n"})


@requires_bwrap
def test_calls_no_tool_maps_are_inert_on_replay_and_keep_the_clock(
    tasks: dict[str, Task], tmp_path: Path
) -> None:
    """An OpenClaw agent calling the canonical `write_file` (not its tool) writes nothing, live
    or when its trajectory is scored: the unknown name is stored as `openclaw:write_file`."""
    task = tasks["claw"]
    with Episode.open(task, profile="openclaw") as episode:
        refused = episode.call_exposed("write_file", {"path": "planted.txt", "content": "x"})
        listed = episode.call_exposed("process", {"action": "list"})
        polled = episode.call_exposed("process", {"action": "poll", "sessionId": "s1"})
        missing = episode.call_exposed("read", {})
        assert refused["error"]["category"] == "not_found"
        assert "error" not in listed and polled["error"]["category"] == "not_found"
        assert missing["error"]["category"] == "missing_field"
        session = next(iter(episode.sessions.values()))
        assert len(session.actions()) == 4  # one action index per agent call
        trajectory = episode.trajectory(task.id)
        outcome = episode.outcome()
    assert "planted.txt" not in outcome.files
    from envcraft.tasks.play.execute import execute

    replayed = execute(task, trajectory["turns"])
    assert "planted.txt" not in replayed.files
    assert replayed.final == outcome.final


@requires_bwrap
def test_exec_options_map_onto_the_sandboxed_shell(tasks: dict[str, Task]) -> None:
    with Episode.open(tasks["claw"], profile="openclaw") as episode:
        ran = episode.call_exposed(
            "exec",
            {
                "command": "pwd; echo $GREETING",
                "workdir": "/workspace/notes",
                "env": {"GREETING": "hi"},
                "timeout": 9999,
            },
        )
        assert result_text(ran).splitlines() == ["/workspace/notes", "hi"]
        assert episode.actions[-1].args["timeout"] == 120  # clamped to the environment's limit
        failed = episode.call_exposed("exec", {"command": "exit 4"})
        assert failed["details"]["exitCode"] == 4 and "exited with code 4" in result_text(failed)
        refused = episode.call_exposed("exec", {"command": "id", "elevated": True})
        assert refused["error"]["category"] == "permission_denied"
        lines = episode.call_exposed("read", {"path": "action_items.csv", "offset": 2, "limit": 1})
        assert "Use offset=3 to continue" in result_text(lines)
        numbered = Episode.open(tasks["claw"], profile="claude-code")
        with numbered:
            text = result_text(
                numbered.call_exposed("Read", {"file_path": "/workspace/action_items.csv", "limit": 1})
            )
            assert text.startswith("     1\titem_id,")


def test_an_unknown_profile_is_a_clear_error(tasks: dict[str, Task]) -> None:
    with pytest.raises(ValueError, match="unknown tool profile 'hermes'"):
        Episode.open(tasks["claw"], profile="hermes")
