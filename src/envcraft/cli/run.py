"""`envcraft run` and `envcraft tasks synth`: the data job and ad-hoc synthesis (wiring only)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from envcraft.cli.executor_options import ExecutorOption, RayAddressOption, check_executor
from envcraft.cli.library import is_library_ref, library_envs
from envcraft.cli.output import console, count, die, err_console, print_json
from envcraft.core.package import PackageError, builtin_ids
from envcraft.executor import ExecutorError
from envcraft.llm.batch import BatchProvider
from envcraft.llm.types import LLMError
from envcraft.rollout.models import hide_api_key_from_children
from envcraft.rollout.writer import ProviderWriter, open_writer
from envcraft.tasks.corpus.compose import DEFAULT_DEPTH, SynthConfig
from envcraft.tasks.corpus.pipeline import DEFAULT_OUT, RunOptions, run
from envcraft.tasks.corpus.pipeline import Progress as ProgressCallback
from envcraft.tasks.corpus.writing import WriterFailed, WriterPending
from envcraft.tasks.phrasing.writer import TurnWriter

JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
Depth = Annotated[
    int,
    typer.Option(
        "--depth",
        min=1,
        help="Walk and grow jobs toward this many reference calls; 60% of each shard's places are "
        f"held for jobs that reach it, shorter jobs fill the rest (default {DEFAULT_DEPTH}; 1: every "
        "job as it comes, a shallower corpus made about twice as fast).",
    ),
]
MinCalls = Annotated[
    int,
    typer.Option(
        "--min-calls",
        min=1,
        help="Keep only jobs of at least this many reference calls: longer walks, split over 2+ turns "
        "(a deeper corpus; default 1: every job).",
    ),
]
WriterModel = Annotated[
    str | None,
    typer.Option(
        "--writer",
        help="A model that rewrites each task's turns from its intent; a rewritten turn is used only "
        "where the checks pass, else the template stays (default: the offline templates).",
    ),
]
WriterBaseUrl = Annotated[
    str | None,
    typer.Option(
        "--writer-base-url",
        help="The writer's OpenAI-compatible server (else ENVCRAFT_BASE_URL, else OpenAI).",
    ),
]
WriterBatch = Annotated[
    Path | None,
    typer.Option(
        "--writer-batch",
        help="No server: the writer's requests as OpenAI Batch API input (BDIR/requests.jsonl), answers "
        "read from BDIR/responses/*.jsonl; run again once they are there.",
    ),
]


@contextmanager
def progress_bar() -> Iterator[ProgressCallback]:
    """A rich progress bar on stderr fed by the pipeline's ``(stage, done, total)`` callback."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        jobs: dict[str, TaskID] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in jobs:
                jobs[stage] = bar.add_task(stage, total=total)
            bar.update(jobs[stage], completed=done, total=total)

        yield update


def run_command(
    out: Annotated[Path, typer.Option("--out", help="Output directory (resumable).")] = DEFAULT_OUT,
    n_per_env: Annotated[
        int | None, typer.Option("--n-per-env", min=1, help="Tasks per environment (default: ~1,100 spread).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the whole run.")] = 0,
    envs: Annotated[
        str,
        typer.Option(
            "--envs",
            help="Comma-separated ids, package paths or folders of packages, 'library', or 'all' (built-in).",
        ),
    ] = "all",
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Processes (default: cores).")
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    writer: WriterModel = None,
    writer_base_url: WriterBaseUrl = None,
    writer_batch: WriterBatch = None,
    min_calls: MinCalls = 1,
    depth: Depth = DEFAULT_DEPTH,
    json_out: JsonFlag = False,
) -> None:
    """Run the offline data job: lint, graphs, synthesis, validation, export, summary and report.

    Interrupted, it resumes from the finished shards when run again with the same --out.
    With --writer MODEL a model rewrites the turns (answers cached in OUT/.cache/writer).
    """
    check_executor(executor)
    options = RunOptions(
        out=out,
        n_per_env=n_per_env,
        seed=seed,
        envs=_env_list(envs),
        workers=workers,
        executor=executor,
        ray_address=ray_address,
        synth=SynthConfig(min_calls=min_calls, depth=depth),
    )
    _writable_dir(out)
    try:
        with (
            turn_writer(writer, writer_base_url, writer_batch, out) as options.writer,
            progress_bar() as update,
        ):
            summary = run(options, update)
    except (PackageError, ExecutorError, WriterFailed) as exc:
        die(str(exc))
    except WriterPending as exc:
        _writer_waiting(options.writer, exc, json_out)
    except OSError as exc:
        die(f"cannot write the run into {out}: {_why(exc)}")
    if json_out:
        print_json(summary)
        return
    for line in summary_lines(summary):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"report: {Path(out) / 'report.html'}  summary: {Path(out) / 'summary.json'}")


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """What `envcraft run` says at the end: the corpus in one line, then the targets it missed
    (the run still exits 0: a small or resumed run is not a failure, but it must say so)."""
    corpus, validation = summary["corpus"], summary["validation"]
    adversarial = corpus["adversarial"]
    line = (
        f"{count(corpus['tasks'], 'task')} ({corpus['cross_env_share']:.0%} cross-environment) from "
        f"{count(len(summary['envs']), 'environment')}; kill rate {validation['kill_rate']:.1%}; "
        f"{adversarial['passed_every_policy']} of {adversarial['reached_validation']} validated "
        f"candidates ({adversarial['pass_rate']:.1%}) pass every adversarial policy; "
        f"leaks {validation['leaks']}; shards {summary['shards']['total']} "
        f"({summary['shards']['resumed']} resumed)"
    )
    missed = unmet_targets(summary["targets"])
    verdict = f"targets unmet: {'; '.join(missed)}" if missed else "every target met"
    return [line, verdict, *writer_lines(corpus)]


def writer_lines(stats: dict[str, Any]) -> list[str]:
    """With ``--writer``: how many turns are the writer's and why the others kept the template."""
    block = stats.get("writer")
    if block is None:
        return []
    refused = ", ".join(f"{why} {n}" for why, n in block["refused"].items()) or "none"
    return [
        f"writer {block['model']}: {block['turns_accepted']} of {block['turns']} turns rewritten "
        f"({block['tasks_rewritten']} of {block['tasks']} tasks); template kept: {refused}"
    ]


def unmet_targets(targets: dict[str, Any]) -> list[str]:
    """The names of the targets a run missed; a per-environment target names its environments."""
    missed = []
    for name, met in targets.items():
        if isinstance(met, dict):
            failing = [key for key, ok in met.items() if not ok]
            if failing:
                missed.append(f"{name} ({', '.join(failing)})")
        elif not met:
            missed.append(name)
    return missed


def synth_command(
    out: Annotated[Path, typer.Option("--out", help="Task-set directory to write.")],
    envs: Annotated[
        str,
        typer.Option("--envs", help="Comma-separated ids or package paths, 'library', or 'all' (built-in)."),
    ] = "all",
    n: Annotated[int, typer.Option("--n", min=1, help="Tasks per environment.")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Seed.")] = 0,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, help="Processes (default: cores).")
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    writer: WriterModel = None,
    writer_base_url: WriterBaseUrl = None,
    writer_batch: WriterBatch = None,
    min_calls: MinCalls = 1,
    depth: Depth = DEFAULT_DEPTH,
    json_out: JsonFlag = False,
) -> None:
    """Synthesize validated tasks into DIR/tasks.jsonl (+ stats.json); no export or report.

    With --writer MODEL a model rewrites the turns (answers cached in DIR/.cache/writer)."""
    check_executor(executor)
    work = Path(out) / ".work"
    options = RunOptions(
        out=work,
        n_per_env=n,
        seed=seed,
        envs=_env_list(envs),
        workers=workers,
        synth=SynthConfig(seed=seed, min_calls=min_calls, depth=depth),
        export=False,
        executor=executor,
        ray_address=ray_address,
    )
    _writable_dir(Path(out))
    try:
        with (
            turn_writer(writer, writer_base_url, writer_batch, out) as options.writer,
            progress_bar() as update,
        ):
            summary = run(options, update)
        _move(work / "tasks", Path(out))
    except (PackageError, ExecutorError, WriterFailed) as exc:
        die(str(exc))
    except WriterPending as exc:
        _writer_waiting(options.writer, exc, json_out)
    except OSError as exc:
        die(f"cannot write the task set into {out}: {_why(exc)}")
    stats = summary["corpus"]
    if json_out:
        print_json({"out": str(out), **stats})
        return
    console.print(
        f"{count(stats['tasks'], 'task')} written to {Path(out) / 'tasks.jsonl'} "
        f"({stats['cross_env_share']:.0%} cross-environment, "
        f"{stats['duplicates_removed']} duplicates removed)"
    )
    for line in writer_lines(stats):
        console.print(line, highlight=False, soft_wrap=True)


@contextmanager
def turn_writer(
    model: str | None, base_url: str | None, batch: Path | None, out: Path
) -> Iterator[ProviderWriter | None]:
    """``--writer`` and its options: the writer (None without ``--writer``; the others need it)."""
    if model is None:
        if base_url is not None or batch is not None:
            die("--writer-base-url and --writer-batch need --writer MODEL")
        with nullcontext(None) as nothing:
            yield nothing
        return
    try:
        with open_writer(model, base_url, batch, Path(out) / ".cache" / "writer") as writer:
            hide_api_key_from_children()
            yield writer
    except LLMError as exc:
        die(exc.message)


def _writer_waiting(writer: TurnWriter | None, pending: WriterPending, json_out: bool) -> None:
    """The writer waits for Batch API answers: say how many and what to do; exit 0."""
    assert isinstance(writer, ProviderWriter) and isinstance(writer.provider, BatchProvider)
    if json_out:
        print_json({"status": "waiting", "waiting": pending.waiting, **writer.provider.to_json()})
    else:
        console.print(
            f"{pending.waiting} writer requests wait for batch answers", highlight=False, soft_wrap=True
        )
        console.print(writer.provider.what_to_do(), highlight=False, soft_wrap=True)
    raise typer.Exit(0)


def _writable_dir(path: Path) -> None:
    """``--out`` must be a directory this process can create and write into (exit 2 if not)."""
    if path.exists() and not path.is_dir():
        die(f"--out {path} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".envcraft-probe-")  # noqa: SIM115
        probe.close()
    except OSError as exc:
        die(f"--out {path}: {_why(exc)}")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _env_list(value: str) -> list[str] | None:
    if value.strip() in ("", "all"):
        return None
    refs = [ref for v in value.split(",") if v.strip() for ref in _expand(v.strip())]
    unknown = [r for r in refs if "/" not in r and r not in builtin_ids() and not Path(r).is_dir()]
    if unknown:
        die(f"unknown environment(s): {', '.join(unknown)}; built-in: {', '.join(builtin_ids())}")
    return refs


def _expand(ref: str) -> list[str]:
    """A folder of packages (such as ``envcraft synth``'s ``OUT/envs``) stands for each package in it,
    ``library`` for every library environment (unpacked into the cache)."""
    if is_library_ref(ref):
        return library_envs()
    path = Path(ref)
    if path.is_dir() and not (path / "envcraft.toml").is_file():
        packages = sorted(str(p.parent) for p in path.glob("*/envcraft.toml"))
        if not packages:
            die(f"{ref}: neither a package nor a folder of packages (no */envcraft.toml)")
        return packages
    return [ref]


def _move(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in ("tasks.jsonl", "stats.json"):
        (source / name).replace(target / name)
    index = source / "tasks.index.json"  # still current: a rename keeps the size and mtime
    if index.is_file():
        index.replace(target / index.name)
