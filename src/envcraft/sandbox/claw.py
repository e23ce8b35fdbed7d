"""``ClawEnvironment``: an environment whose agent also lives in a workspace.

It adds the built-in system tools (``shell``, ``read_file``, ``write_file``, ``edit_file``,
``list_files``) to the environment's own domain tools. File tools are confined to the
session workspace by :class:`envcraft.core.workspace.Workspace`; ``shell`` runs under
bubblewrap (see :mod:`envcraft.sandbox.shell`). All of them are non-exclusive: they run
outside the session lock, so domain tools called from the shell can take it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from envcraft.core.environment import Environment
from envcraft.core.tool import tool
from envcraft.sandbox.bwrap import SandboxUnavailable
from envcraft.sandbox.limits import Limits
from envcraft.sandbox.shell import run_shell

MAX_READ_CHARS = 200_000
MAX_COMMAND_BYTES = 100_000  # the kernel refuses single arguments over 128 KiB


class ClawEnvironment(Environment):
    """Base class for Claw environments: domain tools plus workspace and shell tools.

    ``sandbox_limits`` caps what one ``shell`` command may use; override it per class.
    """

    sandbox_limits: ClassVar[Limits] = Limits()

    @tool(exclusive=False)
    def shell(self, command: str, timeout: int = 30) -> dict[str, Any]:
        """Run a bash command in the workspace, inside an isolated sandbox.

        The command starts in /workspace (this session's files, writable) with no network,
        a private /tmp and resource limits. The environment's own tools are commands here:
        `envcraft-tool list` shows them, `envcraft-tool TOOL --name value` calls one.

        Args:
            command: The bash command line to run.
            timeout: Seconds before the command is killed (at most the environment's limit,
                120 unless it sets another).

        Returns:
            exit_code, stdout and stderr (each capped; truncated says whether anything was
            cut), timed_out, and sandbox (how the command was isolated).
        """
        if not command.strip():
            self.fail("invalid_argument", "command must not be empty", field="command")
        if len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
            self.fail(
                "invalid_argument",
                f"command is longer than {MAX_COMMAND_BYTES} bytes; write a script file and run that",
                field="command",
            )
        limit = self.sandbox_limits.max_timeout
        if not 1 <= timeout <= limit:
            self.fail("invalid_argument", f"timeout must be between 1 and {limit:g} seconds", field="timeout")
        try:
            return run_shell(self, self.workspace.root, command, float(timeout), self.sandbox_limits)
        except SandboxUnavailable as exc:
            self.fail("permission_denied", str(exc))

    @tool(exclusive=False, read_only=True)
    def read_file(self, path: str, offset: int = 0, limit: int = MAX_READ_CHARS) -> dict[str, Any]:
        """Read a text file from the workspace.

        Args:
            path: File path relative to the workspace root.
            offset: Character offset to start reading at.
            limit: Maximum number of characters to return.

        Returns:
            The file content (possibly truncated), its total length and whether it was truncated.
        """
        if offset < 0 or limit < 1:
            self.fail("invalid_argument", "offset must be >= 0 and limit >= 1", field="offset")
        text = self.workspace.read_text(path)
        chunk = text[offset : offset + min(limit, MAX_READ_CHARS)]
        return {
            "path": path,
            "content": chunk,
            "total_chars": len(text),
            "truncated": offset + len(chunk) < len(text),
        }

    @tool(exclusive=False)
    def write_file(self, path: str, content: str) -> dict[str, Any]:
        """Create or overwrite a text file in the workspace (parent folders are created).

        Args:
            path: File path relative to the workspace root.
            content: The complete new content of the file.

        Returns:
            The path and the number of characters written.
        """
        created = not self.workspace.exists(path)
        self.workspace.write_text(path, content)
        return {"path": path, "chars": len(content), "created": created}

    @tool(exclusive=False)
    def edit_file(self, path: str, old: str, new: str, replace_all: bool = False) -> dict[str, Any]:
        """Replace an exact string in a workspace file.

        Args:
            path: File path relative to the workspace root.
            old: The exact text to find; it must occur exactly once unless replace_all is true.
            new: The replacement text.
            replace_all: Replace every occurrence instead of requiring a unique one.

        Returns:
            The path and the number of replacements made.
        """
        if not old:
            self.fail("invalid_argument", "old must not be empty", field="old")
        text = self.workspace.read_text(path)
        count = text.count(old)
        if count == 0:
            self.fail("not_found", f"the text to replace was not found in '{path}'", path=path)
        if count > 1 and not replace_all:
            self.fail(
                "conflict",
                f"the text to replace occurs {count} times in '{path}'; give more context or set replace_all",
                path=path,
                occurrences=count,
            )
        self.workspace.write_text(path, text.replace(old, new))
        return {"path": path, "replacements": count if replace_all else 1}

    @tool(exclusive=False, read_only=True)
    def list_files(self, path: str = ".", recursive: bool = True) -> dict[str, Any]:
        """List files in the workspace.

        Args:
            path: Folder relative to the workspace root ("." for the root).
            recursive: Include files in sub-folders.

        Returns:
            The sorted relative paths of the files found.
        """
        files = self.workspace.list(path, recursive=recursive)
        return {"path": path, "files": files, "count": len(files)}
