"""A session's workspace directory: confined paths and transactional writes.

Every path an agent or a tool names is relative to the workspace root; absolute paths,
``..`` components and symlinks that resolve outside the root are refused with a
structured ``permission_denied`` error. Writes made by domain tools are staged and only
reach the disk when the call succeeds, so a failed call leaves the workspace untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from envcraft.core.errors import ErrorCategory, ToolFailure

_DELETED = object()
MAX_TEXT_BYTES = 4 * 1024 * 1024
# Linux's limits (PATH_MAX, NAME_MAX), checked before the OS is asked: a longer path is the
# agent's bad argument, not an OSError the tool did not expect.
MAX_PATH_BYTES = 4095
MAX_NAME_BYTES = 255
MAX_PATH_PARTS = 256  # deeper trees overflow the recursion of pathlib's mkdir and rglob


def atomic_write_bytes(path: Path, data: bytes, fsync: bool = False) -> None:
    """Write via a temp file in the same directory and ``os.replace`` it into place.

    The temp file is created with the mode a plain ``open()`` would give (the umask applies;
    ``mkstemp`` would make it 0600), so exported task sets and workspace files stay readable by
    the other users of a machine.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        # The name is cut so that the temporary name of a 255-byte file name is still legal.
        tmp = os.path.join(path.parent, f".{path.name[:40]}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name next to {path}")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class Workspace:
    """Confined view of one session's workspace directory."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._staged: dict[str, bytes | object] = {}

    # -- confinement -----------------------------------------------------------------
    def resolve(self, path: str) -> Path:
        """Map an agent-supplied relative path to a real path inside the workspace."""
        rel = self.normalize(path)
        if rel == ".":
            return self.root
        target = self.root / rel
        size = len(os.fsencode(target))
        if size > MAX_PATH_BYTES:  # with the workspace's own location in front of it
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT,
                f"path is too long ({size - len(os.fsencode(self.root)) - 1} bytes; "
                f"at most {MAX_PATH_BYTES - len(os.fsencode(self.root)) - 1} in this workspace)",
                path=path[:80] + "…",
            )
        if self._linked(rel):  # only a symbolic link below the root can lead out of it
            real = Path(os.path.realpath(target))
            if real != self.root and self.root not in real.parents:
                raise ToolFailure(
                    ErrorCategory.PERMISSION_DENIED,
                    f"path '{path}' leaves the workspace (through a symbolic link); access denied",
                    path=path,
                )
        return target

    def _linked(self, rel: str) -> bool:
        """Whether a component of ``rel`` (normalized, below the resolved root) is a symbolic
        link; a component that does not exist ends the walk (nothing below it exists)."""
        current = str(self.root)
        for part in rel.split("/"):
            current = f"{current}/{part}"
            try:
                mode = os.lstat(current).st_mode
            except OSError:
                return False
            if stat.S_ISLNK(mode):
                return True
        return False

    @staticmethod
    def normalize(path: str) -> str:
        """Validate and normalize a relative POSIX path; ``"."`` is the root."""
        if not isinstance(path, str) or "\x00" in path:
            raise ToolFailure(ErrorCategory.INVALID_ARGUMENT, "path must be a string", path=path)
        try:
            size = len(path.encode("utf-8"))
        except UnicodeEncodeError:
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT, "path is not valid Unicode text (a lone surrogate)"
            ) from None
        if size > MAX_PATH_BYTES:  # the OS would refuse it (ENAMETOOLONG): say so, briefly
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT,
                f"path is too long ({size} bytes; at most {MAX_PATH_BYTES})",
                path=path[:80] + "…",
            )
        pure = PurePosixPath(path.strip() or ".")
        if len(pure.parts) > MAX_PATH_PARTS:
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT,
                f"path is nested too deeply ({len(pure.parts)} levels; at most {MAX_PATH_PARTS})",
                path=path[:80] + "…",
            )
        long = next((part for part in pure.parts if len(part.encode("utf-8")) > MAX_NAME_BYTES), None)
        if long is not None:
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT,
                f"a file name in the path is too long ({len(long.encode('utf-8'))} bytes; "
                f"at most {MAX_NAME_BYTES})",
                path=path[:80] + ("…" if len(path) > 80 else ""),
            )
        if pure.is_absolute() or path.startswith("~"):
            raise ToolFailure(
                ErrorCategory.PERMISSION_DENIED,
                f"path '{path}' is absolute; use a path relative to the workspace",
                path=path,
            )
        if ".." in pure.parts:
            raise ToolFailure(
                ErrorCategory.PERMISSION_DENIED,
                f"path '{path}' contains '..'; paths must stay inside the workspace",
                path=path,
            )
        return pure.as_posix()

    # -- reads (see staged writes first) ------------------------------------------------
    def exists(self, path: str) -> bool:
        rel = self.normalize(path)
        if rel in self._staged:
            return self._staged[rel] is not _DELETED
        return self.resolve(rel).exists()

    def read_bytes(self, path: str) -> bytes:
        rel = self.normalize(path)
        staged = self._staged.get(rel)
        if staged is _DELETED:
            raise ToolFailure(ErrorCategory.NOT_FOUND, f"file '{path}' does not exist", path=path)
        if isinstance(staged, bytes):
            return staged
        target = self.resolve(rel)
        if not target.is_file():
            kind = "is a directory" if target.is_dir() else "does not exist"
            raise ToolFailure(ErrorCategory.NOT_FOUND, f"file '{path}' {kind}", path=path)
        if target.stat().st_size > MAX_TEXT_BYTES:
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT, f"file '{path}' is too large to read", path=path
            )
        return target.read_bytes()

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(
                ErrorCategory.INVALID_ARGUMENT, f"file '{path}' is not UTF-8 text", path=path
            ) from None

    def list(self, path: str = ".", recursive: bool = True) -> list[str]:
        """Relative paths of files under ``path`` (staged changes included), sorted."""
        rel = self.normalize(path)
        base = self.resolve(rel)
        found: set[str] = set()
        if base.is_dir():
            walker = base.rglob("*") if recursive else base.iterdir()
            for entry in walker:
                if entry.is_file() or entry.is_symlink():
                    found.add(entry.relative_to(self.root).as_posix())
        elif rel not in self._staged:
            if base.exists():
                return [rel]
            raise ToolFailure(ErrorCategory.NOT_FOUND, f"directory '{path}' does not exist")
        prefix = "" if rel == "." else rel.rstrip("/") + "/"
        for name, staged in self._staged.items():
            if not name.startswith(prefix):
                continue
            if not recursive and "/" in name[len(prefix) :]:
                continue
            if staged is _DELETED:
                found.discard(name)
            else:
                found.add(name)
        return sorted(found)

    # -- staged writes --------------------------------------------------------------------
    def write_text(self, path: str, content: str) -> None:
        self.write_bytes(path, content.encode("utf-8"))

    def write_bytes(self, path: str, content: bytes) -> None:
        rel = self.normalize(path)
        if rel == ".":
            raise ToolFailure(ErrorCategory.INVALID_ARGUMENT, "cannot write to the workspace root")
        target = self.resolve(rel)
        if target.is_dir():
            raise ToolFailure(ErrorCategory.CONFLICT, f"'{path}' is a directory", path=path)
        self.resolve(PurePosixPath(rel).parent.as_posix())
        self._staged[rel] = content

    def delete(self, path: str) -> None:
        if not self.exists(path):
            raise ToolFailure(ErrorCategory.NOT_FOUND, f"file '{path}' does not exist", path=path)
        self._staged[self.normalize(path)] = _DELETED

    @property
    def dirty(self) -> bool:
        return bool(self._staged)

    def commit(self) -> None:
        """Apply staged writes atomically, file by file."""
        staged, self._staged = self._staged, {}
        for rel, content in staged.items():
            target = self.resolve(rel)
            if content is _DELETED:
                target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            self.resolve(rel)  # the created parents must still be inside
            assert isinstance(content, bytes)
            atomic_write_bytes(target, content)

    def rollback(self) -> None:
        self._staged.clear()

    # -- snapshots ------------------------------------------------------------------------
    def snapshot(self) -> dict[str, str]:
        """Every committed file as text (non-UTF-8 files as ``<binary sha256:...>``), sorted by
        path, as its owner can use it.

        A symbolic link is not followed, but is there as ``<symlink to TARGET>``: one an agent
        made is a change to the workspace (round 52, R3: ``ln -s`` passed "no other workspace
        file created"). Modes are read from the owner's bits, never by trying (root reads
        anything): a file its owner may not read is ``<unreadable file (mode 0o0)>`` and a
        directory ``DIR/`` = ``<unreadable directory (mode ...)>`` with nothing under it; a file
        its owner may not write keeps its text and a last line ``<read-only (mode 0o444)>``
        (round 52, R4: ``chmod 000`` of a config file passed "no other file changed")."""
        found: list[tuple[str, str, str, int]] = []  # (path, full path, kind, mode)
        pending = [("", str(self.root))]
        while pending:
            prefix, directory = pending.pop()
            try:
                entries = list(os.scandir(directory))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_symlink():
                    found.append((rel, entry.path, "link", 0))
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode  # one stat a path, kept by the entry
                if entry.is_dir(follow_symlinks=False):
                    if _owner_may(mode, stat.S_IRUSR | stat.S_IXUSR):
                        pending.append((rel + "/", entry.path))
                    else:
                        found.append((rel + "/", entry.path, "closed", mode))
                elif entry.is_file(follow_symlinks=False):
                    found.append((rel, entry.path, "file", mode))
        return {
            rel: _snapshot_entry(full, kind, mode)
            for rel, full, kind, mode in sorted(found, key=lambda item: item[0].split("/"))  # pathlib's order
        }

    def populate(self, files: dict[str, str]) -> None:
        """Write an initial set of files (used when a session is created)."""
        for rel, content in files.items():
            self.write_text(rel, content)
        self.commit()


def _owner_may(mode: int, bits: int) -> bool:
    return mode & bits == bits


def _snapshot_entry(full: str, kind: str, mode: int) -> str:
    """One path of :meth:`Workspace.snapshot` (see there for the forms); ``mode`` its ``st_mode``."""
    if kind == "link":
        return f"<symlink to {os.readlink(full)}>"
    shown = oct(stat.S_IMODE(mode))
    if kind == "closed":
        return f"<unreadable directory (mode {shown})>"
    if not _owner_may(mode, stat.S_IRUSR):
        return f"<unreadable file (mode {shown})>"
    with open(full, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = f"<binary sha256:{hashlib.sha256(data).hexdigest()}>"
    if not _owner_may(mode, stat.S_IWUSR):
        separator = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{separator}<read-only (mode {shown})>"
    return text
