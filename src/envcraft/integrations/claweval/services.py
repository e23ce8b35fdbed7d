"""A Claw-Eval task's mock services (``services`` + ``tool_endpoints``) as an episode's services block.

Claw-Eval starts each declared service with its ``command`` from the checkout's root
(``python mock_services/<name>/server.py``, FastAPI on ``port``, fixtures named by ``env``
paths relative to the root), resets it between trials and dispatches a tool call by
sending its input as the JSON body to the tool's endpoint. Here the importer copies what
the services need into ``OUT/services/`` (``mock_services/_base.py``, each used service's
directory, the fixture files and directories their ``env`` and defaults name), and the task
carries the block :mod:`envcraft.tasks.play.services` reads: every episode then starts the
services on loopback in its own network namespace, with fastapi, uvicorn and pydantic
bound read-only from the Python envcraft runs from.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SERVICES_DIR = "services"
# What a Claw-Eval mock service imports beyond the stdlib (fastapi's own dependencies included).
LIBRARIES = (
    "fastapi",
    "starlette",
    "pydantic",
    "pydantic_core",
    "uvicorn",
    "anyio",
    "h11",
    "click",
    "sniffio",
    "typing_extensions",
    "annotated_types",
    "typing_inspection",
    "idna",
)
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.M)
_DEFAULT_TASK = re.compile(r'"tasks"\s*/\s*"([\w.-]+)"')


def service_problem(checkout: Path, task: dict[str, Any]) -> str | None:
    """Why the task's services cannot run here (a missing server, an import not installed), or None."""
    for service in task.get("services") or []:
        name = str(service.get("name"))
        server = _server(checkout, service)
        if server is None or not server.is_file():
            return f"its service {name} has no server under mock_services/ in the checkout"
        for module in sorted(set(_IMPORT.findall(server.read_text(encoding="utf-8")))):
            if module in sys.stdlib_module_names or module in LIBRARIES or module == "mock_services":
                continue
            return f"its service {name} imports {module}, which envcraft does not bind for services"
    endpoints = {str(e.get("tool_name")) for e in task.get("tool_endpoints") or [] if isinstance(e, dict)}
    for endpoint in task.get("tool_endpoints") or []:
        parts = urlsplit(str(endpoint.get("url", "")))
        ports = {int(s.get("port", 0)) for s in task.get("services") or []}
        if parts.hostname not in ("localhost", "127.0.0.1") or parts.port not in ports:
            return f"its tool {endpoint.get('tool_name')} reaches {parts.netloc}, no declared service"
    if not endpoints and task.get("services"):
        return "it declares services but no tool_endpoints"
    return None


def services_block(checkout: Path, task: dict[str, Any], out: Path) -> dict[str, Any]:
    """The task's services block; copies what its services need into ``out/services``."""
    root = out / SERVICES_DIR
    _copy(checkout, root, "mock_services/_base.py")
    services = []
    for service in task.get("services") or []:
        server = _server(checkout, service)
        assert server is not None
        _copy(checkout, root, str(server.parent.relative_to(checkout)))
        env = {str(k): str(v) for k, v in (service.get("env") or {}).items()}
        for value in env.values():
            if (checkout / value).exists() and ".." not in Path(value).parts:
                _copy(checkout, root, value)
        for default in _DEFAULT_TASK.findall(server.read_text(encoding="utf-8")):
            if (checkout / "tasks" / default / "fixtures").is_dir():
                _copy(checkout, root, f"tasks/{default}/fixtures")
        health = urlsplit(str(service.get("health_check", "")))
        reset = urlsplit(str(service.get("reset_endpoint") or ""))
        services.append(
            {
                "name": str(service["name"]),
                "argv": shlex.split(str(service["command"])),
                "port": int(service["port"]),
                "env": env,
                "health": health.path or "/",
                "health_method": str(service.get("health_check_method") or "POST"),
                "ready_timeout": max(30, int(service.get("ready_timeout") or 10)),
                "reset": reset.path or None,
                # Claw-Eval reads the audit next to the reset endpoint (runner/loop.py)
                "audit": reset.path.rsplit("/reset", 1)[0] + "/audit" if reset.path else None,
            }
        )
    by_port = {s["port"]: s["name"] for s in services}
    specs = {str(t.get("name")): t for t in task.get("tools") or [] if isinstance(t, dict)}
    tools = []
    for endpoint in task.get("tool_endpoints") or []:
        name = str(endpoint["tool_name"])
        spec = specs.get(name, {})
        tools.append(
            {
                "name": name,
                "description": str(spec.get("description") or ""),
                "parameters": spec.get("input_schema") or {"type": "object", "properties": {}},
                "service": by_port.get(urlsplit(str(endpoint["url"])).port, ""),
                "method": str(endpoint.get("method") or "POST"),
                "url": str(endpoint["url"]),
            }
        )
    return {"root": str(root.resolve()), "libraries": list(LIBRARIES), "services": services, "tools": tools}


def _server(checkout: Path, service: dict[str, Any]) -> Path | None:
    """The server script a service's command runs (``python mock_services/x/server.py``)."""
    try:
        argv = shlex.split(str(service.get("command", "")))
    except ValueError:
        return None
    scripts = [a for a in argv[1:] if a.endswith(".py") and ".." not in Path(a).parts]
    return checkout / scripts[0] if scripts else None


def _copy(checkout: Path, root: Path, rel: str) -> None:
    source, target = checkout / rel, root / rel
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    elif source.is_file():
        shutil.copyfile(source, target)
