"""`envcraft tasks ...`: synthesize, check, replay and score task sets (wiring only)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from envcraft.cli.output import console, die, err_console, print_json
from envcraft.tasks.io import TaskSetError, read_tasks
from envcraft.tasks.model import Task
from envcraft.tasks.validate import replay_task

app = typer.Typer(help="Synthesize, check, replay and score task sets.", no_args_is_help=True)

T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
TaskDir = Annotated[Path, typer.Argument(help="Task-set directory (holding tasks.jsonl).")]


def load_tasks_or_die(directory: Path) -> list[Task]:
    try:
        return read_tasks(directory)
    except (TaskSetError, OSError) as exc:
        die(str(exc))


def progress(items: Iterable[T], total: int, label: str) -> Iterator[T]:
    """Iterate with a progress bar on stderr (stdout stays clean for --json)."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        job = bar.add_task(label, total=total)
        for item in items:
            yield item
            bar.advance(job)


@app.command("replay")
def replay(directory: TaskDir, json_out: JsonFlag = False) -> None:
    """Re-run every golden run in fresh sessions: identical final hash and score 1 (exit 1 if not)."""
    tasks = load_tasks_or_die(directory)
    results = [replay_task(t) for t in progress(tasks, len(tasks), "replay")]
    passed = sum(r.ok for r in results)
    failures = [r.to_json() for r in results if not r.ok]
    if json_out:
        rate = passed / len(results) if results else 0.0
        print_json({"tasks": len(results), "passed": passed, "pass_rate": rate, "failures": failures})
    else:
        console.print(f"replay: {passed}/{len(results)} tasks reproduce their golden hash and score 1")
        for failure in failures:
            console.print(f"  [red]{failure['task_id']}[/red]: {failure.get('error')}", highlight=False)
    if passed != len(results):
        raise typer.Exit(1)
