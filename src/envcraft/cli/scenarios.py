"""`envcraft scenarios list`: the scenario catalog environments are synthesized from."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from envcraft.cli.output import console, print_json
from envcraft.synth.catalog import Category, scenarios

app = typer.Typer(help="Browse the scenario catalog (41 general + 42 Claw scenarios).", no_args_is_help=True)


@app.command("list")
def list_scenarios(
    category: Annotated[Category | None, typer.Option(help="Only this category.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the scenarios, with their paper row, archetypes and source."""
    rows = scenarios(category)
    if json_out:
        print_json([s.model_dump(mode="json") for s in rows])
        return
    table = Table("category", "no.", "envs", "source")
    table.add_column("id", no_wrap=True)
    table.add_column("archetypes", no_wrap=True)
    table.add_column("title")
    for s in rows:
        numbers = (str(s.number or ""), str(s.n_envs or ""))
        table.add_row(s.category, *numbers, s.source, s.id, "\n".join(s.archetypes), s.title)
    console.print(table)
    console.print(f"{len(rows)} scenarios", highlight=False)
