"""The seeded S0 generator behind :meth:`~.env.InfraRecovery.generate`.

Infrastructure recovery (on-call operations workspace). Runs once per initial state (seed,
size), never during a tool call; it builds the State models of ``state.py`` with the rules of
``rules.py`` (the configuration and ops record formats).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, iso

from .rules import config_path, new_record, record_path, render_config
from .state import Host, HostState, Incident, InfraState, Scalar, Service

# -- the generator ------------------------------------------------------------------------------------
BAD_CONFIGS: tuple[tuple[str, Scalar, str], ...] = (
    ("upstream_timeout_ms", "30s", "invalid value for upstream_timeout_ms: '30s' (expected int)"),
    ("log_level", "verbose", "invalid value for log_level: 'verbose' (allowed: debug, info, warn, error)"),
    ("db_pool_size", 0, "invalid value for db_pool_size: 0 (range 1-200)"),
    ("cache_backend", "redis-legacy", "invalid value for cache_backend: 'redis-legacy'"),
    ("max_conections", 50, "unknown key max_conections"),
)
NOISE = (
    "INFO GET /healthz 200 2ms",
    "INFO request completed status=200 duration_ms={n}",
    "WARN slow request path=/v1/items duration_ms={n}",
    "INFO gc pause {n}ms",
    "WARN upstream connection reset by peer; retrying",
    "INFO config reloaded from disk",
)


class Generator:
    """Builds a consistent S0: host states match the faults derived from disks and configs."""

    def __init__(self, rng: random.Random, data: Repository, base: datetime) -> None:
        self.rng, self.data, self.base = rng, data, base
        self.catalog = list(data.json("services.json")["services"])
        self.types = data.json("services.json")["host_types"]
        self.zones = list(data.json("services.json")["zones"])
        self.state = InfraState()
        self.files: dict[str, str] = {}

    def build(self, size: int) -> InfraState:
        chosen = self.rng.sample(self.catalog, min(len(self.catalog), 3 + size))
        faults = ["disk_full", "oom", "bad_config"] + [""] * (len(chosen) - 3)
        for info, fault in zip(chosen, faults, strict=True):
            self._service(info, fault, 2 + self.rng.randint(0, 1) + (size - 1))
        extra_disk = [s for s, f in zip(chosen, faults, strict=True) if not f][: size - 1]
        for info in extra_disk:
            self._fill_disk(self.state.services[info["service_id"]].replicas[-1])
        self._past_incident()
        for service in self.state.services.values():
            service.changed_at = max(self.state.hosts[h].state_since for h in service.replicas)
        return self.state

    def _service(self, info: Any, fault: str, replicas: int) -> None:
        service_id = info["service_id"]
        peak = info["peak_memory_mb"]
        memory = (-(-peak * 125 // 100) // 512 + 1 + self.rng.randint(0, 2)) * 512
        host_type = self.rng.choice([t for t in sorted(self.types) if memory <= self._ram(t) * 80 // 100])
        config: dict[str, Scalar] = {
            "service": service_id,
            "port": info["port"],
            "workers": self.rng.choice((4, 8, 16)),
            "memory_limit_mb": memory if fault != "oom" else max(256, (peak // 2 // 128) * 128),
            "db_pool_size": self.rng.choice((10, 20, 40)),
            "upstream_timeout_ms": self.rng.choice((2000, 3000, 5000)),
            "log_level": "info",
            "cache_backend": self.rng.choice(("redis", "memcached")),
        }
        log_error = ""
        if fault == "bad_config":
            key, value, log_error = self.rng.choice(BAD_CONFIGS)
            config[key] = value
        self.files[config_path(service_id)] = f"# {service_id} ({info['team']})\n" + render_config(config)
        # A configuration fault came with tonight's deploy, which restarted every replica; otherwise
        # the hosts have run untouched for days since the last deploy.
        deploy = self.base - timedelta(hours=self.rng.randint(1, 3), minutes=self.rng.randint(0, 59))
        if fault in ("oom", "bad_config"):
            started = [deploy + timedelta(minutes=2 * (n + 1)) for n in range(replicas)]
        else:
            started = [self.base - timedelta(days=self.rng.randint(2, 40)) for _ in range(replicas)]
            deploy = min(started) - timedelta(hours=1)
        hosts = []
        for n in range(replicas):
            zone = self.zones[n % len(self.zones)]
            host_id = f"{info['prefix']}-{zone[-1]}{n // len(self.zones) + 1}"
            hosts.append(host_id)
            total = self.types[host_type]["disk_gb"]
            disk = {
                "/var/lib/app": total * self.rng.randint(15, 30) // 100,
                "/var/log/app": self.rng.randint(1, 4),
                "/var/log/app/archive": total * self.rng.randint(5, 25) // 100,
                "/var/crash": self.rng.randint(0, 2),
                "/tmp": self.rng.randint(0, 2),
            }
            self.state.hosts[host_id] = Host(
                host_id=host_id,
                service_id=service_id,
                zone=zone,
                host_type=host_type,
                state="healthy",
                state_since=iso(started[n]),
                disk_total_gb=total,
                disk_used_gb=disk,
                running_config=dict(config),
                restarted_at=iso(started[n]),
                restarts=self.rng.randint(0, 3),
            )
            self._logs(host_id, service_id, "")
        self.state.services[service_id] = Service(
            service_id=service_id,
            replicas=hosts,
            applied_config=config,
            applied_at=iso(deploy),
            changed_at=iso(max(started)),
        )
        if fault == "disk_full":
            self._fill_disk(hosts[0])
        elif fault == "oom":
            for i, host_id in enumerate(hosts):
                self._break(host_id, "down" if i == 0 else "degraded", "oom", peak)
        elif fault == "bad_config":
            for host_id in hosts:
                self._break(host_id, "degraded", log_error, peak)
            self._open_incident(service_id)

    def _ram(self, host_type: str) -> int:
        return int(self.types[host_type]["memory_mb"])

    def _fill_disk(self, host_id: str) -> None:
        """Fill one purgeable directory so that only purging it brings the disk under 90%."""
        host = self.state.hosts[host_id]
        culprit = self.rng.choice(("/var/log/app/archive", "/var/crash"))
        for path in ("/var/log/app/archive", "/var/crash", "/tmp"):
            host.disk_used_gb[path] = 1
        others = sum(v for k, v in host.disk_used_gb.items() if k != culprit)
        host.disk_used_gb[culprit] = host.disk_total_gb * self.rng.randint(94, 98) // 100 - others
        self._break(host_id, self.rng.choice(("down", "degraded")), "disk_full", 0)

    def _break(self, host_id: str, state: HostState, fault: str, peak: int) -> None:
        host = self.state.hosts[host_id]
        host.state = state
        host.state_since = iso(self.base - timedelta(minutes=self.rng.randint(8, 35)))
        self._logs(host_id, host.service_id, fault, peak)

    def _logs(self, host_id: str, service_id: str, fault: str, peak: int = 0) -> None:
        """An hour of log lines before the base time; the fault's signature if there is one."""
        app, syslog = [], []
        start = self.base - timedelta(minutes=60)
        for minute in range(0, 60, 3):
            at = iso(start + timedelta(minutes=minute, seconds=self.rng.randint(0, 59)))
            app.append(f"{at} {host_id} {self.rng.choice(NOISE).format(n=self.rng.randint(40, 900))}")
            if minute % 15 == 0:
                syslog.append(
                    f"{at} {host_id} systemd[1]: Started Session {self.rng.randint(100, 999)} of user deploy."
                )
        if fault == "disk_full":
            for minute in sorted(self.rng.sample(range(30, 60), 5)):
                at = iso(start + timedelta(minutes=minute))
                app.append(
                    f"{at} {host_id} ERROR failed to write /var/log/app/current.log: No space left on device"
                )
        elif fault == "oom":
            rss = [peak] + [self.rng.randint(peak * 7 // 10, peak) for _ in range(3)]
            self.rng.shuffle(rss)
            for i, minute in enumerate(sorted(self.rng.sample(range(20, 60), len(rss)))):
                at = iso(start + timedelta(minutes=minute))
                pid = self.rng.randint(20000, 60000)
                syslog.append(
                    f"{at} {host_id} kernel: Memory cgroup out of memory: Killed process {pid} "
                    f"({service_id}) total-vm:{rss[i] * 1700}kB, anon-rss:{rss[i] * 1024}kB, file-rss:0kB"
                )
                app.append(f"{at} {host_id} ERROR worker {i + 1} exited unexpectedly (signal 9, SIGKILL)")
        elif fault:
            for minute in sorted(self.rng.sample(range(25, 60), 4)):
                at = iso(start + timedelta(minutes=minute))
                app.append(
                    f"{at} {host_id} ERROR config: {fault}; falling back to defaults, requests failing"
                )
        self.files[f"logs/{host_id}/app.log"] = "\n".join(sorted(app)) + "\n"
        self.files[f"logs/{host_id}/syslog.log"] = "\n".join(sorted(syslog)) + "\n"

    def _open_incident(self, service_id: str) -> None:
        incident_id = f"INC-{self.state.next_incident}"
        self.state.next_incident += 1
        opened = iso(self.base - timedelta(minutes=6))
        incident = Incident(
            incident_id=incident_id,
            service_id=service_id,
            severity="sev2",
            title=f"{service_id} error rate above 5%",
            status="open",
            opened_at=opened,
        )
        self.state.incidents[incident_id] = incident
        self.files[record_path(incident_id)] = new_record(
            incident, f"{opened} opened by on-call: error rate alert"
        )

    def _past_incident(self) -> None:
        """A closed incident from last week: history, and a near-duplicate of today's faults."""
        service_id = self.rng.choice(sorted(self.state.services))
        opened = self.base - timedelta(days=6, hours=self.rng.randint(1, 20))
        incident = Incident(
            incident_id="INC-2031",
            service_id=service_id,
            severity="sev3",
            title=f"{service_id} disk usage above 85% on one replica",
            status="closed",
            opened_at=iso(opened),
            closed_at=iso(opened + timedelta(minutes=48)),
            root_cause="disk_full",
        )
        self.state.incidents["INC-2031"] = incident
        host_id = self.state.services[service_id].replicas[0]
        text = new_record(incident, f"{iso(opened)} opened: disk alert on {host_id}")
        text = text.replace(
            "## Root cause\nTBD", f"## Root cause\nRotated logs filled /var/log/app/archive on {host_id}."
        )
        text = text.replace(
            "## Resolution\nTBD",
            "## Resolution\nPurged /var/log/app/archive; log rotation retention reduced.",
        )
        self.files[record_path("INC-2031")] = text
