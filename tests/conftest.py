"""Shared fixtures: the counter test package and a factory for throwaway packages on disk."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
COUNTER = FIXTURES / "counter"


@pytest.fixture
def counter_pkg() -> Path:
    """The counter environment package (named counters; ``explode`` mutates then raises)."""
    return COUNTER


@pytest.fixture
def make_env(tmp_path: Path) -> Callable[..., Path]:
    """Write an environment package (``env.py`` source + manifest) and return its directory.

    Real files through the real loader, so sessions created from it can also be reopened
    by other processes.
    """

    def make(source: str, env_id: str = "probe", kind: str = "tool", manifest: str = "") -> Path:
        root = tmp_path / f"pkg_{env_id}"
        root.mkdir()
        (root / "env.py").write_text(textwrap.dedent(source), encoding="utf-8")
        head = f'id = "{env_id}"\ntitle = "{env_id} (test)"\nkind = "{kind}"\n'
        (root / "envcraft.toml").write_text(head + textwrap.dedent(manifest), encoding="utf-8")
        return root

    return make
