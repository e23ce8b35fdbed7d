"""A profile's tools over one live session: the canonical calls go straight to it."""

from __future__ import annotations

from typing import Any

from envcraft.core.errors import ErrorCategory, ToolFailure, error_result
from envcraft.core.session import Session
from envcraft.core.workspace import Workspace
from envcraft.sandbox.limits import Limits
from envcraft.sandbox.profiles.base import Profile

PROBE_PREFIX = "__envcraft_inert__"  # a failed call that consumes one action index


class SessionCanonical:
    """:class:`~envcraft.sandbox.profiles.base.Canonical` over a Claw session.

    ``record`` (optional) is told of every call as ``(tool, args, result)``; an
    :class:`~envcraft.tasks.play.episode.Episode` uses it to keep its per-turn log.
    """

    def __init__(self, session: Session, record: Any = None) -> None:
        self.session = session
        self._record = record

    @property
    def max_timeout(self) -> float:
        limits: Limits = getattr(self.session.package.env_class, "sandbox_limits", Limits())
        return limits.max_timeout

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = self.session.call(tool, args)
        if self._record is not None:
            self._record(tool, args, result)
        return result

    def read_text(self, path: str) -> str | dict[str, Any]:
        root = self.session.workspace_root
        if root is None:
            return error_result(ErrorCategory.NOT_FOUND, "this environment has no workspace")
        try:
            return Workspace(root).read_text(path)
        except ToolFailure as failure:
            return failure.to_result()

    def record_inert(self, tool: str, args: Any, result: dict[str, Any]) -> None:
        self.session.call(PROBE_PREFIX, {})  # the clock moves as it does when a replay fails it
        if self._record is not None:
            self._record(tool, args, result)


def bind(profile: Profile, session: Session) -> Any:
    """``call(name, args)`` for ``profile``'s system tools on ``session`` (tests, tools)."""
    canonical = SessionCanonical(session)

    def call(name: str, args: Any) -> dict[str, Any]:
        if profile.canonical:
            return session.call(name, args)
        return profile.call(name, args, canonical)

    return call
