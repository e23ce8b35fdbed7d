"""``envcraft.tasks``: the names a data user needs, without deep paths, and a cheap import."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import envcraft.tasks as tasks

from .verify_support import make_task

INC_A = {"env": "counter", "tool": "increment", "args": {"name": "a", "by": 2}}


def test_importing_the_package_loads_no_sub_package() -> None:
    code = "import sys, envcraft.tasks; print(sorted(m for m in sys.modules if m.startswith('envcraft.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['envcraft.tasks']"


def test_every_public_name_is_its_homes_object() -> None:
    for name in tasks.__all__:
        assert getattr(tasks, name) is getattr(import_module(tasks._HOMES[name]), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = tasks.nothing  # type: ignore[attr-defined]


def test_read_a_set_play_a_task_and_score_the_trajectory(tmp_path: Path) -> None:
    task, _ = make_task([[INC_A]])
    tasks.write_tasks(tmp_path, [task])
    (read,) = tasks.read_tasks(tmp_path)
    assert isinstance(read, tasks.Task) and read == task
    with tasks.Episode.open(read) as episode:
        assert not episode.call("counter", "increment", {"name": "a", "by": 2}).get("error")
    score = tasks.score_trajectory(read, [[INC_A]])
    assert isinstance(score, tasks.Score) and score.score == 1.0
    assert tasks.score_trajectory(read, [[]]).score < 1.0
