"""Classes found by the sixty-third blind audit (a run at ``bc4f892``, seed 63; the real tasks in
``tests/fixtures/audit_tasks_round63.jsonl``, stored without their verifiers):

* A partition named by its topic and the short form of its number after a dictated reason
  ("investigating duplicate charges on payments p2" of a pause of partition 2; R4: 0.5), where
  "(partition 2)" passed: the first letter of a word of the call's records before a number the
  call passed, and no other number.
* An aside naming the run by its workflow and its time, seven words ("report retired (Orders ETL
  (us) run of Jan 5 05:45)"; R4: 0.8): an aside of the record's names may hold eight.
* A copula put into a dictated reason ("upstream data is incomplete" of "upstream data
  incomplete"; R2: 0.75), as an article or a "please" already was.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks

PAUSE = "event_stream-768511109c4a"  # pause payments partition 2: "investigating duplicate charges"
SKIP = "job_scheduler-2ab36780d26d"  # cancel load_warehouse of RUN-7453 (Orders ETL (us), Jan 5 05:45)
CANCEL = "job_scheduler-427ee03c911b"  # second cancel_run reason: "upstream data incomplete"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round63.jsonl")


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("investigating duplicate charges on payments p2", True),
        ("investigating duplicate charges (payments p2)", True),
        ("investigating duplicate charges on p2", True),
        ("investigating duplicate charges (payments p3)", False),  # another partition
        ("investigating duplicate charges (refunds p2)", False),  # another topic
        ("investigating duplicate charges on p22", False),
        ("investigating duplicate charges p2 resolved", False),
    ],
)
def test_a_partition_may_be_named_by_its_short_form(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    assert (said(tasks[PAUSE], "set_partition_paused", "reason", reason) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("upstream data is incomplete", True),
        ("upstream data are incomplete", True),
        ("upstream data is not incomplete", False),
        ("upstream data is complete", False),
    ],
)
def test_a_copula_put_in_changes_nothing(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    assert (said(tasks[CANCEL], "cancel_run", "reason", reason, 1) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("report retired (Orders ETL (us) run of Jan 5 05:45)", True),
        ("report retired (Orders ETL (eu) run of Jan 5 05:45)", False),  # the other region's run
        ("report retired (Orders ETL (us) run of Jan 6 05:45)", False),
        ("report retired (Orders ETL (us) run of Jan 5 05:45, not needed)", False),
    ],
)
def test_an_aside_may_name_the_run_by_workflow_and_time(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (said(tasks[SKIP], "cancel_job", "reason", reason) == 1.0) is paid
