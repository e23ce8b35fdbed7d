"""``envcraft serve-mcp``: a task's (or an environment's) tools as an MCP server, one episode per connection.

Two channels, both real MCP servers (``mcp``'s :class:`MCPServer`):

* the **model channel** lists the tools an agent of the chosen profile sees (the
  Episode's: domain tools with their JSON Schemas, the system tools of the profile) and
  nothing else. A result is the profile's text as ``TextContent`` plus the result dict as
  ``structuredContent``; a structured error (Table 16) is an ``isError`` result whose
  structured content is ``{"error": {"category", "message", ...}}``.
* the **control channel** (``/control`` over HTTP, or ``--control-port`` beside stdio) is
  for the trainer: ``open_episode``, ``end_turn``, ``score``, ``trajectory``, ``state``,
  ``reset``, ``close_episode``, ``episodes``. The model never sees it unless
  ``expose_control`` puts ``envcraft_end_turn``/``envcraft_score``/``envcraft_reset`` (acting on
  the caller's own episode) on the model channel.

**What a connection is.** Over stdio the process serves one client: one episode
(``"local"``). Over streamable HTTP, a client that opens with the initialize handshake
(protocol 2025-11-25, ``mode="legacy"`` in the Python SDK) has an ``Mcp-Session-Id``: one
episode per session id. Protocol 2026-07-28 has no sessions at all; such a client names
its episode with the ``Envcraft-Episode`` header, a handle from the control channel's
``open_episode`` (the MCP way: state addressed by a server-minted handle), and a modern
request without one is refused with ``missing_binding``. Tool schemas stay exactly the
Episode's either way: the handle never becomes a tool argument.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context

from envcraft.core.errors import ErrorCategory, error_result, is_error
from envcraft.integrations.mcp.episodes import EpisodeTable, Source, TableFull, score
from envcraft.sandbox.profiles import result_text
from envcraft.tasks.play.episode import Episode

LOCAL = "local"  # the one connection of a stdio (or in-process) server
EPISODE_HEADER = "envcraft-episode"
SESSION_HEADER = "mcp-session-id"
MODEL_PATH = "/mcp"
CONTROL_PATH = "/control"
CONTROL_TOOLS = ("envcraft_end_turn", "envcraft_score", "envcraft_reset")
SHUTDOWN_SECONDS = 5  # how long a stopping HTTP server waits for open connections


def connection_key(context: Context[Any, Any] | None) -> str | None:
    """The episode a request belongs to (see the module docstring); None when it names none."""
    request = context.request_context.request if context is not None else None
    if request is None:
        return LOCAL
    headers = getattr(request, "headers", {})
    return headers.get(EPISODE_HEADER) or headers.get(SESSION_HEADER)


def to_call_result(result: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result_text(result))],
        structured_content=result,
        is_error=is_error(result),
    )


def end_turn(episode: Episode) -> dict[str, Any]:
    """End the current user turn; once every turn has ended, another end adds no empty turn."""
    message = None if episode.done else episode.end_turn()
    return {"user_message": message, "done": episode.done}


class ModelServer(MCPServer):
    """The model channel: the episode's tools, exactly as the Episode exposes them."""

    def __init__(self, table: EpisodeTable, *, expose_control: bool = False) -> None:
        super().__init__("envcraft", instructions=f"envcraft {table.source.label}")
        self.table = table
        self.expose_control = expose_control
        with table.source.open() as probe:  # every episode of a source shows the same tools
            self._tools = [
                types.Tool(
                    name=t.name,
                    description=t.schema["function"].get("description", ""),
                    input_schema=t.schema["function"]["parameters"],
                )
                for t in probe.tools()
            ]
        if expose_control:
            empty = {"type": "object", "properties": {}}
            self._tools += [
                types.Tool(
                    name="envcraft_end_turn",
                    description="End the user turn; get the next.",
                    input_schema=empty,
                ),
                types.Tool(
                    name="envcraft_score", description="Score the episode so far.", input_schema=empty
                ),
                types.Tool(
                    name="envcraft_reset", description="Start the episode again from S0.", input_schema=empty
                ),
            ]

    async def list_tools(self) -> list[types.Tool]:
        return list(self._tools)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult:
        key = connection_key(context)
        if key is None:
            return to_call_result(
                error_result(
                    ErrorCategory.MISSING_BINDING,
                    "this request names no episode: connect with the initialize handshake (one episode "
                    f"per Mcp-Session-Id) or send the '{EPISODE_HEADER}' header from the control "
                    "channel's open_episode",
                )
            )
        if self.expose_control and name in CONTROL_TOOLS:
            return to_call_result(await anyio.to_thread.run_sync(self._control, name, key))
        try:
            result = await anyio.to_thread.run_sync(
                self.table.run, key, lambda e: self._call(e, name, arguments)
            )
        except TableFull as exc:
            result = error_result(ErrorCategory.CONFLICT, str(exc))
        return to_call_result(result)

    def _call(self, episode: Episode, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A task's play takes no call after its last user turn ended (as every other door)."""
        if self.table.source.task is not None and episode.done:
            return error_result(
                ErrorCategory.INVALID_TRANSITION,
                "every request of the user is done; no more tool calls are taken",
                tool=name,
            )
        return episode.call_exposed(name, arguments)

    def _control(self, name: str, key: str) -> dict[str, Any]:
        if name == "envcraft_reset":
            fresh = self.table.reset(key)
            return {"user_message": fresh.user_message}
        if name == "envcraft_end_turn":
            return self.table.run(key, end_turn)
        return self.table.run(key, lambda e: score(self.table.source, e))


class ControlServer(MCPServer):
    """The trainer's channel: episode lifetime, turns, reward and state, by episode key."""

    def __init__(self, table: EpisodeTable, default_key: str | None = None) -> None:
        super().__init__("envcraft-control", instructions="Control an envcraft MCP server's episodes.")
        self.table = table
        self.default_key = default_key
        for fn in (
            self.open_episode,
            self.episodes,
            self.end_turn,
            self.score,
            self.trajectory,
            self.state,
            self.reset,
            self.close_episode,
        ):
            self.add_tool(fn)

    def _key(self, episode: str) -> str:
        key = episode or self.default_key
        if not key or (key != self.default_key and not self.table.known(key)):
            raise ValueError(
                f"no episode {episode!r}; the episodes are: {', '.join(self.table.keys()) or 'none'}"
            )
        return key

    async def _run(self, episode: str, work: Callable[[Episode], Any]) -> Any:
        return await anyio.to_thread.run_sync(self.table.run, self._key(episode), work)

    async def open_episode(self) -> dict[str, Any]:
        """Open a fresh episode from S0; send its handle as the Envcraft-Episode header."""
        key = await anyio.to_thread.run_sync(self.table.new_key)
        message = await self._run(key, lambda e: e.user_message)
        return {"episode": key, "user_message": message, "header": EPISODE_HEADER}

    async def episodes(self) -> dict[str, Any]:
        """The open episodes (their keys: handles or Mcp-Session-Ids)."""
        return {"episodes": self.table.keys()}

    async def end_turn(self, episode: str = "") -> dict[str, Any]:
        """End the current user turn (snapshot) and return the next user message."""
        return await self._run(episode, end_turn)

    async def score(self, episode: str = "") -> dict[str, Any]:
        """The task's verifier on the episode so far: score and components."""
        return await self._run(episode, lambda e: score(self.table.source, e))

    async def trajectory(self, episode: str = "") -> dict[str, Any]:
        """The canonical calls grouped by user turn, in the format `envcraft tasks score` reads."""
        task_id = self.table.source.task.id if self.table.source.task is not None else "-"
        return await self._run(episode, lambda e: e.trajectory(task_id))

    async def state(self, episode: str = "") -> dict[str, Any]:
        """Every environment's state and the workspace files now."""
        return await self._run(
            episode, lambda e: {"states": {n: s.state() for n, s in e.sessions.items()}, "files": e.files()}
        )

    async def reset(self, episode: str = "") -> dict[str, Any]:
        """Start the episode again from S0 (same key)."""
        fresh = await anyio.to_thread.run_sync(self.table.reset, self._key(episode))
        return {"user_message": fresh.user_message}

    async def close_episode(self, episode: str = "") -> dict[str, Any]:
        """Close an episode and free its sessions."""
        return {"closed": await anyio.to_thread.run_sync(self.table.close, self._key(episode))}


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: the system picks one; the caller reports it).

    It listens before the address is announced, so a client that connects at once waits in
    the backlog instead of being refused while the server starts.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def http_app(servers: dict[str, MCPServer], host: str) -> Any:
    """One Starlette app serving each MCP server at its path, all session managers running."""
    from starlette.applications import Starlette

    apps = {path: s.streamable_http_app(streamable_http_path=path, host=host) for path, s in servers.items()}

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for server in servers.values():
                await stack.enter_async_context(server.session_manager.run())
            yield

    routes = [route for app in apps.values() for route in app.routes]
    return Starlette(routes=routes, lifespan=lifespan)


def http_server(app: Any) -> Any:
    """A uvicorn server for ``app``; stop it with ``should_exit`` (its own shutdown ends the
    lifespan cleanly, where cancelling its task logs a ``CancelledError`` traceback)."""
    import uvicorn

    return uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    )


async def serve_http(app: Any, sock: socket.socket) -> None:
    await http_server(app).serve(sockets=[sock])


def announce(text: str) -> None:
    """One line on stderr (stdout belongs to the stdio transport)."""
    print(f"envcraft serve-mcp: {text}", file=sys.stderr, flush=True)


def serve(
    source: Source,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    control_port: int | None = None,
    expose_control: bool = False,
) -> None:
    """Run the server until it is stopped (stdio: until the client closes stdin)."""
    table = EpisodeTable(source)
    model = ModelServer(table, expose_control=expose_control)
    try:
        if transport == "stdio":
            anyio.run(_serve_stdio, model, table, host, control_port)
        else:
            control = ControlServer(table)
            sock = bind_socket(host, port)
            bound = sock.getsockname()[1]
            announce(
                f"model channel http://{host}:{bound}{MODEL_PATH} control channel http://{host}:{bound}{CONTROL_PATH}"
            )
            anyio.run(serve_http, http_app({MODEL_PATH: model, CONTROL_PATH: control}, host), sock)
    finally:
        table.close_all()


async def _serve_stdio(model: ModelServer, table: EpisodeTable, host: str, control_port: int | None) -> None:
    if control_port is None:
        await model.run_stdio_async()
        return
    sock = bind_socket(host, control_port)
    announce(f"control channel http://{host}:{sock.getsockname()[1]}{CONTROL_PATH}")
    control = http_server(http_app({CONTROL_PATH: ControlServer(table, default_key=LOCAL)}, host))
    async with anyio.create_task_group() as group:
        group.start_soon(functools.partial(control.serve, sockets=[sock]))
        try:
            await model.run_stdio_async()
        finally:  # the client closed stdin: the control channel shuts down with it
            control.should_exit = True
