"""The host side of ``envcraft-tool``: a Unix socket served for the length of one shell call.

Each connection carries one request and gets one reply (the protocol is in
:mod:`envcraft.sandbox.domain_cli`): a JSON object line answered with a JSON object, or
``envcraft-tool``'s raw command line, parsed here and answered with the exit status and the
text the client prints, so the client needs no JSON library. Calls go through ``Environment.call_tool``: in a
session that is ``Session.call``, so they are locked, validated, logged in
``actions.jsonl`` and rolled back on error exactly like calls made directly. Only domain
tools are reachable; system tools (``shell``, the file tools) are refused, because the
shell already has the workspace and a nested shell would only add a second sandbox.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from envcraft.core.environment import Environment
from envcraft.core.errors import SESSION_NOT_FOUND_MESSAGE, ErrorCategory, error_result
from envcraft.core.jsonio import JsonInputError
from envcraft.core.jsonio import loads as strict_json
from envcraft.core.tool import ToolSpec
from envcraft.sandbox.domain_cli import ARGV_MARK, UsageError, parse_request

MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_CONNECTIONS = 32


def domain_tools(env: Environment) -> dict[str, ToolSpec]:
    """The tools a shell may call: the environment's own (exclusive) tools."""
    return {name: spec for name, spec in type(env).tools.items() if spec.annotations.exclusive}


class DomainServer:
    """Serve ``env``'s domain tools on ``path`` until the ``with`` block ends.

    Requests are dispatched one at a time; once the block has ended no further call
    reaches the session, so nothing runs after the shell call that served it returns.
    """

    def __init__(self, env: Environment, path: Path, timeout: float) -> None:
        self.env = env
        self.path = path
        self.timeout = timeout
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._dispatch = threading.Lock()
        self._handlers = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="envcraft-domain-server", daemon=True)

    def __enter__(self) -> DomainServer:
        self._listener.bind(str(self.path))
        self._listener.listen(16)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._thread.join()
        with self._dispatch:
            self._closed = True

    # -- serving -----------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            if not self._handlers.acquire(blocking=False):
                return  # too many open connections from the sandbox: drop this one
            try:
                conn.settimeout(self.timeout)
                raw = _read_request(conn)
                if raw.startswith(ARGV_MARK):
                    conn.sendall(self._command_line_reply(raw[len(ARGV_MARK) :]))
                    return
                try:
                    request = strict_json(raw)
                except JsonInputError:  # also bad UTF-8, NaN, nesting too deep
                    request = None
                reply = self._reply(request)
                conn.sendall(json.dumps(reply, ensure_ascii=False, default=str).encode("utf-8"))
            except (OSError, ValueError):
                return
            finally:
                self._handlers.release()

    def _command_line_reply(self, raw: bytes) -> bytes:
        """``envcraft-tool``'s arguments parsed (strict JSON), answered as ``<status>\\n<text>``."""
        try:
            argv = [part.decode("utf-8") for part in raw.split(b"\0")] if raw else []
            request = parse_request(argv, loads=strict_json)
        except UnicodeDecodeError:
            return b"2\narguments are not UTF-8 text"
        except UsageError as exc:
            return f"2\n{exc}".encode()
        reply = self._reply(request)
        status = 1 if isinstance(reply.get("error"), dict) else 0
        text = json.dumps(reply, indent=2, ensure_ascii=False, default=str)
        return f"{status}\n{text}".encode("utf-8", "replace")  # a lone surrogate: shown as '?'

    def _reply(self, request: Any) -> dict[str, Any]:
        with self._dispatch:
            if self._closed:
                return error_result(ErrorCategory.SESSION_NOT_FOUND, SESSION_NOT_FOUND_MESSAGE)
            return self.answer(request)

    # -- requests ----------------------------------------------------------------------
    def answer(self, request: Any) -> dict[str, Any]:
        """The reply to one decoded request; never raises."""
        if not isinstance(request, dict) or request.get("op") not in ("list", "call"):
            return error_result(
                ErrorCategory.INVALID_ARGUMENT, "a request is a JSON object with op 'list' or 'call'"
            )
        tools = domain_tools(self.env)
        name = request.get("tool")
        if request["op"] == "list" and name is None:
            return {"tools": [_described(s) for s in tools.values()]}
        spec = tools.get(name) if isinstance(name, str) else None
        if spec is not None and request["op"] == "list":  # TOOL --help
            return {"tools": [_described(spec)]}
        if spec is None:
            if isinstance(name, str) and name in type(self.env).tools:
                return error_result(
                    ErrorCategory.PERMISSION_DENIED,
                    f"'{name}' is a system tool; do that directly in the shell",
                    tool=name,
                )
            return error_result(
                ErrorCategory.NOT_FOUND,
                f"unknown tool '{name}'; available: {', '.join(sorted(tools))}",
                tool=str(name),
                available=sorted(tools),
            )
        options = request.get("cli")
        args = coerce_options(spec, options) if isinstance(options, dict) else request.get("args")
        return self.env.call_tool(spec.name, args)


def _described(spec: ToolSpec) -> dict[str, Any]:
    """A tool as ``list`` and ``TOOL --help`` show it: its name, description and parameters."""
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def coerce_options(spec: ToolSpec, options: dict[str, Any]) -> dict[str, Any]:
    """Type ``--name value`` strings by the tool's schema (JSON for non-strings).

    Anything that does not parse is passed through unchanged, so validation reports the
    parameter by name with its requirement.
    """
    properties = spec.parameters.get("properties", {})
    typed: dict[str, Any] = {}
    for key, raw in options.items():
        kind = properties.get(key, {}).get("type")
        if kind == "string" or not isinstance(raw, str):
            typed[key] = raw
            continue
        try:
            typed[key] = json.loads(raw)
        except json.JSONDecodeError:
            typed[key] = [part.strip() for part in raw.split(",")] if kind == "array" else raw
    return typed


def _read_request(conn: socket.socket) -> bytes:
    """A JSON request's first line, or a whole command-line request (it may hold newlines)."""
    data = bytearray()
    while b"\n" not in data or data.startswith(ARGV_MARK):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError("request too large")
    if data.startswith(ARGV_MARK):
        return bytes(data)
    return bytes(data.split(b"\n", 1)[0])
