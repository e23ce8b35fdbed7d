"""Classes found by the sixty-ninth blind audit (a run at ``16a9ba7``, seed 69; the real task in
``tests/fixtures/audit_tasks_round69.jsonl``, stored without its verifier):

* A dictated note signed with the name of the person the record is for ("Shared in the team
  channel. (Amara)" on the item completed for amara; R4: 0.75). A bare name after dictated words
  is a user's or one of the people the call's records are for; the item's owner is a handle the
  world's roster maps to a name ("amara": "Amara Okafor"), which no record's name field held, so
  she was nobody's. A handle a roster names is now that person (``checks.rostered``). Another
  member ("(Dana)", who had taken it on) and a claim ("(not done)") still fail.
* A dictated reason with a remark of context after it ("owner asked to stop it (on-call
  request)"; R3: 0.833, and round 60's "(on-call)", R3: 0.75). Words after dictated ones had to
  name the call's records in the world's own words, so any context of the agent's own failed. A
  short remark set apart in brackets or after a dash now holds any words but those that claim
  something of the world (``runtime._remark``): a negation, a hedge, a time, a rank, an end, a
  participle, a number, another record's or person's name, a form of the act. The same holds
  after a sentence's stop: "Shared in the team channel. (amara)", the item's owner by her handle
  (R4: 0.75), passes; "(dana)" still fails.
* A rider's cancellation made sooner than the golden run made it (R4: two runs of three calls,
  ids from a filtered lookup, paid 0.45). The golden run's five calls ran past the free minutes
  after the trip was confirmed, so its 500-cent fee and the driver's share were checks; a run
  with fewer lookups cancels within them and owes nothing. Every correct run the verifier knew
  was slower than the golden one. The golden run without its lookups (``brisk_runs``) is now
  one of them, so what the clock decides is read either way; cancelling as the dispatcher or
  the driver still fails.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks, call, score

DONE = "notes_desk-ce94285a1069"  # amara did "Budget draft", which dana had taken on
CANCELLED = "job_scheduler-ac499f92cbb4"  # three jobs of RUN-7726 cancelled, each with a dictated reason
SOONER = "rideshare_dispatch-666aab17185d"  # offer REQ-9890 to Yuki Silva, then a rider cancels TRP-40495
NOTE = "Shared in the team channel."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round69.jsonl")


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        (NOTE, True),
        (f"{NOTE} (Amara)", True),
        (f"{NOTE} (amara)", True),  # her handle, as the roster writes it
        (f"{NOTE} - Amara Okafor", True),
        (f"{NOTE} (Dana)", False),  # who had it, not who did it
        (f"{NOTE} (not done)", False),
        (f"{NOTE} (dana)", False),
        (f"{NOTE} (tentative)", False),
        ("Not shared in the team channel.", False),
    ],
)
def test_a_note_may_name_the_person_the_item_is_for(tasks: dict[str, Task], note: str, paid: bool) -> None:
    assert (said(tasks[DONE], "complete_action_item", "note", note, 0) == 1.0) is paid


REASON = "owner asked to stop it"


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        (REASON, True),
        (f"{REASON} (on-call request)", True),
        (f"{REASON} (on-call)", True),
        (f"{REASON} - on-call rota", True),
        (f"{REASON} (not really)", False),
        (f"{REASON} (tentative)", False),
        (f"{REASON} (approved)", False),
        (f"{REASON} (awaiting sign-off)", False),
        (f"{REASON} - urgent", False),
        (f"{REASON} (for now)", False),
        (f"{REASON} (retry tomorrow)", False),
        (f"{REASON} (billing close)", False),  # another workflow's words
        (f"{REASON} (cancellation)", False),  # the act itself, said again as a remark
        (f"{REASON} (run 7731)", False),
        (f"{REASON} (on-call team request via pager)", False),  # no remark: a sentence's length
        (f"{REASON}, on-call request", False),  # after a comma the words go on
    ],
)
def test_a_reason_may_carry_a_remark_of_context(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    assert (said(tasks[CANCELLED], "cancel_job", "reason", reason, 0) == 1.0) is paid


RIDE = "rideshare_dispatch"


@pytest.mark.parametrize(
    ("cancelled_by", "paid"),
    [("rider", True), ("dispatcher", False), ("driver", False)],
)
def test_a_cancellation_made_sooner_owes_what_the_clock_says(
    tasks: dict[str, Task], cancelled_by: str, paid: bool
) -> None:
    turns = [
        [call(RIDE, "propose_match", request_id="REQ-9890", driver_id="DRV-893")],
        [call(RIDE, "cancel_trip", trip_id="TRP-40495", cancelled_by=cancelled_by, reason="plans changed")],
    ]
    assert (score(tasks[SOONER], turns) == 1.0) is paid
