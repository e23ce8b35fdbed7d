"""envcraft: executable, isolated, verifiable RL environments for tool-using LLM agents."""

from envcraft.core import (
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
