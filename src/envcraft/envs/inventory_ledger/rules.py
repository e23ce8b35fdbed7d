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
    OrderStatus,
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


# -- what the read tools show ------------------------------------------------------------------
def warehouse_rows(state: LedgerState) -> list[dict[str, Any]]:
    """Each warehouse with whether the operator may post there and its stock totals."""
    rows = []
    for wh in sorted(state.warehouses.values(), key=lambda w: w.warehouse_id):
        rows.append(
            {
                "warehouse_id": wh.warehouse_id,
                "name": wh.name,
                "city": wh.city,
                "can_post": wh.warehouse_id in state.operator.warehouses,
                "skus_stocked": sum(1 for b in wh.stock.values() if b.on_hand > 0),
                "units_on_hand": sum(b.on_hand for b in wh.stock.values()),
                "units_reserved": sum(b.reserved for b in wh.stock.values()),
            }
        )
    return rows


def matching_skus(state: LedgerState, words: list[str], category: str) -> list[dict[str, Any]]:
    """The SKUs whose id or name holds every word (of ``category`` if given), with stock on hand."""
    found = []
    for sku in sorted(state.skus.values(), key=lambda s: s.sku_id):
        text = f"{sku.sku_id} {sku.name}".lower()
        if category and sku.category != category.strip().lower():
            continue
        if all(word in text for word in words):
            total = sum(
                wh.stock[sku.sku_id].on_hand for wh in state.warehouses.values() if sku.sku_id in wh.stock
            )
            found.append({**sku.model_dump(), "total_on_hand": total})
    return found


def stock_rows(state: LedgerState, sku_id: str, warehouse_id: str) -> list[dict[str, Any]]:
    """A SKU's balance per warehouse (only ``warehouse_id`` if given), drafts and freezes."""
    frozen = frozen_pairs(state)
    pending = pending_in_drafts(state)
    rows = []
    for wh in sorted(state.warehouses.values(), key=lambda w: w.warehouse_id):
        if warehouse_id and wh.warehouse_id != warehouse_id:
            continue
        balance = wh.stock.get(sku_id, Balance())
        rows.append(
            {
                "warehouse_id": wh.warehouse_id,
                "on_hand": balance.on_hand,
                "reserved": balance.reserved,
                "available": balance.on_hand - balance.reserved,
                "pending_in_drafts": pending.get((wh.warehouse_id, sku_id), 0),
                "frozen_by": frozen.get((wh.warehouse_id, sku_id)),
            }
        )
    return rows


def purchase_order_rows(
    state: LedgerState, status: PoStatus | None, warehouse_id: str, words: list[str]
) -> list[dict[str, Any]]:
    """The matching purchase orders with what remains to receive on each line."""
    staged = staged_receipts(state)
    rows = []
    for po in sorted(state.purchase_orders.values(), key=lambda p: p.po_id):
        if status and po.status != status:
            continue
        if warehouse_id and po.warehouse_id != warehouse_id:
            continue
        if not all(w in po.supplier.lower() for w in words):
            continue
        lines = [
            {
                "sku_id": sku_id,
                "ordered": line.ordered,
                "received": line.received,
                "remaining": line.ordered - line.received,
                "pending_in_drafts": staged.get((po.po_id, sku_id), 0),
            }
            for sku_id, line in sorted(po.lines.items())
        ]
        rows.append({**po.model_dump(exclude={"lines"}), "lines": lines})
    return rows


def order_rows(
    state: LedgerState, status: OrderStatus | None, warehouse_id: str, words: list[str]
) -> list[dict[str, Any]]:
    """The matching customer orders with the stock available for each line."""
    rows = []
    for order in sorted(state.orders.values(), key=lambda o: o.order_id):
        if status and order.status != status:
            continue
        if warehouse_id and order.warehouse_id != warehouse_id:
            continue
        if not all(w in order.customer.lower() for w in words):
            continue
        stock = state.warehouses[order.warehouse_id].stock
        lines = [
            {
                "sku_id": sku_id,
                "quantity": qty,
                "available_at_warehouse": available(stock.get(sku_id, Balance())),
            }
            for sku_id, qty in sorted(order.lines.items())
        ]
        rows.append({**order.model_dump(exclude={"lines"}), "lines": lines})
    return rows


def period_rows(state: LedgerState) -> list[dict[str, Any]]:
    """The periods oldest first; an open one with what blocks closing it."""
    rows = []
    older_open = False
    for period in sorted(state.periods.values(), key=lambda p: p.period):
        row: dict[str, Any] = period.model_dump()
        if period.status == "open":
            row["draft_journals"] = drafts_in(state, period.period)
            row["open_counts"] = open_counts_in(state, period.period)
            row["older_period_open"] = older_open
            row["closable"] = not (row["draft_journals"] or row["open_counts"] or older_open)
            older_open = True
        rows.append(row)
    return rows


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
