"""Claw-Eval's grading, as it runs inside the isolated worker (with pydantic and yaml read-only).

An imported task's verifier source is the :mod:`envcraft.sandbox.extras` marker line, this
module's text and one ``GRADING = {...}`` line (see
:func:`envcraft.integrations.claweval.convert.verifier_source`), which carries the task's
``task.yaml`` data, its ``grader.py`` and the ``claw_eval`` modules the grader imports, copied
from the user's checkout at import time. ``verify(ctx)`` does what Claw-Eval's ``cli`` does
after an episode, on envcraft's:

* the workspace after the run (``ctx["files"]``) and the task's ``sandbox_grader_files`` are
  written to ``/workspace`` (the worker's scratch one), the task's ``env_snapshot_commands``
  run there and their output becomes ``env_snapshot`` (``cmd:<command>`` ->
  ``stdout``/``stderr``/``exit_code``), as the benchmark's sandbox server returns it;
* the conversation (``ctx["messages"]``, OpenAI chat messages) becomes Claw-Eval's trace:
  ``TraceMessage``s with ``text``/``tool_use``/``tool_result`` blocks and one ``ToolDispatch``
  per tool call, under the benchmark's tool name (``exec`` -> ``Bash``, ...); a call to a
  mock service's tool carries what the service answered (``ctx["services"]["calls"]``: its
  HTTP status and JSON body, in call order), as Claw-Eval's dispatcher records it;
* the services' audits (``ctx["services"]["audit"]``) are the grader's ``audit_data``;
* the task's grader class (the ``AbstractGrader`` subclass its ``grader.py`` defines; one it
  builds on with ``load_peer_grader`` is loaded from the copied source in ``GRADING["peers"]``)
  grades them, and the score is the benchmark's ``compute_task_score``.

**The judge.** A grader that calls Claw-Eval's ``LLMJudge`` (``judge.evaluate(...)``,
``judge.evaluate_actions(...)``) gets :class:`Judge` when the eval has a judge model, and
``None`` otherwise (Claw-Eval's ``--no-judge``). The worker has no network, so a request
is answered from ``ctx["judge_answers"]`` (the judge model's reply text, keyed by the
request's hash); a request with no answer yet is returned in ``judge_requests`` (Claw-Eval's
own system prompt and user message, copied from the checkout) and scores 0 meanwhile. The
host (:mod:`envcraft.rollout.grading`) asks the judge model and grades again with the
answers, until the grader asks nothing new: the grader is deterministic given its judge's
replies, so the last grading is the one Claw-Eval would give with those replies.
"""

import hashlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

GRADING: dict[str, Any] = {}  # replaced by the task's own: task.yaml data, sources, tool names
WORKSPACE = "/workspace"
GRADER_MODULE = "claw_eval_task_grader"


class _Sources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import the copied ``claw_eval`` modules (and the grader) from their source text."""

    def __init__(self, modules: dict[str, str]) -> None:
        self.modules = modules  # dotted name -> source; a package's name maps to its __init__

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.modules:
            return None
        package = any(other.startswith(name + ".") for other in self.modules)
        return importlib.util.spec_from_loader(name, self, is_package=package)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        """Run the module's source; ``__file__`` is where a checkout would hold it (never read)."""
        name = module.__name__
        path = "/claw-eval/src/" + name.replace(".", "/")
        if any(other.startswith(name + ".") for other in self.modules):
            module.__path__ = []
            path += "/__init__"
        module.__file__ = path + ".py"
        exec(compile(self.modules[name], module.__file__, "exec"), module.__dict__)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def trace(
    messages: list[dict[str, Any]], served: list[dict[str, Any]] | None = None
) -> tuple[list[Any], list[Any]]:
    """OpenAI chat messages -> Claw-Eval's ``(messages, dispatches)`` (the system prompt is not
    traced); ``served``: the mock services' record of the calls they answered, in order."""
    from claw_eval.models.content import TextBlock, ToolResultBlock, ToolUseBlock
    from claw_eval.models.message import Message
    from claw_eval.models.trace import ToolDispatch, TraceMessage

    names = GRADING.get("tool_names") or {}
    out: list[Any] = []
    dispatches: list[Any] = []
    calls: dict[str, Any] = {}
    answers: dict[str, list[dict[str, Any]]] = {}
    for answer in served or []:
        answers.setdefault(str(answer.get("tool")), []).append(answer)
    for message in messages:
        role = message.get("role")
        if role == "user":
            out.append(Message(role="user", content=[TextBlock(text=_text(message.get("content")))]))
        elif role == "assistant":
            blocks: list[Any] = []
            text = _text(message.get("content"))
            if text:
                blocks.append(TextBlock(text=text))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                name = names.get(function.get("name", ""), function.get("name", ""))
                block = ToolUseBlock(
                    id=call.get("id", ""), name=name, input=_arguments(function.get("arguments"))
                )
                calls[block.id] = block
                blocks.append(block)
            out.append(Message(role="assistant", content=blocks))
        elif role == "tool":
            text = _text(message.get("content"))
            use_id = message.get("tool_call_id", "")
            use = calls.get(use_id)
            queue = answers.get(use.name) if use is not None else None
            record: dict[str, Any] | None = queue.pop(0) if queue else None
            if record is not None:  # Claw-Eval's dispatcher: the service's status and JSON body
                status, body, url = int(record.get("status", 500)), record.get("body"), record.get("url", "")
                text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            else:
                status = 400 if text.startswith('{"error"') else 200
                body, url = text, ""
            blocks = [TextBlock(text=text)]
            result = ToolResultBlock(tool_use_id=use_id, content=blocks, is_error=status >= 400)
            out.append(Message(role="user", content=[result]))
            if use is not None:
                dispatches.append(
                    ToolDispatch(
                        trace_id="envcraft",
                        tool_use_id=use_id,
                        tool_name=use.name,
                        endpoint_url=url,
                        request_body=use.input,
                        response_status=status,
                        response_body=body,
                    )
                )
    return [TraceMessage(trace_id="envcraft", message=m) for m in out], dispatches


def _write(files: dict[str, str]) -> None:
    for rel, content in files.items():
        target = os.path.join(WORKSPACE, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(content)


def env_snapshot(files: dict[str, str]) -> dict[str, Any]:
    """Run the task's snapshot commands on the final workspace, as Claw-Eval's sandbox does."""
    if not os.path.isdir(WORKSPACE):
        raise RuntimeError("the task's snapshot commands need the bubblewrap sandbox's /workspace")
    for name in os.listdir(WORKSPACE):
        path = os.path.join(WORKSPACE, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    _write(files)
    _write(GRADING.get("grader_files") or {})
    snapshot: dict[str, Any] = {}
    for command in GRADING.get("snapshot_commands") or []:
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=WORKSPACE,
                capture_output=True,
                text=True,
                timeout=GRADING.get("snapshot_timeout", 10),
            )
            snapshot["cmd:" + command] = {
                "stdout": done.stdout,
                "stderr": done.stderr,
                "exit_code": done.returncode,
            }
        except subprocess.TimeoutExpired as exc:
            snapshot["cmd:" + command] = {"error": f"timed out: {exc}"}
    return snapshot


def _load_peer(task_id: str, tasks_dir: Any = None) -> type:
    """Claw-Eval's ``load_peer_grader`` over the copied peer sources (no checkout here)."""
    from claw_eval.graders.base import AbstractGrader

    source = (GRADING.get("peers") or {}).get(task_id)
    if source is None:
        raise FileNotFoundError(f"No grader found for task_id={task_id!r}")
    name = f"peer_grader_{task_id}"
    module = type(sys)(name)
    module.__file__ = f"/claw-eval/tasks/{task_id}/grader.py"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    for _name, value in inspect.getmembers(module, inspect.isclass):
        if issubclass(value, AbstractGrader) and value is not AbstractGrader:
            return value
    raise ValueError(f"No AbstractGrader subclass found in the grader of {task_id}")


class JudgeResult:
    """What Claw-Eval's judge returns: a clamped ``score`` and its ``reasoning``."""

    def __init__(self, score: float, reasoning: str) -> None:
        self.score, self.reasoning = score, reasoning


def parse_judge_reply(raw: str) -> JudgeResult:
    """Claw-Eval's ``LLMJudge`` reply parsing (code fences, the first ``{...}``, a regex
    fallback); a reply with no score is a 0 (Claw-Eval would ask again)."""
    raw = re.sub(r"^```(?:json)?\s*", "", raw.strip())
    raw = re.sub(r"\s*```$", "", raw.strip())
    found = re.search(r"\{[^{}]*\}", raw)
    if found:
        raw = found.group(0)
    try:
        parsed = json.loads(raw)
        score, reasoning = parsed["score"], parsed["reasoning"]
    except (ValueError, KeyError, TypeError):
        score_m = re.search(r'"score"\s*:\s*([0-9.]+)', raw)
        reason_m = re.search(r'"reasoning"\s*:\s*"((?:[^"\\]|\\.)*)"', raw)
        if not score_m:
            return JudgeResult(0.0, "the judge's reply holds no score")
        score, reasoning = score_m.group(1), reason_m.group(1) if reason_m else ""
    try:
        value = float(score)
    except (TypeError, ValueError):
        return JudgeResult(0.0, "the judge's reply holds no score")
    return JudgeResult(max(0.0, min(1.0, value)), str(reasoning))


class Judge:
    """Claw-Eval's ``LLMJudge`` in the worker: answers from ``ctx["judge_answers"]`` or asks."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []

    def _ask(self, system: str, user: str) -> JudgeResult:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        key = hashlib.sha256(json.dumps(messages, sort_keys=True).encode("utf-8")).hexdigest()
        if key in self.answers:
            return parse_judge_reply(self.answers[key])
        if all(r["key"] != key for r in self.requests):
            self.requests.append({"key": key, "messages": messages})
        return JudgeResult(0.0, "awaiting the judge")

    def evaluate(self, task_prompt: str, conversation: str, actions_summary: str, rubric: str) -> JudgeResult:
        user = (
            f"## Task Prompt\n{task_prompt}\n\n"
            f"## Conversation\n{conversation}\n\n"
            f"## Actions Taken\n{actions_summary}\n\n"
            f"## Rubric\n{rubric}"
        )
        return self._ask(GRADING["judge_prompts"]["evaluate"], user)

    def evaluate_actions(self, task_prompt: str, artifacts: str, rubric: str) -> JudgeResult:
        user = (
            f"## Task Prompt\n{task_prompt}\n\n"
            f"## Agent Actions (from server audit log)\n{artifacts}\n\n"
            f"## Rubric\n{rubric}"
        )
        return self._ask(GRADING["judge_prompts"]["evaluate_actions"], user)

    def get_call_log(self) -> list[dict[str, Any]]:
        return []

    def reset_call_log(self) -> None:
        return None


def _grader() -> Any:
    import claw_eval.graders.base as base
    from claw_eval.graders.base import AbstractGrader

    base.load_peer_grader = _load_peer

    module = sys.modules[GRADER_MODULE] = importlib.import_module(GRADER_MODULE)
    found = [  # as Claw-Eval's get_grader: the first by name
        value
        for _name, value in inspect.getmembers(module, inspect.isclass)
        if inspect.isclass(value)
        and issubclass(value, AbstractGrader)
        and value is not AbstractGrader
        and value.__module__ == GRADER_MODULE
    ]
    if not found:
        raise ValueError("the task's grader.py defines no AbstractGrader subclass")
    return found[0]()


def verify(ctx: dict[str, Any]) -> dict[str, Any]:
    sys.meta_path.insert(0, _Sources({**GRADING["modules"], GRADER_MODULE: GRADING["grader"]}))
    from claw_eval.models.scoring import compute_task_score
    from claw_eval.models.task import TaskDefinition

    task = TaskDefinition.model_validate(GRADING["task"])
    services = ctx.get("services") or {}
    messages, dispatches = trace(ctx.get("messages") or [], services.get("calls"))
    grader = _grader()
    params = inspect.signature(grader.grade).parameters
    answers = ctx.get("judge_answers")
    judge = Judge(answers) if isinstance(answers, dict) and GRADING.get("judge_prompts") else None
    kwargs: dict[str, Any] = {"audit_data": services.get("audit") or {}, "judge": judge}
    if "media_events" in params:
        kwargs["media_events"] = []
    if "env_snapshot" in params and GRADING.get("snapshot_commands"):
        kwargs["env_snapshot"] = env_snapshot(ctx.get("files") or {})
    scores = grader.grade(messages, dispatches, task, **kwargs)
    components = {k: float(getattr(scores, k)) for k in ("completion", "robustness", "safety")}
    result: dict[str, Any] = {"score": float(compute_task_score(scores)), "components": components}
    if judge is not None and judge.requests:
        result["judge_requests"] = judge.requests
    return result
