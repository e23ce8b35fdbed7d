"""`envcraft tasks show|play`: read a task, and play it by hand with `envcraft call` (wiring only)."""

from __future__ import annotations

import json
import select
import shlex
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from envcraft.cli.agents import (
    JsonFlag,
    TaskDir,
    slug,
)
from envcraft.cli.output import console, count, die, print_json
from envcraft.core.package import builtin_ids
from envcraft.rollout.play import (
    PLAY_FILE,
    Play,
    PlayError,
    current_calls,
    end_turn,
    observe,
    open_play,
    write_trajectory,
)
from envcraft.tasks.format.io import (
    TaskSetError,
    read_task,
    tasks_path,
)
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.outcome import ExecutionError
from envcraft.tasks.verifier.scoring import score_trajectory


# -- envcraft tasks show ------------------------------------------------------------------------
def show(
    directory: TaskDir,
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    reveal: Annotated[
        bool,
        typer.Option("--reveal", help="Also show the reference and the verifier (and so every user turn)."),
    ] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Every user turn, not only those revealed so far.")
    ] = False,
    play_dir: Annotated[
        Path | None,
        typer.Option("--dir", help="The play whose revealed turns to show (default ./play-TASK, if there)."),
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """Show a task as a player sees it: environments, tools and the user turns revealed so far.

    A play of the task (tasks play --dir) has revealed the turns it has reached; with none, turn 1.
    --all shows every turn; the solution only with --reveal.
    """
    task = _one(directory, task_id)
    shown = len(task.turns) if show_all or reveal else _revealed(task, play_dir)
    packages = _packages(task)
    envs = [
        {
            "id": env,
            "title": packages[env].manifest.title,
            "kind": packages[env].kind,
            "package": str(packages[env].root),
            "tools": [_tool_summary(spec.openai_schema()) for spec in packages[env].env_class.tools.values()],
        }
        for env in task.envs
    ]
    info: dict[str, Any] = {
        "id": task.id,
        "kind": task.kind,
        "persona": task.persona,
        "turns": [t.user for t in task.turns[:shown]],
        "turn_count": len(task.turns),
        "envs": envs,
        "workspace_files": sorted(task.workspace),
        "difficulty": task.difficulty,
    }
    if reveal:
        info["reference"] = task.reference.model_dump(mode="json")
        info["verifier"] = task.verifier.model_dump(mode="json")
    if json_out:
        print_json(info)
        return
    console.print(
        f"[bold]{task.id}[/bold] ({task.kind}; {count(len(task.turns), 'user turn')}; "
        f"persona: {task.persona})",
        highlight=False,
        soft_wrap=True,
    )
    for env in envs:
        console.print(
            f"\n[bold]{env['title']}[/bold] ({env['id']}, {env['kind']})", highlight=False, soft_wrap=True
        )
        for tool in env["tools"]:
            console.print(
                f"  {tool['name']}({', '.join(tool['signature'])}): {tool['summary']}",
                markup=False,  # "list[string]" is no style
                highlight=False,
                soft_wrap=True,
            )
    if task.workspace:
        console.print(f"\nworkspace: {len(task.workspace)} files", highlight=False, soft_wrap=True)
    for number, text in enumerate(info["turns"], start=1):
        console.print(f"\n[bold]turn {number}[/bold]: {text}", highlight=False, soft_wrap=True)
    if shown < len(task.turns):
        later = (
            f"turn {shown + 1}" if shown + 1 == len(task.turns) else f"turns {shown + 1}-{len(task.turns)}"
        )
        console.print(
            f"\n({later} not revealed yet: tasks play --next reveals the next when a turn is done;"
            " --all shows every turn)",
            highlight=False,
            soft_wrap=True,
        )
    if reveal:
        console.print("\n[bold]reference[/bold]")
        for call in task.reference.calls:
            console.print(
                f"  turn {call.turn + 1}: {call.env}.{call.tool} {json.dumps(call.args)}",
                highlight=False,
                soft_wrap=True,
            )
        # each check on a line of its own: the runtime every verifier carries is thousands of lines
        # a reader has to scroll past (round 56, R1 and R3); --json holds it, with each check whole
        console.print(
            f"\n[bold]verifier[/bold] ({count(len(task.verifier.checks), 'check')}; the source with --json)",
            highlight=False,
            soft_wrap=True,
        )
        for check in task.verifier.checks:
            console.print(
                f"  {check.get('role', '?')} {check.get('weight', 1.0):g}: {check.get('name', '')}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )


def _revealed(task: Task, play_dir: Path | None) -> int:
    """How many user turns a player of ``task`` has seen: as far as its play in ``play_dir`` (by
    default ./play-TASK, when that is a play of this task) has got, else the first."""
    root = play_dir or Path(f"play-{slug(task.id)}")
    if play_dir is None and not (root / PLAY_FILE).is_file():
        return 1
    try:
        state = Play.load(root)
    except PlayError as exc:
        die(str(exc))
    if state.task_id != task.id:
        die(f"{root} holds a play of task {state.task_id}, not {task.id}")
    return min(state.turn + 1, len(task.turns))


def _one(directory: Path, task_id: str) -> Task:
    """One task, read alone through the set's index (an unknown id names the closest ones)."""
    try:
        return read_task(directory, task_id)
    except (TaskSetError, OSError) as exc:
        die(str(exc))


def _packages(task: Task) -> dict[str, Any]:
    try:
        return resolve_packages(task)
    except ExecutionError as exc:
        die(str(exc))


def _tool_summary(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool as a player first reads it: its name, its parameters and the first line of its
    description; ``signature`` gives each parameter's type, the values it takes where the schema
    lists them, and ``?`` where it may be left out (``to: list[string]``, ``reason: damaged|wrong_item``),
    so an agent need not learn them from a refusal."""
    function = schema["function"]
    lines = (function.get("description") or "").strip().splitlines()
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required", []))
    properties = parameters.get("properties", {})
    return {
        "name": function["name"],
        "params": list(properties),
        "signature": [
            f"{name}{'' if name in required else '?'}: {_type_text(spec)}"
            for name, spec in properties.items()
        ],
        "summary": lines[0] if lines else "",
    }


def _type_text(spec: dict[str, Any]) -> str:
    """A JSON schema's type in a few characters: ``string``, ``list[string]``, ``a|b|c``."""
    if "enum" in spec:
        return "|".join(str(v) for v in spec["enum"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list[{_type_text(spec.get('items') or {})}]"
    return "|".join(kind) if isinstance(kind, list) else str(kind)


# -- envcraft tasks play ------------------------------------------------------------------------
def play(
    directory: TaskDir,
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    play_dir: Annotated[
        Path | None, typer.Option("--dir", help="Play directory (default ./play-TASK).")
    ] = None,
    next_turn: Annotated[
        bool,
        typer.Option("--next", help="This turn is done: record it, show the next (a new play: turn 1)."),
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Play a task with `envcraft call`: opens its sessions from S0 and reveals the user turns one at a time.

    Without --next on a terminal it waits: press Enter when a turn is done.
    --next ends the turn and shows the next (a new play opens on turn 1 first).
    Calls are recorded per turn; DIR/trajectory.jsonl is what `envcraft tasks score` reads.
    """
    task = _one(directory, task_id)
    root = play_dir or Path(f"play-{slug(task.id)}")
    try:
        state, resumed = open_play(task, tasks_path(directory), root)
        if next_turn and resumed:  # a new play has shown no turn yet: it opens on turn 1
            end_turn(state, task)
    except (PlayError, ExecutionError, TaskSetError) as exc:
        die(str(exc))
    if json_out:
        print_json(_play_info(state, task))
        return
    if not (next_turn and resumed):
        _print_how_to_act(state, task, resumed)
    if next_turn and not resumed:
        console.print("  (a new play opens on turn 1: --next again when this turn is done)", highlight=False)
    _print_turn(state, task)
    if next_turn or state.done or not sys.stdin.isatty():
        return
    while not state.done:
        console.print(
            "[dim]act with envcraft call in another terminal; Enter = this turn is done, q = stop[/dim]"
        )
        answer = _wait_for_line(state)
        if answer.strip().lower() == "q":
            console.print(f"stopped; resume with: envcraft tasks play {directory} {task.id} --dir {root}")
            return
        end_turn(state, task)
        _print_turn(state, task)


def _wait_for_line(state: Play) -> str:
    """Read a line from the terminal, noting the order of the player's calls meanwhile."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.1):
            observe(state)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        while True:
            ready, _, _ = select.select([sys.stdin], [], [], 0.5)
            if ready:
                return sys.stdin.readline()
    finally:
        stop.set()
        watcher.join()


def _play_info(state: Play, task: Task) -> dict[str, Any]:
    return {
        "dir": str(state.directory.resolve()),
        "task_id": task.id,
        "turn": state.turn + 1 if not state.done else None,
        "turns": len(task.turns),
        "user": task.turns[state.turn].user if not state.done else None,
        "sessions": {env: str(state.session(env).resolve()) for env in task.envs},
        "calls_this_turn": current_calls(state) if not state.done else [],
        "trajectory": str((state.directory / "trajectory.jsonl").resolve()),
        "done": state.done,
        "score": _score(state, task) if state.done else None,
    }


def _print_how_to_act(state: Play, task: Task, resumed: bool) -> None:
    packages = _packages(task)
    verb = "resumed" if resumed else "opened"
    console.print(
        f"{verb} {task.id} in {state.directory} ({count(len(task.turns), 'user turn')})",
        highlight=False,
        soft_wrap=True,
    )
    for env in task.envs:
        where = env if env in builtin_ids() else packages[env].root
        console.print(
            f"  envcraft call {where} TOOL --args '{{...}}' --session {state.session(env)}",
            highlight=False,
            soft_wrap=True,
        )
    if len(task.envs) > 1:
        console.print("  (these sessions share one workspace: a file one writes, the others read)")
    task_set, play_dir = shlex.quote(_task_set(state)), shlex.quote(str(state.directory))
    shown = f"{task_set} {shlex.quote(task.id)} --dir {play_dir}"
    console.print(
        f"  (the tools and the turns so far: envcraft tasks show {shown})", highlight=False, soft_wrap=True
    )


def _task_set(state: Play) -> str:
    """The task set as the commands take it: its directory (the play keeps the file's path)."""
    path = Path(state.tasks_path)
    return str(path.parent if path.name == "tasks.jsonl" else path)


def _print_turn(state: Play, task: Task) -> None:
    if state.done:
        path = write_trajectory(state)
        score = _score(state, task)
        done = "the turn is done" if len(task.turns) == 1 else f"all {len(task.turns)} turns done"
        console.print(f"\n{done}; trajectory: {path}", highlight=False, soft_wrap=True)
        trajectories = shlex.quote(str(Path(path).resolve()))
        task_set = shlex.quote(_task_set(state))
        again = f"envcraft tasks score {task_set} --trajectories {trajectories} --explain"
        console.print(
            f"score {score['score']:.3f}  (to score it again: {again})",
            highlight=False,
            soft_wrap=True,
        )
        return
    console.print(
        f"\n[bold]turn {state.turn + 1}/{len(task.turns)}[/bold]: {task.turns[state.turn].user}",
        highlight=False,
        soft_wrap=True,
    )


def _score(state: Play, task: Task) -> dict[str, Any]:
    return score_trajectory(task, state.turns).to_json()
