"""The seeded S0 generator behind :meth:`~.env.JobScheduler.generate`.

Job scheduler (workflow DAGs, worker pools, retries with backoff). Runs once per initial state
(seed, size), never during a tool call; it builds the State models of ``state.py`` by calling
the environment's own tools (the class is passed in, so this module never imports ``env.py``).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from envcraft import Clock, Environment, Repository, is_error, iso, parse_time, thaw

from .rules import stable_hash
from .state import Attempt, Dataset, JobDef, ParamSpec, Pool, Run, SchedulerState, Worker, Workflow


class Generator:
    """Builds S0 by driving the real transition function through a simulated past."""

    def __init__(
        self, env_class: type[Environment], rng: random.Random, size: int, data: Repository, base: datetime
    ) -> None:
        self.rng = rng
        self.size = size
        self.data = data
        self.base = base
        self.templates = data.json("workflow_templates.json")
        self.regions = list(self.templates["regions"][: size + 1])
        self.late = rng.choice(self.regions)
        self.state = SchedulerState(next_run_number=7300 + rng.randrange(0, 500))
        self.env = env_class(self.state, data=data, seed=rng.randrange(1 << 30))
        self.tick = timedelta(minutes=10)
        self.index = 0

    def build(self) -> SchedulerState:
        self._platform()
        day = self.base.date()
        yesterday, before = (day - timedelta(days=1)).isoformat(), (day - timedelta(days=2)).isoformat()
        # History: yesterday's nightly runs and last month's billing close, all simulated to the end.
        for i, region in enumerate(self.regions):
            self._finish(self._submit(f"orders-etl-{region}", -(24 - 2 * i) * 60, partition_date=before))
        self._finish(self._submit("billing-close", -33 * 24 * 60, period=_month(day, -2)))
        self._finish(self._submit("search-reindex", -3 * 24 * 60))
        self._stalled_training(before)
        # Today, in time order: billing hits a transient error and waits in backoff, the backup
        # holds an etl slot for hours, one region's partition is late, the others are fresh or under way.
        billing = self._submit("billing-close", -60, period=_month(day, -1), chaos=("reconcile_payments", 50))
        self._wave(billing, -60)
        backup = self._submit("nightly-backup", -40, submitted_by="sre-oncall", protected=True)
        self._wave(backup, -40)
        late = self._submit(f"orders-etl-{self.late}", -35, partition_date=yesterday)
        self._wave(late, -30)
        self._wave(billing, -20)
        self._wave(late, -20)
        for i, region in enumerate(r for r in self.regions if r != self.late):
            run = self._submit(f"orders-etl-{region}", -15 + i, partition_date=yesterday)
            if self.rng.random() < 0.5:
                self._wave(run, -10 + i)
        for template in self.templates["templates"]:
            if template.get("paused_reason"):
                self.state.workflows[template["key"]].paused_reason = template["paused_reason"]
        return self.state

    def _at(self, minutes: float) -> None:
        """Point the simulated clock at ``base + minutes`` for the next action."""
        self.index += 1
        when = self.base + timedelta(minutes=minutes)
        self.env.clock = Clock(when - self.tick * self.index, self.tick)
        self.env.action_index = self.index

    def _call(self, minutes: float, tool_name: str, args: dict[str, Any]) -> dict[str, Any]:
        self._at(minutes)
        result = self.env.invoke(tool_name, args)
        if is_error(result):
            raise RuntimeError(f"generator step {tool_name}{args} failed: {result}")
        return result

    def _platform(self) -> None:
        for pool_id, cfg in self.templates["pools"].items():
            workers = [f"w-{pool_id}-{i}" for i in range(1, cfg["workers"] + 1)]
            self.state.pools[pool_id] = Pool(pool_id=pool_id, slots=cfg["slots"], workers=workers)
            for worker in workers:
                self.state.workers[worker] = Worker(
                    worker_id=worker, pool=pool_id, last_seen_at=iso(self.base)
                )
        for template in self.templates["templates"]:
            for region in self.regions if template.get("regional") else [""]:
                wf = _instantiate(template, region)
                self.state.workflows[wf.workflow_id] = wf
        day = self.base.date()
        landed = {(day - timedelta(days=back)).isoformat(): self._landing(day, back) for back in range(1, 8)}
        for region in self.regions:
            partitions = dict(landed)
            if region == self.late:  # yesterday's orders of this region land 70 minutes from now
                partitions[(day - timedelta(days=1)).isoformat()] = iso(self.base + timedelta(minutes=70))
            self.state.datasets[f"raw.orders.{region}"] = Dataset(
                dataset_id=f"raw.orders.{region}", partitions=partitions
            )
        self.state.datasets["raw.customers"] = Dataset(dataset_id="raw.customers", partitions=dict(landed))
        features = {**landed, day.isoformat(): iso(self.base + timedelta(hours=5))}
        self.state.datasets["features.churn"] = Dataset(dataset_id="features.churn", partitions=features)
        months = {_month(day, -back): iso(self.base - timedelta(days=30 * back - 25)) for back in range(1, 7)}
        self.state.datasets["finance.ledger"] = Dataset(dataset_id="finance.ledger", partitions=months)
        self.state.datasets["catalog.export"] = Dataset(dataset_id="catalog.export", partitions={})

    def _landing(self, day: Any, back: int) -> str:
        start = datetime(day.year, day.month, day.day, tzinfo=self.base.tzinfo) - timedelta(days=back - 1)
        return iso(start + timedelta(hours=3, minutes=self.rng.randrange(0, 90)))

    def _submit(
        self,
        workflow_id: str,
        minutes: float,
        submitted_by: str = "scheduler",
        protected: bool = False,
        chaos: tuple[str, int] | None = None,
        **params: str,
    ) -> Run:
        args = {"workflow_id": workflow_id, "params": [f"{k}={v}" for k, v in params.items()]}
        run = self.state.runs[self._call(minutes, "submit_run", args)["run_id"]]
        run.submitted_by, run.protected = submitted_by, protected
        if chaos:  # pick the seeded fault plan so that this job flakes on its first attempt
            job, pct = chaos
            while stable_hash(run.chaos_seed, job) % 100 >= pct:
                run.chaos_seed += 1
        return run

    def _wave(self, run: Run, minutes: float) -> None:
        self._call(minutes, "run_ready_jobs", {"run_id": run.run_id})

    def _finish(self, run: Run) -> None:
        start = parse_time(run.submitted_at)
        offset = (start - self.base).total_seconds() / 60
        for step in range(40):
            if run.status != "running":
                return
            self._wave(run, offset + 10 * step)
        raise RuntimeError(f"generator: history run {run.run_id} did not finish")

    def _stalled_training(self, before: str) -> None:
        """Last night's churn training: its GPU worker died mid-run and the job still holds the slot."""
        run = self._submit(
            "ml-churn-training",
            -10 * 60,
            submitted_by="ml-scheduler",
            snapshot_date=before,
            memory_gb="32",
            model_version=f"churn-{before.replace('-', '.')}",
        )
        self._wave(run, -10 * 60)
        self._wave(run, -10 * 60 + 10)
        jr = run.jobs["train_model"]
        started = self.base - timedelta(minutes=10 * 60 - 20)
        jr.status = "running"
        jr.attempts.append(
            Attempt(
                number=1,
                wave=self.state.waves,
                worker="w-gpu-1",
                started_at=iso(started),
                expected_finish_at=iso(started + timedelta(minutes=9)),
                outcome="running",
                params={"memory_gb": "32"},
            )
        )
        lost = self.state.workers["w-gpu-1"]
        lost.status, lost.last_seen_at = "lost", iso(started + timedelta(minutes=4))


def _month(day: Any, delta: int) -> str:
    index = day.year * 12 + day.month - 1 + delta
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _instantiate(template: Any, region: str) -> Workflow:
    """A workflow from a template; ``{region}`` is filled in ids, names and dataset names."""
    raw = thaw(template)

    def fill(value: str) -> str:
        return value.replace("{region}", region)

    jobs = {}
    for job in raw["jobs"]:
        job["input_dataset"] = fill(job.get("input_dataset", ""))
        jobs[job["name"]] = JobDef(**job)
    return Workflow(
        workflow_id=f"{raw['key']}-{region}" if region else raw["key"],
        name=fill(raw["name"]),
        team=raw["team"],
        description=fill(raw["description"]),
        max_active_runs=raw["max_active_runs"],
        params={name: ParamSpec(**spec) for name, spec in raw["params"].items()},
        jobs=jobs,
    )
