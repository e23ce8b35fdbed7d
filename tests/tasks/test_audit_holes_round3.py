"""The third blind audit's holes, on its real tasks (``tests/fixtures/audit_tasks_round3.jsonl``),
each verifier synthesized again by this checkout. Every case scored as the comment says on the
audited code (``acc38ab``):

* two messages whose texts were swapped between the channels (1.0);
* a state a turn ends in that time alone moves (a drain that finishes while the agent looks: 0.875);
* a false note on the incident's timeline (1.0);
* a series booked class by class (0.4), and a look-alike class booked the same way (0.4);
* a forward with a one-line courtesy note (0.286);
* a stated flag the world never exercises (kept), and an asked JSON object's extra keys naming
  what the asked event holds (0.667).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.validation.exercised import unexercised_choices

from .test_created_records import audit_tasks, score
from .test_reward_semantics import Turns, reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round3.jsonl")


def call(env: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"env": env, "tool": tool, "args": args}


def test_each_dictated_text_is_read_on_the_message_it_was_dictated_for(tasks: dict[str, Task]) -> None:
    """itinerary_rebooking-d9fb6711b493: email "Could you share an update?", text message
    "Running a few minutes late." -- the texts swapped between the channels scored 1.0 (channel
    and text were two checks); the text message signed with a bare name scored 0.75."""
    task = tasks["itinerary_rebooking-d9fb6711b493"]

    def notify(email: str, sms: str) -> Turns:
        trip = {"env": "itinerary_rebooking", "tool": "notify_traveler"}
        return [
            [
                {**trip, "args": {"itinerary_id": "ITN-4003", "channel": "email", "message": email}},
                {**trip, "args": {"itinerary_id": "ITN-4003", "channel": "sms", "message": sms}},
            ]
        ]

    assert score(task, notify("Could you share an update?", "Running a few minutes late.")) == 1.0
    assert score(task, notify("Could you share an update?", "Running a few minutes late. Yara")) == 1.0
    assert score(task, notify("Running a few minutes late.", "Could you share an update?")) < 1.0


def test_a_turn_may_end_in_the_state_time_moves_its_work_to(tasks: dict[str, Task]) -> None:
    """infra_recovery-8403408efea2: turn 1 drains a host; one lookup after the drain let the
    drain finish (draining -> maintenance) and the turn-1 check pinned "draining" (0.875)."""
    task = tasks["infra_recovery-8403408efea2"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    looked = copy.deepcopy(turns)
    looked[0].append(call("infra_recovery", "get_host", host_id="invsync-b1"))
    assert score(task, looked) == 1.0


def test_a_note_nobody_asked_for_on_the_timeline_is_not_paid(tasks: dict[str, Task]) -> None:
    """infra_recovery-8403408efea2: after the restart the host crash-loops; a note "back to
    healthy, issue resolved" scored 1.0 (the timeline gains lines as the world moves, so its
    lines were not counted). A line no correct run writes is now someone's unasked note."""
    task = tasks["infra_recovery-8403408efea2"]
    noted = reference(task)
    note = "invsync-b1 restarted and back to healthy, issue resolved."
    noted[1].append(call("infra_recovery", "append_ops_note", incident_id="INC-2042", note=note))
    assert score(task, noted) < 1.0


def test_a_series_booked_class_by_class_is_the_series_and_the_classes_are_read(
    tasks: dict[str, Task],
) -> None:
    """class_booking-431b5ef0ae4e: the two open classes of the series booked one by one scored 0.4
    (``source: series`` pinned), as low as booking a look-alike class (the booked class was no
    check: an S0 id the run never passed was taken for one the world numbered)."""
    task = tasks["class_booking-431b5ef0ae4e"]
    cancels = [
        call("class_booking", "cancel_class", session_id="CLS-30067", reason="requested by the owner"),
        call("class_booking", "cancel_class", session_id="CLS-30068", reason="plans changed"),
    ]

    def booked(*sessions: str) -> Turns:
        return [
            [
                *(call("class_booking", "book_class", member_id="MEM-2008", session_id=s) for s in sessions),
                *cancels,
            ]
        ]

    assert score(task, reference(task)) == 1.0
    assert score(task, booked("CLS-30065", "CLS-30066")) == 1.0
    assert score(task, booked("CLS-30036", "CLS-30066")) < 1.0  # a look-alike yin-yoga class


def test_a_forward_may_carry_a_courtesy_line_but_no_claim(tasks: dict[str, Task]) -> None:
    """mail_triage-323f8b06adf9: "draft a forward of that message" -- a forward with "FYI, see
    below." or "Forwarding as requested." on top scored 0.286 (the body was the quote exactly)."""
    task = tasks["mail_triage-323f8b06adf9"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    forward = next(n for n, c in enumerate(turns[1]) if c["tool"] == "draft_forward")

    def noted(body: str) -> Turns:
        changed = copy.deepcopy(turns)
        changed[1][forward]["args"]["body"] = body
        return changed

    assert score(task, noted("FYI, see below.")) == 1.0
    assert score(task, noted("Forwarding as requested.")) == 1.0
    assert score(task, noted("Please ignore this, sent by mistake.")) < 1.0


def test_a_stated_default_the_world_never_exercises_refuses_the_task(tasks: dict[str, Task]) -> None:
    """event_stream-6a295457f9b9: the turn states "keeping duplicates, stopping at the first
    invalid record" (the defaults the call left out); the one record processed is valid, so the
    opposite flags end the same (1.0 in the audit). Such a task is refused now."""
    task = tasks["event_stream-6a295457f9b9"]
    packages = resolve_packages(task)
    assert "process_batch.on_invalid" in unexercised_choices(task, execute_reference(task), packages)


def test_extra_keys_may_say_what_the_asked_event_holds(tasks: dict[str, Task]) -> None:
    """event_stream-6a295457f9b9: reports/result.json with the new event's id and its topic,
    partition and offset scored 0.667 (an id like EVT-85d582bf named no record)."""
    task = tasks["event_stream-6a295457f9b9"]
    turns = reference(task)
    t, n = next(
        (t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == "write_file"
    )
    asked = json.loads(turns[t][n]["args"]["content"])
    changed = copy.deepcopy(turns)
    changed[t][n]["args"]["content"] = json.dumps({**asked, "topic": "refunds", "partition": 0}) + "\n"
    assert score(task, changed) == 1.0
    changed[t][n]["args"]["content"] = json.dumps({**asked, "topic": "payments"}) + "\n"
    assert score(task, changed) < 1.0
