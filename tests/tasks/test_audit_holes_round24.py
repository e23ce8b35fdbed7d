"""The twenty-fourth round's findings on their real tasks (``tests/fixtures/audit_tasks_round24.jsonl``,
a default run at ``24ebcca``, seed 24, stored without verifiers):

* helper BB, class_booking-6af885a58dd2: the user asks for a JSON object with the status of the
  class a colleague's mail pointed at; the object with the class's own id beside it scored 0.67.
  An extra key may repeat what the record the asked value is a field of says (``held_by``), as it
  may of a record an asked id names; another class's id, or a coach the class does not have, is
  still a claim.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

TASK = "class_booking-6af885a58dd2"
BOOKING = "class_booking"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round24.jsonl")


def _reported(status: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [
        [
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call(BOOKING, "cancel_class", session_id="CLS-30008", reason="the instructor is out sick"),
        ],
        [call("mail_triage", "write_file", path="notes/status.json", content=json.dumps(status) + "\n")],
    ]


@pytest.mark.parametrize(
    ("status", "paid"),
    [
        ({"class_status": "cancelled"}, True),
        ({"class_status": "cancelled", "session_id": "CLS-30008"}, True),
        ({"class_status": "cancelled", "coach_id": "COA-106"}, True),
        ({"class_status": "cancelled", "session_id": "CLS-30009"}, False),  # another class
        ({"class_status": "cancelled", "coach_id": "COA-104"}, False),  # not its coach
        ({"class_status": "scheduled"}, False),
    ],
)
def test_an_extra_key_may_repeat_what_the_asked_values_record_says(
    tasks: dict[str, Task], status: dict[str, Any], paid: bool
) -> None:
    assert (score(tasks[TASK], _reported(status)) == 1.0) is paid
