"""One task read alone through the task set's index; `envcraft tasks list`; unknown ids get hints.

Regression (issue 23 item 12): `tasks show|play|score` parsed the whole tasks.jsonl (85 MB, 4 s)
for one task, no command listed a set's ids, and an unknown id gave no hint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.tasks.format.index import index_path
from envcraft.tasks.format.io import (
    TaskSetError,
    UnknownTaskError,
    read_some,
    read_task,
    read_tasks,
    write_tasks,
)
from envcraft.tasks.format.model import Task

from .verify_support import make_task

ENVCRAFT = Path(sys.executable).parent / "envcraft"


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"env": "counter", "tool": tool, "args": args}


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    """Seven counter tasks: ids that look alike, one and two user turns, two kinds."""
    one, _ = make_task([[call("increment", name="a", by=2)]], task_id="counter-0a1b2c")
    two, _ = make_task([[call("increment", name="a", by=2)], [call("increment", name="b", by=1)]])
    made = [one.model_copy(update={"id": f"counter-{i}a1b2c"}) for i in range(5)]
    made.append(two.model_copy(update={"id": "counter-two-turns"}))
    made.append(one.model_copy(update={"id": "counter-claw", "kind": "claw"}))
    return made


@pytest.fixture
def task_set(tasks: list[Task], tmp_path: Path) -> Path:
    write_tasks(tmp_path / "set", tasks)
    return tmp_path / "set"


def test_the_index_is_written_with_the_set_and_one_task_is_read_through_it(
    tasks: list[Task], task_set: Path
) -> None:
    assert index_path(task_set / "tasks.jsonl") == task_set / "tasks.index.json"
    assert (task_set / "tasks.index.json").is_file()
    assert [read_task(task_set, t.id) for t in tasks] == tasks
    assert read_some(task_set, ["counter-claw", "nope", "counter-3a1b2c"]) == {
        "counter-claw": tasks[-1],
        "counter-3a1b2c": tasks[3],
    }


def _break_line(task_set: Path, task_id: str) -> None:
    """Overwrite one task's line with as many bytes of garbage, keeping the file's size and time."""
    path = task_set / "tasks.jsonl"
    info = path.stat()
    data = path.read_bytes()
    start = data.index(f'{{"id": "{task_id}"'.encode())
    end = data.index(b"\n", start)
    path.write_bytes(data[:start] + b"x" * (end - start) + data[end:])
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_one_task_is_read_without_parsing_the_others(tasks: list[Task], task_set: Path) -> None:
    _break_line(task_set, "counter-2a1b2c")
    with pytest.raises(TaskSetError, match="line 3"):
        read_tasks(task_set)
    assert read_task(task_set, "counter-claw") == tasks[-1]


def test_a_missing_or_stale_index_is_rebuilt(tasks: list[Task], task_set: Path) -> None:
    (task_set / "tasks.index.json").unlink()
    assert read_task(task_set, "counter-two-turns") == tasks[5]
    assert (task_set / "tasks.index.json").is_file()
    path = task_set / "tasks.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(reversed(lines)))  # a hand edit: same bytes, other order
    assert read_task(task_set, "counter-two-turns") == tasks[5]
    info = path.stat()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[1], lines[0], *lines[2:]]))  # same size, and the same time:
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # the index looks current, but is not
    assert [read_task(task_set, t.id) for t in tasks] == tasks


def test_an_unknown_id_names_the_closest_ones(task_set: Path) -> None:
    with pytest.raises(UnknownTaskError, match=r"did you mean counter-3a1b2c"):
        read_task(task_set, "counter-3a1b2")
    with pytest.raises(UnknownTaskError, match=r"7 tasks; `envcraft tasks list`"):
        read_task(task_set, "zzz")


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENVCRAFT), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_tasks_list_filters_by_env_kind_and_turns(task_set: Path) -> None:
    listed = json.loads(run("tasks", "list", task_set, "--json").stdout)
    assert len(listed) == 7 and listed[0] == {
        "id": "counter-0a1b2c",
        "envs": ["counter"],
        "kind": "tool",
        "turns": 1,
    }
    assert [t["id"] for t in json.loads(run("tasks", "list", task_set, "--turns", "2", "--json").stdout)] == [
        "counter-two-turns"
    ]
    claw = json.loads(run("tasks", "list", task_set, "--kind", "claw", "--env", "counter", "--json").stdout)
    assert [t["id"] for t in claw] == ["counter-claw"]
    assert json.loads(run("tasks", "list", task_set, "--env", "mail_triage", "--json").stdout) == []
    table = run("tasks", "list", task_set, "--turns", "1-1")
    assert table.returncode == 0 and "counter-claw" in table.stdout and "6 tasks of 7" in table.stdout
    bad = run("tasks", "list", task_set, "--turns", "many")
    assert bad.returncode == 2 and "expected N or N-M" in bad.stderr


def test_tasks_show_of_an_unknown_id_gives_a_hint(task_set: Path) -> None:
    proc = run("tasks", "show", task_set, "counter-two-turn")
    assert proc.returncode == 2 and "did you mean counter-two-turns?" in proc.stderr
    assert "Traceback" not in proc.stderr
