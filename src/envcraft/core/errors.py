"""Structured tool errors: the only way a failure reaches an agent.

Tools never raise at the agent. A failure is a result dict with a top-level ``"error"``
object whose ``category`` comes from :class:`ErrorCategory` (paper Table 16 plus a few
general ones), a human-readable ``message`` and any structured details.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCategory(StrEnum):
    """Every failure an agent can see. The first six are the paper's Table 16."""

    MISSING_BINDING = "missing_binding"
    SESSION_NOT_FOUND = "session_not_found"
    LOCK_TIMEOUT = "lock_timeout"
    PERMISSION_DENIED = "permission_denied"
    INVALID_TRANSITION = "invalid_transition"
    MISSING_FIELD = "missing_field"
    NOT_FOUND = "not_found"
    INVALID_ARGUMENT = "invalid_argument"
    CONFLICT = "conflict"
    INTERNAL_ERROR = "internal_error"


class ToolFailure(Exception):
    """Raised inside tool code (via ``Environment.fail``); dispatch turns it into a result.

    It never crosses the dispatch boundary, so agents and trainers only ever see dicts.
    """

    def __init__(self, category: ErrorCategory | str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.category = ErrorCategory(category)
        self.message = message
        self.details = details

    def to_result(self) -> dict[str, Any]:
        return error_result(self.category, self.message, **self.details)


def error_result(category: ErrorCategory | str, message: str, **details: Any) -> dict[str, Any]:
    """Build the canonical error result ``{"error": {"category", "message", ...details}}``."""
    body: dict[str, Any] = {"category": str(ErrorCategory(category)), "message": message}
    for key, value in details.items():
        if key not in body:
            body[key] = value
    return {"error": body}


def is_error(result: Any) -> bool:
    """True when ``result`` is a structured error result."""
    return isinstance(result, dict) and isinstance(result.get("error"), dict)


# Canonical agent-safe messages for the infrastructure categories of Table 16.
MISSING_BINDING_MESSAGE = (
    "No environment session is bound to this shell (ENVCRAFT_SESSION is not set). "
    "The trainer must initialize the rollout session before tools can be called."
)
SESSION_NOT_FOUND_MESSAGE = (
    "The session does not exist. It may have expired or been reset; start a new rollout."
)
LOCK_TIMEOUT_MESSAGE = "The session is busy with another call. Retry this call in a moment."
INTERNAL_ERROR_MESSAGE = "The tool failed unexpectedly. No state was changed; try a different approach."
