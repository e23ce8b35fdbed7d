"""One Claw-Eval task directory -> one envcraft Claw task, or the reason it cannot be one.

A task runs in the bare workspace environment (:mod:`envcraft.integrations.clawbench`) under
the OpenClaw profile, whose system tools stand in for the benchmark's sandbox tools
(:data:`TOOL_MAP`); the tools of its mock services reach them (:mod:`.services`: started
for each episode on loopback in its own network namespace). Its workspace holds the task's
``sandbox_files`` at the paths the benchmark's container has them under ``/workspace``; its
one user turn is ``prompt.text``.
The verifier is :mod:`.harness` with the task's ``task.yaml`` data, its ``grader.py`` and the
``claw_eval`` modules the grader needs, all copied from the checkout into the task (the
output directory's ``tasks.jsonl``: the user's data), so the task's own grader scores the
episode in the isolated worker, given read-only pydantic and yaml and a scratch ``/workspace``
(see :mod:`envcraft.sandbox.extras`).

A grader that calls Claw-Eval's LLM judge (``judge.evaluate``, ``judge.evaluate_actions``)
imports with the judge's system prompts read from the checkout's ``llm_judge.py``; with
``--judge MODEL`` the eval answers its requests (:mod:`.harness`), without one it gets
``judge=None`` as under Claw-Eval's ``--no-judge``. What a grader needs beyond that (the web,
a simulated user, media, browser or visual grading, binary files) is the reason a task is
skipped. A grader that builds on another task's (``load_peer_grader("T007zh_...")``, the
English variants) gets that grader's source too.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.integrations.claweval import harness
from envcraft.integrations.claweval.services import service_problem, services_block
from envcraft.sandbox.extras import Extras, marker
from envcraft.tasks.format.model import Reference, Task, Turn, Verifier

BENCHMARK = "claw-eval"
# Claw-Eval's sandbox tools -> the OpenClaw profile's system tools that do their job.
TOOL_MAP = {"Bash": "exec", "Read": "read", "Write": "write", "Edit": "edit"}
EXTRAS = Extras(libraries=("pydantic", "yaml"), workspace=True)
# The claw_eval modules every grader gets (what ``claw_eval.graders.base`` imports, with its
# package's ``__init__``); a grader importing any other claw_eval module is not imported.
PACKAGE_FILES = (
    "__init__.py",
    "graders/__init__.py",
    "graders/base.py",
    "graders/registry.py",
    "models/__init__.py",
    "models/content.py",
    "models/message.py",
    "models/scoring.py",
    "models/task.py",
    "models/tool.py",
    "models/trace.py",
)
# Copied when the checkout has them: the base of the simulated-user tasks' graders.
OPTIONAL_FILES = ("graders/user_agent_clarify_base.py",)
_CLAW_IMPORT = re.compile(r"^\s*(?:from|import)\s+(claw_eval[\w.]*)", re.M)
_PEER = re.compile(r"load_peer_grader\(\s*[\"']([\w.-]+)[\"']")
_JUDGE = re.compile(r"\bjudge\s*\.\s*(\w+)\s*\(|\bjudge\s*\(")
JUDGE_METHODS = ("evaluate", "evaluate_actions")
JUDGE_PROMPTS = {"evaluate": "_SYSTEM_PROMPT", "evaluate_actions": "_ACTIONS_SYSTEM_PROMPT"}
_BINARY = re.compile(
    r"/workspace/[\w./-]+\.(?:dat|bin|db|db-wal|wal|sqlite|xlsx|docx|pdf|png|jpe?g|gif|mp[34]|zip)\b"
)


@dataclass(frozen=True)
class Skipped:
    """A task that is not imported, and why."""

    id: str
    category: str
    grading: str
    reason: str


def package_sources(checkout: Path) -> dict[str, str] | str:
    """The copied ``claw_eval`` modules (dotted name -> source), or why they cannot be read."""
    root = checkout / "src" / "claw_eval"
    sources: dict[str, str] = {}
    for rel in PACKAGE_FILES + OPTIONAL_FILES:
        path = root / rel
        if not path.is_file():
            if rel in OPTIONAL_FILES:
                continue
            return f"the checkout has no src/claw_eval/{rel}"
        parts = ["claw_eval", *rel[: -len(".py")].split("/")]
        if parts[-1] == "__init__":
            parts.pop()
        sources[".".join(parts)] = path.read_text(encoding="utf-8")
    return sources


def grader_problem(source: str, modules: Collection[str]) -> str | None:
    """Why a ``grader.py`` cannot score without more than the copied ``modules``, or None."""
    for name in _CLAW_IMPORT.findall(source):
        if name not in modules:
            return f"its grader.py imports {name} (media or browser grading): not built yet"
    for found in _JUDGE.finditer(source):
        if found.group(1) not in JUDGE_METHODS:
            call = f"judge.{found.group(1)}" if found.group(1) else "judge"
            return f"its grader.py calls {call}(...) (only evaluate and evaluate_actions are built)"
    return None


def calls_judge(source: str) -> bool:
    return _JUDGE.search(source) is not None


def judge_prompts(checkout: Path) -> dict[str, str] | str:
    """Claw-Eval's judge system prompts (method -> text) from the checkout's ``llm_judge.py``."""
    path = checkout / "src" / "claw_eval" / "graders" / "llm_judge.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        return f"the checkout's llm_judge.py cannot be read ({exc})"
    constants: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    constants[target.id] = node.value.value
    missing = [name for name in JUDGE_PROMPTS.values() if name not in constants]
    if missing:
        return f"the checkout's llm_judge.py has no {', '.join(missing)}"
    return {method: constants[name] for method, name in JUDGE_PROMPTS.items()}


def peer_graders(tasks_dir: Path, source: str, modules: Collection[str]) -> dict[str, str] | str:
    """The graders ``source`` loads with ``load_peer_grader`` (task id -> source, transitively),
    or why one cannot be used."""
    peers: dict[str, str] = {}
    pending = _PEER.findall(source)
    if "load_peer_grader" in source and not pending:
        return "its grader.py loads another task's grader by a name not written out"
    while pending:
        peer = pending.pop()
        if peer in peers:
            continue
        path = tasks_dir / peer / "grader.py"
        if ".." in Path(peer).parts or not path.is_file():
            return f"its grader.py loads the grader of {peer}, which the checkout does not have"
        text = path.read_text(encoding="utf-8")
        problem = grader_problem(text, modules)
        if problem:
            return problem.replace("its grader.py", f"the grader of {peer} it builds on")
        peers[peer] = text
        pending.extend(_PEER.findall(text))
    return peers


def convert(
    task: dict[str, Any],
    task_dir: Path,
    sources: dict[str, str],
    package: EnvPackage,
    kind: str,
    out: Path,
) -> Task | Skipped:
    """The envcraft task of ``task`` (its files read from ``task_dir``), or why not; the files
    its services need are copied under ``out``."""
    task_id, category = str(task.get("task_id", task_dir.name)), str(task.get("category", ""))

    def skip(reason: str) -> Skipped:
        return Skipped(task_id, category, kind, reason)

    grader_path = task_dir / "grader.py"
    if not grader_path.is_file():
        return skip("no grader.py")
    grader = grader_path.read_text(encoding="utf-8")
    problem = grader_problem(grader, sources)
    if problem:
        return skip(problem)
    checkout = task_dir.parent.parent
    peers = peer_graders(task_dir.parent, grader, sources)
    if isinstance(peers, str):
        return skip(peers)
    prompt = str((task.get("prompt") or {}).get("text") or "").strip()
    if not prompt:
        return skip("no prompt.text")
    names = [str(t.get("name")) for t in task.get("tools") or [] if isinstance(t, dict)]
    served = {str(e.get("tool_name")) for e in task.get("tool_endpoints") or [] if isinstance(e, dict)}
    unmapped = [n for n in names if n not in TOOL_MAP and n not in served]
    if unmapped:
        return skip(f"declares tools with no system-tool counterpart: {', '.join(unmapped)}")
    for key in ("env_snapshot_files", "local_grader_files"):
        if task.get(key):
            return skip(f"its grading collects {key}: not built yet")
    commands = [str(c) for c in task.get("env_snapshot_commands") or []]
    binary = _BINARY.search("\n".join([prompt, *commands]))
    if binary:
        return skip(
            f"its grading reads the binary file {binary.group(0)} (a workspace snapshot holds text only)"
        )
    files = _read_files(task_dir, task.get("sandbox_files") or [])
    if isinstance(files, str):
        return skip(files)
    grader_files = _read_files(task_dir, task.get("sandbox_grader_files") or [])
    if isinstance(grader_files, str):
        return skip(grader_files)
    problem = service_problem(checkout, task)
    if problem:
        return skip(problem)
    used = set(_CLAW_IMPORT.findall("\n".join([grader, *peers.values()])))
    bases = [sources[m] for m in used if m in sources]
    judged = any(calls_judge(text) for text in [grader, *peers.values(), *bases])
    prompts = judge_prompts(checkout) if judged else {}
    if isinstance(prompts, str):
        return skip(prompts)
    grading = {
        "task": task,
        "judge_prompts": prompts,
        "grader": grader,
        "peers": peers,
        "modules": sources,
        "tool_names": {ours: theirs for theirs, ours in TOOL_MAP.items()},
        "grader_files": grader_files,
        "snapshot_commands": commands,
        "snapshot_timeout": int((task.get("environment") or {}).get("env_snapshot_timeout", 10)),
    }
    provenance: dict[str, Any] = {}
    if task.get("services"):
        provenance["services"] = services_block(checkout, task, out)
    user = task.get("user_agent") or {}
    if user.get("enabled"):
        provenance["user_agent"] = {
            "persona": str(user.get("persona") or ""),
            "max_rounds": int(user.get("max_rounds") or 3),
            "system_prompt_suffix": str(user.get("system_prompt_suffix") or ""),
            "prefix": "[user_agent]\n",  # how Claw-Eval marks the simulated user's messages
        }
    return Task(
        id=task_id,
        envs=[package.manifest.id],
        kind="claw",
        turns=[Turn(user=prompt)],
        initial_state={package.manifest.id: {}},
        workspace=files,
        verifier=Verifier(source=verifier_source(grading)),
        reference=Reference(calls=[], final_hash=""),
        provenance={
            "source": BENCHMARK,
            "packages": {package.manifest.id: str(package.root)},
            "grading": {
                "benchmark": BENCHMARK,
                "type": "automated",
                "weights": {"automated": 1.0, "llm_judge": 0.0},
                "reads_transcript": True,
                "skip": None,
                **({"judge": "grader"} if judged else {}),
            },
            BENCHMARK: {
                "dir": task_dir.name,
                "name": str(task.get("task_name", "")),
                "category": category,
                "scoring": kind,
                "tools": names,
                "timeout_seconds": (task.get("environment") or {}).get("timeout_seconds"),
                "services": [str(s.get("name")) for s in task.get("services") or []],
            },
            **provenance,
        },
    )


def verifier_source(grading: dict[str, Any]) -> str:
    """The extras marker, :mod:`.harness` and the task's grading data (runs isolated)."""
    text = Path(harness.__file__).read_text(encoding="utf-8")
    return marker(EXTRAS) + "\n" + text + f"\nGRADING = json.loads({json.dumps(json.dumps(grading))})\n"


def _read_files(task_dir: Path, paths: list[Any]) -> dict[str, str] | str:
    """``{relative path: text}`` of the task's files, or why one cannot be in a workspace."""
    files: dict[str, str] = {}
    for rel in paths:
        path = task_dir / str(rel)
        if ".." in Path(str(rel)).parts or not path.is_file():
            return f"file {rel} is missing from the checkout (Claw-Eval ships fixtures in its dataset)"
        try:
            files[str(rel)] = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return f"file {rel} is binary (a task workspace holds text files only)"
    return files
