"""A choice the user states must make a difference in the task's world (issue 20, item 5).

"Dead-letter invalid records" over a queue with no invalid record in reach: halting instead
ends the same way, the verifier cannot tell them apart, so the task is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcraft.core.package import load_package
from envcraft.tasks.validation.exercised import unexercised_choices

from .verify_support import make_task, write_package

QUEUE_ENV = '''
from typing import Literal

from envcraft import Environment, StateModel, tool


class QueueState(StateModel):
    items: list[str] = []
    done: list[str] = []
    dead: list[str] = []


class Queue(Environment):
    """A queue of records: valid ones are processed, invalid ones halt it or go to the dead letters."""

    State = QueueState

    @tool(goal="process the queue")
    def process(self, on_invalid: Literal["halt", "dead_letter"] = "halt", dedupe: bool = False) -> dict:
        """Process every record in order.

        Args:
            on_invalid: halt at an invalid record, or dead_letter it and go on.
            dedupe: drop a record seen before instead of halting on it.
        """
        seen: set[str] = set()
        for item in list(self.state.items):
            if item in seen and not dedupe:
                break
            if item.startswith("bad"):
                if on_invalid == "halt":
                    break
                self.state.dead.append(item)
            elif item not in seen:
                self.state.done.append(item)
            seen.add(item)
            self.state.items.remove(item)
        return {"done": len(self.state.done)}
'''


def queue_task(tmp_path: Path, items: list[str]) -> Any:
    package = write_package(tmp_path / "queue", "queue", "tool", QUEUE_ENV)
    call = {
        "env": "queue",
        "tool": "process",
        "args": {"on_invalid": "dead_letter", "dedupe": False},
        "provenance": {"on_invalid": "user", "dedupe": "user"},
    }
    task, golden = make_task([[call]], initial={"queue": {"items": items}}, packages={"queue": str(package)})
    return task, golden, {"queue": load_package(str(package))}


def test_a_choice_the_world_never_reaches_is_found(tmp_path: Path) -> None:
    """A duplicate stops processing before the first invalid record: dead-lettering is never
    tested (while dropping duplicates instead would have reached it: that choice is tested)."""
    task, golden, packages = queue_task(tmp_path, ["a", "b", "a", "bad-1"])
    assert unexercised_choices(task, golden, packages) == ["process.on_invalid"]


def test_a_choice_the_world_puts_to_the_test_passes(tmp_path: Path) -> None:
    task, golden, packages = queue_task(tmp_path, ["a", "bad-1", "b", "b"])
    assert unexercised_choices(task, golden, packages) == []
