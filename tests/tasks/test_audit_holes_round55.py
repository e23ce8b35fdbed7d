"""Classes found by the fifty-fifth blind audit (a run at ``13192ab``, seed 55; the real tasks in
``tests/fixtures/audit_tasks_round55.jsonl``, stored without their verifiers):

* The run's new records are paired with the golden run's by what they hold before by the order
  they were made: a draft journal opened after the committed transfer journal (or rolled back
  and opened again after it) made every stock movement name "the draft", 0.47 of a right run
  (R2, three runs).
* A report may say what is true of its record beyond the asked value: what a lookup shows of it
  at the end ("committed offset: 4 (log end 53, lag 49)" of list_partitions' row, R1: 0.889),
  what it held at a turn's end ("rewound from 27", the blind miss), that a list of it was empty
  ("empty at first, now 2 rules") and a quarter written after its year ("Q1" of
  ``sales_2025Q1.csv``, R4: 0.909). A wrong lag, or the number it held earlier said as what it
  is, stays a claim.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, score

JOURNALS = "returns_desk-122a8e50d250"  # a refund; a shipment, a draft transfer, a committed one
OFFSETS = "event_stream-76b135d6c3d7"  # committed at 27 in turn 1, sought back to 4; a handover
RECIPE = "sheet_analytics-560c75f23a53"  # a recipe created in turn 2, two rules in turn 3; a note
LEDGER = "inventory_ledger"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round55.jsonl")


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"env": LEDGER, "tool": tool, "args": args}


def _journals(draft_sku: str, posted_sku: str, draft_first: bool) -> list[dict[str, Any]]:
    """Turn 2: the shipment, then the draft and the committed transfer in either order."""
    draft_id, posted_id = ("JNL-00002", "JNL-00003") if draft_first else ("JNL-00003", "JNL-00002")
    move = {"from_warehouse_id": "WH-RNO", "to_warehouse_id": "WH-CMH", "quantity": 2}
    draft = [
        _call("begin_transaction", memo="Refund RF-00001: Rebalance between warehouses", period="2026-01"),
        _call("add_transfer_line", journal_id=draft_id, sku_id=draft_sku, **move),
    ]
    posted = [
        _call("begin_transaction", memo="Rebalance between warehouses", period="2025-12"),
        _call("add_transfer_line", journal_id=posted_id, sku_id=posted_sku, **move),
        _call("commit_transaction", journal_id=posted_id),
    ]
    shipped = [_call("list_orders"), _call("ship_order", order_id="SO-28325", period="2025-12")]
    return shipped + (draft + posted if draft_first else posted + draft)


@pytest.mark.parametrize(
    ("draft_sku", "posted_sku", "draft_first", "paid"),
    [
        ("SKU-15393", "SKU-13491", True, True),  # as the reference
        ("SKU-15393", "SKU-13491", False, True),  # the committed journal first: ids swap
        ("SKU-13491", "SKU-15393", False, False),  # the two transfers swapped between journals
        ("SKU-13491", "SKU-15393", True, False),
    ],
)
def test_new_records_are_paired_by_what_they_hold(
    tasks: dict[str, Task], draft_sku: str, posted_sku: str, draft_first: bool, paid: bool
) -> None:
    task = tasks[JOURNALS]
    turns = reference(task, {})
    turns[1] = _journals(draft_sku, posted_sku, draft_first)
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("- partition_committed: 4", True),  # the reference
        ("- committed offset: 4 (log end 53, lag 49)", True),
        ("- committed offset: 4 (rewound from 27)", True),
        ("- committed offset: 4, initially 27", True),
        ("- committed offset: 4 (lag 12)", False),  # the lag is 53 - 4
        ("- committed offset: 4 (lag 29)", False),  # as it was before the rewind
        ("- committed offset: 4\n- current committed offset: 27", False),  # held at turn 1 only
        ("- committed offset: 4; the partition is empty", False),
    ],
)
def test_a_report_may_say_what_is_true_of_its_record(tasks: dict[str, Task], line: str, paid: bool) -> None:
    assert (said(tasks[OFFSETS], "write_file", "content", f"# Summary\n\n## Result\n{line}\n") == 1.0) is paid


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("RCP-03", True),
        ("New recipe: RCP-03 (Blue Harbor). Q1 was cleaned with RCP-01 before it was created.", True),
        ("RCP-03 (created today, empty at first, now 2 rules)", True),
        ("RCP-03 (created today, approved by finance)", False),
        ("RCP-01", False),
    ],
)
def test_a_recipe_note_may_say_what_it_went_through(tasks: dict[str, Task], line: str, paid: bool) -> None:
    assert (said(tasks[RECIPE], "write_file", "content", f"## Result\n\n{line}\n") == 1.0) is paid
