"""envcraft tasks as TRL ``environment_factory`` environments (``GRPOTrainer``, TRL 1.16).

TRL's contract: an environment class with ``reset(self, **row) -> str | None`` (the string is
appended to the row's last user message), public methods with typed signatures and Google
docstrings as the tools (TRL reads them with transformers' ``get_json_schema``), and an
optional ``get_reward(self) -> float`` called once per finished rollout. TRL keeps a pool of
instances and reuses them, so each :meth:`EnvcraftEnvironment.reset` closes the previous
play and opens a fresh one (sessions from S0, its own workspace).

:func:`environments` builds one class per *tool surface* of a task set (the tasks whose
environments are the same, hence whose tools are the same), and :func:`dataset_rows` one row
per task naming its surface in ``environment``: TRL's multi-environment mode then shows each
prompt only its own task's tools.

**Later user turns.** TRL's loop is tool iterations: a completion without a tool call ends
the rollout, so a plain answer cannot reveal the next user turn as the rollout loop and the
VERL agent loop do. Here the turn is ended by a tool: ``end_turn()`` closes the current user
turn (the per-turn snapshot the verifier reads) and returns the user's next message, or says
that every request is done. The system prompt says so. A policy that stops before calling it
on the last turn is scored on the state it left (turns it never reached keep that state).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from envcraft.integrations.play import TaskPlay
from envcraft.sandbox.profiles import DEFAULT_PROFILE
from envcraft.tasks.corpus.export import system_prompt
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import ExposedTool, exposed_tools, resolve_packages

END_TURN = "end_turn"
RESERVED = frozenset({"reset", "get_reward", END_TURN})
END_TURN_NOTE = (
    "The user's requests come one at a time. When you have finished the current request, call "
    f"`{END_TURN}` to hand it back and receive the next one; stop when it says every request is done."
)
ALL_DONE = "Every request of the user is done. Answer with a short summary and make no more tool calls."
HISTORY = 1000
# Without the environments' documentation (a CPU run's short prompt), the system message is one line.
SHORT_FRAMING = (
    "You are an agent working in the environments below. Use their tools to do what the user asks."
)
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


class EnvcraftEnvironment:
    """One pooled TRL environment; subclasses made by :func:`environments` add the task's tools."""

    tasks: ClassVar[Mapping[str, Task]] = {}
    profile: ClassVar[str] = DEFAULT_PROFILE

    def __init__(self) -> None:
        self.play: TaskPlay | None = None
        self.last_report: dict[str, Any] | None = None
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)  # reports of recent scored plays

    def reset(self, **row: Any) -> str | None:
        """Open the row's task afresh; the first user turn (appended to the row's user message)."""
        task_id = row.get("task_id")
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise ValueError(
                f"row task_id {task_id!r} is not a task of this environment ({type(self).__name__})"
            )
        self._close()
        self.play = TaskPlay(task, self.profile)
        self.last_report = None
        return self.play.user_message

    def get_reward(self) -> float:
        """The task's verifier on the play's outcome (its report kept in ``last_report``)."""
        play = self._require_play()
        score = play.score()
        self.last_report = play.report(score)
        self.history.append(self.last_report)
        return score.score

    def end_turn(self) -> str:
        """Tell the user the current request is done and receive their next request.

        Returns:
            The user's next request, or a note that every request is done.
        """
        play = self._require_play()
        following = play.answer()
        return ALL_DONE if following is None else following

    def _call(self, name: str, arguments: Mapping[str, Any]) -> str:
        play = self._require_play()
        return tool_text(play.call(name, {k: v for k, v in arguments.items() if v is not None}))

    def _require_play(self) -> TaskPlay:
        if self.play is None:
            raise RuntimeError("reset() opens a task before any tool is called")
        return self.play

    def _close(self) -> None:
        if self.play is not None:
            self.play.close()
            self.play = None

    def __del__(self) -> None:  # TRL never closes pooled instances: release their sessions with them
        with contextlib.suppress(Exception):
            self._close()


def tool_text(result: dict[str, Any]) -> str:
    """A tool result as TRL's policy reads it: compact JSON. Not the rollout loop's spaced JSON:
    every token of a result costs a CPU run twice, and the smoke run's tiny sliding-window
    policy, tuned on these sequences, stopped making successful calls on the longer ones."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)


def surfaces(tasks: Sequence[Task]) -> dict[str, list[Task]]:
    """Tasks grouped by their environments (same environments, same tools), named after them."""
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault("+".join(sorted(task.envs)), []).append(task)
    return groups


def environments(
    tasks: Sequence[Task], *, profile: str = DEFAULT_PROFILE
) -> dict[str, type[EnvcraftEnvironment]]:
    """TRL's ``environment_factory`` for ``tasks``: ``{surface name: environment class}``, the
    Claw system tools under ``profile`` (``openclaw`` as ``eval``'s; ``envcraft``: canonical)."""
    made: dict[str, type[EnvcraftEnvironment]] = {}
    for name, group in surfaces(tasks).items():
        tools = exposed_tools(resolve_packages(group[0]), profile)
        clash = RESERVED & set(tools)
        if clash:
            raise ValueError(f"tools {sorted(clash)} of {name} clash with the TRL environment's own methods")
        members: dict[str, Any] = {name: _method(tool) for name, tool in tools.items()}
        members["tasks"] = {t.id: t for t in group}
        members["profile"] = profile
        members["__doc__"] = f"envcraft tasks on {name} ({len(group)} tasks) as a TRL environment."
        made[name] = type(_class_name(name), (EnvcraftEnvironment,), members)
    return made


def dataset_rows(
    tasks: Sequence[Task], *, documentation: bool = True, profile: str = DEFAULT_PROFILE
) -> list[dict[str, Any]]:
    """One TRL dataset row per task: the system prompt, an empty user message for ``reset`` to
    fill with the first turn, the task id and the environment (surface) it runs in.

    The system prompt is the rollout loop's, as the VERL rows have it (the environments'
    documentation included unless ``documentation`` is false: a CPU smoke run pays for every
    prompt token twice over, and the tools' own descriptions still reach the policy through
    the chat template), plus how to end a user turn here. ``profile`` is the one the
    :func:`environments` classes were made with (a Claw task's skills are listed under it)."""
    rows = []
    for name, group in surfaces(tasks).items():
        for task in group:
            packages = resolve_packages(task)
            system = system_prompt(task, packages, profile=profile) if documentation else SHORT_FRAMING
            system += "\n\n" + END_TURN_NOTE
            rows.append(
                {
                    "prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
                    "task_id": task.id,
                    "environment": name,
                }
            )
    return rows


def _method(tool: ExposedTool) -> Callable[..., str]:
    """A method calling ``tool`` with a flat typed signature and a Google docstring from its schema."""
    function = tool.schema["function"]
    parameters = function.get("parameters", {})
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    name = tool.name

    def call(self: EnvcraftEnvironment, **arguments: Any) -> str:
        return self._call(name, arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for arg, spec in properties.items():
        hint = _hint(spec)
        default: Any = inspect.Parameter.empty
        if arg not in required:
            # the schema's default, or None for "omitted" (dropped before the call, so the tool's own
            # default applies); the hint stays the schema's type: no added "nullable"
            default = spec.get("default")
        params.append(
            inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
        annotations[arg] = hint
    annotations["return"] = str
    call.__name__ = call.__qualname__ = name
    call.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = annotations
    call.__doc__ = _docstring(function.get("description", ""), properties)
    return call


def _hint(spec: Mapping[str, Any]) -> Any:
    """The Python type of one flat JSON Schema property (enums as ``Literal``)."""
    if spec.get("enum"):
        return Literal[tuple(spec["enum"])]
    kind = spec.get("type", "string")
    if isinstance(kind, list):
        hints = [_hint({"type": k}) for k in kind if k != "null"]
        union = hints[0]
        for hint in hints[1:]:
            union = union | hint
        return union
    if kind == "array":
        return list[_hint(spec.get("items", {"type": "string"}))]  # type: ignore[misc]
    values = spec.get("additionalProperties")
    if kind == "object" and isinstance(values, Mapping):
        return dict[str, _hint(values)]  # type: ignore[misc]
    return _JSON_TYPES.get(kind, str)


def _docstring(description: str, properties: Mapping[str, Any]) -> str:
    """A Google docstring transformers parses back into the same schema: one line per argument
    (its parser splits arguments at a line starting ``word:``)."""
    lines = [description.strip() or "Call this tool.", ""]
    if properties:
        lines.append("Args:")
        for arg, spec in properties.items():
            text = " ".join(str(spec.get("description") or arg).split())
            lines.append(f"    {arg}: {text}")
        lines.append("")
    lines += ["Returns:", '    The tool\'s result as JSON, or {"error": {...}} when the call failed.']
    return "\n".join(lines)


def _class_name(surface: str) -> str:
    words = re.split(r"[^0-9a-zA-Z]+", surface)
    return "".join(w[:1].upper() + w[1:] for w in words if w) + "Environment"
