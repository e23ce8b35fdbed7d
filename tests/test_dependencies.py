"""A plain ``pip install envcraft`` runs everything outside the optional adapters: every
third-party module a module imports at load time is a declared core dependency (``pyyaml`` was
only there through an extra, so the CLI of a core install crashed on ``import yaml``)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent
# adapters behind extras: each is imported only by the command or loader that needs it
OPTIONAL = ("integrations/mcp/", "integrations/verifiers.py", "integrations/openenv.py", "integrations/verl/")


def _load_time_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "envcraft"}


def test_every_load_time_import_outside_the_adapters_is_a_core_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {re.split(r"[<>=!~;\[ ]", d)[0].lower().replace("_", "-") for d in project["dependencies"]}
    providers = importlib.metadata.packages_distributions()
    undeclared = {}
    for path in sorted((ROOT / "src" / "envcraft").rglob("*.py")):
        rel = path.relative_to(ROOT / "src" / "envcraft").as_posix()
        if rel.startswith(OPTIONAL):
            continue
        for module in _load_time_imports(path):
            dists = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
            if not dists & declared:
                undeclared[module] = rel
    assert undeclared == {}
