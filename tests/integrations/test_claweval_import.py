"""`envcraft import claw-eval` and `envcraft eval` over a checkout written here in Claw-Eval's format.

The checkout is our own: ``tasks/<id>/task.yaml`` + ``grader.py`` and a small ``src/claw_eval``
package of our writing with the module layout and the classes Claw-Eval's graders import
(``AbstractGrader``, the pydantic trace models, ``compute_task_score``) and a FastAPI mock
service (``mock_services/mailbox``). Tasks that need the web, a user, a judge or media grading
are counted and skipped with the reason; automated ones import and are scored by their own
grader in the isolated worker (pydantic read-only, a scratch ``/workspace`` where the task's
snapshot commands run); a service task's episode starts its service in its own network
namespace. A model answers over the real OpenAI protocol from the local test server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.llm import ChatRequest, ChatServer, ReplayProvider
from envcraft.tasks.format.io import read_tasks

ENVCRAFT = Path(sys.executable).parent / "envcraft"

# -- our own claw_eval package, in the layout the importer copies -----------------------------
PACKAGE = {
    "__init__.py": '"""Fixture claw_eval."""\n',
    "graders/__init__.py": "from .base import AbstractGrader\nfrom .registry import find_grader\n",
    "graders/registry.py": "from .base import AbstractGrader\n\n\ndef find_grader(name):\n    return None\n",
    "graders/base.py": """from __future__ import annotations

from pathlib import Path

from ..models.trace import DimensionScores, ToolDispatch, TraceMessage

TASKS = Path(__file__).resolve().parents[3] / "tasks"


class AbstractGrader:
    def grade(self, messages, dispatches, task, audit_data=None, judge=None):
        raise NotImplementedError

    @staticmethod
    def final_text(messages: list[TraceMessage]) -> str:
        for m in reversed(messages):
            if m.message.role == "assistant":
                return " ".join(b.text for b in m.message.content if b.type == "text")
        return ""

    @staticmethod
    def robustness(dispatches: list[ToolDispatch]) -> float:
        if not dispatches:
            return 0.0
        return sum(d.response_status < 400 for d in dispatches) / len(dispatches)
""",
    "graders/llm_judge.py": '''"""Fixture judge: the importer reads its two system prompts."""

_SYSTEM_PROMPT = "Judge the conversation. Reply with JSON: score and reasoning."
_ACTIONS_SYSTEM_PROMPT = "Judge the actions. Reply with JSON: score and reasoning."
''',
    "models/__init__.py": "",
    "models/content.py": """from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field


class TextBlock(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(BaseModel):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[TextBlock] = Field(default_factory=list)
    is_error: bool = False


ContentBlock = Annotated[Union[TextBlock, ToolUseBlock, ToolResultBlock], Field(discriminator="type")]
""",
    "models/message.py": """from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .content import ContentBlock


class Message(BaseModel):
    role: Literal["user", "assistant", "system"]
    content: list[ContentBlock] = Field(default_factory=list)
""",
    "models/trace.py": """from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .message import Message


class DimensionScores(BaseModel):
    completion: float = 0.0
    robustness: float = 0.0
    safety: float = 1.0


class TraceMessage(BaseModel):
    type: Literal["message"] = "message"
    trace_id: str
    message: Message


class MediaLoad(BaseModel):
    trace_id: str = ""


class ToolDispatch(BaseModel):
    trace_id: str
    tool_use_id: str
    tool_name: str
    endpoint_url: str
    request_body: dict[str, Any] = Field(default_factory=dict)
    response_status: int = 200
    response_body: Any = None
""",
    "models/tool.py": "from pydantic import BaseModel\n\n\nclass ToolSpec(BaseModel):\n    name: str\n",
    "models/task.py": """from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from .tool import ToolSpec


class TaskDefinition(BaseModel):
    model_config = ConfigDict(extra="allow")
    task_id: str
    tools: list[ToolSpec] = []
    env_snapshot_commands: list[str] = []
    prompt: dict[str, Any]

    @classmethod
    def from_yaml(cls, path):
        return cls.model_validate(yaml.safe_load(open(path)))
""",
    "models/scoring.py": """from .trace import DimensionScores


def compute_task_score(scores: DimensionScores) -> float:
    return round(scores.safety * (0.75 * scores.completion + 0.25 * scores.robustness), 4)
""",
}

# -- tasks ------------------------------------------------------------------------------------
WORDS_TASK = """task_id: Z01_count_words
category: terminal
prompt:
  text: |
    Count the words of /workspace/notes/poem.txt and write the count to /workspace/count.txt.
tools:
  - name: Bash
    input_schema: {type: object, properties: {command: {type: string}}, required: [command]}
sandbox_files: [notes/poem.txt]
sandbox_grader_files: [checks/check_count.py]
env_snapshot_commands:
  - python /workspace/checks/check_count.py
scoring_components: []
"""
WORDS_GRADER = '''"""Reads the check script's JSON from env_snapshot and the final answer."""
import json

from claw_eval.graders.base import AbstractGrader
from claw_eval.models.trace import DimensionScores


class CountGrader(AbstractGrader):
    def grade(self, messages, dispatches, task, audit_data=None, judge=None, env_snapshot=None):
        out = (env_snapshot or {}).get("cmd:python /workspace/checks/check_count.py", {})
        result = json.loads(out.get("stdout") or "{}")
        completion = 0.5 * result.get("exists", False) + 0.5 * result.get("right", False)
        if "done" not in self.final_text(messages).lower():
            completion *= 0.5
        return DimensionScores(completion=completion, robustness=self.robustness(dispatches))
'''
CHECK_COUNT = """import json, os
path = "/workspace/count.txt"
words = len(open("/workspace/notes/poem.txt").read().split())
exists = os.path.isfile(path)
print(json.dumps({"exists": exists, "right": exists and open(path).read().strip() == str(words)}))
"""
ANSWER_TASK = """task_id: Z02_capital
category: knowledge
prompt: {text: "What is the capital of France? Answer in one word."}
tools: []
scoring_components:
  - {name: answer, weight: 1.0, check: {type: keywords_present, keywords: [Paris]}}
"""
ANSWER_GRADER = """from claw_eval.graders.base import AbstractGrader
from claw_eval.models.trace import DimensionScores


class CapitalGrader(AbstractGrader):
    def grade(self, messages, dispatches, task, audit_data=None, judge=None):
        said = "paris" in self.final_text(messages).lower()
        return DimensionScores(completion=float(said), robustness=float(said))
"""
JUDGED_TASK = """task_id: Z03_essay
category: content
prompt: {text: "Write an essay."}
tools: []
scoring_components:
  - {name: quality, weight: 1.0, check: {type: llm_judge}}
"""
# Asks its judge once about the essay and, when that passes, once more about the title: the
# second question exists only once the first is answered (two judge rounds).
JUDGED_GRADER = """from claw_eval.graders.base import AbstractGrader
from claw_eval.models.trace import DimensionScores


class EssayGrader(AbstractGrader):
    def grade(self, messages, dispatches, task, audit_data=None, judge=None):
        if judge is None:  # as under Claw-Eval's --no-judge
            return DimensionScores(completion=0.0, robustness=1.0)
        essay = self.final_text(messages)
        body = judge.evaluate("Write an essay.", essay, "", "Is it an essay?").score
        title = judge.evaluate("Write an essay.", essay, "", "Has it a title?").score if body > 0.5 else 0.0
        return DimensionScores(completion=(body + title) / 2, robustness=1.0)
"""
VISUAL_TASK = JUDGED_TASK.replace("Z03_essay", "Z13_poster")
VISUAL_GRADER = JUDGED_GRADER.replace("judge.evaluate(", "judge.evaluate_visual(")
MEDIA_TASK = "task_id: Z04_clock\ncategory: web_dev\nprompt: {text: Draw a clock.}\n"
MEDIA_GRADER = "from claw_eval.graders.webpage_grader import WebpageGrader\n"
SEARCH_TASK = """task_id: Z05_search
category: research
prompt: {text: "Find the paper."}
tools:
  - {name: WebSearch, input_schema: {type: object}}
"""
SERVICE_TASK = """task_id: Z06_inbox
category: communication
services:
  - name: mailbox
    command: python mock_services/mailbox/server.py
    port: 9900
    health_check: http://localhost:9900/mail/list
    health_check_method: POST
    reset_endpoint: http://localhost:9900/mail/reset
    env: {MAILBOX_FIXTURES: tasks/Z06/fixtures/inbox.json}
prompt: {text: "Move the phishing mail in my inbox to spam."}
tools:
  - {name: mail_list, description: List the inbox, input_schema: {type: object, properties: {}}}
  - name: mail_move
    description: Move a mail to a folder
    input_schema:
      type: object
      properties: {id: {type: string}, folder: {type: string}}
      required: [id, folder]
tool_endpoints:
  - {tool_name: mail_list, url: "http://localhost:9900/mail/list", method: POST}
  - {tool_name: mail_move, url: "http://localhost:9900/mail/move", method: POST}
scoring_components:
  - {name: listed, weight: 0.5, check: {type: tool_called, tool_name: mail_list}}
  - {name: moved, weight: 0.5, check: {type: tool_called, tool_name: mail_move}}
"""
# What the service saw (its audit) and what it answered (the dispatch bodies) decide the grade:
# exactly one move, of m2 to spam, after a listing that really returned the inbox.
SERVICE_GRADER = """from claw_eval.graders.base import AbstractGrader
from claw_eval.models.trace import DimensionScores


class InboxGrader(AbstractGrader):
    def grade(self, messages, dispatches, task, audit_data=None, judge=None):
        moves = (audit_data or {}).get("mailbox", {}).get("moves", [])
        listed = any(
            d.tool_name == "mail_list" and len(d.response_body["mails"]) == 3 for d in dispatches
        )
        right = moves == [{"id": "m2", "folder": "spam"}]
        return DimensionScores(completion=0.5 * listed + 0.5 * right, robustness=self.robustness(dispatches))
"""
# The English variant builds on Z06's grader (load_peer_grader), as Claw-Eval's *_en tasks do.
PEER_GRADER = """from claw_eval.graders.base import load_peer_grader

_Base = load_peer_grader("Z06")


class InboxGraderEN(_Base):
    pass
"""
MAILBOX_SERVER = """import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from fastapi import FastAPI
from pydantic import BaseModel

from mock_services._base import add_error_injection

app = FastAPI()
add_error_injection(app)
FIXTURES = os.environ["MAILBOX_FIXTURES"]
state = {}


def load():
    state["mails"] = json.load(open(FIXTURES))
    state["moves"] = []


load()


class Move(BaseModel):
    id: str
    folder: str


@app.post("/mail/list")
def mail_list():
    return {"mails": state["mails"]}


@app.post("/mail/move")
def mail_move(req: Move):
    state["moves"].append(req.model_dump())
    return {"status": "moved", "id": req.id}


@app.get("/mail/audit")
def audit():
    return {"moves": state["moves"]}


@app.post("/mail/reset")
def reset():
    load()
    return {"status": "reset"}


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("PORT", "9900")))
"""
BASE_MODULE = """def add_error_injection(app):
    return app
"""
INBOX = [
    {"id": "m1", "subject": "Standup notes"},
    {"id": "m2", "subject": "Your account is locked, click here"},
    {"id": "m3", "subject": "Lunch?"},
]
MISSING_SERVICE_TASK = SERVICE_TASK.replace("Z06_inbox", "Z12_calendar").replace("mailbox/", "calendar/")
USER_TASK = """task_id: Z07_loan
category: user_agent
user_agent: {enabled: true, persona: "A renter who knows their rent is 900.", max_rounds: 3}
prompt: {text: "Can I afford the flat?"}
"""
# Full marks only when the user revealed the rent in a [user_agent] message and the answer uses it.
USER_GRADER = """from claw_eval.graders.base import AbstractGrader
from claw_eval.models.trace import DimensionScores


class LoanGrader(AbstractGrader):
    def grade(self, messages, dispatches, task, audit_data=None, judge=None):
        told = any(
            b.text.startswith("[user_agent]") and "900" in b.text
            for m in messages
            if m.message.role == "user"
            for b in m.message.content
            if b.type == "text"
        )
        used = "900" in self.final_text(messages)
        return DimensionScores(completion=0.5 * told + 0.5 * used, robustness=1.0)
"""
WEB_TASK = """task_id: Z08_news
category: research
services: [{name: web_real, port: 9901}]
prompt: {text: "Any news?"}
"""
BINARY_TASK = """task_id: Z09_pack
category: terminal
prompt: {text: "Write /workspace/out.bin."}
env_snapshot_commands: ["wc -c < /workspace/out.bin"]
"""
POEM = "the sea folds light\ninto the old cliff stone\n"


def envcraft(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENVCRAFT), *map(str, args)], capture_output=True, text=True, timeout=600)


def write_checkout(root: Path) -> Path:
    checkout = root / "checkout"
    for rel, text in PACKAGE.items():
        (checkout / "src" / "claw_eval" / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / "src" / "claw_eval" / rel).write_text(text)
    tasks = [
        ("Z01", WORDS_TASK, WORDS_GRADER),
        ("Z02", ANSWER_TASK, ANSWER_GRADER),
        ("Z03", JUDGED_TASK, JUDGED_GRADER),
        ("Z04", MEDIA_TASK, MEDIA_GRADER),
        ("Z05", SEARCH_TASK, ANSWER_GRADER),
        ("Z06", SERVICE_TASK, SERVICE_GRADER),
        ("Z11", SERVICE_TASK.replace("Z06_inbox", "Z11_inbox_en"), PEER_GRADER),
        ("Z12", MISSING_SERVICE_TASK, SERVICE_GRADER),
        ("Z13", VISUAL_TASK, VISUAL_GRADER),
        ("Z07", USER_TASK, USER_GRADER),
        ("Z08", WEB_TASK, ANSWER_GRADER),
        ("Z09", BINARY_TASK, ANSWER_GRADER),
    ]
    for name, task, grader in tasks:
        (checkout / "tasks" / name).mkdir(parents=True)
        (checkout / "tasks" / name / "task.yaml").write_text(task)
        (checkout / "tasks" / name / "grader.py").write_text(grader)
    (checkout / "tasks" / "Z01" / "notes").mkdir()
    (checkout / "tasks" / "Z01" / "notes" / "poem.txt").write_text(POEM)
    (checkout / "tasks" / "Z01" / "checks").mkdir()
    (checkout / "tasks" / "Z01" / "checks" / "check_count.py").write_text(CHECK_COUNT)
    (checkout / "tasks" / "Z06" / "fixtures").mkdir()
    (checkout / "tasks" / "Z06" / "fixtures" / "inbox.json").write_text(json.dumps(INBOX))
    (checkout / "mock_services" / "mailbox").mkdir(parents=True)
    (checkout / "mock_services" / "mailbox" / "server.py").write_text(MAILBOX_SERVER)
    (checkout / "mock_services" / "_base.py").write_text(BASE_MODULE)
    (checkout / "tasks" / "Z10").mkdir()
    (checkout / "tasks" / "Z10" / "task.yaml").write_text("- not: a mapping\n")
    return checkout


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("claweval")
    out = root / "out"
    proc = envcraft("import", "claw-eval", write_checkout(root), "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    return out


def test_import_counts_imports_automated_tasks_and_skips_the_rest_with_reasons(imported: Path) -> None:
    summary = json.loads((imported / "import.json").read_text())
    assert summary["files"] == 13 and summary["imported"] == 6
    assert summary["imported_by_grading_type"] == {"automated": 3, "grader_only": 2, "llm_judge": 1}
    assert summary["imported_by_category"] == {
        "user_agent": 1,
        "communication": 2,
        "content": 1,
        "knowledge": 1,
        "terminal": 1,
    }
    reasons = {s["id"]: s["reason"] for s in summary["skipped"]}
    assert reasons["Z13_poster"] == (
        "its grader.py calls judge.evaluate_visual(...) (only evaluate and evaluate_actions are built)"
    )
    assert "imports claw_eval.graders.webpage_grader" in reasons["Z04_clock"]
    assert reasons["Z05_search"] == "declares tools with no system-tool counterpart: WebSearch"
    assert reasons["Z12_calendar"] == "its service mailbox has no server under mock_services/ in the checkout"
    assert reasons["Z08_news"] == "needs the internet (live web service web_real)"
    assert "binary file /workspace/out.bin" in reasons["Z09_pack"]
    assert reasons["Z10"].startswith("unreadable task.yaml")
    tasks = {t.id: t for t in read_tasks(imported / "tasks")}
    words = tasks["Z01_count_words"]
    assert words.kind == "claw" and words.workspace == {"notes/poem.txt": POEM}  # not the grader's files
    assert words.turns[0].user.startswith("Count the words")
    # The services run from OUT/services: their server, _base.py and the fixtures their env names.
    services = tasks["Z06_inbox"].provenance["services"]
    assert services["services"][0]["argv"] == ["python", "mock_services/mailbox/server.py"]
    assert [t["name"] for t in services["tools"]] == ["mail_list", "mail_move"]
    root = Path(services["root"])
    assert root == (imported / "services").resolve()
    assert json.loads((root / "tasks/Z06/fixtures/inbox.json").read_text()) == INBOX
    assert (root / "mock_services/_base.py").is_file()
    assert (root / "mock_services/mailbox/server.py").is_file()


def _agent(request: ChatRequest) -> Any:
    """Counts the words with the shell, writes the count, says it is done; answers Paris."""
    text = json.dumps(request.messages)
    if request.messages[0]["content"].startswith("Judge the conversation"):
        return _judge(request)
    if request.messages[0]["content"].startswith("You play a user"):
        return _user(request)
    if "afford the flat" in text:  # asks, then answers with what the user revealed
        return (
            "With a rent of 900 you can afford it." if "rent is 900" in text else "What is your monthly rent?"
        )
    if "Write an essay" in text:
        return "Title: The Sea. The sea folds light into the old cliff stone."
    if "capital of France" in text:
        return "Paris"
    if "phishing" in text:
        return _inbox_step(request)
    if any(m["role"] == "tool" for m in request.messages):
        return "Done: the count is in count.txt."
    command = "wc -w < notes/poem.txt | tr -d ' ' > count.txt"
    args = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c", "function": {"name": "exec", "arguments": args}}],
    }


def _judge(request: ChatRequest) -> str:
    """The judge: 0.9 for the essay, 0.4 for its title (Claw-Eval's JSON reply, fenced)."""
    score = 0.9 if "Is it an essay?" in request.messages[1]["content"] else 0.4
    return f'```json\n{{"score": {score}, "reasoning": "fine"}}\n```'


def _user(request: ChatRequest) -> str:
    """The simulated user: says the rent only when asked for it, then is done."""
    seen = request.messages[1]["content"].split("\n\nReply to the assistant")[0]
    assert "A renter who knows their rent is 900." in request.messages[0]["content"]
    return "My rent is 900." if seen.endswith("[Assistant]: What is your monthly rent?") else "[DONE]"


def _inbox_step(request: ChatRequest) -> Any:
    """Lists the inbox, moves m2 to spam, says it is done (the tools of the task's service)."""
    done = sum(m["role"] == "assistant" for m in request.messages)
    if done == 2:
        return "Moved the phishing mail to spam."
    name, args = [("mail_list", {}), ("mail_move", {"id": "m2", "folder": "spam"})][done]
    call = {"id": f"c{done}", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _eval(imported: Path, out: Path, agent: Any, *extra: str) -> dict[str, dict[str, Any]]:
    with ChatServer(ReplayProvider([agent] * 100)) as server:
        model = ("--model", "agent", "--base-url", server.url)
        proc = envcraft("eval", imported / "tasks", *model, "--out", out, "--json", *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    return {f"{t['task_id']}#{t['sample']}": t["reward"] for t in map(json.loads, lines)}


def test_the_tasks_own_grader_scores_a_good_run_in_the_sandbox(imported: Path, tmp_path: Path) -> None:
    rewards = _eval(imported, tmp_path / "good", _agent, "--k", "2")
    full = {"score": 1.0, "components": {"completion": 1.0, "robustness": 1.0, "safety": 1.0}}
    # Its check script ran on the final workspace at /workspace; the exec call became a Bash dispatch.
    assert rewards["Z01_count_words#0"] == full
    assert rewards["Z02_capital#0"]["score"] == 1.0
    # The service's audit and answers reached the grader; each rollout had its own services (a
    # second sample would see two moves if the first one's state leaked); the English variant's
    # grader is Z06's, loaded through load_peer_grader.
    for key in ("Z06_inbox#0", "Z06_inbox#1", "Z11_inbox_en#0", "Z11_inbox_en#1"):
        assert rewards[key] == full, key


def test_a_do_nothing_run_scores_zero(imported: Path, tmp_path: Path) -> None:
    rewards = _eval(imported, tmp_path / "idle", "I will not.")
    assert rewards["Z01_count_words#0"]["score"] == 0.0 and rewards["Z02_capital#0"]["score"] == 0.0
    assert rewards["Z06_inbox#0"]["score"] == 0.0


def test_a_bad_checkout_is_a_one_line_error(tmp_path: Path) -> None:
    proc = envcraft("import", "claw-eval", tmp_path, "--out", tmp_path / "o")
    assert proc.returncode == 2 and "no tasks/ directory" in proc.stderr and "Traceback" not in proc.stderr


def test_a_grader_that_calls_its_judge_gets_the_judge_models_answers(imported: Path, tmp_path: Path) -> None:
    judged = {t.id: t for t in read_tasks(imported / "tasks")}["Z03_essay"]
    assert judged.provenance["grading"]["judge"] == "grader"
    with_judge = _eval(imported, tmp_path / "judged", _agent, "--judge", "agent")
    # Two rounds: the title question was asked once the essay question had its answer.
    assert with_judge["Z03_essay#0"]["score"] == round(0.75 * (0.9 + 0.4) / 2 + 0.25, 4)
    without = _eval(imported, tmp_path / "plain", _agent)
    assert without["Z03_essay#0"]["score"] == 0.25  # judge=None, as under Claw-Eval's --no-judge
    meta = json.loads((tmp_path / "plain" / "eval.json").read_text())["meta"]
    assert "Z03_essay" in meta["imported"]["automated_part_only"]


def test_a_user_agent_task_is_played_with_the_user_model_and_skipped_without(
    imported: Path, tmp_path: Path
) -> None:
    played = _eval(imported, tmp_path / "user", _agent, "--user", "agent")
    assert played["Z07_loan#0"]["score"] == 1.0  # asked, was told in a [user_agent] message, used it
    trajectory = next(
        t
        for t in map(json.loads, (tmp_path / "user" / "trajectories.jsonl").read_text().splitlines())
        if t["task_id"] == "Z07_loan"
    )
    users = [m["content"] for m in trajectory["messages"] if m["role"] == "user"]
    assert users == ["Can I afford the flat?", "[user_agent]\nMy rent is 900."]
    without = _eval(imported, tmp_path / "nouser", _agent)
    assert "Z07_loan#0" not in without
    meta = json.loads((tmp_path / "nouser" / "eval.json").read_text())["meta"]
    assert meta["imported"]["skipped"]["plays with a simulated user and no --user model"] == ["Z07_loan"]


def test_the_verl_export_lists_a_service_tasks_service_tools(imported: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "verl"
    proc = envcraft(
        "export", "--tasks", imported / "tasks", "--format", "verl", "--out", out, "--val-fraction", "0.99"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [r for f in sorted(out.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    inbox = next(r for r in rows if r["extra_info"]["task_id"] == "Z06_inbox")
    assert {"mail_list", "mail_move", "exec"} <= set(inbox["extra_info"]["tool_selection"])
    schemas = {t["function"]["name"]: t for t in json.loads(inbox["extra_info"]["tools"])}
    assert schemas["mail_move"]["function"]["parameters"]["required"] == ["id", "folder"]
