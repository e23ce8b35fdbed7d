"""`envcraft export`: write a task set as JSONL, Parquet or VERL rows (wiring only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envcraft.cli.output import console, die, print_json
from envcraft.cli.tasks import load_tasks_or_die
from envcraft.sandbox.profiles import DEFAULT_PROFILE, PROFILES
from envcraft.tasks.corpus.export import AGENT_NAMES, DEFAULT_VAL_FRACTION, FORMATS, ExportError, export_files


def export_command(
    tasks: Annotated[Path, typer.Option("--tasks", help="Task-set directory (holding tasks.jsonl).")],
    fmt: Annotated[str, typer.Option("--format", help=f"One of: {', '.join(FORMATS)}.")],
    out: Annotated[Path, typer.Option("--out", help="Directory to write into.")],
    agent_name: Annotated[
        str, typer.Option("--agent-name", help=f"VERL agent loop: {' or '.join(AGENT_NAMES)}.")
    ] = AGENT_NAMES[0],
    val_fraction: Annotated[
        float, typer.Option("--val-fraction", min=0.0, max=0.99, help="VERL: share of tasks held out.")
    ] = DEFAULT_VAL_FRACTION,
    profile: Annotated[
        str,
        typer.Option(
            "--profile", help="verl: the tool profile of the rows (openclaw, claude-code, envcraft)."
        ),
    ] = DEFAULT_PROFILE,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Export a task set for trainers: jsonl (as is), parquet (one row per task) or verl.

    verl writes train.parquet, val.parquet, tasks.jsonl and agent_loop.yaml (see the README).
    """
    if fmt not in FORMATS:
        die(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if profile not in PROFILES:
        die(f"unknown tool profile {profile!r}; the profiles are: {', '.join(sorted(PROFILES))}")
    loaded = load_tasks_or_die(tasks)
    try:
        written = export_files(
            loaded, fmt, out, agent_name=agent_name, val_fraction=val_fraction, profile=profile
        )
    except (ExportError, OSError) as exc:
        die(str(exc))
    files = [{"path": str(w.path), "rows": w.rows} for w in written]
    info = {"format": fmt, "path": files[0]["path"], "rows": len(loaded), "files": files}
    if json_out:
        print_json(info)
        return
    console.print(f"wrote {len(loaded)} tasks as {fmt} to {out}:", highlight=False, soft_wrap=True)
    for w in written:
        rows = "" if w.rows is None else f" ({w.rows} {'row' if w.rows == 1 else 'rows'})"
        console.print(f"  {w.path}{rows}", highlight=False, soft_wrap=True)
