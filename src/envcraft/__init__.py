"""envcraft: executable, isolated, verifiable RL environments for tool-using LLM agents.

The public names are imported on first use (``import envcraft`` alone loads nothing else, so
``envcraft --version`` starts at once).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Entity",
    "Environment",
    "ErrorCategory",
    "Initial",
    "Session",
    "StateModel",
    "__version__",
    "diff",
    "load_package",
    "state_hash",
    "tool",
]

if TYPE_CHECKING:
    from envcraft.core import (
        Entity,
        Environment,
        ErrorCategory,
        Initial,
        Session,
        StateModel,
        diff,
        load_package,
        state_hash,
        tool,
    )


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(import_module("envcraft.core"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'envcraft' has no attribute {name!r}")
