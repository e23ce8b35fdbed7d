"""The sixth blind audit's holes: right runs it scored below 1.0, on its real tasks
(``tests/fixtures/audit_tasks_round6.jsonl``), each verifier synthesized again by this checkout.
Every case scored as the comment says on the audited code (``37888aa``):

* a forward's note written as the note, a blank line, then the line naming the record (0.833);
* a note naming the trip by the booking reference the user gave, "(booking M5WAUS)" (0.833);
* a dictated reason with its article left out (0.5), or said as the env's own token (0.75);
* a result section naming the message forwarded beside the new one (0.833).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import Turns, reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round6.jsonl")


def with_arg(task: Task, tool: str, arg: str, value: Any) -> Turns:
    """The reference with ``arg`` of each ``tool`` call set to ``value``."""
    turns = reference(task)
    for call in (c for calls in turns for c in calls if c["tool"] == tool):
        call["args"][arg] = value
    return turns


def scores(task: Task, tool: str, arg: str, values: list[Any]) -> list[float]:
    return [score(task, with_arg(task, tool, arg, v)) for v in values]


def test_a_forward_note_may_name_its_record_on_a_line_of_its_own(tasks: dict[str, Task]) -> None:
    """itinerary_rebooking-2a6cbb2197de: "draft a forward ... noting “Running a few minutes late.”
    and mentioning the new message to the traveler by its id". The draft's file check read the
    composed note one line at a time."""
    task = tasks["itinerary_rebooking-2a6cbb2197de"]
    assert score(task, reference(task)) == 1.0
    right = [
        "Running a few minutes late.\n\nSee the new message to the traveler: MSG-0001",
        "Running a few minutes late.\n(traveler message MSG-0001)",
    ]
    assert scores(task, "draft_forward", "body", right) == [1.0, 1.0]
    wrong = [
        "Running a few minutes late.\n\nNot sent yet: MSG-0001",
        "Running a few minutes late.\n\nSee the new message to the traveler.",
        "Not running late.\n\nSee the new message to the traveler: MSG-0001",
    ]
    assert all(s < 1.0 for s in scores(task, "draft_forward", "body", wrong))


def test_a_note_may_name_the_trip_by_the_booking_reference_the_user_gave(tasks: dict[str, Task]) -> None:
    """itinerary_rebooking-2a6cbb2197de: the trip "booked under reference M5WAUS". A note naming
    it so, "(booking M5WAUS)", scored 0.833: a code of letters and digits was read as a number,
    never as what the world says of the record, and "booking" as a claim. Another trip's
    reference is still no framing."""
    task = tasks["itinerary_rebooking-2a6cbb2197de"]
    note = "Running a few minutes late. See the new message to the traveler: MSG-0001"
    right = [
        f"{note} (M5WAUS).",
        f"{note} (booking M5WAUS).",
        f"{note} (SMS to Sofia Moreau, booking M5WAUS).",
    ]
    assert scores(task, "draft_forward", "body", right) == [1.0] * 3
    wrong = [f"{note} (booking PWJZM4).", f"{note} (booking M5WAUS cancelled)."]
    assert all(s < 1.0 for s in scores(task, "draft_forward", "body", wrong))


@pytest.mark.parametrize(
    ("task_id", "tool", "right", "wrong"),
    [
        (
            "job_scheduler-f9305c0d571b",  # "the reason is “superseded by a newer request”"
            "cancel_job",
            ["superseded by newer request", "Superseded by the newer request."],
            ["superseded by an older request", "not superseded by a newer request", "superseded"],
        ),
        (
            "returns_desk-b76d1362ff21",  # "the reason is “no longer needed”"
            "cancel_order",
            ["no_longer_needed", "No longer needed"],
            ["changed_mind", "still needed", "no_longer_needed_by_mistake"],
        ),
    ],
)
def test_a_reason_in_the_same_words_is_the_reason(
    tasks: dict[str, Task], task_id: str, tool: str, right: list[str], wrong: list[str]
) -> None:
    task = tasks[task_id]
    assert score(task, reference(task)) == 1.0
    assert scores(task, tool, "reason", right) == [1.0] * len(right)
    assert all(s < 1.0 for s in scores(task, tool, "reason", wrong))


def result_md(lines: list[str]) -> str:
    return "# Summary\n\n## Result\n" + "".join(f"{line}\n" for line in lines)


def test_a_result_may_name_the_message_the_new_one_forwards(tasks: dict[str, Task]) -> None:
    """event_stream-f36918ebfa89, turn 2: "write reports/result.md with a “## Result” section that
    gives the id of the new message and the id of the new conversation". Naming the forwarded
    MSG-0003 beside them was read as a shotgun of ids; another message's id still is one."""
    task = tasks["event_stream-f36918ebfa89"]
    turns = reference(task)
    assert score(task, turns) == 1.0

    def written(lines: list[str]) -> Turns:
        changed = copy.deepcopy(turns)
        for call in (c for calls in changed for c in calls if c["tool"] == "write_file"):
            call["args"]["content"] = result_md(lines)
        return changed

    named: Callable[[list[str]], float] = lambda lines: score(task, written(lines))  # noqa: E731
    assert named(["- new_message: MSG-0010 (the forward of MSG-0003)", "- new_conversation: THR-010"]) == 1.0
    assert named(["- new_message: MSG-0010 (or MSG-0004)", "- new_conversation: THR-010"]) < 1.0
    assert named(["- new_message: MSG-0003", "- new_conversation: THR-003"]) < 1.0
