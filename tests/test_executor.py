"""envcraft.executor: the same jobs give the same results in-process, on a process pool and on Ray."""

from __future__ import annotations

import operator
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.executor import ExecutorError, LocalExecutor, open_executor


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is not allowed")
    return x


def results(kind: str, workers: int) -> dict[int, int]:
    # a library function, so that Ray's workers can import it (this test module is not on their path)
    with open_executor(kind, workers=workers) as executor:
        return dict(executor.run(operator.mul, [(x, x) for x in range(12)]))


def test_local_executor_runs_in_process_or_on_a_pool() -> None:
    serial = list(LocalExecutor(1).run(square_and_pid, [(x,) for x in range(5)]))
    assert [i for i, _ in serial] == list(range(5)) and {pid for _, (_, pid) in serial} == {os.getpid()}
    pooled = dict(LocalExecutor(2).run(square_and_pid, [(x,) for x in range(12)]))
    assert sorted(pooled) == list(range(12)) and all(pooled[i][0] == i * i for i in pooled)
    assert os.getpid() not in {pid for _, pid in pooled.values()}
    assert results("local", 1) == results("local", 2) == {i: i * i for i in range(12)}


def test_a_failing_job_reaches_the_caller() -> None:
    for workers in (1, 2):
        with pytest.raises(ValueError, match="three"):
            list(LocalExecutor(workers).run(fail_on_three, [(x,) for x in range(6)]))


def test_unknown_executor_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="unknown executor"), open_executor("dask"):
        pass
    args = ["tasks", "synth", "--envs", "notes_desk", "--n", "1", "--out", str(tmp_path)]
    done = CliRunner().invoke(app, [*args, "--executor", "dask"])
    assert done.exit_code == 2 and "unknown executor 'dask'" in done.output
    assert "Traceback" not in done.output and not (tmp_path / "tasks.jsonl").exists()


@pytest.mark.slow
def test_ray_gives_the_local_results_and_the_same_task_set(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    assert results("ray", 2) == results("local", 2)
    runner = CliRunner()
    outputs = {}
    for kind in ("local", "ray"):
        out = tmp_path / kind
        args = ["tasks", "synth", "--envs", "notes_desk,returns_desk", "--n", "4", "--seed", "3"]
        done = runner.invoke(app, [*args, "--workers", "2", "--executor", kind, "--out", str(out)])
        assert done.exit_code == 0, done.output
        outputs[kind] = (out / "tasks.jsonl").read_bytes()
    assert outputs["ray"] == outputs["local"] and outputs["local"].count(b"\n") >= 4
