"""The ninth round's findings on its real tasks (``tests/fixtures/audit_tasks_round9.jsonl``, a
default run at ``f9fea58``, seed 9), each verifier synthesized again by this checkout:

* a draft to both asked recipients in the other order scored 0.333 (a list of addresses was read
  position by position), and "Hi both," before the dictated words 0.667;
* a forward whose note signs off "Thanks,\\nUma" scored 0.833: the quoted original has a
  "Thanks," line too, and a line written twice was counted as added;
* completing the asked action item with the note "Not done yet - blocked ..." paid 1.0: a free
  note of an edited record was never read.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference, reference_with


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round9.jsonl")


def test_recipients_in_any_order_and_a_greeting_to_both(tasks: dict[str, Task]) -> None:
    """mail_triage-25c814471ab8: "Draft a new message to “Customer Operations
    <cs-team@northwind.example>” and “Operations <ops@northwind.example>” ..."."""
    task = tasks["mail_triage-25c814471ab8"]
    both = ["Operations <ops@northwind.example>", "Customer Operations <cs-team@northwind.example>"]
    assert score(task, reference(task)) == 1.0
    assert score(task, reference_with(task, "compose_draft", to=both)) == 1.0
    assert (
        score(
            task,
            reference_with(task, "compose_draft", to=["ops@northwind.example", "cs-team@northwind.example"]),
        )
        == 1.0
    )
    assert score(task, reference_with(task, "compose_draft", to=both[:1])) < 1.0
    assert score(task, reference_with(task, "compose_draft", to=[*both, "finance@northwind.example"])) < 1.0
    greeted = "Hi both,\n\nCould you share an update?\n\nBest,\nAlex"
    assert score(task, reference_with(task, "compose_draft", body=greeted)) == 1.0
    assert (
        score(task, reference_with(task, "compose_draft", body="Hi both,\n\nCould you not share an update?"))
        < 1.0
    )


def test_a_forward_note_may_sign_off_with_a_line_the_original_holds(tasks: dict[str, Task]) -> None:
    """event_stream-5cd3d5f52832: "draft a forward of the message “Ops sync moved to Wednesday”
    ... to “Operations <ops@northwind.example>”" (no note dictated)."""
    task = tasks["event_stream-5cd3d5f52832"]
    assert score(task, reference(task)) == 1.0
    assert score(task, reference_with(task, "draft_forward", body="Thanks,\nUma")) == 1.0
    assert (
        score(task, reference_with(task, "draft_forward", body="Thanks,\nThe sync stays on Tuesday.")) < 1.0
    )


def test_a_completion_note_that_says_the_item_is_not_done_is_not_the_work(tasks: dict[str, Task]) -> None:
    """notes_desk-72b9193f56d8: "Mark the action item marked urgent in ... as done." The note is
    the agent's to write, not to take the completion back in."""
    task = tasks["notes_desk-72b9193f56d8"]
    assert score(task, reference(task)) == 1.0
    for right in ("Closed per the urgent follow-up list.", "Done, no further action needed."):
        assert score(task, reference_with(task, "complete_action_item", note=right)) == 1.0, right
    for wrong in ("Not done yet - blocked by the data team.", "Disregard: still open"):
        assert score(task, reference_with(task, "complete_action_item", note=wrong)) < 1.0, wrong
