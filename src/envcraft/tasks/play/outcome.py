"""What one run of a task produced: the records every verifier, validator and report reads.

One :class:`Outcome` is the whole observable result of a run: each environment's initial and
final state, the shared workspace before and after, a snapshot after every user turn and
the action log. Golden runs, replays, agent rollouts and validation mutations are all
Outcomes, so the verifier sees one shape whatever produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envcraft.core.state import state_hash


class ExecutionError(ValueError):
    """A task that cannot be run at all (unknown package, S0 that does not validate)."""


@dataclass
class Action:
    """One call as it happened: which turn, which environment, what was asked, what came back."""

    turn: int
    env: str
    tool: str
    args: Any
    result: dict[str, Any]
    provenance: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "env": self.env,
            "tool": self.tool,
            "args": self.args,
            "result": self.result,
        }


@dataclass
class TurnSnapshot:
    """Every environment's state and the workspace right after one user turn."""

    final: dict[str, dict[str, Any]]
    files: dict[str, str]


@dataclass
class Outcome:
    """The observable result of one run of a task (see the module docstring)."""

    initial: dict[str, dict[str, Any]]
    final: dict[str, dict[str, Any]]
    initial_files: dict[str, str]
    files: dict[str, str]
    turns: list[TurnSnapshot]
    actions: list[Action]
    packages: dict[str, str] = field(default_factory=dict)
    # what the task's mock services saw (``{"calls", "audit"}``, envcraft.tasks.play.services)
    services: dict[str, Any] = field(default_factory=dict)
    # runs derived from this one (shifted, tail and clock-only replays), computed once: synthesis
    # and validation both ask
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def turn_calls(self) -> list[list[dict[str, Any]]]:
        """The actions regrouped as per-turn call lists (what :func:`execute` takes)."""
        grouped: list[list[dict[str, Any]]] = [[] for _ in self.turns]
        for action in self.actions:
            grouped[action.turn].append(
                {"env": action.env, "tool": action.tool, "args": action.args, "provenance": action.provenance}
            )
        return grouped


def outcome_hash(outcome: Outcome) -> str:
    """The identity of a run's end point: every final state plus the workspace."""
    return state_hash({"states": outcome.final, "workspace": outcome.files})


def noop_outcome(outcome: Outcome) -> Outcome:
    """The run of an agent that did nothing: every snapshot is S0."""
    return Outcome(
        initial=outcome.initial,
        final=outcome.initial,
        initial_files=outcome.initial_files,
        files=outcome.initial_files,
        turns=[TurnSnapshot(outcome.initial, outcome.initial_files) for _ in outcome.turns],
        actions=[],
        packages=outcome.packages,
    )
