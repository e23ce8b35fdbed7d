"""The LLM writer of user turns (issue 21 item 3), against a real OpenAI-protocol server.

A scripted model behind :class:`~envcraft.llm.server.ChatServer` answers the writer's requests
for a small real corpus (mail_triage + infra_recovery, seed 0): a rewrite that keeps what the
template says is used; one that drops a user-known value, leaks a hidden value, names a tool,
changes a dictated text, says a later turn's value early or adds a negation is refused turn by
turn and the template stays. The Batch API path writes one request per task and picks up the
answers; ``tasks synth --writer`` gives the same corpus again from its cache with the server
gone; and the reference still scores 1.0 on the rewritten tasks.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcraft.llm import (
    BatchProvider,
    ChatRequest,
    ChatServer,
    LLMError,
    OpenAIProvider,
    ProviderConfig,
    ReplayProvider,
)
from envcraft.llm.batch import REQUESTS_FILE, RESPONSES_DIR, answer_batch
from envcraft.rollout.writer import ProviderWriter
from envcraft.tasks.corpus.pipeline import RunOptions, run
from envcraft.tasks.corpus.writing import WriterFailed, WriterPending
from envcraft.tasks.format.io import read_stats, read_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.leaks import names_said
from envcraft.tasks.play.execute import reference_turns
from envcraft.tasks.verifier.scoring import score_trajectory

ENVS = ["mail_triage", "infra_recovery"]
SEED = 2  # a corpus holding a task of several turns (the rewrite of a later turn is tested)
ENVCRAFT = Path(sys.executable).with_name("envcraft")
Rewrite = Callable[[dict[str, Any]], list[str]]  # the request's intent -> the turns answered


def answering(rewrite: Rewrite) -> Callable[[ChatRequest], str]:
    """A scripted writer model: reads the request's intent, answers ``{"turns": rewrite(intent)}``."""

    def answer(request: ChatRequest) -> str:
        return json.dumps({"turns": rewrite(json.loads(request.messages[-1]["content"]))}, ensure_ascii=False)

    return answer


def intents_by_task(template: list[Task], requests: list[ChatRequest]) -> list[tuple[Task, dict[str, Any]]]:
    """Each task with the intent its request sent (requests arrive in any order: matched by the drafts)."""
    sent = {}
    for request in requests:
        intent = json.loads(request.messages[-1]["content"])
        sent[tuple(turn["draft"] for turn in intent["turns"])] = (request, intent)
    return [(task, sent[tuple(t.user for t in task.turns)][1]) for task in template]


def synthesize(
    out: Path, rewrite: Rewrite | None, first: Any = None
) -> tuple[list[Task], dict[str, Any], list[ChatRequest]]:
    """The corpus in ``out`` (its shards made once, then resumed), rewritten by a served script
    (``first``, if given, answers the first request to arrive)."""
    options = RunOptions(out=out, n_per_env=3, seed=SEED, envs=ENVS, workers=1, export=False)
    if rewrite is None:
        run(options)
        return read_tasks(out / "tasks"), read_stats(out / "tasks"), []
    script = ReplayProvider(([first] if first is not None else []) + [answering(rewrite)] * 50)
    with ChatServer(script) as server:
        options.writer = ProviderWriter(OpenAIProvider(ProviderConfig(model="scripted", base_url=server.url)))
        run(options)
    return read_tasks(out / "tasks"), read_stats(out / "tasks"), script.requests


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("writer")


@pytest.fixture(scope="module")
def template(workdir: Path) -> list[Task]:
    tasks, stats, _ = synthesize(workdir, None)
    assert "writer" not in stats and all("writer" not in t.provenance for t in tasks)
    assert any(len(t.turns) > 1 for t in tasks)
    return tasks


def each_turn(change: Callable[[dict[str, Any], int, dict[str, Any]], str]) -> Rewrite:
    """A rewrite made turn by turn: ``change(turn intent, turn index, whole intent)``."""
    return lambda intent: [change(turn, t, intent) for t, turn in enumerate(intent["turns"])]


def reworded(turn: dict[str, Any], t: int, intent: dict[str, Any]) -> str:
    """What a careful writer does: the same facts, said differently."""
    return f"Working through my list today. {turn['draft']}" if t == 0 else f"{turn['draft']} Thanks."


def test_a_good_rewrite_is_used_and_the_reference_still_scores_one(
    workdir: Path, template: list[Task]
) -> None:
    tasks, stats, requests = synthesize(workdir, each_turn(reworded))
    assert len(requests) == len(template)  # one request per task
    assert [t.id for t in tasks] == [t.id for t in template]
    for task, before in zip(tasks, template, strict=True):
        assert task.provenance["writer"] == {
            "model": "scripted",
            "turns": [True] * len(before.turns),
            "refused": [None] * len(before.turns),
        }
        assert task.turns[0].user == f"Working through my list today. {before.turns[0].user}"
        assert task.reference == before.reference and task.verifier == before.verifier
        assert score_trajectory(task, reference_turns(task)).score == 1.0, task.id
    turns = sum(len(t.turns) for t in template)
    assert stats["writer"] == {
        "model": "scripted",
        "tasks": len(template),
        "tasks_rewritten": len(template),
        "turns": turns,
        "turns_accepted": turns,
        "turns_refused": 0,
        "refused": {},
    }


def test_the_request_holds_the_intent_and_no_tool_or_parameter_name(
    workdir: Path, template: list[Task]
) -> None:
    _, _, requests = synthesize(workdir, each_turn(reworded))
    assert len(requests) == len(template)
    for request in requests:
        content = "\n".join(str(m["content"]) for m in request.messages)
        names = {c.tool for t in template for c in t.reference.calls} | {
            a for t in template for c in t.reference.calls for a in c.args
        }
        assert names_said(content, names) == []
    for task, intent in intents_by_task(template, requests):
        assert intent["person"]["name"] in task.persona and all(
            turn["goals"] or turn.get("closing") for turn in intent["turns"]
        )


def refused_turns(tasks: list[Task]) -> list[tuple[str, int, str]]:
    return [
        (task.id, t, why)
        for task in tasks
        for t, why in enumerate(task.provenance["writer"]["refused"])
        if why is not None
    ]


def bad_first_turn(spoil: Callable[[dict[str, Any], dict[str, Any]], str | None]) -> Rewrite:
    """Turn 1 spoiled where ``spoil`` can (else reworded), the other turns reworded."""

    def change(turn: dict[str, Any], t: int, intent: dict[str, Any]) -> str:
        spoiled = spoil(turn, intent) if t == 0 else None
        return spoiled if spoiled is not None else reworded(turn, t, intent)

    return each_turn(change)


def drop_value(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    quoted = [v for v in turn["must_say"] if "“" in v]
    plain = [v for v in turn["must_say"] if v not in quoted and not any(v in q for q in quoted)]
    if not plain:
        return None
    # case aside: a phrase the draft opens a sentence with is said with a capital
    return re.sub(re.escape(plain[0]), "the one I mentioned", turn["draft"], flags=re.IGNORECASE)


def leak_hidden(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    return f"{turn['draft']} (that is {intent['never_say'][0]})" if intent["never_say"] else None


def name_a_tool(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    return f"{turn['draft']} Use write_file for the report." if "write_file" not in turn["draft"] else None


def change_dictation(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    quoted = [v for v in turn["must_say"] if v.startswith("“")]
    return turn["draft"].replace(quoted[0], quoted[0][:-2] + " soon”") if quoted else None


def unquote_dictation(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    quoted = [v for v in turn["must_say"] if v.startswith("“")]
    return turn["draft"].replace(quoted[0], quoted[0][1:-1]) if quoted else None


def repeat_dictation(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    quoted = [v for v in turn["must_say"] if v.startswith("“") and v.endswith("”")]
    return f"{turn['draft']} Once more: {quoted[0]}" if quoted else None


def say_later_value(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    later = [
        v for nxt in intent["turns"][1:] for v in nxt["must_say"] if "“" not in v and v not in turn["draft"]
    ]
    return f"{turn['draft']} Also {later[0]}." if later else None


def invent_value(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    return f"{turn['draft']} And check ticket TCK-9999 while you are at it."


def negate(turn: dict[str, Any], intent: dict[str, Any]) -> str | None:
    return f"{turn['draft']} Actually, scratch that: don't bother."


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (drop_value, "user_value"),
        (leak_hidden, "hidden_value"),
        (name_a_tool, "tool_name"),
        (change_dictation, "dictated_text"),
        (unquote_dictation, "dictated_text"),
        (repeat_dictation, "dictated_text"),
        (say_later_value, "early_value"),
        (invent_value, "new_value"),
        (negate, "meaning"),
    ],
)
def test_a_rewrite_that_changes_what_is_said_is_refused(
    workdir: Path,
    template: list[Task],
    spoil: Callable[[dict[str, Any], dict[str, Any]], str | None],
    reason: str,
) -> None:
    tasks, stats, requests = synthesize(workdir, bad_first_turn(spoil))
    spoiled = {
        task.id for task, intent in intents_by_task(template, requests) if spoil(intent["turns"][0], intent)
    }
    assert spoiled, f"no task of the corpus can show {reason}"
    assert refused_turns(tasks) == [
        (task_id, 0, reason) for task_id in [t.id for t in template] if task_id in spoiled
    ]
    for task, before in zip(tasks, template, strict=True):
        if task.id in spoiled:
            assert task.turns[0].user == before.turns[0].user  # the template stays
        assert task.turns[1:] != before.turns[1:] or len(task.turns) == 1  # the other turns are the writer's
    assert stats["writer"]["refused"] == {reason: len(spoiled)}


def test_an_answer_that_is_no_set_of_turns_keeps_every_template(workdir: Path, template: list[Task]) -> None:
    def merged(intent: dict[str, Any]) -> list[str]:
        return [" ".join(turn["draft"] for turn in intent["turns"])]

    tasks, stats, _ = synthesize(workdir, merged)
    assert [t.turns for t in tasks] == [t.turns for t in template]
    many = sum(len(t.turns) for t in template if len(t.turns) > 1)
    assert stats["writer"]["refused"].get("turn_count") == many
    assert stats["writer"]["turns_accepted"] == sum(len(t.turns) == 1 for t in template)
    tasks, stats, _ = synthesize(workdir, each_turn(reworded), first="Sure! Here is a friendlier version.")
    prose = [t for t in tasks if t.provenance["writer"]["refused"][0] == "unparsable"]
    assert len(prose) == 1 and stats["writer"]["refused"] == {"unparsable": len(prose[0].turns)}
    assert prose[0].turns == next(t.turns for t in template if t.id == prose[0].id)


def test_a_task_without_an_answer_keeps_its_template_and_no_answer_at_all_stops_the_run(
    workdir: Path, template: list[Task]
) -> None:
    tasks, stats, _ = synthesize(workdir, each_turn(reworded), first=LLMError("bad_request", "try later"))
    kept = [t for t in tasks if t.provenance["writer"]["refused"][0] == "no_answer"]
    assert len(kept) == 1 and kept[0].turns == next(t.turns for t in template if t.id == kept[0].id)
    assert stats["writer"]["refused"] == {"no_answer": len(kept[0].turns)}
    with pytest.raises(WriterFailed, match="answered no request"):
        _all_fail(workdir)


def _all_fail(workdir: Path) -> None:
    options = RunOptions(out=workdir, n_per_env=3, seed=SEED, envs=ENVS, workers=1, export=False)
    with ChatServer(ReplayProvider([LLMError("bad_request", "no such model")] * 50)) as server:
        options.writer = ProviderWriter(OpenAIProvider(ProviderConfig(model="nope", base_url=server.url)))
        run(options)


def test_batch_files_carry_one_request_per_task_and_bring_the_answers_back(
    workdir: Path, template: list[Task], tmp_path: Path
) -> None:
    options = RunOptions(out=workdir, n_per_env=3, seed=SEED, envs=ENVS, workers=1, export=False)
    options.writer = ProviderWriter(BatchProvider(tmp_path, "scripted"))
    with pytest.raises(WriterPending) as waiting:
        run(options)
    assert waiting.value.waiting == len(template)
    lines = (tmp_path / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(template) and all(
        json.loads(line)["body"]["model"] == "scripted" for line in lines
    )
    counts = asyncio.run(
        answer_batch(
            tmp_path / REQUESTS_FILE,
            tmp_path / RESPONSES_DIR / "out.jsonl",
            ReplayProvider([answering(each_turn(reworded))] * 50),
        )
    )
    assert counts == {"answered": len(template), "failed": 0, "skipped": 0}
    options.writer = ProviderWriter(BatchProvider(tmp_path, "scripted"))
    run(options)
    tasks = read_tasks(workdir / "tasks")
    assert all(all(t.provenance["writer"]["turns"]) for t in tasks)
    assert [t.turns[0].user for t in tasks] == [
        f"Working through my list today. {t.turns[0].user}" for t in template
    ]


def envcraft(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "ENVCRAFT_BASE_URL", "ENVCRAFT_MODEL")
    }
    return subprocess.run(
        [str(ENVCRAFT), *args], capture_output=True, text=True, timeout=600, check=False, env=env
    )


def test_tasks_synth_writer_is_cached_so_a_rerun_gives_the_same_corpus(tmp_path: Path) -> None:
    args = [
        "tasks",
        "synth",
        "--envs",
        ",".join(ENVS),
        "--n",
        "3",
        "--seed",
        "0",
        "--workers",
        "1",
        "--out",
        str(tmp_path),
    ]
    with ChatServer(ReplayProvider([answering(each_turn(reworded))] * 50)) as server:
        url = server.url
        first = envcraft(*args, "--writer", "scripted", "--writer-base-url", url)
    assert first.returncode == 0, first.stderr
    assert "writer scripted:" in first.stdout and "turns rewritten" in first.stdout
    written = (tmp_path / "tasks.jsonl").read_bytes()
    assert b"Working through my list today." in written
    again = envcraft(*args, "--writer", "scripted", "--writer-base-url", url)  # the server is gone
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "tasks.jsonl").read_bytes() == written
    lone = envcraft(*args, "--writer-base-url", url)
    assert lone.returncode == 2 and "--writer-base-url and --writer-batch need --writer MODEL" in lone.stderr
    # Batch API files from the command line: the requests wait (exit 0, nothing written), any
    # model answers them (`envcraft llm answer`), the same command then writes the same corpus
    batch = tmp_path / "batch"
    (tmp_path / "tasks.jsonl").unlink()
    waiting = envcraft(*args, "--writer", "scripted", "--writer-batch", str(batch), "--json")
    assert waiting.returncode == 0, waiting.stderr
    assert json.loads(waiting.stdout)["status"] == "waiting" and not (tmp_path / "tasks.jsonl").exists()
    with ChatServer(ReplayProvider([answering(each_turn(reworded))] * 50)) as server:
        answered = envcraft("llm", "answer", str(batch), "--model", "scripted", "--base-url", server.url)
    assert answered.returncode == 0, answered.stderr
    done = envcraft(*args, "--writer", "scripted", "--writer-batch", str(batch))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tasks.jsonl").read_bytes() == written
    # a built-in model's answers are cached too (SmolLM2 takes minutes a request on a CPU)
    builtin = envcraft(*args, "--writer", "random", "--json")
    assert builtin.returncode == 0, builtin.stderr
    stats = json.loads(builtin.stdout)["writer"]
    assert stats["turns_accepted"] == 0 and set(stats["refused"]) == {"unparsable"}  # it says it is done
    assert len(list((tmp_path / ".cache" / "writer").glob("*/*.json"))) == 2 * stats["tasks"]
