"""Mock HTTP services on loopback inside a sandbox's own network namespace (one per episode).

A benchmark task may declare services its tools reach over HTTP (Claw-Eval's FastAPI mock
Gmail, Calendar, ...: ``http://localhost:9102/todo/tasks``). :class:`ServiceSandbox` starts
all of a task's services in one bubblewrap sandbox with the shared confinement of
:mod:`envcraft.sandbox.bwrap` (no host network: the sandbox's own loopback only, read-only
host programs), the services' directory bound read-only as their working directory and the
libraries they import (``libraries``: top-level packages of the Python envcraft runs from)
bound read-only. Each service listens on its declared port on that private loopback, so
parallel episodes never collide on a port; the host reaches a port only through the Unix
socket the in-sandbox launcher (:mod:`envcraft.sandbox.service_launcher`) relays it to.

A fresh sandbox per episode is the reset between rollouts: every episode's services start
from their fixtures, and nothing one rollout did is seen by the next. Services need
bubblewrap; with ``ENVCRAFT_SANDBOX=unsafe-subprocess`` they are refused (they would share
the host's ports).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from envcraft.sandbox import service_launcher
from envcraft.sandbox.bwrap import (
    SEAL,
    SYSTEM_PYTHON,
    SandboxUnavailable,
    environment_args,
    namespace_args,
    scratch_args,
    select_mode,
    system_mount_args,
)
from envcraft.sandbox.extras import Extras
from envcraft.sandbox.launch import DataFile, Sandbox, start
from envcraft.sandbox.limits import MIB, Limits
from envcraft.sandbox.process import kill_group

SERVICE_LIMITS = Limits(cpu_seconds=3600, memory_bytes=2048 * MIB, processes=64, open_files=1024)
LAUNCHER = "/opt/envcraft/launcher.py"
ROOT_MOUNT = "/srv/services"
SOCKETS_MOUNT = "/run/envcraft"
LIBRARY_MOUNT = "/opt/lib"
LOCAL_HOSTS = ("localhost", "127.0.0.1")
REQUEST_TIMEOUT = 30.0


class ServiceError(RuntimeError):
    """A service that did not start or a request it cannot serve; the message says why."""


@dataclass(frozen=True)
class Service:
    """One declared service: its command (run from the services' root), port and probes."""

    name: str
    argv: tuple[str, ...]
    port: int
    env: Mapping[str, str] = field(default_factory=dict)
    health: str = "/"  # path probed until it answers below 500
    health_method: str = "GET"
    ready_timeout: float = 30.0
    reset: str | None = None  # path POSTed once ready (clears what the health probes logged)


@dataclass(frozen=True)
class ServiceSet:
    """What one episode starts: the services, their root directory and the libraries they import."""

    root: Path
    services: tuple[Service, ...]
    libraries: tuple[str, ...] = ()


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over the Unix socket a port is relayed to."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.path)
        self.sock = sock


class ServiceSandbox:
    """The started services of one episode (see the module docstring); :meth:`close` stops them."""

    def __init__(self, spec: ServiceSet) -> None:
        self.spec = spec
        mode = select_mode()
        if mode.binary is None:
            raise SandboxUnavailable("mock services need the bubblewrap sandbox (a network namespace)")
        self._sockets = Path(tempfile.mkdtemp(prefix="envcraft-services-"))
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        self._sandbox: Sandbox | None = None
        try:
            self._sandbox = self._start(mode.binary)
            for service in spec.services:
                self._wait_ready(service)
        except BaseException:
            self.close()
            raise

    def _start(self, binary: str) -> Sandbox:
        dirs = Extras(self.spec.libraries).library_dirs()
        libs = [f"{LIBRARY_MOUNT}/{i}" for i in range(len(dirs))]
        binds: list[str] = []
        for mount, directory in zip(libs, dirs, strict=True):
            binds += ["--ro-bind", directory, mount]
        binds += ["--ro-bind", str(self.spec.root), ROOT_MOUNT, "--bind", str(self._sockets), SOCKETS_MOUNT]
        base_env = {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(libs)}
        config = {
            "cwd": ROOT_MOUNT,
            "sockets": SOCKETS_MOUNT,
            "env": {**base_env, "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"},
            "services": [
                {
                    "name": s.name,
                    "argv": [SYSTEM_PYTHON if a in ("python", "python3") else a for a in s.argv],
                    "port": s.port,
                    "env": {**s.env, "PORT": str(s.port)},
                }
                for s in self.spec.services
            ],
        }
        args = [
            *namespace_args(),
            *system_mount_args(),
            *scratch_args(SERVICE_LIMITS.tmp_bytes),
            *binds,
            "--chdir", ROOT_MOUNT,
            *SEAL,
            *environment_args(base_env),
            "--", SYSTEM_PYTHON, "-I", "-S", LAUNCHER, json.dumps(config),
        ]  # fmt: skip
        source = Path(service_launcher.__file__).read_bytes()
        return start(
            binary,
            args,
            SERVICE_LIMITS,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            files=[DataFile(LAUNCHER, source)],
        )

    def _wait_ready(self, service: Service) -> None:
        deadline = time.monotonic() + service.ready_timeout
        while True:
            if self._sandbox is None or self._sandbox.proc.poll() is not None:
                raise ServiceError(f"service '{service.name}' did not start: {self._stderr_tail()}")
            try:
                status, _ = self._send(
                    service.port, service.health_method, service.health, None, {"X-Health-Check": "1"}, 2.0
                )
                if status < 500:
                    if service.reset:
                        self._send(service.port, "POST", service.reset, None, {}, REQUEST_TIMEOUT)
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"service '{service.name}' did not answer within {service.ready_timeout:g}s: "
                    f"{self._stderr_tail() or 'no output'}"
                )
            time.sleep(0.1)

    def request(self, method: str, url: str, body: Any = None) -> tuple[int, Any]:
        """``(status, body)`` of one request to ``http://localhost:PORT/...`` (JSON in, JSON out;
        a body that is not JSON comes back as text). ``ServiceError`` when no service has the port."""
        parts = urlsplit(url)
        ports = {s.port for s in self.spec.services}
        if parts.hostname not in LOCAL_HOSTS or parts.port not in ports:
            raise ServiceError(f"no service of this task listens at {parts.hostname}:{parts.port}")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        try:
            return self._send(parts.port, method.upper(), path, body, {}, REQUEST_TIMEOUT)
        except OSError as exc:
            raise ServiceError(f"the service at port {parts.port} did not answer: {exc}") from None

    def _send(
        self, port: int, method: str, path: str, body: Any, headers: dict[str, str], timeout: float
    ) -> tuple[int, Any]:
        connection = _UnixConnection(str(self._sockets / f"{port}.sock"), timeout)
        try:
            data = None if body is None else json.dumps(body).encode("utf-8")
            sent = {"Content-Type": "application/json", **headers} if data is not None else headers
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            raw = response.read().decode("utf-8", "replace")
        except http.client.HTTPException as exc:
            raise OSError(str(exc)) from None
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-600:].decode("utf-8", "replace").strip()

    def close(self) -> None:
        if self._sandbox is not None:
            kill_group(self._sandbox.proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._sandbox.proc.wait(timeout=5)
            self._sandbox.release()
            self._sandbox = None
        self._stderr.close()
        shutil.rmtree(self._sockets, ignore_errors=True)

    def __enter__(self) -> ServiceSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def service_set(spec: Mapping[str, Any], libraries: Sequence[str] = ()) -> ServiceSet:
    """A :class:`ServiceSet` from its JSON form (``{"root", "libraries", "services": [...]}``)."""
    services = tuple(
        Service(
            name=str(s["name"]),
            argv=tuple(str(a) for a in s["argv"]),
            port=int(s["port"]),
            env={str(k): str(v) for k, v in (s.get("env") or {}).items()},
            health=str(s.get("health") or "/"),
            health_method=str(s.get("health_method") or "GET").upper(),
            ready_timeout=float(s.get("ready_timeout") or 30.0),
            reset=str(s["reset"]) if s.get("reset") else None,
        )
        for s in spec["services"]
    )
    return ServiceSet(Path(spec["root"]), services, tuple(spec.get("libraries") or libraries))


__all__ = ["Service", "ServiceError", "ServiceSandbox", "ServiceSet", "service_set"]
