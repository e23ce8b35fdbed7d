"""Imports run one way: a layer imports only from the layers below it (docs/architecture.md).

Read statically from the source (every import statement, deferred ones and those under
``TYPE_CHECKING`` included), so an import that only runs on some code path is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import envcraft

SRC = Path(envcraft.__file__).parent
# Bottom first, as docs/architecture.md draws them.
LAYERS = ("core", "sandbox", "executor", "llm", "envs", "tasks", "synth", "rollout", "integrations", "cli")


def _layer(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def _imported_layers(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "envcraft" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def test_every_module_belongs_to_a_layer() -> None:
    tops = {_layer(p) for p in SRC.rglob("*.py")} - {"__init__"}
    assert tops <= set(LAYERS), tops - set(LAYERS)


def test_no_layer_imports_one_above_it() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        layer = _layer(path)
        if layer == "__init__":
            continue
        for line, target in _imported_layers(path):
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(layer):
                upward.append(f"{path.relative_to(SRC)}:{line} ({layer}) imports envcraft.{target}")
    assert not upward, "\n".join(upward)
