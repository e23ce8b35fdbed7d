"""One task played by a trainer's policy: the user-turn rule, tool results as text, the reward.

The trainer adapters (:mod:`envcraft.integrations.verl`, :mod:`envcraft.integrations.trl`)
each drive one :class:`TaskPlay` per trajectory. It is a thin layer over
:class:`envcraft.tasks.play.episode.Episode` (fresh sessions from S0, one shared workspace, calls
recorded per user turn) that adds what every trainer needs the same way:

* **The user-turn rule**, the rollout loop's: when the policy answers without a tool call,
  the current user turn ends (:meth:`Episode.end_turn`) and the task's next user message is
  revealed; after the last turn the play is over and further calls are refused (they would
  change a state no verifier snapshot belongs to).
* **Tool results as text** are the adapters' own: VERL's loop renders them as the rollout loop
  does (:func:`envcraft.rollout.loop.tool_result_text`), TRL's environment as compact JSON.
* **The reward**: the task's verifier on the play's outcome
  (:func:`envcraft.tasks.verifier.scoring.run_verifier`), and a JSON report with the components and the
  calls grouped per user turn (the ``tasks score`` trajectory format), so anyone can re-score
  the same trajectory in fresh sessions and compare.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from envcraft.core.errors import ErrorCategory, error_result, is_error
from envcraft.rollout.grading import grading_of
from envcraft.sandbox.profiles import DEFAULT_PROFILE
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.verifier.scoring import Score, run_verifier


class TaskPlay:
    """One trajectory of ``task`` (see the module docstring). Use as a context manager or :meth:`close`."""

    def __init__(self, task: Task, profile: str = DEFAULT_PROFILE) -> None:
        """Open ``task`` with the system tools of ``profile`` (``openclaw`` as ``eval`` and the
        exports; ``envcraft`` for the canonical names)."""
        self.task = task
        self.episode = Episode.open(task, profile=profile)
        self.tool_calls = 0
        self.tool_errors = 0

    # -- what the policy sees ------------------------------------------------------------------
    def openai_tools(self) -> list[dict[str, Any]]:
        """The task's tools as OpenAI function tools (what the chat template renders)."""
        return self.episode.openai_tools()

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.episode.tools()]

    @property
    def user_message(self) -> str | None:
        """The current user turn (None once every turn has ended)."""
        return self.episode.user_message

    @property
    def done(self) -> bool:
        return self.episode.done

    @property
    def turns_completed(self) -> int:
        return self.episode.turn

    # -- what the policy does -----------------------------------------------------------------
    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        """One tool call by its exposed name. ``arguments`` is a dict or its JSON text; a call
        that cannot be parsed, or comes after the last turn, fails without reaching a session."""
        if self.done:
            result = error_result(
                ErrorCategory.INVALID_TRANSITION,
                "every request of the user is done; no more tool calls are taken",
                tool=name,
            )
        else:
            parsed = parse_arguments(arguments)
            result = parsed if is_error(parsed) else self.episode.call_exposed(name, parsed["args"])
        self.tool_calls += 1
        self.tool_errors += is_error(result)
        return result

    def answer(self) -> str | None:
        """The policy answered without a tool call: end the turn; the next user message, or None."""
        return None if self.done else self.episode.end_turn()

    # -- the reward -----------------------------------------------------------------------------
    def score(self, messages: Sequence[dict[str, Any]] | None = None) -> Score:
        """The task's verifier on the play so far (turns not reached keep the current state).

        ``messages`` (the conversation) reach a verifier that reads the transcript, as a task
        imported from PinchBench does (:mod:`envcraft.rollout.grading`); a judged part is not
        scored here.
        """
        grading = grading_of(self.task)
        reads = grading is not None and bool(grading.get("reads_transcript"))
        return run_verifier(self.task, self.episode.outcome(), messages=messages if reads else None)

    def report(self, score: Score | None) -> dict[str, Any]:
        """A JSON record of the play: reward (None when not scored here), components, counts
        and the calls per user turn."""
        return {
            "task_id": self.task.id,
            "score": None if score is None else score.score,
            "components": {} if score is None else dict(score.components),
            "error": None if score is None else score.error,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "turns": len(self.task.turns),
            "turns_completed": self.turns_completed,
            "trajectory": self.episode.trajectory(self.task.id)["turns"],
        }

    def close(self) -> None:
        self.episode.close()

    def __enter__(self) -> TaskPlay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """``{"args": dict}``, or an ``invalid_argument`` error result for JSON text that is not an object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return error_result(ErrorCategory.INVALID_ARGUMENT, f"tool arguments are not JSON: {exc.msg}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        return error_result(
            ErrorCategory.INVALID_ARGUMENT, f"tool arguments must be a JSON object, not {kind}"
        )
    return {"args": arguments}
