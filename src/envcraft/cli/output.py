"""Shared CLI output helpers: JSON to stdout, one-line reasons to stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
err_console = Console(stderr=True)


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text for stdout: NaN never, and text UTF-8 cannot hold (a lone surrogate an
    agent sent) as a JSON escape rather than a crash."""
    from envcraft.core.store import jsonable

    try:
        text = json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(jsonable(value), indent=indent, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(json.loads(text), indent=indent, ensure_ascii=True)
    return text


def print_json(value: Any, *, indent: int | None = 2) -> None:
    sys.stdout.write(json_text(value, indent=indent) + "\n")


def die(message: str, code: int = 2) -> NoReturn:
    """Exit with a one-line reason (code 2 = bad usage or input)."""
    line = escape(" ".join(str(message).split()))
    err_console.print(f"[red]error:[/red] {line}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def note(message: str) -> None:
    """One line on stderr that is not an error (stdout stays machine-readable)."""
    err_console.print(f"[yellow]note:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 task``, ``2 tasks`` (``plural`` for nouns that do not take an s)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
