"""Mock services in a sandbox's own network namespace: real bubblewrap, real HTTP over the relay."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from envcraft.sandbox.services import Service, ServiceError, ServiceSandbox, ServiceSet

from .conftest import requires_bwrap

pytestmark = requires_bwrap
PORT = 9931
# A stdlib HTTP service that counts the POSTs it got and says which fixture it read.
SERVER = """import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer

count = 0
name = open(os.environ["FIXTURE"]).read().strip()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        count += 1
        self._answer(200, {"count": count, "name": name, "got": body})

    def do_GET(self):
        self._answer(404 if self.path != "/health" else 200, {"path": self.path})

    def _answer(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
"""


def _root(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "server.py").write_text(SERVER)
    (root / "fixture.txt").write_text(name)
    return root


def _services(root: Path, argv: tuple[str, ...] = ("python", "server.py")) -> ServiceSet:
    service = Service("svc", argv, PORT, {"FIXTURE": "fixture.txt"}, "/health", "GET", ready_timeout=20)
    return ServiceSet(root, (service,))


def test_two_sandboxes_serve_the_same_port_apart_and_the_host_cannot_reach_either(tmp_path: Path) -> None:
    with (
        ServiceSandbox(_services(_root(tmp_path, "one"))) as one,
        ServiceSandbox(_services(_root(tmp_path, "two"))) as two,
    ):
        url = f"http://localhost:{PORT}/items"
        assert one.request("POST", url, {"a": 1}) == (200, {"count": 1, "name": "one", "got": {"a": 1}})
        assert one.request("POST", url, {}) == (200, {"count": 2, "name": "one", "got": {}})
        assert two.request("POST", url, {}) == (200, {"count": 1, "name": "two", "got": {}})
        assert one.request("GET", f"http://127.0.0.1:{PORT}/nothing") == (404, {"path": "/nothing"})
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", PORT), timeout=1):
            pass  # each listens on its own namespace's loopback, not the host's
        with pytest.raises(ServiceError, match=r"no service of this task listens at example\.com"):
            one.request("POST", f"http://example.com:{PORT}/items")


def test_a_service_that_dies_is_a_clear_error_with_its_output(tmp_path: Path) -> None:
    root = _root(tmp_path, "broken")
    (root / "server.py").write_text("raise SystemExit('no fixtures here')\n")
    with pytest.raises(ServiceError, match=r"service 'svc' did not start: .*no fixtures here"):
        ServiceSandbox(_services(root))


def test_an_episode_whose_services_do_not_start_is_a_task_error(tmp_path: Path) -> None:
    from envcraft.integrations.clawbench.package import write_workspace_package
    from envcraft.tasks.format.model import Reference, Task, Turn, Verifier
    from envcraft.tasks.play.episode import Episode
    from envcraft.tasks.play.outcome import ExecutionError

    package = write_workspace_package(tmp_path / "out")
    root = _root(tmp_path, "broken")
    (root / "server.py").write_text("raise SystemExit('boom')\n")
    service = {"name": "svc", "argv": ["python", "server.py"], "port": PORT, "health": "/health"}
    env = package.manifest.id
    task = Task(
        id="t",
        envs=[env],
        kind="claw",
        turns=[Turn(user="hi")],
        initial_state={env: {}},
        workspace={},
        verifier=Verifier(source="def verify(ctx):\n    return {'score': 0.0}\n"),
        reference=Reference(calls=[], final_hash=""),
        provenance={
            "packages": {env: str(package.root)},
            "services": {"root": str(root), "services": [service]},
        },
    )
    with pytest.raises(
        ExecutionError, match=r"mock services did not start: service 'svc' did not start: .*boom"
    ):
        Episode.open(task)
