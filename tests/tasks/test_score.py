"""`envcraft tasks score`: agent trajectories replayed from S0 and scored, bad lines reported in place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.tasks.format.io import write_tasks
from envcraft.tasks.verifier.scoring import score_trajectory
from envcraft.tasks.verifier.synthesis import synthesize_verifier

from .verify_support import make_task


def inc(name: str, by: int) -> dict[str, Any]:
    return {"env": "counter", "tool": "increment", "args": {"name": name, "by": by}}


def counter_task_dir(tmp_path: Path) -> Path:
    turns = [[inc("a", 2)], [inc("b", 5)]]
    task, golden = make_task(turns, initial={"counter": {"counters": {"z": 1}}}, task_id="count-1")
    verifier = synthesize_verifier(task.initial_state, task.workspace, golden)
    assert verifier is not None
    task.verifier = verifier
    write_tasks(tmp_path / "set", [task])
    return tmp_path / "set"


def run_score(directory: Path, lines: list[str], tmp_path: Path) -> tuple[int, list[dict[str, Any]]]:
    path = tmp_path / "trajectories.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = CliRunner().invoke(app, ["tasks", "score", str(directory), "--trajectories", str(path), "--json"])
    return done.exit_code, [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_each_trajectory_gets_one_line_and_bad_lines_do_not_stop_the_file(tmp_path: Path) -> None:
    directory = counter_task_dir(tmp_path)
    lines = [
        json.dumps({"task_id": "count-1", "turns": [[inc("a", 2)], [inc("b", 5)]]}),
        json.dumps(
            {
                "task_id": "count-1",
                "turns": [
                    [{"env": "counter", "tool": "get", "args": {"name": "z"}}, inc("a", 2)],
                    [{"env": "counter", "tool": "get", "args": {"name": "a"}}, inc("b", 5)],
                ],
            }
        ),
        json.dumps({"task_id": "count-1", "turns": [[inc("a", 2)]]}),
        json.dumps({"task_id": "count-1", "turns": []}),
        json.dumps({"task_id": "nope", "turns": []}),
        "{this is not json",
        json.dumps(["a", "list"]),
        json.dumps({"task_id": "count-1", "turns": "later"}),
        json.dumps(
            {
                "task_id": "count-1",
                "turns": [
                    [
                        {"env": "counter", "tool": "fly"},
                        {"env": "counter", "tool": "increment", "args": {"by": "x"}},
                        {"env": "mars", "tool": "land"},
                        7,
                        inc("a", 2),
                    ],
                    [inc("b", 5)],
                ],
            }
        ),
    ]
    code, rows = run_score(directory, lines, tmp_path)
    assert code == 0
    assert [r["line"] for r in rows] == list(range(1, 10))
    scores = [r["score"] for r in rows]
    assert scores[0] == 1.0 and scores[1] == 1.0  # a different correct run scores 1 too
    assert 0.0 < scores[2] < 1.0 and scores[3] == 0.0
    assert scores[4:8] == [None] * 4
    assert "unknown task id 'nope'" in rows[4]["error"]
    assert "not valid JSON" in rows[5]["error"]
    assert "JSON object" in rows[6]["error"]
    assert "list of lists" in rows[7]["error"]
    assert scores[8] == 1.0  # failed calls (unknown tool or env, bad args, junk) are just failed calls
    assert set(rows[0]) >= {"task_id", "score", "components"}


def test_a_lines_own_keys_come_back_beside_its_score(tmp_path: Path) -> None:
    """A caller tags runs ("label", "what"): the tags come back with each score, so scores match
    runs by more than line order; the scorer's own keys are never the line's."""
    directory = counter_task_dir(tmp_path)
    right = {"task_id": "count-1", "label": "right", "turns": [[inc("a", 2)], [inc("b", 5)]]}
    wrong = {
        "task_id": "count-1",
        "label": "wrong",
        "what": "turn 2 skipped",
        "score": 1.0,
        "turns": [[inc("a", 2)]],
    }
    code, rows = run_score(directory, [json.dumps(right), json.dumps(wrong)], tmp_path)
    assert code == 0
    assert [(r["label"], r["score"]) for r in rows] == [("right", 1.0), ("wrong", rows[1]["score"])]
    assert rows[1]["what"] == "turn 2 skipped" and rows[1]["score"] < 1.0  # its own "score" is not kept
    assert "turns" not in rows[0] and rows[1]["line"] == 2


def test_a_file_with_nothing_scorable_exits_non_zero(tmp_path: Path) -> None:
    directory = counter_task_dir(tmp_path)
    code, rows = run_score(directory, ['{"task_id": "ghost", "turns": []}'], tmp_path)
    assert code == 1 and rows[0]["error"]
    done = CliRunner().invoke(app, ["tasks", "score", str(directory), "--trajectories", str(tmp_path / "no")])
    assert done.exit_code == 2


def test_human_output_lists_every_line(tmp_path: Path) -> None:
    directory = counter_task_dir(tmp_path)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"task_id": "count-1", "turns": [[inc("a", 2)], [inc("b", 5)]]}) + "\njunk\n")
    done = CliRunner().invoke(app, ["tasks", "score", str(directory), "--trajectories", str(path)])
    assert done.exit_code == 0
    assert "1.000" in done.stdout and "mean score 1.000 over 1" in done.stdout


def test_human_output_says_how_many_calls_were_refused(tmp_path: Path) -> None:
    """A wrong argument name scores as the call never made: the table says the call was refused."""
    directory = counter_task_dir(tmp_path)
    path = tmp_path / "t.jsonl"
    wrong = {"env": "counter", "tool": "increment", "args": {"counter": "a", "by": 2}}
    path.write_text(json.dumps({"task_id": "count-1", "turns": [[wrong], [inc("b", 5)]]}) + "\n")
    done = CliRunner().invoke(app, ["tasks", "score", str(directory), "--trajectories", str(path)])
    assert done.exit_code == 0
    assert "1 call refused" in done.stdout


def test_score_trajectory_reports_an_unloadable_task(tmp_path: Path) -> None:
    task, _ = make_task([[inc("a", 2)]])
    task.provenance["packages"] = {"counter": str(tmp_path / "gone")}
    task.envs = ["counter"]
    result = score_trajectory(task, [[inc("a", 2)]])
    assert result.score == 0.0 and result.error and "no environment" in result.error


def test_undecodable_and_deep_lines_fail_alone(tmp_path: Path) -> None:
    """Regression: a non-UTF-8 or deeply nested line raised and no other trajectory was scored."""
    directory = counter_task_dir(tmp_path)
    good = json.dumps({"task_id": "count-1", "turns": [[inc("a", 2)], [inc("b", 5)]]}).encode()
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join([good, b'{"task_id": "caf\xe9"}', b"[" * 3000 + b"]" * 3000, good]) + b"\n")
    done = CliRunner().invoke(app, ["tasks", "score", str(directory), "--trajectories", str(path), "--json"])
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [row["line"] for row in rows] == [1, 2, 3, 4]
    assert rows[0]["score"] == 1.0 and rows[3]["score"] == 1.0
    assert "UTF-8" in rows[1]["error"] and "nested" in rows[2]["error"]
    assert done.exit_code == 0
