"""The State of :class:`~.env.InfraRecovery`: hosts, services, incidents and health checks.

The explicit state space S of the on-call workspace (the files are the rest of the world): each
host's lifecycle state, disk and running configuration, each service's replicas and applied
configuration, incidents and health checks. Services and host types are checked against
``data/services.json``; the links between records are invariants, checked per record when a
call touches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from envcraft import IsoTime, Repository, StateModel, invariant, misfiled

HostState = Literal["healthy", "degraded", "down", "draining", "maintenance", "recovering"]
Severity = Literal["sev1", "sev2", "sev3"]
RootCause = Literal["disk_full", "oom", "bad_config", "other"]
Scalar = str | int | float | bool


CATALOG = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


def _in_catalog(key: str, name: str) -> Any:
    """A validator: the value must name an entry of ``services.json[key]`` (drain and warm-up
    periods, peak memory and host memory live there, and every tool needs them)."""

    entries = CATALOG.json("services.json")[key]  # read once: reference data never changes
    known = [e["service_id"] for e in entries] if key == "services" else list(entries)

    def check(value: str) -> str:
        if value not in known:
            raise ValueError(f"unknown {name} {value!r}; data/services.json has {', '.join(known)}")
        return value

    return AfterValidator(check)


ServiceId = Annotated[str, _in_catalog("services", "service")]
HostType = Annotated[str, _in_catalog("host_types", "host type")]


class Host(StateModel):
    host_id: str
    service_id: ServiceId
    zone: str
    host_type: HostType
    state: HostState
    state_since: IsoTime
    disk_total_gb: int = Field(gt=0)
    disk_used_gb: dict[str, int]  # by directory
    running_config: dict[str, Scalar]  # loaded at the host's last restart
    restarted_at: IsoTime
    restarts: int = 0


class Service(StateModel):
    service_id: ServiceId
    replicas: list[str]
    applied_config: dict[str, Scalar]  # what the next restart loads
    applied_at: IsoTime
    changed_at: IsoTime  # last change of the service or one of its hosts


class Incident(StateModel):
    incident_id: str
    service_id: str
    severity: Severity
    title: str
    status: Literal["open", "mitigating", "closed"]
    opened_at: IsoTime
    closed_at: IsoTime | None = None
    root_cause: RootCause | None = None
    health_check_id: str | None = None


class HealthCheck(StateModel):
    check_id: str
    service_id: str
    at: IsoTime
    passed: bool
    failures: list[str]


class InfraState(StateModel):
    hosts: dict[str, Host] = {}
    services: dict[str, Service] = {}
    incidents: dict[str, Incident] = {}
    health_checks: dict[str, HealthCheck] = {}
    next_incident: int = 2041
    next_check: int = 1

    # Tools follow these links without looking: a dangling one would crash every call.
    @invariant("hosts")
    def _host_belongs_to_a_service(self, key: str, host: Host) -> None:
        _refuse(misfiled({key: host}, "host_id"))
        if host.service_id not in self.services:
            raise ValueError(f"host {host.host_id} belongs to {host.service_id}, which is not a service")

    @invariant("services")
    def _service_lists_its_hosts(self, key: str, service: Service) -> None:
        _refuse(misfiled({key: service}, "service_id"))
        unknown = [h for h in service.replicas if h not in self.hosts]
        if unknown:
            raise ValueError(f"{service.service_id} lists unknown replicas {', '.join(unknown)}")

    @invariant("incidents")
    def _incident_names_a_service(self, key: str, incident: Incident) -> None:
        _refuse(misfiled({key: incident}, "incident_id"))
        _a_service(incident.service_id, self.services)

    @invariant("health_checks")
    def _health_check_names_a_service(self, key: str, check: HealthCheck) -> None:
        _refuse(misfiled({key: check}, "check_id"))
        _a_service(check.service_id, self.services)


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems))


def _a_service(service_id: str, services: Any) -> None:
    if service_id not in services:
        raise ValueError(f"a record refers to {service_id}, which is not a service")
