"""job_scheduler: every tool's success path and error categories, DAG / attempt / slot invariants
under random call sequences, and determinism of the generator and of replays."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from envcraft import Session
from envcraft.core import load_package

ENV = "job_scheduler"
PACKAGE = load_package(ENV)
POLICIES = PACKAGE.data.json("retry_policies.json")
FINAL = {"succeeded", "skipped", "cancelled", "upstream_failed"}


@pytest.fixture
def s() -> Session:
    return Session.memory(ENV, seed=5)


def err(result: dict[str, Any]) -> str:
    assert "error" in result, result
    return str(result["error"]["category"])


def active(session: Session, workflow_id: str) -> str:
    runs = session.call("list_runs", {"workflow_id": workflow_id, "status": "running"})["runs"]
    assert len(runs) == 1, runs
    return str(runs[0]["run_id"])


def late_run(session: Session) -> tuple[str, str]:
    """The run whose orders partition is late, and its workflow id."""
    for run in session.state()["runs"].values():
        jobs = run["jobs"]
        if run["status"] == "running" and jobs.get("extract_orders", {}).get("status") == "failed":
            return run["run_id"], run["workflow_id"]
    raise AssertionError("no late-partition run in S0")


def fresh_orders_run(session: Session) -> str:
    late, _ = late_run(session)
    for run in session.state()["runs"].values():
        if (
            run["status"] == "running"
            and run["workflow_id"].startswith("orders-etl")
            and run["run_id"] != late
        ):
            return str(run["run_id"])
    raise AssertionError("no second orders run in S0")


def drive(session: Session, run_id: str, waves: int = 8) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for _ in range(waves):
        result = session.call("run_ready_jobs", {"run_id": run_id})
        if "error" in result or result["run_status"] != "running":
            break
    return result


# -- invariants over the state dict --------------------------------------------------------------
def _final(job: dict[str, Any], limit: int) -> bool:
    return job["status"] in FINAL or (job["status"] == "failed" and len(job["attempts"]) >= limit)


def _satisfied(dep: dict[str, Any]) -> bool:
    return dep["status"] == "succeeded" or (dep["status"] == "skipped" and dep["skipped_manually"])


def check_invariants(state: dict[str, Any]) -> None:
    holding: Counter[str] = Counter()
    per_wave: Counter[tuple[int, str]] = Counter()
    for run in state["runs"].values():
        wf = state["workflows"][run["workflow_id"]]
        finals = []
        for name, job in run["jobs"].items():
            jd = wf["jobs"][name]
            limit = POLICIES[jd["retry_policy"]]["max_attempts"]
            attempts = job["attempts"]
            assert len(attempts) <= limit, (run["run_id"], name)
            assert [a["number"] for a in attempts] == list(range(1, len(attempts) + 1))
            assert all(a["outcome"] != "running" for a in attempts[:-1])
            assert (job["status"] == "running") == bool(attempts and attempts[-1]["outcome"] == "running")
            deps = [run["jobs"][d] for d in jd["deps"]]
            if attempts:  # never before every dependency succeeded
                for dep in deps:
                    assert _satisfied(dep), (run["run_id"], name, dep)
                    assert dep["finished_at"] <= attempts[0]["started_at"]
            if job["status"] == "ready":
                assert all(_satisfied(d) for d in deps)
            if job["status"] == "pending":
                assert not all(_satisfied(d) for d in deps)
            if job["status"] == "running":
                holding[jd["pool"]] += 1
            for attempt in attempts:
                per_wave[(attempt["wave"], jd["pool"])] += 1
            finals.append(_final(job, limit))
        assert (run["status"] != "running") == all(finals), run["run_id"]
    for pool in state["pools"].values():
        assert holding[pool["pool_id"]] <= pool["slots"]
    for (_, pool_id), count in per_wave.items():
        assert count <= state["pools"][pool_id]["slots"]


# -- reads ---------------------------------------------------------------------------------------
def test_workflow_reads(s: Session) -> None:
    listed = {w["workflow_id"]: w for w in s.call("list_workflows", {})["workflows"]}
    assert listed["search-reindex"]["paused"] and "SRCH-2291" in listed["search-reindex"]["paused_reason"]
    assert listed["ml-churn-training"]["active_runs"] and listed["orders-etl-us"]["required_params"] == [
        "partition_date"
    ]
    wf = s.call("get_workflow", {"workflow_id": "orders-etl-eu"})
    names = [j["name"] for j in wf["jobs"]]
    assert names.index("transform_orders") > max(
        names.index("extract_orders"), names.index("extract_customers")
    )
    assert {j["name"]: j["max_attempts"] for j in wf["jobs"]}["load_warehouse"] == 4
    assert wf["params"]["target_schema"]["locked"]
    assert err(s.call("get_workflow", {"workflow_id": "orders-etl"})) == "not_found"


def test_run_reads(s: Session) -> None:
    done = s.call("list_runs", {"status": "succeeded"})["runs"]
    assert done and all(r["status"] == "succeeded" for r in done)
    assert err(s.call("list_runs", {"workflow_id": "nope"})) == "not_found"
    assert err(s.call("list_runs", {"status": "paused"})) == "invalid_argument"
    run_id, _ = late_run(s)
    status = s.call("get_run_status", {"run_id": run_id})
    assert status["needs_operator"] == ["extract_orders"] and status["params"]["target_schema"] == "prod"
    job = s.call("get_job", {"run_id": run_id, "job": "extract_orders"})
    assert job["input"]["available"] is False and job["input"]["expected_at"] == "2026-01-05T07:10:00Z"
    assert "transform_orders" in job["downstream"]
    assert err(s.call("get_run_status", {"run_id": "RUN-1"})) == "not_found"
    assert err(s.call("get_job", {"run_id": run_id, "job": "extract_everything"})) == "not_found"
    assert err(s.call("get_job", {"run_id": "RUN-1", "job": "extract_orders"})) == "not_found"


def test_job_logs_show_the_error_and_the_runbook(s: Session) -> None:
    run_id, _ = late_run(s)
    logs = s.call("get_job_logs", {"run_id": run_id, "job": "extract_orders"})
    text = "\n".join(logs["lines"])
    assert "E_INPUT_MISSING" in text and "runbook:" in text and "2 attempts left" in text
    assert s.call("get_job_logs", {"run_id": run_id, "job": "extract_orders", "attempt": 1})["attempt"] == 1
    assert (
        err(s.call("get_job_logs", {"run_id": run_id, "job": "extract_orders", "attempt": 2})) == "not_found"
    )
    assert err(s.call("get_job_logs", {"run_id": run_id, "job": "load_warehouse"})) == "not_found"
    stalled = active(s, "ml-churn-training")
    lost = "\n".join(s.call("get_job_logs", {"run_id": stalled, "job": "train_model"})["lines"])
    assert "E_WORKER_LOST" in lost


def test_list_pools_flags_the_stalled_job(s: Session) -> None:
    pools = {p["pool_id"]: p for p in s.call("list_pools", {})["pools"]}
    gpu, etl = pools["gpu"], pools["etl"]
    assert (
        gpu["free_slots"] == 0 and gpu["running"][0]["stalled"] and gpu["running"][0]["job"] == "train_model"
    )
    assert etl["free_slots"] == 1 and not etl["running"][0]["stalled"] and etl["running"][0]["protected"]


# -- submitting ----------------------------------------------------------------------------------
def test_submit_run_validates_parameters(s: Session) -> None:
    wf = "billing-close"
    assert err(s.call("submit_run", {"workflow_id": wf, "params": ["period=2026-01"]})) == "conflict"
    s.call("cancel_run", {"run_id": active(s, wf), "reason": "superseded"})
    cases = [
        (["period=2026-13"], "invalid_argument"),
        (["period"], "invalid_argument"),
        (["period=2026-01", "period=2026-02"], "invalid_argument"),
        (["month=2026-01"], "invalid_argument"),
        ([], "invalid_argument"),
        (["period=2026-01", "currency=GBP"], "invalid_argument"),
    ]
    for params, category in cases:
        assert err(s.call("submit_run", {"workflow_id": wf, "params": params})) == category, params
    made = s.call("submit_run", {"workflow_id": wf, "params": ["period=2026-01", "currency=EUR"]})
    assert made["ready"] == ["snapshot_ledger"] and made["params"] == {"currency": "EUR", "period": "2026-01"}
    assert err(s.call("submit_run", {"workflow_id": "search-reindex"})) == "invalid_transition"
    assert err(s.call("submit_run", {"workflow_id": "nightly-x"})) == "not_found"
    _, orders = late_run(s)
    locked = s.call(
        "submit_run",
        {"workflow_id": orders, "params": ["partition_date=2026-01-04", "target_schema=staging"]},
    )
    assert err(locked) == "permission_denied" and locked["error"]["permission"] == "param:override_locked"


# -- waves, slots, dependencies ------------------------------------------------------------------
def test_a_wave_never_exceeds_pool_slots(s: Session) -> None:
    run_id = fresh_orders_run(s)
    wave = s.call("run_ready_jobs", {"run_id": run_id})
    waiting = wave["waiting_for_slot"]
    started = [a["job"] for a in wave["started"]]
    assert len(started) + len(waiting) >= 1
    if waiting:  # one etl slot is held by the protected backup
        assert waiting[0]["pool"] == "etl" and any("snapshot_db" in h for h in waiting[0]["held_by"])
    assert "transform_orders" not in started
    check_invariants(s.state())


def test_late_partition_wait_then_retry(s: Session) -> None:
    run_id, _ = late_run(s)
    changed = s.call("set_parameter", {"run_id": run_id, "name": "partition_date", "value": "2026-01-03"})
    assert err(changed) == "conflict" and changed["error"]["job"] == "extract_customers"
    assert s.call("retry_job", {"run_id": run_id, "job": "extract_orders"})["status"] == "ready"
    too_early = s.call("run_ready_jobs", {"run_id": run_id})
    assert too_early["started"][0]["error_code"] == "E_INPUT_MISSING"
    while s.call("get_job", {"run_id": run_id, "job": "extract_orders"})["input"]["available"] is False:
        pass  # each read advances the clock 10 minutes until the partition lands at 07:10
    s.call("retry_job", {"run_id": run_id, "job": "extract_orders"})
    assert drive(s, run_id)["run_status"] == "succeeded"
    attempts = s.state()["runs"][run_id]["jobs"]["extract_orders"]["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "failed", "succeeded"]
    check_invariants(s.state())


def test_attempt_limit_fails_the_run_and_freezes_it(s: Session) -> None:
    run_id, _ = late_run(s)
    for _ in range(2):
        s.call("retry_job", {"run_id": run_id, "job": "extract_orders"})
        s.call("run_ready_jobs", {"run_id": run_id})
    used_up = s.call("retry_job", {"run_id": run_id, "job": "extract_orders"})
    assert err(used_up) == "invalid_transition"
    state = s.state()
    run = state["runs"][run_id]
    assert run["status"] == "failed"
    assert run["jobs"]["transform_orders"]["status"] == "upstream_failed"
    frozen = json.dumps(run, sort_keys=True)
    for tool, args in [
        ("run_ready_jobs", {}),
        ("set_parameter", {"name": "batch_size", "value": "100"}),
        ("cancel_run", {"reason": "x"}),
        ("mark_skipped", {"job": "refresh_dashboards", "reason": "x"}),
        ("cancel_job", {"job": "notify_finance", "reason": "x"}),
    ]:
        assert err(s.call(tool, {"run_id": run_id, **args})) == "invalid_transition"
    assert json.dumps(s.state()["runs"][run_id], sort_keys=True) == frozen


def test_transient_error_waits_for_backoff(s: Session) -> None:
    run_id = active(s, "billing-close")
    job = s.call("get_job", {"run_id": run_id, "job": "reconcile_payments"})
    assert job["status"] == "retry_wait" and job["attempts"][0]["error_code"] == "E_TRANSIENT"
    assert err(s.call("retry_job", {"run_id": run_id, "job": "reconcile_payments"})) == "invalid_transition"
    first = s.call("run_ready_jobs", {"run_id": run_id})  # at 06:20, retry due at 05:46 + 20 min
    started = {a["job"]: a for a in first["started"]}
    assert (
        started["reconcile_payments"]["outcome"] == "succeeded"
        and started["reconcile_payments"]["attempt"] == 2
    )
    assert drive(s, run_id)["run_status"] == "succeeded"


def test_stalled_job_blocks_the_pool_until_cancelled(s: Session) -> None:
    stalled = active(s, "ml-churn-training")
    blocked = s.call(
        "submit_run", {"workflow_id": "ml-churn-training", "params": ["snapshot_date=2026-01-04"]}
    )
    assert err(blocked) == "conflict"
    assert (
        err(s.call("cancel_job", {"run_id": stalled, "job": "train_model", "reason": ""}))
        == "invalid_argument"
    )
    out = s.call("cancel_job", {"run_id": stalled, "job": "train_model", "reason": "worker w-gpu-1 lost"})
    assert out["freed_pool"] == "gpu" and out["skipped"] == ["evaluate_model", "publish_model"]
    assert out["run_status"] == "cancelled"
    pools = {p["pool_id"]: p for p in s.call("list_pools", {})["pools"]}
    assert pools["gpu"]["free_slots"] == 1
    check_invariants(s.state())


def test_oom_and_missing_parameter_are_fixed_then_retried(s: Session) -> None:
    s.call("cancel_run", {"run_id": active(s, "ml-churn-training"), "reason": "stalled since last night"})
    run_id = s.call(
        "submit_run", {"workflow_id": "ml-churn-training", "params": ["snapshot_date=2026-01-04"]}
    )["run_id"]
    drive(s, run_id, waves=3)
    train = s.call("get_job", {"run_id": run_id, "job": "train_model"})
    assert train["status"] == "failed" and train["attempts"][-1]["error_code"] == "E_OOM"
    assert (
        err(s.call("mark_skipped", {"run_id": run_id, "job": "train_model", "reason": "x"}))
        == "invalid_transition"
    )
    assert (
        err(s.call("set_parameter", {"run_id": run_id, "name": "memory_gb", "value": "128"}))
        == "invalid_argument"
    )
    assert err(s.call("set_parameter", {"run_id": run_id, "name": "gpu", "value": "1"})) == "invalid_argument"
    assert s.call("set_parameter", {"run_id": run_id, "name": "memory_gb", "value": "48"})["read_by"] == [
        "train_model"
    ]
    s.call("set_parameter", {"run_id": run_id, "name": "model_version", "value": "churn-2026.01.04"})
    assert s.call("retry_job", {"run_id": run_id, "job": "train_model"})["attempts"] == 1
    assert drive(s, run_id)["run_status"] == "succeeded"
    assert err(s.call("set_parameter", {"run_id": "RUN-1", "name": "x", "value": "y"})) == "not_found"
    assert err(s.call("retry_job", {"run_id": fresh_orders_run(s), "job": "nope"})) == "not_found"


def test_missing_parameter_on_a_no_retry_job_fails_the_run(s: Session) -> None:
    s.call("cancel_run", {"run_id": active(s, "ml-churn-training"), "reason": "stalled"})
    params = ["snapshot_date=2026-01-04", "memory_gb=32"]
    run_id = s.call("submit_run", {"workflow_id": "ml-churn-training", "params": params})["run_id"]
    final = drive(s, run_id)
    assert final["run_status"] == "failed"
    publish = s.call("get_job", {"run_id": run_id, "job": "publish_model"})
    assert (
        publish["attempts"][0]["error_code"] == "E_MISSING_PARAM"
        and publish["definition"]["max_attempts"] == 1
    )


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("get_job_logs", {}),
        ("retry_job", {}),
        ("mark_skipped", {"reason": "x"}),
        ("cancel_job", {"reason": "x"}),
    ],
)
def test_job_tools_report_unknown_runs_and_jobs(s: Session, tool: str, extra: dict[str, Any]) -> None:
    assert err(s.call(tool, {"run_id": "RUN-404", "job": "extract_orders", **extra})) == "not_found"
    missing = s.call(tool, {"run_id": fresh_orders_run(s), "job": "extract_everything", **extra})
    assert err(missing) == "not_found" and "extract_orders" in missing["error"]["message"]


def test_locked_parameter_cannot_be_overridden(s: Session) -> None:
    denied = s.call(
        "set_parameter", {"run_id": fresh_orders_run(s), "name": "target_schema", "value": "staging"}
    )
    assert err(denied) == "permission_denied" and denied["error"]["permission"] == "param:override_locked"
    kept = s.call("set_parameter", {"run_id": fresh_orders_run(s), "name": "target_schema", "value": "prod"})
    assert kept["new"] == "prod"


def test_protected_runs_cannot_be_cancelled_or_changed(s: Session) -> None:
    backup = active(s, "nightly-backup")
    for tool, args in [
        ("cancel_run", {"reason": "x"}),
        ("cancel_job", {"job": "snapshot_db", "reason": "x"}),
        ("set_parameter", {"name": "target", "value": "s3-primary"}),
    ]:
        denied = s.call(tool, {"run_id": backup, **args})
        assert err(denied) == "permission_denied" and "protected" in denied["error"]["message"]


def test_long_job_finishes_with_the_clock(s: Session) -> None:
    backup = active(s, "nightly-backup")
    for _ in range(12):  # snapshot_db is expected at 07:50, i.e. 11 actions from 06:00
        s.call("list_workflows", {})
    pools = {p["pool_id"]: p for p in s.call("list_pools", {})["pools"]}
    assert pools["etl"]["free_slots"] == 2
    assert s.state()["runs"][backup]["jobs"]["snapshot_db"]["status"] == "running"  # reads never write
    assert drive(s, backup)["run_status"] == "succeeded"


def test_skip_optional_and_cancel_propagation(s: Session) -> None:
    run_id = fresh_orders_run(s)
    skipped = s.call(
        "mark_skipped", {"run_id": run_id, "job": "refresh_dashboards", "reason": "dashboards frozen"}
    )
    assert skipped["status"] == "skipped"
    assert err(
        s.call("mark_skipped", {"run_id": run_id, "job": "refresh_dashboards", "reason": "again"})
    ) == ("invalid_transition")
    assert err(s.call("mark_skipped", {"run_id": run_id, "job": "notify_finance", "reason": " "})) == (
        "invalid_argument"
    )
    cancelled = s.call("cancel_job", {"run_id": run_id, "job": "transform_orders", "reason": "bad batch"})
    assert cancelled["skipped"] == ["load_warehouse", "notify_finance"]
    again = s.call("cancel_job", {"run_id": run_id, "job": "transform_orders", "reason": "x"})
    assert err(again) == "invalid_transition"
    assert drive(s, run_id)["run_status"] == "cancelled"
    check_invariants(s.state())


def test_cancel_run(s: Session) -> None:
    run_id = fresh_orders_run(s)
    out = s.call("cancel_run", {"run_id": run_id, "reason": "duplicate of the backfill"})
    assert out["status"] == "cancelled" and "load_warehouse" in out["cancelled_jobs"]
    assert err(s.call("cancel_run", {"run_id": run_id, "reason": "again"})) == "invalid_transition"
    assert err(s.call("cancel_run", {"run_id": "RUN-404", "reason": "x"})) == "not_found"
    assert err(s.call("run_ready_jobs", {"run_id": "RUN-404"})) == "not_found"


# -- generator, determinism, random sequences -----------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_state_has_every_scenario(seed: int) -> None:
    state = Session.memory(ENV, seed=seed).state()
    check_invariants(state)
    jobs = [j for r in state["runs"].values() for j in r["jobs"].values()]
    assert any(j["status"] == "retry_wait" for j in jobs)
    assert sum(j["status"] == "running" for j in jobs) == 2  # the backup and the stalled training
    assert any(r["protected"] for r in state["runs"].values())
    assert Counter(r["status"] for r in state["runs"].values())["succeeded"] >= 4
    assert [w["status"] for w in state["workers"].values()].count("lost") == 1


def test_generator_is_seeded_and_scales() -> None:
    a = Session.memory(ENV, seed=9)
    assert a.state_hash() == Session.memory(ENV, seed=9).state_hash()
    assert a.state_hash() != Session.memory(ENV, seed=10).state_hash()
    big = Session.memory(ENV, seed=9, size=3).state()
    assert len(big["workflows"]) > len(a.state()["workflows"]) and len(big["runs"]) > len(a.state()["runs"])
    check_invariants(big)


def _script(session: Session) -> list[dict[str, Any]]:
    run_id = active(session, "billing-close")
    return [session.call("run_ready_jobs", {"run_id": run_id}) for _ in range(4)] + [
        session.call("get_run_status", {"run_id": run_id})
    ]


def test_same_calls_reach_the_same_state() -> None:
    a, b = Session.memory(ENV, seed=4), Session.memory(ENV, seed=4)
    assert _script(a) == _script(b)
    assert a.state_hash() == b.state_hash()


TOOLS = sorted(PACKAGE.env_class.tools)


def _args(data: st.DataObject, tool: str, state: dict[str, Any]) -> dict[str, Any]:
    runs = sorted(state["runs"])
    live = sorted(r for r, v in state["runs"].items() if v["status"] == "running") or runs
    run_id = data.draw(st.sampled_from([*live, *live, runs[0], "RUN-1"]))
    wf_id = state["runs"][run_id]["workflow_id"] if run_id in state["runs"] else "orders-etl-us"
    jobs = sorted(state["workflows"][wf_id]["jobs"])
    job = data.draw(st.sampled_from([*jobs, "nope"]))
    workflow = data.draw(st.sampled_from([*sorted(state["workflows"]), "nope"]))
    param = data.draw(
        st.sampled_from(
            [
                ("partition_date", "2026-01-04"),
                ("partition_date", "2026-01-03"),
                ("memory_gb", "40"),
                ("memory_gb", "99"),
                ("model_version", "churn-x"),
                ("period", "2025-12"),
                ("target_schema", "staging"),
                ("shards", "8"),
            ]
        )
    )
    reason = data.draw(st.sampled_from(["", "operator decision"]))
    specs = state["workflows"][workflow]["params"] if workflow in state["workflows"] else {}
    sample = {"date": "2026-01-04", "month": "2025-12"}
    required = [f"{n}={sample.get(p['kind'], 'x')}" for n, p in sorted(specs.items()) if p["required"]]
    extra = [f"{param[0]}={param[1]}"]
    choices: dict[str, dict[str, Any]] = {
        "list_workflows": {},
        "get_workflow": {"workflow_id": workflow},
        "list_runs": {"workflow_id": data.draw(st.sampled_from(["", workflow]))},
        "get_run_status": {"run_id": run_id},
        "get_job": {"run_id": run_id, "job": job},
        "get_job_logs": {"run_id": run_id, "job": job, "attempt": data.draw(st.integers(0, 3))},
        "list_pools": {},
        "submit_run": {"workflow_id": workflow, "params": required + data.draw(st.sampled_from([[], extra]))},
        "run_ready_jobs": {"run_id": run_id},
        "retry_job": {"run_id": run_id, "job": job},
        "set_parameter": {"run_id": run_id, "name": param[0], "value": param[1]},
        "mark_skipped": {"run_id": run_id, "job": job, "reason": reason},
        "cancel_job": {"run_id": run_id, "job": job, "reason": reason},
        "cancel_run": {"run_id": run_id, "reason": reason},
    }
    return choices[tool]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2), data=st.data())
def test_random_call_sequences_keep_the_invariants(seed: int, data: st.DataObject) -> None:
    s = Session.memory(ENV, seed=seed)
    finished: dict[str, str] = {}
    for _ in range(25):
        state = s.state()
        for run_id, run in state["runs"].items():
            if run["status"] != "running":
                snapshot = json.dumps(run, sort_keys=True)
                assert finished.setdefault(run_id, snapshot) == snapshot  # a finished run never changes
        tool = data.draw(st.sampled_from([*TOOLS, "run_ready_jobs", "run_ready_jobs", "retry_job"]))
        before = s.state_hash()
        result = s.call(tool, _args(data, tool, state))
        assert isinstance(result, dict)
        if "error" in result:
            assert result["error"]["category"] != "internal_error", result
            assert s.state_hash() == before
        elif PACKAGE.env_class.tools[tool].annotations.read_only:
            assert s.state_hash() == before
        check_invariants(s.state())


# -- link invariants ------------------------------------------------------------------------------
def _break_worker_pool(state: dict[str, Any]) -> None:
    next(iter(state["workers"].values()))["pool"] = "nowhere"


def _break_job_dependency(state: dict[str, Any]) -> None:
    workflow = next(iter(state["workflows"].values()))
    next(iter(workflow["jobs"].values()))["deps"].append("no_such_job")


def _misfile_a_run(state: dict[str, Any]) -> None:
    run_id, run = next(iter(state["runs"].items()))
    state["runs"]["RUN-1"] = run
    del state["runs"][run_id]


def _break_run_parameter(state: dict[str, Any]) -> None:
    next(iter(state["runs"].values()))["params"]["no_such_param"] = "x"


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (_break_worker_pool, "refers to unknown pool 'nowhere'"),
        (_break_job_dependency, "refers to unknown job 'no_such_job'"),
        (_misfile_a_run, "RUN-1 holds 'RUN-"),
        (_break_run_parameter, "sets no_such_param, not a parameter of"),
    ],
)
def test_a_state_with_a_broken_link_is_refused_when_it_loads(breakage: Any, message: str) -> None:
    """The link checks (per-record @invariant methods of SchedulerState) refuse a hand-made S0
    whose workflows, runs, pools and workers do not agree, naming the broken link."""
    state = Session.memory(ENV, seed=5).state()
    breakage(state)
    with pytest.raises(ValidationError, match=re.escape(message)):
        PACKAGE.env_class.State.model_validate(state)
