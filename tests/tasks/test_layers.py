"""The data engine's sub-packages import in one direction, and nothing above the data engine.

``envcraft.tasks`` is layered (``docs/architecture.md``, "The data engine"): each sub-package
imports only from those before it in :data:`ORDER` (and from ``envcraft.core``,
``envcraft.sandbox``, ``envcraft.executor``), never from one after it and never from the layers
above the data engine (rollout, integrations, synth, cli). The test reads every module's imports
from its AST, deferred imports and imports under ``TYPE_CHECKING`` included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import envcraft.tasks

ROOT = Path(envcraft.tasks.__file__).resolve().parent
ORDER = (
    "values",
    "format",
    "phrasing",
    "play",
    "graphs",
    "verifier",
    "golden",
    "world",
    "validation",
    "corpus",
)
BELOW = ("envcraft.core", "envcraft.sandbox", "envcraft.executor")


def imported(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every absolute import in ``path`` (``from envcraft.x import y`` gives
    ``envcraft.x.y`` too, so that ``from envcraft.tasks import play`` counts as ``play``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["envcraft", "tasks"] or len(parts) < 3 or parts[2] not in ORDER:
        return None
    return ORDER.index(parts[2])


def test_every_module_lives_in_a_layer() -> None:
    loose = [p.name for p in ROOT.glob("*.py") if p.name != "__init__.py"]
    assert loose == [], f"modules outside the sub-packages: {loose}"
    subs = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file())
    assert subs == sorted(ORDER)


def test_imports_run_one_way() -> None:
    wrong: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if len(rel.parts) < 2:
            continue
        own = ORDER.index(rel.parts[0])
        for line, module in imported(path):
            if not module.startswith("envcraft"):
                continue
            layer = layer_of(module)
            if layer is not None and layer > own:
                wrong.append(f"{rel}:{line} imports {module} ({ORDER[layer]} is above {ORDER[own]})")
            elif (
                layer is None
                and module != "envcraft.tasks"
                and not module.startswith(("envcraft.tasks", *BELOW))
            ):
                wrong.append(f"{rel}:{line} imports {module} (above the data engine)")
    assert wrong == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The AST reader finds the import forms the check relies on (deferred, from-package)."""
    module = tmp_path / "m.py"
    text = "def f():\n    from envcraft.tasks import corpus\n    import envcraft.rollout.loop\n"
    module.write_text(text, encoding="utf-8")
    found = [m for _, m in imported(module)]
    assert "envcraft.tasks.corpus" in found and "envcraft.rollout.loop" in found
    assert layer_of("envcraft.tasks.corpus") == len(ORDER) - 1
