"""`envcraft eval --workers N` / `--executor ray`: shards of rollouts give the in-process results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .test_cli import envcraft, ok_json, one_line_error

# What a rollout did and earned; timings and the order of lines may differ between executors.
SAME = ("turns", "reward", "passed", "tokens", "steps", "tool_calls", "tool_errors", "stop", "messages")


def played(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    lines = (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    by_pair = {(r["task_id"], r["sample"]): {k: r[k] for k in SAME} for r in records}
    assert len(by_pair) == len(records)  # no rollout played twice
    return by_pair


def evaluate(task_dir: Path, out: Path, model: str, *extra: str) -> dict[str, Any]:
    args = ("eval", task_dir, "--model", model, "--k", "2", "--limit", "6", "--out", out, "--json")
    summary: dict[str, Any] = ok_json(envcraft(*args, *extra))
    return summary


@pytest.mark.parametrize("model", ["oracle", "random"])
def test_shards_on_processes_give_the_in_process_trajectories(
    task_dir: Path, tmp_path: Path, model: str
) -> None:
    here = evaluate(task_dir, tmp_path / "here", model)
    shards = evaluate(task_dir, tmp_path / "shards", model, "--workers", "2")
    assert played(tmp_path / "shards") == played(tmp_path / "here")
    assert len(played(tmp_path / "here")) == 12
    for figure in ("pass@1", "pass@k", "mean_reward", "mean_tokens", "trajectories"):
        assert shards["overall"][figure] == here["overall"][figure]
    assert here["overall"]["pass@1"] == (1.0 if model == "oracle" else 0.0)


def test_sharded_eval_resumes_and_refuses_another_models_file(task_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    ok_json(envcraft("eval", task_dir, "--model", "oracle", "--limit", "2", "--out", out, "--json"))
    first = (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    again = ok_json(
        envcraft(
            "eval", task_dir, "--model", "oracle", "--limit", "5", "--workers", "2", "--out", out, "--json"
        )
    )
    after = (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    assert after[:2] == first and len(after) == 5 and again["overall"]["pass@1"] == 1.0
    other = envcraft("eval", task_dir, "--model", "random", "--limit", "5", "--workers", "2", "--out", out)
    one_line_error(other, 2, "holds trajectories of model 'oracle'")
    one_line_error(
        envcraft("eval", task_dir, "--model", "oracle", "--executor", "dask"), 2, "unknown executor"
    )


@pytest.mark.slow
def test_ray_shards_give_the_in_process_trajectories(task_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    here = evaluate(task_dir, tmp_path / "here", "oracle")
    on_ray = evaluate(task_dir, tmp_path / "ray", "oracle", "--executor", "ray", "--workers", "2")
    assert played(tmp_path / "ray") == played(tmp_path / "here")
    assert on_ray["overall"]["pass@1"] == here["overall"]["pass@1"] == 1.0
    assert on_ray["meta"]["executor"] == "ray"
