"""Domain rules of :class:`~.env.InventoryLedger`: what its tools check, compute and post.

Functions over the State of ``state.py``: availability, freezes, what a journal would break if it
posted now, the posting itself and the stock rules a whole state must satisfy. The tools in
``env.py`` call them, and so does the S0 generator, so S0 is built by the same rules the tools
enforce.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .state import (
    Balance,
    Journal,
    JournalLine,
    JournalSource,
    LedgerState,
    Movement,
    MovementKind,
    PoStatus,
    PurchaseOrder,
)


# -- pure rules shared by tools, dry runs and the generator ----------------------------------------
def available(balance: Balance) -> int:
    return balance.on_hand - balance.reserved


def po_status(po: PurchaseOrder) -> PoStatus:
    if po.status == "cancelled":
        return "cancelled"
    if all(line.received >= line.ordered for line in po.lines.values()):
        return "received"
    if any(line.received > 0 for line in po.lines.values()):
        return "partially_received"
    return "open"


def frozen_pairs(state: LedgerState) -> dict[tuple[str, str], str]:
    """(warehouse, sku) -> the open cycle count that freezes it."""
    return {
        (count.warehouse_id, sku_id): count.count_id
        for count in state.cycle_counts.values()
        if count.status == "open"
        for sku_id in count.lines
    }


def pending_in_drafts(state: LedgerState) -> dict[tuple[str, str], int]:
    pending: dict[tuple[str, str], int] = defaultdict(int)
    for journal in state.journals.values():
        if journal.status == "draft":
            for line in journal.lines:
                pending[(line.warehouse_id, line.sku_id)] += line.quantity
    return dict(pending)


def staged_receipts(state: LedgerState) -> dict[tuple[str, str], int]:
    """(po, sku) -> units staged for receipt in draft journals."""
    staged: dict[tuple[str, str], int] = defaultdict(int)
    for journal in state.journals.values():
        if journal.status == "draft":
            for line in journal.lines:
                if line.kind == "receipt":
                    staged[(line.reference, line.sku_id)] += line.quantity
    return dict(staged)


def drafts_in(state: LedgerState, period: str) -> list[str]:
    return sorted(j.journal_id for j in state.journals.values() if j.status == "draft" and j.period == period)


def open_counts_in(state: LedgerState, period: str) -> list[str]:
    return sorted(
        c.count_id for c in state.cycle_counts.values() if c.status == "open" and c.period == period
    )


def value_at_period_end(state: LedgerState, period: str) -> float:
    """Inventory value at the end of ``period``: opening plus movements posted to it or earlier."""
    units: dict[tuple[str, str], int] = defaultdict(int)
    for wh in state.warehouses.values():
        for sku_id, balance in wh.stock.items():
            units[(wh.warehouse_id, sku_id)] += balance.opening
    for movement in state.movements.values():
        if movement.period <= period:
            units[(movement.warehouse_id, movement.sku_id)] += movement.quantity
    return round(sum(qty * state.skus[sku_id].unit_cost for (_, sku_id), qty in units.items()), 2)


def posting_violations(state: LedgerState, journal: Journal) -> list[dict[str, Any]]:
    """Everything that would stop ``journal`` from posting now, judged on its net effect."""
    violations: list[dict[str, Any]] = []
    period = state.periods.get(journal.period)
    if period is None or period.status != "open":
        violations.append({"rule": "closed_period", "period": journal.period})
    frozen = frozen_pairs(state)
    net: dict[tuple[str, str], int] = defaultdict(int)
    issued: dict[tuple[str, str], int] = defaultdict(int)
    received: dict[tuple[str, str], int] = defaultdict(int)
    for line in journal.lines:
        pair = (line.warehouse_id, line.sku_id)
        net[pair] += line.quantity
        if line.kind == "shipment":
            issued[pair] -= line.quantity
        if line.kind == "receipt":
            received[(line.reference, line.sku_id)] += line.quantity
        if pair in frozen:
            violations.append(
                {
                    "rule": "frozen_by_count",
                    "line_no": line.line_no,
                    "count_id": frozen[pair],
                    "sku_id": line.sku_id,
                }
            )
    for (po_id, sku_id), qty in sorted(received.items()):
        po = state.purchase_orders[po_id]
        line_state = po.lines[sku_id]
        if po.status in ("received", "cancelled"):
            violations.append({"rule": "po_not_receivable", "po_id": po_id, "status": po.status})
        elif line_state.received + qty > line_state.ordered:
            violations.append(
                {
                    "rule": "over_receipt",
                    "po_id": po_id,
                    "sku_id": sku_id,
                    "ordered": line_state.ordered,
                    "received": line_state.received,
                    "receiving": qty,
                }
            )
    for (wh_id, sku_id), delta in sorted(net.items()):
        balance = state.warehouses[wh_id].stock.get(sku_id, Balance())
        on_hand = balance.on_hand + delta
        reserved = balance.reserved - issued.get((wh_id, sku_id), 0)
        if on_hand < 0:
            violations.append(
                {
                    "rule": "negative_on_hand",
                    "warehouse_id": wh_id,
                    "sku_id": sku_id,
                    "on_hand_after": on_hand,
                }
            )
        elif reserved > on_hand:
            violations.append(
                {
                    "rule": "reserved_above_on_hand",
                    "warehouse_id": wh_id,
                    "sku_id": sku_id,
                    "on_hand_after": on_hand,
                    "reserved": reserved,
                }
            )
    return violations


def stock_violations(state: LedgerState) -> list[str]:
    """Stock adds up: on hand is the opening balance plus the posted movements, reserved is what
    the reserved orders hold, and neither goes negative or reserves more than is on hand."""
    problems = []
    posted: dict[tuple[str, str], int] = {}
    for movement in state.movements.values():
        key = (movement.warehouse_id, movement.sku_id)
        posted[key] = posted.get(key, 0) + movement.quantity
    held: dict[tuple[str, str], int] = {}
    for order in state.orders.values():
        if order.status == "reserved":
            for sku_id, units in order.lines.items():
                held[(order.warehouse_id, sku_id)] = held.get((order.warehouse_id, sku_id), 0) + units
    for warehouse in state.warehouses.values():
        for sku_id, balance in warehouse.stock.items():
            key = (warehouse.warehouse_id, sku_id)
            if balance.on_hand != balance.opening + posted.get(key, 0):
                problems.append(f"{warehouse.warehouse_id} {sku_id}: on hand is not opening + movements")
            if balance.reserved != held.get(key, 0) or not 0 <= balance.reserved <= max(balance.on_hand, 0):
                problems.append(
                    f"{warehouse.warehouse_id} {sku_id}: reserved does not match the reserved orders"
                )
    return problems


# -- journals and postings ---------------------------------------------------------------------
def open_journal(
    state: LedgerState, memo: str, period: str, source: JournalSource, created_at: str
) -> Journal:
    """A new draft journal, numbered and filed in ``state``."""
    journal_id = f"JNL-{state.next_journal:05d}"
    state.next_journal += 1
    journal = Journal(
        journal_id=journal_id,
        memo=memo,
        period=period,
        source=source,
        status="draft",
        created_at=created_at,
    )
    state.journals[journal_id] = journal
    return journal


def add_line(
    journal: Journal,
    kind: MovementKind,
    warehouse_id: str,
    sku_id: str,
    quantity: int,
    reason_code: str = "",
    reference: str = "",
    note: str = "",
) -> JournalLine:
    """Stage one line at the end of ``journal``, numbered."""
    line = JournalLine(
        line_no=journal.next_line_no,
        kind=kind,
        warehouse_id=warehouse_id,
        sku_id=sku_id,
        quantity=quantity,
        reason_code=reason_code,
        reference=reference,
        note=note,
    )
    journal.next_line_no += 1
    journal.lines.append(line)
    return line


def post_journal(state: LedgerState, journal: Journal, stamp: str) -> list[str]:
    """Post every line of ``journal`` (which :func:`posting_violations` passed) as movements
    stamped ``stamp``: balances, reservations and purchase-order receipts follow. Returns the
    movement ids."""
    movement_ids = []
    for line in journal.lines:
        balance = state.warehouses[line.warehouse_id].stock.setdefault(line.sku_id, Balance())
        balance.on_hand += line.quantity
        if line.kind == "shipment":
            balance.reserved += line.quantity
        if line.kind == "receipt":
            po = state.purchase_orders[line.reference]
            po.lines[line.sku_id].received += line.quantity
            po.status = po_status(po)
        seq = state.next_movement
        state.next_movement += 1
        movement_id = f"MOV-{seq:06d}"
        state.movements[movement_id] = Movement(
            movement_id=movement_id,
            seq=seq,
            journal_id=journal.journal_id,
            period=journal.period,
            kind=line.kind,
            warehouse_id=line.warehouse_id,
            sku_id=line.sku_id,
            quantity=line.quantity,
            reason_code=line.reason_code,
            reference=line.reference,
            posted_at=stamp,
        )
        movement_ids.append(movement_id)
    journal.status = "posted"
    journal.posted_at = stamp
    return movement_ids
