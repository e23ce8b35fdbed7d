"""The data engine: tasks for tool-using and Claw agents, made, validated, played and scored.

``from envcraft.tasks import ...`` carries what a user of task *data* needs, without the deep
paths of the sub-packages: read and write a task set (:func:`read_tasks`, :func:`write_tasks`,
:func:`read_trajectories`), the :class:`Task` itself, open a task for play (:class:`Episode`,
``Episode.open(task)``), and score a trajectory (:func:`score_trajectory`, giving a
:class:`Score`). Like ``envcraft``, the names are imported on first use, so importing this package
loads nothing else.

The sub-packages, each importing only from those before it (``tests/tasks/test_layers.py``):
``values`` (argument values, JSON paths) <- ``format`` (the task format) <- ``phrasing`` (what the
user says) <- ``play`` (episodes, runs of calls, outcomes) <- ``graphs`` (tool and workflow graphs,
walks) <- ``verifier`` (runtime, source, scoring, synthesis) <- ``golden`` (golden runs) <-
``world`` (distractors, workspace facts, asked-for files) <- ``validation`` (mutations, adversarial
agents) <- ``corpus`` (composing tasks, statistics, ``envcraft run``, report, exports).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# public name -> the module that owns it
_HOMES: dict[str, str] = {
    "Task": "envcraft.tasks.format.model",
    **dict.fromkeys(
        ("TaskSetError", "read_tasks", "read_trajectories", "write_tasks"), "envcraft.tasks.format.io"
    ),
    "Episode": "envcraft.tasks.play.episode",
    **dict.fromkeys(("Score", "score_trajectory"), "envcraft.tasks.verifier.scoring"),
}

__all__ = [
    "Episode",
    "Score",
    "Task",
    "TaskSetError",
    "read_tasks",
    "read_trajectories",
    "score_trajectory",
    "write_tasks",
]

if TYPE_CHECKING:
    from envcraft.tasks.format.io import TaskSetError, read_tasks, read_trajectories, write_tasks
    from envcraft.tasks.format.model import Task
    from envcraft.tasks.play.episode import Episode
    from envcraft.tasks.verifier.scoring import Score, score_trajectory


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'envcraft.tasks' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value
