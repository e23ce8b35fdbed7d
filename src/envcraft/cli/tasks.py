"""`envcraft tasks ...`: synthesize, check, replay and score task sets (wiring only)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envcraft.cli.output import console, count, die, err_console, print_json
from envcraft.cli.run import synth_command
from envcraft.rollout.grading import grading_of
from envcraft.tasks.corpus.measures import summarize
from envcraft.tasks.format.io import (
    TaskSetError,
    read_some,
    read_stats,
    read_tasks,
    read_trajectories,
    task_entries,
)
from envcraft.tasks.format.model import Task
from envcraft.tasks.validation.validate import replay_task, validate
from envcraft.tasks.verifier.explain import explain_trajectory, render, score_with_failed_calls

app = typer.Typer(help="Synthesize, check, replay and score task sets.", no_args_is_help=True)
app.command("synth")(synth_command)

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
    with Progress(*columns, console=err_console, transient=True, redirect_stdout=False) as bar:
        job = bar.add_task(label, total=total)
        for item in items:
            yield item
            bar.advance(job)


@app.command("list")
def list_tasks(
    directory: TaskDir,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="Only tasks in this environment (repeat: all of them).")
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only tasks of this kind (tool or claw).")
    ] = None,
    turns: Annotated[
        str | None, typer.Option("--turns", help="Only tasks with N user turns, or N-M.", metavar="N|N-M")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """List a task set's ids with their environments, kind and user turns (read from its index)."""
    low, high = _turn_range(turns)
    try:
        entries = task_entries(directory)
    except (TaskSetError, OSError) as exc:
        die(str(exc))
    shown = [
        e
        for e in entries
        if all(name in e.envs for name in env or ())
        and (kind is None or e.kind == kind)
        and low <= e.turns <= high
    ]
    if json_out:
        print_json([e.to_json() for e in shown])
        return
    table = Table("id", "envs", "kind", "turns", box=None, pad_edge=False)
    for e in shown:
        table.add_row(e.id, ", ".join(e.envs), e.kind, str(e.turns))
    console.print(table, soft_wrap=True)
    console.print(f"{count(len(shown), 'task')} of {len(entries)}", highlight=False)


def _turn_range(text: str | None) -> tuple[int, int]:
    if text is None:
        return 0, sys.maxsize
    low, _, high = text.partition("-")
    try:
        bounds = int(low), int(high or low)
    except ValueError:
        die(f"--turns {text}: expected N or N-M (whole numbers)")
    return bounds


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


@app.command("check")
def check(directory: TaskDir, json_out: JsonFlag = False) -> None:
    """Re-validate every task: golden pass, do-nothing fail, mutations, adversarial agents, leaks
    (exit 1 if any fails)."""
    tasks = load_tasks_or_die(directory)
    try:
        stats = read_stats(directory)
    except TaskSetError as exc:
        die(str(exc))
    reports = [validate(t, record=False) for t in progress(tasks, len(tasks), "check")]
    summary = summarize(tasks, reports, stats)
    if json_out:
        print_json(summary)
    else:
        _print_check(summary)
    if summary["valid"] != summary["tasks"]:
        raise typer.Exit(1)


def _print_check(summary: dict[str, Any]) -> None:
    table = Table("measure", "value", show_header=False)
    coverage = summary["edge_coverage"]
    rows = [
        ("tasks", str(summary["tasks"])),
        ("valid", str(summary["valid"])),
        ("golden pass", f"{summary['golden_pass_rate']:.1%}"),
        ("do-nothing fail", f"{summary['noop_fail_rate']:.1%}"),
        ("mutation kill rate", f"{summary['kill_rate']:.1%} of {summary['mutations']}"),
        *((f"  {kind}", f"{rate:.1%}") for kind, rate in summary["kill_rate_by_kind"].items()),
        ("adversarial agents passed", f"{summary['adversarial_pass_rate']:.1%} of tasks"),
        *(
            (f"  {kind}", f"{v['passed']} / {v['runs']} runs as expected")
            for kind, v in summary["adversarial_by_policy"].items()
        ),
        ("leaked values", str(summary["leaks"])),
        ("cross-environment", f"{summary['cross_env_rate']:.1%}"),
        ("edge coverage", "n/a (no stats)" if coverage is None else _shares(coverage)),
        ("chain lengths", _bars(summary["chain_lengths"])),
        ("turns", _bars(summary["turns"])),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for bad in summary["invalid"][:20]:
        survivors = f"survivors: {', '.join(bad['survivors'])}" if bad["survivors"] else ""
        reason = "; ".join(bad["errors"]) or survivors or f"do-nothing scores {bad['noop_score']:.2f}"
        console.print(f"  [red]{bad['task_id']}[/red]: {reason}", highlight=False)


def _shares(coverage: dict[str, float]) -> str:
    return "  ".join(f"{env} {share:.0%}" for env, share in sorted(coverage.items()))


def _bars(histogram: dict[str, int]) -> str:
    return "  ".join(f"{k}:{v}" for k, v in histogram.items())


@app.command("score")
def score(
    directory: TaskDir,
    trajectories: Annotated[Path, typer.Option("--trajectories", help="JSONL of {task_id, turns}.")],
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Say why: each check passed or failed (expected vs had), the score's sum, the failed calls.",
        ),
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Score agent trajectories with their tasks' verifiers: one line per trajectory (with --json,
    the line's own other keys, a label or a note, come back beside its score)."""
    if not trajectories.is_file():
        die(f"{trajectories}: no such file")
    lines: list[dict[str, Any]] = []
    explained: dict[int, list[str]] = {}  # line -> the explanation's text (--explain)
    entries = list(read_trajectories(trajectories))
    try:  # only the tasks the trajectories name, each read alone through the set's index
        tasks = read_some(directory, [e.task_id for e in entries if e.task_id is not None])
    except (TaskSetError, OSError) as exc:
        die(str(exc))
    for entry in progress(entries, len(entries), "score"):
        row: dict[str, Any] = {**entry.extra, "line": entry.line, "task_id": entry.task_id}
        task = tasks.get(entry.task_id) if entry.task_id is not None else None
        if entry.error is None and task is None:
            entry.error = f"unknown task id {entry.task_id!r}"
        if entry.error is not None or task is None or entry.turns is None:
            row.update(score=None, components={}, error=entry.error)
        else:
            grading = grading_of(task)
            reads = grading is not None and bool(grading.get("reads_transcript"))
            messages = entry.messages if reads else None
            if explain:
                verdict, why = explain_trajectory(task, entry.turns, messages=messages)
                row.update(verdict.to_json(), failed_calls=why.failed_calls, explain=why.to_json())
                explained[entry.line] = render(why, verdict.components)
            else:
                verdict, failed = score_with_failed_calls(task, entry.turns, messages=messages)
                row.update(verdict.to_json(), failed_calls=failed)
        lines.append(row)
        if json_out:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    if not json_out:
        _print_scores(lines)
        if not explain and any(row["score"] is not None and row["score"] < 1.0 for row in lines):
            console.print(
                "(--explain says why: each check, the score's sum, the failed calls)", highlight=False
            )
        for row in lines:
            if row["line"] in explained:
                console.print(
                    f"\n[bold]line {row['line']}[/bold]: {row['task_id']} scores {row['score']:.3f}",
                    highlight=False,
                    soft_wrap=True,
                )
                for text in explained[row["line"]]:
                    console.print(f"  {text}", highlight=False, soft_wrap=True, markup=False)
    if lines and all(row.get("score") is None for row in lines):
        raise typer.Exit(1)


def _print_scores(lines: list[dict[str, Any]]) -> None:
    """The scores as a table; a trajectory whose calls the environments refused says how many:
    a wrong argument name scores as the call never made, which a score alone does not show."""
    table = Table("line", "task", "score", "note")
    for row in lines:
        shown = "-" if row["score"] is None else f"{row['score']:.3f}"
        failed = len(row.get("failed_calls") or [])
        note = row.get("error") or (f"{failed} call{'s' * (failed != 1)} refused" if failed else "")
        table.add_row(str(row["line"]), str(row["task_id"]), shown, note)
    console.print(table)
    scored = [row["score"] for row in lines if row["score"] is not None]
    if scored:
        console.print(f"mean score {sum(scored) / len(scored):.3f} over {len(scored)} trajectories")
