"""Domain rules of :class:`~.env.InventoryLedger`: what its tools check, compute and render.

Inventory ledger (multi-warehouse stock movements as transactions). The tool surface and the
State live in ``env.py``; this module holds the logic tool bodies call (the S0 generator shares
it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .env import Balance, LedgerState, PoStatus, PurchaseOrder


# -- pure rules shared by tools, dry runs and the generator ----------------------------------------
def _available(balance: Balance) -> int:
    return balance.on_hand - balance.reserved


def _po_status(po: PurchaseOrder) -> PoStatus:
    if po.status == "cancelled":
        return "cancelled"
    if all(line.received >= line.ordered for line in po.lines.values()):
        return "received"
    if any(line.received > 0 for line in po.lines.values()):
        return "partially_received"
    return "open"


def _frozen_pairs(state: LedgerState) -> dict[tuple[str, str], str]:
    """(warehouse, sku) -> the open cycle count that freezes it."""
    return {
        (count.warehouse_id, sku_id): count.count_id
        for count in state.cycle_counts.values()
        if count.status == "open"
        for sku_id in count.lines
    }


def _pending_in_drafts(state: LedgerState) -> dict[tuple[str, str], int]:
    pending: dict[tuple[str, str], int] = defaultdict(int)
    for journal in state.journals.values():
        if journal.status == "draft":
            for line in journal.lines:
                pending[(line.warehouse_id, line.sku_id)] += line.quantity
    return dict(pending)


def _staged_receipts(state: LedgerState) -> dict[tuple[str, str], int]:
    """(po, sku) -> units staged for receipt in draft journals."""
    staged: dict[tuple[str, str], int] = defaultdict(int)
    for journal in state.journals.values():
        if journal.status == "draft":
            for line in journal.lines:
                if line.kind == "receipt":
                    staged[(line.reference, line.sku_id)] += line.quantity
    return dict(staged)


def _drafts_in(state: LedgerState, period: str) -> list[str]:
    return sorted(j.journal_id for j in state.journals.values() if j.status == "draft" and j.period == period)


def _open_counts_in(state: LedgerState, period: str) -> list[str]:
    return sorted(
        c.count_id for c in state.cycle_counts.values() if c.status == "open" and c.period == period
    )


def _value_at_period_end(state: LedgerState, period: str) -> float:
    """Inventory value at the end of ``period``: opening plus movements posted to it or earlier."""
    units: dict[tuple[str, str], int] = defaultdict(int)
    for wh in state.warehouses.values():
        for sku_id, balance in wh.stock.items():
            units[(wh.warehouse_id, sku_id)] += balance.opening
    for movement in state.movements.values():
        if movement.period <= period:
            units[(movement.warehouse_id, movement.sku_id)] += movement.quantity
    return round(sum(qty * state.skus[sku_id].unit_cost for (_, sku_id), qty in units.items()), 2)
