"""The ``openclaw`` profile: OpenClaw's built-in tools ``read``, ``write``, ``edit``, ``exec``, ``process``.

Names, parameters and types follow OpenClaw's own definitions (its ``bash-tools.schemas``
and the pi coding-agent file tools it ships): ``read{path, offset?, limit?}`` reads by
*lines* (1-indexed offset), ``edit{path, edits: [{oldText, newText}]}`` matches every edit
against the original file, ``exec{command, workdir?, env?, yieldMs?, background?, timeout?,
pty?, elevated?, host?, security?, ask?, node?}`` takes its timeout in seconds. OpenClaw has
no list tool: ``ls`` through ``exec`` lists files.

How the calls become canonical (see :mod:`envcraft.sandbox.profiles.base`):

* ``read`` -> ``read_file{path}``; the line window and the continuation notice are cut
  from its content here.
* ``write`` -> ``write_file{path, content}``.
* ``edit`` with one edit -> ``edit_file{path, old, new}``; with several -> the edits are
  checked (each found once, none overlapping) and applied to the current text, then stored
  as one ``write_file{path, content}`` (all or nothing, as OpenClaw applies them).
* ``exec`` -> ``shell{command, timeout}``: ``env`` becomes ``export`` lines and ``workdir``
  a ``cd`` before the command; the timeout is clamped to the environment's limit.
  ``yieldMs``, ``background`` and ``pty`` are accepted and ignored: every command runs to
  completion, which is what OpenClaw does when background processes are unavailable.
  ``elevated`` and a ``host`` other than the sandbox are refused.
* ``process`` reaches no canonical tool (no command outlives its ``exec`` here): ``list``
  answers that nothing runs, every other action that the session does not exist.
"""

from __future__ import annotations

import re
import shlex
from itertools import pairwise
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

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
DEFAULT_EXEC_TIMEOUT = 1800  # OpenClaw's default; clamped to the environment's limit
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _read(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    path = args["path"]
    result = canonical.call("read_file", {"path": workspace_path(path)})
    if (error := passthrough_error(result)) is not None:
        return error
    return window(result["content"], path, args.get("offset"), args.get("limit"))


def window(text: str, path: str, offset: Any, limit: Any) -> dict[str, Any]:
    """OpenClaw's line window: from line ``offset`` (1-indexed), at most ``limit`` lines,
    cut at 2000 lines or 50 KB with a notice saying where to continue."""
    lines = text.split("\n")
    start = max(0, int(offset) - 1) if offset else 0
    if start >= len(lines):
        return error_result(
            ErrorCategory.INVALID_ARGUMENT,
            f"Offset {offset} is beyond end of file ({len(lines)} lines total)",
            field="offset",
        )
    end = min(len(lines), start + int(limit)) if limit else len(lines)
    shown: list[str] = []
    size = 0
    for line in lines[start:end]:
        size += len(line.encode("utf-8")) + 1
        if len(shown) >= MAX_LINES or (size > MAX_BYTES and shown):
            break
        shown.append(line)
    out = "\n".join(shown)
    last = start + len(shown)
    if last < end:
        out += f"\n\n[Showing lines {start + 1}-{last} of {len(lines)}. Use offset={last + 1} to continue.]"
    elif end < len(lines):
        out += f"\n\n[{len(lines) - end} more lines in file. Use offset={end + 1} to continue.]"
    return text_result(out, path=path, first_line=start + 1, last_line=last, total_lines=len(lines))


def _write(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    path, content = args["path"], args["content"]
    result = canonical.call("write_file", {"path": workspace_path(path), "content": content})
    if (error := passthrough_error(result)) is not None:
        return error
    size = len(content.encode("utf-8"))
    return text_result(f"Successfully wrote {size} bytes to {path}", path=path, bytes=size)


def _edit(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    path, edits = args["path"], args["edits"]
    target = workspace_path(path)
    if len(edits) == 1:
        only = edits[0]
        result = canonical.call("edit_file", {"path": target, "old": only["oldText"], "new": only["newText"]})
    else:
        text = canonical.read_text(target)
        content = text if isinstance(text, dict) else apply_edits(text, edits, path)
        if isinstance(content, dict):
            canonical.record_inert("openclaw:edit", args, content)
            return content
        result = canonical.call("write_file", {"path": target, "content": content})
    if (error := passthrough_error(result)) is not None:
        return error
    return text_result(f"Successfully replaced {len(edits)} block(s) in {path}.", path=path, edits=len(edits))


def apply_edits(text: str, edits: list[dict[str, Any]], path: str) -> str | dict[str, Any]:
    """Every edit matched against the original text (unique, non-overlapping), or an error."""
    spans: list[tuple[int, int, str]] = []
    for index, edit in enumerate(edits):
        old = edit["oldText"]
        if not old:
            return error_result(ErrorCategory.INVALID_ARGUMENT, f"edits[{index}].oldText must not be empty")
        count = text.count(old)
        if count == 0:
            return error_result(
                ErrorCategory.NOT_FOUND, f"Could not find edits[{index}].oldText in {path}", path=path
            )
        if count > 1:
            return error_result(
                ErrorCategory.CONFLICT,
                f"Found {count} occurrences of edits[{index}].oldText in {path}; each must be unique",
                path=path,
                occurrences=count,
            )
        at = text.index(old)
        spans.append((at, at + len(old), edit["newText"]))
    spans.sort()
    for (_, end, _), (start, _, _) in pairwise(spans):
        if start < end:
            return error_result(ErrorCategory.CONFLICT, f"edits overlap in {path}; merge them into one edit")
    out, cursor = [], 0
    for start, end, new in spans:
        out += [text[cursor:start], new]
        cursor = end
    return "".join([*out, text[cursor:]])


def _exec(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    refused = None
    if args.get("elevated"):
        refused = "elevated mode is not available: every command runs in the sandbox"
    elif args.get("host") not in (None, "auto", "sandbox"):
        refused = f"host '{args['host']}' is not available: every command runs in the sandbox"
    bad_env = [name for name in args.get("env") or {} if not _ENV_NAME.match(name)]
    if refused or bad_env:
        category = ErrorCategory.PERMISSION_DENIED if refused else ErrorCategory.INVALID_ARGUMENT
        problem = error_result(category, refused or f"invalid environment variable name '{bad_env[0]}'")
        canonical.record_inert("openclaw:exec", args, problem)
        return problem
    prelude = [f"export {name}={shlex.quote(value)}" for name, value in (args.get("env") or {}).items()]
    if args.get("workdir"):
        prelude.append(f"cd -- {shlex.quote(args['workdir'])} || exit 1")
    command = "\n".join([*prelude, args["command"]])
    timeout = clamp_timeout(args.get("timeout"), canonical.max_timeout, DEFAULT_EXEC_TIMEOUT)
    result = canonical.call("shell", {"command": command, "timeout": timeout})
    if (error := passthrough_error(result)) is not None:
        return error
    status = "completed" if result["exit_code"] == 0 and not result["timed_out"] else "failed"
    return text_result(
        shell_text(result, timeout),
        status=status,
        exitCode=result["exit_code"],
        timedOut=result["timed_out"],
        truncated=result["truncated"],
        stdout=result["stdout"],
        stderr=result["stderr"],
        cwd=args.get("workdir") or "/workspace",
        sandbox=result["sandbox"],
    )


def _process(args: dict[str, Any], canonical: Canonical) -> dict[str, Any]:
    if args["action"] == "list":
        result = text_result("No running or recent sessions.", sessions=[])
    else:
        session = args.get("sessionId") or ""
        result = error_result(
            ErrorCategory.NOT_FOUND,
            f"No session found for '{session}': exec runs every command to completion here",
            sessionId=session,
        )
    canonical.record_inert("openclaw:process", args, result)
    return result


_STRING = {"type": "string"}
_NUMBER = {"type": "number"}
_BOOLEAN = {"type": "boolean"}


def _desc(base: dict[str, Any], text: str) -> dict[str, Any]:
    return {**base, "description": text}


TOOLS = (
    ProfileTool(
        "read",
        "Read the contents of a file. Text output is truncated to 2000 lines or 50KB (whichever "
        "is hit first); use offset/limit for large files and continue with offset until complete.",
        {
            "type": "object",
            "properties": {
                "path": _desc(_STRING, "Path to the file to read (relative or absolute)"),
                "offset": _desc(_NUMBER, "Line number to start reading from (1-indexed)"),
                "limit": _desc(_NUMBER, "Maximum number of lines to read"),
            },
            "required": ["path"],
        },
        _read,
    ),
    ProfileTool(
        "write",
        "Write content to a file. Creates the file if it does not exist, overwrites it if it "
        "does, and creates parent directories.",
        {
            "type": "object",
            "properties": {
                "path": _desc(_STRING, "Path to the file to write (relative or absolute)"),
                "content": _desc(_STRING, "Content to write to the file"),
            },
            "required": ["path", "content"],
        },
        _write,
    ),
    ProfileTool(
        "edit",
        "Edit a file by replacing exact text. Each edits[].oldText must match the original file "
        "exactly (including whitespace) and be unique in it; edits must not overlap.",
        {
            "type": "object",
            "properties": {
                "path": _desc(_STRING, "Path to the file to edit (relative or absolute)"),
                "edits": {
                    "type": "array",
                    "description": "One or more targeted replacements, each matched against the original "
                    "file, not incrementally.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "oldText": _desc(_STRING, "Exact text for one targeted replacement"),
                            "newText": _desc(_STRING, "Replacement text for this targeted edit"),
                        },
                        "required": ["oldText", "newText"],
                        "additionalProperties": False,
                    },
                    "minItems": 1,
                },
            },
            "required": ["path", "edits"],
            "additionalProperties": False,
        },
        _edit,
    ),
    ProfileTool(
        "exec",
        "Run shell commands in the workspace (a sandbox with no network). The environment's own "
        "tools are commands here: `envcraft-tool list` shows them.",
        {
            "type": "object",
            "properties": {
                "command": _desc(_STRING, "Shell command to execute"),
                "workdir": _desc(_STRING, "Working directory (defaults to cwd)"),
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "yieldMs": _desc(_NUMBER, "Milliseconds to wait before backgrounding (default 10000)"),
                "background": _desc(_BOOLEAN, "Run in background immediately"),
                "timeout": _desc(_NUMBER, "Timeout in seconds (optional, kills process on expiry)"),
                "pty": _desc(_BOOLEAN, "Run in a pseudo-terminal (PTY) when available"),
                "elevated": _desc(_BOOLEAN, "Run on the host with elevated permissions (if allowed)"),
                "host": _desc(_STRING, "Exec host/target (auto|sandbox|gateway|node)."),
                "security": _desc(_STRING, "Exec security mode (deny|allowlist|full)."),
                "ask": _desc(_STRING, "Exec ask mode (off|on-miss|always)."),
                "node": _desc(_STRING, "Node id/name for host=node."),
            },
            "required": ["command"],
        },
        _exec,
    ),
    ProfileTool(
        "process",
        "Manage background exec sessions (list, poll, log, write, kill, ...).",
        {
            "type": "object",
            "properties": {
                "action": _desc(_STRING, "Process action"),
                "sessionId": _desc(_STRING, "Session id for actions other than list"),
                "data": _desc(_STRING, "Data to write for write"),
                "keys": {
                    "type": "array",
                    "items": _STRING,
                    "description": "Key tokens to send for send-keys",
                },
                "hex": {"type": "array", "items": _STRING, "description": "Hex bytes to send for send-keys"},
                "literal": _desc(_STRING, "Literal string for send-keys"),
                "text": _desc(_STRING, "Text to paste for paste"),
                "bracketed": _desc(_BOOLEAN, "Wrap paste in bracketed mode"),
                "eof": _desc(_BOOLEAN, "Close stdin after write"),
                "offset": _desc(_NUMBER, "Log offset"),
                "limit": _desc(_NUMBER, "Log length"),
                "timeout": _desc(_NUMBER, "For poll: wait up to this many milliseconds before returning"),
            },
            "required": ["action"],
        },
        _process,
    ),
)

OPENCLAW = Profile("openclaw", TOOLS, read_tool="read", absolute_paths=True)
