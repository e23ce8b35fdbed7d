"""The twenty-third round's findings on their real tasks (``tests/fixtures/audit_tasks_round23.jsonl``,
a default run at ``c04d252``, seed 23, stored without verifiers):

* helper AC, inventory_ledger-515141414c69: a journal opened, given a line and rolled back beside
  the asked reservation scored 0.5: staging a line counted as a call that gives the journal
  consequences a rollback cannot take back (``kept_by``). A call that edits only the record
  leaves nothing once the record is void (``checks.keeping_calls``); a journal left open with its
  line, or committed, still costs.
* helper AC, class_booking-a06acdd7969a: the dictated reason "too few sign-ups this week" written
  "too few signups this week" scored 0.5, as a negated reason does: a hyphen inside a word
  changes nothing.
* helper AA, event_stream: a reference that stopped at a failed sink write paid 1.0 for giving up
  (``test_reward_semantics.py``: such a reference is no task).
* helper AA, event_stream-7047685d7d75: a batch that ran past the duplicate the user said to halt
  at scored 0.5 (the partition's sink error is a consequence the correct runs agree on). Round
  25's stop made a partition named by topic and number a named record outright, its changes
  goals the variant runs then dropped, and the run scored 1.0; such a record's goals are what
  the user gave there, and the rest stays guarded.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

LEDGER = "inventory_ledger-515141414c69"
INV = "inventory_ledger"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round23.jsonl")


def _staged() -> list[dict[str, Any]]:
    return [
        call(INV, "begin_transaction", memo="oops"),
        call(
            INV,
            "add_adjustment_line",
            journal_id="JNL-00001",
            warehouse_id="WH-RNO",
            sku_id="SKU-10246",
            quantity=-1,
            reason_code="DAMAGED",
        ),
    ]


def _reserve() -> dict[str, Any]:
    return call(INV, "reserve_stock", order_id="SO-26840")


@pytest.mark.parametrize(
    ("calls", "paid"),
    [
        ([call("mail_triage", "read_message", message_id="MSG-0010"), _reserve()], True),
        ([*_staged(), call(INV, "rollback_transaction", journal_id="JNL-00001"), _reserve()], True),
        (
            [
                call(INV, "begin_transaction", memo="oops"),
                call(INV, "rollback_transaction", journal_id="JNL-00001"),
                _reserve(),
            ],
            True,
        ),
        ([*_staged(), _reserve()], False),  # the draft journal left open with its line
        ([*_staged(), call(INV, "commit_transaction", journal_id="JNL-00001"), _reserve()], False),
    ],
)
def test_a_journal_staged_and_rolled_back_leaves_nothing_behind(
    tasks: dict[str, Task], calls: list[dict[str, Any]], paid: bool
) -> None:
    assert (score(tasks[LEDGER], [calls]) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("too few sign-ups this week", True),
        ("too few signups this week", True),
        ("Too few sign-ups this week.", True),
        ("not too few signups this week", False),
        ("too few signups next week", False),
    ],
)
def test_a_hyphen_inside_a_dictated_word_changes_nothing(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    calls = [call("class_booking", "cancel_class", session_id="CLS-30043", reason=reason)]
    assert (score(tasks["class_booking-a06acdd7969a"], [calls]) == 1.0) is paid


STREAM = "event_stream-7047685d7d75"  # process partition 0, halting at the first duplicate


def test_a_batch_past_the_duplicate_it_was_to_halt_at_is_not_the_job(tasks: dict[str, Task]) -> None:
    def batch(**extra: Any) -> list[list[dict[str, Any]]]:
        args = {"topic": "payments", "partition": 0, "on_invalid": "dead_letter", **extra}
        return [[call("event_stream", "process_batch", **args)]]

    assert score(tasks[STREAM], batch()) == 1.0
    assert score(tasks[STREAM], batch(dedupe=True)) < 1.0
