"""Export a task set for trainers: JSONL as is, flat Parquet, or VERL's RL dataset rows.

VERL (0.9) reads Parquet rows ``data_source, prompt, ability, reward_model, extra_info,
agent_name``. ``prompt`` is the chat the policy starts from (a system message with the
environments' documentation and tool list, then the first user turn); the other turns are
revealed by an interaction (``extra_info.interaction_kwargs``); the reward is the task's
verifier, so ``reward_model.ground_truth`` is the whole task as a JSON string (verifier, S0,
turns, golden run). Per-tool ``tools_kwargs`` name the task so a tool can find the rollout's
session; every row lists every tool of the export, so the column has one Parquet type and a
trainer never reads a missing tool as null. Environment state travels as JSON strings, since
state shapes differ between environments and Parquet columns cannot.

Files are written atomically (temp file + ``os.replace``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.tasks.episode import resolve_packages
from envcraft.tasks.io import write_tasks
from envcraft.tasks.model import Task

FORMATS = ("jsonl", "parquet", "verl")
FILES = {"jsonl": "tasks.jsonl", "parquet": "tasks.parquet", "verl": "train.parquet"}
AGENT_NAMES = ("envcraft_agent", "tool_agent")
INTERACTION = "envcraft_user"
_JSON_COLUMNS = ("turns", "initial_state", "workspace", "verifier", "reference", "provenance", "quality")


class ExportError(ValueError):
    """An export that cannot be written (unknown format, missing pyarrow, unloadable env)."""


def export(
    tasks: Sequence[Task],
    fmt: str,
    out: str | Path,
    *,
    agent_name: str = AGENT_NAMES[0],
    split: str = "train",
) -> Path:
    """Write ``tasks`` in ``fmt`` into directory ``out``; returns the written file."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if agent_name not in AGENT_NAMES:
        raise ExportError(f"unknown agent name {agent_name!r}; choose one of {', '.join(AGENT_NAMES)}")
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        return write_tasks(root, tasks)
    if fmt == "parquet":
        return _write_parquet(root / FILES[fmt], [task_row(t) for t in tasks], _task_schema())
    if not tasks:
        raise ExportError("no tasks to export (a VERL dataset needs at least one row)")
    packages = {t.id: _packages(t) for t in tasks}
    tool_names = sorted(
        {name for found in packages.values() for p in found.values() for name in p.env_class.tools}
    )
    rows = [verl_row(t, i, packages[t.id], tool_names, agent_name, split) for i, t in enumerate(tasks)]
    return _write_parquet(root / FILES[fmt], rows, _verl_schema(tool_names))


def task_row(task: Task) -> dict[str, Any]:
    """One flat row: scalars as columns, nested fields as JSON strings."""
    data = task.model_dump(mode="json")
    row: dict[str, Any] = {
        "id": task.id,
        "envs": list(task.envs),
        "kind": task.kind,
        "persona": task.persona,
        "n_turns": len(task.turns),
        "n_calls": len(task.reference.calls),
    }
    row.update({name: json.dumps(data[name], ensure_ascii=False) for name in _JSON_COLUMNS})
    row["difficulty"] = None if task.difficulty is None else json.dumps(task.difficulty, ensure_ascii=False)
    return row


def verl_row(
    task: Task,
    index: int,
    packages: dict[str, EnvPackage],
    tool_names: Sequence[str],
    agent_name: str,
    split: str,
) -> dict[str, Any]:
    """The VERL RL-dataset row of one task (see the module docstring)."""
    ground_truth = task.model_dump_json()
    return {
        "data_source": "envcraft/" + "+".join(task.envs),
        "prompt": [
            {"role": "system", "content": system_prompt(task, packages)},
            {"role": "user", "content": task.turns[0].user if task.turns else ""},
        ],
        "ability": "agent" if task.kind == "claw" else "tool-use",
        "reward_model": {"style": "rule", "ground_truth": ground_truth},
        "extra_info": {
            "index": index,
            "split": split,
            "task_id": task.id,
            "envs": list(task.envs),
            "kind": task.kind,
            "initial_state": json.dumps(task.initial_state, ensure_ascii=False),
            "workspace": json.dumps(task.workspace, ensure_ascii=False),
            "need_tools_kwargs": True,
            "tools_kwargs": {name: {"create_kwargs": {"task_id": task.id}} for name in tool_names},
            "interaction_kwargs": {
                "name": INTERACTION,
                "task_id": task.id,
                "turns": [turn.user for turn in task.turns],
            },
        },
        "agent_name": agent_name,
    }


def system_prompt(task: Task, packages: dict[str, EnvPackage]) -> str:
    """What the agent is told up front: each environment's documentation and its tools."""
    parts = ["You are an agent working in the environments below. Use their tools to do what the user asks."]
    if task.kind == "claw":
        parts.append("You share one workspace directory with these environments; file tools work inside it.")
    for env in task.envs:
        package = packages[env]
        doc = package.readme.strip() or package.env_class.describe()
        lines = [f"## {package.manifest.title} (`{env}`)", doc, "", "Tools:"]
        for spec in package.env_class.tools.values():
            params = ", ".join(spec.parameters.get("properties", {}))
            summary = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
            lines.append(f"- {spec.name}({params}): {summary}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _packages(task: Task) -> dict[str, EnvPackage]:
    try:
        return resolve_packages(task)
    except ValueError as exc:
        raise ExportError(str(exc)) from None


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ExportError("Parquet export needs pyarrow: pip install 'envcraft[data]'") from None
    return pyarrow


def _task_schema() -> Any:
    pa = _pyarrow()
    fields = [
        ("id", pa.string()),
        ("envs", pa.list_(pa.string())),
        ("kind", pa.string()),
        ("persona", pa.string()),
        ("n_turns", pa.int32()),
        ("n_calls", pa.int32()),
        *((name, pa.string()) for name in _JSON_COLUMNS),
        ("difficulty", pa.string()),
    ]
    return pa.schema(fields)


def _verl_schema(tool_names: Sequence[str]) -> Any:
    pa = _pyarrow()
    create = pa.struct([("create_kwargs", pa.struct([("task_id", pa.string())]))])
    extra = pa.struct(
        [
            ("index", pa.int64()),
            ("split", pa.string()),
            ("task_id", pa.string()),
            ("envs", pa.list_(pa.string())),
            ("kind", pa.string()),
            ("initial_state", pa.string()),
            ("workspace", pa.string()),
            ("need_tools_kwargs", pa.bool_()),
            ("tools_kwargs", pa.struct([(name, create) for name in tool_names])),
            (
                "interaction_kwargs",
                pa.struct(
                    [("name", pa.string()), ("task_id", pa.string()), ("turns", pa.list_(pa.string()))]
                ),
            ),
        ]
    )
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", extra),
            ("agent_name", pa.string()),
        ]
    )


def _write_parquet(path: Path, rows: list[dict[str, Any]], schema: Any) -> Path:
    pa = _pyarrow()
    table = pa.Table.from_pylist(rows, schema=schema)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pa.parquet.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
