"""Tool profiles: the Claw system tools under the names and shapes another harness uses.

``openclaw`` (OpenClaw's ``read``/``write``/``edit``/``exec``/``process``; the default for
new rollouts and exports), ``claude-code`` (``Bash``/``Read``/``Write``/``Edit``, as
Claw-Eval uses them) and ``envcraft`` (the canonical ``shell``/``read_file``/
``write_file``/``edit_file``/``list_files``). One session answers all three; what is
stored is always the canonical call (see :mod:`envcraft.sandbox.profiles.base`).
"""

from __future__ import annotations

import shlex
from typing import Any

from envcraft.sandbox.profiles.base import (
    WORKSPACE_MOUNT,
    Canonical,
    Profile,
    ProfileTool,
    result_text,
    workspace_path,
)
from envcraft.sandbox.profiles.claude_code import CLAUDE_CODE
from envcraft.sandbox.profiles.openclaw import OPENCLAW

ENVCRAFT = Profile("envcraft")
PROFILES: dict[str, Profile] = {p.name: p for p in (OPENCLAW, CLAUDE_CODE, ENVCRAFT)}
DEFAULT_PROFILE = "openclaw"  # for new rollouts and exports
CANONICAL_PROFILE = "envcraft"  # what Episode.open uses unless told (backward compatible)


def get_profile(name: str | Profile) -> Profile:
    """The profile called ``name``; ``ValueError`` naming the known ones otherwise."""
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(PROFILES))
        raise ValueError(f"unknown tool profile {name!r}; the profiles are: {known}") from None


SYSTEM_TOOLS = frozenset({"shell", "read_file", "write_file", "edit_file", "list_files"})


def profile_call(profile: str | Profile, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """How an agent of ``profile`` makes the canonical system call ``tool(args)``.

    The inverse of the profiles' translation, for scripted policies (an oracle that plays a
    task's reference under the ``openclaw`` profile, say). Canonical ``list_files`` has no
    counterpart in OpenClaw or Claude Code; it becomes a read-only ``find`` through the shell,
    which stores a ``shell`` call instead: a list changes nothing a verifier may read. Any
    other tool (a domain tool) is returned unchanged.
    """
    chosen = get_profile(profile)
    if chosen.canonical or tool not in SYSTEM_TOOLS:
        return tool, dict(args)
    absolute = WORKSPACE_MOUNT + "/"
    path = args.get("path", ".")
    if chosen.name == "openclaw":
        if tool == "read_file":
            return "read", {"path": path}
        if tool == "write_file":
            return "write", {"path": path, "content": args["content"]}
        if tool == "edit_file" and not args.get("replace_all"):
            return "edit", {"path": path, "edits": [{"oldText": args["old"], "newText": args["new"]}]}
        shell = "exec"
    else:
        if tool == "read_file":
            return "Read", {"file_path": absolute + path}
        if tool == "write_file":
            return "Write", {"file_path": absolute + path, "content": args["content"]}
        if tool == "edit_file":
            edit = {"file_path": absolute + path, "old_string": args["old"], "new_string": args["new"]}
            return "Edit", {**edit, **({"replace_all": True} if args.get("replace_all") else {})}
        shell = "Bash"
    if tool == "shell":
        return shell, {"command": args["command"]}
    if tool == "list_files":
        depth = "" if args.get("recursive", True) else " -maxdepth 1"
        return shell, {"command": f"find {shlex.quote(path)}{depth} -type f | sort"}
    raise ValueError(f"{chosen.name} has no way to make {tool}({args})")  # edit_file replace_all on openclaw


__all__ = [
    "CANONICAL_PROFILE",
    "DEFAULT_PROFILE",
    "PROFILES",
    "SYSTEM_TOOLS",
    "WORKSPACE_MOUNT",
    "Canonical",
    "Profile",
    "ProfileTool",
    "get_profile",
    "profile_call",
    "result_text",
    "workspace_path",
]
