"""A task a person (or any outside agent) plays with ``envcraft call``, one user turn at a time.

``open_play`` opens the task as a durable :class:`~envcraft.tasks.play.episode.Episode` in a
directory: ``DIR/sessions/<env>/`` per environment (S0), ``DIR/workspace/`` shared, and
``DIR/play.json`` with the play's progress. The player acts with
``envcraft call ENV TOOL --args JSON --session DIR/sessions/<env>``; every such call lands in
that session's ``actions.jsonl``. :func:`end_turn` attributes the calls logged since the
last turn to the current turn, reveals the next one, and rewrites ``DIR/trajectory.jsonl``:
one ``{"task_id", "turns"}`` line, what ``envcraft tasks score`` reads.

Calls that a shell command made through ``envcraft-tool`` are logged with ``"via"`` and left
out (re-playing the shell command makes them again). Within one turn, calls to different
environments are ordered by when :func:`observe` first saw them: ``envcraft call`` on a play's
session observes after each call (:func:`note_call`), and the interactive ``tasks play`` polls;
calls no one observed follow in the task's environment order.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envcraft.core import jsonio
from envcraft.core.workspace import atomic_write_bytes
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import SESSIONS_DIR, Episode

PLAY_FILE = "play.json"
TRAJECTORY_FILE = "trajectory.jsonl"
LOG_FILE = "actions.jsonl"


class PlayError(ValueError):
    """A play directory that cannot be used for this task; the message says why."""


@dataclass
class Play:
    """The progress of one play, as ``DIR/play.json`` keeps it."""

    directory: Path
    task_id: str
    tasks_path: str
    envs: list[str]
    turn_count: int
    turn: int = 0
    consumed: dict[str, int] = field(default_factory=dict)  # log lines attributed to ended turns
    turns: list[list[dict[str, Any]]] = field(default_factory=list)  # calls of the ended turns
    seen: list[list[Any]] = field(default_factory=list)  # [env, line] in the order observe() saw them

    def save(self) -> None:
        data = asdict(self)
        data["directory"] = str(self.directory)
        atomic_write_bytes(self.directory / PLAY_FILE, (json.dumps(data, indent=2) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, directory: Path) -> Play:
        try:
            data = jsonio.loads((directory / PLAY_FILE).read_bytes())
            data["directory"] = directory
            return cls(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise PlayError(f"{directory}: not a play directory ({exc})") from None

    def session(self, env: str) -> Path:
        return self.directory / SESSIONS_DIR / env

    @property
    def done(self) -> bool:
        return self.turn >= self.turn_count


def open_play(task: Task, tasks_path: str | Path, directory: str | Path) -> tuple[Play, bool]:
    """Open ``task`` for play in ``directory``, or resume the play already there.

    Returns ``(play, resumed)``. ``PlayError`` when the directory holds something else.
    """
    root = Path(directory)
    if (root / PLAY_FILE).is_file():
        play = Play.load(root)
        if play.task_id != task.id:
            raise PlayError(f"{root} holds a play of task {play.task_id}, not {task.id}")
        return play, True
    if root.exists() and any(root.iterdir()):
        raise PlayError(f"{root} exists and is not empty; choose another --dir")
    with Episode.open(task, directory=root):
        pass  # the durable sessions stay on disk
    play = Play(root, task.id, str(Path(tasks_path).resolve()), list(task.envs), len(task.turns))
    play.save()
    return play, False


def _log(play: Play, env: str) -> list[dict[str, Any]]:
    path = play.session(env) / LOG_FILE
    if not path.is_file():
        return []
    lines = []
    for raw in path.read_bytes().splitlines():
        try:
            lines.append(jsonio.loads(raw))
        except ValueError:
            break  # a torn last line: the session repairs it on its next call
    return lines


def observe(play: Play) -> int:
    """Note the order of newly logged calls (poll while the player acts); returns how many are new."""
    known = {(env, line) for env, line in play.seen}
    new = 0
    for env in play.envs:
        for line in range(play.consumed.get(env, 0), len(_log(play, env))):
            if (env, line) not in known:
                play.seen.append([env, line])
                new += 1
    if new:
        play.save()
    return new


def note_call(session_dir: Path) -> None:
    """After a call on ``session_dir``: when it is a session of a play (``DIR/sessions/<env>``
    beside ``DIR/play.json``), note the call's place in the turn's order (:func:`observe`), so
    calls to several environments keep the order they were made in."""
    sessions = session_dir.resolve().parent
    root = sessions.parent
    if sessions.name != SESSIONS_DIR or not (root / PLAY_FILE).is_file():
        return
    try:
        play = Play.load(root)
    except PlayError:
        return  # not a play this module wrote: nothing to note
    if not play.done:
        observe(play)


def current_calls(play: Play) -> list[dict[str, Any]]:
    """The player's own calls in the current turn, in order (shell-made ones left out)."""
    observe(play)
    rank = {(env, line): i for i, (env, line) in enumerate(play.seen)}
    entries = []
    for position, env in enumerate(play.envs):
        log = _log(play, env)
        for line in range(play.consumed.get(env, 0), len(log)):
            entry = log[line]
            if entry.get("via") is None:
                key = (rank.get((env, line), len(rank)), position, line)
                entries.append((key, {"env": env, "tool": entry.get("tool"), "args": entry.get("args")}))
    return [call for _, call in sorted(entries, key=lambda item: item[0])]


def end_turn(play: Play, task: Task) -> str | None:
    """Close the current turn (its calls recorded), write the trajectory; the next user turn or None."""
    if play.done:
        raise PlayError(f"task {task.id} has no turn left: every one of its {len(task.turns)} turns is done")
    play.turns.append(current_calls(play))
    for env in play.envs:
        play.consumed[env] = len(_log(play, env))
    play.seen = []
    play.turn += 1
    play.save()
    write_trajectory(play)
    return None if play.done else task.turns[play.turn].user


def trajectory(play: Play) -> dict[str, Any]:
    """The play so far in the ``tasks score`` format (the current turn's calls included)."""
    turns = [list(t) for t in play.turns]
    if not play.done:
        turns.append(current_calls(play))
    return {"task_id": play.task_id, "turns": turns}


def write_trajectory(play: Play) -> Path:
    path = play.directory / TRAJECTORY_FILE
    atomic_write_bytes(path, (json.dumps(trajectory(play), ensure_ascii=False) + "\n").encode("utf-8"))
    return path
