"""The task format: the triple (intents Q, initial state S0, verifier V) plus its golden run.

One task is one JSON object per line in ``tasks.jsonl`` (see ``docs/architecture.md``).
All environments of a task share one workspace directory, so a file one environment
writes is a file the next one can read (cross-environment workflows).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Turn(BaseModel):
    """One user message, revealed only after the previous turn is done."""

    model_config = ConfigDict(extra="forbid")

    user: str


class ReferenceCall(BaseModel):
    """One call of the golden run, with the provenance of each argument.

    ``provenance`` maps an argument name to ``"user"`` (stated in some turn or known from
    S0) or ``"derived:<call>.<field>"`` (taken from an earlier call's output).
    """

    model_config = ConfigDict(extra="forbid")

    turn: int
    env: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    provenance: dict[str, str] = Field(default_factory=dict)


class Reference(BaseModel):
    """The golden run: replayed in fresh sessions it must reach ``final_hash``."""

    model_config = ConfigDict(extra="forbid")

    calls: list[ReferenceCall]
    final_hash: str


class Verifier(BaseModel):
    """``source`` defines ``verify(ctx) -> {"score", "components"}``; ``checks`` are the
    same checks in declarative form (for reading, filtering and mutation analysis)."""

    model_config = ConfigDict(extra="forbid")

    source: str
    checks: list[dict[str, Any]] = Field(default_factory=list)


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    envs: list[str]
    kind: Literal["tool", "claw"]
    turns: list[Turn]
    initial_state: dict[str, dict[str, Any]]
    workspace: dict[str, str] = Field(default_factory=dict)
    verifier: Verifier
    reference: Reference
    persona: str = ""
    provenance: dict[str, Any] = Field(default_factory=dict)
    quality: dict[str, Any] = Field(default_factory=dict)
    difficulty: dict[str, Any] | None = None
