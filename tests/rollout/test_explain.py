"""A player can see why (issue 20 item 7), through the real console script.

`tasks score --explain` itemizes a declarative verifier's checks, its score's sum and the failed
calls (and says so when a verifier is code it cannot itemize); `tasks show` shows the user turns
revealed so far; `tasks play --next` on a new play directory opens it on turn 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envcraft.tasks.format.io import write_tasks
from envcraft.tasks.format.model import Task, Verifier

from .test_cli import envcraft, ok_json, one_line_error


def calls_of(task: Task, turn: int) -> list[dict[str, Any]]:
    return [{"env": c.env, "tool": c.tool, "args": c.args} for c in task.reference.calls if c.turn == turn]


def flat(text: str) -> str:
    return " ".join(text.split())


def write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def bad_call(task: Task) -> dict[str, Any]:
    """A call that fails: a tool the task's first environment does not have."""
    return {"env": task.envs[0], "tool": "no_such_tool", "args": {}}


# -- tasks score --explain ----------------------------------------------------------------------
def test_score_explain_itemizes_every_check_the_sum_and_the_failed_calls(
    task_dir: Path, tool_task: Task, tmp_path: Path
) -> None:
    golden = {"task_id": tool_task.id, "turns": [calls_of(tool_task, t) for t in range(len(tool_task.turns))]}
    idle = {"task_id": tool_task.id, "turns": [[bad_call(tool_task)]]}  # nothing done, one failed call
    path = write_lines(tmp_path / "runs.jsonl", [golden, idle])

    plain = envcraft("tasks", "score", task_dir, "--trajectories", path, "--json")
    assert plain.returncode == 0, plain.stderr
    explained = envcraft("tasks", "score", task_dir, "--trajectories", path, "--json", "--explain")
    assert explained.returncode == 0, explained.stderr
    before = [json.loads(line) for line in plain.stdout.splitlines()]
    rows = [json.loads(line) for line in explained.stdout.splitlines()]
    assert [{k: v for k, v in row.items() if k != "explain"} for row in rows] == before  # same scores
    assert "explain" not in before[0]
    assert before[0]["failed_calls"] == [] and before[1]["failed_calls"] == rows[1]["explain"]["failed_calls"]

    good, wrong = rows[0]["explain"], rows[1]["explain"]
    assert good["itemized"] and all(c["passed"] for c in good["checks"]) and good["failed_calls"] == []
    assert wrong["itemized"] and [c["name"] for c in wrong["checks"]] == list(rows[1]["components"])
    goals = [c for c in wrong["checks"] if c["role"] == "goal"]
    assert goals and not any(c["passed"] for c in goals)
    assert all(c["expected"] and c["had"] for c in wrong["checks"] if not c["passed"])
    assert all("expected" not in c for c in wrong["checks"] if c["passed"])
    sums = wrong["arithmetic"]
    assert sums["goal_mean"] == 0.0 and sums["harm"] == 0.5
    assert sums["guards_broken"] == sum(not c["passed"] for c in wrong["checks"] if c["role"] == "guard")
    assert 0 < sums["harms"] <= sums["guards_broken"]
    assert sums["score"] == rows[1]["score"] == sums["goal_mean"] * 0.5 ** sums["harms"]
    [failed] = wrong["failed_calls"]
    env = tool_task.envs[0]
    assert (failed["turn"], failed["call"], failed["env"], failed["tool"]) == (1, 1, env, "no_such_tool")
    assert failed["code"] and failed["message"]

    hinted = envcraft("tasks", "score", task_dir, "--trajectories", path)
    assert "(--explain says why" in hinted.stdout and "FAIL" not in hinted.stdout  # a score below 1
    shown = envcraft("tasks", "score", task_dir, "--trajectories", path, "--explain")
    assert shown.returncode == 0, shown.stderr
    text = flat(shown.stdout)
    failing_goal = goals[0]
    assert f"FAIL goal {failing_goal['name']} expected: {failing_goal['expected']}" in text
    assert f"had: {failing_goal['had']}" in text
    assert f"score = goal weight 0/{sums['goal_wanted']:g} = 0.000 x 0.5^{sums['harms']}" in text
    assert f"failed calls (1): turn 1 call 1: {env}.no_such_tool {{}} -> {failed['code']}" in text
    assert "failed calls: none" in text  # the golden run's


def test_score_explain_says_when_a_verifier_is_code_and_still_lists_the_failed_calls(
    tool_task: Task, tmp_path: Path
) -> None:
    coded = tool_task.model_copy(deep=True)
    source = 'def verify(ctx):\n    return {"score": 0.25, "components": {"looked": 0.25}}\n'
    coded.verifier = Verifier(source=source)
    write_tasks(tmp_path / "set", [coded])
    path = write_lines(tmp_path / "runs.jsonl", [{"task_id": coded.id, "turns": [[bad_call(coded)]]}])

    [row] = [
        json.loads(line)
        for line in ok_json_lines(
            envcraft("tasks", "score", tmp_path / "set", "--trajectories", path, "--json", "--explain")
        )
    ]
    assert row["score"] == 0.25 and row["explain"]["itemized"] is False and row["explain"]["checks"] is None
    assert "not itemized" in row["explain"]["note"] and len(row["explain"]["failed_calls"]) == 1
    shown = flat(envcraft("tasks", "score", tmp_path / "set", "--trajectories", path, "--explain").stdout)
    assert "checks are not itemized" in shown and "component looked: 0.250" in shown
    assert "failed calls (1): turn 1 call 1:" in shown


def ok_json_lines(proc: Any) -> list[str]:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if line.strip()]


# -- tasks show: the turns revealed so far ------------------------------------------------------
def test_show_reveals_only_the_turns_the_play_has_reached(
    task_dir: Path, tool_task: Task, tmp_path: Path
) -> None:
    first, second = (flat(t.user) for t in tool_task.turns[:2])
    fresh = flat(envcraft("tasks", "show", task_dir, tool_task.id, cwd=tmp_path).stdout)
    assert first in fresh and second not in fresh and "not revealed yet" in fresh
    info = ok_json(envcraft("tasks", "show", task_dir, tool_task.id, "--json", cwd=tmp_path))
    assert info["turns"] == [tool_task.turns[0].user] and info["turn_count"] == len(tool_task.turns)
    for every in ("--all", "--reveal"):  # --reveal shows the reference, so every turn, as it did
        shown = ok_json(envcraft("tasks", "show", task_dir, tool_task.id, every, "--json", cwd=tmp_path))
        assert shown["turns"] == [t.user for t in tool_task.turns]
    # as text, --reveal lists the checks one a line, not the runtime's source
    revealed = envcraft("tasks", "show", task_dir, tool_task.id, "--reveal", cwd=tmp_path).stdout
    first_check = tool_task.verifier.checks[0]
    assert f"{first_check['role']} {first_check['weight']:g}: {first_check['name']}" in revealed
    assert tool_task.verifier.source not in revealed and len(revealed.splitlines()) < 400

    # a play in the default directory (./play-TASK) has reached turn 2: show reveals turns 1-2
    assert envcraft("tasks", "play", task_dir, tool_task.id, cwd=tmp_path).returncode == 0
    moved = envcraft("tasks", "play", task_dir, tool_task.id, "--next", cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr
    info = ok_json(envcraft("tasks", "show", task_dir, tool_task.id, "--json", cwd=tmp_path))
    assert info["turns"] == [t.user for t in tool_task.turns[:2]]
    # elsewhere, the play is named with --dir
    [play_dir] = [p for p in tmp_path.iterdir() if p.name.startswith("play-")]
    shown = flat(envcraft("tasks", "show", task_dir, tool_task.id, "--dir", play_dir).stdout)
    assert first in shown and second in shown
    one_line_error(
        envcraft("tasks", "show", task_dir, tool_task.id, "--dir", tmp_path / "none"),
        2,
        "not a play directory",
    )


# -- tasks play --next on a new play directory --------------------------------------------------
def test_play_next_on_a_new_directory_opens_it_on_turn_one(
    task_dir: Path, tool_task: Task, tmp_path: Path
) -> None:
    play_dir = tmp_path / "play"
    opened = envcraft("tasks", "play", task_dir, tool_task.id, "--dir", play_dir, "--next")
    assert opened.returncode == 0, opened.stderr
    said = flat(opened.stdout)
    assert f"turn 1/{len(tool_task.turns)}: {flat(tool_task.turns[0].user)}" in said
    assert f"--session {play_dir / 'sessions' / tool_task.envs[0]}" in said
    state = json.loads((play_dir / "play.json").read_text(encoding="utf-8"))
    assert state["turn"] == 0 and state["turns"] == []  # no empty turn recorded for a turn never seen

    again = ok_json(
        envcraft("tasks", "play", task_dir, tool_task.id, "--dir", tmp_path / "j", "--next", "--json")
    )
    assert again["turn"] == 1 and again["user"] == tool_task.turns[0].user

    for turn in range(len(tool_task.turns)):
        for call in calls_of(tool_task, turn):
            session = play_dir / "sessions" / call["env"]
            done = envcraft(
                "call", call["env"], call["tool"], "--args", json.dumps(call["args"]), "--session", session
            )
            assert done.returncode == 0, done.stdout
        moved = ok_json(
            envcraft("tasks", "play", task_dir, tool_task.id, "--dir", play_dir, "--next", "--json")
        )
    assert moved["done"] is True and moved["score"]["score"] == 1.0
    trajectory = json.loads((play_dir / "trajectory.jsonl").read_text(encoding="utf-8"))
    assert trajectory["turns"] == [calls_of(tool_task, t) for t in range(len(tool_task.turns))]


def test_score_explain_names_the_row_a_written_table_lacks(
    task_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    """A file goal says which expected row the file does not hold, not just both whole texts."""
    task, write = next(
        (t, c)
        for t in tasks
        for c in t.reference.calls
        if c.tool == "write_file"
        and any(
            k["kind"] == "file" and k["path"] == c.args["path"] and k["format"] == "csv"
            for k in t.verifier.checks
        )
    )
    kept = write.args["content"].rstrip("\n").split("\n")[:-1]  # the last row left out
    turns = [calls_of(task, t) for t in range(len(task.turns))]
    for call in turns[write.turn]:
        if call["tool"] == "write_file" and call["args"]["path"] == write.args["path"]:
            call["args"] = {**call["args"], "content": "\n".join(kept) + "\n"}
    path = write_lines(tmp_path / "runs.jsonl", [{"task_id": task.id, "turns": turns}])
    [row] = [
        json.loads(line)
        for line in ok_json_lines(
            envcraft("tasks", "score", task_dir, "--trajectories", path, "--json", "--explain")
        )
    ]
    [failed] = [c for c in row["explain"]["checks"] if not c["passed"] and c["kind"] == "file"]
    assert failed["expected"].startswith(f"{write.args['path']} rows [")
    assert failed["had"] == f"no such row; {len(kept) - 1} rows"  # the header is no row
    assert row["score"] < 1.0


def test_score_explain_says_which_words_broke_a_dictated_text(
    task_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    """A text goal that fails says why in words ("other words around them: 'Correction'"), not
    only the pattern and the whole text (the audit could not tell which word broke a to-do)."""
    task, call, name = next(
        (t, c, k)
        for t in tasks
        for c in t.reference.calls
        if c.tool not in ("write_file", "edit_file")
        for k, v in c.args.items()
        if isinstance(v, str)
        and " " in v
        and v in json.dumps(t.verifier.checks)
        and any(op in json.dumps(t.verifier.checks) for op in ('"$says"', '"$text"'))
    )
    turns = [calls_of(task, t) for t in range(len(task.turns))]
    text = call.args[name]
    for sent in turns[call.turn]:
        if sent["tool"] == call.tool and sent["args"].get(name) == text:
            sent["args"] = {**sent["args"], name: f"{text} Correction: ignore this."}
    path = write_lines(tmp_path / "runs.jsonl", [{"task_id": task.id, "turns": turns}])
    done = envcraft("tasks", "score", task_dir, "--trajectories", path, "--explain")
    assert done.returncode == 0, done.stderr
    assert "reading:  other words around them: 'Correction', 'ignore', 'this'" in done.stdout


def test_score_explain_names_the_file_nobody_asked_for(
    task_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    """The guard "no other workspace file created" says which file broke it (round 14, helpers RB
    and RC saw only "?")."""
    task, env = next(
        (t, c.env)
        for t in tasks
        if any(k["kind"] == "no_new_files" for k in t.verifier.checks)
        for c in t.reference.calls
        if c.tool == "write_file"
    )
    turns = [calls_of(task, t) for t in range(len(task.turns))]
    turns[-1].append(
        {"env": env, "tool": "write_file", "args": {"path": "scratch/unasked.md", "content": "x\n"}}
    )
    path = write_lines(tmp_path / "runs.jsonl", [{"task_id": task.id, "turns": turns}])
    [row] = [
        json.loads(line)
        for line in ok_json_lines(
            envcraft("tasks", "score", task_dir, "--trajectories", path, "--json", "--explain")
        )
    ]
    [failed] = [c for c in row["explain"]["checks"] if not c["passed"] and c["kind"] == "no_new_files"]
    assert failed["had"] == "also created: scratch/unasked.md", failed
    assert row["score"] < 1.0
