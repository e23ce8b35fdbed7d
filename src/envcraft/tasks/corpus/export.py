"""Export a task set for trainers: JSONL as is, flat Parquet, or VERL's RL dataset.

**VERL** (0.9) reads Parquet rows ``data_source, prompt, ability, reward_model, extra_info,
agent_name`` with its ``RLHFDataset``. A VERL export is a directory a GPU machine can take as
it is:

* ``train.parquet`` / ``val.parquet``: one row per task, split by a hash of the task id (so a
  task keeps its split when the set grows). ``prompt`` is the chat the policy starts from: a
  system message (the rollout loop's, :mod:`envcraft.tasks.play.prompts`) and the first user
  turn; the tools travel in the chat template, rendered by the agent loop from the task's own tool list
  (``extra_info.tool_selection``, the names VERL's per-sample tool selection also reads) under
  the export's tool profile (``extra_info.profile``, default ``openclaw`` as ``eval``'s; the
  agent loop plays the row under it). ``extra_info.tools`` holds those tools' OpenAI schemas as
  JSON text, so a length filter counts the prompt as the model sees it
  (:mod:`envcraft.integrations.verl.dataset`).
  The later turns are revealed by the agent loop when the model answers without a tool call.
* ``reward_model.ground_truth`` is compact: ``{"task_id", "sha256"}`` as JSON, the digest of
  the task (:func:`task_digest`), so a reward computed against a different version of the task
  is refused instead of paid. The task itself, S0 and verifier included, is in
  ``tasks.jsonl`` beside the rows.
* ``agent_loop.yaml`` registers envcraft's agent loop under the rows' ``agent_name`` with the
  path of that ``tasks.jsonl`` relative to the yaml's own directory (the loop resolves it
  there), so the export can be moved or copied to a cluster as a whole; pass it as
  ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` (:mod:`envcraft.integrations.verl`).

Files are written into a temporary directory beside the target and moved into it (``os.replace``)
only once every file is written: a failed export leaves nothing behind, and a target whose file
names are taken by directories is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.core.skills import Skill, read_skill, skills_section
from envcraft.core.state import canonical_json
from envcraft.core.workspace import atomic_write_bytes
from envcraft.sandbox.profiles import CANONICAL_PROFILE, DEFAULT_PROFILE, PROFILES, get_profile
from envcraft.tasks.format.index import index_path
from envcraft.tasks.format.io import TASKS_FILE, write_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import SKILLS_DIR, exposed_tools, resolve_packages
from envcraft.tasks.play.prompts import CLAW_PREAMBLE, FUNCTION_PREAMBLE, auto_mode
from envcraft.tasks.play.prompts import system_prompt as rollout_system_prompt
from envcraft.tasks.play.services import service_tools

FORMATS = ("jsonl", "parquet", "verl")
FILES = {"jsonl": "tasks.jsonl", "parquet": "tasks.parquet", "verl": "train.parquet"}
VERL_VAL_FILE = "val.parquet"
VERL_AGENT_LOOP_FILE = "agent_loop.yaml"
TASKS_INDEX_FILE = index_path(Path(TASKS_FILE)).name  # written beside every tasks.jsonl
OUTPUT_NAMES = {
    "jsonl": (FILES["jsonl"], TASKS_INDEX_FILE),
    "parquet": (FILES["parquet"],),
    "verl": (FILES["verl"], VERL_VAL_FILE, TASKS_FILE, TASKS_INDEX_FILE, VERL_AGENT_LOOP_FILE),
}
AGENT_NAME = "envcraft_agent"
AGENT_NAMES = (AGENT_NAME,)
AGENT_LOOP_TARGET = "envcraft.integrations.verl.agent_loop.EnvcraftAgentLoop"
DEFAULT_VAL_FRACTION = 0.1
_JSON_COLUMNS = ("turns", "initial_state", "workspace", "verifier", "reference", "provenance", "quality")


class ExportError(ValueError):
    """An export that cannot be written (unknown format, missing pyarrow, unloadable env)."""


@dataclass(frozen=True)
class Written:
    """One file an export wrote, with its count of task rows (None for a config file)."""

    path: Path
    rows: int | None


def export(
    tasks: Sequence[Task],
    fmt: str,
    out: str | Path,
    *,
    agent_name: str = AGENT_NAME,
    val_fraction: float = DEFAULT_VAL_FRACTION,
    profile: str = DEFAULT_PROFILE,
) -> Path:
    """Write ``tasks`` in ``fmt`` into directory ``out``; returns the main file (for VERL,
    ``train.parquet``; :func:`export_files` lists every file written)."""
    return export_files(tasks, fmt, out, agent_name=agent_name, val_fraction=val_fraction, profile=profile)[
        0
    ].path


def export_files(
    tasks: Sequence[Task],
    fmt: str,
    out: str | Path,
    *,
    agent_name: str = AGENT_NAME,
    val_fraction: float = DEFAULT_VAL_FRACTION,
    profile: str = DEFAULT_PROFILE,
) -> list[Written]:
    """Write ``tasks`` in ``fmt`` into directory ``out``; every file written, the main one first
    (for VERL: ``train.parquet``, ``val.parquet``, ``tasks.jsonl``, ``agent_loop.yaml``).
    ``profile`` names the tool profile VERL rows are made for (their tools and system prompt)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if agent_name not in AGENT_NAMES:
        raise ExportError(f"unknown agent name {agent_name!r}; choose one of {', '.join(AGENT_NAMES)}")
    if not 0.0 <= val_fraction < 1.0:
        raise ExportError(f"val fraction {val_fraction} must be in [0, 1)")
    if profile not in PROFILES:
        raise ExportError(
            f"unknown tool profile {profile!r}; the profiles are: {', '.join(sorted(PROFILES))}"
        )
    root = Path(out)
    _check_target(root, OUTPUT_NAMES[fmt])
    with _staging(root) as stage:
        staged = _write(tasks, fmt, stage, agent_name=agent_name, val_fraction=val_fraction, profile=profile)
        root.mkdir(parents=True, exist_ok=True)
        made = sorted(path.name for path in stage.iterdir())
        for name in made:  # every file, also any a writer adds beside its own (a task set's index)
            os.replace(stage / name, root / name)
    listed = {w.path.name for w in staged}
    return [Written(root / w.path.name, w.rows) for w in staged] + [
        Written(root / name, None) for name in made if name not in listed
    ]


def _check_target(root: Path, names: Sequence[str]) -> None:
    """Refuse, before anything is written, a target the export's files cannot be placed in."""
    if root.exists() and not root.is_dir():
        raise ExportError(f"cannot export into {root}: it is not a directory")
    for name in names:
        path = root / name
        if path.is_dir() or (path.exists() and not path.is_file()):
            raise ExportError(f"cannot write {path}: it is a directory, not a file")


@contextmanager
def _staging(root: Path) -> Iterator[Path]:
    """A temporary directory beside ``root`` (same file system, so its files move into ``root``
    by rename): a failed export leaves nothing behind, not even ``root``."""
    parent = root.absolute().parent
    while not parent.is_dir():
        parent = parent.parent
    stage = Path(tempfile.mkdtemp(prefix=f".{root.name}.export-", dir=parent))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _write(
    tasks: Sequence[Task], fmt: str, root: Path, *, agent_name: str, val_fraction: float, profile: str
) -> list[Written]:
    if fmt == "jsonl":
        return [Written(write_tasks(root, tasks), len(tasks))]
    if fmt == "parquet":
        return [
            Written(
                _write_parquet(root / FILES[fmt], [task_row(t) for t in tasks], _task_schema()), len(tasks)
            )
        ]
    return export_verl(tasks, root, agent_name=agent_name, val_fraction=val_fraction, profile=profile)


def export_verl(
    tasks: Sequence[Task], root: Path, *, agent_name: str, val_fraction: float, profile: str = DEFAULT_PROFILE
) -> list[Written]:
    """The VERL directory of the module docstring; every file written, ``train.parquet`` first."""
    if not tasks:
        raise ExportError("no tasks to export (a VERL dataset needs at least one row)")
    train, val = split_tasks(tasks, val_fraction)
    schema = _verl_schema()
    tasks_file = write_tasks(root, tasks)
    index = {t.id: i for i, t in enumerate(tasks)}
    written: list[Written] = []
    for name, part, split in ((FILES["verl"], train, "train"), (VERL_VAL_FILE, val, "val")):
        rows = [verl_row(t, index[t.id], _packages(t), agent_name, split, profile) for t in part]
        written.append(Written(_write_parquet(root / name, rows, schema), len(rows)))
    loop_config = agent_loop_config(agent_name, Path(tasks_file.name))
    atomic_write_bytes(root / VERL_AGENT_LOOP_FILE, loop_config.encode("utf-8"))
    return [*written, Written(tasks_file, len(tasks)), Written(root / VERL_AGENT_LOOP_FILE, None)]


def split_tasks(tasks: Sequence[Task], val_fraction: float) -> tuple[list[Task], list[Task]]:
    """Train and validation tasks: a task is in validation when the hash of its id falls below
    ``val_fraction``. Both splits get at least one task when there are two or more (the task
    of the smallest hash moves); a set of one task is its own validation set."""
    position = {t.id: _unit_hash(t.id) for t in tasks}
    val = [t for t in tasks if position[t.id] < val_fraction]
    train = [t for t in tasks if position[t.id] >= val_fraction]
    if len(tasks) == 1:
        return list(tasks), list(tasks)
    if not val and val_fraction > 0:
        first = min(train, key=lambda t: position[t.id])
        train.remove(first)
        val = [first]
    if not train:
        last = max(val, key=lambda t: position[t.id])
        val.remove(last)
        train = [last]
    return train, val


def task_digest(task: Task) -> str:
    """sha256 of the task's canonical JSON: what ``ground_truth`` carries to identify a version."""
    return hashlib.sha256(canonical_json(task.model_dump(mode="json")).encode("utf-8")).hexdigest()


def ground_truth(task: Task) -> str:
    """The compact ``reward_model.ground_truth`` of a VERL row (JSON text)."""
    return json.dumps({"task_id": task.id, "sha256": task_digest(task)}, sort_keys=True)


def agent_loop_config(agent_name: str, tasks_file: Path) -> str:
    """VERL's ``agent_loop_config_path`` file: a list of hydra configs, one per agent loop.
    A relative ``tasks_file`` is relative to this file's directory (the loop resolves it)."""
    return (
        "# envcraft's agent loop for this export; pass this file as\n"
        "# actor_rollout_ref.rollout.agent.agent_loop_config_path\n"
        "# (tasks: relative to this file's directory)\n"
        f"- name: {agent_name}\n"
        f"  _target_: {AGENT_LOOP_TARGET}\n"
        f"  tasks: {json.dumps(str(tasks_file))}\n"
    )


def _unit_hash(text: str) -> float:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


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
    agent_name: str,
    split: str,
    profile: str = DEFAULT_PROFILE,
) -> dict[str, Any]:
    """The VERL RL-dataset row of one task (see the module docstring)."""
    tools = exposed_tools(packages, profile)
    served = service_tools(task.provenance)  # a task's mock services' tools, as its Episode adds them
    schemas = [t.openai_schema() for t in tools.values()] + list(served.values())
    return {
        "data_source": "envcraft/" + "+".join(task.envs),
        "prompt": [
            {"role": "system", "content": system_prompt(task, packages, profile=profile)},
            {"role": "user", "content": task.turns[0].user if task.turns else ""},
        ],
        "ability": "agent" if task.kind == "claw" else "tool-use",
        "reward_model": {"style": "rule", "ground_truth": ground_truth(task)},
        "extra_info": {
            "index": index,
            "split": split,
            "task_id": task.id,
            "envs": list(task.envs),
            "kind": task.kind,
            "n_turns": len(task.turns),
            "tool_selection": list(tools) + list(served),
            "profile": profile,
            "tools": json.dumps(schemas, ensure_ascii=False),
        },
        "agent_name": agent_name,
    }


def system_prompt(
    task: Task,
    packages: Mapping[str, EnvPackage],
    *,
    documentation: bool = True,
    profile: str = CANONICAL_PROFILE,
) -> str:
    """The system message a policy starts ``task`` with: the rollout loop's for the task's mode
    (:func:`envcraft.tasks.play.prompts.system_prompt`), so a policy trained on these rows is
    prompted as ``envcraft eval --profile`` prompts it (under a harness profile a Claw task's
    skills are listed, as the Episode places them, instead of pasted). Without
    ``documentation``, only the preamble (the environments' descriptions left out, for prompts
    a CPU run must keep short)."""
    mode = auto_mode(task)
    if not documentation:
        return CLAW_PREAMBLE if mode == "claw" else FUNCTION_PREAMBLE
    chosen = {env: packages[env] for env in task.envs}
    skills = skills_listing(task, chosen.values(), profile) if mode == "claw" else None
    return rollout_system_prompt(chosen, mode, skills=skills)


def skills_listing(task: Task, packages: Iterable[EnvPackage], profile: str) -> str:
    """The skills section an Episode of ``profile`` lists (:meth:`Episode.skills_prompt`),
    read from the packages without opening one: "" under the canonical profile (skills pasted)."""
    chosen = get_profile(profile)
    if chosen.canonical:
        return ""
    skills: list[Skill] = []
    seen: set[str] = set()
    for package in packages:
        if package.kind != "claw":
            continue
        for name, skill_md in package.skills.items():
            where = f"{SKILLS_DIR}/{name}"
            if name in seen or any(p == where or p.startswith(where + "/") for p in task.workspace):
                continue  # as place_skills: the first package's skill, or the task's own file, wins
            seen.add(name)
            skill = _read_skill(skill_md.parent, chosen.skill_location(f"{where}/SKILL.md"))
            if skill is not None:
                skills.append(skill)
    return skills_section(skills, chosen.read_tool)


@lru_cache(maxsize=256)
def _read_skill(folder: Path, location: str) -> Skill | None:
    """A package's skill (read once per export of many tasks); None for one place_skills leaves out."""
    try:
        return read_skill(folder, location)
    except Exception:  # skills_ref.SkillError and YAML errors: listed by envs check
        return None


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


def _verl_schema() -> Any:
    pa = _pyarrow()
    extra = pa.struct(
        [
            ("index", pa.int64()),
            ("split", pa.string()),
            ("task_id", pa.string()),
            ("envs", pa.list_(pa.string())),
            ("kind", pa.string()),
            ("n_turns", pa.int32()),
            ("tool_selection", pa.list_(pa.string())),
            ("profile", pa.string()),
            ("tools", pa.string()),
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
    sink = pa.BufferOutputStream()
    pa.parquet.write_table(table, sink)
    atomic_write_bytes(path, sink.getvalue().to_pybytes())
    return path
