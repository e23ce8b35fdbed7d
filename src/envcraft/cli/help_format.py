"""Help output without type labels: typer labels every parameter with its Python type
(``<str>``, ``<bool>``), which says nothing a metavar or the flag's help does not."""

from __future__ import annotations

from typing import Any

_NOISE = frozenset({"<str>", "<bool>"})


def plain_types() -> None:
    """Drop the ``<str>`` / ``<bool>`` labels from every command's help (idempotent)."""
    from typer import core

    for cls in (core.TyperOption, core.TyperArgument):
        original = getattr(cls, "display_type_rich", None)
        if original is None or getattr(original, "_envcraft_plain", False):
            continue

        def display(self: Any, ctx: Any, _original: Any = original) -> str | None:
            shown = _original(self, ctx)
            return None if shown in _NOISE else shown

        display._envcraft_plain = True  # type: ignore[attr-defined]
        cls.display_type_rich = display  # type: ignore[method-assign]
