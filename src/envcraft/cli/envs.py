"""`envcraft envs list|show`: browse environment packages."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from envcraft.cli.output import console, die, print_json
from envcraft.core import EnvPackage, PackageError, builtin_ids, load_package

app = typer.Typer(help="Browse and check environment packages.", no_args_is_help=True)


def summary(package: EnvPackage) -> dict[str, Any]:
    manifest = package.manifest
    return {
        "id": manifest.id,
        "title": manifest.title,
        "kind": manifest.kind,
        "archetypes": manifest.archetypes,
        "tool_count": len(package.env_class.tools),
        "path": str(package.root),
    }


def load_or_die(ref: str) -> EnvPackage:
    try:
        return load_package(ref)
    except PackageError as exc:
        die(str(exc))


@app.command("list")
def list_envs(
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List the built-in environments."""
    rows = [summary(load_or_die(env_id)) for env_id in builtin_ids()]
    if json_out:
        print_json(rows)
        return
    table = Table("id", "kind", "archetypes", "tools", "title")
    for row in rows:
        table.add_row(
            row["id"],
            row["kind"],
            ", ".join(row["archetypes"]),
            str(row["tool_count"]),
            row["title"],
        )
    console.print(table)


@app.command("show")
def show(
    env: Annotated[str, typer.Argument(help="Built-in id or package directory.")],
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show an environment's documentation, tools with schemas, and state schema."""
    package = load_or_die(env)
    env_class = package.env_class
    info = {
        **summary(package),
        "scenario": package.manifest.scenario,
        "description": env_class.describe(),
        "readme": package.readme,
        "skills": sorted(package.skills),
        "tools": env_class.openai_tools(),
        "state_schema": env_class.State.model_json_schema(),
    }
    if json_out:
        print_json(info)
        return
    console.print(f"[bold]{info['id']}[/bold] — {info['title']} ({info['kind']})")
    console.print(info["readme"] or info["description"], markup=False)
    table = Table("tool", "parameters", "description")
    for spec in env_class.tools.values():
        params = ", ".join(
            f"{name}{'' if name in spec.parameters['required'] else '?'}: {prop.get('type', '')}"
            for name, prop in spec.parameters["properties"].items()
        )
        table.add_row(spec.name, params, spec.description.splitlines()[0] if spec.description else "")
    console.print(table)
