"""Classes found by the sixty-first blind audit (a run at ``8109613``, seed 61; the real task in
``tests/fixtures/audit_tasks_round61.jsonl``, stored without its verifier):

* "draft a forward of the flagged message to the same address as before" after a forward to two
  addresses (R3: the blind play forwarded to both, 0.8): either address was "the one before".
* A status written with a capital to start its cell ("Cancelled" of a cancelled run; R2: 0.875).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks, planned

FORWARD = "mail_triage-b6ccccc23bee"  # forward MSG-0004 to ops@ and cs-team@, then again to cs-team@ alone
STATUS = "job_scheduler-0bcbeb00cd5f"  # RUN-7478 cancelled; its status in handover/handover.csv


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round61.jsonl")


def test_an_address_said_again_is_the_same_address_only_where_one_was_said(tasks: dict[str, Task]) -> None:
    texts = [" ".join(goal.text for goal in goals) for goals in planned(tasks[FORWARD], pointed=True).turns]
    assert "the same address as before" not in texts[1], texts
    assert "cs-team@northwind.example" in texts[1], texts


@pytest.mark.parametrize(("status", "paid"), [("cancelled", True), ("Cancelled", True), ("Running", False)])
def test_a_status_may_start_its_cell_with_a_capital(tasks: dict[str, Task], status: str, paid: bool) -> None:
    content = f"item,value\nrun_status,{status}\n"
    assert (said(tasks[STATUS], "write_file", "content", content) == 1.0) is paid
