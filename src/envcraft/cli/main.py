"""The `envcraft` command: wiring only; every command's logic lives in its library module.

The console script enters through :mod:`envcraft.cli.launcher`, which answers ``--version``
before this module (and everything it imports) is loaded.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from envcraft import __version__
from envcraft.cli import (
    agents,
    envs,
    export,
    help_format,
    importers,
    library,
    llm,
    playing,
    run,
    scenarios,
    serve,
    session,
    synth,
    tasks,
)

help_format.plain_types()
app = typer.Typer(
    name="envcraft",
    help="Executable RL environments and verifiable tasks for tool-using LLM agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(envs.app, name="envs")
app.add_typer(session.session_app, name="session")
app.add_typer(tasks.app, name="tasks")
app.add_typer(scenarios.app, name="scenarios")
app.add_typer(importers.app, name="import")
app.add_typer(library.app, name="library")
app.command("call")(session.call)
app.command("run")(run.run_command)
app.command("export")(export.export_command)
app.command("synth")(synth.synth_command)
app.command("serve-mcp")(serve.serve_mcp)
app.command("eval")(agents.eval_command)
app.add_typer(llm.llm_app, name="llm")
tasks.app.command("show")(playing.show)
tasks.app.command("play")(playing.play)
tasks.app.command("calibrate")(agents.calibrate)
tasks.app.command("inspect")(agents.inspect)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"envcraft {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """envcraft: build, check and use RL environments and tasks."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.CRITICAL,
        format="%(levelname)s %(name)s: %(message)s",
    )


def main() -> None:
    app()
