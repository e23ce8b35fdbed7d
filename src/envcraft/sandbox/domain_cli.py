"""``envcraft-tool``: call the bound session's domain tools from a shell.

Usage::

    envcraft-tool list                          # the domain tools with their parameters
    envcraft-tool TOOL --help                   # one tool's description and parameters
    envcraft-tool TOOL '{"key": "value"}'       # arguments as one JSON object
    envcraft-tool TOOL --key value --flag       # or as options (typed by the tool's schema)

``ENVCRAFT_SESSION`` names the binding: the Unix socket that the ``shell`` tool serves
for the duration of one command (``/run/envcraft/session.sock`` inside the sandbox). The
result is printed as JSON; the exit status is 0 on success, 1 on a structured error and
2 on a usage error.

This file must stay standard-library only: inside the sandbox it is run by the system
``python3``, where envcraft itself is not importable, and it starts on every call an agent's
command makes. So the client imports only ``os``, ``sys`` and the C module ``_socket``: it
sends its raw command line (``\\0`` then the arguments, NUL-separated) and prints the reply the
server rendered (``<exit status>\\n<text>``). ``json`` alone would double its start-up;
the host parses the arguments with :func:`parse_request` and the strict JSON reader. Only
when no session is bound does the client parse the command line itself, so a usage error
still exits 2 there. The two messages below are copies of ``envcraft.core.errors`` (a test
keeps them equal).
"""

from __future__ import annotations

import os
import sys

BINDING_ENV = "ENVCRAFT_SESSION"
MAX_REPLY_BYTES = 64 * 1024 * 1024
TIMEOUT_SECONDS = 600.0
ARGV_MARK = b"\0"  # a request that is a command line, not a JSON object

MISSING_BINDING_MESSAGE = (
    "No environment session is bound to this shell (ENVCRAFT_SESSION is not set). "
    "The trainer must initialize the rollout session before tools can be called."
)
SESSION_NOT_FOUND_MESSAGE = (
    "The session does not exist. It may have expired or been reset; start a new rollout."
)

USAGE = """usage: envcraft-tool list
       envcraft-tool TOOL --help
       envcraft-tool TOOL ['{"json": "arguments"}']
       envcraft-tool TOOL [--name value ...]"""


class UsageError(Exception):
    """The command line does not form a request."""


def parse_request(argv: list[str], loads: object = None) -> dict[str, object]:
    """Turn the command line into one request for the session's domain-tool server.

    ``loads`` parses a JSON argument (the host passes its strict reader; any ``ValueError``
    it raises is a usage error); by default the standard library's.
    """
    if not argv or argv[0] in ("-h", "--help", "help"):
        raise UsageError(USAGE)
    name, rest = argv[0], argv[1:]
    if name == "list":
        if rest:
            raise UsageError("'list' takes no arguments")
        return {"op": "list"}
    if name.startswith("-"):
        raise UsageError(f"expected a tool name, got {name!r}")
    if rest in (["--help"], ["-h"]):  # one tool's description and parameters, as 'list' shows them
        return {"op": "list", "tool": name}
    if len(rest) == 1 and rest[0].lstrip().startswith("{"):
        if not callable(loads):
            import json

            loads = json.loads
        try:
            args = loads(rest[0])
        except ValueError as exc:
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


def send(binding: str, argv: list[str], timeout: float = TIMEOUT_SECONDS) -> tuple[int, str]:
    """The command line to the session's server; its rendered reply as (exit status, text)."""
    import _socket

    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(binding)
        conn.sendall(ARGV_MARK + b"\0".join(arg.encode("utf-8", "surrogateescape") for arg in argv))
        conn.shutdown(_socket.SHUT_WR)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_REPLY_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        conn.close()
    status, newline, text = b"".join(chunks).partition(b"\n")
    if not newline or status not in (b"0", b"1", b"2"):
        raise ValueError("the session sent an unreadable reply")
    return int(status), text.decode("utf-8", "replace")


def error_text(category: str, message: str) -> str:
    """A structured error as ``json.dumps(..., indent=2)`` prints it, for messages that need no escaping."""
    return f'{{\n  "error": {{\n    "category": "{category}",\n    "message": "{message}"\n  }}\n}}'


def main(argv: list[str] | None = None) -> int:
    """Console entry point; prints the result as JSON and returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, file=sys.stderr)
        return 2
    binding = os.environ.get(BINDING_ENV, "")
    if not binding:
        try:
            parse_request(args)
        except UsageError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        status, text = 1, error_text("missing_binding", MISSING_BINDING_MESSAGE)
    else:
        try:
            status, text = send(binding, args)
        except OSError:
            status, text = 1, error_text("session_not_found", SESSION_NOT_FOUND_MESSAGE)
        except ValueError:
            status, text = 1, error_text("internal_error", "the session sent an unreadable reply")
    print(text, file=sys.stderr if status == 2 else sys.stdout)
    return status


if __name__ == "__main__":
    sys.exit(main())
