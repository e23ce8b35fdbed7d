"""infra_recovery: the host state machine and its guards, every tool's success path and error
categories, end-to-end recoveries through workspace files, invariants under random call
sequences, and determinism."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from links_support import refile, refusal

from envcraft import Session
from envcraft.core import is_error, load_package, state_hash

ENV = "infra_recovery"
PKG = load_package(ENV)
PACKAGE = PKG.env_class.__module__.rpartition(".")[0]
MODELS = sys.modules[PACKAGE + ".state"]  # the State models
RULES = sys.modules[PACKAGE + ".rules"]  # the config and ops record formats
SCHEMA = PKG.data.json("config_schema.json")

CONFIGS = {
    "checkout-api": "# checkout\nservice: checkout-api\nport: 8080\nworkers: 8\nmemory_limit_mb: 2048\n"
    "upstream_timeout_ms: 3000\nlog_level: info\n",
    "auth-service": "service: auth-service\nport: 9000\nworkers: 4\nmemory_limit_mb: 512\n"
    "upstream_timeout_ms: 2000\nlog_level: info\n",
    "notification-worker": "service: notification-worker\nport: 7300\nworkers: 4\nmemory_limit_mb: 1024\n"
    "upstream_timeout_ms: 30s\nlog_level: info\n",
}
LOGS = {
    "checkout-a1": "2026-02-17T02:00:00Z checkout-a1 ERROR failed to write /var/log/app/current.log: "
    "No space left on device\n",
    "checkout-b1": "2026-02-17T02:00:00Z checkout-b1 INFO GET /healthz 200 2ms\n",
    "checkout-c1": "2026-02-17T02:00:00Z checkout-c1 WARN upstream connection reset by peer; retrying\n",
    "auth-a1": "2026-02-17T01:50:00Z auth-a1 kernel: Memory cgroup out of memory: Killed process 4242 "
    "(auth-service) total-vm:1870000kB, anon-rss:1126400kB, file-rss:0kB\n",
    "auth-b1": "2026-02-17T01:55:00Z auth-b1 kernel: Memory cgroup out of memory: Killed process 4243 "
    "(auth-service) total-vm:1500000kB, anon-rss:921600kB, file-rss:0kB\n",
    "notify-a1": "2026-02-17T02:01:00Z notify-a1 ERROR config: invalid value for upstream_timeout_ms: 30s\n",
    "notify-b1": "2026-02-17T02:02:00Z notify-b1 ERROR config: invalid value for upstream_timeout_ms: 30s\n",
}
DISK_OK = {"/var/lib/app": 20, "/var/log/app": 2, "/var/log/app/archive": 8, "/var/crash": 1, "/tmp": 1}
DISK_FULL = {"/var/lib/app": 20, "/var/log/app": 2, "/var/log/app/archive": 1, "/var/crash": 72, "/tmp": 1}


def config(service_id: str) -> dict[str, Any]:
    values, errors = RULES.parse_config(CONFIGS[service_id])
    assert not errors
    return values


def host(host_id: str, service_id: str, state: str, disk: dict[str, int] = DISK_OK) -> dict[str, Any]:
    return {
        "host_id": host_id,
        "service_id": service_id,
        "zone": f"eu-west-1{host_id[-2]}",
        "host_type": "c6.large",
        "state": state,
        "state_since": "2026-02-17T01:55:00Z",
        "disk_total_gb": 100,
        "disk_used_gb": dict(disk),
        "running_config": config(service_id),
        "restarted_at": "2026-02-16T00:00:00Z",
    }


def service(service_id: str, replicas: list[str]) -> dict[str, Any]:
    return {
        "service_id": service_id,
        "replicas": replicas,
        "applied_config": config(service_id),
        "applied_at": "2026-02-17T01:00:00Z",
        "changed_at": "2026-02-17T01:55:00Z",
    }


OPEN = {
    "incident_id": "INC-2041",
    "service_id": "notification-worker",
    "severity": "sev2",
    "title": "notification-worker error rate above 5%",
    "status": "open",
    "opened_at": "2026-02-17T02:04:00Z",
}
STATE: dict[str, Any] = {
    "hosts": {
        h["host_id"]: h
        for h in (
            host("checkout-a1", "checkout-api", "down", DISK_FULL),
            host("checkout-b1", "checkout-api", "healthy"),
            host("checkout-c1", "checkout-api", "healthy"),
            host("auth-a1", "auth-service", "down"),
            host("auth-b1", "auth-service", "degraded"),
            host("notify-a1", "notification-worker", "degraded"),
            host("notify-b1", "notification-worker", "degraded"),
        )
    },
    "services": {
        "checkout-api": service("checkout-api", ["checkout-a1", "checkout-b1", "checkout-c1"]),
        "auth-service": service("auth-service", ["auth-a1", "auth-b1"]),
        "notification-worker": service("notification-worker", ["notify-a1", "notify-b1"]),
    },
    "incidents": {"INC-2041": OPEN},
    "health_checks": {},
    "next_incident": 2042,
    "next_check": 1,
}


def files() -> dict[str, str]:
    found = dict(PKG.workspace_template)
    found.update({f"configs/{s}.yaml": text for s, text in CONFIGS.items()})
    found.update({f"logs/{h}/app.log": text for h, text in LOGS.items() if "kernel" not in text})
    found.update({f"logs/{h}/syslog.log": text for h, text in LOGS.items() if "kernel" in text})
    incident = MODELS.Incident.model_validate(OPEN)
    found["ops/incident-INC-2041.md"] = RULES.new_record(incident, "opened by on-call")
    return found


@pytest.fixture
def session() -> Iterator[Session]:
    with Session.memory(ENV, state=copy.deepcopy(STATE), files=files()) as s:
        yield s


def call(s: Session, tool: str, **args: Any) -> dict[str, Any]:
    result = s.call(tool, args)
    assert not is_error(result), result
    return result


def fails(s: Session, tool: str, category: str, **args: Any) -> dict[str, Any]:
    before, before_files = s.state(), s.files()
    result = s.call(tool, args)
    assert is_error(result), result
    assert result["error"]["category"] == category, result
    assert s.state() == before and s.files() == before_files
    return result["error"]


def wait(s: Session, minutes: int) -> None:
    for _ in range(minutes):
        call(s, "list_hosts")


def state_of(s: Session, host_id: str) -> str:
    return str(s.state()["hosts"][host_id]["state"])


def fill_record(s: Session, incident_id: str) -> None:
    path = f"ops/incident-{incident_id}.md"
    call(s, "edit_file", path=path, old="## Root cause\nTBD", new="## Root cause\nThe fault.")
    call(s, "edit_file", path=path, old="## Resolution\nTBD", new="## Resolution\nFixed it.")


def cycle(s: Session, host_id: str, drain: int = 2, warm: int = 2, purge: str = "") -> None:
    """Drain, (purge,) restart and undrain one host, waiting out the timers."""
    call(s, "drain_host", host_id=host_id)
    wait(s, drain - 1)
    if purge:
        call(s, "purge_disk", host_id=host_id, path=purge)
    call(s, "restart_host", host_id=host_id)
    wait(s, warm - 1)
    call(s, "undrain_host", host_id=host_id)


# -- the generator -------------------------------------------------------------------------------------
def test_generated_world_is_consistent() -> None:
    with Session.memory(ENV, seed=4) as s:
        state, workspace = s.state(), s.files()
        assert {"runbooks/README.md", "ops/incident-INC-2031.md"} <= set(workspace)
        broken = [h for h in state["hosts"].values() if h["state"] != "healthy"]
        assert {h["service_id"] for h in broken} and len(state["services"]) == 4
        for host_id, h in state["hosts"].items():
            assert f"logs/{host_id}/app.log" in workspace
            report = call(s, "run_diagnostic", host_id=host_id)
            if h["state"] == "healthy":
                assert report["findings"] == [] and report["disk"]["used_pct"] < 90
            else:
                assert report["findings"], host_id
        for service_id, svc in state["services"].items():
            values, errors = RULES.parse_config(workspace[f"configs/{service_id}.yaml"])
            assert not errors and values == svc["applied_config"]
            assert any(state["hosts"][h]["state"] in ("healthy", "degraded") for h in svc["replicas"])
        assert sum(i["status"] == "open" for i in state["incidents"].values()) == 1


def test_size_scales_and_seeds_are_deterministic() -> None:
    with Session.memory(ENV, seed=2) as a, Session.memory(ENV, seed=2) as b, Session.memory(ENV, seed=3) as c:
        assert a.snapshot_hash() == b.snapshot_hash() != c.snapshot_hash()
    with Session.memory(ENV, seed=2, size=3) as big:
        assert len(big.state()["hosts"]) > 12 and len(big.state()["services"]) == 6


def test_same_calls_same_final_state(session: Session) -> None:
    def run(s: Session) -> str:
        call(s, "open_incident", service_id="checkout-api", severity="sev3", title="disk")
        cycle(s, "checkout-a1", purge="/var/crash")
        call(s, "run_health_check", service_id="checkout-api")
        return s.snapshot_hash()

    with Session.memory(ENV, state=copy.deepcopy(STATE), files=files()) as other:
        assert run(session) == run(other)


# -- reads -----------------------------------------------------------------------------------------------
def test_list_services_and_hosts(session: Session) -> None:
    services = {s["service_id"]: s for s in call(session, "list_services")["services"]}
    assert (
        services["auth-service"]["serving"] == 1
        and services["notification-worker"]["open_incident"] == "INC-2041"
    )
    assert services["checkout-api"]["replicas"]["checkout-a1"] == "down"
    down = call(session, "list_hosts", state="down")["hosts"]
    assert [h["host_id"] for h in down] == ["auth-a1", "checkout-a1"] and down[1]["disk_used_pct"] == 96
    assert call(session, "list_hosts", service_id="auth-service")["count"] == 2
    fails(session, "list_hosts", "not_found", service_id="billing")
    fails(session, "list_hosts", "invalid_argument", state="broken")


def test_get_host_and_diagnostics_read_the_logs(session: Session) -> None:
    info = call(session, "get_host", host_id="auth-a1")
    assert (info["state"], info["memory_limit_mb"], info["next_step_at"]) == ("down", 512, None)
    oom = call(session, "run_diagnostic", host_id="auth-a1")["findings"]
    assert [f["code"] for f in oom] == ["oom_kill"] and oom[0]["peak_rss_mb"] == 1100
    disk = call(session, "run_diagnostic", host_id="checkout-a1")
    assert disk["findings"][0]["runbook"] == "runbooks/disk-full.md"
    assert next(iter(disk["disk"]["by_path_gb"])) == "/var/crash"
    config = call(session, "run_diagnostic", host_id="notify-b1")["findings"]
    assert config[0]["code"] == "bad_config"
    fails(session, "get_host", "not_found", host_id="auth-z9")
    fails(session, "run_diagnostic", "not_found", host_id="auth-z9")


def test_diagnostic_without_logs_reports_metrics_only(session: Session) -> None:
    root = session.workspace_root
    assert root is not None
    for path in (root / "logs" / "checkout-a1").iterdir():
        path.unlink()
    report = call(session, "run_diagnostic", host_id="checkout-a1")
    assert [f["code"] for f in report["findings"]] == ["disk_usage_high"]  # from the metrics alone
    assert report["disk"]["used_pct"] == 96


# -- incidents -------------------------------------------------------------------------------------------
def test_open_incident_writes_the_record(session: Session) -> None:
    opened = call(
        session, "open_incident", service_id="checkout-api", severity="sev3", title="checkout-a1 disk full"
    )
    assert opened == {"incident_id": "INC-2042", "status": "open", "record": "ops/incident-INC-2042.md"}
    record = session.files()["ops/incident-INC-2042.md"]
    assert "- Service: checkout-api" in record and "## Root cause\nTBD" in record
    error = fails(
        session, "open_incident", "conflict", service_id="notification-worker", severity="sev2", title="x"
    )
    assert error["incident_id"] == "INC-2041"
    fails(session, "open_incident", "not_found", service_id="billing", severity="sev2", title="x")
    fails(session, "open_incident", "invalid_argument", service_id="auth-service", severity="sev2", title=" ")
    fails(session, "open_incident", "invalid_argument", service_id="auth-service", severity="sev9", title="x")
    fails(session, "open_incident", "missing_field", service_id="auth-service", severity="sev2")


def test_append_ops_note(session: Session) -> None:
    line = call(session, "append_ops_note", incident_id="INC-2041", note="upstream_timeout_ms has a unit")[
        "line"
    ]
    record = session.files()["ops/incident-INC-2041.md"]
    timeline = record.split("## Timeline")[1].split("## Root cause")[0]
    assert line in timeline
    fails(session, "append_ops_note", "invalid_argument", incident_id="INC-2041", note="   ")
    fails(session, "append_ops_note", "not_found", incident_id="INC-1", note="x")


def test_a_lost_timeline_section_is_recreated(session: Session) -> None:
    call(session, "write_file", path="ops/incident-INC-2041.md", content="# INC-2041\n\n## Root cause\nTBD\n")
    call(session, "append_ops_note", incident_id="INC-2041", note="rewrote the record")
    assert session.files()["ops/incident-INC-2041.md"].rstrip().endswith("rewrote the record")


# -- the disk-full recovery, end to end ------------------------------------------------------------------
def test_disk_full_recovery_end_to_end(session: Session) -> None:
    fails(session, "drain_host", "permission_denied", host_id="checkout-a1")  # 02:10
    error = fails(session, "restart_host", "invalid_transition", host_id="checkout-b1")
    assert "drain it into maintenance first" in error["message"]
    incident = call(session, "open_incident", service_id="checkout-api", severity="sev3", title="disk")[
        "incident_id"
    ]
    drained = call(session, "drain_host", host_id="checkout-a1")  # 02:13
    assert drained["state"] == "draining" and drained["maintenance_at"] == "2026-02-17T02:15:00Z"
    error = fails(session, "purge_disk", "invalid_transition", host_id="checkout-a1", path="/var/crash")
    assert error["state"] == "draining"
    assert call(session, "get_host", host_id="checkout-a1")["state"] == "maintenance"  # 02:15
    freed = call(session, "purge_disk", host_id="checkout-a1", path="/var/crash/")
    assert (freed["freed_gb"], freed["disk_used_pct"]) == (72, 24)
    assert "ops: purged /var/crash (freed 72G)" in session.files()["logs/checkout-a1/syslog.log"]
    assert call(session, "restart_host", host_id="checkout-a1")["warm_at"] == "2026-02-17T02:19:00Z"
    error = fails(session, "undrain_host", "invalid_transition", host_id="checkout-a1")
    assert error["ready_at"] == "2026-02-17T02:19:00Z"
    wait(session, 1)
    assert call(session, "undrain_host", host_id="checkout-a1")["state"] == "healthy"
    assert call(session, "run_diagnostic", host_id="checkout-a1")["findings"] == []  # clean since the restart
    check = call(session, "run_health_check", service_id="checkout-api")
    assert check["passed"] and check["failures"] == []
    error = fails(session, "close_incident", "conflict", incident_id=incident, root_cause="disk_full")
    assert error["missing_sections"] == ["## Root cause", "## Resolution"]
    fill_record(session, incident)
    closed = call(session, "close_incident", incident_id=incident, root_cause="disk_full")
    assert closed["status"] == "closed" and closed["health_check_id"] == check["check_id"]
    record = session.files()[f"ops/incident-{incident}.md"]
    assert "- Status: closed" in record
    for step in (
        "drain checkout-a1",
        "purge /var/crash",
        "restart checkout-a1",
        "undrain checkout-a1",
        "closed",
    ):
        assert step in record
    fails(session, "close_incident", "invalid_transition", incident_id=incident, root_cause="disk_full")
    fails(session, "append_ops_note", "invalid_transition", incident_id=incident, note="late")
    fails(session, "drain_host", "permission_denied", host_id="checkout-b1")


def test_restarting_with_the_fault_still_there_crashes_back_down(session: Session) -> None:
    call(session, "open_incident", service_id="checkout-api", severity="sev3", title="disk")
    call(session, "drain_host", host_id="checkout-a1")
    wait(session, 1)
    call(session, "restart_host", host_id="checkout-a1")  # the disk is still full
    assert state_of(session, "checkout-a1") == "recovering"
    wait(session, 2)
    assert state_of(session, "checkout-a1") == "down"
    assert "crashed during warm-up" in session.files()["ops/incident-INC-2042.md"]
    assert "FATAL" in session.files()["logs/checkout-a1/app.log"]
    findings = call(session, "run_diagnostic", host_id="checkout-a1")["findings"]  # since the restart
    assert [f["code"] for f in findings] == ["disk_full", "disk_usage_high"] and findings[0][
        "occurrences"
    ] == 1
    call(session, "drain_host", host_id="checkout-a1")  # a crashed host can be drained again


def test_purge_disk_guards(session: Session) -> None:
    call(session, "open_incident", service_id="checkout-api", severity="sev3", title="disk")
    call(session, "drain_host", host_id="checkout-a1")
    wait(session, 1)
    error = fails(session, "purge_disk", "permission_denied", host_id="checkout-a1", path="/var/lib/app")
    assert error["missing_permission"] == "purge_protected_path" and error["host_id"] == "checkout-a1"
    fails(session, "purge_disk", "invalid_argument", host_id="checkout-a1", path="/etc")
    fails(session, "purge_disk", "not_found", host_id="nope-a1", path="/tmp")
    call(session, "purge_disk", host_id="checkout-a1", path="/tmp")
    fails(session, "purge_disk", "conflict", host_id="checkout-a1", path="/tmp")


# -- replica safety and the OOM recovery ------------------------------------------------------------------
def test_drain_refuses_the_last_healthy_and_the_last_serving_replica(session: Session) -> None:
    call(session, "open_incident", service_id="checkout-api", severity="sev3", title="disk")
    call(session, "drain_host", host_id="checkout-b1")  # c1 stays healthy
    error = fails(session, "drain_host", "conflict", host_id="checkout-c1")
    assert "last healthy" in error["message"]
    fails(session, "drain_host", "invalid_transition", host_id="checkout-b1")
    call(session, "open_incident", service_id="auth-service", severity="sev2", title="oom")
    error = fails(session, "drain_host", "conflict", host_id="auth-b1")  # a1 is down: b1 serves alone
    assert "serving" in error["message"]


def test_oom_recovery_needs_config_headroom_and_a_rolling_restart(session: Session) -> None:
    fails(session, "apply_config", "permission_denied", service_id="auth-service")
    incident = call(session, "open_incident", service_id="auth-service", severity="sev2", title="oom")[
        "incident_id"
    ]
    error = fails(session, "apply_config", "conflict", service_id="auth-service")
    assert error["minimum"] == 1375  # peak 1100 MB + 25%
    path = "configs/auth-service.yaml"
    call(session, "edit_file", path=path, old="memory_limit_mb: 512", new="memory_limit_mb: 4000")
    assert fails(session, "apply_config", "conflict", service_id="auth-service")["maximum"] == 3276
    call(session, "edit_file", path=path, old="memory_limit_mb: 4000", new="memory_limit_mb: 1375")
    applied = call(session, "apply_config", service_id="auth-service")
    assert applied["hosts_to_restart"] == ["auth-a1", "auth-b1"]
    fails(session, "apply_config", "conflict", service_id="auth-service")  # already applied
    failed = call(session, "run_health_check", service_id="auth-service")
    assert not failed["passed"] and "auth-a1 is not healthy (down)" in failed["failures"]
    cycle(session, "auth-a1")
    cycle(session, "auth-b1")  # allowed now that auth-a1 serves
    assert call(session, "run_health_check", service_id="auth-service")["passed"]
    fill_record(session, incident)
    call(session, "close_incident", incident_id=incident, root_cause="oom")


def test_bad_config_is_validated_from_the_file(session: Session) -> None:
    path = "configs/notification-worker.yaml"
    error = fails(session, "apply_config", "invalid_argument", service_id="notification-worker")
    assert error["errors"] == ["invalid value for upstream_timeout_ms: '30s' (expected int)"]
    call(session, "write_file", path=path, content="service: notification-worker\n  port: 7300\n")
    error = fails(session, "apply_config", "invalid_argument", service_id="notification-worker")
    assert "line 2: unexpected indentation" in error["errors"][0]
    call(session, "write_file", path=path, content=CONFIGS["notification-worker"].replace("30s", "3000"))
    check = call(session, "run_health_check", service_id="notification-worker")
    assert f"{path} differs from the applied configuration (apply_config)" in check["failures"]
    call(session, "apply_config", service_id="notification-worker")
    cycle(session, "notify-a1", drain=1, warm=1)
    stale = call(session, "run_health_check", service_id="notification-worker")["failures"]
    assert stale == ["notify-b1 is not healthy (degraded)"]
    cycle(session, "notify-b1", drain=1, warm=1)
    assert call(session, "run_health_check", service_id="notification-worker")["passed"]


def test_apply_config_and_health_check_with_a_missing_file(session: Session) -> None:
    root = session.workspace_root
    assert root is not None
    (root / "configs" / "notification-worker.yaml").unlink()
    fails(session, "apply_config", "not_found", service_id="notification-worker")
    assert (
        "file is missing"
        in call(session, "run_health_check", service_id="notification-worker")["failures"][0]
    )
    fails(session, "apply_config", "not_found", service_id="billing")
    fails(session, "run_health_check", "not_found", service_id="billing")


def test_a_healthy_service_config_change_needs_every_replica_restarted(session: Session) -> None:
    call(session, "open_incident", service_id="checkout-api", severity="sev3", title="tuning")
    call(session, "edit_file", path="configs/checkout-api.yaml", old="workers: 8", new="workers: 12")
    call(session, "apply_config", service_id="checkout-api")
    failures = call(session, "run_health_check", service_id="checkout-api")["failures"]
    assert "checkout-b1 runs an outdated configuration (restart it)" in failures


# -- restart/undrain/close guards --------------------------------------------------------------------------
def test_restart_and_undrain_guards() -> None:
    state = copy.deepcopy(STATE)
    state["hosts"]["checkout-b1"]["state"] = "maintenance"
    state["hosts"]["checkout-c1"]["state"] = "recovering"
    with Session.memory(ENV, state=state, files=files()) as s:
        error = fails(s, "restart_host", "permission_denied", host_id="checkout-b1")
        assert error["missing_permission"] == "open_incident"
        fails(s, "undrain_host", "permission_denied", host_id="checkout-c1")
        fails(s, "restart_host", "invalid_transition", host_id="checkout-c1")
        fails(s, "restart_host", "not_found", host_id="x-1")
        fails(s, "undrain_host", "invalid_transition", host_id="checkout-b1")
        fails(s, "undrain_host", "not_found", host_id="x-1")


def test_close_needs_a_fresh_passing_check(session: Session) -> None:
    fill_record(session, "INC-2041")
    error = fails(session, "close_incident", "conflict", incident_id="INC-2041", root_cause="bad_config")
    assert "no health check" in error["message"]
    check = call(session, "run_health_check", service_id="notification-worker")
    error = fails(session, "close_incident", "conflict", incident_id="INC-2041", root_cause="bad_config")
    assert error["check_id"] == check["check_id"] and error["failures"] == check["failures"]
    fails(session, "close_incident", "not_found", incident_id="INC-9", root_cause="oom")
    fails(session, "close_incident", "invalid_argument", incident_id="INC-2041", root_cause="gremlins")


# -- invariants under random call sequences ------------------------------------------------------------------
EDGES = {
    ("healthy", "draining"),
    ("degraded", "draining"),
    ("down", "draining"),
    ("draining", "maintenance"),
    ("maintenance", "recovering"),
    ("recovering", "down"),
    ("recovering", "healthy"),
}


def reachable(before: str, after: str, steps: int = 3) -> bool:
    frontier = {before}
    for _ in range(steps):
        if after in frontier:
            return True
        frontier |= {b for a, b in EDGES if a in frontier}
    return after in frontier


def faults(h: dict[str, Any]) -> list[str]:
    found = []
    if sum(h["disk_used_gb"].values()) * 100 // h["disk_total_gb"] >= 90:
        found.append("disk")
    if RULES.validate_config(h["running_config"], SCHEMA, h["service_id"]):
        found.append("config")
    else:
        peak = next(
            s for s in PKG.data.json("services.json")["services"] if s["service_id"] == h["service_id"]
        )
        if h["running_config"]["memory_limit_mb"] < peak["peak_memory_mb"]:
            found.append("oom")
    return found


def check_invariants(
    before: dict[str, Any], after: dict[str, Any], workspace: dict[str, str], s0_time: str
) -> None:
    for host_id, h in after["hosts"].items():
        assert reachable(before["hosts"][host_id]["state"], h["state"]), (before["hosts"][host_id], h)
        if h["state"] == "healthy":
            assert faults(h) == [], h
    for service_id, svc in after["services"].items():
        for states in (("healthy",), ("healthy", "degraded")):
            had = any(before["hosts"][r]["state"] in states for r in svc["replicas"])
            has = any(after["hosts"][r]["state"] in states for r in svc["replicas"])
            assert has or not had, (service_id, states)
        if svc["applied_at"] > s0_time:
            assert RULES.validate_config(svc["applied_config"], SCHEMA, service_id) == []
        active = [
            i
            for i in after["incidents"].values()
            if i["service_id"] == service_id and i["status"] != "closed"
        ]
        assert len(active) <= 1
    for incident_id, incident in after["incidents"].items():
        assert f"ops/incident-{incident_id}.md" in workspace
        if incident["status"] == "closed" and incident["health_check_id"]:
            check = after["health_checks"][incident["health_check_id"]]
            assert check["passed"] and check["service_id"] == incident["service_id"]


PEAKS = {s["service_id"]: s["peak_memory_mb"] for s in PKG.data.json("services.json")["services"]}
REPAIRS = {"upstream_timeout_ms": 3000, "log_level": "info", "db_pool_size": 20, "cache_backend": "redis"}


def repaired(service_id: str, applied: dict[str, Any]) -> str:
    """What a competent operator writes: known keys, valid values, enough memory."""
    values = {k: v for k, v in applied.items() if k in SCHEMA["keys"]}
    for key, value in list(values.items()):
        if RULES.validate_config({key: value}, SCHEMA, service_id) and key in REPAIRS:
            values[key] = REPAIRS[key]
    values["memory_limit_mb"] = max(int(values["memory_limit_mb"]), -(-PEAKS[service_id] * 125 // 100))
    return str(RULES.render_config(values))


def draw_call_purge(h: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    disk = h["disk_used_gb"]
    biggest = max(("/var/log/app/archive", "/var/crash", "/tmp"), key=lambda p: disk[p])
    return "purge_disk", {"host_id": h["host_id"], "path": biggest}


def draw_call(data: st.DataObject, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A random call, focused most of the time on a service under an open incident so that calls
    chain into deep states (maintenance, recovering, closed) instead of bouncing off guards."""
    pick = lambda xs: data.draw(st.sampled_from(sorted(xs)))  # noqa: E731
    active = [i["service_id"] for i in state["incidents"].values() if i["status"] != "closed"]
    focused = active and data.draw(st.integers(0, 9)) < 7
    service_id = pick(active) if focused else pick(state["services"])
    host_id = pick(state["services"][service_id]["replicas"]) if focused else pick(state["hosts"])
    incidents = sorted(state["incidents"])
    tool = data.draw(
        st.sampled_from(
            [
                "list_services", "list_hosts", "get_host", "run_diagnostic", "open_incident",
                "append_ops_note", "close_incident", "drain_host", "drain_host", "purge_disk", "apply_config",
                "restart_host", "restart_host", "undrain_host", "undrain_host", "run_health_check",
                "edit_file", "fill_record", "repair_config", "next_step", "next_step", "next_step",
            ]
        )
    )  # fmt: skip
    if tool in ("get_host", "run_diagnostic", "drain_host", "restart_host", "undrain_host"):
        return tool, {"host_id": host_id}
    if tool == "list_hosts":
        return tool, {"service_id": service_id}
    if tool in ("apply_config", "run_health_check"):
        return tool, {"service_id": service_id}
    if tool == "open_incident":
        return tool, {
            "service_id": pick(state["services"]),
            "severity": pick(["sev2", "sev3"]),
            "title": "alert",
        }
    if tool == "append_ops_note":
        return tool, {"incident_id": pick(incidents), "note": "looked at logs"}
    if tool == "close_incident":
        return tool, {"incident_id": pick(incidents), "root_cause": pick(["disk_full", "oom", "bad_config"])}
    if tool == "purge_disk":
        return tool, {"host_id": host_id, "path": pick(["/var/crash", "/tmp", "/var/lib/app"])}
    if tool == "next_step":  # the natural next move for the host's state
        h = state["hosts"][host_id]
        if h["state"] == "maintenance" and faults(h)[:1] == ["disk"]:
            return draw_call_purge(h)
        step = {"draining": "get_host", "maintenance": "restart_host", "recovering": "undrain_host"}
        return step.get(h["state"], "drain_host"), {"host_id": host_id}
    if tool == "repair_config":
        content = repaired(service_id, state["services"][service_id]["applied_config"])
        return "write_file", {"path": f"configs/{service_id}.yaml", "content": content}
    if tool == "fill_record":
        path = f"ops/incident-{pick(incidents)}.md"
        return "edit_file", {"path": path, "old": "\nTBD\n", "new": "\nDone.\n", "replace_all": True}
    if tool == "edit_file":
        old, new = pick([("512", "1536"), ("30s", "3000"), ("verbose", "info"), ("workers: 4", "workers: 6")])
        return tool, {"path": f"configs/{service_id}.yaml", "old": old, "new": new}
    return tool, {}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 4), data=st.data())
def test_random_call_sequences_never_raise_and_keep_invariants(seed: int, data: st.DataObject) -> None:
    with Session.memory(ENV, seed=seed) as s:
        s0_time = s.env.clock.base_time.strftime("%Y-%m-%dT%H:%M:%SZ")
        calls = []
        for _ in range(data.draw(st.integers(10, 35))):
            before = s.state()
            tool, args = draw_call(data, before)
            result = s.call(tool, args)
            calls.append((tool, args))
            assert isinstance(result, dict)
            if is_error(result):
                assert result["error"]["category"] != "internal_error", (tool, args, result)
                assert s.state() == before
                continue
            check_invariants(before, s.state(), s.files(), s0_time)
        final = s.snapshot_hash()
    with Session.memory(ENV, seed=seed) as replay:
        for tool, args in calls:
            replay.call(tool, args)
        assert replay.snapshot_hash() == final


def test_snapshot_hash_covers_the_workspace(session: Session) -> None:
    before = session.snapshot_hash()
    call(session, "append_ops_note", incident_id="INC-2041", note="x")
    assert session.snapshot_hash() != before
    assert state_hash(session.state()) == session.state_hash()


# -- the skill, run as a policy -----------------------------------------------------------------------------
def follow_skill(s: Session) -> None:
    """skills/recover-failing-host/SKILL.md, step by step, on every failing service."""
    for svc in call(s, "list_services")["services"]:
        service_id = svc["service_id"]
        if all(state == "healthy" for state in svc["replicas"].values()):
            continue
        incident = svc["open_incident"] or call(s, "open_incident", service_id=service_id, severity="sev2",
                                                title="hosts failing")["incident_id"]  # fmt: skip
        findings = [f for h in svc["replicas"] for f in call(s, "run_diagnostic", host_id=h)["findings"]]
        codes = {f["code"] for f in findings}
        reconfigured = bool(codes & {"bad_config", "oom_kill"})
        if reconfigured:
            call(
                s,
                "write_file",
                path=f"configs/{service_id}.yaml",
                content=repaired(service_id, svc_config(s, service_id)),
            )
            call(s, "apply_config", service_id=service_id)
        for host_id in sorted(svc["replicas"], key=lambda h: (svc["replicas"][h] != "down", h)):
            if state_of(s, host_id) == "healthy" and not reconfigured:
                continue
            call(s, "drain_host", host_id=host_id)
            wait_for(s, host_id, lambda info: info["state"] == "maintenance")
            report = call(s, "run_diagnostic", host_id=host_id)
            if report["disk"]["used_pct"] >= 90:
                purgeable = ("/var/log/app/archive", "/var/crash", "/tmp")
                biggest = next(p for p in report["disk"]["by_path_gb"] if p in purgeable)
                call(s, "purge_disk", host_id=host_id, path=biggest)
            call(s, "restart_host", host_id=host_id)
            wait_for(s, host_id, lambda info: info["next_step_at"] <= info["now"])
            call(s, "undrain_host", host_id=host_id)
        assert call(s, "run_health_check", service_id=service_id)["passed"]
        call(
            s,
            "edit_file",
            path=f"ops/incident-{incident}.md",
            old="\nTBD\n",
            new="\nSee timeline.\n",
            replace_all=True,
        )
        cause = "bad_config" if "bad_config" in codes else "oom" if "oom_kill" in codes else "disk_full"
        call(s, "close_incident", incident_id=incident, root_cause=cause)


def wait_for(s: Session, host_id: str, ready: Any) -> None:
    """Poll get_host (each call is a minute) until ``ready(info)``; the timers are at most 3 minutes."""
    for _ in range(5):
        if ready(call(s, "get_host", host_id=host_id)):
            return
    raise AssertionError(f"{host_id} never got ready")


def svc_config(s: Session, service_id: str) -> dict[str, Any]:
    values, _ = RULES.parse_config(s.files()[f"configs/{service_id}.yaml"])
    return dict(values)


@pytest.mark.parametrize(("seed", "size"), [(0, 1), (1, 1), (2, 1), (3, 2)])
def test_the_skill_recovers_every_generated_world(seed: int, size: int) -> None:
    with Session.memory(ENV, seed=seed, size=size) as s:
        follow_skill(s)
        state = s.state()
        assert all(h["state"] == "healthy" for h in state["hosts"].values())
        assert all(i["status"] == "closed" for i in state["incidents"].values())
        assert all(not is_error(a["result"]) for a in s.actions())  # the procedure never hit a guard


# -- the links of a hand-made S0 (per-record @invariant checks, the messages the whole-state
# validator gave before them) ------------------------------------------------------------------------
def test_a_service_listing_an_unknown_replica_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        next(iter(s["services"].values()))["replicas"].append("ghost-z9")

    assert "lists unknown replicas ghost-z9" in refusal(ENV, mutate)


def test_a_host_of_a_service_not_in_the_state_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        host = next(iter(s["hosts"].values()))
        del s["services"][host["service_id"]]
        for service in s["services"].values():  # the other services' replicas stay known
            assert host["host_id"] not in service["replicas"]

    assert "which is not a service" in refusal(ENV, mutate)


def test_an_incident_filed_under_another_id_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        refile(s["incidents"], "INC-2041", "INC-1")

    assert "INC-1 holds 'INC-2041'" in refusal(ENV, mutate)
