"""`envcraft serve-mcp`: a task or an environment as an MCP server (wiring only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envcraft.cli.output import die
from envcraft.core.package import PackageError, load_package
from envcraft.sandbox.profiles import DEFAULT_PROFILE, PROFILES
from envcraft.tasks.format.io import TaskSetError, read_tasks


def serve_mcp(
    target: Annotated[
        list[str],
        typer.Argument(
            help="ENV (an environment id or package path), or with --task: TASKS ID.", show_default=False
        ),
    ],
    task: Annotated[
        bool, typer.Option("--task", help="Serve task ID of task set TASKS (a directory).")
    ] = False,
    transport: Annotated[str, typer.Option("--transport", help="stdio or http (streamable HTTP).")] = "stdio",
    profile: Annotated[
        str, typer.Option("--profile", help="Tool profile: openclaw, claude-code, envcraft.")
    ] = (DEFAULT_PROFILE),
    host: Annotated[str, typer.Option("--host", help="HTTP: address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="HTTP: port (0 picks one).")] = 8000,
    control_port: Annotated[
        int | None,
        typer.Option(
            "--control-port", min=0, max=65535, help="stdio: serve the control channel over HTTP here."
        ),
    ] = None,
    expose_control: Annotated[
        bool, typer.Option("--expose-control", help="Also list end-turn/score/reset on the model channel.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="ENV: seed of the generated initial state.")] = 0,
) -> None:
    """Serve the tools over MCP, one fresh episode per client connection.

    The model channel lists only domain and system tools; the trainer's control channel
    (end_turn, score, trajectory, state, reset) is /control over HTTP, or --control-port with
    stdio. Needs the mcp extra: pip install 'envcraft\\[mcp]'.
    """
    if transport not in ("stdio", "http"):
        die(f"unknown transport {transport!r}; use stdio or http")
    if profile not in PROFILES:
        die(f"unknown tool profile {profile!r}; the profiles are: {', '.join(sorted(PROFILES))}")
    try:
        from envcraft.integrations.mcp import Source, serve
    except ImportError as exc:
        die(f"serve-mcp needs the mcp extra (pip install 'envcraft[mcp]'): {exc}")
    if task:
        if len(target) != 2:
            die("--task takes TASKS ID: a task-set directory and a task id")
        try:
            found = {t.id: t for t in read_tasks(Path(target[0]))}
        except (TaskSetError, OSError) as exc:
            die(str(exc))
        if target[1] not in found:
            die(f"no task {target[1]!r} in {target[0]}")
        source = Source(profile, task=found[target[1]])
    else:
        if len(target) != 1:
            die("give one environment (or --task TASKS ID)")
        try:
            source = Source(profile, package=load_package(target[0]), seed=seed)
        except PackageError as exc:
            die(str(exc))
    try:
        serve(
            source,
            transport=transport,
            host=host,
            port=port,
            control_port=control_port,
            expose_control=expose_control,
        )
    except OSError as exc:
        die(f"cannot serve: {exc}")
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
