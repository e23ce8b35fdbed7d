"""Domain rules of :class:`~.env.InfraRecovery`: what its tools check, compute and render.

Infrastructure recovery (on-call operations workspace). The tool surface and the State live in
``env.py``; this module holds the logic tool bodies call (the S0 generator shares it, so S0 is
built by the same rules the tools enforce).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .env import Incident, Scalar


SERVING: frozenset[str] = frozenset({"healthy", "degraded"})
DRAINABLE: frozenset[str] = frozenset({"healthy", "degraded", "down"})
UNFILLED = ("", "tbd", "todo", "n/a", "-")


# -- configuration files: a flat ``key: value`` YAML subset -------------------------------------
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?\d+\.\d*$")


def parse_config(text: str) -> tuple[dict[str, Scalar], list[str]]:
    """Parse a flat ``key: value`` file; errors name their line (nesting is not supported)."""
    values: dict[str, Scalar] = {}
    errors: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if raw[0] in " \t":
            errors.append(f"line {number}: unexpected indentation (nested values are not supported)")
            continue
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or not key:
            errors.append(f"line {number}: expected 'key: value'")
        elif key in values:
            errors.append(f"line {number}: duplicate key {key}")
        else:
            values[key] = _scalar(value.strip())
    return values, errors


def _scalar(value: str) -> Scalar:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    if value in ("true", "false"):
        return value == "true"
    if _INT.match(value):
        return int(value)
    if _FLOAT.match(value):
        return float(value)
    return value


def validate_config(values: dict[str, Scalar], schema: Any, service_id: str) -> list[str]:
    """Schema violations of a parsed configuration, in a stable order."""
    errors: list[str] = []
    keys = schema["keys"]
    kinds = {"int": int, "str": str, "bool": bool}
    for key, value in values.items():
        rule = keys.get(key)
        if rule is None:
            errors.append(f"unknown key {key}")
            continue
        kind = kinds[rule["type"]]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            errors.append(f"invalid value for {key}: {value!r} (expected {rule['type']})")
        elif "allowed" in rule and value not in rule["allowed"]:
            errors.append(f"invalid value for {key}: {value!r} (allowed: {', '.join(rule['allowed'])})")
        elif isinstance(value, int) and not rule["min"] <= value <= rule["max"]:
            errors.append(f"invalid value for {key}: {value} (range {rule['min']}-{rule['max']})")
    for key, rule in keys.items():
        if rule["required"] and key not in values:
            errors.append(f"missing required key {key}")
    if "service" in values and values["service"] != service_id:
        errors.append(f"invalid value for service: {values['service']!r} (expected {service_id!r})")
    return errors


def render_config(values: dict[str, Scalar]) -> str:
    lines = []
    for key, value in values.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{key}: {text}")
    return "\n".join(lines) + "\n"


def config_digest(values: dict[str, Scalar]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]


def config_path(service_id: str) -> str:
    return f"configs/{service_id}.yaml"


def record_path(incident_id: str) -> str:
    return f"ops/incident-{incident_id}.md"


def _sections(markdown: str) -> dict[str, str]:
    """``## Heading`` → body text of a Markdown file."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].strip().lower(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(body).strip() for name, body in found.items()}


def _record(incident: Incident, first_line: str | None) -> str:
    """A fresh ops record in the house format."""
    timeline = f"- {first_line}\n" if first_line else ""
    return (
        f"# {incident.incident_id}: {incident.title}\n\n"
        f"- Service: {incident.service_id}\n"
        f"- Severity: {incident.severity}\n"
        f"- Status: {incident.status}\n"
        f"- Opened: {incident.opened_at}\n\n"
        "## Timeline\n"
        f"{timeline}\n"
        "## Root cause\nTBD\n\n"
        "## Resolution\nTBD\n"
    )
