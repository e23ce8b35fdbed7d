"""Classes found by the fifty-fifth blind audit (a run at ``13192ab``, seed 55; the real task in
``tests/fixtures/audit_tasks_round55.jsonl``, stored without its verifier):

* The run's new records are paired with the golden run's by what they hold before by the order
  they were made: a draft journal opened after the committed transfer journal (or rolled back
  and opened again after it) made every stock movement name "the draft", 0.47 of a right run
  (R2, three runs).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference
from .test_created_records import audit_tasks, score

JOURNALS = "returns_desk-122a8e50d250"  # a refund; a shipment, a draft transfer, a committed one
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
