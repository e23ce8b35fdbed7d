"""A transient pids cgroup per sandbox: the process cap where RLIMIT_NPROC cannot work.

The kernel never applies RLIMIT_NPROC to processes owned by host root, and bubblewrap
maps the sandbox user onto the caller's uid. So when envcraft runs as root, each sandbox
is started inside its own child cgroup with ``pids.max`` (cgroup v1 ``pids`` hierarchy,
or cgroup v2 where the ``pids`` controller is already enabled for children). Without
such a cgroup the process count is not capped; :func:`process_cap` says so once.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import secrets
import threading
import time
from pathlib import Path

log = logging.getLogger("envcraft.sandbox")

_REMOVE_WAIT = 10.0


class PidsCgroup:
    """One child cgroup with ``pids.max``; a sandbox is started into it by :meth:`wrap`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, parent: Path, limit: int) -> PidsCgroup:
        path = parent / f"envcraft-{os.getpid()}-{secrets.token_hex(6)}"
        path.mkdir()
        group = cls(path)
        try:
            (path / "pids.max").write_text(str(limit), encoding="ascii")
        except OSError:
            group.remove()
            raise
        return group

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group, then execs it.

        The shell moves itself (``0``) and, on cgroup v1, as a single thread (``tasks``):
        the kernel then skips the global lock that moving another process takes, which
        costs milliseconds on a busy machine.
        """
        join = self.path / "tasks"
        if not join.exists():
            join = self.path / "cgroup.procs"
        return ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(join), *argv]

    def remove(self) -> None:
        """Remove the group; if its killed processes are still exiting, finish in the background."""
        if not self._try_remove():
            with _pending_lock:
                _pending.add(self)
            threading.Thread(target=self._remove_when_empty, daemon=True).start()

    def _try_remove(self) -> bool:
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    def _remove_when_empty(self, wait: float = _REMOVE_WAIT) -> None:
        deadline = time.monotonic() + wait
        while not self._try_remove():
            if time.monotonic() > deadline:
                log.warning("could not remove cgroup %s (still busy)", self.path)
                return
            time.sleep(0.02)
        with _pending_lock:
            _pending.discard(self)


_pending: set[PidsCgroup] = set()
_pending_lock = threading.Lock()


@atexit.register
def _finish_removals() -> None:
    """Background removals would die with the interpreter; finish them (briefly) first."""
    with _pending_lock:
        left = list(_pending)
    for group in left:
        group._remove_when_empty(wait=1.0)


def process_cap(limit: int) -> PidsCgroup | None:
    """A pids cgroup for one sandbox when running as root, else ``None`` (RLIMIT_NPROC applies)."""
    if os.geteuid() != 0:
        return None
    parent = pids_parent()
    if parent is None:
        _warn_uncapped()
        return None
    try:
        return PidsCgroup.create(parent, limit)
    except OSError as exc:
        log.warning("cannot create a pids cgroup under %s: %s", parent, exc)
        return None


@functools.cache
def _warn_uncapped() -> None:
    log.warning(
        "running as root without a writable pids cgroup: sandboxed process counts are not capped "
        "(only the wall-clock timeout bounds a fork bomb)"
    )


@functools.cache
def pids_parent() -> Path | None:
    """The cgroup under which this process may create pids-limited children, if any."""
    mounts = _cgroup_mounts()
    for line in _read("/proc/self/cgroup").splitlines():
        _, controllers, rel = line.split(":", 2)
        if controllers and "pids" in controllers.split(","):
            candidate = _under(mounts.get("pids"), rel)
        elif not controllers:
            candidate = _under(mounts.get("cgroup2"), rel)
            if candidate is not None and "pids" not in _read(candidate / "cgroup.subtree_control").split():
                candidate = None
        else:
            continue
        if candidate is not None and _can_create_children(candidate):
            _remove_stale(candidate)
            return candidate
    return None


def _remove_stale(parent: Path) -> None:
    """Empty groups left by envcraft processes that died before removing them."""
    for path in parent.glob("envcraft-*-*"):
        owner = path.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()


def _cgroup_mounts() -> dict[str, tuple[str, Path]]:
    """``"pids"`` (v1) and ``"cgroup2"`` mounts as (root inside the hierarchy, mount point)."""
    found: dict[str, tuple[str, Path]] = {}
    for line in _read("/proc/self/mountinfo").splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        fstype, options = fields[sep + 1], fields[sep + 3] if len(fields) > sep + 3 else ""
        if fstype == "cgroup" and "pids" in options.split(","):
            found.setdefault("pids", (fields[3], Path(fields[4])))
        elif fstype == "cgroup2":
            found.setdefault("cgroup2", (fields[3], Path(fields[4])))
    return found


def _under(mount: tuple[str, Path] | None, rel: str) -> Path | None:
    if mount is None:
        return None
    root, point = mount
    if not (rel == root or rel.startswith(root.rstrip("/") + "/")):
        return None
    return point / rel[len(root) :].lstrip("/")


def _can_create_children(path: Path) -> bool:
    try:
        PidsCgroup.create(path, 1).remove()
    except OSError:
        return False
    return True


def _read(path: str | Path) -> str:
    with contextlib.suppress(OSError):
        return Path(path).read_text(encoding="utf-8")
    return ""
