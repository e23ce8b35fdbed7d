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
