"""Classes found by the sixty-fifth blind audit (a run at ``f56c31f``, seed 65; the real tasks in
``tests/fixtures/audit_tasks_round65.jsonl``, stored without their verifiers):

* A table of items and values with a true row beside the asked one ("restarted_host,notify-a1"
  of the host the run restarted, under "new_incident,INC-2042"; R2: 0.909), where a JSON report
  may hold such a key: the table tells an object, each item a key, and its extra rows are held
  to what an extra key may say.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, score
from .test_created_records import audit_tasks

HANDOVER = "infra_recovery-b004a846aa05"  # INC-2042 opened, notify-a1 drained and restarted


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round65.jsonl")


@pytest.mark.parametrize(
    ("rows", "paid"),
    [
        ("new_incident,INC-2042\n", True),
        ("new_incident,INC-2042\nrestarted_host,notify-a1\n", True),
        ("new_incident,INC-2042\nhost,notify-a1\n", True),
        ("new_incident,INC-2042\nservice,notification-worker\n", True),
        ("new_incident,INC-2042\nseverity,sev3\n", True),
        ("new_incident,INC-2042\nrestarted_host,notify-b1\n", False),  # a host the run left alone
        ("new_incident,INC-2042\nseverity,sev2\n", False),  # not what the incident says
        ("new_incident,INC-2042\nold_incident,INC-2041\n", False),  # a second answer
        ("new_incident,INC-2042\nnew_incident,INC-2041\n", False),  # the item twice
        ("new_incident,INC-2042\nroot_cause,bad deploy\n", False),  # a claim nobody made
        ("new_incident,INC-2041\nrestarted_host,notify-a1\n", False),
        ("new_incident,INC-2042,extra\n", False),
    ],
)
def test_a_table_of_items_may_hold_true_rows_as_a_report_may_hold_true_keys(
    tasks: dict[str, Task], rows: str, paid: bool
) -> None:
    task = tasks[HANDOVER]
    turns = reference(task, {})
    turns[-1][-1]["args"]["content"] = "item,value\n" + rows
    assert (score(task, turns) == 1.0) is paid


FORWARD = "mail_triage-1fb684361628"  # a forward drafted to two lists in turn 1, sent in turn 3


@pytest.mark.parametrize(
    ("to", "paid"),
    [
        (["cs-team@northwind.example", "ops@northwind.example"], True),  # bare addresses
        (["Customer Operations <cs-team@northwind.example>", "Operations <ops@northwind.example>"], True),
        (["cs-team@northwind.example"], False),
    ],
)
def test_a_sent_drafts_recipients_are_judged_by_the_end_goal_on_the_message(
    tasks: dict[str, Task], to: list[str], paid: bool
) -> None:
    """The turn that sends a draft sets its recipients on the record; the goal at the end on the
    new message judges them by address, so its turn's guard stays an on-time guard (a first
    version of round 67's change to on-time guards judged them as the reference wrote them and
    paid bare addresses 0.5)."""
    task = tasks[FORWARD]
    [at] = [i for i, c in enumerate(task.reference.calls) if c.tool == "draft_forward"]
    assert (score(task, reference(task, {at: {"to": to}})) == 1.0) is paid
