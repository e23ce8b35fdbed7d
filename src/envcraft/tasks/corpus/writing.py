"""The writer stage of a run: a model rewrites each task's turns, the checks decide what is used.

Runs after the shards are merged (``envcraft run --writer MODEL``, ``envcraft tasks synth
--writer MODEL``): one request per task (:func:`~envcraft.tasks.phrasing.writer.writer_messages`,
from the intent its shard kept), each rewritten turn used only where
:func:`~envcraft.tasks.phrasing.review.review` accepts it. The shards, the reference, the
verifier and the task ids are untouched (a task's id never depends on its words), so the
offline corpus and its validation stand as they were; without a writer this stage does not run.

Each task records what happened in ``provenance["writer"]`` (the model, which turns are the
writer's, why each other turn kept the template) and the set's ``stats.json`` counts it under
``"writer"``. Requests still waiting for Batch API answers stop the stage (:class:`WriterPending`)
before anything is written; a request that got no answer keeps the template (``no_answer``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from envcraft.core.package import EnvPackage
from envcraft.sandbox.profiles import SYSTEM_TOOLS
from envcraft.tasks.corpus.compose import dedupe_key
from envcraft.tasks.format.model import Task, Turn
from envcraft.tasks.phrasing.review import review
from envcraft.tasks.phrasing.writer import TurnWriter, parse_turns, writer_messages


class WriterPending(Exception):
    """Writer requests wait for Batch API answers: nothing was written, run again once they are in."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} writer requests wait for batch answers")
        self.waiting = waiting


class WriterFailed(Exception):
    """No request got an answer (a wrong model name, server or key): said once, not per task."""


def rewrite_tasks(
    tasks: list[Task],
    intents: Mapping[str, dict[str, Any]],
    writer: TurnWriter,
    packages: Mapping[str, EnvPackage],
) -> dict[str, Any]:
    """Rewrite ``tasks`` in place; returns the ``stats.json`` block. ``intents`` holds every
    task's, by :func:`~envcraft.tasks.corpus.compose.dedupe_key` (unique in a merged set)."""
    replies = writer.write([writer_messages(task, intents[dedupe_key(task)]) for task in tasks])
    waiting = sum(r.waiting for r in replies)
    if waiting:
        raise WriterPending(waiting)
    if replies and all(r.error for r in replies):
        raise WriterFailed(f"the writer {writer.model} answered no request: {replies[0].error}")
    refused: Counter[str] = Counter()
    accepted = turns = rewritten = 0
    for task, reply in zip(tasks, replies, strict=True):
        rewrite = parse_turns(reply.text) if reply.text is not None else None
        if reply.text is None:
            reasons: list[str | None] = ["no_answer"] * len(task.turns)
        elif rewrite is None:
            reasons = ["unparsable"] * len(task.turns)
        else:
            reasons = review(task, rewrite, _names(task, packages))
            task.turns = [
                Turn(user=rewrite[t]) if why is None else turn
                for t, (turn, why) in enumerate(zip(task.turns, reasons, strict=True))
            ]
        used = [why is None for why in reasons]
        task.provenance["writer"] = {"model": writer.model, "turns": used, "refused": reasons}
        if any(used) and task.difficulty and "features" in task.difficulty:
            task.difficulty["features"]["user_words"] = sum(len(t.user.split()) for t in task.turns)
        turns += len(used)
        accepted += sum(used)
        rewritten += any(used)
        refused.update(why for why in reasons if why is not None)
    return {
        "model": writer.model,
        "tasks": len(tasks),
        "tasks_rewritten": rewritten,
        "turns": turns,
        "turns_accepted": accepted,
        "turns_refused": turns - accepted,
        "refused": dict(sorted(refused.items())),
    }


def _names(task: Task, packages: Mapping[str, EnvPackage]) -> set[str]:
    """The tool and parameter names a turn must not say: every tool of the task's environments
    and its parameters, the reference's own calls, and a Claw task's system tools."""
    names = {c.tool for c in task.reference.calls} | {a for c in task.reference.calls for a in c.args}
    if task.kind == "claw":
        names |= SYSTEM_TOOLS
    for env in task.envs:
        package = packages.get(env)
        if package is None:
            continue
        for tool, spec in package.env_class.tools.items():
            names.add(tool)
            names.update(spec.parameters.get("properties", {}))
    return names
