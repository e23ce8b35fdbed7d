"""The rules the contract linter knows, and the findings and report it produces.

Each rule has one fixed severity, so a rule id alone tells a caller (the synthesis
engine's static audit, CI) whether a finding blocks a package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Rule:
    """One check: its id, severity, what it enforces and the paper's Table 15 row, if any."""

    id: str
    severity: Severity
    summary: str
    table15: int | None = None


_RULES = (
    # code: paper Table 15 and the runtime contract
    Rule("syntax", "error", "Python source files parse"),
    Rule("tool-return", "error", "every tool returns a dict on every path", 1),
    Rule("tool-raise", "warning", "tools report failures with self.fail(...), not raise", 1),
    Rule("fail-category", "error", "self.fail(...) names a known ErrorCategory", 1),
    Rule("module-state", "error", "no mutable module-level state", 2),
    Rule("module-object", "warning", "module-level objects bound to lower-case names may hold state", 2),
    Rule("global-statement", "error", "no global statements", 2),
    Rule("class-state", "error", "no mutable class attributes outside pydantic models", 2),
    Rule("instance-state", "error", "mutable data lives in self.state only", 2),
    Rule("file-io", "error", "files only through self.workspace and self.data (data/ is read-only)", 3),
    Rule("wall-clock", "error", "time comes from self.now(), never the wall clock", 6),
    Rule("unseeded-random", "error", "randomness comes from self.rng or a seeded random.Random"),
    Rule("builtin-hash", "warning", "hash() of str differs between processes; use hashlib"),
    Rule("subprocess", "error", "no processes spawned from tool code"),
    Rule("network", "error", "no network access from tool code"),
    Rule("dynamic-code", "error", "no eval/exec/compile/__import__"),
    # package structure
    Rule("manifest", "error", "envcraft.toml exists and is a valid manifest"),
    Rule("manifest-id", "warning", "the manifest id equals the package folder name"),
    Rule("manifest-kind", "error", "kind matches the code: claw environments subclass ClawEnvironment"),
    Rule("readme", "error", "README.md exists and is not empty"),
    Rule("readme-short", "warning", "README.md says enough for an agent to use the environment"),
    Rule("env-import", "error", "env.py imports through the package loader"),
    Rule("env-class", "error", "env.py defines exactly one Environment subclass, and no other module does"),
    Rule("module-import", "error", "relative imports name modules at the package root"),
    Rule("module-cycle", "error", "the package's modules import each other in one direction, no cycle"),
    Rule("no-tools", "warning", "the environment declares at least one tool of its own"),
    Rule("tool-docstring", "error", "each tool has a summary and documents every parameter under Args:"),
    Rule("tool-docstring-style", "warning", "tool docstrings have Returns: and document no unknown args"),
    Rule("tool-schema", "error", "each tool's parameter schema builds, flat and JSON-serializable"),
    Rule("tool-goal", "warning", "each tool that changes state says how a user asks for it (goal=)"),
    Rule("goal-syntax", "error", "goal phrases parse and name only the tool's parameters"),
    Rule("entity-decl", "error", "entity declarations name State collections and their records' fields"),
    Rule(
        "job-decl",
        "error",
        "jobs name the environment's tools, and their goal phrases only those tools' parameters",
    ),
    Rule("skill-missing", "warning", "the package ships at least one skill"),
    Rule("skill-frontmatter", "error", "SKILL.md front matter follows agentskills.io"),
    Rule("skill-spec", "error", "skills-ref (the Agent Skills reference validator) accepts the skill"),
    Rule("skill-body", "warning", "SKILL.md bodies stay under 500 lines"),
    Rule("data-parse", "error", "data/ files parse (json, jsonl, csv)"),
)
RULES: dict[str, Rule] = {rule.id: rule for rule in _RULES}


class Finding(BaseModel):
    """One problem at ``file:line`` (``file`` relative to the package root; line 0 = whole file)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    severity: Severity
    file: str
    line: int
    message: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


def finding(rule_id: str, file: str, line: int, message: str) -> Finding:
    """A finding of a registered rule (the rule fixes the severity)."""
    return Finding(rule=rule_id, severity=RULES[rule_id].severity, file=file, line=line, message=message)


class LintReport(BaseModel):
    """Everything the linter found in one package; ``ok`` means no errors."""

    package: str
    env_id: str
    imported: bool  # env.py was imported, so the tool documentation / schema checks ran
    findings: list[Finding]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def rules(self) -> set[str]:
        """The ids of the rules that fired."""
        return {f.rule for f in self.findings}
