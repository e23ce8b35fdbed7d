"""A task's mock HTTP services as an episode's tools (imported benchmarks: Claw-Eval).

A task may declare, in ``provenance["services"]``, services its tools reach over HTTP::

    {"root": "DIR", "libraries": ["fastapi", ...],
     "services": [{"name", "argv", "port", "env", "health", "health_method", "reset", "audit"}],
     "tools": [{"name", "description", "parameters", "service", "method", "url"}]}

:class:`EpisodeServices` starts them for one episode (:class:`envcraft.sandbox.services.ServiceSandbox`:
loopback inside the episode's own network namespace, a fresh start per episode), answers a
tool call by sending its arguments as the JSON body to the tool's endpoint, as the
benchmark's dispatcher does, and records every call (status and body) and, when the run is
read, each service's audit (``GET`` of its ``audit`` path). Both reach the verifier as
``ctx["services"] = {"calls": [...], "audit": {name: data}}``: a benchmark's grader reads
what the service saw, not what the agent said.

A call to a service tool is recorded in the episode under the environment
``service:<name>``; such a trajectory cannot be re-played without the services, so these
tasks are scored live (``envcraft eval``), not by ``tasks score``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from envcraft.core.errors import ErrorCategory, error_result
from envcraft.sandbox.services import ServiceError, ServiceSandbox, service_set

SERVICE_ENV_PREFIX = "service:"


def declared_services(provenance: Any) -> dict[str, Any] | None:
    """The task's services block, or None."""
    value = provenance.get("services") if isinstance(provenance, dict) else None
    return value if isinstance(value, dict) and value.get("services") else None


def tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAI function-tool form of a declared service tool (its JSON Schema as given)."""
    parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    description = str(tool.get("description") or "")
    return {
        "type": "function",
        "function": {"name": str(tool["name"]), "description": description, "parameters": parameters},
    }


def service_tools(provenance: Any) -> dict[str, dict[str, Any]]:
    """The task's service tools (name -> OpenAI schema), without starting anything (exporters)."""
    spec = declared_services(provenance)
    return {str(t["name"]): tool_schema(t) for t in (spec or {}).get("tools") or []}


class EpisodeServices:
    """One episode's started services and the tools that reach them."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = dict(spec)
        self.tools = {str(t["name"]): dict(t) for t in self.spec.get("tools") or []}
        self.calls: list[dict[str, Any]] = []
        self.sandbox = ServiceSandbox(service_set(self.spec))

    def schema(self, name: str) -> dict[str, Any]:
        """The OpenAI function-tool form of a service tool (its declared JSON Schema)."""
        return tool_schema(self.tools[name])

    def env_of(self, name: str) -> str:
        return SERVICE_ENV_PREFIX + str(self.tools[name].get("service", ""))

    def call(self, name: str, args: Any) -> dict[str, Any]:
        """Send ``args`` to the tool's endpoint; the JSON answer (a dict) or a structured error."""
        tool = self.tools[name]
        url, method = str(tool["url"]), str(tool.get("method") or "POST")
        try:
            status, body = self.sandbox.request(method, url, args if args is not None else {})
        except ServiceError as exc:
            status, body = 500, {"error": str(exc)}
        self.calls.append({"tool": name, "url": url, "args": args, "status": status, "body": body})
        if status >= 400:
            category = ErrorCategory.INTERNAL_ERROR if status >= 500 else ErrorCategory.INVALID_ARGUMENT
            message = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            return error_result(category, f"HTTP {status}: {message[:500]}", status=status)
        return body if isinstance(body, dict) else {"result": body}

    def record(self) -> dict[str, Any]:
        """``{"calls", "audit"}``: every call so far and each service's audit now."""
        audit: dict[str, Any] = {}
        for service in self.spec.get("services") or []:
            path = service.get("audit")
            if not path:
                continue
            try:
                status, body = self.sandbox.request("GET", f"http://localhost:{service['port']}{path}")
            except ServiceError:
                continue
            if status < 400:
                audit[str(service["name"])] = body
        return {"calls": list(self.calls), "audit": audit}

    def close(self) -> None:
        self.sandbox.close()
