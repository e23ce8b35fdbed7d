"""Shared CLI output helpers: JSON to stdout, one-line reasons to stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def die(message: str, code: int = 2) -> NoReturn:
    """Exit with a one-line reason (code 2 = bad usage or input)."""
    err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
