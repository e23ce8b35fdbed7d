"""A choice the user states must make a difference in the task's world (issue 20, item 5).

"Dead-letter invalid records" over a queue with no invalid record in reach: halting instead
ends the same way, the verifier cannot tell them apart, so the task is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.validation.exercised import quiet_defaults, unexercised_choices

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


SAID_GOAL = (
    "process the queue[, {dedupe|true=dropping duplicates|false=keeping duplicates}][, {on_invalid|"
    "halt=stopping at the first invalid record|dead_letter=dead-lettering invalid records}]"
)


def said_queue(tmp_path: Path, items: list[str], text: str) -> Any:
    """The queue whose goal phrase says the defaults of the flags a call leaves out."""
    source = QUEUE_ENV.replace('@tool(goal="process the queue")', f"@tool(goal={SAID_GOAL!r})")
    package = write_package(tmp_path / "said", "queue", "tool", source)
    task, golden = make_task(
        [[{"env": "queue", "tool": "process", "args": {}}]],
        initial={"queue": {"items": items}},
        packages={"queue": str(package)},
    )
    task.turns[0].user = text
    return task, golden, {"queue": load_package(str(package))}


def test_a_left_out_flag_is_said_only_where_the_world_tests_it(tmp_path: Path) -> None:
    """event_stream-6a295457f9b9 (third audit): "process ..., keeping duplicates, stopping at the
    first invalid record" where the call left both flags out and no duplicate or invalid record
    was in reach: an agent flipping both was paid 1.0. The turn now leaves such a default unsaid
    (``quiet_defaults``), and a task whose turn says one is refused."""
    task, golden, packages = said_queue(tmp_path, ["a", "b"], "Process the queue, keeping duplicates.")
    calls = [GoldenCall("queue", "process", {}, {}, {})]
    assert quiet_defaults(calls, packages, task.initial_state, {}) == {(0, "dedupe"), (0, "on_invalid")}
    assert unexercised_choices(task, golden, packages) == ["process.dedupe"]  # said, never tested
    task.turns[0].user = "Process the queue."
    assert unexercised_choices(task, golden, packages) == []  # unsaid: no instruction

    tested, golden, packages = said_queue(tmp_path / "t", ["a", "a", "bad-1"], "Process, keeping duplicates.")
    assert quiet_defaults(calls, packages, tested.initial_state, {}) == {(0, "on_invalid")}
    assert unexercised_choices(tested, golden, packages) == []
