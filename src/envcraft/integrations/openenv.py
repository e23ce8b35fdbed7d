"""An OpenEnv ``Environment`` over an envcraft task (optional extra ``envcraft[openenv]``).

``reset()`` opens the task's :class:`~envcraft.tasks.play.episode.Episode` (fresh sessions from
S0, the task's workspace, skills under a harness profile) and returns the first user turn
with the tools; ``step(action)`` is one tool call, ``{"tool": NAME, "args": {...}}`` by the
name the profile exposes, or ``{"end_turn": true}``, which closes the user turn as an
agent's answer does and reveals the next; ``state`` is the session state (every
environment's state, the workspace files, the canonical trajectory). When the last turn
ends the observation is ``done`` and carries the verifier's score as its ``reward``, with
the components in ``metadata``.

Served with OpenEnv's own app (:func:`create_task_app` = ``openenv.core.env_server.
create_app``). OpenEnv keeps one environment per WebSocket connection on ``/ws``; its HTTP
``/reset`` and ``/step`` build a fresh environment per request, so a multi-step episode is
played over ``/ws`` (OpenEnv's ``EnvClient`` does exactly that).
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any

from openenv.core.env_server import Action, Environment, Observation, State, create_app
from pydantic import Field

from envcraft.core.errors import ErrorCategory, error_result
from envcraft.sandbox.profiles import DEFAULT_PROFILE, result_text
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import Episode
from envcraft.tasks.verifier.scoring import run_verifier


class EnvcraftAction(Action):
    """One step: a tool call by its exposed name, or the end of the current user turn."""

    tool: str | None = Field(
        default=None, description="Exposed tool name (see the reset observation's tools)"
    )
    args: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments")
    end_turn: bool = Field(default=False, description="End the user turn (the agent has answered)")


class EnvcraftObservation(Observation):
    """What the agent sees after a reset or a step."""

    user_message: str | None = Field(default=None, description="The current user turn (None once done)")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI function tools (on reset)")
    result: dict[str, Any] | None = Field(default=None, description="The tool result (structured)")
    text: str = Field(default="", description="The tool result as the profile's harness shows it")
    turn: int = Field(default=0, description="Index of the current user turn")
    skills_prompt: str = Field(default="", description="OpenClaw's skills listing (harness profiles)")


class EnvcraftState(State):
    """The session state: every environment's state, the workspace and the calls so far."""

    task_id: str = ""
    turn: int = 0
    states: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    trajectory: dict[str, Any] = Field(default_factory=dict)


class EnvcraftEnvironment(Environment[EnvcraftAction, EnvcraftObservation, EnvcraftState]):
    """One task, played one tool call per step (see the module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every instance has its own sessions and workspace

    def __init__(self, task: Task, profile: str = DEFAULT_PROFILE) -> None:
        super().__init__()
        self.task = task
        self.profile = profile
        self._episode: Episode | None = None
        self._episode_id: str | None = None
        self._steps = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> EnvcraftObservation:
        """A fresh episode from S0 (``seed`` is unused: the task fixes S0)."""
        del seed, kwargs
        self.close()
        self._episode = Episode.open(self.task, profile=self.profile)
        self._episode_id = episode_id or uuid.uuid4().hex
        self._steps = 0
        return EnvcraftObservation(
            user_message=self._episode.user_message,
            tools=self._episode.openai_tools(),
            skills_prompt=self._episode.skills_prompt(),
        )

    def step(
        self, action: EnvcraftAction, timeout_s: float | None = None, **kwargs: Any
    ) -> EnvcraftObservation:
        del timeout_s, kwargs
        episode = self._live()
        self._steps += 1
        if episode.done:
            result = error_result(
                ErrorCategory.INVALID_TRANSITION, "the episode is over; reset to play again"
            )
            return self._observe(episode, result)
        if action.end_turn:
            episode.end_turn()
            if episode.done:
                score = run_verifier(self.task, episode.outcome())
                return self._observe(episode, None, reward=score.score, metadata=score.to_json())
            return self._observe(episode, None)
        if not action.tool:
            return self._observe(episode, error_result(ErrorCategory.MISSING_FIELD, "an action names a tool"))
        return self._observe(episode, episode.call_exposed(action.tool, action.args))

    @property
    def state(self) -> EnvcraftState:
        episode = self._episode
        if episode is None:
            return EnvcraftState(episode_id=None, step_count=0, task_id=self.task.id)
        return EnvcraftState(
            episode_id=self._episode_id,
            step_count=self._steps,
            task_id=self.task.id,
            turn=episode.turn,
            states={env: session.state() for env, session in episode.sessions.items()},
            files=episode.files(),
            trajectory=episode.trajectory(self.task.id),
        )

    def close(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None

    def _live(self) -> Episode:
        if self._episode is None:
            self.reset()
        assert self._episode is not None
        return self._episode

    def _observe(
        self,
        episode: Episode,
        result: dict[str, Any] | None,
        *,
        reward: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> EnvcraftObservation:
        return EnvcraftObservation(
            user_message=episode.user_message,
            result=result,
            text=result_text(result) if result is not None else "",
            turn=episode.turn,
            done=episode.done,
            reward=reward,
            metadata=metadata or {},
        )


def create_task_app(task: Task, profile: str = DEFAULT_PROFILE, max_concurrent_envs: int = 16) -> Any:
    """OpenEnv's FastAPI app serving ``task`` (one environment per ``/ws`` connection)."""
    return create_app(
        lambda: EnvcraftEnvironment(task, profile),
        EnvcraftAction,
        EnvcraftObservation,
        env_name=f"envcraft-{task.id}",
        max_concurrent_envs=max_concurrent_envs,
        state_cls=EnvcraftState,
    )


def load_task(tasks: str | Path, task_id: str) -> Task:
    """Task ``task_id`` of the task set in ``tasks``; ``KeyError`` naming it if absent."""
    for task in read_tasks(tasks):
        if task.id == task_id:
            return task
    raise KeyError(f"no task {task_id!r} in {tasks}")


def main(argv: list[str] | None = None) -> None:
    """``python -m envcraft.integrations.openenv TASKS ID [--port P]``: serve a task with uvicorn."""
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m envcraft.integrations.openenv")
    parser.add_argument("tasks")
    parser.add_argument("task_id")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--profile", default=DEFAULT_PROFILE)
    options = parser.parse_args(argv)
    try:
        task = load_task(options.tasks, options.task_id)
    except (KeyError, OSError, ValueError) as exc:
        parser.exit(2, f"error: {exc}\n")
    uvicorn.run(
        create_task_app(task, options.profile), host=options.host, port=options.port, log_level="warning"
    )


if __name__ == "__main__":
    main()
