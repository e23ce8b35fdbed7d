"""``envcraft-tool``: call the bound session's domain tools from a shell.

Usage::

    envcraft-tool list                          # the domain tools with their parameters
    envcraft-tool TOOL '{"key": "value"}'       # arguments as one JSON object
    envcraft-tool TOOL --key value --flag       # or as options (typed by the tool's schema)

``ENVCRAFT_SESSION`` names the binding: the Unix socket that the ``shell`` tool serves
for the duration of one command (``/run/envcraft/session.sock`` inside the sandbox). The
result is printed as JSON; the exit status is 0 on success, 1 on a structured error and
2 on a usage error.

This file must stay standard-library only: inside the sandbox it is run by the system
``python3``, where envcraft itself is not importable, and it starts on every call an agent's
command makes, so it imports only what it needs (not even ``typing``). The two messages
below are copies of ``envcraft.core.errors`` (a test keeps them equal).
"""

from __future__ import annotations

import json
import os
import socket
import sys

BINDING_ENV = "ENVCRAFT_SESSION"
MAX_REPLY_BYTES = 64 * 1024 * 1024
TIMEOUT_SECONDS = 600.0

MISSING_BINDING_MESSAGE = (
    "No environment session is bound to this shell (ENVCRAFT_SESSION is not set). "
    "The trainer must initialize the rollout session before tools can be called."
)
SESSION_NOT_FOUND_MESSAGE = (
    "The session does not exist. It may have expired or been reset; start a new rollout."
)

USAGE = """usage: envcraft-tool list
       envcraft-tool TOOL ['{"json": "arguments"}']
       envcraft-tool TOOL [--name value ...]"""


class UsageError(Exception):
    """The command line does not form a request."""


def parse_request(argv: list[str]) -> dict[str, object]:
    """Turn the command line into one request for the session's domain-tool server."""
    if not argv or argv[0] in ("-h", "--help", "help"):
        raise UsageError(USAGE)
    name, rest = argv[0], argv[1:]
    if name == "list":
        if rest:
            raise UsageError("'list' takes no arguments")
        return {"op": "list"}
    if name.startswith("-"):
        raise UsageError(f"expected a tool name, got {name!r}")
    if len(rest) == 1 and rest[0].lstrip().startswith("{"):
        try:
            args = json.loads(rest[0])
        except json.JSONDecodeError as exc:
            raise UsageError(f"arguments are not valid JSON: {exc}") from None
        if not isinstance(args, dict):
            raise UsageError("JSON arguments must be an object")
        return {"op": "call", "tool": name, "args": args}
    return {"op": "call", "tool": name, "cli": _options(rest)}


def _options(rest: list[str]) -> dict[str, str]:
    """``--key value``, ``--key=value`` and bare ``--flag`` (meaning true), as strings."""
    options: dict[str, str] = {}
    i = 0
    while i < len(rest):
        token = rest[i]
        if not token.startswith("--") or len(token) == 2:
            raise UsageError(f"unexpected argument {token!r}; use --name value or one JSON object")
        key, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                value = rest[i + 1]
                i += 1
            else:
                value = "true"
        options[key.replace("-", "_")] = value
        i += 1
    return options


def send(binding: str, request: dict[str, object], timeout: float = TIMEOUT_SECONDS) -> dict[str, object]:
    """One request, one JSON reply, over the session's Unix socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(binding)
        conn.sendall(json.dumps(request).encode("utf-8") + b"\n")
        conn.shutdown(socket.SHUT_WR)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_REPLY_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    reply = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(reply, dict):
        raise ValueError("the session sent a reply that is not an object")
    return reply


def _error(category: str, message: str) -> dict[str, object]:
    return {"error": {"category": category, "message": message}}


def main(argv: list[str] | None = None) -> int:
    """Console entry point; prints the result as JSON and returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    try:
        request = parse_request(args)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    binding = os.environ.get(BINDING_ENV, "")
    if not binding:
        reply = _error("missing_binding", MISSING_BINDING_MESSAGE)
    else:
        try:
            reply = send(binding, request)
        except OSError:
            reply = _error("session_not_found", SESSION_NOT_FOUND_MESSAGE)
        except ValueError:
            reply = _error("internal_error", "the session sent an unreadable reply")
    print(json.dumps(reply, indent=2, ensure_ascii=False))
    return 1 if isinstance(reply.get("error"), dict) else 0


if __name__ == "__main__":
    sys.exit(main())
