"""Infrastructure recovery: an on-call operations workspace with a guarded host state machine.

Archetype ``constraint_state_machine``: every host is in exactly one state (healthy, degraded,
down, draining, maintenance, recovering); only the transitions of the table in ``ARCHETYPE.md``
exist, each behind guards (change control, replica safety, timers, faults fixed). Faults are
not flags: they are derived from the state and the workspace (disk usage, the configuration a
host runs), so a host recovers only when its cause is really gone. Logs, runbooks, service
configurations and incident records are files in the workspace the agent reads and edits.
The State lives in ``state.py``; faults, lifecycle moves and the file formats in ``rules.py``.
"""

from __future__ import annotations

import random
import re
from datetime import datetime
from typing import Any

from envcraft import ClawEnvironment, Entity, Initial, Job, Repository, iso, parse_time, tool

from .generate import Generator
from .rules import (
    DRAINABLE,
    SERVING,
    advance_clock,
    check_config,
    config_digest,
    config_path,
    disk_pct,
    fault_log,
    last_check,
    memory_mb,
    move,
    new_record,
    next_step,
    open_incident_for,
    record_path,
    service_info,
    unfilled_sections,
    with_timeline_line,
)
from .state import HealthCheck, HostState, Incident, InfraState, RootCause, Scalar, Severity


class InfraRecovery(ClawEnvironment):
    """On-call operations for a fleet of service hosts.

    Hosts run services and move through a strict lifecycle: a degraded or down host is drained
    out of rotation, fixed while in maintenance, restarted, and put back in rotation once it
    has warmed up fault-free. Every change needs an open incident; the incident's ops record
    (`ops/incident-<id>.md`) is kept in the workspace next to logs (`logs/<host>/*.log`),
    runbooks (`runbooks/*.md`) and service configurations (`configs/<service>.yaml`). An
    incident closes only after a passing health check and a completed ops record. Each call
    takes one minute.
    """

    State = InfraState
    state: InfraState
    entities = (
        Entity("hosts", "host", ("host {host_id}",), id_known=True),
        Entity("services", "service", ("the {service_id} service",), id_known=True),
        Entity("incidents", "incident", ("the {status} incident “{title}”",), id_known=True),
        Entity("health_checks", "health check", ("the health check of {service_id} on {at:when}",), log=True),
    )
    jobs = (
        Job(
            "open an incident with a first note",
            ("open_incident", "append_ops_note"),
            "open a {severity} incident for {service_id} titled {title} and start its timeline with the "
            "note {note}",
        ),
        Job(
            "open an incident and put a health check on record",
            ("open_incident", "run_health_check"),
            "open a {severity} incident for {service_id} titled {title} and get a health check of the "
            "service on its record",
        ),
        Job(
            "open an incident and check the service",
            ("open_incident", "run_health_check", "append_ops_note"),
            "open a {severity} incident for {service_id} titled {title}, put the service through a health "
            "check and note {note} in the incident's timeline",
        ),
    )

    # -- reads ----------------------------------------------------------------------------------------
    @tool(read_only=True, produces=["service_id", "incident_id"])
    def list_services(self) -> dict[str, Any]:
        """List services with their replicas' states, open incident and last health check.

        Returns:
            One entry per service: id, team, replicas by state, how many serve traffic, the open
            incident id (or null), drain and warm-up periods, and the last health check result.
        """
        self._advance_clock()
        services = []
        for service in sorted(self.state.services.values(), key=lambda s: s.service_id):
            info = service_info(self.data, service.service_id)
            incident = open_incident_for(self.state, service.service_id)
            last = last_check(self.state, service.service_id)
            services.append(
                {
                    "service_id": service.service_id,
                    "team": info["team"],
                    "description": info["description"],
                    "replicas": {h: self.state.hosts[h].state for h in service.replicas},
                    "serving": sum(self.state.hosts[h].state in SERVING for h in service.replicas),
                    "open_incident": incident.incident_id if incident else None,
                    "drain_seconds": info["drain_seconds"],
                    "warmup_seconds": info["warmup_seconds"],
                    "config": config_path(service.service_id),
                    "last_health_check": last.model_dump() if last else None,
                }
            )
        return {"services": services, "now": iso(self.now())}

    @tool(read_only=True, produces=["host_id"], consumes=["service_id"])
    def list_hosts(self, service_id: str = "", state: HostState | None = None) -> dict[str, Any]:
        """List hosts, optionally of one service or in one state.

        Args:
            service_id: Only hosts of this service; all services when empty.
            state: Only hosts in this state.

        Returns:
            Hosts with id, service, zone, state, since when, and disk usage percent.
        """
        self._advance_clock()
        if service_id:
            self.lookup(self.state.services, service_id, "service", service_id=service_id)
        hosts = [
            {
                "host_id": h.host_id,
                "service_id": h.service_id,
                "zone": h.zone,
                "state": h.state,
                "state_since": h.state_since,
                "disk_used_pct": disk_pct(h),
            }
            for h in sorted(self.state.hosts.values(), key=lambda h: h.host_id)
            if (not service_id or h.service_id == service_id) and (state is None or h.state == state)
        ]
        return {"hosts": hosts, "count": len(hosts), "now": iso(self.now())}

    @tool(read_only=True, consumes=["host_id"])
    def get_host(self, host_id: str) -> dict[str, Any]:
        """Show one host: state and timers, disk, memory, and which configuration it runs.

        Args:
            host_id: The host, e.g. checkout-b1.

        Returns:
            The host's state, when it entered it and when the next automatic step is due
            (drain end or warm-up end), disk usage, memory, configuration digests (running vs
            applied) and restart count.
        """
        self._advance_clock()
        host = self.lookup(self.state.hosts, host_id, "host", host_id=host_id)
        service = self.state.services[host.service_id]
        return {
            "host_id": host.host_id,
            "service_id": host.service_id,
            "zone": host.zone,
            "host_type": host.host_type,
            "state": host.state,
            "state_since": host.state_since,
            "next_step_at": next_step(self.data, host),
            "serving": host.state in SERVING,
            "disk_used_pct": disk_pct(host),
            "memory_mb": memory_mb(self.data, host),
            "memory_limit_mb": host.running_config.get("memory_limit_mb"),
            "running_config": config_digest(host.running_config),
            "applied_config": config_digest(service.applied_config),
            "restarts": host.restarts,
            "now": iso(self.now()),
        }

    @tool(read_only=True, consumes=["host_id"])
    def run_diagnostic(self, host_id: str) -> dict[str, Any]:
        """Diagnose a host from its log files and metrics.

        Scans the lines of `logs/<host>/*.log` written since the host's last restart for known
        failure signatures, and reports disk usage per directory and configuration drift.

        Args:
            host_id: The host, e.g. checkout-b1.

        Returns:
            Findings (code, summary, occurrences, a sample log line, the runbook to follow and,
            for OOM kills, the peak resident memory in MB), disk usage by directory largest first,
            and whether the host runs the applied configuration.
        """
        self._advance_clock()
        host = self.lookup(self.state.hosts, host_id, "host", host_id=host_id)
        ops = self.data.json("operations.json")
        findings = []
        folder = f"logs/{host_id}"
        paths = self.workspace.list(folder) if self.workspace.exists(folder) else []
        lines = [
            line
            for path in paths
            for line in self.workspace.read_text(path).splitlines()
            if line[:20] >= host.restarted_at  # log lines start with their ISO time
        ]
        for pattern in ops["diagnostic_patterns"]:
            regex = re.compile(pattern["regex"])
            hits = [m for m in (regex.search(line) for line in lines) if m]
            if not hits:
                continue
            finding: dict[str, Any] = {
                "code": pattern["code"],
                "summary": pattern["summary"],
                "occurrences": len(hits),
                "sample": hits[-1].string,
                "runbook": pattern["runbook"],
            }
            if "rss_kb" in regex.groupindex:
                finding["peak_rss_mb"] = max(int(m.group("rss_kb")) for m in hits) // 1024
            findings.append(finding)
        if disk_pct(host) >= ops["disk_full_pct"]:
            findings.append(
                {
                    "code": "disk_usage_high",
                    "summary": f"disk {disk_pct(host)}% used (threshold {ops['disk_full_pct']}%)",
                    "runbook": "runbooks/disk-full.md",
                }
            )
        service = self.state.services[host.service_id]
        by_path = sorted(host.disk_used_gb.items(), key=lambda item: (-item[1], item[0]))
        return {
            "host_id": host_id,
            "state": host.state,
            "findings": findings,
            "disk": {
                "total_gb": host.disk_total_gb,
                "used_pct": disk_pct(host),
                "by_path_gb": dict(by_path),
            },
            "config_drift": host.running_config != service.applied_config,
            "memory_limit_mb": host.running_config.get("memory_limit_mb"),
        }

    # -- incidents ------------------------------------------------------------------------------------
    @tool(
        goal="open a {severity} incident for {service_id} titled {title}",
        consumes=["service_id"],
        examples={
            "title": (
                "Elevated error rate after the evening deploy",
                "One replica down, reduced capacity",
                "Slow responses reported by support",
            )
        },
        produces=["incident_id"],
    )
    def open_incident(self, service_id: str, severity: Severity, title: str) -> dict[str, Any]:
        """Open an incident for a service and create its ops record in the workspace.

        Args:
            service_id: The affected service.
            severity: sev1 (no serving replica), sev2 (reduced capacity or user-visible errors) or
                sev3 (no user impact).
            title: One line describing the symptom.

        Returns:
            The incident id and the path of its ops record.
        """
        self._advance_clock()
        self.lookup(self.state.services, service_id, "service", service_id=service_id)
        if not title.strip():
            self.fail("invalid_argument", "title must not be empty", field="title")
        existing = open_incident_for(self.state, service_id)
        if existing is not None:
            self.fail(
                "conflict",
                f"{existing.incident_id} is already open for {service_id}; use it",
                incident_id=existing.incident_id,
            )
        incident_id = f"INC-{self.state.next_incident}"
        self.state.next_incident += 1
        now = iso(self.now())
        incident = Incident(
            incident_id=incident_id,
            service_id=service_id,
            severity=severity,
            title=title.strip(),
            status="open",
            opened_at=now,
        )
        self.state.incidents[incident_id] = incident
        self.workspace.write_text(
            record_path(incident_id), new_record(incident, f"{now} opened: {title.strip()}")
        )
        return {"incident_id": incident_id, "status": "open", "record": record_path(incident_id)}

    @tool(
        goal="add the note {note} to the timeline of {incident_id}",
        consumes=["incident_id"],
        examples={
            "note": (
                "Support reports customers seeing checkout errors.",
                "Waiting on the vendor's status update.",
                "Rollback approved by the change manager.",
            )
        },
    )
    def append_ops_note(self, incident_id: str, note: str) -> dict[str, Any]:
        """Add a timestamped line to the Timeline of an incident's ops record, when the
        requester asks for a note (the Timeline is the incident's audit record).

        Args:
            incident_id: The incident, e.g. INC-2041.
            note: What you found or decided, in one line.

        Returns:
            The incident id, the record path and the line written.
        """
        self._advance_clock()
        incident = self.lookup(self.state.incidents, incident_id, "incident", incident_id=incident_id)
        if incident.status == "closed":
            self.fail(
                "invalid_transition",
                f"{incident_id} is closed; its record can no longer change",
                incident_id=incident_id,
                status=incident.status,
            )
        text = " ".join(note.split())
        if not text:
            self.fail("invalid_argument", "note must not be empty", field="note")
        line = self._timeline(incident, text)
        return {"incident_id": incident_id, "record": record_path(incident_id), "line": line}

    @tool(
        goal="close {incident_id} with the root cause {root_cause|disk_full=full disk|oom=out of "
        "memory|bad_config=bad configuration|other=other}",
        consumes=["incident_id"],
    )
    def close_incident(self, incident_id: str, root_cause: RootCause) -> dict[str, Any]:
        """Close an incident: needs a passing health check after the last change and a complete record.

        Args:
            incident_id: The incident, e.g. INC-2041.
            root_cause: The cause category: disk_full, oom, bad_config or other.

        Returns:
            The closed incident with the health check that justified closing it.
        """
        self._advance_clock()
        incident = self.lookup(self.state.incidents, incident_id, "incident", incident_id=incident_id)
        if incident.status == "closed":
            self.fail(
                "invalid_transition",
                f"{incident_id} is already closed (at {incident.closed_at})",
                incident_id=incident_id,
                status=incident.status,
            )
        service = self.state.services[incident.service_id]
        check = last_check(self.state, service.service_id)
        if check is None or check.at < service.changed_at:
            self.fail(
                "conflict",
                f"no health check of {service.service_id} since its last change at {service.changed_at}; "
                "run run_health_check",
                service_id=service.service_id,
            )
        if not check.passed:
            self.fail(
                "conflict",
                f"the last health check {check.check_id} of {service.service_id} failed",
                check_id=check.check_id,
                failures=check.failures,
            )
        missing = self._unfilled_sections(incident)
        if missing:
            self.fail(
                "conflict",
                f"the ops record {record_path(incident_id)} is incomplete: fill in {', '.join(missing)}",
                missing_sections=missing,
            )
        incident.status = "closed"
        incident.closed_at = iso(self.now())
        incident.root_cause = root_cause
        incident.health_check_id = check.check_id
        self._timeline(incident, f"closed (root cause: {root_cause}, health check {check.check_id} passed)")
        self._show_status(incident)
        return incident.model_dump()

    # -- host lifecycle -------------------------------------------------------------------------------
    @tool(goal="take {host_id} out of rotation", consumes=["host_id"])
    def drain_host(self, host_id: str) -> dict[str, Any]:
        """Take a host out of rotation; it reaches maintenance after the service's drain period.

        Refused for the last healthy replica and for the last replica serving traffic.

        Args:
            host_id: The host to drain.

        Returns:
            The host's new state (draining) and when it will be in maintenance.
        """
        self._advance_clock()
        host = self.lookup(self.state.hosts, host_id, "host", host_id=host_id)
        if host.state not in DRAINABLE:
            self.fail(
                "invalid_transition",
                f"{host_id} is {host.state}; only healthy, degraded or down hosts can be drained",
                host_id=host_id,
                state=host.state,
            )
        incident = self._authorized(host.service_id)
        others = [self.state.hosts[h] for h in self.state.services[host.service_id].replicas if h != host_id]
        if host.state == "healthy" and not any(h.state == "healthy" for h in others):
            self.fail(
                "conflict",
                f"{host_id} is the last healthy replica of {host.service_id}; recover another replica first",
                host_id=host_id,
            )
        if host.state in SERVING and not any(h.state in SERVING for h in others):
            self.fail(
                "conflict",
                f"{host_id} is the last replica of {host.service_id} serving traffic; draining it would "
                "take the service down",
                host_id=host_id,
            )
        move(self.state, host, "draining", self.now())
        self._change(
            incident, host.service_id, f"drain {host_id} (maintenance at {next_step(self.data, host)})"
        )
        return {"host_id": host_id, "state": host.state, "maintenance_at": next_step(self.data, host)}

    @tool(goal="purge {path} on {host_id}", consumes=["host_id"])
    def purge_disk(self, host_id: str, path: str) -> dict[str, Any]:
        """Delete the files of one purgeable directory on a host in maintenance.

        Args:
            host_id: The host, in maintenance.
            path: The directory: /var/log/app/archive, /var/crash or /tmp.

        Returns:
            The space freed and the host's new disk usage.
        """
        self._advance_clock()
        host = self.lookup(self.state.hosts, host_id, "host", host_id=host_id)
        ops = self.data.json("operations.json")
        clean = path.rstrip("/") or "/"
        if clean in ops["protected_paths"]:
            self.fail(
                "permission_denied",
                f"{clean} on {host_id} holds live service data; purging it is not permitted",
                host_id=host_id,
                path=clean,
                missing_permission="purge_protected_path",
            )
        if clean not in ops["purgeable_paths"]:
            self.fail(
                "invalid_argument",
                f"{clean} is not a purgeable directory; choose one of {', '.join(ops['purgeable_paths'])}",
                field="path",
            )
        if host.state != "maintenance":
            self.fail(
                "invalid_transition",
                f"{host_id} is {host.state}; files are in use until it is drained into maintenance",
                host_id=host_id,
                state=host.state,
            )
        incident = self._authorized(host.service_id)
        freed = host.disk_used_gb.get(clean, 0)
        if freed == 0:
            self.fail("conflict", f"{clean} on {host_id} is already empty", host_id=host_id, path=clean)
        host.disk_used_gb[clean] = 0
        self._log(host_id, "syslog.log", self.now(), f"ops: purged {clean} (freed {freed}G)")
        self._change(incident, host.service_id, f"purge {clean} on {host_id} (freed {freed} GB)")
        return {"host_id": host_id, "path": clean, "freed_gb": freed, "disk_used_pct": disk_pct(host)}

    @tool(goal="apply the configuration file of {service_id}", consumes=["service_id"])
    def apply_config(self, service_id: str) -> dict[str, Any]:
        """Validate `configs/<service>.yaml` and make it the configuration hosts load at restart.

        Args:
            service_id: The service whose configuration file to apply.

        Returns:
            The applied configuration, its digest, and the replicas that still run an older one.
        """
        self._advance_clock()
        service = self.lookup(self.state.services, service_id, "service", service_id=service_id)
        incident = self._authorized(service_id)
        values = self._read_config(service_id)
        schema = self.data.json("config_schema.json")
        info = service_info(self.data, service_id)
        limit = int(values["memory_limit_mb"])
        needed = -(-info["peak_memory_mb"] * (100 + schema["memory_headroom_pct"]) // 100)
        if limit < needed:
            self.fail(
                "conflict",
                f"memory_limit_mb {limit} leaves too little headroom: the observed peak of {service_id} "
                f"is {info['peak_memory_mb']} MB, so at least {needed} MB is required",
                field="memory_limit_mb",
                minimum=needed,
            )
        ceiling = min(memory_mb(self.data, self.state.hosts[h]) for h in service.replicas)
        ceiling = ceiling * schema["max_memory_share_pct"] // 100
        if limit > ceiling:
            self.fail(
                "conflict",
                f"memory_limit_mb {limit} exceeds {schema['max_memory_share_pct']}% of the smallest host of "
                f"{service_id} ({ceiling} MB)",
                field="memory_limit_mb",
                maximum=ceiling,
            )
        if values == service.applied_config:
            self.fail("conflict", f"{config_path(service_id)} is already the applied configuration")
        service.applied_config = values
        service.applied_at = iso(self.now())
        self._change(incident, service_id, f"apply {config_path(service_id)} ({config_digest(values)})")
        stale = [h for h in service.replicas if self.state.hosts[h].running_config != values]
        return {
            "service_id": service_id,
            "applied_config": values,
            "digest": config_digest(values),
            "hosts_to_restart": stale,
        }

    @tool(goal="restart {host_id}", consumes=["host_id"])
    def restart_host(self, host_id: str) -> dict[str, Any]:
        """Restart a host in maintenance with the service's applied configuration.

        Args:
            host_id: The host, in maintenance.

        Returns:
            The host's new state (recovering) and when its warm-up ends.
        """
        self._advance_clock()
        host = self.lookup(self.state.hosts, host_id, "host", host_id=host_id)
        if host.state != "maintenance":
            hint = (
                f"wait until {next_step(self.data, host)}"
                if host.state == "draining"
                else "drain it into maintenance first"
                if host.state in DRAINABLE
                else "it is already restarting"
            )
            self.fail(
                "invalid_transition",
                f"cannot restart {host_id}: it is {host.state}; {hint}",
                host_id=host_id,
                state=host.state,
            )
        incident = self._authorized(host.service_id)
        host.running_config = dict(self.state.services[host.service_id].applied_config)
        host.restarted_at = iso(self.now())
        host.restarts += 1
        move(self.state, host, "recovering", self.now())
        self._log(
            host_id,
            "app.log",
            self.now(),
            f"INFO starting with configuration {config_digest(host.running_config)}",
        )
        self._change(
            incident, host.service_id, f"restart {host_id} (warm until {next_step(self.data, host)})"
        )
        return {"host_id": host_id, "state": host.state, "warm_at": next_step(self.data, host)}

    @tool(goal="put {host_id} back in rotation", consumes=["host_id"])
    def undrain_host(self, host_id: str) -> dict[str, Any]:
        """Put a recovered host back in rotation once it has warmed up without faults.

        Args:
            host_id: The host, recovering.

        Returns:
            The host's new state (healthy).
        """
        self._advance_clock()
        host = self.lookup(self.state.hosts, host_id, "host", host_id=host_id)
        if host.state != "recovering":
            self.fail(
                "invalid_transition",
                f"{host_id} is {host.state}; only a recovering host can return to rotation",
                host_id=host_id,
                state=host.state,
            )
        warm_at = next_step(self.data, host)
        if warm_at is not None and self.now() < parse_time(warm_at):
            self.fail(
                "invalid_transition",
                f"{host_id} is still warming up until {warm_at}",
                host_id=host_id,
                state=host.state,
                ready_at=warm_at,
            )
        incident = self._authorized(host.service_id)
        move(self.state, host, "healthy", self.now())
        self._change(incident, host.service_id, f"undrain {host_id} (healthy)")
        return {"host_id": host_id, "state": host.state}

    @tool(goal="run a health check of {service_id}", consumes=["service_id"], produces=["check_id"])
    def run_health_check(self, service_id: str) -> dict[str, Any]:
        """Check a service end to end: its configuration file, the applied configuration, every replica.

        Args:
            service_id: The service to check.

        Returns:
            The recorded check: id, time, passed, and the list of failures.
        """
        self._advance_clock()
        service = self.lookup(self.state.services, service_id, "service", service_id=service_id)
        failures: list[str] = []
        path = config_path(service_id)
        values, errors = self._config_file(service_id)
        failures += [f"{path}: {e}" for e in errors]
        if values is not None and values != service.applied_config:
            failures.append(f"{path} differs from the applied configuration (apply_config)")
        for host_id in service.replicas:
            host = self.state.hosts[host_id]
            if host.state != "healthy":
                failures.append(f"{host_id} is not healthy ({host.state})")
            elif host.running_config != service.applied_config:
                failures.append(f"{host_id} runs an outdated configuration (restart it)")
        check_id = f"HC-{self.state.next_check:04d}"
        self.state.next_check += 1
        check = HealthCheck(
            check_id=check_id,
            service_id=service_id,
            at=iso(self.now()),
            passed=not failures,
            failures=failures,
        )
        self.state.health_checks[check_id] = check
        incident = open_incident_for(self.state, service_id)
        if incident is not None:
            verdict = "passed" if check.passed else f"failed ({len(failures)} failure(s))"
            self._timeline(incident, f"health check {check_id} {verdict}")
        return check.model_dump()

    # -- the clock, change control and the workspace files -------------------------------------------
    def _advance_clock(self) -> None:
        """Finish drains and warm-ups whose time has come; a crashed host leaves its fault's
        signature in the logs and a line in its service's open incident. Called first by every
        domain tool."""
        for host, crash in advance_clock(self.state, self.data, self.now()):
            for name, message in fault_log(self.data, host):
                self._log(host.host_id, name, crash, message)
            self._log(host.host_id, "app.log", crash, "FATAL service exited during warm-up; giving up")
            incident = open_incident_for(self.state, host.service_id)
            if incident is not None:
                self._timeline(incident, f"{host.host_id} crashed during warm-up (down)", crash)

    def _authorized(self, service_id: str) -> Incident:
        incident = open_incident_for(self.state, service_id)
        if incident is None:
            self.fail(
                "permission_denied",
                f"no open incident authorizes changes to {service_id}; open one first (change control)",
                service_id=service_id,
                missing_permission="open_incident",
            )
        return incident

    def _change(self, incident: Incident, service_id: str, what: str) -> None:
        self.state.services[service_id].changed_at = iso(self.now())
        if incident.status == "open":
            incident.status = "mitigating"
        self._timeline(incident, what)
        self._show_status(incident)

    def _config_file(self, service_id: str) -> tuple[dict[str, Scalar] | None, list[str]]:
        """The service's configuration file parsed and validated: (values or None, errors)."""
        path = config_path(service_id)
        text = self.workspace.read_text(path) if self.workspace.exists(path) else None
        return check_config(self.data, service_id, text)

    def _read_config(self, service_id: str) -> dict[str, Scalar]:
        path = config_path(service_id)
        values, errors = self._config_file(service_id)
        if values is None:
            category = "not_found" if errors == ["file is missing"] else "invalid_argument"
            self.fail(category, f"{path} is invalid: {'; '.join(errors)}", path=path, errors=errors)
        return values

    def _unfilled_sections(self, incident: Incident) -> list[str]:
        path = record_path(incident.incident_id)
        return unfilled_sections(self.workspace.read_text(path) if self.workspace.exists(path) else "")

    def _show_status(self, incident: Incident) -> None:
        """The record's ``- Status:`` line as the incident's status is now: the record is where
        an on-call reads it (an incident left "open" there while it was mitigating was a value
        no agent could see; round 60, R3)."""
        path = record_path(incident.incident_id)
        text = self.workspace.read_text(path)
        shown = re.sub(r"(?m)^- Status: .*$", f"- Status: {incident.status}", text)
        if shown != text:
            self.workspace.write_text(path, shown)

    def _timeline(self, incident: Incident, what: str, at: datetime | None = None) -> str:
        """Append a line to the record's Timeline section (recreating a lost record or section)."""
        path = record_path(incident.incident_id)
        line = f"- {iso(at or self.now())} {what}"
        text = self.workspace.read_text(path) if self.workspace.exists(path) else new_record(incident, None)
        self.workspace.write_text(path, with_timeline_line(text, line))
        return line

    def _log(self, host_id: str, name: str, at: datetime, message: str) -> None:
        path = f"logs/{host_id}/{name}"
        old = self.workspace.read_text(path) if self.workspace.exists(path) else ""
        self.workspace.write_text(path, f"{old}{iso(at)} {host_id} {message}\n")

    # -- initial states -------------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """``3 + size`` services with 2–3 replicas each (more with ``size``); one service loses a host
        to a full disk, one OOMs, one runs a broken configuration (an incident is already open
        for it), the rest are healthy distractors; logs, configs and a past incident record."""
        generator = Generator(random.Random(seed), cls.repository(data), cls.base_time())
        state = generator.build(max(1, size))
        return Initial(state=state, files=generator.files)
