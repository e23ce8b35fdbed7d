"""The real console script: `envcraft eval` and `envcraft tasks show|play|calibrate|inspect`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from envcraft.core.package import load_package
from envcraft.llm import ChatRequest, ChatServer, OpenAIProvider, ProviderConfig, ReplayProvider
from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatResponse
from envcraft.rollout.policies import OracleProvider
from envcraft.tasks.format.io import read_tasks, write_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import advance_tool

ENVCRAFT = Path(sys.executable).parent / "envcraft"
KEY = "sk-cli-SECRET-51be07aa"


def envcraft(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
    return subprocess.run(
        [str(ENVCRAFT), *map(str, args)], capture_output=True, text=True, timeout=600, env=env, cwd=cwd
    )


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert fragment in proc.stderr and "Traceback" not in proc.stderr + proc.stdout


# -- eval ---------------------------------------------------------------------------------------
def test_eval_oracle_scores_one_and_random_near_zero(task_dir: Path, tmp_path: Path) -> None:
    oracle = ok_json(envcraft("eval", task_dir, "--model", "oracle", "--out", tmp_path / "o", "--json"))
    assert oracle["overall"]["pass@1"] == 1.0 and oracle["overall"]["mean_reward"] == 1.0
    assert set(oracle["by_kind"]) == {"tool", "claw", "cross-env"}
    assert oracle["overall"]["mean_tokens"] > 0
    report = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert report.count("<svg") == 4 and "pass@1" in report
    # a foreign referee: `tasks score` re-plays the trajectories in fresh sessions
    scored = envcraft(
        "tasks", "score", task_dir, "--trajectories", tmp_path / "o" / "trajectories.jsonl", "--json"
    )
    assert scored.returncode == 0
    assert {json.loads(line)["score"] for line in scored.stdout.splitlines()} == {1.0}

    random = ok_json(
        envcraft("eval", task_dir, "--model", "random", "--k", "2", "--out", tmp_path / "r", "--json")
    )
    assert random["overall"]["pass@1"] < 0.05 and random["overall"]["mean_reward"] < 0.1
    assert random["overall"]["trajectories"] == 2 * oracle["overall"]["tasks"]
    # random may stumble on a one-call task (the user's id is among its words); then it did the work
    by_id = {t.id: t for t in read_tasks(task_dir)}
    for line in (tmp_path / "r" / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        trajectory = json.loads(line)
        if trajectory["passed"]:
            made = [(c["tool"], c["args"]) for turn in trajectory["turns"] for c in turn]
            for call in by_id[trajectory["task_id"]].reference.calls:
                assert any(tool == call.tool and args.items() >= call.args.items() for tool, args in made), (
                    trajectory["task_id"],
                    call,
                )


def test_eval_resumes_from_its_output(task_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    ok_json(envcraft("eval", task_dir, "--model", "oracle", "--limit", "3", "--out", out, "--json"))
    lines = (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    again = ok_json(envcraft("eval", task_dir, "--model", "oracle", "--limit", "5", "--out", out, "--json"))
    after = (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()
    assert after[:3] == lines and len(after) == 5 and again["overall"]["trajectories"] == 5
    other = envcraft("eval", task_dir, "--model", "random", "--limit", "5", "--out", out)
    one_line_error(other, 2, "holds trajectories of model 'oracle'")
    assert (out / "trajectories.jsonl").read_text(encoding="utf-8").splitlines() == after


def test_eval_bad_input_is_one_line(task_dir: Path, tmp_path: Path) -> None:
    one_line_error(envcraft("eval", tmp_path / "nowhere", "--model", "oracle"), 2, "no tasks.jsonl")
    bare = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ENVCRAFT_BASE_URL")}
    one_line_error(envcraft("eval", task_dir, "--model", "gpt-x", env=bare), 2, "OPENAI_API_KEY")
    one_line_error(envcraft("eval", task_dir, "--model", "oracle", "--mode", "psychic"), 2, "--mode")
    dead = envcraft(
        "eval",
        task_dir,
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--limit",
        "2",
        "--max-steps",
        "1",
        "--out",
        tmp_path / "dead",
        env=bare,
    )
    one_line_error(dead, 1, "every rollout failed")


def test_the_key_from_the_environment_reaches_no_sandbox(claw_task: Task, tmp_path: Path) -> None:
    """`envcraft eval` with OPENAI_API_KEY set: an agent that dumps every process environment finds no key."""
    probe = "env; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; true"

    def snoop(request: ChatRequest) -> Any:
        if any(m["role"] == "tool" for m in request.messages):
            return "done"
        args = json.dumps({"command": probe})
        return {
            "role": "assistant",
            "tool_calls": [{"id": "s", "function": {"name": "exec", "arguments": args}}],
        }

    tasks_dir = tmp_path / "one"
    write_tasks(tasks_dir, [claw_task])
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    with ChatServer(ReplayProvider([snoop] * 40), api_key=KEY) as server:
        proc = envcraft(
            "eval",
            tasks_dir,
            "--model",
            "snoop",
            "--base-url",
            server.url,
            "--max-turns",
            "1",
            "--out",
            tmp_path / "out",
            "--json",
            env=env,
        )
    ok_json(proc)
    trajectory = json.loads((tmp_path / "out" / "trajectories.jsonl").read_text(encoding="utf-8"))
    shown = next(m["content"] for m in trajectory["messages"] if m["role"] == "tool")  # OpenClaw's exec text
    assert "ENVCRAFT_SESSION" in shown and "[Output truncated]" not in shown  # the probe ran, in full
    assert trajectory["turns"][0][0]["tool"] == "shell"
    assert trajectory["requests"] == 2  # the server took the key from the environment twice
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    assert KEY not in proc.stdout + proc.stderr


# -- calibrate ----------------------------------------------------------------------------------
class Coin(Provider):
    """Plays the reference on even samples and does nothing on odd ones: pass rate 1/2 on every task."""

    def __init__(self, tasks: list[Task]) -> None:
        super().__init__("coin")
        self.oracle = OracleProvider(tasks)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if int(str(request.user).rsplit("#", 1)[1]) % 2:
            return ChatResponse(message={"role": "assistant", "content": "nothing to do"})
        return await self.oracle.complete(request)


def test_calibrate_writes_difficulty_and_keeps_the_learnable_band(tasks: list[Task], tmp_path: Path) -> None:
    chosen = [
        next(t for t in tasks if t.kind == "claw" and len(t.envs) == 1),
        next(t for t in tasks if len(t.envs) > 1),
        next(t for t in tasks if t.kind == "tool"),
    ]
    source = tmp_path / "set"
    featured = [
        t.model_copy(update={"difficulty": {"features": {"calls": len(t.reference.calls)}}}) for t in chosen
    ]
    write_tasks(source, featured)
    with ChatServer(Coin(chosen)) as server:
        report = ok_json(
            envcraft(
                "tasks",
                "calibrate",
                source,
                "--model",
                "coin",
                "--base-url",
                server.url,
                "--k",
                "4",
                "--keep",
                "0<p<1",
                "--out",
                tmp_path / "kept",
                "--json",
            )
        )
    assert report["bands"] == {"learnable": 3} and report["written"] == 3
    for task in read_tasks(tmp_path / "kept"):
        assert task.difficulty is not None
        assert task.difficulty["features"] == {
            "calls": len(task.reference.calls)
        }  # the data engine's key kept
        assert (task.difficulty["k"], task.difficulty["pass_rate"], task.difficulty["band"]) == (
            4,
            0.5,
            "learnable",
        )
    # the oracle solves everything: too easy, and the paper's filter keeps none
    easy = ok_json(
        envcraft(
            "tasks",
            "calibrate",
            source,
            "--model",
            "oracle",
            "--k",
            "2",
            "--keep",
            "0<p<1",
            "--out",
            tmp_path / "none",
            "--json",
        )
    )
    assert easy["bands"] == {"too_easy": 3} and easy["written"] == 0
    in_place = ok_json(envcraft("tasks", "calibrate", source, "--model", "random", "--k", "2", "--json"))
    assert in_place["bands"] == {"too_hard": 3}
    assert {t.difficulty["band"] for t in read_tasks(source) if t.difficulty} == {"too_hard"}
    one_line_error(
        envcraft(
            "tasks", "calibrate", source, "--model", "oracle", "--keep", "p is nice", "--out", tmp_path / "x"
        ),
        2,
        "--keep",
    )


# -- inspect ------------------------------------------------------------------------------------
def rubric_answer(solvability: int, validation: int, consistency: int) -> str:
    return json.dumps(
        {
            name: {"score": score, "reason": f"{name} looks {score}"}
            for name, score in (
                ("solvability", solvability),
                ("validation", validation),
                ("consistency", consistency),
            )
        }
    )


def test_inspect_scores_with_the_rubric_strictly(tasks: list[Task], tmp_path: Path) -> None:
    claw = next(t for t in tasks if t.kind == "claw" and len(t.envs) == 1)
    cross = next(t for t in tasks if len(t.envs) > 1)
    tool = next(t for t in tasks if t.kind == "tool")
    chosen = [claw, cross, tool]
    verdicts = {
        claw.id: [rubric_answer(3, 3, 2)],
        cross.id: ["```json\n" + rubric_answer(3, 3, 3) + "\n```", rubric_answer(3, 2, 3)],
        tool.id: ["I think it is fine", '{"solvability": 3}'],
    }
    seen: list[str] = []

    def inspector(request: ChatRequest) -> str:
        record = request.messages[1]["content"]
        task_id = next(i for i in verdicts if f"# Task {i} " in record)
        assert "Validation protocol" in record and "def verify" in record
        seen.append(task_id)
        attempt = sum(1 for m in request.messages if m["role"] == "assistant")
        return verdicts[task_id][attempt]

    source = tmp_path / "set"
    write_tasks(source, chosen)
    with ChatServer(ReplayProvider([inspector] * 10)) as server:
        result = ok_json(
            envcraft(
                "tasks",
                "inspect",
                source,
                "--model",
                "judge",
                "--base-url",
                server.url,
                "--concurrency",
                "1",
                "--json",
            )
        )
    assert (result["tasks"], result["kept"], result["errors"]) == (3, 1, 1)
    written = {t.id: t for t in read_tasks(source)}
    assert written[claw.id].quality["rubric"]["keep"] is True
    assert written[claw.id].quality["rubric"]["scores"] == {
        "solvability": 3,
        "validation": 3,
        "consistency": 2,
    }
    assert written[claw.id].quality["kill_rate"] == claw.quality["kill_rate"]  # other quality keys kept
    fenced = written[cross.id].quality["rubric"]
    assert fenced["attempts"] == 2 and fenced["keep"] is False and fenced["scores"]["validation"] == 2
    broken = written[tool.id].quality["rubric"]
    assert broken["keep"] is False and "invalid answer" in broken["error"] and broken["attempts"] == 2
    assert sorted(seen) == sorted([claw.id, cross.id, cross.id, tool.id, tool.id])


# -- show and play ------------------------------------------------------------------------------
def test_show_hides_the_solution_unless_asked(task_dir: Path, cross_task: Task) -> None:
    shown = envcraft("tasks", "show", task_dir, cross_task.id, "--all")
    assert shown.returncode == 0
    flat = " ".join(shown.stdout.split())
    assert all(" ".join(t.user.split())[:60] in flat for t in cross_task.turns)  # later ones: --all
    assert "def verify" not in shown.stdout and "reference" not in shown.stdout
    info = ok_json(envcraft("tasks", "show", task_dir, cross_task.id, "--json"))
    assert (
        [e["id"] for e in info["envs"]] == cross_task.envs
        and "verifier" not in info
        and "reference" not in info
    )
    revealed = ok_json(envcraft("tasks", "show", task_dir, cross_task.id, "--reveal", "--json"))
    assert revealed["verifier"]["source"] == cross_task.verifier.source
    one_line_error(envcraft("tasks", "show", task_dir, "no-such-task"), 2, "no task")


def test_play_a_cross_env_task_turn_by_turn_with_envcraft_call(
    task_dir: Path, cross_task: Task, tmp_path: Path
) -> None:
    play_dir = tmp_path / "play"
    opened = envcraft("tasks", "play", task_dir, cross_task.id, "--dir", play_dir)
    assert opened.returncode == 0, opened.stderr
    assert cross_task.turns[0].user[:40] in " ".join(opened.stdout.split())
    for env in cross_task.envs:
        assert f"--session {play_dir / 'sessions' / env}" in " ".join(opened.stdout.split())
    assert "share one workspace" in opened.stdout and "tasks.jsonl" not in opened.stdout  # the set: its dir
    for turn, text in enumerate(cross_task.turns):
        info = ok_json(envcraft("tasks", "play", task_dir, cross_task.id, "--dir", play_dir, "--json"))
        assert info["turn"] == turn + 1 and info["user"] == text.user  # one turn at a time
        for call in (c for c in cross_task.reference.calls if c.turn == turn):
            done = envcraft(
                "call",
                call.env,
                call.tool,
                "--args",
                json.dumps(call.args),
                "--session",
                play_dir / "sessions" / call.env,
            )
            assert done.returncode == 0, done.stdout
        moved = ok_json(
            envcraft("tasks", "play", task_dir, cross_task.id, "--dir", play_dir, "--next", "--json")
        )
    assert moved["done"] is True and moved["score"]["score"] == 1.0
    scored = envcraft("tasks", "score", task_dir, "--trajectories", play_dir / "trajectory.jsonl", "--json")
    assert json.loads(scored.stdout)["score"] == 1.0
    trajectory = json.loads((play_dir / "trajectory.jsonl").read_text(encoding="utf-8"))
    expected = [
        [{"env": c.env, "tool": c.tool, "args": c.args} for c in cross_task.reference.calls if c.turn == i]
        for i in range(len(cross_task.turns))
    ]
    assert trajectory == {"task_id": cross_task.id, "turns": expected}
    one_line_error(
        envcraft("tasks", "play", task_dir, cross_task.id, "--dir", play_dir, "--next"), 2, "no turn left"
    )


def test_a_play_keeps_the_order_of_calls_made_across_environments(
    task_dir: Path, cross_task: Task, tmp_path: Path
) -> None:
    """Calls to the second environment before the first are recorded in that order, with no poll
    of the play between them (an audit found them grouped by environment: a check on their order
    would have scored another run)."""
    play_dir = tmp_path / "play"
    assert envcraft("tasks", "play", task_dir, cross_task.id, "--dir", play_dir).returncode == 0
    looks = [(env, advance_tool(load_package(env))) for env in reversed(cross_task.envs)]
    assert all(tool is not None for _, tool in looks)
    for env, tool in looks:
        done = envcraft("call", env, str(tool), "--session", play_dir / "sessions" / env)
        assert done.returncode == 0, done.stdout
    ok_json(envcraft("tasks", "play", task_dir, cross_task.id, "--dir", play_dir, "--next", "--json"))
    trajectory = json.loads((play_dir / "trajectory.jsonl").read_text(encoding="utf-8"))
    assert [(c["env"], c["tool"]) for c in trajectory["turns"][0]] == looks


def test_play_leaves_out_calls_a_shell_command_made(task_dir: Path, claw_task: Task, tmp_path: Path) -> None:
    play_dir = tmp_path / "play"
    assert envcraft("tasks", "play", task_dir, claw_task.id, "--dir", play_dir).returncode == 0
    env = claw_task.envs[0]
    tools = load_package(env).env_class.tools
    lister = next(n for n, spec in tools.items() if n.startswith("list_") and spec.annotations.exclusive)
    command = json.dumps({"command": f"envcraft-tool {lister} '{{}}' > /dev/null && echo listed"})
    session = play_dir / "sessions" / env
    shell = envcraft("call", env, "shell", "--args", command, "--session", session)
    assert shell.returncode == 0 and "listed" in json.loads(shell.stdout)["stdout"]
    logged = [
        json.loads(line) for line in (session / "actions.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [(e["tool"], e.get("via")) for e in logged] == [(lister, "shell"), ("shell", None)]
    info = ok_json(envcraft("tasks", "play", task_dir, claw_task.id, "--dir", play_dir, "--json"))
    assert [c["tool"] for c in info["calls_this_turn"]] == [
        "shell"
    ]  # re-playing it makes the nested call again


def test_llm_serve_answers_the_openai_protocol_until_stopped(task_dir: Path) -> None:
    server = subprocess.Popen(
        [str(ENVCRAFT), "llm", "serve", "oracle", "--tasks", str(task_dir), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        url = line.split(" at ", 1)[1].split()[0]
        task = read_tasks(task_dir)[0]
        provider = OpenAIProvider(ProviderConfig(model="oracle", base_url=url))
        request = ChatRequest(messages=[{"role": "user", "content": task.turns[0].user}], user=f"{task.id}#0")

        async def ask() -> ChatResponse:
            try:
                return await provider.complete(request)
            finally:
                await provider.aclose()

        first = task.reference.calls[0]
        answer = asyncio.run(ask())
        assert answer.tool_calls and answer.tool_calls[0].name == first.tool
        assert json.loads(answer.tool_calls[0].arguments) == first.args
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    one_line_error(envcraft("llm", "serve", "gpt-9"), 2, "unknown model")


def test_eval_table_has_one_pass_at_1_column_and_says_why_rows_overlap(
    task_dir: Path, tmp_path: Path
) -> None:
    """Regression (issue 23 item 13): with k = 1 two columns were headed pass@1, and the env rows
    counted a cross-environment task in each of its environments without saying so."""
    shown = envcraft("eval", task_dir, "--model", "oracle", "--out", tmp_path / "o")
    assert shown.returncode == 0, shown.stderr
    header = next(line for line in shown.stdout.splitlines() if "pass@" in line)
    assert header.count("pass@1") == 1
    assert "a cross-environment task counts in each of its environments" in " ".join(shown.stdout.split())


def test_play_says_its_counts_in_words_and_ends_with_a_command_that_runs(
    task_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    """Regression (issue 23 item 15): "1 user turns", and the last line said `envcraft tasks score
    TASKS --trajectories ...`, a placeholder instead of the task set."""
    task = next(t for t in tasks if len(t.turns) == 1 and len(t.envs) == 1)
    play_dir = tmp_path / "play"
    opened = envcraft("tasks", "play", task_dir, task.id, "--dir", play_dir)
    said = " ".join(opened.stdout.split())
    assert "(1 user turn)" in said and "user turns" not in said
    assert f"envcraft tasks show {task_dir.resolve()} {task.id}" in said  # the set's directory
    for call in task.reference.calls:
        args = json.dumps(call.args)
        done = envcraft(
            "call", call.env, call.tool, "--args", args, "--session", play_dir / "sessions" / call.env
        )
        assert done.returncode == 0, done.stdout
    ended = envcraft("tasks", "play", task_dir, task.id, "--dir", play_dir, "--next")
    assert ended.returncode == 0, ended.stderr
    said = " ".join(ended.stdout.split())
    assert "the turn is done" in said and "TASKS" not in said
    command = said.split("to score it again: ")[1].rstrip(")").split()
    assert command[:3] == ["envcraft", "tasks", "score"]
    scored = envcraft(*command[1:], "--json")
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["score"] == 1.0
    shown = envcraft("tasks", "show", task_dir, task.id)
    assert "1 user turn;" in " ".join(shown.stdout.split())
