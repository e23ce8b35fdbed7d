"""Job scheduler: the State models (workflows and their DAGs, runs, pools, workers, datasets),
their parameter formats and the links between them, checked record by record."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from envcraft import IsoTime, Repository, StateModel, dangling, invariant, misfiled

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

    # Each link is checked per record, so a call re-checks only the records it touched and those
    # whose links it changed (envcraft.core.invariants): the scheduler follows these links on
    # every wave without looking.
    @invariant("workflows")
    def _workflow_links_resolve(self, key: str, wf: Workflow) -> None:
        """A DAG names its own jobs, known pools, datasets and retry policies."""
        _refuse([*misfiled({key: wf}, "workflow_id"), *_workflow_problems(wf, self)])

    @invariant("runs")
    def _run_tracks_its_workflow(self, key: str, run: Run) -> None:
        """A run tracks exactly its workflow's jobs, with acceptable parameters."""
        _refuse([*misfiled({key: run}, "run_id"), *_run_problems(run, self)])

    @invariant("pools")
    def _pool_names_its_workers(self, key: str, pool: Pool) -> None:
        _refuse(
            [*misfiled({key: pool}, "pool_id"), *dangling(pool.pool_id, "worker", pool.workers, self.workers)]
        )

    @invariant("workers")
    def _worker_names_its_pool(self, key: str, worker: Worker) -> None:
        _refuse(
            [
                *misfiled({key: worker}, "worker_id"),
                *dangling(worker.worker_id, "pool", [worker.pool], self.pools),
            ]
        )

    @invariant("datasets")
    def _dataset_filed(self, key: str, dataset: Dataset) -> None:
        _refuse(misfiled({key: dataset}, "dataset_id"))


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems[:5]))


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
        if spec.default and (problem := param_problem(spec, spec.default)):
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
        elif value and (problem := param_problem(wf.params[name], value)):
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


def param_problem(spec: ParamSpec, value: str) -> str:
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


def param_refusal(wf: Workflow, name: str, value: str) -> tuple[str, str, dict[str, Any]] | None:
    """Why a run of ``wf`` refuses ``value`` for its parameter ``name``, as the error a tool
    fails with (category, message, details); None when it takes it."""
    spec = wf.params.get(name)
    if spec is None:
        message = (
            f"workflow {wf.workflow_id} has no parameter '{name}'; parameters: {', '.join(sorted(wf.params))}"
        )
        return "invalid_argument", message, {"field": "name", "accepted": sorted(wf.params)}
    if spec.locked and value != spec.default:
        message = (
            f"parameter {name} of {wf.workflow_id} is locked to '{spec.default}'; "
            "the operator lacks 'param:override_locked'"
        )
        return "permission_denied", message, {"permission": "param:override_locked", "name": name}
    problem = param_problem(spec, value)
    if problem:
        return "invalid_argument", f"invalid value '{value}' for {name}: {problem}", {"field": name}
    return None
