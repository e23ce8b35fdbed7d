"""What an audit reports: stages in order, each with a structured list of findings.

The stages run in :data:`STAGES` order and stop at the first that fails, so how far a
candidate got (:attr:`AuditReport.progress`) is a single number: the repair loop keeps the
attempt that got furthest. Findings are plain data (JSON in ``synth.json``) and
de-duplicate by :meth:`Finding.key`, so a bug met on forty calls is reported once with a count.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

Stage = Literal["response", "static", "dependencies", "load", "s0", "skills", "explore", "yield"]
STAGES: tuple[Stage, ...] = ("response", "static", "dependencies", "load", "s0", "skills", "explore", "yield")
STAGE_SUMMARIES: dict[str, str] = {
    "response": "the model's answer is a well-formed file map with the required files",
    "static": "syntax, the contract linter's static rules, imports from the allow-list only",
    "dependencies": "declared requirements install from wheels into a throwaway venv in the sandbox",
    "load": "the package imports in the sandbox, passes the full linter, its schemas build",
    "s0": "generate() gives valid, reloadable, deterministic initial states over seeds and sizes",
    "skills": "skills name real tools with real arguments; each worked example succeeds on S0",
    "explore": (
        "random call sequences: no internal_error, deterministic, reloadable, fast; every tool succeeds"
    ),
    "yield": "the data engine validates enough tasks on the environment",
}
Severity = Literal["error", "warning"]
_NUMBERS = re.compile(r"\d+")


class Finding(BaseModel):
    """One problem an audit found, precise enough to fix: where, which tool, what happened."""

    stage: Stage
    code: str  # e.g. "syntax", "lint:module-state", "internal_error", "nondeterministic"
    message: str
    severity: Severity = "error"
    file: str = ""
    line: int = 0
    tool: str = ""
    count: int = 1  # how many times the same problem was met
    detail: dict[str, Any] = Field(default_factory=dict)  # e.g. the shortest failing call sequence

    def key(self) -> tuple[str, str, str, str, str]:
        """Identity for de-duplication: one problem per line of code when the line is known,
        else per message with its numbers (ids, amounts) blanked."""
        if self.line:
            return (self.stage, self.code, self.file, self.tool, str(self.line))
        return (self.stage, self.code, self.file, self.tool, _NUMBERS.sub("#", self.message))

    @property
    def location(self) -> str:
        if not self.file:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file


class StageResult(BaseModel):
    """One stage's outcome; ``facts`` hold its measurements (calls made, seeds tried, ...)."""

    stage: Stage
    ok: bool
    seconds: float = 0.0
    findings: list[Finding] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


class AuditReport(BaseModel):
    """Every stage that ran, in order; the last one is the first that failed (if any)."""

    planned: list[Stage] = Field(default_factory=lambda: list(STAGES))
    stages: list[StageResult] = Field(default_factory=list)
    wall_seconds: float = 0.0  # the whole audit, sandbox start-up included

    @property
    def passed(self) -> bool:
        ran = [s.stage for s in self.stages]
        return ran == list(self.planned) and all(s.ok for s in self.stages)

    @property
    def progress(self) -> int:
        """How many stages passed, in order (the repair loop's measure of a better attempt)."""
        count = 0
        for stage in self.stages:
            if not stage.ok:
                break
            count += 1
        return count

    @property
    def failed_stage(self) -> Stage | None:
        return next((s.stage for s in self.stages if not s.ok), None)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.stages)

    def errors(self) -> list[Finding]:
        return [f for s in self.stages for f in s.errors]

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.stage == name), None)


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per :meth:`Finding.key`, its count the sum, in first-seen order."""
    merged: dict[tuple[str, str, str, str, str], Finding] = {}
    for item in findings:
        key = item.key()
        if key in merged:
            merged[key] = merged[key].model_copy(update={"count": merged[key].count + item.count})
        else:
            merged[key] = item
    return list(merged.values())


def stage_result(
    stage: Stage, findings: list[Finding], seconds: float, facts: dict[str, Any] | None = None
) -> StageResult:
    """A stage passes when none of its (de-duplicated) findings is an error."""
    unique = dedupe(findings)
    ok = not any(f.severity == "error" for f in unique)
    return StageResult(stage=stage, ok=ok, seconds=round(seconds, 3), findings=unique, facts=facts or {})
