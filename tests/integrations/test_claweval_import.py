"""`envcraft import claw-eval` over a checkout written here in Claw-Eval's format: every task is
counted and listed with the reason it is not run yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ENVCRAFT = Path(sys.executable).parent / "envcraft"

SERVICE_TASK = """task_id: X01_inbox
category: communication
services:
  - name: mailbox
    command: python mock_services/mailbox/server.py
    port: 9900
prompt: {text: "Sort my inbox."}
tools:
  - name: mailbox_list
    input_schema: {type: object, properties: {}}
scoring_components:
  - {name: sorted, weight: 0.5, check: {type: tool_called, tool: mailbox_list}}
  - {name: quality, weight: 0.5, check: {type: llm_judge}}
"""
USER_TASK = """task_id: X02_loan
category: user_agent
user_agent: {enabled: true, persona: "A renter who knows their rent is 900."}
prompt: {text: "Can I afford it?"}
tools: []
scoring_components:
  - {name: answer, weight: 1.0, check: {type: llm_judge}}
"""
WEB_TASK = """task_id: X03_news
category: research
services:
  - {name: web_real, port: 9901}
prompt: {text: "What happened today?"}
scoring_components:
  - {name: words, weight: 1.0, check: {type: keywords_present, keywords: [today]}}
"""
PLAIN_TASK = """task_id: X04_shell
category: terminal
prompt: {text: "Count the files."}
scoring_components: []
"""


def test_every_task_is_counted_and_skipped_with_its_reason(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    for name, text in [("X01", SERVICE_TASK), ("X02", USER_TASK), ("X03", WEB_TASK), ("X04", PLAIN_TASK)]:
        (checkout / "tasks" / name).mkdir(parents=True)
        (checkout / "tasks" / name / "task.yaml").write_text(text)
        (checkout / "tasks" / name / "grader.py").write_text(
            "from claw_eval.graders.base import AbstractGrader\n"
        )
    (checkout / "tasks" / "X05").mkdir()
    (checkout / "tasks" / "X05" / "task.yaml").write_text("- not: a mapping\n")
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(ENVCRAFT), "import", "claw-eval", str(checkout), "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "import.json").read_text())
    assert summary["files"] == 5 and summary["imported"] == 0
    assert summary["by_grading_type"] == {"automated": 1, "grader_only": 1, "hybrid": 1, "llm_judge": 1}
    reasons = {s["id"]: s["reason"] for s in summary["skipped"]}
    assert reasons["X01_inbox"] == "needs its mock service(s) mailbox on loopback: not built yet"
    assert reasons["X02_loan"].startswith("plays with a simulated user")
    assert reasons["X03_news"] == "needs the internet (live web service web_real)"
    assert "claw_eval package" in reasons["X04_shell"]
    assert reasons["X05"].startswith("unreadable task.yaml")
    assert (out / "tasks" / "tasks.jsonl").read_text() == ""


def test_a_bad_checkout_is_a_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(ENVCRAFT), "import", "claw-eval", str(tmp_path), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "no tasks/ directory" in proc.stderr and "Traceback" not in proc.stderr
