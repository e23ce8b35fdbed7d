"""The task format: the triple (intents Q, initial state S0, verifier V) plus its golden run.

One task is one JSON object per line in ``tasks.jsonl`` (see ``docs/architecture.md``).
All environments of a task share one workspace directory, so a file one environment
writes is a file the next one can read (cross-environment workflows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from envcraft.core.errors import is_error
from envcraft.tasks.values.args import flatten, json_type, schema_path

SourceKind = Literal["user", "named", "derived", "embed", "cited", "file"]
_LABEL = re.compile(r"^(derived|embed|cited):(\d+)\.(.+)$")


@dataclass(frozen=True)
class Source:
    """Where one argument value of a reference call comes from (stored as its label string).

    * ``user`` - the user states it (a quantity, a reason, an id the user holds);
    * ``named`` - a record of S0 the user names as a person would ("Maya Patel's order from
      3 January"); the agent must find its id;
    * ``derived:<call>.<path>`` - read from an earlier call's result;
    * ``embed:<call>.<path>`` - free text that must carry a value read from an earlier call's
      result (a mail that quotes the refund number);
    * ``cited:<call>.<path>`` - a record the text at ``<path>`` of an earlier call's result names
      (a colleague's mail, read in another environment, that names the booking to change); S0
      fixes the value, so a replay only checks the text still names it;
    * ``file:<path>`` - read from a workspace file.
    """

    kind: SourceKind
    call: int | None = None
    path: str | None = None

    @classmethod
    def parse(cls, label: str) -> Source:
        match = _LABEL.match(label)
        if match is not None:
            kind = cast(SourceKind, match.group(1))
            return cls(kind, int(match.group(2)), match.group(3))
        if label.startswith("file:"):
            return cls("file", None, label[5:])
        return cls("named") if label == "named" else cls("user")

    @property
    def from_call(self) -> bool:
        """Taken from an earlier call's result (so a replay must re-read it there)."""
        return self.kind in ("derived", "embed", "cited")

    @property
    def pointed(self) -> bool:
        """A value the user points at where the agent reads it (a workspace file's line, a note
        in another environment) instead of stating it: the pointer must be said."""
        return self.kind in ("file", "cited")

    @property
    def hidden(self) -> bool:
        """A value the turns must not state: the agent finds it."""
        return self.kind != "user"

    def __str__(self) -> str:
        if self.from_call:
            return f"{self.kind}:{self.call}.{self.path}"
        if self.kind == "file":
            return f"file:{self.path}"
        return self.kind


@dataclass
class Hint:
    """How the user can point at a derived value without naming it."""

    call: int
    entity: str
    field: str | None = None
    value: Any = None
    among: int = 1  # how many sibling records the pick was made from

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "entity": self.entity,
            "field": self.field,
            "value": self.value,
            "among": self.among,
        }


@dataclass
class GoldenCall:
    """One call of a golden run as it happened, with where each argument came from."""

    env: str
    tool: str
    args: dict[str, Any]
    provenance: dict[str, str]
    result: dict[str, Any]
    hints: dict[str, Hint] = field(default_factory=dict)
    expected_error: str | None = None  # a planned error-recovery step: the category it fails with

    @property
    def ok(self) -> bool:
        return not is_error(self.result)

    def source(self, arg: str) -> Source:
        return Source.parse(self.provenance.get(arg, "user"))

    @cached_property
    def leaves(self) -> list[tuple[str, str, Any, str | None]]:
        """``(path, schema path, value, JSON type)`` of every scalar in the result (computed once)."""
        return [(p, schema_path(p), v, json_type(v)) for p, v in flatten(self.result)]


class Turn(BaseModel):
    """One user message, revealed only after the previous turn is done."""

    model_config = ConfigDict(extra="forbid")

    user: str


class ReferenceCall(BaseModel):
    """One call of the golden run, with the provenance of each argument.

    ``provenance`` maps an argument name to the label of its :class:`Source`.
    """

    model_config = ConfigDict(extra="forbid")

    turn: int
    env: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    provenance: dict[str, str] = Field(default_factory=dict)

    def source(self, arg: str) -> Source:
        return Source.parse(self.provenance.get(arg, "user"))


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
