"""`envcraft import pinchbench` and `envcraft eval` on its tasks, over a checkout written here.

The checkout is our own, in PinchBench's format (front matter, `## Prompt`, a `grade` function
under `## Automated Checks`, `## LLM Judge Rubric`, assets): a model and a judge answer over
the real OpenAI protocol from the local test server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.integrations.play import TaskPlay
from envcraft.llm import ChatRequest, ChatServer, ReplayProvider
from envcraft.tasks.format.io import read_tasks

ENVCRAFT = Path(sys.executable).parent / "envcraft"

AUTOMATED = """---
id: task_a_poem
name: Haiku
category: writing
grading_type: automated
timeout_seconds: 60
workspace_files:
  - source: seed.txt
    dest: notes/seed.txt
---

## Prompt

Write a haiku about the lighthouse in notes/seed.txt to haiku.txt.

## Expected Behavior

A three-line haiku in haiku.txt.

## Automated Checks

```python
def grade(transcript: list, workspace_path: str) -> dict:
    from pathlib import Path
    target = Path(workspace_path) / "haiku.txt"
    scores = {"file": 1.0 if target.exists() else 0.0}
    text = target.read_text() if target.exists() else ""
    scores["three_lines"] = 1.0 if len(text.strip().splitlines()) == 3 else 0.0
    scores["mentions_light"] = 1.0 if "light" in text.lower() else 0.0
    said = False
    for entry in transcript:
        message = entry.get("message", {})
        if entry.get("type") == "message" and message.get("role") == "assistant":
            for item in message.get("content", []):
                if item.get("type") == "text" and "written" in item.get("text", ""):
                    said = True
    scores["said_so"] = said
    return scores
```
"""

HYBRID = """---
id: task_b_reply
name: Reply
category: writing
grading_type: hybrid
timeout_seconds: 60
grading_weights:
  automated: 0.25
  llm_judge: 0.75
workspace_files:
  - path: inbox.txt
    content: "Can we move the review to Friday?"
---

## Prompt

Answer the request in inbox.txt in reply.txt.

## Expected Behavior

A short polite reply.

## Automated Checks

```python
def grade(transcript, workspace_path):
    import os
    return {"reply_written": 1.0 if os.path.exists(os.path.join(workspace_path, "reply.txt")) else 0.0}
```

## LLM Judge Rubric

- Politeness (0-1)
"""

JUDGED = """---
id: task_c_essay
name: Essay
category: writing
grading_type: llm_judge
---

## Prompt

Write an essay about tides to essay.md.

## Grading Criteria

- [ ] The essay explains the moon's role
"""

ONLINE = """---
id: task_d_stock
name: Stock
category: research
grading_type: automated
---

## Prompt

Find the current stock price of ACME and save it to price.txt.

## Automated Checks

```python
def grade(transcript, workspace_path):
    return {"x": 0.0}
```
"""

BINARY = """---
id: task_e_sheet
name: Sheet
category: data
grading_type: automated
workspace_files:
  - source: table.bin
    dest: table.bin
---

## Prompt

Sum the table.

## Automated Checks

```python
def grade(transcript, workspace_path):
    return {"x": 1.0}
```
"""


def envcraft(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENVCRAFT), *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pinch")
    checkout = root / "checkout"
    (checkout / "tasks").mkdir(parents=True)
    (checkout / "assets").mkdir()
    (checkout / "assets" / "seed.txt").write_text("A lighthouse on a cliff.\n")
    (checkout / "assets" / "table.bin").write_bytes(b"\x89PNG\xff\x00")
    for name, text in [("a", AUTOMATED), ("b", HYBRID), ("c", JUDGED), ("d", ONLINE), ("e", BINARY)]:
        (checkout / "tasks" / f"task_{name}.md").write_text(text)
    (checkout / "tasks" / "task_f_broken.md").write_text("no front matter here\n")
    out = root / "out"
    proc = envcraft("import", "pinchbench", checkout, "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    return out


def test_import_counts_marks_and_skips_with_reasons(imported: Path) -> None:
    summary = json.loads((imported / "import.json").read_text())
    assert summary["files"] == 6 and summary["imported"] == 4
    assert summary["by_grading_type"] == {"automated": 2, "hybrid": 1, "llm_judge": 1}
    assert summary["by_category"] == {"research": 1, "writing": 3}
    assert summary["needs_internet"] == {"task_d_stock": "needs the internet: asks for a live stock price"}
    reasons = {s["id"]: s["reason"] for s in summary["skipped"]}
    assert "binary" in reasons["task_e_sheet"] and "front matter" in reasons["task_f_broken"]
    tasks = {t.id: t for t in read_tasks(imported / "tasks")}
    poem = tasks["task_a_poem"]
    assert poem.kind == "claw" and poem.workspace == {"notes/seed.txt": "A lighthouse on a cliff.\n"}
    assert poem.turns[0].user.startswith("Write a haiku")
    assert tasks["task_b_reply"].provenance["grading"]["weights"] == {"automated": 0.25, "llm_judge": 0.75}


def test_a_bad_checkout_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = envcraft("import", "pinchbench", tmp_path / "empty", "--out", tmp_path / "o")
    assert proc.returncode == 2 and "no tasks/ directory" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def _agent(request: ChatRequest) -> Any:
    """Writes what each task asks for, says so, and judges 0.6 when asked to judge."""
    first = request.messages[0].get("content", "")
    if isinstance(first, str) and first.startswith("You are a grading function"):
        assert "## Grading Rubric\n- Politeness (0-1)" in first or "moon's role" in first
        assert "Tool: write(" in first  # PinchBench's transcript summary
        return '{"scores": {"politeness": 0.6}, "total": 0.6, "notes": "ok"}'
    if any(m["role"] == "tool" for m in request.messages):
        return "The file is written."
    task = str(request.user).split("#")[0]
    files = {
        "task_a_poem": (
            "haiku.txt",
            "Light sweeps the dark sea\nwaves fold on the old cliff stone\nships find the harbour\n",
        ),
        "task_b_reply": ("reply.txt", "Friday works, thank you!"),
        "task_c_essay": ("essay.md", "The moon pulls the oceans."),
    }
    path, content = files[task]
    args = json.dumps({"path": path, "content": content})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "w", "function": {"name": "write", "arguments": args}}],
    }


def _eval(imported: Path, out: Path, *extra: str) -> dict[str, Any]:
    with ChatServer(ReplayProvider([_agent] * 100)) as server:
        proc = envcraft(
            "eval",
            imported / "tasks",
            "--model",
            "agent",
            "--base-url",
            server.url,
            "--out",
            out,
            "--json",
            *extra,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary: dict[str, Any] = json.loads(proc.stdout)
    return summary


def _rewards(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    return {t["task_id"]: t["reward"] for t in map(json.loads, lines)}


def test_eval_without_a_judge_skips_judge_only_and_scores_the_automated_part(
    imported: Path, tmp_path: Path
) -> None:
    summary = _eval(imported, tmp_path / "e")
    plan = summary["meta"]["imported"]
    assert plan["skipped"] == {
        "needs the internet: asks for a live stock price": ["task_d_stock"],
        "judge-only task and no --judge model": ["task_c_essay"],
    }
    assert plan["automated_part_only"] == ["task_b_reply"]
    page = (tmp_path / "e" / "report.html").read_text()
    assert "skipped 1 task(s): judge-only task and no --judge model (task_c_essay)" in page
    assert "automated part only (no --judge): task_b_reply" in page
    rewards = _rewards(tmp_path / "e")
    assert set(rewards) == {"task_a_poem", "task_b_reply"}
    poem = rewards["task_a_poem"]  # its grade() read the workspace and the transcript's assistant text
    assert poem["components"] == {"file": 1.0, "three_lines": 1.0, "mentions_light": 1.0, "said_so": 1.0}
    assert poem["score"] == 1.0
    assert rewards["task_b_reply"] == {"score": 1.0, "components": {"reply_written": 1.0}}
    trajectories = tmp_path / "e" / "trajectories.jsonl"
    proc = envcraft("tasks", "score", imported / "tasks", "--trajectories", trajectories, "--json")
    assert proc.returncode == 0, proc.stderr
    rescored = {row["task_id"]: row for row in map(json.loads, proc.stdout.splitlines())}
    assert rescored["task_a_poem"]["components"] == poem["components"]  # the transcript came along
    assert rescored["task_b_reply"]["score"] == 1.0
    # --explain: the same verdicts; a grader is code, so its checks are not itemized (issue 20 item 7)
    proc = envcraft(
        "tasks", "score", imported / "tasks", "--trajectories", trajectories, "--json", "--explain"
    )
    assert proc.returncode == 0, proc.stderr
    for row in map(json.loads, proc.stdout.splitlines()):
        why = row.pop("explain")
        assert row == rescored[row["task_id"]]
        assert why["itemized"] is False and "not itemized" in why["note"] and why["failed_calls"] == []


def test_eval_with_a_judge_weighs_it_as_pinchbench_does(imported: Path, tmp_path: Path) -> None:
    summary = _eval(imported, tmp_path / "j", "--judge", "judge")
    assert summary["meta"]["imported"]["skipped"] == {
        "needs the internet: asks for a live stock price": ["task_d_stock"]
    }
    rewards = _rewards(tmp_path / "j")
    assert rewards["task_b_reply"]["score"] == pytest.approx(0.25 * 1.0 + 0.75 * 0.6)
    assert rewards["task_b_reply"]["components"] == {
        "automated.reply_written": 1.0,
        "llm_judge.politeness": 0.6,
    }
    assert rewards["task_c_essay"]["score"] == pytest.approx(0.6)


def test_a_do_nothing_run_scores_zero(imported: Path, tmp_path: Path) -> None:
    with ChatServer(ReplayProvider(["I will not."] * 20)) as server:
        proc = envcraft(
            "eval",
            imported / "tasks",
            "--model",
            "idle",
            "--base-url",
            server.url,
            "--out",
            tmp_path / "n",
            "--json",
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rewards = _rewards(tmp_path / "n")
    assert rewards["task_a_poem"]["score"] == 0.0 and rewards["task_b_reply"]["score"] == 0.0


def test_a_trainer_play_hands_the_conversation_to_the_grader(imported: Path) -> None:
    """VERL's and TRL's TaskPlay: the grader reads the policy's messages, as in eval."""
    poem = next(t for t in read_tasks(imported / "tasks") if t.id == "task_a_poem")
    with TaskPlay(poem) as play:
        play.call("write_file", {"path": "haiku.txt", "content": "a light\nb\nc\n"})
        said = [{"role": "assistant", "content": "The haiku is written."}]
        assert play.score(said).components["said_so"] == 1.0
        assert play.score().components["said_so"] == 0.0
