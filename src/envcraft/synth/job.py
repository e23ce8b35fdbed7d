"""One ``envcraft synth`` job: specs in, ``OUT/envs`` + ``OUT/synth.json`` + ``OUT/report.html`` out.

``load_specs`` reads catalog ids (``<id>@K`` for a scenario's K-th environment), spec files
and the selectors ``catalog`` / ``catalog:general`` / ``catalog:claw`` / ``catalog:paper``
(every scenario as many times as the paper's 139 environments need); ``explain`` ranks the
archetypes for a spec and sizes its prompt without a model; ``make_provider`` builds the model client (an
OpenAI-compatible server behind the response cache, or Batch API files); ``run_job`` runs the
engine and writes the outputs in this process, ``run_job_on`` with each candidate a job of an
executor (``envcraft synth --executor ray``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from envcraft.executor import Executor
from envcraft.llm import BatchProvider, CachedProvider, OpenAIProvider, Provider
from envcraft.synth.catalog import scenarios, target_envs
from envcraft.synth.engine import CandidateRecord, EngineOptions, SynthEngine
from envcraft.synth.prompt import first_messages
from envcraft.synth.references import DEFAULT_BUDGET, render_reference
from envcraft.synth.report import summarize, write_outputs
from envcraft.synth.retrieval import rank_archetypes, reference_roots
from envcraft.synth.spec import ScenarioSpec, SpecError, from_scenario, load_spec, variant
from envcraft.synth.tokens import count_tokens, tokenizer_name

CATALOG_SELECTORS = {"catalog": None, "catalog:general": "general", "catalog:claw": "claw"}
# every scenario as many times as `target_envs` says (<id>, <id>@2, ...): the paper's 139
PAPER_SELECTOR = "catalog:paper"


def load_specs(refs: list[str]) -> list[ScenarioSpec]:
    """Specs for catalog ids, files and catalog selectors; :class:`SpecError` on any bad one."""
    specs: list[ScenarioSpec] = []
    for ref in refs:
        if ref in CATALOG_SELECTORS:
            category = CATALOG_SELECTORS[ref]
            specs += [from_scenario(s) for s in scenarios(category)]  # type: ignore[arg-type]
        elif ref == PAPER_SELECTOR:
            targets = target_envs()
            specs += [variant(s, k) for s in scenarios() for k in range(1, targets[s.id] + 1)]
        else:
            specs.append(load_spec(ref))
    if not specs:
        raise SpecError("no specs given")
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.id in seen:
            raise SpecError(f"two specs become environment {spec.id!r}: {seen[spec.id]} and {spec.source}")
        seen[spec.id] = spec.source
    return specs


def explain(spec: ScenarioSpec, references: int = 2, budget: int = DEFAULT_BUDGET) -> dict[str, Any]:
    """The archetype ranking for ``spec`` and the size of the prompt it would get (no model)."""
    ranking = rank_archetypes(spec.text())
    roots = reference_roots()
    chosen = [render_reference(roots[s.archetype], s.archetype, budget) for s in ranking[:references]]
    messages = first_messages(spec, chosen)
    system, user = (str(m["content"]) for m in messages)
    return {
        "id": spec.id,
        "source": spec.source,
        "ranking": [s.to_json() for s in ranking],
        "hand_labels": list(spec.archetypes),
        "references": [
            {"env": r.env_id, "archetype": r.archetype, "tokens": r.tokens(), "omitted": len(r.omitted)}
            for r in chosen
        ],
        "prompt_tokens": {
            "system": count_tokens(system),
            "user": count_tokens(user),
            "total": count_tokens(system) + count_tokens(user),
            "tokenizer": tokenizer_name(),
        },
    }


def make_provider(model: str | None, base_url: str | None, batch: Path | None, out: Path) -> Provider:
    """Batch API files under ``batch``, else an OpenAI-compatible server behind ``OUT/.cache/llm``."""
    if batch is not None:
        if not model:
            raise SpecError("--batch needs --model (the model the batch requests name)")
        return BatchProvider(batch, model)
    return CachedProvider(OpenAIProvider.from_env(model, base_url), out / ".cache" / "llm")


def run_job(
    specs: list[ScenarioSpec],
    out: Path,
    provider: Provider,
    options: EngineOptions,
    progress: Callable[[CandidateRecord], None] | None = None,
) -> dict[str, Any]:
    """Run the engine over ``specs`` and write ``synth.json`` and ``report.html``."""

    async def go() -> list[CandidateRecord]:
        async with provider:
            return await SynthEngine(provider, out, options).run(specs, progress)

    records = asyncio.run(go())
    summary = summarize(records, options, provider.model)
    write_outputs(out, summary)
    return summary


def run_job_on(
    executor: Executor,
    specs: list[ScenarioSpec],
    out: Path,
    model: str,
    base_url: str | None,
    options: EngineOptions,
    progress: Callable[[CandidateRecord], None] | None = None,
) -> dict[str, Any]:
    """:func:`run_job` with each candidate a job of ``executor`` (``executor.workers`` at a time).

    A job opens its own model client (the key from its worker's ``OPENAI_API_KEY``, never sent
    through the executor) and writes into the shared ``out``, whose caches and records are
    content-keyed and atomic, so the records are the ones one process makes and a run resumes
    as the in-process one does."""
    one = replace(options, workers=1)
    jobs = [(spec, str(out), model, base_url, one) for spec in specs]
    records: dict[int, CandidateRecord] = {}
    for index, data in executor.run(synthesize_candidate, jobs):
        records[index] = CandidateRecord.model_validate(data)
        if progress is not None:
            progress(records[index])
    summary = summarize([records[i] for i in range(len(specs))], options, model)
    write_outputs(out, summary)
    return summary


def synthesize_candidate(
    spec: ScenarioSpec, out: str, model: str, base_url: str | None, options: EngineOptions
) -> dict[str, Any]:
    """One executor job: one candidate through the engine into ``out``; its record as JSON."""
    provider = make_provider(model, base_url, None, Path(out))

    async def go() -> list[CandidateRecord]:
        async with provider:
            return await SynthEngine(provider, Path(out), options).run([spec])

    (record,) = asyncio.run(go())
    return record.model_dump(mode="json")
