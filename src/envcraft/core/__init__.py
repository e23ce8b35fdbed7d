"""What an environment is, and the one runtime every environment runs on."""

from envcraft.core.clock import Clock
from envcraft.core.environment import Environment, Initial, StateModel, dangling, misfiled
from envcraft.core.errors import ErrorCategory, ToolFailure, error_result, is_error
from envcraft.core.invariants import invariant
from envcraft.core.package import EnvPackage, PackageError, builtin_ids, load_package
from envcraft.core.phrasing import Entity, Job
from envcraft.core.repository import Repository
from envcraft.core.session import Session, SessionError
from envcraft.core.state import canonical_json, diff, state_hash
from envcraft.core.tool import ToolSpec, tool
from envcraft.core.workspace import Workspace

__all__ = [
    "Clock",
    "Entity",
    "EnvPackage",
    "Environment",
    "ErrorCategory",
    "Initial",
    "Job",
    "PackageError",
    "Repository",
    "Session",
    "SessionError",
    "StateModel",
    "ToolFailure",
    "ToolSpec",
    "Workspace",
    "builtin_ids",
    "canonical_json",
    "dangling",
    "diff",
    "error_result",
    "invariant",
    "is_error",
    "load_package",
    "misfiled",
    "state_hash",
    "tool",
]
