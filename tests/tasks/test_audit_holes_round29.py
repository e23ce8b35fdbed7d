"""The twenty-ninth round's findings on their real tasks (``tests/fixtures/audit_tasks_round29.jsonl``,
a default run at ``ca7e8d3``, seed 29, stored without verifiers):

* helper G4, in all four of its tasks: dictated words followed by one or two capitalised words, on
  their own or in brackets, scored 1.0 whatever those words claimed: "... shortly. Transfer
  Cancelled" of a transfer just moved, a reason "wrong parameters (Resolved)", a to-do "Book the
  meeting room for Thursday (Already Booked)", an action item "Supplier follow-up (Acme Corp)"
  of a made-up supplier. Any capitalised word passed as a bare signature or a bare attribution.
  Such a name now is someone the task knows: a user the data engine speaks for, or someone the
  call's records are for; after a polite word ("Best, ...") or an attribution word ("per
  ...") anyone may still sign or be credited.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier import runtime as vr

from .test_created_records import audit_tasks, call, score

TRIP = "itinerary_rebooking-9ad962bffb9c"  # move a pickup, then email the traveler dictated words
RUN = "job_scheduler-3d885bdab44f"  # cancel a run with a dictated reason
TODO = "mail_triage-ee01e93a8a1b"  # a to-do with dictated text on a flagged message, then a file
ITEM = "notes_desk-a1baa4569ec4"  # track an action item by its dictated title, hand it over, a file
REBOOKING = "We are rebooking you and will send the new flight details shortly."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round29.jsonl")


def trip(message: str) -> list[list[dict[str, Any]]]:
    return [
        [
            call("itinerary_rebooking", "list_itineraries"),
            call("itinerary_rebooking", "get_itinerary", itinerary_id="ITN-4005"),
            call(
                "itinerary_rebooking",
                "reschedule_transfer",
                transfer_id="TRF-0003",
                pickup_at="2026-03-13T16:30:00Z",
            ),
            call(
                "itinerary_rebooking",
                "notify_traveler",
                itinerary_id="ITN-4005",
                channel="email",
                message=message,
            ),
        ]
    ]


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (REBOOKING, True),
        (f"Hi Oskar, {REBOOKING} Best regards, Travel desk", True),
        (f"{REBOOKING} Best, Transfer Team", True),  # after a sign-off word: whoever signs
        (f"{REBOOKING}\nYara", True),  # a user the data engine speaks for, signing
        (f"{REBOOKING} Transfer Cancelled", False),  # a claim in capitals, not a signature
        (f"{REBOOKING} Gate Closed", False),
        (f"{REBOOKING} Lufthansa", False),
    ],
)
def test_a_bare_signature_is_someone_the_task_knows(tasks: dict[str, Task], message: str, paid: bool) -> None:
    assert (score(tasks[TRIP], trip(message)) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("wrong parameters", True),
        ("wrong parameters (per Ximena)", True),  # an attribution word: anyone may be credited
        ("Wrong parameters (Oskar)", True),  # a user, credited by name alone
        ("wrong parameters (Resolved)", False),
        ("wrong parameters - Done", False),
    ],
)
def test_a_bare_attribution_credits_someone_the_task_knows(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    turns = [
        [
            call("job_scheduler", "list_workflows"),
            call("job_scheduler", "cancel_run", run_id="RUN-7719", reason=reason),
        ]
    ]
    assert (score(tasks[RUN], turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("Book the meeting room for Thursday", True),
        ("Book the meeting room for Thursday (Already Booked)", False),
    ],
)
def test_a_dictated_to_do_takes_no_claim_in_brackets(tasks: dict[str, Task], text: str, paid: bool) -> None:
    turns = [
        [
            call("mail_triage", "read_file", path="inbox/handoff.md"),
            call("mail_triage", "add_todo", text=text, message_id="MSG-0004"),
            call("mail_triage", "flag_message", message_id="MSG-0004", flagged=True),
        ],
        [
            call(
                "mail_triage",
                "write_file",
                path="notes/handover.json",
                content='{\n  "new_to-do": "TODO-01"\n}\n',
            )
        ],
    ]
    assert (score(tasks[TODO], turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("title", "paid"),
    [
        ("Supplier follow-up", True),
        ("Supplier follow-up (Acme Corp)", False),
        ("Supplier follow-up (Globex)", False),
    ],
)
def test_a_dictated_title_takes_no_invented_name(tasks: dict[str, Task], title: str, paid: bool) -> None:
    turns = [
        [
            call("notes_desk", "read_file", path="tracking/action-item-review.csv"),
            call("notes_desk", "add_action_item", title=title, owner="chen", due="2026-03-05"),
            call("notes_desk", "reassign_action_item", item_id="AI-006", owner="farah"),
        ],
        [
            call(
                "notes_desk",
                "write_file",
                path="reports/result.json",
                content='{\n  "new_action_item": "AI-006"\n}\n',
            )
        ],
    ]
    assert (score(tasks[ITEM], turns) == 1.0) is paid


def test_the_users_a_text_may_be_signed_by_are_the_personas() -> None:
    """The runtime is embedded in every verifier, so it holds the persona names itself."""
    personas = json.loads(
        (Path(vr.__file__).parent.parent / "phrasing" / "personas.json").read_text(encoding="utf-8")
    )
    assert {p["name"].lower() for p in personas} == vr.USERS
