"""The thirteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round13.jsonl``,
a default run at ``210444d``, seed 13), each verifier synthesized again by this checkout:

* helper QC: an unasked run submitted, one wave of its jobs executed, then cancelled, paid 1.0:
  a cancel voided the run as if it had never been made, though its work was done;
* helper QB: an asked "## Result" section giving the two asked ids each as the other paid 1.0:
  the check read only which ids the section held;
* helper QB: the same section restating the user's own words ("the urgent message",
  "exports/worklist.csv", the trip's reference) scored 0.833: only the world's words framed it;
* helper QD: "Re: booking 959RYC — Running a few minutes late." to the traveler of "the trip booked
  under reference 959RYC" scored 0.5: an aside could not say "booking";
* helper QA: dead-lettering the three faulty records one by one with ``dead_letter``, whose note
  the tool requires, scored 0.75: the dead-letter file's lines were compared byte for byte with
  the reference's, which wrote the environment's own note;
* helper QA: a forward with a one-line cover note nobody dictated ("FYI - forwarding ...")
  scored 0.833: the draft's file had a fixed line count.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference, reference_with, reference_writing


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round13.jsonl")


JOBS = "job_scheduler"


def _job(tool: str, **args: Any) -> dict[str, Any]:
    return {"env": JOBS, "tool": tool, "args": args}


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ([], True),
        # made and voided at once: the work done once, a mistake taken back
        ([_job("cancel_run", run_id="RUN-7642", reason="test")], True),
        # one wave of its jobs executed first: work nobody asked for stays done
        (
            [_job("run_ready_jobs", run_id="RUN-7642"), _job("cancel_run", run_id="RUN-7642", reason="test")],
            False,
        ),
        ([_job("run_ready_jobs", run_id="RUN-7642")], False),
    ],
)
def test_a_voided_run_whose_jobs_ran_is_extra_work(
    tasks: dict[str, Task], extra: list[Any], paid: bool
) -> None:
    """job_scheduler-dd9dbd70f8eb: "Cancel RUN-7637; ..." with an unasked run submitted after."""
    task = tasks["job_scheduler-dd9dbd70f8eb"]
    turns = reference(task)
    if extra:
        turns[0].append(
            _job("submit_run", workflow_id="ml-churn-training", params=["snapshot_date=2026-01-04"])
        )
        turns[0].extend(extra)
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("report", "paid"),
    [
        ("- new_message_to_the_traveler: MSG-0001\n- new_message: MSG-0010\n", True),
        ("New message to the traveler: MSG-0001\nNew message: MSG-0010\n", True),
        ("Forward draft of the urgent message MSG-0008: MSG-0010\nText to the traveler: MSG-0001\n", True),
        (
            "Forward drafted from exports/worklist.csv urgent item: MSG-0010\nSMS to traveler: MSG-0001\n",
            True,
        ),
        ("New message to the traveler (SMS, trip EFKYHS): MSG-0001\nNew message: MSG-0010\n", True),
        # the two ids given for each other
        ("New message to the traveler: MSG-0010\nNew message: MSG-0001\n", False),
        ("- new_message_to_the_traveler: MSG-0010\n- new_message: MSG-0001\n", False),
        # a claim neither the world nor the user's words make
        ("New message to the traveler: MSG-0001\nNew message: MSG-0010 (approved by finance)\n", False),
    ],
)
def test_an_asked_section_gives_each_value_for_its_own_item(
    tasks: dict[str, Task], report: str, paid: bool
) -> None:
    """itinerary_rebooking-ef7c175eeb09: text the traveler, draft a forward of "the message marked
    urgent in exports/worklist.csv", then "write reports/result.md with a “## Result” section
    that gives the id of the new message to the traveler and the id of the new message"."""
    task = tasks["itinerary_rebooking-ef7c175eeb09"]
    turns = reference_writing(task, "reports/result.md", "# Summary\n\n## Result\n" + report)
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        ("Re: booking 959RYC — Running a few minutes late.", True),
        ("Running a few minutes late. (reference 959RYC)", True),
        ("Re: booking 959RYC cancelled — Running a few minutes late.", False),
        ("Re: rebooking 959RYC — Running a few minutes late.", False),  # an act nobody asked for
    ],
)
def test_an_aside_may_restate_the_users_words(tasks: dict[str, Task], message: str, paid: bool) -> None:
    """itinerary_rebooking-939a9d943e7f: "Message the traveler of the trip booked under reference
    959RYC by email, saying “Running a few minutes late.”"."""
    task = tasks["itinerary_rebooking-939a9d943e7f"]
    assert (score(task, reference_with(task, "notify_traveler", message=message)) == 1.0) is paid


STREAM = "event_stream"


def _stream(tool: str, **args: Any) -> dict[str, Any]:
    return {"env": STREAM, "tool": tool, "args": {"topic": "payments", "partition": 1, **args}}


def test_a_dead_letters_own_note_is_the_agents_words(tasks: dict[str, Task]) -> None:
    """event_stream-0283a3821358: "Process up to 20 records of partition 1 of the payments topic,
    dead-lettering invalid records." Halting at each faulty record and dead-lettering it by hand
    (the tool requires a note) is the same work; a fourth line in the dead-letter file is not."""
    task = tasks["event_stream-0283a3821358"]
    by_hand = [
        _stream("process_batch", max_records=2),
        _stream("dead_letter", note="schema violation US$", count=1),
        _stream("process_batch", max_records=6),
        _stream("dead_letter", note="late event", count=1),
        _stream("process_batch", max_records=5),
        _stream("dead_letter", note="corrupt json", count=1),
        _stream("process_batch", max_records=4),
    ]
    assert score(task, reference(task)) == 1.0
    assert score(task, [by_hand]) == 1.0
    extra = {
        "env": STREAM,
        "tool": "shell",
        "args": {"command": "echo '{\"offset\": 22}' >> dlq/payments.jsonl"},
    }
    assert score(task, [[*by_hand, extra]]) < 1.0


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        (None, True),
        ("FYI - forwarding the escalated message from the follow-up log.", True),
        ("Hi both, please see the forwarded message below. Thanks", True),
        ("Please ignore this, sent by mistake.", False),
        ("FYI - the incident is resolved.", False),
    ],
)
def test_a_forwards_cover_note_nobody_dictated(tasks: dict[str, Task], body: str | None, paid: bool) -> None:
    """infra_recovery-28f3f6c34496: drain a host, then "draft a forward of the message that the
    escalated entry in watch/followups.log names to ..." (no body dictated)."""
    task = tasks["infra_recovery-28f3f6c34496"]
    turns = reference_with(task, "draft_forward", body=body) if body is not None else reference(task)
    assert (score(task, turns) == 1.0) is paid
