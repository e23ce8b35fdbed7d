"""A Claw environment with no domain tools: the workspace and the system tools, nothing else."""

from __future__ import annotations

from envcraft.core import StateModel
from envcraft.sandbox import ClawEnvironment


class WorkspaceState(StateModel):
    """No domain state: everything a task holds is in its workspace files."""


class ClawWorkspace(ClawEnvironment):
    """A bare workspace.

    The task's files are in the workspace; the system tools read, write and edit them and
    run shell commands there (no network).
    """

    State = WorkspaceState
    state: WorkspaceState
