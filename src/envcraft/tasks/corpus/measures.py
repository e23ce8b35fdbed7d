"""What a task set is made of: the figures its statistics and the tests of the corpus read.

Each measure reads only the task (its reference, provenance and verifier checks), so the same
function answers for a fresh corpus, a shard, or a task set on disk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from envcraft.tasks.format.model import Task

FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_files", "shell"})


def workspace_use(task: Task) -> set[str]:
    """How a task needs the workspace: ``"file_tool"`` (its reference reads or writes a file with
    a file tool), ``"asked_file"`` (the user asks for a file whose content the verifier parses),
    ``"parsed_output"`` (a goal parses a file a domain tool writes: CSV, JSON), ``"file_fact"``
    (a value the reference needs comes only from a workspace file it reads); empty if none."""
    found: set[str] = set()
    if reads_needed_value(task):
        found.add("file_fact")
    if any(c.tool in FILE_TOOLS for c in task.reference.calls):
        found.add("file_tool")
    if "file_request" in task.provenance:
        found.add("asked_file")
    for check in task.verifier.checks:
        if (
            check["role"] == "goal"
            and check["kind"] == "file"
            and check.get("format") in ("csv", "tsv", "json")
        ):
            found.add("parsed_output")
    return found


def reads_needed_value(task: Task) -> bool:
    """Whether some argument of the reference comes from a workspace file (``file:<path>``)
    that an earlier reference call reads, and no user turn states that value."""
    calls = task.reference.calls
    for i, call in enumerate(calls):
        for arg, value in call.args.items():
            source = call.source(arg)
            if source.kind != "file" or any(str(value) in t.user for t in task.turns):
                continue
            if any(c.tool == "read_file" and c.args.get("path") == source.path for c in calls[:i]):
                return True
    return False


def carries_across(task: Task) -> bool:
    """Whether a value travels from one environment of the task into another: a call takes it
    from a call of another environment (ids carried in free text included), or the file the user
    asks for holds a value from an environment other than the one that writes it."""
    calls = task.reference.calls
    for call in calls:
        for arg in call.args:
            source = call.source(arg)
            if source.from_call and source.call is not None and calls[source.call].env != call.env:
                return True
    request = task.provenance.get("file_request")
    if isinstance(request, dict):
        writer = next((c.env for c in calls if c.tool == "write_file"), None)
        return any(item.get("env") != writer for item in request.get("items", []))
    return False


def adversarial_rate(validated: Iterable[Mapping[str, int]]) -> dict[str, Any]:
    """Candidates that reached validation, how many passed every adversarial policy, and the
    failures per policy (from the shards' ``validated`` counters)."""
    total: Counter[str] = Counter()
    for counts in validated:
        total.update(counts)
    reached, passed = total["reached"], total["passed"]
    failed = {k.split(":", 1)[1]: v for k, v in sorted(total.items()) if k.startswith("failed:")}
    return {
        "reached_validation": reached,
        "passed_every_policy": passed,
        "pass_rate": round(passed / reached, 4) if reached else 0.0,
        "failed_by_policy": failed,
    }


def corpus_measures(tasks: list[Task]) -> dict[str, Any]:
    """Workspace use of the Claw tasks, value passing of the cross-environment tasks, difficulty."""
    claw = [t for t in tasks if t.kind == "claw"]
    uses = [workspace_use(t) for t in claw]
    cross = [t for t in tasks if len(t.envs) > 1]
    features = [t.difficulty.get("features", {}) for t in tasks if t.difficulty]
    return {
        "claw_tasks": len(claw),
        "claw_workspace": {
            "file_tool": sum("file_tool" in u for u in uses),
            "asked_file": sum("asked_file" in u for u in uses),
            "parsed_output": sum("parsed_output" in u for u in uses),
            "file_fact": sum("file_fact" in u for u in uses),
            "file_fact_share": round(sum("file_fact" in u for u in uses) / len(claw), 4) if claw else 0.0,
            "any": sum(bool(u) for u in uses),
            "share": round(sum(bool(u & {"file_tool", "asked_file"}) for u in uses) / len(claw), 4)
            if claw
            else 0.0,
        },
        "cross_env_carrying_values": sum(carries_across(t) for t in cross),
        "cross_env_tasks": len(cross),
        "difficulty": {
            key: _histogram(int(f.get(key, 0)) for f in features)
            for key in ("calls", "writes", "hidden_values", "distractors", "files_written")
        },
    }


def _histogram(values: Iterable[int]) -> dict[str, int]:
    counts = Counter(values)
    return {str(k): counts[k] for k in sorted(counts)}
