"""A small OpenAI-compatible HTTP server in front of any provider.

``ChatServer(provider).start()`` serves ``POST /v1/chat/completions`` (non-streaming, tool
calls and usage included), ``GET /v1/models`` and ``GET /health`` on a loopback port, so
anything that speaks the protocol (the ``openai`` SDK, vLLM clients, curl) can use a model
envcraft holds in process: the offline SmolLM2 model, the built-in oracle and random
policies, a replay script in tests. Errors are OpenAI error bodies with the matching status;
a provider raises :class:`ServerFault` to answer with any status and headers (a 429 with
``retry-after``, a 503), which is how the tests exercise a client's retries over real HTTP.

With ``api_key`` set, a request must carry ``Authorization: Bearer <key>`` (a wrong key is
refused without echoing it). Request bodies are never logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024 * 1024
_STATUS = {
    "rate_limit": 429,
    "bad_request": 400,
    "auth": 401,
    "timeout": 504,
    "pending": 503,
    "malformed": 502,
    "exhausted": 400,  # a test script ran out: retrying cannot help
}


class ServerFault(Exception):
    """Raised by a served provider to answer with this HTTP status, error message and headers."""

    def __init__(
        self, status: int, message: str = "", *, headers: Mapping[str, str] | None = None, kind: str = ""
    ) -> None:
        super().__init__(message or HTTPStatus(status).phrase)
        self.status = status
        self.message = message or HTTPStatus(status).phrase
        self.headers = dict(headers or {})
        self.kind = kind or ("rate_limit_exceeded" if status == 429 else "server_error")


class ChatServer:
    """Serves ``provider`` over HTTP (see the module docstring). A context manager."""

    def __init__(
        self,
        provider: Provider,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        record: bool = False,
    ) -> None:
        self.provider = provider
        self.api_key = api_key
        self.received: list[dict[str, Any]] = []  # request bodies, when `record`
        self.record = record
        self._address = (host, port)
        self._httpd: ThreadingHTTPServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def url(self) -> str:
        """The base URL a client uses (``http://HOST:PORT/v1``)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ChatServer:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop_thread = threading.Thread(target=loop.run_forever, name="chat-server-loop", daemon=True)
        loop_thread.start()
        httpd = ThreadingHTTPServer(self._address, _handler(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        http_thread = threading.Thread(target=httpd.serve_forever, name="chat-server-http", daemon=True)
        http_thread.start()
        self._threads = [loop_thread, http_thread]
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._loop is not None:
            loop = self._loop
            asyncio.run_coroutine_threadsafe(self.provider.aclose(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
            for thread in self._threads:
                thread.join(timeout=10)
            loop.close()
            self._loop = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one request ------------------------------------------------------------------------
    def answer(self, body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
        """``(status, JSON body, headers)`` for one chat-completions request body."""
        if not isinstance(body, dict):
            return (*_error(400, "the request body must be a JSON object", "invalid_request_error"), {})
        if body.get("stream"):
            return (
                *_error(400, "this server does not stream; send stream=false", "invalid_request_error"),
                {},
            )
        try:
            request = ChatRequest.from_body(body)
        except LLMError as exc:
            return (*_error(400, exc.message, "invalid_request_error"), {})
        if self.record:
            with self._lock:
                self.received.append(body)
        assert self._loop is not None
        future: Future[ChatResponse] = asyncio.run_coroutine_threadsafe(
            self.provider.complete(request), self._loop
        )
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            response = future.result()
        except ServerFault as fault:
            return (*_error(fault.status, fault.message, fault.kind), fault.headers)
        except LLMError as exc:
            return (*_error(_STATUS.get(exc.kind, 500), exc.message, exc.kind), {})
        except Exception:
            log.exception("the served provider failed")
            return (*_error(500, "internal server error", "server_error"), {})
        finally:
            with self._lock:
                self.in_flight -= 1
        completion = response.completion(created=int(time.time()))
        completion["model"] = response.model or request.model
        return 200, completion, {}


def _error(status: int, message: str, kind: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections
        # Headers and body go out as two writes: with Nagle on, the body waits for the client's
        # delayed ACK of the headers (~40 ms a response on Linux).
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            if path == "/health":
                self._send(200, {"status": "ok"})
            elif path in ("/v1/models", "/models"):
                model = server.provider.model
                self._send(
                    200,
                    {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "envcraft"}]},
                )
            else:
                self._send(*_error(404, f"no route {path}", "not_found"))

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                self.close_connection = True
                self._send(*_error(413, "request body too large", "invalid_request_error"))
                return
            raw = self.rfile.read(length) if length else b""
            if path not in ("/v1/chat/completions", "/chat/completions"):
                self._send(*_error(404, f"no route {path}", "not_found"))
                return
            if server.api_key is not None and self.headers.get("authorization") != f"Bearer {server.api_key}":
                self._send(*_error(401, "invalid API key", "invalid_api_key"))
                return
            try:
                body = json.loads(raw)
            except (ValueError, RecursionError):
                self._send(*_error(400, "the request body is not JSON", "invalid_request_error"))
                return
            self._send(*server.answer(body))

        def _send(
            self, status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None
        ) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler
