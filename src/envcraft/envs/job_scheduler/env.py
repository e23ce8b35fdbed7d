"""Job scheduler: drive workflow runs (DAGs of jobs) on worker pools, with retries and backoff."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import ValidationInfo, model_validator

from envcraft.core import Entity, Environment, Initial, Repository, StateModel, dangling, misfiled, tool
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoTime, iso, parse_time

from .rules import FINAL, _descendants, _stable, _topo

JobStatus = Literal[
    "pending",
    "ready",
    "running",
    "retry_wait",
    "failed",
    "succeeded",
    "skipped",
    "cancelled",
    "upstream_failed",
]
RunStatus = Literal["running", "succeeded", "failed", "cancelled"]
ParamKind = Literal["date", "month", "int", "enum", "str"]
MaybeTime = IsoTime | Literal[""]  # "" until it happens
REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


PARAM_FORMATS: MappingProxyType[str, re.Pattern[str]] = MappingProxyType(
    {
        "date": re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"),
        "month": re.compile(r"^\d{4}-(0[1-9]|1[0-2])$"),
        "str": re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$"),
    }
)


class ParamSpec(StateModel):
    kind: ParamKind
    required: bool = False
    default: str = ""
    locked: bool = False
    choices: list[str] = []
    min: int | None = None
    max: int | None = None
    description: str = ""


class JobDef(StateModel):
    name: str
    pool: str
    deps: list[str] = []
    retry_policy: str = "standard"
    optional: bool = False
    runtime_minutes: int
    uses: list[str] = []  # run parameters the job reads
    input_dataset: str = ""
    input_param: str = ""  # the parameter naming the input partition
    min_memory_gb: int = 0
    flaky_pct: int = 0  # chance (seeded per run) that attempt 1 hits a transient error


class Workflow(StateModel):
    workflow_id: str
    name: str
    team: str
    description: str
    max_active_runs: int = 1
    paused_reason: str = ""
    params: dict[str, ParamSpec]
    jobs: dict[str, JobDef]


class Attempt(StateModel):
    number: int
    wave: int
    worker: str
    started_at: IsoTime
    expected_finish_at: IsoTime
    finished_at: MaybeTime = ""
    outcome: Literal["running", "succeeded", "failed", "cancelled"]
    error_code: str = ""
    message: str = ""
    params: dict[str, str] = {}  # the parameter values this attempt read


class JobRun(StateModel):
    job: str
    status: JobStatus = "pending"
    attempts: list[Attempt] = []
    next_retry_at: MaybeTime = ""
    finished_at: MaybeTime = ""
    note: str = ""  # why it was skipped, cancelled or marked upstream_failed
    skipped_manually: bool = False


class Run(StateModel):
    run_id: str
    workflow_id: str
    status: RunStatus = "running"
    params: dict[str, str] = {}
    submitted_by: str
    submitted_at: IsoTime
    finished_at: MaybeTime = ""
    protected: bool = False
    chaos_seed: int
    cancel_reason: str = ""
    jobs: dict[str, JobRun]


class Pool(StateModel):
    pool_id: str
    slots: int
    workers: list[str]


class Worker(StateModel):
    worker_id: str
    pool: str
    status: Literal["online", "lost"] = "online"
    last_seen_at: IsoTime


class Dataset(StateModel):
    dataset_id: str
    partitions: dict[str, IsoTime]  # partition -> time it lands (may be in the future)


class SchedulerState(StateModel):
    workflows: dict[str, Workflow] = {}
    runs: dict[str, Run] = {}
    pools: dict[str, Pool] = {}
    workers: dict[str, Worker] = {}
    datasets: dict[str, Dataset] = {}
    next_run_number: int = 1
    waves: int = 0

    @model_validator(mode="after")
    def _links_resolve(self, info: ValidationInfo) -> SchedulerState:
        """DAGs name their own jobs, pools, datasets and retry policies; runs track exactly their
        workflow's jobs with acceptable parameters; pools and workers name each other. The
        scheduler follows these links on every wave without looking."""
        if info.field_name is not None:  # one assignment inside a tool: checked when the state loads
            return self
        problems = [
            *misfiled(self.workflows, "workflow_id"),
            *misfiled(self.runs, "run_id"),
            *misfiled(self.pools, "pool_id"),
            *misfiled(self.workers, "worker_id"),
            *misfiled(self.datasets, "dataset_id"),
        ]
        for wf in self.workflows.values():
            problems += _workflow_problems(wf, self)
        for run in self.runs.values():
            problems += _run_problems(run, self)
        for pool in self.pools.values():
            problems += dangling(pool.pool_id, "worker", pool.workers, self.workers)
        for worker in self.workers.values():
            problems += dangling(worker.worker_id, "pool", [worker.pool], self.pools)
        if problems:
            raise ValueError("; ".join(problems[:5]))
        return self


def _workflow_problems(wf: Workflow, state: SchedulerState) -> list[str]:
    policies = REFERENCE.json("retry_policies.json")
    problems = misfiled(wf.jobs, "name")
    for jd in wf.jobs.values():
        owner = f"{wf.workflow_id}.{jd.name}"
        problems += dangling(owner, "job", jd.deps, wf.jobs)
        problems += dangling(owner, "pool", [jd.pool], state.pools)
        problems += dangling(owner, "dataset", [jd.input_dataset] if jd.input_dataset else [], state.datasets)
        if not isinstance(policies.get(jd.retry_policy), Mapping):
            problems.append(f"{owner} has unknown retry policy {jd.retry_policy!r}")
        memory = wf.params.get("memory_gb")
        if jd.min_memory_gb and (memory is None or memory.kind != "int"):
            problems.append(f"{owner} needs memory but {wf.workflow_id} has no int parameter memory_gb")
    for name, spec in wf.params.items():
        if spec.default and (problem := _param_problem(spec, spec.default)):
            problems.append(f"{wf.workflow_id}: default {name}={spec.default!r}: {problem}")
    return problems


def _run_problems(run: Run, state: SchedulerState) -> list[str]:
    wf = state.workflows.get(run.workflow_id)
    if wf is None:
        return [f"{run.run_id} refers to unknown workflow {run.workflow_id!r}"]
    problems = misfiled(run.jobs, "job")
    if set(run.jobs) != set(wf.jobs):
        problems.append(f"{run.run_id} tracks jobs {sorted(run.jobs)}, not those of {wf.workflow_id}")
    for name, value in run.params.items():
        if name not in wf.params:
            problems.append(f"{run.run_id} sets {name}, not a parameter of {wf.workflow_id}")
        elif value and (problem := _param_problem(wf.params[name], value)):
            problems.append(f"{run.run_id}: {name}={value!r}: {problem}")
    codes = REFERENCE.json("error_codes.json")  # the runbook line of a failed attempt comes from here
    for jr in run.jobs.values():
        problems += dangling(
            f"{run.run_id}.{jr.job}", "worker", [a.worker for a in jr.attempts], state.workers
        )
        problems += [
            f"{run.run_id}.{jr.job} attempt {a.number} failed with unknown code {a.error_code!r}"
            for a in jr.attempts
            if (a.outcome == "failed" or a.error_code) and a.error_code not in codes
        ]
        if jr.status == "retry_wait" and not jr.next_retry_at:
            problems.append(f"{run.run_id}.{jr.job} waits for a retry with no time set")
    return problems


class JobScheduler(Environment):
    """Workflow scheduler of a data platform; you are the on-call operator.

    Workflows are DAGs of jobs; each job runs on a worker pool with a fixed number of slots.
    A run instantiates a workflow with parameters. run_ready_jobs executes one scheduling wave:
    every ready job (all dependencies succeeded) starts if its pool has a free slot; jobs that
    fit in the wave finish within it. Failed attempts are retried automatically after a backoff
    when the error is transient; other failures wait for the operator: read the logs, fix the
    parameter, retry. Optional jobs may be skipped; cancelling a job skips everything
    downstream. Finished runs never change. Each action advances the scheduler clock 10 minutes.
    """

    State = SchedulerState
    state: SchedulerState
    entities = (
        Entity("workflows", "workflow", ("the {name} workflow",), id_known=True),
        Entity(
            "runs",
            "run",
            ("the {status} run of {workflow_id} submitted on {submitted_at:when}",),
            id_known=True,
            vary=("submitted_at",),
        ),
        Entity("pools", "worker pool", ("the {pool_id} pool",), id_known=True),
        Entity("workers", "worker", ("worker {worker_id}",), id_known=True),
        Entity("datasets", "dataset", ("dataset {dataset_id}",), id_known=True),
    )

    @classmethod
    def rule_violations(cls, state: SchedulerState, files: Mapping[str, str]) -> list[str]:
        """A finished run has no unfinished job, a running job belongs to a running run, no workflow
        has more running runs than it allows and no pool more running jobs than slots."""
        del files
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

    # -- reads ---------------------------------------------------------------------------
    @tool(read_only=True, produces=["workflow_id"])
    def list_workflows(self) -> dict[str, Any]:
        """List the workflows with their owners, whether they are paused and their active runs.

        Returns:
            Workflows: id, name, team, paused reason, job count, required parameters and the ids
            of runs still running.
        """
        rows = []
        for wf in sorted(self.state.workflows.values(), key=lambda w: w.workflow_id):
            rows.append(
                {
                    "workflow_id": wf.workflow_id,
                    "name": wf.name,
                    "team": wf.team,
                    "paused": bool(wf.paused_reason),
                    "paused_reason": wf.paused_reason,
                    "jobs": len(wf.jobs),
                    "required_params": sorted(p for p, spec in wf.params.items() if spec.required),
                    "active_runs": self._active_runs(wf.workflow_id),
                }
            )
        return {"workflows": rows, "count": len(rows)}

    @tool(read_only=True, consumes=["workflow_id"])
    def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        """Show a workflow's DAG: jobs with dependencies, pool, retry policy, and its parameters.

        Args:
            workflow_id: The workflow id, e.g. orders-etl-us.

        Returns:
            The workflow with its parameters (kind, default, required, locked, limits) and its jobs
            in dependency order (deps, pool, optional, retry policy with max attempts, runtime,
            parameters used, input dataset, memory needed).
        """
        wf = self._workflow(workflow_id)
        jobs = []
        for name in _topo(wf):
            jd = wf.jobs[name]
            jobs.append({**jd.model_dump(exclude={"flaky_pct"}), "max_attempts": self._max_attempts(jd)})
        params = {name: spec.model_dump() for name, spec in wf.params.items()}
        return {**wf.model_dump(exclude={"jobs", "params"}), "params": params, "jobs": jobs}

    @tool(read_only=True, consumes=["workflow_id"], produces=["run_id"])
    def list_runs(self, workflow_id: str = "", status: RunStatus | None = None) -> dict[str, Any]:
        """List runs, newest first.

        Args:
            workflow_id: Only runs of this workflow; all workflows when empty.
            status: Only runs in this status; all when omitted.

        Returns:
            Run summaries: run id, workflow, status, parameters, submitter, times and job counts
            by status.
        """
        if workflow_id:
            self._workflow(workflow_id)
        rows = []
        for run in self.state.runs.values():
            if (workflow_id and run.workflow_id != workflow_id) or (status and run.status != status):
                continue
            counts: dict[str, int] = {}
            for jr in run.jobs.values():
                shown = self._job_status(run, jr)
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

    @tool(read_only=True, consumes=["run_id"], produces=["job"])
    def get_run_status(self, run_id: str) -> dict[str, Any]:
        """Show a run and every job's status, attempts and last error, in dependency order.

        Args:
            run_id: The run id, e.g. RUN-7342.

        Returns:
            The run (status, effective parameters, protected) and its jobs: status, attempts used
            and allowed, last error code, next automatic retry time, dependencies; plus the jobs
            ready to start now, waiting for a retry, or failed and waiting for the operator.
        """
        run = self._run(run_id)
        wf = self.state.workflows[run.workflow_id]
        now = self.now()
        jobs: list[dict[str, Any]] = []
        for name in _topo(wf):
            jr, jd = run.jobs[name], wf.jobs[name]
            last = jr.attempts[-1] if jr.attempts else None
            jobs.append(
                {
                    "job": name,
                    "status": self._job_status(run, jr),
                    "attempts": len(jr.attempts),
                    "max_attempts": self._max_attempts(jd),
                    "last_error_code": last.error_code if last else "",
                    "next_retry_at": jr.next_retry_at,
                    "deps": list(jd.deps),
                    "optional": jd.optional,
                    "pool": jd.pool,
                }
            )
        due = [
            j["job"] for j in jobs if j["status"] == "retry_wait" and parse_time(j["next_retry_at"]) <= now
        ]
        return {
            "run_id": run.run_id,
            "workflow_id": run.workflow_id,
            "status": run.status,
            "params": self._values(run),
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

    @tool(read_only=True, consumes=["run_id", "job"])
    def get_job(self, run_id: str, job: str) -> dict[str, Any]:
        """Show one job of a run: definition, status, every attempt, dependencies and its input.

        Args:
            run_id: The run id, e.g. RUN-7342.
            job: The job name, e.g. extract_orders.

        Returns:
            The job's definition and status, its attempts (worker, times, outcome, error code and
            message, parameters read), its dependencies' statuses, and for jobs with an input
            dataset whether the partition has landed and when it is expected.
        """
        run = self._run(run_id)
        jr, jd = self._job(run, job)
        wf = self.state.workflows[run.workflow_id]
        info: dict[str, Any] = {
            "run_id": run_id,
            "job": job,
            "status": self._job_status(run, jr),
            "definition": {**jd.model_dump(exclude={"flaky_pct"}), "max_attempts": self._max_attempts(jd)},
            "attempts": [a.model_dump() for a in jr.attempts],
            "next_retry_at": jr.next_retry_at,
            "note": jr.note,
            "deps": {dep: self._job_status(run, run.jobs[dep]) for dep in jd.deps},
            "downstream": sorted(_descendants(wf, job)),
        }
        if jd.input_dataset:
            info["input"] = self._input(run, jd)
        return info

    @tool(read_only=True, consumes=["run_id", "job"])
    def get_job_logs(self, run_id: str, job: str, attempt: int = 0) -> dict[str, Any]:
        """Read the log of one attempt of a job, with the runbook hint for its error.

        Args:
            run_id: The run id, e.g. RUN-7342.
            job: The job name, e.g. train_model.
            attempt: Attempt number (1 = first); 0 for the latest attempt.

        Returns:
            The attempt number and its log lines (start, parameters, input, heartbeats, result,
            error with the runbook's fix, and what the scheduler will do next).
        """
        run = self._run(run_id)
        jr, jd = self._job(run, job)
        if not jr.attempts:
            self.fail(
                "not_found",
                f"job {job} of {run_id} has no attempts yet (status {jr.status})",
                run_id=run_id,
                job=job,
                status=jr.status,
            )
        if not 0 <= attempt <= len(jr.attempts):
            self.fail(
                "not_found",
                f"job {job} of {run_id} has attempts 1..{len(jr.attempts)}, not {attempt}",
                run_id=run_id,
                job=job,
                attempts=len(jr.attempts),
            )
        chosen = jr.attempts[(attempt or len(jr.attempts)) - 1]
        return {
            "run_id": run_id,
            "job": job,
            "attempt": chosen.number,
            "lines": self._log(run, jr, jd, chosen),
        }

    @tool(read_only=True)
    def list_pools(self) -> dict[str, Any]:
        """List worker pools: slots, free slots, workers and the jobs holding slots right now.

        Returns:
            Pools with slots and free slots, their workers (online or lost, last heartbeat) and the
            running jobs (run, job, worker, started, expected finish, minutes since the worker's
            last heartbeat and whether the job is stalled).
        """
        now = self.now()
        timeout = self.data.json("scheduler_policy.json")["heartbeat_timeout_minutes"]
        rows = []
        for pool in sorted(self.state.pools.values(), key=lambda p: p.pool_id):
            running = []
            for run, jr in self._running(pool.pool_id):
                attempt = jr.attempts[-1]
                seen = self._seen(self.state.workers[attempt.worker])
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
                {**self.state.workers[w].model_dump(), "last_seen_at": iso(self._seen(self.state.workers[w]))}
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

    # -- writes --------------------------------------------------------------------------
    @tool(
        goal="start a new run of {workflow_id}[ with the parameters {params}]",
        consumes=["workflow_id"],
        produces=["run_id"],
    )
    def submit_run(self, workflow_id: str, params: list[str] | None = None) -> dict[str, Any]:
        """Start a new run of a workflow with parameters; its root jobs become ready.

        Args:
            workflow_id: The workflow id, e.g. orders-etl-eu.
            params: Parameters as "name=value" strings, e.g. ["partition_date=2026-01-04"];
                unspecified ones take the workflow default.

        Returns:
            run_id, status, the effective parameters and the jobs ready to start.
        """
        self._sweep()
        wf = self._workflow(workflow_id)
        if wf.paused_reason:
            self.fail(
                "invalid_transition",
                f"workflow {workflow_id} is paused: {wf.paused_reason}",
                workflow_id=workflow_id,
                paused_reason=wf.paused_reason,
            )
        given: dict[str, str] = {}
        for item in params or []:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                self.fail("invalid_argument", f"parameter '{item}' is not name=value", field="params")
            if name.strip() in given:
                self.fail("invalid_argument", f"parameter '{name.strip()}' given twice", field="params")
            given[name.strip()] = value.strip()
        for name, value in given.items():
            self._check_param(wf, name, value)
        missing = sorted(
            p for p, spec in wf.params.items() if spec.required and not given.get(p, spec.default)
        )
        if missing:
            self.fail(
                "invalid_argument",
                f"missing required parameters: {', '.join(missing)}",
                field="params",
                missing=missing,
            )
        active = self._active_runs(workflow_id)
        if len(active) >= wf.max_active_runs:
            self.fail(
                "conflict",
                f"workflow {workflow_id} already has {len(active)} active run(s) {', '.join(active)} "
                f"(max_active_runs {wf.max_active_runs}); finish or cancel it first",
                workflow_id=workflow_id,
                active_runs=active,
            )
        run_id = f"RUN-{self.state.next_run_number}"
        self.state.next_run_number += 1
        run = Run(
            run_id=run_id,
            workflow_id=workflow_id,
            params=given,
            submitted_by="operator",
            submitted_at=iso(self.now()),
            chaos_seed=self.rng.randrange(1, 1_000_000),
            jobs={name: JobRun(job=name) for name in wf.jobs},
        )
        self.state.runs[run_id] = run
        self._settle(run)
        return {
            "run_id": run_id,
            "status": run.status,
            "params": self._values(run),
            "ready": [n for n in _topo(wf) if run.jobs[n].status == "ready"],
        }

    @tool(goal="run the next scheduling wave of {run_id}", consumes=["run_id"], produces=["job"])
    def run_ready_jobs(self, run_id: str) -> dict[str, Any]:
        """Execute one scheduling wave of a run: start every ready job that has a free pool slot.

        Jobs whose runtime fits in the 10-minute wave finish within it; longer jobs keep their slot
        until they finish. Jobs waiting for a retry start once next_retry_at has passed.

        Args:
            run_id: A running run, e.g. RUN-7342.

        Returns:
            wave number, the attempts made (job, attempt, worker, outcome, error code, next retry),
            jobs left waiting for a slot (with the jobs holding it) or for their backoff, and the
            run's status afterwards.
        """
        self._sweep()
        run = self._run(run_id)
        self._require_open(run)
        wf = self.state.workflows[run.workflow_id]
        now = self.now()
        free = {pid: pool.slots - len(self._running(pid)) for pid, pool in self.state.pools.items()}
        self.state.waves += 1
        wave = self.state.waves
        started, no_slot, backoff = [], [], []
        for name in _topo(wf):
            jr, jd = run.jobs[name], wf.jobs[name]
            if jr.status == "retry_wait" and parse_time(jr.next_retry_at) > now:
                backoff.append({"job": name, "next_retry_at": jr.next_retry_at})
                continue
            if jr.status not in ("ready", "retry_wait"):
                continue
            if free[jd.pool] <= 0:
                holders = [f"{r.run_id}/{j.job}" for r, j in self._running(jd.pool)]
                no_slot.append({"job": name, "pool": jd.pool, "held_by": holders})
                continue
            free[jd.pool] -= 1
            attempt = self._execute(run, jd, jr, wave)
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
        self._settle(run)
        return {
            "run_id": run_id,
            "wave": wave,
            "started": started,
            "waiting_for_slot": no_slot,
            "waiting_for_backoff": backoff,
            "run_status": run.status,
            "ready_next": [n for n in _topo(wf) if run.jobs[n].status == "ready"],
        }

    @tool(goal="queue job {job} of {run_id} for another attempt", consumes=["run_id", "job"])
    def retry_job(self, run_id: str, job: str) -> dict[str, Any]:
        """Queue a failed job for another attempt in the next wave (attempts stay limited).

        Fix the cause first (see get_job_logs): a retry with the same inputs fails the same way
        and uses up an attempt.

        Args:
            run_id: A running run.
            job: A job in status failed with attempts left.

        Returns:
            run_id, job, status ready and attempts used / allowed.
        """
        self._sweep()
        run = self._run(run_id)
        self._require_open(run)
        jr, jd = self._job(run, job)
        limit = self._max_attempts(jd)
        if jr.status != "failed" or len(jr.attempts) >= limit:
            why = {
                "retry_wait": f"it is already scheduled to retry automatically at {jr.next_retry_at}",
                "failed": f"all {limit} attempts are used up",
            }.get(jr.status, "only a failed job can be retried")
            self.fail(
                "invalid_transition",
                f"cannot retry {job} of {run_id} ({jr.status}): {why}",
                run_id=run_id,
                job=job,
                status=jr.status,
                attempts=len(jr.attempts),
                max_attempts=limit,
            )
        jr.status = "ready"
        jr.next_retry_at = ""
        self._settle(run)
        return {
            "run_id": run_id,
            "job": job,
            "status": jr.status,
            "attempts": len(jr.attempts),
            "max_attempts": limit,
        }

    @tool(goal="set {name} to {value} for {run_id}", consumes=["run_id"])
    def set_parameter(self, run_id: str, name: str, value: str) -> dict[str, Any]:
        """Change a parameter of a running run (jobs that run later read the new value).

        Refused when a succeeded or running job of the run already read the parameter: the run's
        outputs would mix two values.

        Args:
            run_id: A running run.
            name: A parameter declared by the run's workflow.
            value: The new value in the parameter's format (see get_workflow).

        Returns:
            run_id, name, the old and new value, and the jobs that will read it.
        """
        self._sweep()
        run = self._run(run_id)
        self._require_open(run)
        if run.protected:
            self.fail(
                "permission_denied",
                f"run {run_id} is protected (submitted by {run.submitted_by}); the operator lacks "
                "'run:modify_protected'",
                run_id=run_id,
                permission="run:modify_protected",
            )
        wf = self.state.workflows[run.workflow_id]
        self._check_param(wf, name, value)
        for other in run.jobs.values():
            for attempt in other.attempts:
                if name in attempt.params and attempt.outcome in ("succeeded", "running"):
                    self.fail(
                        "conflict",
                        f"job {other.job} already read {name}={attempt.params[name]} "
                        f"(attempt {attempt.number}, {attempt.outcome}); changing it would mix values "
                        "in one run — submit a new run instead",
                        run_id=run_id,
                        name=name,
                        job=other.job,
                    )
        old = self._values(run).get(name, "")
        run.params[name] = value
        readers = [j for j in _topo(wf) if name in wf.jobs[j].uses and run.jobs[j].status not in FINAL]
        return {"run_id": run_id, "name": name, "old": old, "new": value, "read_by": readers}

    @tool(goal="skip the optional job {job} of {run_id}; the reason is {reason}", consumes=["run_id", "job"])
    def mark_skipped(self, run_id: str, job: str, reason: str) -> dict[str, Any]:
        """Skip an optional job that has not succeeded; jobs depending on it may then run.

        Args:
            run_id: A running run.
            job: An optional job that is pending, ready, waiting for a retry or failed with attempts left.
            reason: Why it is skipped (recorded on the job).

        Returns:
            run_id, job, status skipped, the jobs now ready and the run's status.
        """
        self._sweep()
        run = self._run(run_id)
        self._require_open(run)
        jr, jd = self._job(run, job)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        if not jd.optional:
            self.fail(
                "invalid_transition",
                f"{job} is a required job of {run.workflow_id}; only optional jobs "
                "can be skipped (fix and retry it, or cancel it)",
                run_id=run_id,
                job=job,
                status=jr.status,
            )
        if not self._open_job(jr, jd) or jr.status == "running":
            self.fail(
                "invalid_transition",
                f"{job} of {run_id} is {jr.status}; only a job that has not finished "
                "or started can be skipped",
                run_id=run_id,
                job=job,
                status=jr.status,
            )
        jr.status, jr.skipped_manually = "skipped", True
        jr.finished_at, jr.note, jr.next_retry_at = iso(self.now()), reason.strip(), ""
        self._settle(run)
        wf = self.state.workflows[run.workflow_id]
        return {
            "run_id": run_id,
            "job": job,
            "status": jr.status,
            "run_status": run.status,
            "ready": [n for n in _topo(wf) if run.jobs[n].status == "ready"],
        }

    @tool(goal="cancel job {job} of {run_id}; the reason is {reason}", consumes=["run_id", "job"])
    def cancel_job(self, run_id: str, job: str, reason: str) -> dict[str, Any]:
        """Cancel one unfinished job (a running one frees its slot); every job downstream is skipped.

        Args:
            run_id: A running run that is not protected.
            job: A job that has not finished (pending, ready, running, waiting for a retry, or
                failed with attempts left).
            reason: Why it is cancelled (recorded on the job).

        Returns:
            run_id, job, status cancelled, the downstream jobs skipped, the pool slot freed (if it
            was running) and the run's status.
        """
        self._sweep()
        run = self._run(run_id)
        self._require_open(run)
        jr, jd = self._job(run, job)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        self._require_cancellable(run)
        if not self._open_job(jr, jd):
            self.fail(
                "invalid_transition",
                f"{job} of {run_id} is {jr.status} and finished; nothing to cancel",
                run_id=run_id,
                job=job,
                status=jr.status,
            )
        freed = jd.pool if jr.status == "running" else ""
        self._cancel(jr, reason.strip())
        wf = self.state.workflows[run.workflow_id]
        skipped = []
        for name in _topo(wf):
            other = run.jobs[name]
            if name in _descendants(wf, job) and other.status not in FINAL:
                other.status, other.note = "skipped", f"upstream {job} cancelled"
                other.finished_at, other.next_retry_at = iso(self.now()), ""
                skipped.append(name)
        self._settle(run)
        return {
            "run_id": run_id,
            "job": job,
            "status": jr.status,
            "skipped": skipped,
            "freed_pool": freed,
            "run_status": run.status,
        }

    @tool(goal="cancel {run_id}; the reason is {reason}", undoes=["submit_run"], consumes=["run_id"])
    def cancel_run(self, run_id: str, reason: str) -> dict[str, Any]:
        """Cancel a whole run: every unfinished job is cancelled and running ones free their slots.

        Args:
            run_id: A running run that is not protected.
            reason: Why it is cancelled (recorded on the run).

        Returns:
            run_id, status cancelled and the jobs cancelled.
        """
        self._sweep()
        run = self._run(run_id)
        self._require_open(run)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        self._require_cancellable(run)
        wf = self.state.workflows[run.workflow_id]
        cancelled = []
        for name in _topo(wf):
            jr = run.jobs[name]
            if self._open_job(jr, wf.jobs[name]):
                self._cancel(jr, reason.strip())
                cancelled.append(name)
        run.status, run.finished_at, run.cancel_reason = "cancelled", iso(self.now()), reason.strip()
        return {"run_id": run_id, "status": run.status, "cancelled_jobs": cancelled}

    # -- lookups and guards -------------------------------------------------------------
    def _workflow(self, workflow_id: str) -> Workflow:
        wf = self.state.workflows.get(workflow_id)
        if wf is None:
            self.fail("not_found", f"no workflow '{workflow_id}'", workflow_id=workflow_id)
        return wf

    def _run(self, run_id: str) -> Run:
        run = self.state.runs.get(run_id)
        if run is None:
            self.fail("not_found", f"no run '{run_id}'", run_id=run_id)
        return run

    def _job(self, run: Run, job: str) -> tuple[JobRun, JobDef]:
        wf = self.state.workflows[run.workflow_id]
        if job not in wf.jobs:
            self.fail(
                "not_found",
                f"workflow {wf.workflow_id} has no job '{job}'; jobs: {', '.join(_topo(wf))}",
                run_id=run.run_id,
                job=job,
            )
        return run.jobs[job], wf.jobs[job]

    def _require_open(self, run: Run) -> None:
        if run.status != "running":
            self.fail(
                "invalid_transition",
                f"run {run.run_id} is {run.status} (finished {run.finished_at}); "
                "a finished run never changes — submit a new run",
                run_id=run.run_id,
                status=run.status,
            )

    def _require_cancellable(self, run: Run) -> None:
        if run.protected:
            self.fail(
                "permission_denied",
                f"run {run.run_id} is protected (submitted by {run.submitted_by}); the operator lacks "
                "'run:cancel_protected'",
                run_id=run.run_id,
                permission="run:cancel_protected",
            )

    def _check_param(self, wf: Workflow, name: str, value: str) -> None:
        spec = wf.params.get(name)
        if spec is None:
            self.fail(
                "invalid_argument",
                f"workflow {wf.workflow_id} has no parameter '{name}'; "
                f"parameters: {', '.join(sorted(wf.params))}",
                field="name",
                accepted=sorted(wf.params),
            )
        if spec.locked and value != spec.default:
            self.fail(
                "permission_denied",
                f"parameter {name} of {wf.workflow_id} is locked to '{spec.default}'; "
                "the operator lacks 'param:override_locked'",
                permission="param:override_locked",
                name=name,
            )
        problem = _param_problem(spec, value)
        if problem:
            self.fail("invalid_argument", f"invalid value '{value}' for {name}: {problem}", field=name)

    # -- derived values ------------------------------------------------------------------
    def _values(self, run: Run) -> dict[str, str]:
        """Effective parameters: the run's values over the workflow defaults."""
        wf = self.state.workflows[run.workflow_id]
        values = {name: spec.default for name, spec in wf.params.items() if spec.default}
        values.update({k: v for k, v in run.params.items() if v})
        return values

    def _policy(self, jd: JobDef) -> Any:
        return self.data.json("retry_policies.json")[jd.retry_policy]

    def _max_attempts(self, jd: JobDef) -> int:
        return int(self._policy(jd)["max_attempts"])

    def _open_job(self, jr: JobRun, jd: JobDef) -> bool:
        """Not finished: a failed job is still open while it has attempts left."""
        if jr.status == "failed":
            return len(jr.attempts) < self._max_attempts(jd)
        return jr.status not in FINAL

    def _active_runs(self, workflow_id: str) -> list[str]:
        return sorted(
            r.run_id
            for r in self.state.runs.values()
            if r.workflow_id == workflow_id and r.status == "running"
        )

    def _finishes(self, jr: JobRun) -> bool:
        """A running job whose worker is alive completes at its expected finish time."""
        attempt = jr.attempts[-1]
        worker = self.state.workers[attempt.worker]
        return worker.status == "online" and parse_time(attempt.expected_finish_at) <= self.now()

    def _job_status(self, run: Run, jr: JobRun) -> str:
        if jr.status == "running" and self._finishes(jr):
            return "succeeded"
        return jr.status

    def _running(self, pool_id: str) -> list[tuple[Run, JobRun]]:
        """Jobs holding a slot of the pool now (across all runs)."""
        held = []
        for run in self.state.runs.values():
            wf = self.state.workflows[run.workflow_id]
            for jr in run.jobs.values():
                if jr.status == "running" and wf.jobs[jr.job].pool == pool_id and not self._finishes(jr):
                    held.append((run, jr))
        return held

    def _seen(self, worker: Worker) -> datetime:
        """Online workers heartbeat continuously; a lost worker was last seen when it died."""
        return self.now() if worker.status == "online" else parse_time(worker.last_seen_at)

    def _input(self, run: Run, jd: JobDef) -> dict[str, Any]:
        dataset = self.state.datasets[jd.input_dataset]
        partition = self._values(run).get(jd.input_param, "")
        lands = dataset.partitions.get(partition)
        landed = sorted(p for p, at in dataset.partitions.items() if parse_time(at) <= self.now())
        return {
            "dataset": jd.input_dataset,
            "partition": partition,
            "available": lands is not None and parse_time(lands) <= self.now(),
            "expected_at": lands or "",
            "latest_available": landed[-1] if landed else "",
        }

    # -- transitions -----------------------------------------------------------------------
    def _sweep(self) -> None:
        """Materialize what the clock decided: long jobs on live workers finish when due."""
        for run in self.state.runs.values():
            if run.status != "running":
                continue
            for jr in run.jobs.values():
                if jr.status == "running" and self._finishes(jr):
                    attempt = jr.attempts[-1]
                    attempt.outcome, attempt.finished_at = "succeeded", attempt.expected_finish_at
                    jr.status, jr.finished_at = "succeeded", attempt.expected_finish_at
            self._settle(run)

    def _settle(self, run: Run) -> None:
        """Propagate failures downstream, promote jobs whose dependencies are met, close the run."""
        wf = self.state.workflows[run.workflow_id]
        now = iso(self.now())
        for name in _topo(wf):
            jr, jd = run.jobs[name], wf.jobs[name]
            if jr.status == "failed" and not self._open_job(jr, jd):
                for down in _descendants(wf, name):
                    other = run.jobs[down]
                    if other.status in ("pending", "ready"):
                        other.status, other.note, other.finished_at = "upstream_failed", f"{name} failed", now
            if jr.status == "pending" and all(self._satisfied(run, dep) for dep in jd.deps):
                jr.status = "ready"
        if run.status == "running" and not any(self._open_job(run.jobs[n], wf.jobs[n]) for n in wf.jobs):
            statuses = {jr.status for jr in run.jobs.values()}
            if statuses & {"failed", "upstream_failed"}:
                run.status = "failed"
            elif "cancelled" in statuses:
                run.status = "cancelled"
            else:
                run.status = "succeeded"
            run.finished_at = now

    def _satisfied(self, run: Run, dep: str) -> bool:
        jr = run.jobs[dep]
        return jr.status == "succeeded" or (jr.status == "skipped" and jr.skipped_manually)

    def _cancel(self, jr: JobRun, reason: str) -> None:
        now = iso(self.now())
        if jr.status == "running":
            attempt = jr.attempts[-1]
            attempt.outcome, attempt.finished_at, attempt.message = "cancelled", now, f"cancelled: {reason}"
        jr.status, jr.note, jr.finished_at, jr.next_retry_at = "cancelled", reason, now, ""

    def _execute(self, run: Run, jd: JobDef, jr: JobRun, wave: int) -> Attempt:
        """One attempt: its outcome is a pure function of the run, the job, the inputs and the clock."""
        now = self.now()
        pool = self.state.pools[jd.pool]
        online = [w for w in pool.workers if self.state.workers[w].status == "online"]
        number = len(jr.attempts) + 1
        values = self._values(run)
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
        code, message = self._outcome(run, jd, number, values)
        wave_minutes = self.data.json("scheduler_policy.json")["wave_minutes"]
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
        policy = self._policy(jd)
        retryable = self.data.json("error_codes.json")[code]["retryable"]
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

    def _outcome(self, run: Run, jd: JobDef, number: int, values: dict[str, str]) -> tuple[str, str]:
        """The error code and message of an attempt ('' when it succeeds)."""
        missing = [p for p in jd.uses if not values.get(p)]
        if missing:
            return "E_MISSING_PARAM", f"KeyError: run parameter '{missing[0]}' is not set and has no default"
        if jd.input_dataset:
            found = self._input(run, jd)
            if not found["available"]:
                when = (
                    f"; expected to land at {found['expected_at']}"
                    if found["expected_at"]
                    else "; not scheduled"
                )
                return "E_INPUT_MISSING", (
                    f"partition {jd.input_dataset}/{found['partition']} not found "
                    f"(latest available: {found['latest_available'] or 'none'}{when})"
                )
        if jd.min_memory_gb and int(values.get("memory_gb", "0")) < jd.min_memory_gb:
            peak = jd.min_memory_gb - 1 + _stable(run.chaos_seed, jd.name, "peak") % 10 / 10
            return "E_OOM", (
                f"container killed: memory limit {values.get('memory_gb')} GiB exceeded "
                f"(peak {peak:.1f} GiB; job needs {jd.min_memory_gb} GiB)"
            )
        if number == 1 and jd.flaky_pct and _stable(run.chaos_seed, jd.name) % 100 < jd.flaky_pct:
            return (
                "E_TRANSIENT",
                "ConnectionResetError: connection reset by peer while reading object storage",
            )
        return "", ""

    def _log(self, run: Run, jr: JobRun, jd: JobDef, attempt: Attempt) -> list[str]:
        limit = self._max_attempts(jd)
        lines = [
            f"{attempt.started_at} attempt {attempt.number}/{limit} started on {attempt.worker} "
            f"(pool {jd.pool}, wave {attempt.wave})",
            f"{attempt.started_at} params: "
            + (", ".join(f"{k}={v or '<unset>'}" for k, v in attempt.params.items()) or "(none)"),
        ]
        if jd.input_dataset:
            lines.append(
                f"{attempt.started_at} reading {jd.input_dataset}/{attempt.params.get(jd.input_param)}"
            )
        if attempt.outcome == "running":
            worker = self.state.workers[attempt.worker]
            if worker.status == "online":
                lines.append(f"{iso(self.now())} heartbeat from {worker.worker_id}: running")
            else:
                lines.append(f"{worker.last_seen_at} last heartbeat from {worker.worker_id}")
                lines.append(
                    f"{iso(self.now())} WARN E_WORKER_LOST: no heartbeat since {worker.last_seen_at}"
                )
                lines.append(f"runbook: {self.data.json('error_codes.json')['E_WORKER_LOST']['fix']}")
        elif attempt.outcome == "succeeded":
            lines.append(f"{attempt.finished_at} finished OK")
        elif attempt.outcome == "cancelled":
            lines.append(f"{attempt.finished_at} {attempt.message}")
        else:
            lines.append(f"{attempt.finished_at} ERROR {attempt.error_code}: {attempt.message}")
            lines.append(f"runbook: {self.data.json('error_codes.json')[attempt.error_code]['fix']}")
            if attempt.number == len(jr.attempts):
                if jr.status == "retry_wait":
                    lines.append(
                        f"scheduler: automatic retry at {jr.next_retry_at} (attempt {attempt.number + 1}"
                        f"/{limit})"
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

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A platform at 06:00: history, a late partition, a transient retry, a stalled GPU job, a backup."""
        from .generate import _Generator

        repo = data if data is not None else (cls.package.data if cls.package else Repository(None))
        base = cls.package.clock.base_time if cls.package else DEFAULT_BASE_TIME
        return Initial(state=_Generator(cls, random.Random(seed), max(1, size), repo, base).build())


def _param_problem(spec: ParamSpec, value: str) -> str:
    """Why ``value`` is not acceptable for ``spec`` ('' when it is)."""
    if spec.kind == "enum":
        return "" if value in spec.choices else f"expected one of {', '.join(spec.choices)}"
    if spec.kind == "int":
        if not re.fullmatch(r"-?\d+", value):
            return "expected an integer"
        low = spec.min if spec.min is not None else -(10**9)
        high = spec.max if spec.max is not None else 10**9
        return "" if low <= int(value) <= high else f"expected an integer from {low} to {high}"
    if not PARAM_FORMATS[spec.kind].match(value):
        return {"date": "expected YYYY-MM-DD", "month": "expected YYYY-MM"}.get(
            spec.kind, "expected lower-case letters, digits, '.', '_' or '-' (1-64 characters)"
        )
    return ""
