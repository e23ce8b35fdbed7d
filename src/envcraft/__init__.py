"""envcraft: executable, isolated, verifiable RL environments for tool-using LLM agents.

``from envcraft import ...`` is the one import an environment author needs: the base classes,
``@tool`` and the declarations, the state helpers and the clock. The names are imported on first
use (``import envcraft`` alone loads nothing else, so ``envcraft --version`` starts at once).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that owns it
_HOMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "Clock",
            "Entity",
            "EnvPackage",
            "Environment",
            "ErrorCategory",
            "Initial",
            "Job",
            "Repository",
            "Session",
            "StateModel",
            "ToolFailure",
            "dangling",
            "diff",
            "invariant",
            "is_error",
            "load_package",
            "misfiled",
            "state_hash",
            "tool",
        ),
        "envcraft.core",
    ),
    **dict.fromkeys(("DEFAULT_BASE_TIME", "IsoDate", "IsoTime", "iso", "parse_time"), "envcraft.core.clock"),
    "thaw": "envcraft.core.repository",
    "ClawEnvironment": "envcraft.sandbox",
}

__all__ = [
    "DEFAULT_BASE_TIME",
    "ClawEnvironment",
    "Clock",
    "Entity",
    "EnvPackage",
    "Environment",
    "ErrorCategory",
    "Initial",
    "IsoDate",
    "IsoTime",
    "Job",
    "Repository",
    "Session",
    "StateModel",
    "ToolFailure",
    "__version__",
    "dangling",
    "diff",
    "invariant",
    "is_error",
    "iso",
    "load_package",
    "misfiled",
    "parse_time",
    "state_hash",
    "thaw",
    "tool",
]

if TYPE_CHECKING:
    from envcraft.core import (
        Clock,
        Entity,
        Environment,
        EnvPackage,
        ErrorCategory,
        Initial,
        Job,
        Repository,
        Session,
        StateModel,
        ToolFailure,
        dangling,
        diff,
        invariant,
        is_error,
        load_package,
        misfiled,
        state_hash,
        tool,
    )
    from envcraft.core.clock import DEFAULT_BASE_TIME, IsoDate, IsoTime, iso, parse_time
    from envcraft.core.repository import thaw
    from envcraft.sandbox import ClawEnvironment


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'envcraft' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value
