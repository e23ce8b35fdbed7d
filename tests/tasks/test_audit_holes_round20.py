"""The twentieth round's findings on their real tasks (``tests/fixtures/audit_tasks_round20.jsonl``,
a default run at ``e4408ee``, seed 20):

* event_stream-42675f68c8d4: "Try to read raw records from a partition without consuming them:
  audit and 0; if that is not possible, process up to 3 records of partition 2 of the payments
  topic instead." A lookup planned to be refused had lost the lookup that recovered from it (its
  answer fed nothing), and the refusal was kept beside an unrelated step: a planned refusal now
  stays only with the call that recovers from it.
* helper XB, itinerary_rebooking-0083220a5f67: "Could you share an update, Ines?" scored 0.75 while
  "Ines, could you share an update?" scored 1.0: the addressee called by name at the end of the
  dictated sentence is as polite as at its start (``runtime._vocative``).
* helper XA, itinerary_rebooking-72377c4a4b0e: "Running a few minutes late. Sorry!" and "... Thank
  you for your patience." scored 0.5: apologies and thanks for patience are courtesies (``POLITE``).
* helper XC, class_booking-ff33a52eba87: a report saying "after BKG-50006 was cancelled" scored
  0.75 where "canceled" scored 1.0: a doubled l is the other spelling of one word (``_told``).
  The same report saying "New booking BKG-50062 was canceled." scored 1.0 and "MEM-2017 promoted
  from the waitlist" 0.75: the cancellation's result holds the booking it promoted, and its words
  went to every record the result held. A result's record apart from what the call named takes
  the words of its key ("promoted"), not the act's (``checks.acts_on``).
"""

from __future__ import annotations

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.coherence import tidy
from envcraft.tasks.golden.run import replay
from envcraft.tasks.graphs.graph import build_tool_graph

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference_with, reference_writing


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round20.jsonl")


def test_a_refusal_planned_for_a_lookup_nothing_uses_goes_with_it(tasks: dict[str, Task]) -> None:
    task = tasks["event_stream-42675f68c8d4"]
    package = load_package("event_stream")
    denied = {"error": {"category": "permission_denied"}}  # the consumer group may not read audit
    refused = GoldenCall("event_stream", "read_batch", {"topic": "audit", "partition": 0}, {}, denied)
    refused.expected_error = "permission_denied"
    lookup = GoldenCall("event_stream", "read_batch", {"topic": "payments", "partition": 2}, {}, {})
    work = GoldenCall(
        "event_stream", "process_batch", {"topic": "payments", "partition": 2, "max_records": 3}, {}, {}
    )
    run = replay([refused, lookup, work], {"event_stream": package}, task.initial_state, task.workspace)
    assert run is not None and not run.calls[0].ok and run.calls[1].ok
    tidied, reason = tidy(run, {"event_stream": package}, {"event_stream": build_tool_graph(package)})
    assert tidied is not None, reason
    assert [c.tool for c in tidied.calls] == ["process_batch"]


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("Could you share an update, Ines?", True),  # the addressee, by name
        ("Could you share an update, Ines Jensen?", True),
        ("Could you share an update? Leg confirmed.", False),  # a claim after the words
        ("Could you share an update, Noah?", False),  # someone else
        ("Could you share an update, Ines? Leg confirmed.", False),
    ],
)
def test_the_addressee_may_be_called_by_name_after_the_dictated_words(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    task = tasks["itinerary_rebooking-0083220a5f67"]
    assert (score(task, reference_with(task, "notify_traveler", message=text)) == 1.0) is paid


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("Running a few minutes late. Sorry!", True),
        ("Running a few minutes late. Thank you for your patience.", True),
        ("Running a few minutes late. Apologies for the inconvenience.", True),
        ("Not running a few minutes late. Sorry!", False),
        ("Running a few minutes late. Sorry, ignore this.", False),
        ("Your flight is running a few minutes late. Sorry!", False),  # who is late changed
    ],
)
def test_an_apology_or_thanks_for_patience_around_dictated_words_is_a_courtesy(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    task = tasks["itinerary_rebooking-72377c4a4b0e"]
    assert (score(task, reference_with(task, "notify_traveler", message=text)) == 1.0) is paid


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        (
            "New booking: BKG-50062 (MEM-2017 from the waitlist of CLS-30004 after BKG-50006 was cancelled)",
            True,
        ),
        (
            "New booking: BKG-50062 (MEM-2017 from the waitlist of CLS-30004 after BKG-50006 was canceled)",
            True,
        ),
        (
            "New booking: BKG-50062 (MEM-2017 from the waitlist of CLS-30004 after BKG-50006 was refunded)",
            False,
        ),
        ("New booking: BKG-50062 (MEM-2017 promoted from the waitlist of CLS-30004)", True),
        ("New booking BKG-50062 was canceled.", False),  # the promoted booking stands
    ],
)
def test_a_report_says_what_was_done_to_each_record(tasks: dict[str, Task], line: str, paid: bool) -> None:
    task = tasks["class_booking-ff33a52eba87"]
    turns = reference_writing(task, "handover/result.md", f"## Result\n\n{line}\n")
    assert (score(task, turns) == 1.0) is paid
