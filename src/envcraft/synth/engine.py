"""The synthesis engine: spec -> archetypes -> LLM code -> audits -> bounded repair.

For each spec (:class:`Candidate`): rank the nine archetypes (BM25), render the top two
references, ask the model for a package as a file map, audit it (:mod:`envcraft.synth.audit`)
and, while it fails and attempts are left, send the de-duplicated findings back with the
files. A repair answer that leaves the files as they were ends the loop early. The attempt
that got furthest through the stages is the candidate's best; an accepted package is copied
to ``OUT/envs/<id>/``.

Everything a run learns is on disk, so an interrupted run resumes: model answers through the
response cache of :mod:`envcraft.llm` (``OUT/.cache/llm``; a batch provider's answers are its
output files), audit reports by package content (``OUT/.cache/audits``), each candidate's
record in ``OUT/candidates/<id>/record.json`` (a finished one is not redone) with every
attempt's raw answer, files and audit beside it. A candidate whose request waits for a batch
answer is ``waiting`` and continues on the next run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envcraft.core.workspace import atomic_write_bytes
from envcraft.llm.provider import Provider
from envcraft.llm.types import ChatRequest, ChatResponse, LLMError, Message
from envcraft.synth.audit import AuditConfig, AuditReport, audit_package
from envcraft.synth.audit.findings import Finding, StageResult, stage_result
from envcraft.synth.audit.static import AST_LOCK
from envcraft.synth.filemap import FileMapError, missing_required, parse_file_map, write_files
from envcraft.synth.prompt import first_messages, repair_messages, summarize_findings
from envcraft.synth.references import DEFAULT_BUDGET, render_reference
from envcraft.synth.retrieval import ArchetypeScore, rank_archetypes, reference_roots
from envcraft.synth.spec import ScenarioSpec
from envcraft.synth.tokens import count_tokens

Status = Literal["pending", "waiting", "accepted", "rejected", "error"]
FINAL: frozenset[str] = frozenset({"accepted", "rejected"})
RECORD_FILE = "record.json"
RESPONSE_FILE = "response.txt"
AUDIT_FILE = "audit.json"
Progress = Callable[["CandidateRecord"], None]


@dataclass(frozen=True)
class EngineOptions:
    """Knobs of one synthesis run (recorded in ``synth.json``)."""

    attempts: int = 3
    workers: int = 1
    references: int = 2
    reference_budget: int = DEFAULT_BUDGET
    temperature: float | None = None
    max_tokens: int | None = None
    audit: AuditConfig = field(default_factory=AuditConfig)

    def to_json(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "workers": self.workers,
            "references": self.references,
            "reference_budget": self.reference_budget,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "yield_tasks": self.audit.yield_tasks,
            "require_coverage": self.audit.require_coverage,
        }


class AttemptRecord(BaseModel):
    """One model answer and what the audits made of it."""

    number: int
    kind: Literal["first", "repair"]
    request_key: str
    prompt_tokens: int = 0  # as the model's server counted them
    completion_tokens: int = 0
    cached_tokens: int = 0
    prompt_tokens_local: int = 0  # our own count of the request (o200k or chars/4)
    finish_reason: str = ""
    changed: bool = True  # a repair that changed no file ends the loop
    files_hash: str = ""
    report: AuditReport = Field(default_factory=AuditReport)
    audit_seconds: float = 0.0

    @property
    def progress(self) -> int:
        return self.report.progress


class CandidateRecord(BaseModel):
    """Everything about one candidate (``OUT/candidates/<id>/record.json``)."""

    id: str
    title: str
    kind: str
    source: str
    spec_hash: str
    retrieval: list[dict[str, Any]] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)
    hand_labels: list[str] = Field(default_factory=list)
    attempts: list[AttemptRecord] = Field(default_factory=list)
    status: Status = "pending"
    best_attempt: int | None = None
    reasons: list[str] = Field(default_factory=list)
    stopped: str = ""  # why the repair loop ended

    @property
    def best(self) -> AttemptRecord | None:
        return next((a for a in self.attempts if a.number == self.best_attempt), None)

    def tokens(self) -> dict[str, int]:
        return {
            "prompt_tokens": sum(a.prompt_tokens for a in self.attempts),
            "completion_tokens": sum(a.completion_tokens for a in self.attempts),
            "cached_tokens": sum(a.cached_tokens for a in self.attempts),
        }


@dataclass
class Candidate:
    spec: ScenarioSpec
    directory: Path
    record: CandidateRecord


class SynthEngine:
    """Runs candidates with a provider into ``out`` (see the module docstring)."""

    def __init__(self, provider: Provider, out: Path, options: EngineOptions | None = None) -> None:
        self.provider = provider
        self.out = Path(out)
        self.options = options or EngineOptions()
        self.audit_cache = self.out / ".cache" / "audits"
        audit = self.options.audit
        if audit.wheel_cache is None:
            audit = AuditConfig(**{**audit.__dict__, "wheel_cache": self.out / ".cache" / "wheels"})
            self.options = EngineOptions(**{**self.options.__dict__, "audit": audit})

    async def run(self, specs: list[ScenarioSpec], progress: Progress | None = None) -> list[CandidateRecord]:
        """Every spec to a final (or waiting) record; the records in spec order."""
        slots = asyncio.Semaphore(max(1, self.options.workers))
        candidates = [self._candidate(spec) for spec in specs]

        async def one(candidate: Candidate) -> CandidateRecord:
            async with slots:
                if candidate.record.status not in FINAL:
                    await self._synthesize(candidate)
                if progress is not None:
                    progress(candidate.record)
                return candidate.record

        return list(await asyncio.gather(*(one(c) for c in candidates)))

    # -- one candidate ----------------------------------------------------------------------
    def _candidate(self, spec: ScenarioSpec) -> Candidate:
        directory = self.out / "candidates" / spec.id
        spec_hash = spec_key(spec, self.options.to_json())
        path = directory / RECORD_FILE
        if path.is_file():
            try:
                record = CandidateRecord.model_validate_json(path.read_text(encoding="utf-8"))
            except ValueError:
                record = None
            if record is not None and record.spec_hash == spec_hash:
                return Candidate(spec, directory, record)
        record = CandidateRecord(
            id=spec.id,
            title=spec.title,
            kind=spec.kind,
            source=spec.source,
            spec_hash=spec_hash,
            hand_labels=list(spec.archetypes),
        )
        return Candidate(spec, directory, record)

    async def _synthesize(self, candidate: Candidate) -> None:
        record = candidate.record
        record.attempts, record.status, record.reasons, record.stopped = [], "pending", [], ""
        with AST_LOCK:  # retrieval and references parse sources; other candidates' audits may too
            ranking = rank_archetypes(candidate.spec.text())
            chosen = ranking[: self.options.references]
            references = self._references(chosen)
        record.retrieval = [s.to_json() for s in ranking]
        record.references = [s.reference for s in chosen]
        messages = first_messages(candidate.spec, references)
        files: dict[str, str] = {}
        for number in range(1, self.options.attempts + 1):
            kind: Literal["first", "repair"] = "first" if number == 1 else "repair"
            try:
                response, key = await self._ask(messages)
            except LLMError as exc:
                record.status = "waiting" if exc.kind == "pending" else "error"
                record.reasons = [f"model: {exc}"]
                record.stopped = (
                    "the model gave no answer" if exc.kind != "pending" else "waiting for a batch answer"
                )
                self._save(candidate)
                return
            attempt = AttemptRecord(
                number=number,
                kind=kind,
                request_key=key,
                finish_reason=response.finish_reason,
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                cached_tokens=response.usage.cached_tokens,
                prompt_tokens_local=sum(count_tokens(str(m.get("content") or "")) for m in messages),
            )
            attempt_dir = candidate.directory / f"attempt-{number}"
            attempt_dir.mkdir(parents=True, exist_ok=True)
            text = response.content or ""
            (attempt_dir / RESPONSE_FILE).write_text(text, encoding="utf-8")
            parsed, response_stage = _parse(text, files, candidate.spec, response)
            if parsed is None:
                attempt.report = _report(response_stage)
                attempt.changed = True
            else:
                attempt.changed = parsed != files or number == 1
                files = parsed
                attempt.files_hash = files_hash(files)
                if not attempt.changed:
                    attempt.report = record.attempts[-1].report
                else:
                    package = attempt_dir / candidate.spec.id
                    _replace_dir(package, files)
                    attempt.report = await self._audit(package, attempt.files_hash)
                    attempt.report.stages.insert(0, response_stage)
                    attempt.report.planned.insert(0, "response")
                attempt.audit_seconds = attempt.report.wall_seconds
            (attempt_dir / AUDIT_FILE).write_text(attempt.report.model_dump_json(indent=2), encoding="utf-8")
            record.attempts.append(attempt)
            self._save(candidate)
            if attempt.report.passed and parsed is not None:
                record.status, record.best_attempt = "accepted", number
                record.stopped = f"accepted at attempt {number}"
                _replace_dir(self.out / "envs" / candidate.spec.id, files)
                self._save(candidate)
                return
            if not attempt.changed:
                record.stopped = f"attempt {number} changed no file"
                break
            if number < self.options.attempts:
                messages = repair_messages(candidate.spec, files, attempt.report)
        else:
            record.stopped = f"no attempt passed in {self.options.attempts}"
        best = max(record.attempts, key=lambda a: (a.progress, -len(a.report.errors()), -a.number))
        record.best_attempt = best.number
        record.status = "rejected"
        record.reasons = summarize_findings(best.report).splitlines()[:8]
        self._save(candidate)

    def _references(self, chosen: list[ArchetypeScore]) -> list[Any]:
        roots = reference_roots()
        return [
            render_reference(roots[s.archetype], s.archetype, self.options.reference_budget) for s in chosen
        ]

    async def _ask(self, messages: list[Message]) -> tuple[ChatResponse, str]:
        request = ChatRequest(
            messages=messages, temperature=self.options.temperature, max_tokens=self.options.max_tokens
        )
        key = request.key(self.provider.model)
        return await self.provider.complete(request), key

    async def _audit(self, package: Path, files_hash: str) -> AuditReport:
        config = self.options.audit
        key = _hash(
            files_hash + repr(sorted((k, repr(v)) for k, v in config.__dict__.items() if k != "wheel_cache"))
        )
        cached = self.audit_cache / f"{key}.json"
        if cached.is_file():
            try:
                return AuditReport.model_validate_json(cached.read_text(encoding="utf-8"))
            except ValueError:
                pass
        report = await asyncio.to_thread(audit_package, package, config)
        if not any(f.code == "sandbox" for s in report.stages for f in s.findings):
            _atomic_write(cached, report.model_dump_json())
        return report

    def _save(self, candidate: Candidate) -> None:
        _atomic_write(candidate.directory / RECORD_FILE, candidate.record.model_dump_json(indent=2))


def _parse(
    text: str, previous: Mapping[str, str], spec: ScenarioSpec, response: ChatResponse
) -> tuple[dict[str, str] | None, StageResult]:
    """The files after this answer, with the response stage's verdict."""
    started = time.monotonic()
    findings: list[Finding] = []
    if response.finish_reason == "length":
        message = "the answer was cut off at the token limit: give fewer or shorter files"
        findings.append(Finding(stage="response", code="truncated", message=message))
    try:
        parsed = parse_file_map(text)
    except FileMapError as exc:
        findings += [
            Finding(stage="response", code="file-map", message=m, line=line) for line, m in exc.problems
        ]
        return None, stage_result("response", findings, time.monotonic() - started)
    files = parsed.applied_to(previous)
    findings += [
        Finding(stage="response", code="missing-file", message=f"the package needs {path}")
        for path in missing_required(files)
    ]
    findings += _manifest_id(files, spec)
    result = stage_result("response", findings, time.monotonic() - started, {"files": len(files)})
    return (files if result.ok else None), result


def _manifest_id(files: Mapping[str, str], spec: ScenarioSpec) -> list[Finding]:
    text = files.get("envcraft.toml")
    if text is None:
        return []
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []  # the static audit (the linter's manifest rule) says where
    found = data.get("id")
    if found != spec.id:
        message = f'envcraft.toml must say id = "{spec.id}" (it says {found!r})'
        return [Finding(stage="response", code="manifest-id", message=message, file="envcraft.toml")]
    if data.get("kind") != spec.kind:
        message = f'envcraft.toml must say kind = "{spec.kind}" (it says {data.get("kind")!r})'
        return [Finding(stage="response", code="manifest-kind", message=message, file="envcraft.toml")]
    return []


def _report(response_stage: StageResult) -> AuditReport:
    return AuditReport(stages=[response_stage])


def spec_key(spec: ScenarioSpec, options: Mapping[str, Any]) -> str:
    """A record's ``spec_hash``: the spec and the options that change the work (not ``workers``:
    the same work at any pace), so a record is redone exactly when its answer could differ.
    ``options`` is :meth:`EngineOptions.to_json` (as ``synth.json`` records it)."""
    what = {k: v for k, v in options.items() if k != "workers"}
    # a spec without a focus hashes as it did before the field existed (recorded hashes stay valid)
    dumped = spec.model_dump_json(exclude=None if spec.focus else {"focus"})
    return _hash(dumped + json.dumps(what, sort_keys=True))


def files_hash(files: Mapping[str, str]) -> str:
    """An attempt's ``files_hash``: the package it left (what the library re-checks answers against)."""
    return _hash(json.dumps(dict(sorted(files.items())), ensure_ascii=False))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _replace_dir(target: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` as ``target`` in one step (a half-written package is never seen)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        write_files(staging, files)
        if target.exists():
            old = target.with_name(f".{target.name}-old-{os.getpid()}")
            os.replace(target, old)
            os.replace(staging, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _atomic_write(path: Path, text: str) -> None:
    """``text`` written atomically (a reader sees the old file or the new one, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, text.encode("utf-8"))
