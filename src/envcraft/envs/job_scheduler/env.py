"""Job scheduler: drive workflow runs (DAGs of jobs) on worker pools, with retries and backoff."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from envcraft import Entity, Environment, Initial, Job, Repository, iso, tool

from .generate import Generator
from .rules import (
    FINAL,
    active_runs,
    attempt_log,
    cancel_job_run,
    descendants,
    effective_params,
    input_status,
    is_open,
    job_status,
    max_attempts,
    pools_view,
    run_status,
    run_wave,
    runs_view,
    settle,
    sweep,
    topo_order,
    violations,
    workflows_view,
)
from .state import JobDef, JobRun, Run, RunStatus, SchedulerState, Workflow, param_refusal


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
            (
                "the run of {workflow_id} submitted on {submitted_at:when}",
                "the {status} run of {workflow_id} submitted on {submitted_at:when}",
            ),
            id_known=True,
            vary=("submitted_at",),
        ),
        Entity("pools", "worker pool", ("the {pool_id} pool",), id_known=True),
        Entity("workers", "worker", ("worker {worker_id}",), id_known=True),
        Entity("datasets", "dataset", ("dataset {dataset_id}",), id_known=True),
    )
    jobs = (
        Job(
            "cancel a stuck job and move on",
            ("cancel_job", "run_ready_jobs"),
            # one wave, as the steps do: "let the rest carry on" paid one reading of three (round 29)
            "cancel job {job} of {run_id} ({reason}), then start the next wave of the run",
        ),
    )

    @classmethod
    def rule_violations(cls, state: SchedulerState, files: Mapping[str, str]) -> list[str]:
        """A finished run has no unfinished job, a running job belongs to a running run, no workflow
        has more running runs than it allows and no pool more running jobs than slots."""
        del files
        return violations(state)

    # -- reads ---------------------------------------------------------------------------
    @tool(read_only=True, produces=["workflow_id"])
    def list_workflows(self) -> dict[str, Any]:
        """List the workflows with their owners, whether they are paused and their active runs.

        Returns:
            Workflows: id, name, team, paused reason, job count, required parameters and the ids
            of runs still running.
        """
        return workflows_view(self.state)

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
        wf = self.lookup(self.state.workflows, workflow_id, "workflow", workflow_id=workflow_id)
        jobs = []
        for name in topo_order(wf):
            jd = wf.jobs[name]
            jobs.append({**jd.model_dump(exclude={"flaky_pct"}), "max_attempts": max_attempts(self.data, jd)})
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
            self.lookup(self.state.workflows, workflow_id, "workflow", workflow_id=workflow_id)
        return runs_view(self.state, self.now(), workflow_id, status)

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
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
        return run_status(self.state, self.data, self.now(), run)

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
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
        jr, jd = self._job(run, job)
        wf = self.state.workflows[run.workflow_id]
        info: dict[str, Any] = {
            "run_id": run_id,
            "job": job,
            "status": job_status(self.state, self.now(), jr),
            "definition": {
                **jd.model_dump(exclude={"flaky_pct"}),
                "max_attempts": max_attempts(self.data, jd),
            },
            "attempts": [a.model_dump() for a in jr.attempts],
            "next_retry_at": jr.next_retry_at,
            "note": jr.note,
            "deps": {dep: job_status(self.state, self.now(), run.jobs[dep]) for dep in jd.deps},
            "downstream": sorted(descendants(wf, job)),
        }
        if jd.input_dataset:
            info["input"] = input_status(self.state, self.now(), run, jd)
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
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
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
            "lines": attempt_log(self.state, self.data, self.now(), jr, jd, chosen),
        }

    @tool(read_only=True)
    def list_pools(self) -> dict[str, Any]:
        """List worker pools: slots, free slots, workers and the jobs holding slots right now.

        Returns:
            Pools with slots and free slots, their workers (online or lost, last heartbeat) and the
            running jobs (run, job, worker, started, expected finish, minutes since the worker's
            last heartbeat and whether the job is stalled).
        """
        return pools_view(self.state, self.data, self.now())

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
        sweep(self.state, self.data, self.now())
        wf = self.lookup(self.state.workflows, workflow_id, "workflow", workflow_id=workflow_id)
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
        active = active_runs(self.state, workflow_id)
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
        settle(self.state, self.data, self.now(), run)
        return {
            "run_id": run_id,
            "status": run.status,
            "params": effective_params(self.state, run),
            "ready": [n for n in topo_order(wf) if run.jobs[n].status == "ready"],
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
        sweep(self.state, self.data, self.now())
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
        self._require_open(run)
        return run_wave(self.state, self.data, self.now(), run)

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
        sweep(self.state, self.data, self.now())
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
        self._require_open(run)
        jr, jd = self._job(run, job)
        limit = max_attempts(self.data, jd)
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
        settle(self.state, self.data, self.now(), run)
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
        sweep(self.state, self.data, self.now())
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
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
        old = effective_params(self.state, run).get(name, "")
        run.params[name] = value
        readers = [j for j in topo_order(wf) if name in wf.jobs[j].uses and run.jobs[j].status not in FINAL]
        return {"run_id": run_id, "name": name, "old": old, "new": value, "read_by": readers}

    @tool(
        goal="skip the optional job {job} of {run_id}; the reason is {reason}",
        consumes=["run_id", "job"],
        examples={"reason": ("late upstream data", "public holiday", "covered by the manual rerun")},
    )
    def mark_skipped(self, run_id: str, job: str, reason: str) -> dict[str, Any]:
        """Skip an optional job that has not succeeded; jobs depending on it may then run.

        Args:
            run_id: A running run.
            job: An optional job that is pending, ready, waiting for a retry or failed with attempts left.
            reason: Why it is skipped (recorded on the job).

        Returns:
            run_id, job, status skipped, the jobs now ready and the run's status.
        """
        sweep(self.state, self.data, self.now())
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
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
        if not is_open(self.data, jr, jd) or jr.status == "running":
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
        settle(self.state, self.data, self.now(), run)
        wf = self.state.workflows[run.workflow_id]
        return {
            "run_id": run_id,
            "job": job,
            "status": jr.status,
            "run_status": run.status,
            "ready": [n for n in topo_order(wf) if run.jobs[n].status == "ready"],
        }

    @tool(
        goal="cancel job {job} of {run_id}; the reason is {reason}",
        consumes=["run_id", "job"],
        examples={"reason": ("replaced by the new pipeline", "report retired", "owner asked to stop it")},
    )
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
        sweep(self.state, self.data, self.now())
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
        self._require_open(run)
        jr, jd = self._job(run, job)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        self._require_cancellable(run)
        if not is_open(self.data, jr, jd):
            self.fail(
                "invalid_transition",
                f"{job} of {run_id} is {jr.status} and finished; nothing to cancel",
                run_id=run_id,
                job=job,
                status=jr.status,
            )
        freed = jd.pool if jr.status == "running" else ""
        cancel_job_run(self.now(), jr, reason.strip())
        wf = self.state.workflows[run.workflow_id]
        skipped = []
        for name in topo_order(wf):
            other = run.jobs[name]
            if name in descendants(wf, job) and other.status not in FINAL:
                other.status, other.note = "skipped", f"upstream {job} cancelled"
                other.finished_at, other.next_retry_at = iso(self.now()), ""
                skipped.append(name)
        settle(self.state, self.data, self.now(), run)
        return {
            "run_id": run_id,
            "job": job,
            "status": jr.status,
            "skipped": skipped,
            "freed_pool": freed,
            "run_status": run.status,
        }

    @tool(
        goal="cancel {run_id}; the reason is {reason}",
        undoes=["submit_run"],
        consumes=["run_id"],
        examples={"reason": ("wrong parameters", "duplicate of the morning run", "upstream data incomplete")},
    )
    def cancel_run(self, run_id: str, reason: str) -> dict[str, Any]:
        """Cancel a whole run: every unfinished job is cancelled and running ones free their slots.

        Args:
            run_id: A running run that is not protected.
            reason: Why it is cancelled (recorded on the run).

        Returns:
            run_id, status cancelled and the jobs cancelled.
        """
        sweep(self.state, self.data, self.now())
        run = self.lookup(self.state.runs, run_id, "run", run_id=run_id)
        self._require_open(run)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        self._require_cancellable(run)
        wf = self.state.workflows[run.workflow_id]
        cancelled = []
        for name in topo_order(wf):
            jr = run.jobs[name]
            if is_open(self.data, jr, wf.jobs[name]):
                cancel_job_run(self.now(), jr, reason.strip())
                cancelled.append(name)
        run.status, run.finished_at, run.cancel_reason = "cancelled", iso(self.now()), reason.strip()
        return {"run_id": run_id, "status": run.status, "cancelled_jobs": cancelled}

    # -- guards ------------------------------------------------------------------------
    def _job(self, run: Run, job: str) -> tuple[JobRun, JobDef]:
        wf = self.state.workflows[run.workflow_id]
        if job not in wf.jobs:
            self.fail(
                "not_found",
                f"workflow {wf.workflow_id} has no job '{job}'; jobs: {', '.join(topo_order(wf))}",
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
        refusal = param_refusal(wf, name, value)
        if refusal is not None:
            category, message, details = refusal
            self.fail(category, message, **details)

    # -- initial states ------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A platform at 06:00: history, a late partition, a transient retry, a stalled GPU job, a backup."""
        generator = Generator(cls, random.Random(seed), max(1, size), cls.repository(data), cls.base_time())
        return Initial(state=generator.build())
