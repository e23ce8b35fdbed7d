"""`envcraft eval` and `envcraft tasks calibrate|inspect`: models on tasks (wiring only)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envcraft.cli.executor_options import ExecutorOption, RayAddressOption, check_executor
from envcraft.cli.output import console, die, err_console, print_json
from envcraft.executor import ExecutorError, open_executor
from envcraft.llm.batch import BatchPending, BatchProvider
from envcraft.llm.provider import Provider
from envcraft.llm.types import LLMError
from envcraft.rollout.calibrate import calibrated, group_by_task, parse_keep
from envcraft.rollout.evaluate import (
    CACHE_DIR,
    REPORT_FILE,
    SUMMARY_FILE,
    TRAJECTORIES_FILE,
    evaluate,
    write_summary,
)
from envcraft.rollout.grading import plan as grading_plan
from envcraft.rollout.loop import Mode as RolloutMode
from envcraft.rollout.loop import RolloutConfig, Trajectory
from envcraft.rollout.metrics import ENV_OVERLAP, KIND_OVERLAP, overlap_note
from envcraft.rollout.models import LOCAL_MODELS, hide_api_key_from_children, open_model
from envcraft.rollout.rubric import inspect_tasks, with_rubric
from envcraft.rollout.runner import Job, already_done, read_trajectories
from envcraft.rollout.sharded import run_sharded
from envcraft.sandbox.profiles import DEFAULT_PROFILE, PROFILES
from envcraft.tasks.format.io import (
    TaskSetError,
    read_stats,
    read_tasks,
    tasks_path,
    write_json,
    write_tasks,
)
from envcraft.tasks.format.model import Task

JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
TaskDir = Annotated[Path, typer.Argument(help="Task-set directory (holding tasks.jsonl).")]
Model = Annotated[
    str, typer.Option("--model", help=f"Model name on the server, or built in: {', '.join(LOCAL_MODELS)}.")
]
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible server (else ENVCRAFT_BASE_URL, else OpenAI)."),
]
Concurrency = Annotated[int, typer.Option("--concurrency", min=1, help="Rollouts (or requests) in flight.")]
Limit = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N tasks.")]
Mode = Annotated[str, typer.Option("--mode", help="auto (by task kind), function or claw.")]
ToolProfile = Annotated[
    str, typer.Option("--profile", help=f"Claw tool names: {', '.join(PROFILES)} (stored canonically).")
]
MaxSteps = Annotated[int, typer.Option("--max-steps", min=1, help="Model calls per rollout.")]
MaxTokens = Annotated[
    int, typer.Option("--max-tokens", min=1, help="Prompt + completion tokens per rollout.")
]
Batch = Annotated[
    Path | None,
    typer.Option(
        "--batch",
        help="No server: write the requests as OpenAI Batch API input (BDIR/requests.jsonl), read "
        "answers from BDIR/responses/*.jsonl; run again after each round of answers.",
    ),
]


def load_tasks(directory: Path, limit: int | None = None) -> list[Task]:
    try:
        tasks = read_tasks(directory)
    except (TaskSetError, OSError) as exc:
        die(str(exc))
    return tasks[:limit] if limit is not None else tasks


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


@contextmanager
def model_provider(
    name: str,
    tasks: list[Task],
    base_url: str | None,
    cache: Path | None,
    concurrency: int,
    batch: Path | None = None,
) -> Iterator[Provider]:
    if batch is not None:
        yield batch_provider(name, base_url, batch)
        return
    try:
        with open_model(
            name, tasks=tasks, base_url=base_url, cache_dir=cache, concurrency=concurrency
        ) as provider:
            hide_api_key_from_children()
            yield provider
    except LLMError as exc:
        die(exc.message)


def batch_provider(name: str, base_url: str | None, batch: Path) -> BatchProvider:
    """``--batch BDIR``: the model's requests go through Batch API files (``--model`` names it)."""
    if base_url is not None:
        die("--batch and --base-url: the requests go either to a server or into batch files, not both")
    try:
        return BatchProvider(batch, name)
    except LLMError as exc:
        die(exc.message)
    except OSError as exc:
        die(f"--batch {batch}: {exc.strerror}")


def _waiting(provider: Provider, pending: BatchPending, what: str, total: int, json_out: bool) -> NoReturn:
    """A stage that waits for batch answers: say how many and what to do; exit 0 (nothing failed)."""
    assert isinstance(provider, BatchProvider)  # only batch files leave requests waiting
    if json_out:
        print_json({"status": "waiting", what: total, "waiting": pending.waiting, **provider.to_json()})
    else:
        console.print(
            f"{total - pending.waiting} of {total} {what} done, {pending.waiting} waiting for batch answers",
            highlight=False,
            soft_wrap=True,
        )
        console.print(provider.what_to_do(), highlight=False, soft_wrap=True)
    raise typer.Exit(0)


@contextmanager
def _rollout_progress(total: int, done: int, label: str) -> Iterator[Any]:
    """A progress bar with the live pass rate; yields the per-trajectory callback."""
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
    )
    passed = [0, 0]
    with Progress(*columns, console=err_console, transient=True) as bar:
        job = bar.add_task(label, total=total, completed=done, rate="")

        def advance(trajectory: Trajectory) -> None:
            passed[0] += int(trajectory.passed)
            passed[1] += 1
            bar.update(job, advance=1, rate=f"pass {passed[0]}/{passed[1]} ({passed[0] / passed[1]:.0%})")

        yield advance


def _config(
    mode: str,
    max_steps: int,
    max_tokens: int,
    max_turns: int | None,
    temperature: float | None,
    seed: int,
    max_completion_tokens: int | None = None,
    profile: str = DEFAULT_PROFILE,
) -> RolloutConfig:
    modes: dict[str, RolloutMode] = {"auto": "auto", "function": "function", "claw": "claw"}
    if mode not in modes:
        die(f"--mode {mode!r}: expected auto, function or claw")
    if profile not in PROFILES:
        die(f"--profile {profile!r}: expected {', '.join(PROFILES)}")
    return RolloutConfig(
        mode=modes[mode],
        max_steps=max_steps,
        max_tokens=max_tokens,
        max_turns=max_turns,
        temperature=temperature,
        seed=seed,
        max_completion_tokens=max_completion_tokens,
        profile=profile,
    )


# -- envcraft eval ------------------------------------------------------------------------------
def eval_command(
    directory: TaskDir,
    model: Model,
    base_url: BaseUrl = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Rollouts per task.")] = 1,
    concurrency: Concurrency = 8,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory (default out/eval/MODEL).")
    ] = None,
    limit: Limit = None,
    mode: Mode = "auto",
    profile: ToolProfile = DEFAULT_PROFILE,
    max_steps: MaxSteps = 60,
    max_tokens: MaxTokens = 400_000,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1, help="User turns played.")] = None,
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Sample i of a task sends seed + i.")] = 0,
    max_completion_tokens: Annotated[
        int | None, typer.Option("--max-completion-tokens", min=1, help="Tokens per model answer.")
    ] = None,
    json_out: JsonFlag = False,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Run shards of tasks on N processes or Ray workers."),
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    batch: Batch = None,
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="Judge model (same server) for judged tasks imported from benchmarks."),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Simulated-user model (same server) for tasks played with a user."),
    ] = None,
) -> None:
    """Run k rollouts per task; report pass@1, pass@k, mean reward and tokens (JSON + HTML). Resumable.

    With --batch BDIR each run advances every unfinished rollout by the model steps answered in
    BDIR/responses/ and writes the next steps' requests to BDIR/requests.jsonl.
    Tasks imported from PinchBench or Claw-Eval: judge-only ones run only with --judge (hybrid
    ones are then scored on their automated part); tasks that need the internet are skipped, and
    so are tasks played with a simulated user unless --user names its model.
    """
    check_executor(executor)
    if batch is not None and (executor == "ray" or workers is not None):
        die("--batch runs its rollouts in one process: drop --workers and --executor ray")
    if (judge is not None or user is not None) and (executor == "ray" or workers is not None):
        die("--judge and --user run in this process: drop --workers / --executor ray")
    planned = grading_plan(load_tasks(directory, limit), judge=judge is not None, user=user is not None)
    tasks = planned.tasks
    root = out or Path("out/eval") / slug(model)
    job = Job(
        tasks,
        k=k,
        concurrency=concurrency,
        config=_config(
            mode, max_steps, max_tokens, max_turns, temperature, seed, max_completion_tokens, profile
        ),
    )
    meta: dict[str, Any] = {
        "model": model,
        "tasks_path": str(directory),
        "base_url": base_url,
        "mode": mode,
        "profile": profile,
    }
    if batch is not None:
        meta["batch"] = str(batch)
    if planned.skipped or planned.automated_only or judge is not None or user is not None:
        meta.update(judge=judge, user=user, imported=planned.to_json())
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        die(f"--out {root}: {exc.strerror}")
    if executor == "ray" or workers is not None:
        meta.update(executor=executor, workers=workers)
        summary = _evaluate_sharded(job, model, base_url, root, meta, executor, workers, ray_address)
    else:
        with (
            model_provider(model, tasks, base_url, root / CACHE_DIR, concurrency, batch) as provider,
            _judge(judge, base_url, root / CACHE_DIR / "judge", concurrency) as judge_provider,
            _judge(user, base_url, root / CACHE_DIR / "user", concurrency) as user_provider,
        ):
            job = replace(job, judge=judge_provider, user=user_provider)
            done = already_done(job, root / TRAJECTORIES_FILE)
            with _rollout_progress(len(job.pairs()), done, f"eval {model}") as advance:
                summary = _evaluate(job, provider, root, meta, advance, json_out)
    if json_out:
        print_json(summary)
    else:
        _print_summary(summary, root)
    overall = summary["overall"]
    if overall["trajectories"] and overall["errors"] == overall["trajectories"]:
        first = next(iter(summary["stops"]), "error")
        die(f"every rollout failed ({first}); see {root / TRAJECTORIES_FILE}", code=1)


@contextmanager
def _judge(
    name: str | None, base_url: str | None, cache: Path, concurrency: int
) -> Iterator[Provider | None]:
    """``--judge``'s provider (None without one); :func:`evaluate` closes it on its event loop."""
    if name is None:
        yield None
        return
    with model_provider(name, [], base_url, cache, concurrency) as provider:
        yield provider


def _evaluate(
    job: Job, provider: Provider, root: Path, meta: dict[str, Any], advance: Any, json_out: bool
) -> dict[str, Any]:
    try:
        return evaluate(job, provider, root, meta=meta, on_done=advance)
    except ValueError as exc:
        die(str(exc))
    except BatchPending as pending:
        _waiting(provider, pending, "rollouts", len(job.pairs()), json_out)


def _evaluate_sharded(
    job: Job,
    model: str,
    base_url: str | None,
    root: Path,
    meta: dict[str, Any],
    executor: str,
    workers: int | None,
    ray_address: str | None,
) -> dict[str, Any]:
    """``eval --executor ray`` / ``--workers N``: the rollouts in shards (:mod:`envcraft.rollout.sharded`)."""
    done = already_done(job, root / TRAJECTORIES_FILE)
    try:
        with (
            open_executor(executor, workers=workers, address=ray_address) as pool,
            _rollout_progress(len(job.pairs()), done, f"eval {model}") as advance,
        ):
            trajectories = run_sharded(
                job,
                pool,
                model,
                root / TRAJECTORIES_FILE,
                base_url=base_url,
                cache_dir=root / CACHE_DIR,
                on_done=advance,
            )
    except (ExecutorError, LLMError, ValueError) as exc:
        die(str(exc))
    return write_summary(job, trajectories, root, meta=meta)


def _print_summary(summary: dict[str, Any], root: Path) -> None:
    k = summary["k"]
    passes = ["pass@1"] if k == 1 else ["pass@1", f"pass@{k}"]  # with k = 1 they are one column
    table = Table("", "tasks", "rollouts", *passes, "mean reward", "mean tokens", "errors")
    rows = [("all", summary["overall"])]
    rows += [(f"env {e}", r) for e, r in summary["by_env"].items()]
    rows += [(f"kind {kd}", r) for kd, r in summary["by_kind"].items()]
    for name, row in rows:
        table.add_row(
            name,
            str(row["tasks"]),
            str(row["trajectories"]),
            *[f"{row['pass@1']:.3f}", f"{row['pass@k']:.3f}"][: len(passes)],
            f"{row['mean_reward']:.3f}",
            f"{row['mean_tokens']:.0f}",
            str(row["errors"]),
        )
    console.print(table)
    imported = summary.get("meta", {}).get("imported")
    if imported:
        for reason, ids in imported["skipped"].items():
            console.print(f"skipped {len(ids)} task(s): {reason}", highlight=False)
        if imported["automated_part_only"]:
            hybrid = len(imported["automated_part_only"])
            console.print(f"{hybrid} hybrid task(s) scored on their automated part only (no --judge)")
    total = summary["overall"]["tasks"]
    for rows_of, why in ((summary["by_env"], ENV_OVERLAP), (summary["by_kind"], KIND_OVERLAP)):
        note = overlap_note(rows_of, total, why)
        if note:
            console.print(f"[dim]{note}[/dim]", highlight=False, soft_wrap=True)
    console.print(
        f"report: {root / REPORT_FILE}  summary: {root / SUMMARY_FILE}  "
        f"trajectories: {root / TRAJECTORIES_FILE}"
    )


# -- envcraft tasks calibrate ------------------------------------------------------------------
def calibrate(
    directory: TaskDir,
    model: Model,
    base_url: BaseUrl = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Rollouts per task.")] = 8,
    keep: Annotated[
        str | None, typer.Option("--keep", help="Keep tasks whose pass rate p fits, e.g. '0<p<1'.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the calibrated set here (else in place).")
    ] = None,
    work: Annotated[
        Path | None, typer.Option("--work", help="Rollouts and cache (default TASKS/calibration/MODEL).")
    ] = None,
    concurrency: Concurrency = 8,
    limit: Limit = None,
    profile: ToolProfile = DEFAULT_PROFILE,
    max_steps: MaxSteps = 60,
    max_tokens: MaxTokens = 400_000,
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = 1.0,
    json_out: JsonFlag = False,
    batch: Batch = None,
) -> None:
    """Pass rates over k rollouts into each task's difficulty (k, pass_rate, band); --keep filters.

    With --batch BDIR each run advances the rollouts by one round of batch answers; the tasks are
    written when every rollout is done.
    """
    try:
        predicate = parse_keep(keep) if keep is not None else None
    except ValueError as exc:
        die(str(exc))
    if predicate is not None and out is None:
        die("--keep writes the filtered set: give --out DIR (the source set is not filtered in place)")
    everything = load_tasks(directory)
    tasks = everything[:limit] if limit is not None else everything
    root = work or directory / "calibration" / slug(model)
    job = Job(
        tasks,
        k=k,
        concurrency=concurrency,
        config=_config("auto", max_steps, max_tokens, None, temperature, 0, profile=profile),
    )
    with (
        model_provider(model, tasks, base_url, root / CACHE_DIR, concurrency, batch) as provider,
        _rollout_progress(
            len(job.pairs()), already_done(job, root / TRAJECTORIES_FILE), f"calibrate {model}"
        ) as advance,
    ):
        summary = _evaluate(
            job, provider, root, {"model": model, "tasks_path": str(directory)}, advance, json_out
        )
    chosen = {t.id for t in tasks}
    grouped = group_by_task(
        t for t in read_trajectories(root / TRAJECTORIES_FILE) if t.sample < k and t.task_id in chosen
    )
    updated = {t.id: calibrated(t, grouped.get(t.id, []), model) for t in tasks}
    result = [updated.get(t.id, t) for t in everything]
    kept = [
        t
        for t in result
        if t.id in updated and (predicate is None or predicate((t.difficulty or {})["pass_rate"]))
    ]
    target = out or directory
    written = kept if predicate is not None else result
    try:
        write_tasks(target, written)
        stats = read_stats(directory) or {}
        if out is not None and stats:
            write_json(Path(out) / "stats.json", stats)
    except (OSError, TaskSetError) as exc:
        die(f"cannot write {target}: {exc}")
    bands: dict[str, int] = {}
    for task in updated.values():
        name = (task.difficulty or {})["band"]
        bands[name] = bands.get(name, 0) + 1
    report = {
        "tasks": len(updated),
        "k": k,
        "bands": bands,
        "written": len(written),
        "out": str(tasks_path(target)),
        "rollouts": str(root / TRAJECTORIES_FILE),
        "summary": summary["overall"],
    }
    if json_out:
        print_json(report)
    else:
        shown = ", ".join(f"{band} {count}" for band, count in sorted(bands.items()))
        console.print(f"calibrated {len(updated)} tasks with {model}, k={k}: {shown}")
        console.print(f"wrote {len(written)} tasks to {report['out']}")


# -- envcraft tasks inspect ---------------------------------------------------------------------
def inspect(
    directory: TaskDir,
    model: Model,
    base_url: BaseUrl = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the inspected set here (else in place).")
    ] = None,
    keep_only: Annotated[
        bool, typer.Option("--keep-only", help="Write only the tasks the rubric keeps.")
    ] = False,
    concurrency: Concurrency = 8,
    limit: Limit = None,
    json_out: JsonFlag = False,
    batch: Batch = None,
) -> None:
    """Score tasks with the paper's Table 18 rubric through an LLM; keeps 3/3/>=2; scores into quality.

    With --batch BDIR the tasks are written once every task has its verdict (a re-asked answer
    takes one more round).
    """
    if keep_only and out is None:
        die("--keep-only writes the filtered set: give --out DIR")
    everything = load_tasks(directory)
    tasks = everything[:limit] if limit is not None else everything
    with model_provider(
        model, tasks, base_url, directory / "inspection" / slug(model) / CACHE_DIR, concurrency, batch
    ) as provider:

        async def main() -> Any:
            try:
                return await inspect_tasks(tasks, provider, concurrency=concurrency)
            finally:
                await provider.aclose()

        try:
            with console.status(f"inspecting {len(tasks)} tasks with {model}"):
                results = asyncio.run(main())
        except BatchPending as pending:
            _waiting(provider, pending, "tasks", len(tasks), json_out)
    updated = {t.id: with_rubric(t, r) for t, r in zip(tasks, results, strict=True)}
    result = [updated.get(t.id, t) for t in everything]
    if keep_only:
        result = [t for t in result if t.id in updated and t.quality["rubric"]["keep"]]
    target = out or directory
    try:
        write_tasks(target, result)
    except OSError as exc:
        die(f"cannot write {target}: {exc}")
    rows = [{"task_id": t.id, **r.to_json()} for t, r in zip(tasks, results, strict=True)]
    kept = sum(r.keep for r in results)
    errors = sum(r.error is not None for r in results)
    if json_out:
        print_json(
            {"tasks": len(results), "kept": kept, "errors": errors, "written": len(result), "results": rows}
        )
        return
    table = Table("task", "solvability", "validation", "consistency", "keep", "note")
    for row in rows:
        scores = row.get("scores", {})
        table.add_row(
            row["task_id"],
            *(str(scores.get(d, "-")) for d in ("solvability", "validation", "consistency")),
            "yes" if row["keep"] else "no",
            row.get("error", ""),
        )
    console.print(table)
    console.print(
        f"kept {kept} of {len(results)} ({errors} without a valid answer); wrote {len(result)} tasks "
        f"to {tasks_path(target)}"
    )
