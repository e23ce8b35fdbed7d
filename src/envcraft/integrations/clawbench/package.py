"""Write the bare workspace package into an import's output directory and load it."""

from __future__ import annotations

import shutil
from pathlib import Path

from envcraft.core.package import EnvPackage, load_package

ENV_ID = "claw_workspace"
_TEMPLATE = Path(__file__).resolve().parent / "workspace_env"


def write_workspace_package(out: Path) -> EnvPackage:
    """``OUT/envs/claw_workspace/`` (overwritten), loaded fresh."""
    target = out / "envs" / ENV_ID
    target.mkdir(parents=True, exist_ok=True)
    for name in ("envcraft.toml", "env.py"):
        shutil.copyfile(_TEMPLATE / name, target / name)
    return load_package(target, fresh=True)
