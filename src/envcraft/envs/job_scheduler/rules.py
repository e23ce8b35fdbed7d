"""Domain rules of :class:`~.env.JobScheduler`: what its tools check, compute and how a run moves.

Job scheduler (workflow DAGs, worker pools, retries with backoff). The State lives in
``state.py`` and the tool surface in ``env.py``; this module holds the logic tool bodies call:
derived values (effective parameters, a job's visible status, the slots held), the transitions
of a scheduling wave (sweep, settle, execute) and an attempt's outcome and log. The S0
generator drives the same tools, so S0 is built by the same rules the tools enforce.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, iso, parse_time

from .state import Attempt, JobDef, JobRun, Run, SchedulerState, Worker, Workflow

# Job statuses that never change again (a failed job is final only once its attempts are used up).
FINAL = frozenset({"succeeded", "skipped", "cancelled", "upstream_failed"})


def stable_hash(*parts: object) -> int:
    """A process-independent hash (Python's hash() of str is salted per process)."""
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def topo_order(wf: Workflow) -> list[str]:
    """Job names in dependency order (ties in declaration order; a cycle keeps declaration order)."""
    order: list[str] = []
    remaining = list(wf.jobs)
    while remaining:
        ready = next((n for n in remaining if all(dep in order for dep in wf.jobs[n].deps)), remaining[0])
        order.append(ready)
        remaining.remove(ready)
    return order


def descendants(wf: Workflow, name: str) -> set[str]:
    found: set[str] = set()
    frontier = [name]
    while frontier:
        current = frontier.pop()
        for other, jd in wf.jobs.items():
            if current in jd.deps and other not in found:
                found.add(other)
                frontier.append(other)
    return found


def effective_params(state: SchedulerState, run: Run) -> dict[str, str]:
    """Effective parameters: the run's values over the workflow defaults."""
    wf = state.workflows[run.workflow_id]
    values = {name: spec.default for name, spec in wf.params.items() if spec.default}
    values.update({k: v for k, v in run.params.items() if v})
    return values


def retry_policy(data: Repository, jd: JobDef) -> Any:
    return data.json("retry_policies.json")[jd.retry_policy]


def max_attempts(data: Repository, jd: JobDef) -> int:
    return int(retry_policy(data, jd)["max_attempts"])


def is_open(data: Repository, jr: JobRun, jd: JobDef) -> bool:
    """Not finished: a failed job is still open while it has attempts left."""
    if jr.status == "failed":
        return len(jr.attempts) < max_attempts(data, jd)
    return jr.status not in FINAL


def active_runs(state: SchedulerState, workflow_id: str) -> list[str]:
    return sorted(
        r.run_id for r in state.runs.values() if r.workflow_id == workflow_id and r.status == "running"
    )


def finishes(state: SchedulerState, now: datetime, jr: JobRun) -> bool:
    """A running job whose worker is alive completes at its expected finish time."""
    attempt = jr.attempts[-1]
    worker = state.workers[attempt.worker]
    return worker.status == "online" and parse_time(attempt.expected_finish_at) <= now


def job_status(state: SchedulerState, now: datetime, jr: JobRun) -> str:
    if jr.status == "running" and finishes(state, now, jr):
        return "succeeded"
    return jr.status


def running_jobs(state: SchedulerState, now: datetime, pool_id: str) -> list[tuple[Run, JobRun]]:
    """Jobs holding a slot of the pool now (across all runs)."""
    held = []
    for run in state.runs.values():
        wf = state.workflows[run.workflow_id]
        for jr in run.jobs.values():
            if jr.status == "running" and wf.jobs[jr.job].pool == pool_id and not finishes(state, now, jr):
                held.append((run, jr))
    return held


def last_seen(now: datetime, worker: Worker) -> datetime:
    """Online workers heartbeat continuously; a lost worker was last seen when it died."""
    return now if worker.status == "online" else parse_time(worker.last_seen_at)


def input_status(state: SchedulerState, now: datetime, run: Run, jd: JobDef) -> dict[str, Any]:
    dataset = state.datasets[jd.input_dataset]
    partition = effective_params(state, run).get(jd.input_param, "")
    lands = dataset.partitions.get(partition)
    landed = sorted(p for p, at in dataset.partitions.items() if parse_time(at) <= now)
    return {
        "dataset": jd.input_dataset,
        "partition": partition,
        "available": lands is not None and parse_time(lands) <= now,
        "expected_at": lands or "",
        "latest_available": landed[-1] if landed else "",
    }


def sweep(state: SchedulerState, data: Repository, now: datetime) -> None:
    """Materialize what the clock decided: long jobs on live workers finish when due."""
    for run in state.runs.values():
        if run.status != "running":
            continue
        for jr in run.jobs.values():
            if jr.status == "running" and finishes(state, now, jr):
                attempt = jr.attempts[-1]
                attempt.outcome, attempt.finished_at = "succeeded", attempt.expected_finish_at
                jr.status, jr.finished_at = "succeeded", attempt.expected_finish_at
        settle(state, data, now, run)


def settle(state: SchedulerState, data: Repository, now: datetime, run: Run) -> None:
    """Propagate failures downstream, promote jobs whose dependencies are met, close the run."""
    wf = state.workflows[run.workflow_id]
    stamp = iso(now)
    for name in topo_order(wf):
        jr, jd = run.jobs[name], wf.jobs[name]
        if jr.status == "failed" and not is_open(data, jr, jd):
            for down in descendants(wf, name):
                other = run.jobs[down]
                if other.status in ("pending", "ready"):
                    other.status, other.note, other.finished_at = "upstream_failed", f"{name} failed", stamp
        if jr.status == "pending" and all(satisfied(run, dep) for dep in jd.deps):
            jr.status = "ready"
    if run.status == "running" and not any(is_open(data, run.jobs[n], wf.jobs[n]) for n in wf.jobs):
        statuses = {jr.status for jr in run.jobs.values()}
        if statuses & {"failed", "upstream_failed"}:
            run.status = "failed"
        elif "cancelled" in statuses:
            run.status = "cancelled"
        else:
            run.status = "succeeded"
        run.finished_at = stamp


def satisfied(run: Run, dep: str) -> bool:
    jr = run.jobs[dep]
    return jr.status == "succeeded" or (jr.status == "skipped" and jr.skipped_manually)


def cancel_job_run(now: datetime, jr: JobRun, reason: str) -> None:
    stamp = iso(now)
    if jr.status == "running":
        attempt = jr.attempts[-1]
        attempt.outcome, attempt.finished_at, attempt.message = "cancelled", stamp, f"cancelled: {reason}"
    jr.status, jr.note, jr.finished_at, jr.next_retry_at = "cancelled", reason, stamp, ""


def execute(
    state: SchedulerState, data: Repository, now: datetime, run: Run, jd: JobDef, jr: JobRun, wave: int
) -> Attempt:
    """One attempt: its outcome is a pure function of the run, the job, the inputs and the clock."""
    pool = state.pools[jd.pool]
    online = [w for w in pool.workers if state.workers[w].status == "online"]
    number = len(jr.attempts) + 1
    values = effective_params(state, run)
    end = now + timedelta(minutes=jd.runtime_minutes)
    attempt = Attempt(
        number=number,
        wave=wave,
        worker=online[(wave + number) % len(online)],
        started_at=iso(now),
        expected_finish_at=iso(end),
        outcome="running",
        params={p: values.get(p, "") for p in jd.uses},
    )
    jr.attempts.append(attempt)
    jr.next_retry_at = ""
    code, message = attempt_outcome(state, now, run, jd, number, values)
    wave_minutes = data.json("scheduler_policy.json")["wave_minutes"]
    if not code and jd.runtime_minutes > wave_minutes:
        jr.status = "running"
        return attempt
    end = now + timedelta(minutes=min(jd.runtime_minutes, wave_minutes))
    attempt.finished_at = iso(end)
    if not code:
        attempt.outcome = "succeeded"
        jr.status, jr.finished_at = "succeeded", iso(end)
        return attempt
    attempt.outcome, attempt.error_code, attempt.message = "failed", code, message
    policy = retry_policy(data, jd)
    retryable = data.json("error_codes.json")[code]["retryable"]
    if retryable and number < policy["max_attempts"]:
        backoff = min(
            policy["backoff_max_minutes"],
            policy["backoff_initial_minutes"] * policy["backoff_multiplier"] ** (number - 1),
        )
        jr.status, jr.next_retry_at = "retry_wait", iso(end + timedelta(minutes=backoff))
    else:
        jr.status, jr.next_retry_at = "failed", ""
        if number >= policy["max_attempts"]:
            jr.finished_at = iso(end)
    return attempt


def attempt_outcome(
    state: SchedulerState, now: datetime, run: Run, jd: JobDef, number: int, values: dict[str, str]
) -> tuple[str, str]:
    """The error code and message of an attempt ('' when it succeeds)."""
    missing = [p for p in jd.uses if not values.get(p)]
    if missing:
        return "E_MISSING_PARAM", f"KeyError: run parameter '{missing[0]}' is not set and has no default"
    if jd.input_dataset:
        found = input_status(state, now, run, jd)
        if not found["available"]:
            when = (
                f"; expected to land at {found['expected_at']}" if found["expected_at"] else "; not scheduled"
            )
            return "E_INPUT_MISSING", (
                f"partition {jd.input_dataset}/{found['partition']} not found "
                f"(latest available: {found['latest_available'] or 'none'}{when})"
            )
    if jd.min_memory_gb and int(values.get("memory_gb", "0")) < jd.min_memory_gb:
        peak = jd.min_memory_gb - 1 + stable_hash(run.chaos_seed, jd.name, "peak") % 10 / 10
        return "E_OOM", (
            f"container killed: memory limit {values.get('memory_gb')} GiB exceeded "
            f"(peak {peak:.1f} GiB; job needs {jd.min_memory_gb} GiB)"
        )
    if number == 1 and jd.flaky_pct and stable_hash(run.chaos_seed, jd.name) % 100 < jd.flaky_pct:
        return (
            "E_TRANSIENT",
            "ConnectionResetError: connection reset by peer while reading object storage",
        )
    return "", ""


def attempt_log(
    state: SchedulerState, data: Repository, now: datetime, jr: JobRun, jd: JobDef, attempt: Attempt
) -> list[str]:
    limit = max_attempts(data, jd)
    lines = [
        f"{attempt.started_at} attempt {attempt.number}/{limit} started on {attempt.worker} "
        f"(pool {jd.pool}, wave {attempt.wave})",
        f"{attempt.started_at} params: "
        + (", ".join(f"{k}={v or '<unset>'}" for k, v in attempt.params.items()) or "(none)"),
    ]
    if jd.input_dataset:
        lines.append(f"{attempt.started_at} reading {jd.input_dataset}/{attempt.params.get(jd.input_param)}")
    if attempt.outcome == "running":
        worker = state.workers[attempt.worker]
        if worker.status == "online":
            lines.append(f"{iso(now)} heartbeat from {worker.worker_id}: running")
        else:
            lines.append(f"{worker.last_seen_at} last heartbeat from {worker.worker_id}")
            lines.append(f"{iso(now)} WARN E_WORKER_LOST: no heartbeat since {worker.last_seen_at}")
            lines.append(f"runbook: {data.json('error_codes.json')['E_WORKER_LOST']['fix']}")
    elif attempt.outcome == "succeeded":
        lines.append(f"{attempt.finished_at} finished OK")
    elif attempt.outcome == "cancelled":
        lines.append(f"{attempt.finished_at} {attempt.message}")
    else:
        lines.append(f"{attempt.finished_at} ERROR {attempt.error_code}: {attempt.message}")
        lines.append(f"runbook: {data.json('error_codes.json')[attempt.error_code]['fix']}")
        if attempt.number == len(jr.attempts):
            if jr.status == "retry_wait":
                lines.append(
                    f"scheduler: automatic retry at {jr.next_retry_at} (attempt {attempt.number + 1}/{limit})"
                )
            elif attempt.number >= limit:
                lines.append(
                    f"scheduler: no attempts left ({attempt.number}/{limit}); the job failed for good"
                )
            else:
                lines.append(
                    f"scheduler: not retried automatically; fix the cause and retry_job "
                    f"({limit - attempt.number} attempts left)"
                )
    return lines


# -- what the read tools show and a scheduling wave ------------------------------------------------
def violations(state: SchedulerState) -> list[str]:
    """What :meth:`~.env.JobScheduler.rule_violations` reports (see there)."""
    problems = []
    unfinished = {"pending", "ready", "running", "retry_wait"}
    running: dict[str, int] = {}
    for run in state.runs.values():
        workflow = state.workflows[run.workflow_id]
        for job in run.jobs.values():
            if run.status != "running" and job.status in unfinished:
                problems.append(f"{run.run_id} is {run.status} but job {job.job} is {job.status}")
            if job.status == "running":
                pool_id = workflow.jobs[job.job].pool
                running[pool_id] = running.get(pool_id, 0) + 1
        if run.status == "succeeded" and any(
            j.status not in ("succeeded", "skipped") for j in run.jobs.values()
        ):
            problems.append(f"{run.run_id} succeeded with jobs that did not")
    active: dict[str, int] = {}
    for run in state.runs.values():
        if run.status == "running":
            active[run.workflow_id] = active.get(run.workflow_id, 0) + 1
    for workflow_id, count in active.items():
        if count > state.workflows[workflow_id].max_active_runs:
            problems.append(f"{workflow_id} has {count} running runs, more than it allows")
    for pool_id, count in running.items():
        held = state.pools.get(pool_id)
        if held is not None and count > held.slots:
            problems.append(f"pool {pool_id} runs {count} jobs on {held.slots} slots")
    return problems


def workflows_view(state: SchedulerState) -> dict[str, Any]:
    """list_workflows: each workflow with its owner, pause, jobs, required parameters and active runs."""
    rows = []
    for wf in sorted(state.workflows.values(), key=lambda w: w.workflow_id):
        rows.append(
            {
                "workflow_id": wf.workflow_id,
                "name": wf.name,
                "team": wf.team,
                "paused": bool(wf.paused_reason),
                "paused_reason": wf.paused_reason,
                "jobs": len(wf.jobs),
                "required_params": sorted(p for p, spec in wf.params.items() if spec.required),
                "active_runs": active_runs(state, wf.workflow_id),
            }
        )
    return {"workflows": rows, "count": len(rows)}


def runs_view(state: SchedulerState, now: datetime, workflow_id: str, status: str | None) -> dict[str, Any]:
    """list_runs: run summaries (job counts by visible status), newest first."""
    rows = []
    for run in state.runs.values():
        if (workflow_id and run.workflow_id != workflow_id) or (status and run.status != status):
            continue
        counts: dict[str, int] = {}
        for jr in run.jobs.values():
            shown = job_status(state, now, jr)
            counts[shown] = counts.get(shown, 0) + 1
        rows.append(
            {
                "run_id": run.run_id,
                "workflow_id": run.workflow_id,
                "status": run.status,
                "params": dict(run.params),
                "submitted_by": run.submitted_by,
                "submitted_at": run.submitted_at,
                "finished_at": run.finished_at,
                "protected": run.protected,
                "jobs_by_status": counts,
            }
        )
    rows.sort(key=lambda r: (r["submitted_at"], r["run_id"]), reverse=True)
    return {"runs": rows, "count": len(rows)}


def run_status(state: SchedulerState, data: Repository, now: datetime, run: Run) -> dict[str, Any]:
    """get_run_status: the run and its jobs in dependency order, and which are ready, waiting or stuck."""
    wf = state.workflows[run.workflow_id]
    jobs: list[dict[str, Any]] = []
    for name in topo_order(wf):
        jr, jd = run.jobs[name], wf.jobs[name]
        last = jr.attempts[-1] if jr.attempts else None
        jobs.append(
            {
                "job": name,
                "status": job_status(state, now, jr),
                "attempts": len(jr.attempts),
                "max_attempts": max_attempts(data, jd),
                "last_error_code": last.error_code if last else "",
                "next_retry_at": jr.next_retry_at,
                "deps": list(jd.deps),
                "optional": jd.optional,
                "pool": jd.pool,
            }
        )
    due = [j["job"] for j in jobs if j["status"] == "retry_wait" and parse_time(j["next_retry_at"]) <= now]
    return {
        "run_id": run.run_id,
        "workflow_id": run.workflow_id,
        "status": run.status,
        "params": effective_params(state, run),
        "protected": run.protected,
        "submitted_at": run.submitted_at,
        "finished_at": run.finished_at,
        "jobs": jobs,
        "ready": [j["job"] for j in jobs if j["status"] == "ready"] + due,
        "waiting_retry": [j["job"] for j in jobs if j["status"] == "retry_wait" and j["job"] not in due],
        "needs_operator": [
            j["job"] for j in jobs if j["status"] == "failed" and j["attempts"] < j["max_attempts"]
        ],
    }


def pools_view(state: SchedulerState, data: Repository, now: datetime) -> dict[str, Any]:
    """list_pools: slots, workers and the jobs holding slots now, with heartbeat ages."""
    timeout = data.json("scheduler_policy.json")["heartbeat_timeout_minutes"]
    rows = []
    for pool in sorted(state.pools.values(), key=lambda p: p.pool_id):
        running = []
        for run, jr in running_jobs(state, now, pool.pool_id):
            attempt = jr.attempts[-1]
            seen = last_seen(now, state.workers[attempt.worker])
            silent = int((now - seen).total_seconds() // 60)
            running.append(
                {
                    "run_id": run.run_id,
                    "job": jr.job,
                    "worker": attempt.worker,
                    "started_at": attempt.started_at,
                    "expected_finish_at": attempt.expected_finish_at,
                    "minutes_since_heartbeat": silent,
                    "stalled": silent > timeout,
                    "protected": run.protected,
                }
            )
        workers = [
            {
                **state.workers[w].model_dump(),
                "last_seen_at": iso(last_seen(now, state.workers[w])),
            }
            for w in pool.workers
        ]
        rows.append(
            {
                "pool_id": pool.pool_id,
                "slots": pool.slots,
                "free_slots": pool.slots - len(running),
                "workers": workers,
                "running": running,
            }
        )
    return {"pools": rows, "heartbeat_timeout_minutes": timeout, "now": iso(now)}


def run_wave(state: SchedulerState, data: Repository, now: datetime, run: Run) -> dict[str, Any]:
    """One scheduling wave of ``run``: start every ready job that has a free slot in its pool."""
    wf = state.workflows[run.workflow_id]
    free = {pid: pool.slots - len(running_jobs(state, now, pid)) for pid, pool in state.pools.items()}
    state.waves += 1
    wave = state.waves
    started, no_slot, backoff = [], [], []
    for name in topo_order(wf):
        jr, jd = run.jobs[name], wf.jobs[name]
        if jr.status == "retry_wait" and parse_time(jr.next_retry_at) > now:
            backoff.append({"job": name, "next_retry_at": jr.next_retry_at})
            continue
        if jr.status not in ("ready", "retry_wait"):
            continue
        if free[jd.pool] <= 0:
            holders = [f"{r.run_id}/{j.job}" for r, j in running_jobs(state, now, jd.pool)]
            no_slot.append({"job": name, "pool": jd.pool, "held_by": holders})
            continue
        free[jd.pool] -= 1
        attempt = execute(state, data, now, run, jd, jr, wave)
        started.append(
            {
                "job": name,
                "attempt": attempt.number,
                "worker": attempt.worker,
                "outcome": attempt.outcome,
                "error_code": attempt.error_code,
                "status": jr.status,
                "next_retry_at": jr.next_retry_at,
            }
        )
    settle(state, data, now, run)
    return {
        "run_id": run.run_id,
        "wave": wave,
        "started": started,
        "waiting_for_slot": no_slot,
        "waiting_for_backoff": backoff,
        "run_status": run.status,
        "ready_next": [n for n in topo_order(wf) if run.jobs[n].status == "ready"],
    }
