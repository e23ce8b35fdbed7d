"""The file tools stay inside the workspace: traversal, absolute paths and symlinks are refused.

Symlinks are made both on the host and by the sandboxed shell itself (inside the sandbox a
link to ``/etc/...`` is harmless, but the host-side file tools must not follow it out).
Every test runs once per tool profile (``agent``): OpenClaw's and Claude Code's tools reach
the same confinement as the canonical ones.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcraft.core import Session

from .conftest import Agent, requires_bwrap

SECRET = "top secret outside the workspace"


def _error(result: dict) -> str | None:
    error = result.get("error")
    return error["category"] if isinstance(error, dict) else None


def _plant_secret(session: Session) -> Path:
    root = session.workspace_root
    assert root is not None
    secret = root.parent / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    return secret


def test_traversal_and_absolute_paths_are_refused(desk: Session, agent: Agent) -> None:
    secret = _plant_secret(desk)
    through_mount = ("/workspace/../secret.txt", "/workspace/notes/../../secret.txt")
    for path in ("../secret.txt", "notes/../../secret.txt", str(secret), "~/secret.txt", *through_mount):
        assert _error(agent.read(path)) == "permission_denied", path
    escapes = ("../escape.txt", "/tmp/escape.txt", "notes/../../escape.txt", "/workspace/../escape.txt")
    for path in escapes:
        result = agent.write(path, "x")
        assert _error(result) == "permission_denied", path
    assert not (secret.parent / "escape.txt").exists()
    listing = agent.list("..")
    if agent.has_list_tool:
        assert _error(listing) == "permission_denied"
    else:  # no list tool: `ls` runs in the sandbox, whose `..` is the sandbox root
        assert "secret.txt" not in str(listing)


def test_host_symlinks_out_of_the_workspace_are_refused(desk: Session, agent: Agent) -> None:
    secret = _plant_secret(desk)
    root = desk.workspace_root
    assert root is not None
    (root / "link.txt").symlink_to(secret)
    (root / "up").symlink_to(root.parent)
    assert _error(agent.read("link.txt")) == "permission_denied"
    assert _error(agent.read("/workspace/up/secret.txt")) == "permission_denied"
    assert _error(agent.write("up/planted.txt", "x")) == "permission_denied"
    assert _error(agent.edit("link.txt", "top", "x")) == "permission_denied"
    assert secret.read_text(encoding="utf-8") == SECRET
    assert not (root.parent / "planted.txt").exists()


@requires_bwrap
def test_symlinks_made_by_the_shell_are_refused_by_the_file_tools(desk: Session, agent: Agent) -> None:
    secret = _plant_secret(desk)
    made = agent.shell(
        f"ln -s {secret} abs.txt && ln -s ../secret.txt rel.txt && ln -s / root && ln -s .. up"
    )
    assert made["exit_code"] == 0, made
    for path in ("abs.txt", "rel.txt", "root/etc/passwd", "up/secret.txt", "/workspace/rel.txt"):
        assert _error(agent.read(path)) == "permission_denied", path
    assert _error(agent.write("up/planted.txt", "x")) == "permission_denied"
    assert _error(agent.write("abs.txt", "x")) == "permission_denied"
    assert _error(agent.edit("rel.txt", "top", "x")) == "permission_denied"
    assert secret.read_text(encoding="utf-8") == SECRET
    # Inside the sandbox the same links lead nowhere outside either.
    inside = agent.shell("cat rel.txt abs.txt; ls up")
    assert SECRET not in inside["stdout"]
    assert "state.json" not in inside["stdout"]


SEGMENTS = st.sampled_from(["..", ".", "notes", "secret.txt", "", "/", "~", "..%2f", "a"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=6), mount=st.booleans())
def test_no_path_reads_the_secret(desk: Session, agent: Agent, parts: list[str], mount: bool) -> None:
    _plant_secret(desk)
    path = "/".join(parts)
    result = agent.read(f"/workspace/{path}" if mount else path)
    assert SECRET not in str(result)
