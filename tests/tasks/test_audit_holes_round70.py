"""Classes found by the seventieth blind audit (a run at ``400d9fb``, seed 70; the real task in
``tests/fixtures/audit_tasks_round70.jsonl``, stored without its verifier):

* A report that says back what the world told of the asked work before the value came to hold
  ("Committed offset: 22 (was 6). Halted at offset 22 (schema_violation: refund_of missing)."; R4:
  0.833). A report may say what a call reported about the asked field, but only a call whose
  answer held the asked value (the commit's ``"committed": 22``); process_batch reported
  ``"committed": 6`` with its ``halted_at``, so its words were claims. A call of the work that
  reports the asked field by name now lends its words whatever the value was then, with how
  many items a list of it names and what the environment calls its records ("aggregated 15
  events", "dropped 1 duplicate"). A report that no invalid record was found still fails.
* A health check run again after the drain, to confirm it (R1: 0.5). A log's entries are bounded
  by no count (a check may come twice), but each new one had to be an asked one, observations
  and all, and the second check saw the drained replica. The asked act made again is now an asked
  entry of a log, by the fields the calls chose (the service), not what it observed; a check of
  another service still fails.
* A dictated message with the new time told inside it ("Your airport pickup time has changed to
  16:45 UTC on March 13; please check ..."; R3: 0.833, as round 61, R1 and round 67, R4 were). The
  dictated words had to stand as one run. An aside put inside them is now read as one after them
  is (``runtime._without_inserted``): it may name the call's records and their numbers and say
  the time's zone; a wrong time, a wrong day, a negation or a claim still fail.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import reference_turns

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks, call, score

CAUGHT_UP = "event_stream-8b37a7fd4c80"  # process refunds p0 (dedupe, halt), commit, report the offset
STREAM = "event_stream"
CHECKED = "infra_recovery-749ffcdc1264"  # an incident with a health check, a host drained, a note, a summary
INFRA = "infra_recovery"
MOVED = "itinerary_rebooking-7d214b5230f4"  # TRF-0001 moved to 16:45 on March 13, then an email and an SMS


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round70.jsonl")


@pytest.mark.parametrize(
    ("result", "details", "paid"),
    [
        ("Committed offset: 22", "", True),
        (
            "Committed offset: 22 (was 6). Halted at offset 22 (schema_violation: refund_of missing).",
            "",
            True,
        ),
        (
            "Committed offset: 22 (was 6).",
            "- aggregated 15 events\n- dropped 1 duplicate (offset 13)\n",
            True,
        ),
        (
            "Committed offset: 22 (was 6).",
            "Processing halted at offset 22: schema violation, refund_of missing.\n",
            True,
        ),
        ("Committed offset: 22. No invalid records found.", "", False),
        ("Committed offset: 22. Dead-lettered offset 22.", "", False),
        ("Committed offset: 6", "", False),
        ("Committed offset: 22. Customer notified.", "", False),
    ],
)
def test_a_report_may_say_what_the_work_was_told(
    tasks: dict[str, Task], result: str, details: str, paid: bool
) -> None:
    content = f"# Refunds p0 catch-up\n\n## Result\n\n{result}\n" + (
        f"\n## Details\n\n{details}" if details else ""
    )
    turns = [
        [
            call(STREAM, "process_batch", topic="refunds", partition=0, dedupe=True, on_invalid="halt"),
            call(STREAM, "commit_offsets", topic="refunds", partition=0),
        ],
        [call(STREAM, "write_file", path="reports/summary.md", content=content)],
    ]
    assert (score(tasks[CAUGHT_UP], turns) == 1.0) is paid


@pytest.mark.parametrize(("service", "paid"), [("checkout-api", True), ("payments-gateway", False)])
def test_a_health_check_run_again_is_the_asked_one(tasks: dict[str, Task], service: str, paid: bool) -> None:
    turns = reference_turns(tasks[CHECKED])
    again = [*turns[1], call(INFRA, "run_health_check", service_id=service)]  # after the drain
    assert (score(tasks[CHECKED], [turns[0], again, *turns[2:]]) == 1.0) is paid


@pytest.mark.parametrize(
    ("inserted", "paid"),
    [
        ("", True),
        (" to 16:45 UTC on March 13", True),
        (" (16:45 UTC on March 13)", True),
        (" to 16:45 on March 13", True),
        (" to 16:00 UTC on March 13", False),
        (" to 16:45 UTC on March 14", False),
        (" (not 16:45)", False),
        (" to 16:45 UTC, cancelled", False),
    ],
)
def test_a_dictated_message_may_tell_the_new_time_inside_it(
    tasks: dict[str, Task], inserted: str, paid: bool
) -> None:
    text = f"Your airport pickup time has changed{inserted}; please check the new time in your app."
    assert (said(tasks[MOVED], "notify_traveler", "message", text, 0) == 1.0) is paid
