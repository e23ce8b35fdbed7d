"""Domain rules of :class:`~.env.InfraRecovery`: what its tools check, compute and render.

Infrastructure recovery (on-call operations workspace). Functions over the State of
``state.py``, the reference data and the workspace files: the configuration format, the ops
record and log formats, the faults a host has, its lifecycle moves and what the clock finishes
(drains, warm-ups). The tools in ``env.py`` call them; the S0 generator shares them, so S0 is
built by the same rules the tools enforce.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, iso, parse_time

from .state import HealthCheck, Host, HostState, Incident, InfraState, Scalar

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


def markdown_sections(markdown: str) -> dict[str, str]:
    """``## Heading`` → body text of a Markdown file."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].strip().lower(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(body).strip() for name, body in found.items()}


def new_record(incident: Incident, first_line: str | None) -> str:
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


# -- the reference data about a host ------------------------------------------------------------------
def service_info(data: Repository, service_id: str) -> Any:
    # ServiceId fields are checked against this catalog when the state loads: always found.
    return next(s for s in data.json("services.json")["services"] if s["service_id"] == service_id)


def memory_mb(data: Repository, host: Host) -> int:
    return int(data.json("services.json")["host_types"][host.host_type]["memory_mb"])


def disk_pct(host: Host) -> int:
    return sum(host.disk_used_gb.values()) * 100 // host.disk_total_gb


def faults(data: Repository, host: Host) -> list[str]:
    """What keeps a host from running well, derived from its disk and running configuration."""
    found = []
    if disk_pct(host) >= data.json("operations.json")["disk_full_pct"]:
        found.append("disk_full")
    schema = data.json("config_schema.json")
    if validate_config(host.running_config, schema, host.service_id):
        found.append("bad_config")
    elif int(host.running_config["memory_limit_mb"]) < service_info(data, host.service_id)["peak_memory_mb"]:
        found.append("oom")
    return found


def next_step(data: Repository, host: Host) -> str | None:
    """When a draining or recovering host's timer ends (None in the other states)."""
    info = service_info(data, host.service_id)
    period = {"draining": info["drain_seconds"], "recovering": info["warmup_seconds"]}.get(host.state)
    return iso(parse_time(host.state_since) + timedelta(seconds=period)) if period else None


# -- records of the State -------------------------------------------------------------------------------
def open_incident_for(state: InfraState, service_id: str) -> Incident | None:
    """The service's incident that is not closed yet (change control needs one)."""
    return next(
        (i for i in state.incidents.values() if i.service_id == service_id and i.status != "closed"),
        None,
    )


def last_check(state: InfraState, service_id: str) -> HealthCheck | None:
    checks = [c for c in state.health_checks.values() if c.service_id == service_id]
    return max(checks, key=lambda c: c.check_id) if checks else None


def move(state: InfraState, host: Host, to: HostState, at: datetime) -> None:
    """One transition of the host lifecycle (the caller checked its guards)."""
    host.state = to
    host.state_since = iso(at)
    state.services[host.service_id].changed_at = max(state.services[host.service_id].changed_at, iso(at))


def advance_clock(state: InfraState, data: Repository, now: datetime) -> list[tuple[Host, datetime]]:
    """Finish drains and warm-ups whose time has come: a drained host goes to maintenance, a
    warming host that still has a fault crashes (down). Returns the crashed hosts with the
    moment each crashed, for the logs and the ops records."""
    crashed: list[tuple[Host, datetime]] = []
    for host in sorted(state.hosts.values(), key=lambda h: h.host_id):
        info = service_info(data, host.service_id)
        since = parse_time(host.state_since)
        if host.state == "draining" and now >= since + timedelta(seconds=info["drain_seconds"]):
            move(state, host, "maintenance", since + timedelta(seconds=info["drain_seconds"]))
        elif host.state == "recovering" and faults(data, host):
            crash = since + timedelta(seconds=info["warmup_seconds"])
            if now >= crash:
                move(state, host, "down", crash)
                crashed.append((host, crash))
    return crashed


# -- the workspace files: configurations, ops records, logs ---------------------------------------------
def check_config(
    data: Repository, service_id: str, text: str | None
) -> tuple[dict[str, Scalar] | None, list[str]]:
    """A service's configuration file (``None``: it is missing) parsed and validated: (values or
    None, errors)."""
    if text is None:
        return None, ["file is missing"]
    values, errors = parse_config(text)
    if not errors:
        errors = validate_config(values, data.json("config_schema.json"), service_id)
    return (None, errors) if errors else (values, [])


def unfilled_sections(record: str) -> list[str]:
    """The sections of an ops record still left to fill in (closing needs them)."""
    sections = markdown_sections(record)
    return [
        f"## {name}"
        for name in ("Root cause", "Resolution")
        if sections.get(name.lower(), "").strip().lower().strip(".") in UNFILLED
    ]


def with_timeline_line(record: str, line: str) -> str:
    """The ops record with ``line`` appended to its Timeline section (added when lost)."""
    lines = record.rstrip("\n").splitlines()
    if "## Timeline" not in lines:
        lines += ["", "## Timeline"]
    end = lines.index("## Timeline") + 1
    while end < len(lines) and not lines[end].startswith("## "):
        end += 1
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    lines.insert(end, line)
    return "\n".join(lines) + "\n"


def fault_log(data: Repository, host: Host) -> list[tuple[str, str]]:
    """The signature a still-present fault leaves in the logs when the service crashes, as
    (log file, message) lines."""
    found = faults(data, host)
    lines = []
    if "disk_full" in found:
        lines.append(("app.log", "ERROR failed to write /var/log/app/current.log: No space left on device"))
    if "bad_config" in found:
        schema = data.json("config_schema.json")
        for error in validate_config(host.running_config, schema, host.service_id):
            lines.append(("app.log", f"ERROR config: {error}"))
    if "oom" in found:
        peak = service_info(data, host.service_id)["peak_memory_mb"]
        lines.append(
            (
                "syslog.log",
                f"kernel: Memory cgroup out of memory: Killed process 1 ({host.service_id}) "
                f"total-vm:{peak * 1700}kB, anon-rss:{peak * 1024}kB, file-rss:0kB",
            )
        )
    return lines
