"""`envcraft session new` and `envcraft call`: drive an environment from the shell."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from envcraft.cli.envs import load_or_die
from envcraft.cli.output import console, die, print_json
from envcraft.core import Session, SessionError, is_error

session_app = typer.Typer(help="Create durable sessions.", no_args_is_help=True)


@session_app.command("new")
def new(
    env: Annotated[str, typer.Argument(help="Built-in id or package directory.")],
    directory: Annotated[Path | None, typer.Option("--dir", help="Session directory to create.")] = None,
    state: Annotated[Path | None, typer.Option("--state", help="JSON file with the initial state.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the generated initial state.")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Create a durable session and print its directory."""
    package = load_or_die(env)
    initial = _read_json_file(state) if state is not None else None
    root = directory or Path(tempfile.mkdtemp(prefix=f"envcraft-{package.id}-"))
    if (root / "state.json").exists():
        die(f"{root} already holds a session")
    try:
        session = Session.create(package, root, state=initial, seed=seed)
    except ValueError as exc:
        die(f"invalid initial state: {exc}".splitlines()[0])
    info = {"session": str(root.resolve()), "env": package.id, "state_hash": session.state_hash()}
    if json_out:
        print_json(info)
    else:
        console.print(str(root.resolve()))


def call(
    env: Annotated[str, typer.Argument(help="Built-in id or package directory.")],
    tool: Annotated[str, typer.Argument(help="Tool name.")],
    args: Annotated[str, typer.Option("--args", help="Tool arguments as a JSON object.")] = "{}",
    session_dir: Annotated[Path | None, typer.Option("--session", help="Durable session directory.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Call one tool and print its result as JSON (exit 1 on a structured tool error)."""
    del json_out  # results are always JSON; the flag is accepted for uniformity
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError as exc:
        die(f"--args is not valid JSON: {exc}")
    if not isinstance(parsed, dict):
        die("--args must be a JSON object")
    package = load_or_die(env)
    if session_dir is None:
        session = Session.memory(package)
    else:
        try:
            session = Session.open(session_dir)
        except SessionError as exc:
            print_json(exc.to_result())
            raise typer.Exit(1) from None
        if session.package.id != package.id:
            die(f"session {session_dir} belongs to '{session.package.id}', not '{package.id}'")
    with session:
        result = session.call(tool, parsed)
    print_json(result)
    raise typer.Exit(1 if is_error(result) else 0)


def _read_json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        die(f"cannot read {path}: {exc}")
