"""`envcraft session new|show` and `envcraft call`: drive an environment from the shell."""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from envcraft.cli.envs import load_or_die
from envcraft.cli.output import console, die, json_text, note, print_json
from envcraft.core import ErrorCategory, Session, SessionError, error_result, is_error
from envcraft.core.errors import INTERNAL_ERROR_MESSAGE
from envcraft.core.interrupts import SignalWatch
from envcraft.core.jsonio import JsonInputError, loads
from envcraft.core.session import STATE_FILE, SessionDamaged, error_reason

log = logging.getLogger(__name__)

session_app = typer.Typer(help="Create and inspect durable sessions.", no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
ARGS_HELP = "Tool arguments: a JSON object, @FILE to read it from a file, or - for stdin."


def read_json(source: str, what: str) -> Any:
    """Strict JSON from ``source`` (a file path, or ``-`` for stdin); exit 2 with why if it is not."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        die(f"cannot read {what} {source}: {exc.strerror or exc}")
    try:
        return loads(data)
    except JsonInputError as exc:
        die(f"{what} {'(stdin)' if source == '-' else source}: {exc}")


@session_app.command("new")
def new(
    env: Annotated[str, typer.Argument(help="Built-in id or package directory.", metavar="ENV")],
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Session directory to create.", metavar="DIR")
    ] = None,
    state: Annotated[
        str | None,
        typer.Option("--state", help="JSON file with the initial state (- for stdin).", metavar="FILE"),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for the generated initial state.")] = 0,
    json_out: JsonFlag = False,
) -> None:
    """Create a durable session and print its directory."""
    package = load_or_die(env)
    initial = read_json(state, "--state") if state is not None else None
    if initial is not None and not isinstance(initial, dict):
        die(f"--state {state}: the initial state must be a JSON object, not {type(initial).__name__}")
    root = directory or Path(tempfile.mkdtemp(prefix=f"envcraft-{package.id}-"))
    if root.exists() and not root.is_dir():
        die(f"{root} exists and is not a directory")
    if (root / STATE_FILE).exists():
        die(f"{root} already holds a session")
    try:
        session = Session.create(package, root, state=initial, seed=seed)
    except ValueError as exc:
        die(f"invalid initial state for {package.id}: {error_reason(exc)}")
    except OSError as exc:
        die(f"cannot create a session in {root}: {exc.strerror or exc}")
    info = {"session": str(root.resolve()), "env": package.id, "state_hash": session.state_hash()}
    if json_out:
        print_json(info)
    else:
        console.print(str(root.resolve()), highlight=False, soft_wrap=True)


def open_or_die(directory: Path) -> Session:
    """A durable session, or exit: 2 with why for a damaged one, 1 (as JSON) for a missing one."""
    try:
        return Session.open(directory)
    except SessionDamaged as exc:
        die(str(exc))
    except SessionError as exc:
        print_json(exc.to_result())
        raise typer.Exit(1) from None


@session_app.command("show")
def show(
    directory: Annotated[Path, typer.Argument(help="Session directory.", metavar="DIR")],
    last: Annotated[int, typer.Option("--last", min=0, help="Log entries to show (0: all).")] = 20,
    json_out: JsonFlag = False,
) -> None:
    """Show a session: its environment, state hash, state and the last calls of its log."""
    session = open_or_die(directory)
    actions = session.actions()
    shown = actions if last == 0 else actions[-last:]
    info = {
        "session": str(Path(directory).resolve()),
        "env": session.package.id,
        "seed": session.env.seed,
        "state_hash": session.state_hash(),
        "calls": len(actions),
        "state": session.state(),
        "log": shown,
    }
    if json_out:
        print_json(info)
        return
    console.print(
        f"[bold]{info['env']}[/bold] session {info['session']}: {len(actions)} calls, "
        f"state {str(info['state_hash'])[:16]}",
        highlight=False,
        soft_wrap=True,
    )
    console.print(json_text(info["state"]), markup=False, highlight=False, soft_wrap=True)
    table = Table("index", "time", "tool", "args", "result", title=f"last {len(shown)} calls")
    for entry in shown:
        result: Any = entry.get("result")
        outcome = f"error: {result['error'].get('category')}" if is_error(result) else "ok"
        table.add_row(str(entry["index"]), entry["time"], entry["tool"], _short(entry.get("args")), outcome)
    console.print(table)


def _short(value: Any, width: int = 60) -> str:
    text = json_text(value, indent=None)
    return text if len(text) <= width else text[: width - 1] + "…"


def call(
    env: Annotated[str, typer.Argument(help="Built-in id or package directory.", metavar="ENV")],
    tool: Annotated[str, typer.Argument(help="Tool name.", metavar="TOOL")],
    args: Annotated[str, typer.Option("--args", help=ARGS_HELP, metavar="JSON|@FILE|-")] = "{}",
    session_dir: Annotated[
        Path | None, typer.Option("--session", help="Durable session directory.", metavar="DIR")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON line: result, state hash, session, whether it was kept.")
    ] = False,
) -> None:
    """Call one tool and print its result as JSON (exit 1 on a structured tool error).

    Without --session the call runs on a fresh generated state that is thrown away after it.
    A tool that raises SystemExit or KeyboardInterrupt itself gets ``internal_error`` (the call
    undone, nothing logged); a Ctrl-C delivered to the process still stops the command.
    """
    parsed = _call_args(args)
    package = load_or_die(env)
    if session_dir is None:
        note("no --session: this call runs on a fresh generated state and nothing is kept")
        session = Session.memory(package)
    else:
        session = open_or_die(session_dir)
        if session.package.id != package.id:
            die(f"session {session_dir} belongs to '{session.package.id}', not '{package.id}'")
    with session, SignalWatch() as watch:
        try:
            result = session.call(tool, parsed)
        except (KeyboardInterrupt, SystemExit) as exc:
            if not watch.raised_by_code(exc):
                raise
            log.error("tool %s raised %s", tool, type(exc).__name__)
            result = error_result(ErrorCategory.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, tool=tool)
        if session_dir is not None:
            from envcraft.rollout.play import note_call  # only here: a plain call loads no task code

            note_call(session_dir)  # a play's session: the call's place among the turn's calls
        if json_out:
            record = {
                "result": result,
                "state_hash": session.state_hash(),
                "session": str(Path(session_dir).resolve()) if session_dir is not None else None,
                "kept": session_dir is not None,
            }
            print_json(record, indent=None)
        else:
            print_json(result)
    raise typer.Exit(1 if is_error(result) else 0)


def _call_args(value: str) -> dict[str, Any]:
    if value == "-" or value.startswith("@"):
        parsed = read_json(value if value == "-" else value[1:], "--args")
    else:
        try:
            parsed = loads(value)
        except JsonInputError as exc:
            die(f"--args: {exc}")
    if not isinstance(parsed, dict):
        die(f"--args must be a JSON object, not {type(parsed).__name__}")
    return parsed
