"""envcraft: executable, isolated, verifiable RL environments for tool-using LLM agents."""

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
