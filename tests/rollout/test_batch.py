"""`eval`, `tasks calibrate` and `tasks inspect` over Batch API files (`--batch BDIR`).

Each round is the real command line; the answers are written as a Batch API provider writes
them by :func:`envcraft.llm.answer_batch`, over the real protocol from a local server holding
the scripted model (the oracle policy, a fixed rubric). The same model answers the live runs
over the same protocol, so a batch run must end where the live one does.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from envcraft.cli.main import app
from envcraft.llm import ChatRequest, ChatServer, OpenAIProvider, ProviderConfig, ReplayProvider, answer_batch
from envcraft.llm.batch import REQUESTS_FILE, RESPONSES_DIR
from envcraft.rollout.policies import OracleProvider
from envcraft.tasks.format.io import read_tasks, write_tasks
from envcraft.tasks.format.model import Task

from .test_cli import envcraft, one_line_error

MAX_ROUNDS = 30


def cli(*args: str | Path) -> Any:
    """One run of the command line in process; its ``--json`` answer."""
    result = CliRunner().invoke(app, [*map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def answer(batch: Path, server: ChatServer, name: str, only: int | None = None) -> int:
    """Answer the waiting requests (the first ``only`` of them) into ``responses/NAME.jsonl``."""
    lines = (batch / REQUESTS_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    chosen = batch.parent / f"{name}-input.jsonl"
    chosen.write_text("".join(lines[:only]), encoding="utf-8")
    model = OpenAIProvider(ProviderConfig(model="served", base_url=server.url, timeout=30.0))

    async def main() -> dict[str, int]:
        try:
            return await answer_batch(chosen, batch / RESPONSES_DIR / f"{name}.jsonl", model)
        finally:
            await model.aclose()

    counts = asyncio.run(main())
    assert counts["failed"] == 0
    return counts["answered"]


def until_done(command: list[str | Path], batch: Path, server: ChatServer) -> tuple[Any, int]:
    """Run ``command`` and answer its requests until it is done; its last answer and the rounds."""
    for rounds in range(1, MAX_ROUNDS):
        result = cli(*command, "--batch", batch)
        if result.get("status") != "waiting":
            return result, rounds
        answer(batch, server, f"round{rounds}")
    raise AssertionError("the batch run never finished")


def pick(tasks: list[Task]) -> list[Task]:
    """A single-env Claw task, a cross-env task and a multi-turn tool task."""
    return [
        next(t for t in tasks if t.kind == "claw" and len(t.envs) == 1),
        next(t for t in tasks if len(t.envs) > 1),
        next(t for t in tasks if t.kind == "tool" and len(t.turns) >= 2),
    ]


def outcomes(path: Path) -> dict[tuple[str, int], Any]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {(r["task_id"], r["sample"]): (r["reward"], r["passed"], r["turns"], r["stop"]) for r in rows}


# -- eval ---------------------------------------------------------------------------------------
def test_eval_over_batch_ends_with_the_live_rewards_and_resumes_after_partial_answers(
    tasks: list[Task], tmp_path: Path
) -> None:
    chosen = pick(tasks)
    source = tmp_path / "set"
    write_tasks(source, chosen)
    batch, out = tmp_path / "batch", tmp_path / "out"
    command: list[str | Path] = ["eval", source, "--model", "oracle", "--k", "2", "--out", out]
    with ChatServer(OracleProvider(chosen)) as server:
        live = cli("eval", source, "--model", "oracle", "--k", "2", "--out", tmp_path / "live")
        first = cli(*command, "--batch", batch)
        assert (first["status"], first["rollouts"], first["waiting"], first["requests"]) == (
            "waiting",
            6,
            6,
            6,
        )
        lines = [json.loads(x) for x in (batch / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()]
        assert all(
            (x["method"], x["url"], x["body"]["model"], len(x["custom_id"]))
            == ("POST", "/v1/chat/completions", "oracle", 64)
            for x in lines
        )
        assert not (out / "trajectories.jsonl").read_text(encoding="utf-8")
        # a partial round: two of six answered; those two rollouts advance, the other four wait as they were
        answer(batch, server, "partial", only=2)
        before = (batch / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()
        second = cli(*command, "--batch", batch)
        assert second["status"] == "waiting" and second["waiting"] == 6
        after = (batch / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()
        assert after[: len(before) - 2] == before[2:] and len(after) == 6  # the same ids, plus 2 next steps
        done, rounds = until_done(command, batch, server)
    assert done["overall"] == live["overall"] and done["tasks"] == live["tasks"]
    assert outcomes(out / "trajectories.jsonl") == outcomes(tmp_path / "live" / "trajectories.jsonl")
    assert done["overall"]["pass@1"] == 1.0 and rounds >= 3  # one round per model step
    assert json.loads((out / "eval.json").read_text(encoding="utf-8"))["meta"]["batch"] == str(batch)


def test_a_malformed_answer_line_is_one_error_and_loses_nothing(tasks: list[Task], tmp_path: Path) -> None:
    chosen = pick(tasks)[2:]
    source = tmp_path / "set"
    write_tasks(source, chosen)
    batch, out = tmp_path / "batch", tmp_path / "out"
    command: list[str | Path] = ["eval", source, "--model", "oracle", "--out", out]
    with ChatServer(OracleProvider(chosen)) as server:
        cli(*command, "--batch", batch)
        answer(batch, server, "good")
        waiting = (batch / REQUESTS_FILE).read_bytes()
        with open(batch / RESPONSES_DIR / "good.jsonl", "a", encoding="utf-8") as handle:
            handle.write('{"custom_id": "abc", "response": {"status_code": 200, "bo\n')
        bad = envcraft(*command, "--batch", batch)
        one_line_error(bad, 2, f"{batch / RESPONSES_DIR / 'good.jsonl'} line 2: not a JSON line")
        assert len(bad.stderr.strip().splitlines()) == 1
        assert (batch / REQUESTS_FILE).read_bytes() == waiting
        assert not (out / "trajectories.jsonl").read_text(encoding="utf-8")
        # the line taken out again, the run goes on from the answers it had
        good = (batch / RESPONSES_DIR / "good.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (batch / RESPONSES_DIR / "good.jsonl").write_text(good[0], encoding="utf-8")
        done, _ = until_done(command, batch, server)
    assert done["overall"]["pass@1"] == 1.0


def test_batch_refuses_a_server_and_shards(task_dir: Path, tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    one_line_error(
        envcraft("eval", task_dir, "--model", "m", "--batch", batch, "--base-url", "http://127.0.0.1:9/v1"),
        2,
        "--batch and --base-url",
    )
    one_line_error(
        envcraft("eval", task_dir, "--model", "m", "--batch", batch, "--workers", "2"), 2, "--batch"
    )


# -- calibrate ----------------------------------------------------------------------------------
def test_calibrate_over_batch_writes_the_tasks_once_every_rollout_is_done(
    tasks: list[Task], tmp_path: Path
) -> None:
    chosen = pick(tasks)[:1]
    source = tmp_path / "set"
    write_tasks(source, chosen)
    original = (source / "tasks.jsonl").read_bytes()
    batch = tmp_path / "batch"
    command: list[str | Path] = ["tasks", "calibrate", source, "--model", "oracle", "--k", "2"]
    with ChatServer(OracleProvider(chosen)) as server:
        first = cli(*command, "--batch", batch)
        assert (first["status"], first["waiting"]) == ("waiting", 2)
        assert (source / "tasks.jsonl").read_bytes() == original  # nothing written while rollouts wait
        report, _ = until_done(command, batch, server)
    assert report["bands"] == {"too_easy": 1}
    assert read_tasks(source)[0].difficulty["pass_rate"] == 1.0


# -- inspect ------------------------------------------------------------------------------------
def verdict(solvability: int, validation: int, consistency: int) -> str:
    scores = {"solvability": solvability, "validation": validation, "consistency": consistency}
    return json.dumps({name: {"score": s, "reason": f"{name} looks {s}"} for name, s in scores.items()})


def test_inspect_over_batch_gives_the_live_rubric(tasks: list[Task], tmp_path: Path) -> None:
    claw, cross, tool = pick(tasks)
    answers = {
        claw.id: [verdict(3, 3, 2)],
        cross.id: ["```json\n" + verdict(3, 3, 3) + "\n```", verdict(3, 2, 3)],  # refused, then asked again
        tool.id: ["I think it is fine", '{"solvability": 3}'],
    }

    def inspector(request: ChatRequest) -> str:
        record = request.messages[1]["content"]
        task_id = next(i for i in answers if f"# Task {i} " in record)
        return answers[task_id][sum(1 for m in request.messages if m["role"] == "assistant")]

    live, batched = tmp_path / "live", tmp_path / "batched"
    write_tasks(live, [claw, cross, tool])
    shutil.copytree(live, batched)
    original = (batched / "tasks.jsonl").read_bytes()
    batch = tmp_path / "batch"
    with ChatServer(ReplayProvider([inspector] * 20)) as server:
        cli("tasks", "inspect", live, "--model", "judge", "--base-url", server.url)
        command: list[str | Path] = ["tasks", "inspect", batched, "--model", "judge"]
        first = cli(*command, "--batch", batch)
        assert (first["status"], first["tasks"], first["waiting"], first["requests"]) == ("waiting", 3, 3, 3)
        assert (batched / "tasks.jsonl").read_bytes() == original
        done, rounds = until_done(command, batch, server)
    assert (done["tasks"], done["kept"], done["errors"], rounds) == (
        3,
        1,
        1,
        3,
    )  # the re-asked two: a 2nd round
    rubric = {t.id: t.quality["rubric"] for t in read_tasks(batched)}
    assert rubric == {t.id: t.quality["rubric"] for t in read_tasks(live)}
    assert rubric[cross.id]["attempts"] == 2 and rubric[claw.id]["keep"] is True


# -- envcraft llm answer ------------------------------------------------------------------------
def test_llm_answer_answers_each_round_offline_and_leaves_unanswerable_requests_waiting(
    tasks: list[Task], tmp_path: Path
) -> None:
    chosen = pick(tasks)[2:]
    source = tmp_path / "set"
    write_tasks(source, chosen)
    batch, out = tmp_path / "batch", tmp_path / "out"
    command: list[str | Path] = ["eval", source, "--model", "oracle", "--out", out, "--batch", batch]
    assert cli(*command)["status"] == "waiting"
    waiting = (batch / REQUESTS_FILE).read_bytes()
    dead = envcraft("llm", "answer", batch, "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    one_line_error(dead, 1, "no answer to any of 1 requests")
    assert (batch / REQUESTS_FILE).read_bytes() == waiting and not list((batch / RESPONSES_DIR).iterdir())
    for _ in range(MAX_ROUNDS):
        answered = cli("llm", "answer", batch, "--model", "oracle", "--tasks", source)
        assert (answered["answered"], answered["failed"], answered["skipped"]) == (1, 0, 0)
        result = cli(*command)
        if result.get("status") != "waiting":
            break
    assert result["overall"]["pass@1"] == 1.0
    assert len(list((batch / RESPONSES_DIR).glob("answers-*.jsonl"))) == result["overall"]["mean_steps"]
