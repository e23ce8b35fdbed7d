"""`envcraft synth`: scenario specs to audited environment packages (wiring only)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from envcraft.cli.executor_options import ExecutorOption, RayAddressOption, check_executor
from envcraft.cli.output import console, die, err_console, print_json
from envcraft.executor import ExecutorError, open_executor
from envcraft.llm import LLMError
from envcraft.synth.audit import AuditConfig
from envcraft.synth.engine import CandidateRecord, EngineOptions
from envcraft.synth.job import explain, load_specs, make_provider, run_job, run_job_on
from envcraft.synth.retrieval import RetrievalUnavailable
from envcraft.synth.spec import ScenarioSpec, SpecError


def synth_command(
    specs: Annotated[
        list[str],
        typer.Argument(
            help="Catalog ids (id@K: its K-th environment), spec files (.toml/.md), or catalog / "
            "catalog:general / catalog:claw / catalog:paper (each scenario as often as the paper's 139 need)."
        ),
    ],
    out: Annotated[Path | None, typer.Option("--out", help="Output directory (resumable).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name (or ENVCRAFT_MODEL).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible server (or ENVCRAFT_BASE_URL).")
    ] = None,
    batch: Annotated[
        Path | None, typer.Option("--batch", help="Use OpenAI Batch API files in this directory instead.")
    ] = None,
    attempts: Annotated[int, typer.Option("--attempts", min=1, max=10, help="Attempts per candidate.")] = 3,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Candidates in parallel.")] = 1,
    yield_tasks: Annotated[
        int, typer.Option("--yield-tasks", min=1, help="Validated tasks the data engine must get.")
    ] = 3,
    allow_uncovered: Annotated[
        bool,
        typer.Option(
            "--allow-uncovered-tools", help="A tool no audit call made succeed is a warning, not a failure."
        ),
    ] = False,
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1, help="Answer token limit.")] = None,
    explain_only: Annotated[
        bool, typer.Option("--explain", help="Rank archetypes and size the prompt; no model is called.")
    ] = False,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Synthesize environments: archetypes -> LLM code -> audits -> bounded repair.

    Accepted packages go to OUT/envs/<id>/ (use them with `envcraft run --envs OUT/envs`);
    OUT/synth.json and OUT/report.html say what happened to every candidate. With --executor ray
    each candidate is a Ray task (--workers at a time); locally they share one process.
    """
    check_executor(executor)
    if executor == "ray" and batch is not None:
        die("--batch keeps its requests in one process: drop --executor ray")
    try:
        loaded = load_specs(specs)
        if explain_only:
            _explain(loaded, json_out)
            return
        if out is None:
            die("--out DIR is required (or use --explain)")
        provider = make_provider(model, base_url, batch, out)
    except (SpecError, RetrievalUnavailable) as exc:
        die(str(exc))
    except LLMError as exc:
        die(exc.message)
    audit = replace(AuditConfig(), yield_tasks=yield_tasks, require_coverage=not allow_uncovered)
    options = EngineOptions(
        attempts=attempts, workers=workers, temperature=temperature, max_tokens=max_tokens, audit=audit
    )
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        job = bar.add_task("synthesizing: 0 accepted", total=len(loaded))
        accepted = 0

        def update(record: CandidateRecord) -> None:
            nonlocal accepted
            accepted += record.status == "accepted"
            bar.update(job, advance=1, description=f"synthesizing: {accepted} accepted")

        if executor == "ray":
            try:
                with open_executor(executor, workers=workers, address=ray_address) as pool:
                    summary = run_job_on(pool, loaded, out, provider.model, base_url, options, update)
            except (ExecutorError, LLMError) as exc:
                die(str(exc))
        else:
            summary = run_job(loaded, out, provider, options, update)
    if json_out:
        print_json({k: v for k, v in summary.items() if k != "candidates"})
        return
    status = summary["status"]
    console.print(
        f"{summary['accepted']} of {len(loaded)} accepted ({summary['acceptance_rate']:.0%}); "
        + ", ".join(f"{n} {s}" for s, n in sorted(status.items()))
    )
    if status.get("waiting"):
        console.print(
            f"waiting for batch answers: submit {batch}/requests.jsonl, put the output in "
            f"{batch}/responses/ and run again"
        )
    console.print(f"envs: {out / 'envs'}  report: {out / 'report.html'}  record: {out / 'synth.json'}")


def _explain(specs: list[ScenarioSpec], json_out: bool) -> None:
    results = [explain(spec) for spec in specs]
    if json_out:
        print_json(results)
        return
    for result in results:
        console.print(f"[bold]{result['id']}[/bold] ({result['source']})", highlight=False)
        for row in result["ranking"]:
            console.print(
                f"  {row['rank']}. {row['archetype']:<24} {row['reference']:<20} {row['score']:7.2f}"
                f"  (documents {row['documents']:.2f}, vocabulary {row['vocabulary']:.2f})",
                highlight=False,
                soft_wrap=True,
            )
        tokens = result["prompt_tokens"]
        refs = ", ".join(f"{r['env']} ({r['tokens']} tokens)" for r in result["references"])
        console.print(
            f"prompt: {tokens['total']} tokens ({tokens['tokenizer']}): system {tokens['system']}, "
            f"user {tokens['user']} with references {refs}",
            highlight=False,
            soft_wrap=True,
        )
