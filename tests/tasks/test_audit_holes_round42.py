"""Classes found by the forty-second blind audit (a run at ``562f769``, seed 42; the real tasks in
``tests/fixtures/audit_tasks_round42.jsonl``, stored without verifiers), each on its real task:

* A text the agent composes may restate the user's words up to its own turn, and a time it
  tells must be one the world holds or the user said by then (R1: three emails telling the
  traveler a pickup at 17:20, a time only the next turn asks for, paid 1.0); it may name the
  kind of record the turn changed ("your airport transfer", R1: 0.857), though the word is in a
  tool's name.
* A report may name a record the run changed by its lower-case id and say what was done to it
  ("Drained: notify-a1, notify-c1", "... were taken out of rotation"; R2: 0.923).
* A forward's cover line may say it is for the reader's information (R3: 0.889).
* A note nobody asked for may not credit a person the record does not name, nor deny anything
  (R4: "Done by farah." and "Amara did not do it." on an item amara did, each 1.0).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference
from .test_created_records import audit_tasks, score

EMAIL = "inventory_ledger-94eddf5095e4"  # ship an order, move a pickup and email the order's id
DRAIN = "infra_recovery-23af6849a049"  # an incident, a check, two hosts drained; a report
FORWARD = "mail_triage-8a549c36cda1"  # file, label and flag a message, draft a forward; a CSV
DONE = "notes_desk-f0a147915ba0"  # close an item for farah; record an item amara already did


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round42.jsonl")


def with_args(task: Task, call: int, **args: Any) -> float:
    """The score of ``task``'s reference with call ``call``'s arguments updated by ``args``."""
    return score(task, reference(task, {call: args}))


ASKED = "Please call the travel desk if anything about your trip is unclear."


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (f"Order SO-29027: {ASKED}", True),
        (f"Hi Emil, your pickup is now on March 13 at 16:45. Order SO-29027. {ASKED}", True),
        (f"Transfer update - order SO-29027: {ASKED}", True),
        (f"Your pickup is now on March 13 at 17:20. Order SO-29027. {ASKED}", False),  # turn 3's time
        (f"Order SO-29027 due January 6. Pickup moved to 17:20. {ASKED}", False),
        (f"Your pickup is now on March 13 at 2026-03-13T17:20:00Z. Order SO-29027. {ASKED}", False),
    ],
)
def test_a_composed_text_tells_the_times_of_its_own_turn(
    tasks: dict[str, Task], message: str, paid: bool
) -> None:
    assert (with_args(tasks[EMAIL], 5, message=message) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- new_incident: INC-2042", True),
        ("- New incident: INC-2042\n- Drained: notify-a1, notify-c1", True),
        ("- New incident INC-2042; notify-a1 and notify-c1 were taken out of rotation.", True),
        ("- New incident: INC-2042\n- Drained: notify-b1", False),  # a host the run never drained
        ("- New incident: INC-2042\n- notify-a1 restarted", False),
        ("- New incident: INC-2042\n- notify-a1 not drained", False),
    ],
)
def test_a_report_may_say_what_was_done_to_a_host_by_its_id(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    content = f"# Summary\n\n## Result\n{result}\n"
    assert (with_args(tasks[DRAIN], 6, content=content) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        ("Forwarding for your information.", True),
        ("Hi team, forwarding this for your information. Thanks, Alex", True),
        ("Please ignore this, sent by mistake.", False),
    ],
)
def test_a_forward_may_be_for_the_readers_information(tasks: dict[str, Task], body: str, paid: bool) -> None:
    assert (with_args(tasks[FORWARD], 6, body=body) == 1.0) is paid


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Already done.", True),
        ("Done by amara.", True),
        ("Done by farah.", False),  # farah is named in turn 1, of another item
        ("Amara did not do it.", False),
    ],
)
def test_a_note_nobody_asked_for_credits_only_whom_the_record_names(
    tasks: dict[str, Task], note: str, paid: bool
) -> None:
    assert (with_args(tasks[DONE], 5, note=note) == 1.0) is paid
