"""`envcraft envs list|show`: browse environment packages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from envcraft.cli.library import is_library_ref, library_envs
from envcraft.cli.output import console, die, json_text, print_json
from envcraft.core import EnvPackage, PackageError, Session, builtin_ids, load_package
from envcraft.core.lint import LintReport, builtin_package_dirs, lint_package

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
        "example_state": _example_state(package),
    }
    if json_out:
        print_json(info)
        return
    # soft_wrap: the README's own lines (markdown tables, sentences) are never broken by the
    # console's width (80 columns when piped); the terminal wraps what is too long for it.
    console.print(f"[bold]{info['id']}[/bold] — {info['title']} ({info['kind']})", soft_wrap=True)
    console.print(info["readme"] or info["description"], markup=False, soft_wrap=True)
    console.print("\n[bold]tools[/bold] (? = optional)", soft_wrap=True)
    for spec in env_class.tools.values():
        params = ", ".join(
            f"{name}{'' if name in spec.parameters['required'] else '?'}: {_kind(prop)}"
            for name, prop in spec.parameters["properties"].items()
        )
        summary_line = spec.description.splitlines()[0] if spec.description else ""
        console.print(
            f"  {spec.name}({params}) — {summary_line}", markup=False, highlight=False, soft_wrap=True
        )
    _print_example(info["example_state"])


def _kind(prop: dict[str, Any]) -> str:
    """A parameter's type as help shows it: its values when it is an enum."""
    if "enum" in prop:
        return " | ".join(json_text(v, indent=None) for v in prop["enum"])
    if prop.get("type") == "array" and "enum" in prop.get("items", {}):
        return "array of " + " | ".join(json_text(v, indent=None) for v in prop["items"]["enum"])
    kind = prop.get("type", "")
    if kind == "array":
        return f"array of {prop.get('items', {}).get('type', 'value')}"
    return str(kind)


def _example_state(package: EnvPackage) -> dict[str, Any] | None:
    """The S0 a session gets by default (seed 0); ``None`` if the generator fails."""
    try:
        with Session.memory(package, seed=0) as session:
            return session.state()
    except Exception:  # environment code: the rest of `show` is still useful
        return None


KEEP_ITEMS = 1  # records shown of each collection: the example shows the shape, --json the data


def _print_example(state: dict[str, Any] | None) -> None:
    """Every field of S0 with the first record of each collection (the first lines of the whole
    dump showed only part of one collection)."""
    if state is None:
        console.print("example S0: the generator failed (see `envcraft envs check`)", highlight=False)
        return
    size = len(json_text(state, indent=None)) / 1024
    console.print(
        f"\nexample S0 (seed 0, {size:.1f} KiB; each collection's first record, --json shows all;"
        " the shape only: a task's world has its own records, read them with the tools):",
        highlight=False,
        soft_wrap=True,
    )
    shown = {key: _first(value) for key, value in state.items()}
    console.print(json_text(shown), markup=False, highlight=False, soft_wrap=True)


def _first(value: Any) -> Any:
    """A collection (a list, or a dict of records) cut to its first record, with a ``"…"`` entry
    saying how many more there are; a single record (a dict of plain values) is kept whole."""
    records = isinstance(value, dict) and all(isinstance(v, dict | list) for v in value.values())
    if records and len(value) > KEEP_ITEMS:
        kept = dict(list(value.items())[:KEEP_ITEMS])
        return {**kept, "…": f"{len(value) - KEEP_ITEMS} more"}
    if isinstance(value, list) and len(value) > KEEP_ITEMS:
        return [*value[:KEEP_ITEMS], f"… {len(value) - KEEP_ITEMS} more"]
    return value


@app.command("check")
def check(
    env: Annotated[
        str | None, typer.Argument(help="Built-in id, package directory, or 'library' (every library env).")
    ] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="Check every built-in environment.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check packages against the environment contract (exit 1 when any has errors)."""
    if (env is None) == (not all_envs):
        die("give one environment (id or directory), 'library' or --all")
    many = all_envs or is_library_ref(env)
    if all_envs:
        dirs: list[str | Path] = list(builtin_package_dirs())
    else:
        dirs = list(library_envs()) if is_library_ref(env) else [env or ""]
    try:
        reports = [lint_package(p) for p in dirs]
    except PackageError as exc:
        die(str(exc))
    if json_out:
        print_json([r.model_dump() for r in reports] if many else reports[0].model_dump())
    else:
        for report in reports:
            _print_report(report)
    raise typer.Exit(0 if all(r.ok for r in reports) else 1)


def _print_report(report: LintReport) -> None:
    root = Path(report.package)
    where = root.relative_to(Path.cwd()) if root.is_relative_to(Path.cwd()) else root
    for item in report.findings:
        color = "red" if item.severity == "error" else "yellow"
        console.print(
            f"{where / item.file}{f':{item.line}' if item.line else ''}: [{color}]{item.severity}[/{color}] "
            f"[bold]{item.rule}[/bold] {item.message}",
            highlight=False,
            soft_wrap=True,
        )
    verdict = "[green]ok[/green]" if report.ok else "[red]failed[/red]"
    console.print(
        f"{report.env_id}: {verdict} ({len(report.errors)} errors, {len(report.warnings)} warnings)",
        highlight=False,
    )
