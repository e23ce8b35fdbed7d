"""`envcraft eval` and `envcraft tasks show|play|calibrate|inspect`: agents on tasks (wiring only)."""

from __future__ import annotations

import asyncio
import json
import re
import select
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envcraft.cli.executor_options import ExecutorOption, RayAddressOption, check_executor
from envcraft.cli.output import console, count, die, err_console, print_json
from envcraft.core.package import builtin_ids
from envcraft.executor import ExecutorError, open_executor
from envcraft.llm.batch import REQUESTS_FILE, RESPONSES_DIR, BatchPending, BatchProvider, answer_batch
from envcraft.llm.provider import Provider
from envcraft.llm.server import ChatServer
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
from envcraft.rollout.play import (
    Play,
    PlayError,
    current_calls,
    end_turn,
    observe,
    open_play,
    write_trajectory,
)
from envcraft.rollout.policies import policy_provider
from envcraft.rollout.rubric import inspect_tasks, with_rubric
from envcraft.rollout.runner import Job, already_done, read_trajectories
from envcraft.rollout.sharded import run_sharded
from envcraft.sandbox.profiles import DEFAULT_PROFILE, PROFILES
from envcraft.tasks.format.io import (
    TaskSetError,
    read_stats,
    read_task,
    read_tasks,
    tasks_path,
    write_json,
    write_tasks,
)
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.outcome import ExecutionError
from envcraft.tasks.verifier.scoring import score_trajectory

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


def _tasks(directory: Path, limit: int | None = None) -> list[Task]:
    try:
        tasks = read_tasks(directory)
    except (TaskSetError, OSError) as exc:
        die(str(exc))
    return tasks[:limit] if limit is not None else tasks


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


@contextmanager
def _model(
    name: str,
    tasks: list[Task],
    base_url: str | None,
    cache: Path | None,
    concurrency: int,
    batch: Path | None = None,
) -> Iterator[Provider]:
    if batch is not None:
        yield _batch_provider(name, base_url, batch)
        return
    try:
        with open_model(
            name, tasks=tasks, base_url=base_url, cache_dir=cache, concurrency=concurrency
        ) as provider:
            hide_api_key_from_children()
            yield provider
    except LLMError as exc:
        die(exc.message)


def _batch_provider(name: str, base_url: str | None, batch: Path) -> BatchProvider:
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
) -> None:
    """Run k rollouts per task; report pass@1, pass@k, mean reward and tokens (JSON + HTML). Resumable.

    With --batch BDIR each run advances every unfinished rollout by the model steps answered in
    BDIR/responses/ and writes the next steps' requests to BDIR/requests.jsonl.
    Tasks imported from PinchBench or Claw-Eval: judge-only ones run only with --judge (hybrid
    ones are then scored on their automated part); tasks that need the internet are skipped.
    """
    check_executor(executor)
    if batch is not None and (executor == "ray" or workers is not None):
        die("--batch runs its rollouts in one process: drop --workers and --executor ray")
    if judge is not None and (executor == "ray" or workers is not None):
        die("--judge runs in this process: drop --workers / --executor ray")
    planned = grading_plan(_tasks(directory, limit), judge=judge is not None)
    tasks = planned.tasks
    root = out or Path("out/eval") / _slug(model)
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
    if planned.skipped or planned.automated_only or judge is not None:
        meta.update(judge=judge, imported=planned.to_json())
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        die(f"--out {root}: {exc.strerror}")
    if executor == "ray" or workers is not None:
        meta.update(executor=executor, workers=workers)
        summary = _evaluate_sharded(job, model, base_url, root, meta, executor, workers, ray_address)
    else:
        with (
            _model(model, tasks, base_url, root / CACHE_DIR, concurrency, batch) as provider,
            _judge(judge, base_url, root / CACHE_DIR / "judge", concurrency) as judge_provider,
        ):
            job = replace(job, judge=judge_provider)
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
    with _model(name, [], base_url, cache, concurrency) as provider:
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
    everything = _tasks(directory)
    tasks = everything[:limit] if limit is not None else everything
    root = work or directory / "calibration" / _slug(model)
    job = Job(
        tasks,
        k=k,
        concurrency=concurrency,
        config=_config("auto", max_steps, max_tokens, None, temperature, 0, profile=profile),
    )
    with (
        _model(model, tasks, base_url, root / CACHE_DIR, concurrency, batch) as provider,
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
    everything = _tasks(directory)
    tasks = everything[:limit] if limit is not None else everything
    with _model(
        model, tasks, base_url, directory / "inspection" / _slug(model) / CACHE_DIR, concurrency, batch
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


# -- envcraft tasks show ------------------------------------------------------------------------
def show(
    directory: TaskDir,
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    reveal: Annotated[
        bool, typer.Option("--reveal", help="Also show the reference and the verifier.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Show a task as a player sees it: user turns, environments, tools (the solution only with --reveal)."""
    task = _one(directory, task_id)
    packages = _packages(task)
    envs = [
        {
            "id": env,
            "title": packages[env].manifest.title,
            "kind": packages[env].kind,
            "package": str(packages[env].root),
            "tools": [_tool_summary(spec.openai_schema()) for spec in packages[env].env_class.tools.values()],
        }
        for env in task.envs
    ]
    info: dict[str, Any] = {
        "id": task.id,
        "kind": task.kind,
        "persona": task.persona,
        "turns": [t.user for t in task.turns],
        "envs": envs,
        "workspace_files": sorted(task.workspace),
        "difficulty": task.difficulty,
    }
    if reveal:
        info["reference"] = task.reference.model_dump(mode="json")
        info["verifier"] = task.verifier.model_dump(mode="json")
    if json_out:
        print_json(info)
        return
    console.print(
        f"[bold]{task.id}[/bold] ({task.kind}; {count(len(task.turns), 'user turn')}; "
        f"persona: {task.persona})",
        highlight=False,
        soft_wrap=True,
    )
    for env in envs:
        console.print(
            f"\n[bold]{env['title']}[/bold] ({env['id']}, {env['kind']})", highlight=False, soft_wrap=True
        )
        for tool in env["tools"]:
            console.print(
                f"  {tool['name']}({', '.join(tool['params'])}): {tool['summary']}",
                highlight=False,
                soft_wrap=True,
            )
    if task.workspace:
        console.print(f"\nworkspace: {len(task.workspace)} files", highlight=False, soft_wrap=True)
    for number, text in enumerate(info["turns"], start=1):
        console.print(f"\n[bold]turn {number}[/bold]: {text}", highlight=False, soft_wrap=True)
    if reveal:
        console.print("\n[bold]reference[/bold]")
        for call in task.reference.calls:
            console.print(
                f"  turn {call.turn + 1}: {call.env}.{call.tool} {json.dumps(call.args)}",
                highlight=False,
                soft_wrap=True,
            )
        console.print(
            f"\n[bold]verifier[/bold] ({len(task.verifier.checks)} checks)\n{task.verifier.source}",
            highlight=False,
            soft_wrap=True,
        )


def _one(directory: Path, task_id: str) -> Task:
    """One task, read alone through the set's index (an unknown id names the closest ones)."""
    try:
        return read_task(directory, task_id)
    except (TaskSetError, OSError) as exc:
        die(str(exc))


def _packages(task: Task) -> dict[str, Any]:
    try:
        return resolve_packages(task)
    except ExecutionError as exc:
        die(str(exc))


def _tool_summary(schema: dict[str, Any]) -> dict[str, Any]:
    function = schema["function"]
    lines = (function.get("description") or "").strip().splitlines()
    return {
        "name": function["name"],
        "params": list((function.get("parameters") or {}).get("properties", {})),
        "summary": lines[0] if lines else "",
    }


# -- envcraft tasks play ------------------------------------------------------------------------
def play(
    directory: TaskDir,
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    play_dir: Annotated[
        Path | None, typer.Option("--dir", help="Play directory (default ./play-TASK).")
    ] = None,
    next_turn: Annotated[
        bool, typer.Option("--next", help="This turn is done: record it, show the next.")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """Play a task with `envcraft call`: opens its sessions from S0 and reveals the user turns one at a time.

    Without --next on a terminal it waits: press Enter when a turn is done. Calls are recorded per turn
    and DIR/trajectory.jsonl is what `envcraft tasks score` reads.
    """
    task = _one(directory, task_id)
    root = play_dir or Path(f"play-{_slug(task.id)}")
    try:
        state, resumed = open_play(task, tasks_path(directory), root)
        if next_turn:
            end_turn(state, task)
    except (PlayError, ExecutionError, TaskSetError) as exc:
        die(str(exc))
    if json_out:
        print_json(_play_info(state, task))
        return
    if not next_turn:
        _print_how_to_act(state, task, resumed)
    _print_turn(state, task)
    if next_turn or state.done or not sys.stdin.isatty():
        return
    while not state.done:
        console.print(
            "[dim]act with envcraft call in another terminal; Enter = this turn is done, q = stop[/dim]"
        )
        answer = _wait_for_line(state)
        if answer.strip().lower() == "q":
            console.print(f"stopped; resume with: envcraft tasks play {directory} {task.id} --dir {root}")
            return
        end_turn(state, task)
        _print_turn(state, task)


def _wait_for_line(state: Play) -> str:
    """Read a line from the terminal, noting the order of the player's calls meanwhile."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.1):
            observe(state)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        while True:
            ready, _, _ = select.select([sys.stdin], [], [], 0.5)
            if ready:
                return sys.stdin.readline()
    finally:
        stop.set()
        watcher.join()


def _play_info(state: Play, task: Task) -> dict[str, Any]:
    return {
        "dir": str(state.directory.resolve()),
        "task_id": task.id,
        "turn": state.turn + 1 if not state.done else None,
        "turns": len(task.turns),
        "user": task.turns[state.turn].user if not state.done else None,
        "sessions": {env: str(state.session(env).resolve()) for env in task.envs},
        "calls_this_turn": current_calls(state) if not state.done else [],
        "trajectory": str((state.directory / "trajectory.jsonl").resolve()),
        "done": state.done,
        "score": _score(state, task) if state.done else None,
    }


def _print_how_to_act(state: Play, task: Task, resumed: bool) -> None:
    packages = _packages(task)
    verb = "resumed" if resumed else "opened"
    console.print(
        f"{verb} {task.id} in {state.directory} ({count(len(task.turns), 'user turn')})",
        highlight=False,
        soft_wrap=True,
    )
    for env in task.envs:
        where = env if env in builtin_ids() else packages[env].root
        console.print(
            f"  envcraft call {where} TOOL --args '{{...}}' --session {state.session(env)}",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"  (the tools: envcraft tasks show {shlex.quote(state.tasks_path)} {shlex.quote(task.id)})",
        highlight=False,
        soft_wrap=True,
    )


def _print_turn(state: Play, task: Task) -> None:
    if state.done:
        path = write_trajectory(state)
        score = _score(state, task)
        done = "the turn is done" if len(task.turns) == 1 else f"all {len(task.turns)} turns done"
        console.print(f"\n{done}; trajectory: {path}", highlight=False, soft_wrap=True)
        trajectories = shlex.quote(str(Path(path).resolve()))
        again = f"envcraft tasks score {shlex.quote(state.tasks_path)} --trajectories {trajectories}"
        console.print(
            f"score {score['score']:.3f}  (to score it again: {again})", highlight=False, soft_wrap=True
        )
        return
    console.print(
        f"\n[bold]turn {state.turn + 1}/{len(task.turns)}[/bold]: {task.turns[state.turn].user}",
        highlight=False,
        soft_wrap=True,
    )


def _score(state: Play, task: Task) -> dict[str, Any]:
    return score_trajectory(task, state.turns).to_json()


# -- envcraft llm serve -------------------------------------------------------------------------
llm_app = typer.Typer(
    help="Language models: serve an in-process model over the OpenAI protocol, answer batch files.",
    no_args_is_help=True,
)


@llm_app.command("serve")
def serve(
    model: Annotated[str, typer.Argument(help="smollm2, random, or oracle (with --tasks).")],
    tasks_dir: Annotated[Path | None, typer.Option("--tasks", help="Task set the oracle plays.")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")] = 8000,
) -> None:
    """Serve a built-in model at http://HOST:PORT/v1 (chat completions with tools) until interrupted."""
    if model not in LOCAL_MODELS:
        die(f"unknown model {model!r}; built in: {', '.join(LOCAL_MODELS)}")
    if model == "oracle" and tasks_dir is None:
        die("the oracle plays a task set: give --tasks DIR")
    tasks = _tasks(tasks_dir) if tasks_dir is not None else []
    inner = _smollm_provider() if model == "smollm2" else policy_provider(model, tasks)
    try:
        server = ChatServer(inner, host=host, port=port).start()
    except OSError as exc:
        die(f"cannot listen on {host}:{port}: {exc.strerror}")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    err_console.print(
        f"serving {model} at {server.url} (Ctrl-C or SIGTERM stops)", highlight=False, soft_wrap=True
    )
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


@llm_app.command("answer")
def answer(
    batch: Annotated[Path, typer.Argument(help="Batch directory (holding requests.jsonl).")],
    model: Model,
    base_url: BaseUrl = None,
    tasks_dir: Annotated[Path | None, typer.Option("--tasks", help="Task set the oracle plays.")] = None,
    concurrency: Concurrency = 8,
    json_out: JsonFlag = False,
) -> None:
    """Answer BDIR/requests.jsonl with a model (every request sent as --model), as the Batch API
    would: the output goes to BDIR/responses/ and the stage that wrote the requests continues when
    run again. A request the model could not answer for now (unreachable, overloaded) stays waiting."""
    requests = batch / REQUESTS_FILE
    if not requests.is_file():
        die(f"{requests}: no such file (run a stage with --batch {batch} first)")
    if model == "oracle" and tasks_dir is None:
        die("the oracle plays a task set: give --tasks DIR")
    tasks = _tasks(tasks_dir) if tasks_dir is not None else []
    if not _batch_provider(model, None, batch).pending:  # drops requests answered since the stage ran
        console.print(f"nothing waits in {requests}", highlight=False, soft_wrap=True)
        return
    target = _free_output(batch / RESPONSES_DIR)
    with _model(model, tasks, base_url, None, concurrency) as provider:

        async def main() -> dict[str, int]:
            try:
                return await answer_batch(
                    requests, target, provider, concurrency=concurrency, model=model, skip_retryable=True
                )
            finally:
                await provider.aclose()

        with console.status(f"answering {requests} with {model}"):
            counts = asyncio.run(main())
    if counts["skipped"] and not counts["answered"] + counts["failed"]:
        target.unlink()
        die(f"no answer to any of {counts['skipped']} requests (is {model} reachable?); they stay waiting", 1)
    if json_out:
        print_json({**counts, "output": str(target)})
    else:
        console.print(
            f"answered {counts['answered']}, failed {counts['failed']}, still waiting {counts['skipped']}: "
            f"{target}",
            highlight=False,
            soft_wrap=True,
        )


def _free_output(directory: Path) -> Path:
    """``DIR/answers-N.jsonl`` with the first N not taken (earlier answers stay)."""
    number = 1
    while (directory / f"answers-{number}.jsonl").exists():
        number += 1
    return directory / f"answers-{number}.jsonl"


def _smollm_provider() -> Provider:
    from envcraft.llm.smollm import SmolLM2Provider

    return SmolLM2Provider()
