"""The sixteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round16.jsonl``,
a default run at ``5717ab5``, seed 16), each verifier synthesized again by this checkout:

* helper TD: a rider's open request offered to a driver and the new trip cancelled "by the
  rider" scored 1.0: the request's status was ignored on every open request (the clock expires
  them), so "cancelled" went unseen; a field the world moves by itself may now only take the
  values the world's own runs give it (``may_become``);
* helper TB: a status report saying "Successfully opened INC-2042.", "Opened INC-2042 as
  requested.", a ``| field | value |`` table or the new incident's own file
  "ops/incident-INC-2042.md" scored 0.75: those were no words of a report;
* helper TC: "Forward drafts: MSG-0010, MSG-0011" scored 0.857 ("drafts" is the plural of a
  report word), and a forward's note "We texted the traveler, message MSG-0001." too: the SMS
  it names was sent, so a sending word is true of it;
* helper TC: "Both forwards have been sent." beside the asked id, the drafts unsent, scored
  0.857 only because "forwards" was no word; a sentence with a sending word must now name a
  record the run sent.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference, reference_writing


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round16.jsonl")


@pytest.mark.parametrize(
    ("cancelled_by", "paid"),
    [(None, True), ("rider", False), ("dispatcher", False)],
)
def test_another_riders_request_cancelled_is_no_clock_expiry(
    tasks: dict[str, Task], cancelled_by: str | None, paid: bool
) -> None:
    """rideshare_dispatch-cdf170d56f77: "Record the rider pickup for the trip of driver Maria
    Reyes (DRV-806) ...". The wrong run also offers REQ-8863 to DRV-472 and cancels the new trip."""
    task = tasks["rideshare_dispatch-cdf170d56f77"]
    turns = reference(task)
    if cancelled_by is not None:
        turns[0] += [
            {
                "env": "rideshare_dispatch",
                "tool": "propose_match",
                "args": {"request_id": "REQ-8863", "driver_id": "DRV-472"},
            },
            {
                "env": "rideshare_dispatch",
                "tool": "cancel_trip",
                "args": {
                    "trip_id": "TRP-40352",
                    "cancelled_by": cancelled_by,
                    "reason": "rider changed plans",
                },
            },
        ]
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("Successfully opened INC-2042.", True),
        ("Opened INC-2042 as requested.", True),
        ("| field | value |\n|---|---|\n| incident | INC-2042 |", True),
        ("- Incident ID: INC-2042\n- Record: ops/incident-INC-2042.md", True),
        ("- Incident ID: INC-2042\n- Record: ops/incident-INC-2041.md", False),  # another incident's file
        ("Could not open INC-2042.", False),
        ("Opened INC-2042 as sev2.", False),
    ],
)
def test_a_report_may_say_it_was_done_as_requested(tasks: dict[str, Task], result: str, paid: bool) -> None:
    """infra_recovery-bdc1fd3f2960: open a sev3 incident, add a note, "Finally, write
    reports/status.md with a “## Result” section that gives the id of the new incident."."""
    task = tasks["infra_recovery-bdc1fd3f2960"]
    turns = reference_writing(task, "reports/status.md", f"# Status\n\n## Result\n{result}\n")
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("notes", "paid"),
    [
        ("- Forward drafts: MSG-0010, MSG-0011", True),
        ("SMS sent to the traveler: MSG-0001.", True),
        ("Both forwards have been sent.", False),  # the drafts went nowhere
        ("Forwards MSG-0010 and MSG-0011 sent.", False),
    ],
)
def test_a_report_says_sent_only_of_what_was_sent(tasks: dict[str, Task], notes: str, paid: bool) -> None:
    """itinerary_rebooking-45ee97c58355: text the traveler, draft two forwards, then "write
    notes/status.md with a “## Result” section that gives the id of the new message to the
    traveler"."""
    task = tasks["itinerary_rebooking-45ee97c58355"]
    content = f"# Status\n\n## Result\nNew message to the traveler: MSG-0001\n\n{notes}\n"
    assert (score(task, reference_writing(task, "notes/status.md", content)) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        ("Could you share an update? We texted the traveler, message MSG-0001.", True),
        ("Could you share an update? The traveler was notified by SMS (MSG-0001).", True),
        ("Could you share an update? MSG-0001 is cancelled.", False),
        ("Could you share an update?", False),  # the id it must carry is missing
    ],
)
def test_a_forward_may_say_the_traveler_was_texted(tasks: dict[str, Task], body: str, paid: bool) -> None:
    """The same task, turn 1's third step: "draft a forward of the message that the escalated
    entry in ops-logs/message-watch.log names ... with the note “Could you share an update?”,
    mentioning the new message to the traveler by its id"."""
    task = tasks["itinerary_rebooking-45ee97c58355"]
    turns = reference(task)
    forward = [c for c in turns[0] if c["tool"] == "draft_forward"][-1]
    forward["args"]["body"] = body
    assert (score(task, turns) == 1.0) is paid
