"""`envcraft import bfcl|pinchbench|claw-eval`: other benchmarks as environments and tasks (wiring only)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envcraft.cli.output import console, count, die, err_console, print_json
from envcraft.integrations.bfcl import importer, source
from envcraft.integrations.bfcl import parity as parity_check
from envcraft.integrations.claweval.importer import ClawEvalError, import_claweval
from envcraft.integrations.pinchbench import source as pinch_source
from envcraft.integrations.pinchbench.importer import import_pinchbench
from envcraft.integrations.pinchbench.source import PinchBenchError
from envcraft.tasks.format.io import write_json

app = typer.Typer(help="Import environments and task sets from other benchmarks.", no_args_is_help=True)

PARITY_FILE = "parity.json"
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


@contextmanager
def _bar(label: str, total: int) -> Iterator[Callable[[str], None]]:
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        job = bar.add_task(label, total=total)
        yield lambda _item: bar.advance(job)


@app.command("bfcl")
def bfcl(
    out: Annotated[Path, typer.Option("--out", help="Directory for envs/ and tasks/<category>/.")],
    categories: Annotated[
        str, typer.Option("--categories", help="Comma-separated: base,long_context,miss_func,miss_param.")
    ] = "base,long_context,miss_func,miss_param",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="First N entries per category.")] = None,
    parity: Annotated[
        bool,
        typer.Option("--parity", help="Then score ground truth and mutations with ours and BFCL's checker."),
    ] = False,
    per_kind: Annotated[
        int, typer.Option("--per-kind", min=1, help="Parity: mutations per kind per task.")
    ] = 3,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Write BFCL's eight multi-turn classes as packages and its multi-turn entries as tasks.

    Needs the bfcl extra: pip install --no-deps bfcl-eval==2026.3.23 mpmath. With --parity,
    writes OUT/parity.json and exits 1 when any verdict differs from BFCL's.
    """
    chosen = [c.strip() for c in categories.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in source.CATEGORIES]
    if unknown or not chosen:
        die(f"unknown categories {unknown or categories!r}; known: {', '.join(source.CATEGORIES)}")
    try:
        source.require()
        with _bar("import", importer.entry_count(chosen, limit)) as advance:
            summary = importer.import_bfcl(out, chosen, limit=limit, advance=advance)
    except source.BfclUnavailable as exc:
        die(str(exc))
    result: dict[str, Any] = {"import": summary.to_json()}
    if parity:
        with _bar("parity", sum(summary.categories[c]["tasks"] for c in chosen)) as advance:
            report = parity_check.run_parity(out, chosen, per_kind=per_kind, limit=limit, advance=advance)
        result["parity"] = report.to_json()
        write_json(out / PARITY_FILE, result["parity"])
    if json_out:
        print_json(result)
    else:
        _print(result)
    if summary.failures or (parity and result["parity"]["totals"]["disagree"]):
        raise typer.Exit(1)


def _print(result: dict[str, Any]) -> None:
    imported = result["import"]
    table = Table("category", "tasks", "turns", "judged", "empty GT", "calls", "multi-env")
    for name, row in imported["categories"].items():
        cells = ("tasks", "turns", "judged_turns", "empty_ground_truth_turns", "reference_calls", "multi_env")
        table.add_row(name, *(str(row[c]) for c in cells))
    console.print(table)
    console.print(
        f"{count(len(imported['envs']), 'environment')}, {count(imported['tasks'], 'task')} "
        f"in {imported['out']}"
    )
    for failure in imported["failures"]:
        console.print(f"  [red]{failure['id']}[/red]: {failure['error']}", highlight=False)
    for warning in imported["warnings"]:
        console.print(
            f"  [yellow]{warning['id']}[/yellow]: refused {'; '.join(warning['refused'])}", highlight=False
        )
    if "parity" not in result:
        return
    report = result["parity"]
    kinds = sorted({k for row in report["matrix"].values() for k in row})
    grid = Table("category", *kinds, title="parity: agree/disagree with BFCL's multi_turn_checker")
    for name, row in report["matrix"].items():
        grid.add_row(name, *(f"{row[k]['agree']}/{row[k]['disagree']}" if k in row else "-" for k in kinds))
    console.print(grid)
    fidelity = report["fidelity"]
    console.print(
        f"totals {report['totals']}; ground truth in BFCL vs envcraft: {fidelity['calls']} calls, "
        f"{len(fidelity['mismatches'])} mismatches"
    )
    for item in report["disagreements"][:20]:
        console.print(
            f"  [red]{item['task']}[/red] {item.get('variant', item.get('error'))}", highlight=False
        )


Checkout = Annotated[Path, typer.Argument(help="A checkout of the benchmark's repository.")]
ImportOut = Annotated[Path, typer.Option("--out", help="Directory for envs/, tasks/ and import.json.")]


@app.command("pinchbench")
def pinchbench(checkout: Checkout, out: ImportOut, json_out: JsonFlag = False) -> None:
    """Import a PinchBench checkout (github.com/pinchbench/skill) as Claw tasks on the OpenClaw profile.

    Every tasks/task_*.md becomes a task or is skipped with its reason (OUT/import.json). Run the
    set with `envcraft eval OUT/tasks --model M [--judge J]`.
    """
    if not checkout.is_dir():
        die(f"{checkout}: not a directory")
    try:
        with _bar("import", len(pinch_source.task_files(checkout))) as advance:
            summary = import_pinchbench(checkout, out, advance=advance)
    except PinchBenchError as exc:
        die(str(exc))
    except OSError as exc:
        die(f"--out {out}: {exc.strerror or exc}")
    _print_benchmark(summary.to_json(), json_out)


@app.command("claw-eval")
def claw_eval(checkout: Checkout, out: ImportOut, json_out: JsonFlag = False) -> None:
    """Import a Claw-Eval checkout (github.com/claw-eval/claw-eval): its tasks become Claw tasks
    scored by their own grader.py (their mock services copied into OUT/services and started per
    episode; a judge inside the grader answered with eval --judge, a simulated user played with
    eval --user); every other task is counted and skipped with the reason it cannot run (the live
    web, media or browser grading, binary files).
    """
    if not checkout.is_dir():
        die(f"{checkout}: not a directory")
    try:
        summary = import_claweval(checkout, out)
    except ClawEvalError as exc:
        die(str(exc))
    except OSError as exc:
        die(f"--out {out}: {exc.strerror or exc}")
    if json_out:
        print_json(summary)
        return
    _print_benchmark({**summary, "needs_internet": {}, "skipped": []}, False)
    imported = ", ".join(f"{k} {v}" for k, v in summary["imported_by_grading_type"].items())
    console.print(f"imported by grading kind: {imported or 'none'}", highlight=False)
    for reason, skipped in summary["skip_reasons"].items():
        console.print(f"  [red]{skipped}[/red] not imported: {reason}", highlight=False)


def _print_benchmark(result: dict[str, Any], json_out: bool) -> None:
    if json_out:
        print_json(result)
        return
    table = Table("grading type", "tasks")
    for name, tasks in result["by_grading_type"].items():
        table.add_row(name, str(tasks))
    console.print(table)
    categories = ", ".join(f"{k} {v}" for k, v in result["by_category"].items())
    console.print(
        f"{result['imported']} of {result['files']} tasks imported into {result['out']}", highlight=False
    )
    console.print(f"by category: {categories}", highlight=False)
    for task_id, reason in result["needs_internet"].items():
        console.print(f"  [yellow]{task_id}[/yellow]: marked, skipped by eval: {reason}", highlight=False)
    for skipped in result["skipped"]:
        console.print(f"  [red]{skipped['id']}[/red]: not imported: {skipped['reason']}", highlight=False)
