"""Classes found by the forty-ninth blind audit (a run at ``3e0aaa8``, seed 49; the real tasks in
``tests/fixtures/audit_tasks_round49.jsonl``, stored without verifiers), each on its real task:

* A job's phrase says a link only where the run made it: "put “Check the invoice totals” on my
  to-do list, linked to the forward" of a to-do the reference linked to nothing paid an unlinked
  to-do and one linked to the wrong message alike (R1: 1.0 each).
* A word of the world written apart is still that word: "en route to pick up Wei Silva" of a
  trip whose ``pickup_eta_at`` says "pickup" (R2: 0.833).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round43 import reported
from .test_created_records import audit_tasks, planned

DELEGATE = "mail_triage-07e27f7ebeec"  # forward the urgent message, a to-do the reference leaves unlinked
DISPATCH = "rideshare_dispatch-4320ad7ba0a6"  # propose and confirm a pointed request; a report


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round49.jsonl")


def test_a_job_says_a_link_only_where_its_step_makes_it(tasks: dict[str, Task]) -> None:
    task = tasks[DELEGATE]
    [todo] = [c for c in task.reference.calls if c.tool == "add_todo"]
    assert "message_id" not in todo.args
    first = " ".join(g.text for g in planned(task, pointed=True).turns[0])
    assert "on my to-do list" in first and "linked" not in first, first


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- new_trip: TRP-40423", True),
        ("Trip TRP-40423 is dispatched: Maria Dubois (DRV-886) is en route to pick up Wei Silva.", True),
        ("Trip TRP-40423 is dispatched: Maria Dubois (DRV-886) is en route to pick Wei Silva.", False),
    ],
)
def test_a_word_of_the_world_written_apart_is_that_word(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    assert (reported(tasks[DISPATCH], result) == 1.0) is paid
