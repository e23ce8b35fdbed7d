"""The ``claude-code`` profile: Claude Code's ``Bash``, ``Read``, ``Write`` and ``Edit``.

These are the four tools Claw-Eval gives its agents (``Bash{command}``, ``Read{file_path}``,
``Edit{file_path, old_string, new_string}``, ``Write{file_path, content}``), with Claude
Code's optional parameters: ``Read`` takes a 1-indexed line ``offset`` and a line
``limit`` and answers in ``cat -n`` form; ``Edit`` takes ``replace_all``; ``Bash`` takes
its ``timeout`` in milliseconds, a ``description`` (ignored) and ``run_in_background``
(ignored: every command runs to completion). Paths are absolute as Claude Code wants them,
``/workspace/...``, and relative paths are accepted too.

Canonical calls: ``Read`` -> ``read_file{path}`` (the window is cut here), ``Write`` ->
``write_file``, ``Edit`` -> ``edit_file{path, old, new, replace_all}``, ``Bash`` ->
``shell{command, timeout}``. An ``Edit`` whose two strings are equal reaches no tool.
"""

from __future__ import annotations

from typing import Any

from envcraft.core.errors import ErrorCategory, error_result
from envcraft.sandbox.profiles.base import (
    Canonical,
    Profile,
    ProfileTool,
    clamp_timeout,
    passthrough_error,
    shell_text,
    text_result,
    workspace_path,
)

DEFAULT_LINES = 2000
MAX_LINE_CHARS = 2000
DEFAULT_BASH_TIMEOUT_MS = 120_000


def _read(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    path = args["file_path"]
    result = canonical.call("read_file", {"path": workspace_path(path)})
    if (error := passthrough_error(result)) is not None:
        return error
    lines = result["content"].split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    start = max(0, int(args["offset"]) - 1) if args.get("offset") else 0
    count = int(args["limit"]) if args.get("limit") else DEFAULT_LINES
    shown = lines[start : start + count]
    numbered = "\n".join(f"{start + i + 1:6}\t{line[:MAX_LINE_CHARS]}" for i, line in enumerate(shown))
    return text_result(numbered, file_path=path, first_line=start + 1, total_lines=len(lines))


def _write(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    path = args["file_path"]
    result = canonical.call("write_file", {"path": workspace_path(path), "content": args["content"]})
    if (error := passthrough_error(result)) is not None:
        return error
    verb = "created successfully at" if result.get("created") else "updated successfully at"
    return text_result(f"File {verb}: {path}", file_path=path)


def _edit(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    path = args["file_path"]
    if args["old_string"] == args["new_string"]:
        problem = error_result(
            ErrorCategory.INVALID_ARGUMENT,
            "No changes to make: old_string and new_string are exactly the same.",
        )
        canonical.record_inert("claude-code:Edit", args, problem)
        return problem
    call = {"path": workspace_path(path), "old": args["old_string"], "new": args["new_string"]}
    if args.get("replace_all"):
        call["replace_all"] = True
    result = canonical.call("edit_file", call)
    if (error := passthrough_error(result)) is not None:
        return error
    return text_result(
        f"The file {path} has been updated.", file_path=path, replacements=result["replacements"]
    )


def _bash(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    millis = args.get("timeout")
    seconds = (millis if millis is not None else DEFAULT_BASH_TIMEOUT_MS) / 1000
    timeout = clamp_timeout(seconds, canonical.max_timeout)
    result = canonical.call("shell", {"command": args["command"], "timeout": timeout})
    if (error := passthrough_error(result)) is not None:
        return error
    return text_result(
        shell_text(result, timeout),
        exit_code=result["exit_code"],
        stdout=result["stdout"],
        stderr=result["stderr"],
        timed_out=result["timed_out"],
        truncated=result["truncated"],
        sandbox=result["sandbox"],
    )


def _p(kind: str, text: str) -> dict[str, Any]:
    return {"type": kind, "description": text}


TOOLS = (
    ProfileTool(
        "Bash",
        "Executes a bash command in the workspace (/workspace, a sandbox with no network) and "
        "returns its output. The environment's own tools are commands: `envcraft-tool list`.",
        {
            "type": "object",
            "properties": {
                "command": _p("string", "The command to execute"),
                "timeout": _p("number", "Optional timeout in milliseconds"),
                "description": _p("string", "Clear, concise description of what this command does"),
                "run_in_background": _p("boolean", "Set to true to run this command in the background"),
            },
            "required": ["command"],
        },
        _bash,
    ),
    ProfileTool(
        "Read",
        "Reads a file from the workspace. Results are returned in cat -n format, with line "
        "numbers starting at 1; by default up to 2000 lines from the start of the file.",
        {
            "type": "object",
            "properties": {
                "file_path": _p("string", "The absolute path to the file to read"),
                "offset": _p("number", "The line number to start reading from"),
                "limit": _p("number", "The number of lines to read"),
            },
            "required": ["file_path"],
        },
        _read,
    ),
    ProfileTool(
        "Write",
        "Writes a file to the workspace, overwriting the file if there is one at the path.",
        {
            "type": "object",
            "properties": {
                "file_path": _p("string", "The absolute path to the file to write"),
                "content": _p("string", "The content to write to the file"),
            },
            "required": ["file_path", "content"],
        },
        _write,
    ),
    ProfileTool(
        "Edit",
        "Performs exact string replacements in files. The edit fails if old_string is not unique "
        "in the file, unless replace_all is set.",
        {
            "type": "object",
            "properties": {
                "file_path": _p("string", "The absolute path to the file to modify"),
                "old_string": _p("string", "The text to replace"),
                "new_string": _p("string", "The text to replace it with (must be different from old_string)"),
                "replace_all": _p("boolean", "Replace all occurrences of old_string (default false)"),
            },
            "required": ["file_path", "old_string", "new_string"],
        },
        _edit,
    ),
)

CLAUDE_CODE = Profile("claude-code", TOOLS, read_tool="Read", absolute_paths=True)
