"""Inventory ledger: multi-warehouse stock whose every movement is a posted journal.

The reference environment of the *transactional workspace* archetype: changes are staged
in a draft journal (begin), validated as a whole and posted atomically (commit) or dropped
(rollback). Postings respect the invariants of a real stock ledger: on-hand never negative,
reserved never above on-hand, transfer legs posted together, purchase orders never
over-received, closed periods untouchable, and counted stock frozen until reconciled.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from envcraft import Entity, Environment, Initial, Job, Repository, iso, tool

from .generate import generate_state
from .rules import (
    add_line,
    available,
    drafts_in,
    frozen_pairs,
    matching_skus,
    open_counts_in,
    open_journal,
    order_rows,
    period_rows,
    post_journal,
    posting_violations,
    purchase_order_rows,
    staged_receipts,
    stock_rows,
    stock_violations,
    value_at_period_end,
    warehouse_rows,
)
from .state import (
    Balance,
    CountLine,
    CycleCount,
    Journal,
    LedgerState,
    OrderStatus,
    Period,
    PoStatus,
    Sku,
    Warehouse,
)


# -- the environment ----------------------------------------------------------------------------
class InventoryLedger(Environment):
    """Multi-warehouse inventory ledger of a distribution company.

    Stock changes are posted through journals: open one with begin_transaction, stage
    receipt, transfer and adjustment lines, check it with get_journal, then
    commit_transaction posts every line at once (or none) and rollback_transaction drops
    it. Customer orders reserve stock (reserve_stock) and ship it (ship_order). Cycle counts
    freeze the counted SKUs until reconciled. Months close in order with close_period;
    a closed month accepts no postings.
    """

    State = LedgerState
    state: LedgerState
    entities = (
        Entity("warehouses", "warehouse", ("the {name} warehouse (in {city})",), id_known=True),
        Entity("skus", "SKU", ("{name}",), id_known=True, vary=("unit_cost",)),
        Entity(
            "purchase_orders",
            "purchase order",
            ("the purchase order from {supplier} expected on {expected_date:date} (for {warehouse_id})",),
            id_known=True,
        ),
        Entity(
            "orders",
            "customer order",
            ("{customer}'s order due {ship_by:date} (from {warehouse_id})",),
            id_known=True,
        ),
        Entity(
            "journals",
            "journal",
            ("the {status} journal “{memo}”",),
            id_known=True,
            free=("lines/*/note",),  # a line's note: the user's memo is the journal's
        ),
        Entity("movements", "stock movement", (), log=True),
        Entity(
            "cycle_counts",
            "cycle count",
            ("the {status} cycle count at {warehouse_id} (started {started_at:when})",),
            id_known=True,
        ),
        Entity("periods", "accounting period", ("period {period}",), id_known=True),
    )
    jobs = (
        Job(
            "receive against a purchase order",
            ("begin_transaction", "add_receipt_line", "commit_transaction"),
            "book the receipt of {quantity} unit(s) of {sku_id} against {po_id} into the ledger under the "
            "memo {memo}[ in period {period}]",
            examples={
                "memo": ("Supplier delivery checked in", "Goods received at the dock", "Inbound delivery")
            },
        ),
        Job(
            "move stock between warehouses",
            ("begin_transaction", "add_transfer_line", "commit_transaction"),
            "move {quantity} unit(s) of {sku_id} out of {from_warehouse_id} and into {to_warehouse_id} "
            "on the books, under the memo {memo}[ in period {period}]",
            examples={"memo": ("Rebalance between warehouses", "Cover demand at the other site")},
        ),
        Job(
            "adjust stock with a reason",
            ("begin_transaction", "add_adjustment_line", "commit_transaction"),
            "post an adjustment of {quantity} unit(s) of {sku_id} at {warehouse_id} (reason code "
            "{reason_code}[, noting {note}]) under the memo {memo}[ in period {period}]",
            examples={"memo": ("Month-end stock correction", "Stock correction after the shelf check")},
        ),
        Job(
            "count and reconcile",
            ("start_cycle_count", "record_count", "reconcile_cycle_count"),
            "count {sku_ids} at {warehouse_id}[ for period {period}]: the shelf holds {counted_quantity} "
            "unit(s); settle the books to that count",
        ),
        Job(
            "fulfil a customer order",
            ("reserve_stock", "ship_order"),
            "reserve and ship {order_id}[ in period {period}]",
        ),
    )

    @classmethod
    def rule_violations(cls, state: LedgerState, files: Mapping[str, str]) -> list[str]:
        """Stock adds up: on hand is the opening balance plus the posted movements, reserved is what
        the reserved orders hold, and neither goes negative or reserves more than is on hand."""
        del files
        return stock_violations(state)

    # -- reads -------------------------------------------------------------------------------
    @tool(read_only=True, produces=["warehouse_id"])
    def list_warehouses(self) -> dict[str, Any]:
        """List the warehouses, whether you may post stock changes there, and their stock totals.

        Returns:
            Warehouses with id, name, city, can_post, the number of SKUs stocked and units on hand
            and reserved; plus your operator profile (approval limit, period-close right).
        """
        rows = warehouse_rows(self.state)
        return {"warehouses": rows, "operator": self.state.operator.model_dump()}

    @tool(read_only=True, produces=["sku_id"])
    def search_skus(self, query: str = "", category: str = "") -> dict[str, Any]:
        """Search the item master by words in the SKU name or id, optionally within a category.

        Args:
            query: Words that must all appear in the SKU id or name (case does not matter); empty for all.
            category: Only SKUs of this category (e.g. safety, packaging, electronics); empty for all.

        Returns:
            Matching SKUs with id, name, category, unit of measure, standard unit cost and total on hand.
        """
        found = matching_skus(self.state, query.lower().split(), category)
        return {"skus": found, "count": len(found)}

    @tool(read_only=True, consumes=["sku_id", "warehouse_id"], produces=["warehouse_id"])
    def get_stock(self, sku_id: str, warehouse_id: str = "") -> dict[str, Any]:
        """Show a SKU's stock per warehouse: on hand, reserved, available, pending drafts and freezes.

        Args:
            sku_id: The SKU id, e.g. SKU-10482.
            warehouse_id: Only this warehouse (e.g. WH-RNO); empty for every warehouse.

        Returns:
            One row per warehouse with on_hand, reserved, available (on_hand - reserved),
            pending_in_drafts (net change staged in draft journals) and frozen_by (an open cycle
            count id, or null).
        """
        sku = self._sku(sku_id)
        if warehouse_id:
            self._warehouse(warehouse_id)
        rows = stock_rows(self.state, sku_id, warehouse_id)
        return {"sku_id": sku_id, "name": sku.name, "uom": sku.uom, "stock": rows}

    @tool(read_only=True, consumes=["warehouse_id"], produces=["po_id", "sku_id"])
    def list_purchase_orders(
        self, status: PoStatus | None = None, warehouse_id: str = "", supplier: str = ""
    ) -> dict[str, Any]:
        """List purchase orders with what is still to be received on each line.

        Args:
            status: Only purchase orders in this status; all when omitted.
            warehouse_id: Only POs delivered to this warehouse; empty for all.
            supplier: Words that must appear in the supplier name; empty for all.

        Returns:
            Purchase orders with supplier, receiving warehouse, status, expected date and lines
            (ordered, received, remaining, pending_in_drafts).
        """
        rows = purchase_order_rows(self.state, status, warehouse_id, supplier.lower().split())
        return {"purchase_orders": rows, "count": len(rows)}

    @tool(read_only=True, consumes=["warehouse_id"], produces=["order_id", "sku_id"])
    def list_orders(
        self, status: OrderStatus | None = None, warehouse_id: str = "", customer: str = ""
    ) -> dict[str, Any]:
        """List customer orders with the stock available for each line at the shipping warehouse.

        Args:
            status: Only orders in this status; all when omitted.
            warehouse_id: Only orders shipping from this warehouse; empty for all.
            customer: Words that must appear in the customer name; empty for all.

        Returns:
            Orders with customer, warehouse, status, ship-by date and lines (quantity and the
            available quantity at that warehouse).
        """
        rows = order_rows(self.state, status, warehouse_id, customer.lower().split())
        return {"orders": rows, "count": len(rows)}

    @tool(read_only=True, consumes=["journal_id"])
    def get_journal(self, journal_id: str) -> dict[str, Any]:
        """Show a journal with its lines and, for a draft, a dry run of committing it now.

        Args:
            journal_id: The journal id, e.g. JNL-00003.

        Returns:
            The journal (memo, period, status, lines) and for drafts: would_commit (true when
            commit_transaction would succeed now) and violations (what would block it).
        """
        journal = self.lookup(self.state.journals, journal_id, "journal", journal_id=journal_id)
        result: dict[str, Any] = journal.model_dump()
        if journal.status == "draft":
            violations = posting_violations(self.state, journal)
            result["would_commit"] = not violations and bool(journal.lines)
            result["violations"] = violations
        return result

    @tool(read_only=True, consumes=["sku_id", "warehouse_id", "journal_id"], produces=["movement_id"])
    def list_movements(
        self,
        sku_id: str = "",
        warehouse_id: str = "",
        period: str = "",
        journal_id: str = "",
        limit: int = 50,
    ) -> dict[str, Any]:
        """List posted stock movements (the ledger), newest first.

        Args:
            sku_id: Only movements of this SKU; empty for all.
            warehouse_id: Only movements at this warehouse; empty for all.
            period: Only movements posted to this period (YYYY-MM); empty for all.
            journal_id: Only movements of this journal; empty for all.
            limit: Maximum number of movements to return (1 to 200).

        Returns:
            Movements (id, journal, period, kind, warehouse, SKU, signed quantity, reason, reference)
            and the total number matching.
        """
        if not 1 <= limit <= 200:
            self.fail("invalid_argument", "limit must be between 1 and 200", field="limit")
        matching = [
            m.model_dump()
            for m in sorted(self.state.movements.values(), key=lambda m: -m.seq)
            if (not sku_id or m.sku_id == sku_id)
            and (not warehouse_id or m.warehouse_id == warehouse_id)
            and (not period or m.period == period)
            and (not journal_id or m.journal_id == journal_id)
        ]
        return {"movements": matching[:limit], "total": len(matching)}

    @tool(read_only=True, produces=["period", "journal_id", "count_id"])
    def list_periods(self) -> dict[str, Any]:
        """List accounting periods with what blocks closing each open one.

        Returns:
            Periods (YYYY-MM) oldest first with status, closing value for closed ones, and for open
            ones: draft_journals and open_counts that block closing, and whether an older period
            is still open.
        """
        rows = period_rows(self.state)
        return {"periods": rows, "current_period": self._current_period()}

    # -- journals ------------------------------------------------------------------------------
    @tool(
        goal="open a draft journal with the memo {memo}[ for period {period}]",
        produces=["journal_id"],
        consumes=["period"],
        examples={
            "memo": (
                "Month-end stock correction",
                "Rebalance between warehouses",
                "Stock moves for this week",
            )
        },
    )
    def begin_transaction(self, memo: str, period: str = "") -> dict[str, Any]:
        """Open a draft journal: a transaction whose lines post together or not at all.

        Args:
            memo: What the transaction is for (e.g. "Receive PO-4411 at Reno").
            period: Accounting period to post to (YYYY-MM); empty for the current period.

        Returns:
            The new journal id, its period and status ("draft").
        """
        if not memo.strip():
            self.fail("invalid_argument", "memo must not be empty", field="memo")
        target = self._open_period(period or self._current_period())
        journal = open_journal(self.state, memo.strip(), target.period, "manual", iso(self.now()))
        return {"journal_id": journal.journal_id, "period": target.period, "status": "draft"}

    @tool(
        goal="stage the receipt of {quantity} unit(s) of {sku_id} against {po_id} in {journal_id}",
        consumes=["journal_id", "po_id", "sku_id"],
    )
    def add_receipt_line(self, journal_id: str, po_id: str, sku_id: str, quantity: int) -> dict[str, Any]:
        """Stage the receipt of purchase-order units into the PO's warehouse.

        Args:
            journal_id: A draft journal id.
            po_id: The purchase order, e.g. PO-4411.
            sku_id: A SKU on that purchase order.
            quantity: Units received (at least 1, at most what remains to be received).

        Returns:
            The staged line and what remains to receive on the PO line after this journal.
        """
        journal = self._draft(journal_id)
        po = self.lookup(self.state.purchase_orders, po_id, "purchase order", po_id=po_id)
        if po.status in ("received", "cancelled"):
            self.fail(
                "invalid_transition",
                f"purchase order {po_id} is {po.status}; only open or partially received POs can be received",
                po_id=po_id,
                status=po.status,
            )
        line = po.lines.get(sku_id)
        if line is None:
            self.fail(
                "not_found",
                f"SKU {sku_id} is not on purchase order {po_id}",
                po_id=po_id,
                sku_id=sku_id,
                po_skus=sorted(po.lines),
            )
        self._positive(quantity)
        self._require_scope(po.warehouse_id)
        staged = staged_receipts(self.state).get((po_id, sku_id), 0)
        remaining = line.ordered - line.received - staged
        if quantity > remaining:
            self.fail(
                "conflict",
                f"receiving {quantity} would over-receive {po_id}/{sku_id}: ordered {line.ordered}, "
                f"received {line.received}, staged in drafts {staged}",
                po_id=po_id,
                sku_id=sku_id,
                ordered=line.ordered,
                received=line.received,
                staged_in_drafts=staged,
                remaining=max(remaining, 0),
            )
        added = add_line(journal, "receipt", po.warehouse_id, sku_id, quantity, reference=po_id)
        return {"journal_id": journal_id, "line": added.model_dump(), "remaining_after": remaining - quantity}

    @tool(
        goal="stage a transfer of {quantity} unit(s) of {sku_id} from {from_warehouse_id} to "
        "{to_warehouse_id} in {journal_id}",
        consumes=["journal_id", "sku_id", "warehouse_id"],
        produces=["transfer_id"],
    )
    def add_transfer_line(
        self, journal_id: str, sku_id: str, from_warehouse_id: str, to_warehouse_id: str, quantity: int
    ) -> dict[str, Any]:
        """Stage a transfer between two warehouses as a pair of legs that post (or drop) together.

        Args:
            journal_id: A draft journal id.
            sku_id: The SKU to move.
            from_warehouse_id: Warehouse the units leave.
            to_warehouse_id: Warehouse the units arrive at (different from the source).
            quantity: Units to move (at least 1, at most the source's available quantity).

        Returns:
            The transfer id and its two staged legs (transfer_out and transfer_in).
        """
        journal = self._draft(journal_id)
        self._sku(sku_id)
        source = self._warehouse(from_warehouse_id)
        self._warehouse(to_warehouse_id)
        if from_warehouse_id == to_warehouse_id:
            self.fail(
                "invalid_argument",
                "from_warehouse_id and to_warehouse_id must differ",
                field="to_warehouse_id",
            )
        self._positive(quantity)
        self._require_scope(from_warehouse_id)
        self._require_scope(to_warehouse_id)
        self._require_available(journal, source, sku_id, quantity)
        transfer_id = f"TRF-{self.state.next_transfer:04d}"
        self.state.next_transfer += 1
        out_leg = add_line(
            journal, "transfer_out", from_warehouse_id, sku_id, -quantity, reference=transfer_id
        )
        in_leg = add_line(journal, "transfer_in", to_warehouse_id, sku_id, quantity, reference=transfer_id)
        return {
            "journal_id": journal_id,
            "transfer_id": transfer_id,
            "legs": [out_leg.model_dump(), in_leg.model_dump()],
        }

    @tool(
        goal="stage an adjustment of {quantity} unit(s) of {sku_id} at {warehouse_id} with reason code "
        "{reason_code} in {journal_id}[, noting {note}]",
        consumes=["journal_id", "sku_id", "warehouse_id"],
        examples={
            "note": ("Found during the shelf check.", "Damaged on arrival.", "Corrected after a recount.")
        },
    )
    def add_adjustment_line(
        self, journal_id: str, warehouse_id: str, sku_id: str, quantity: int, reason_code: str, note: str = ""
    ) -> dict[str, Any]:
        """Stage a stock adjustment with a reason code (signed quantity: negative removes units).

        Reason codes: DAMAGED, EXPIRED, SHRINKAGE, SAMPLE (decrease only); FOUND,
        RETURN_TO_STOCK (increase only); CORRECTION (either way). SHRINKAGE, SAMPLE,
        RETURN_TO_STOCK and CORRECTION need a note. The line's value (|quantity| x unit cost)
        must be within your approval limit.

        Args:
            journal_id: A draft journal id.
            warehouse_id: Warehouse whose stock changes.
            sku_id: The SKU adjusted.
            quantity: Signed change of on-hand units (not zero).
            reason_code: One of the reason codes above.
            note: Free-text justification (required by some reason codes).

        Returns:
            The staged line and its value.
        """
        journal = self._draft(journal_id)
        warehouse = self._warehouse(warehouse_id)
        sku = self._sku(sku_id)
        codes = self.data.json("reason_codes.json")
        code = codes.get(reason_code.strip().upper())
        if code is None:
            self.fail(
                "invalid_argument",
                f"unknown reason code '{reason_code}'",
                field="reason_code",
                accepted=sorted(codes),
            )
        reason = reason_code.strip().upper()
        if quantity == 0:
            self.fail("invalid_argument", "quantity must not be zero", field="quantity")
        direction = code["direction"]
        if (direction == "decrease" and quantity > 0) or (direction == "increase" and quantity < 0):
            self.fail(
                "invalid_argument",
                f"reason {reason} only allows a {direction} (got quantity {quantity})",
                field="quantity",
                direction=direction,
            )
        if code["requires_note"] and not note.strip():
            self.fail("invalid_argument", f"reason {reason} requires a note", field="note")
        self._require_scope(warehouse_id)
        value = round(abs(quantity) * sku.unit_cost, 2)
        limit = self.state.operator.approval_limit
        if value > limit:
            self.fail(
                "permission_denied",
                f"adjustment of {abs(quantity)} x {sku_id} is worth {value:.2f}, above the approval limit "
                f"of {limit:.2f} of {self.state.operator.name}; split it or ask a supervisor",
                sku_id=sku_id,
                value=value,
                approval_limit=limit,
                missing_permission="approve_adjustment_above_limit",
            )
        if quantity < 0:
            self._require_available(journal, warehouse, sku_id, -quantity)
        added = add_line(journal, "adjustment", warehouse_id, sku_id, quantity, reason, "", note.strip())
        return {"journal_id": journal_id, "line": added.model_dump(), "value": value}

    @tool(
        goal="remove line {line_no} from {journal_id}",
        undoes=["add_receipt_line", "add_transfer_line", "add_adjustment_line"],
        consumes=["journal_id"],
    )
    def remove_line(self, journal_id: str, line_no: int) -> dict[str, Any]:
        """Remove a staged line from a draft journal (removing a transfer leg removes both legs).

        Args:
            journal_id: A draft journal id.
            line_no: The line number shown by get_journal.

        Returns:
            The line numbers removed and the lines left.
        """
        journal = self._draft(journal_id)
        line = next((ln for ln in journal.lines if ln.line_no == line_no), None)
        if line is None:
            self.fail(
                "not_found",
                f"journal {journal_id} has no line {line_no}",
                journal_id=journal_id,
                line_nos=[ln.line_no for ln in journal.lines],
            )
        paired = line.kind in ("transfer_out", "transfer_in")
        removed = [
            ln.line_no
            for ln in journal.lines
            if ln.line_no == line_no or (paired and ln.reference == line.reference)
        ]
        journal.lines = [ln for ln in journal.lines if ln.line_no not in removed]
        return {"journal_id": journal_id, "removed_line_nos": removed, "lines_left": len(journal.lines)}

    @tool(goal="post {journal_id} to the ledger", consumes=["journal_id"], produces=["movement_id"])
    def commit_transaction(self, journal_id: str) -> dict[str, Any]:
        """Validate a draft journal as a whole and post every line to the ledger atomically.

        Nothing is posted when any line would break a rule (negative on-hand, reserved above
        on-hand, over-received PO, frozen SKU, closed period): the error lists each violation.

        Args:
            journal_id: A draft journal id.

        Returns:
            The journal id, status "posted", and the movement ids created.
        """
        journal = self._draft(journal_id)
        if not journal.lines:
            self.fail(
                "invalid_transition",
                f"journal {journal_id} has no lines; add lines or roll it back",
                journal_id=journal_id,
                status=journal.status,
            )
        movement_ids = self._post(journal)
        return {"journal_id": journal_id, "status": journal.status, "movement_ids": movement_ids}

    @tool(
        goal="discard {journal_id}",
        undoes=["begin_transaction", "add_receipt_line", "add_transfer_line", "add_adjustment_line"],
        consumes=["journal_id"],
    )
    def rollback_transaction(self, journal_id: str) -> dict[str, Any]:
        """Discard a draft journal: none of its lines will ever post.

        Args:
            journal_id: A draft journal id.

        Returns:
            The journal id and its status ("rolled_back").
        """
        journal = self._draft(journal_id)
        journal.status = "rolled_back"
        return {"journal_id": journal_id, "status": journal.status, "discarded_lines": len(journal.lines)}

    # -- customer orders -----------------------------------------------------------------------
    @tool(goal="reserve the stock for {order_id}", consumes=["order_id"])
    def reserve_stock(self, order_id: str) -> dict[str, Any]:
        """Reserve stock for every line of an open order at its warehouse (all lines or none).

        Args:
            order_id: The customer order, e.g. SO-20931.

        Returns:
            The order id, its status ("reserved") and the reserved quantities.
        """
        order = self.lookup(self.state.orders, order_id, "customer order", order_id=order_id)
        if order.status != "open":
            self.fail(
                "invalid_transition",
                f"order {order_id} is {order.status}; only open orders can be reserved",
                order_id=order_id,
                status=order.status,
            )
        self._require_scope(order.warehouse_id)
        stock = self.state.warehouses[order.warehouse_id].stock
        shortages = [
            {"sku_id": sku_id, "needed": qty, "available": available(stock.get(sku_id, Balance()))}
            for sku_id, qty in sorted(order.lines.items())
            if qty > available(stock.get(sku_id, Balance()))
        ]
        if shortages:
            self.fail(
                "conflict",
                f"not enough available stock at {order.warehouse_id} to reserve {order_id}",
                order_id=order_id,
                warehouse_id=order.warehouse_id,
                shortages=shortages,
            )
        for sku_id, qty in order.lines.items():
            stock[sku_id].reserved += qty
        order.status = "reserved"
        return {"order_id": order_id, "status": order.status, "reserved": dict(sorted(order.lines.items()))}

    @tool(goal="release the stock reserved for {order_id}", undoes=["reserve_stock"], consumes=["order_id"])
    def release_reservation(self, order_id: str) -> dict[str, Any]:
        """Release the stock reserved for an order; the order goes back to open.

        Args:
            order_id: A reserved customer order.

        Returns:
            The order id, its status ("open") and the quantities released.
        """
        order = self.lookup(self.state.orders, order_id, "customer order", order_id=order_id)
        if order.status != "reserved":
            self.fail(
                "invalid_transition",
                f"order {order_id} is {order.status}; only reserved orders hold stock to release",
                order_id=order_id,
                status=order.status,
            )
        self._require_scope(order.warehouse_id)
        stock = self.state.warehouses[order.warehouse_id].stock
        for sku_id, qty in order.lines.items():
            stock[sku_id].reserved -= qty
        order.status = "open"
        return {"order_id": order_id, "status": order.status, "released": dict(sorted(order.lines.items()))}

    @tool(
        goal="ship {order_id}[ in period {period}]",
        consumes=["order_id", "period"],
        produces=["journal_id", "movement_id"],
    )
    def ship_order(self, order_id: str, period: str = "") -> dict[str, Any]:
        """Ship a reserved order: posts a shipment journal that issues the reserved units.

        Args:
            order_id: A reserved customer order.
            period: Accounting period to post to (YYYY-MM); empty for the current period.

        Returns:
            The order id, its status ("shipped"), the shipment journal id and movement ids.
        """
        order = self.lookup(self.state.orders, order_id, "customer order", order_id=order_id)
        if order.status != "reserved":
            hint = " Reserve it first." if order.status == "open" else ""
            self.fail(
                "invalid_transition",
                f"order {order_id} is {order.status}; only reserved orders can ship.{hint}",
                order_id=order_id,
                status=order.status,
            )
        self._require_scope(order.warehouse_id)
        target = self._open_period(period or self._current_period())
        journal = open_journal(
            self.state,
            f"Shipment of {order_id} to {order.customer}",
            target.period,
            "shipment",
            iso(self.now()),
        )
        for sku_id, qty in sorted(order.lines.items()):
            add_line(journal, "shipment", order.warehouse_id, sku_id, -qty, reference=order_id)
        movement_ids = self._post(journal)
        order.status = "shipped"
        return {
            "order_id": order_id,
            "status": order.status,
            "journal_id": journal.journal_id,
            "movement_ids": movement_ids,
        }

    # -- cycle counts ----------------------------------------------------------------------------
    @tool(
        goal="start a cycle count of {sku_ids} at {warehouse_id}[ in period {period}]",
        consumes=["warehouse_id", "sku_id", "period"],
        produces=["count_id"],
    )
    def start_cycle_count(self, warehouse_id: str, sku_ids: list[str], period: str = "") -> dict[str, Any]:
        """Start a cycle count: snapshot the system quantities and freeze those SKUs at the warehouse.

        While the count is open, no posting may move a counted SKU at that warehouse.

        Args:
            warehouse_id: The warehouse to count.
            sku_ids: The SKUs to count (at least one, no repeats).
            period: Period the count belongs to (YYYY-MM); empty for the current period.

        Returns:
            The count id and the frozen SKUs with their system quantities.
        """
        warehouse = self._warehouse(warehouse_id)
        if not sku_ids:
            self.fail("invalid_argument", "sku_ids must name at least one SKU", field="sku_ids")
        if len(set(sku_ids)) != len(sku_ids):
            self.fail("invalid_argument", "sku_ids must not repeat a SKU", field="sku_ids")
        for sku_id in sku_ids:
            self._sku(sku_id)
        self._require_scope(warehouse_id)
        target = self._open_period(period or self._current_period())
        frozen = frozen_pairs(self.state)
        clashes = {s: frozen[(warehouse_id, s)] for s in sku_ids if (warehouse_id, s) in frozen}
        if clashes:
            self.fail(
                "conflict",
                f"SKUs already being counted at {warehouse_id}: {sorted(clashes)}",
                warehouse_id=warehouse_id,
                counted_by=clashes,
            )
        count_id = f"CC-{self.state.next_count:04d}"
        self.state.next_count += 1
        lines = {
            s: CountLine(system_quantity=warehouse.stock.get(s, Balance()).on_hand) for s in sorted(sku_ids)
        }
        self.state.cycle_counts[count_id] = CycleCount(
            count_id=count_id,
            warehouse_id=warehouse_id,
            period=target.period,
            status="open",
            started_at=iso(self.now()),
            lines=lines,
        )
        return {
            "count_id": count_id,
            "warehouse_id": warehouse_id,
            "period": target.period,
            "frozen": {s: ln.system_quantity for s, ln in lines.items()},
        }

    @tool(
        goal="record {counted_quantity} counted unit(s) of {sku_id} in {count_id}",
        consumes=["count_id", "sku_id"],
    )
    def record_count(self, count_id: str, sku_id: str, counted_quantity: int) -> dict[str, Any]:
        """Record the physically counted quantity of one SKU in an open cycle count (recount overwrites).

        Args:
            count_id: An open cycle count, e.g. CC-0002.
            sku_id: A SKU in that count.
            counted_quantity: Units found on the shelf (0 or more).

        Returns:
            The count id, the SKU, its system and counted quantity, and the SKUs still to count.
        """
        count = self._open_count(count_id)
        line = count.lines.get(sku_id)
        if line is None:
            self.fail(
                "not_found",
                f"SKU {sku_id} is not part of count {count_id}",
                count_id=count_id,
                sku_ids=sorted(count.lines),
            )
        if counted_quantity < 0:
            self.fail("invalid_argument", "counted_quantity must be 0 or more", field="counted_quantity")
        line.counted = counted_quantity
        return {
            "count_id": count_id,
            "sku_id": sku_id,
            "system_quantity": line.system_quantity,
            "counted": counted_quantity,
            "uncounted": sorted(s for s, ln in count.lines.items() if ln.counted is None),
        }

    @tool(
        goal="reconcile {count_id}[ in period {period}]",
        consumes=["count_id", "period"],
        produces=["journal_id", "movement_id"],
    )
    def reconcile_cycle_count(self, count_id: str, period: str = "") -> dict[str, Any]:
        """Post the count variances (reason CYCLE_COUNT) and lift the freeze.

        Every SKU must be counted. The total absolute variance value must be within your
        approval limit, and no SKU may end with less on hand than is reserved for orders.

        Args:
            count_id: An open cycle count whose lines are all counted.
            period: Accounting period to post to (YYYY-MM); empty for the count's own period.

        Returns:
            The count id, its status ("reconciled"), the variances and the variance journal id
            (null when every count matched).
        """
        count = self._open_count(count_id)
        uncounted = sorted(s for s, ln in count.lines.items() if ln.counted is None)
        if uncounted:
            self.fail(
                "invalid_transition",
                f"count {count_id} is still open with uncounted SKUs {uncounted}; record them first",
                count_id=count_id,
                status=count.status,
                uncounted=uncounted,
            )
        self._require_scope(count.warehouse_id)
        target = self._open_period(period or count.period)
        stock = self.state.warehouses[count.warehouse_id].stock
        variances = {
            s: int(ln.counted or 0) - stock.get(s, Balance()).on_hand
            for s, ln in sorted(count.lines.items())
            if int(ln.counted or 0) != stock.get(s, Balance()).on_hand
        }
        value = round(sum(abs(v) * self.state.skus[s].unit_cost for s, v in variances.items()), 2)
        limit = self.state.operator.approval_limit
        if value > limit:
            self.fail(
                "permission_denied",
                f"count {count_id} has variances worth {value:.2f}, above the approval limit of "
                f"{limit:.2f} of {self.state.operator.name}; recount or ask a supervisor",
                count_id=count_id,
                value=value,
                approval_limit=limit,
                missing_permission="approve_adjustment_above_limit",
            )
        count.status = "reconciled"
        count.reconciled_at = iso(self.now())
        journal_id = None
        if variances:
            journal = open_journal(
                self.state, f"Cycle count {count_id} variances", target.period, "cycle_count", iso(self.now())
            )
            reason = self.data.json("policy.json")["count_variance_reason"]
            for sku_id, delta in variances.items():
                add_line(
                    journal, "count_variance", count.warehouse_id, sku_id, delta, reason, reference=count_id
                )
            self._post(journal)
            journal_id = journal.journal_id
        return {
            "count_id": count_id,
            "status": count.status,
            "variances": variances,
            "variance_value": value,
            "journal_id": journal_id,
        }

    # -- period close ----------------------------------------------------------------------------
    @tool(goal="close the accounting period {period}", consumes=["period"])
    def close_period(self, period: str) -> dict[str, Any]:
        """Close an accounting period: no posting will ever land in it again.

        Periods close oldest first. A period with draft journals or open cycle counts cannot
        close; list_periods shows the blockers.

        Args:
            period: The period to close (YYYY-MM).

        Returns:
            The period, its status ("closed"), closing time and inventory value at period end.
        """
        target = self.lookup(
            self.state.periods, period, "period", period=period, periods=sorted(self.state.periods)
        )
        if target.status == "closed":
            self.fail(
                "invalid_transition",
                f"period {period} is already closed",
                period=period,
                status=target.status,
            )
        older = sorted(
            p.period for p in self.state.periods.values() if p.status == "open" and p.period < period
        )
        if older:
            self.fail(
                "invalid_transition",
                f"period {period} cannot close while older periods are open: {older}",
                period=period,
                status=target.status,
                open_older_periods=older,
            )
        if not self.state.operator.can_close_periods:
            self.fail(
                "permission_denied",
                f"{self.state.operator.name} may not close period {period}",
                period=period,
                missing_permission="close_period",
            )
        drafts = drafts_in(self.state, period)
        counts = open_counts_in(self.state, period)
        if drafts or counts:
            self.fail(
                "conflict",
                f"period {period} still has draft journals {drafts} and open cycle counts {counts}; "
                "commit or roll back the journals and reconcile the counts first",
                period=period,
                draft_journals=drafts,
                open_counts=counts,
            )
        target.status = "closed"
        target.closed_at = iso(self.now())
        target.closed_after_seq = self.state.next_movement - 1
        target.closing_value = value_at_period_end(self.state, period)
        return target.model_dump()

    # -- helpers -------------------------------------------------------------------------------
    def _current_period(self) -> str:
        return self.now().strftime("%Y-%m")

    def _warehouse(self, warehouse_id: str) -> Warehouse:
        """The warehouse, or ``not_found`` listing the warehouses there are."""
        return self.lookup(
            self.state.warehouses,
            warehouse_id,
            "warehouse",
            warehouse_id=warehouse_id,
            warehouses=sorted(self.state.warehouses),
        )

    def _sku(self, sku_id: str) -> Sku:
        sku = self.state.skus.get(sku_id)
        if sku is None:
            self.fail("not_found", f"no SKU '{sku_id}'; search_skus finds SKU ids", sku_id=sku_id)
        return sku

    def _draft(self, journal_id: str) -> Journal:
        journal = self.lookup(self.state.journals, journal_id, "journal", journal_id=journal_id)
        if journal.status != "draft":
            self.fail(
                "invalid_transition",
                f"journal {journal_id} is {journal.status}; only draft journals can change",
                journal_id=journal_id,
                status=journal.status,
            )
        return journal

    def _open_count(self, count_id: str) -> CycleCount:
        count = self.lookup(self.state.cycle_counts, count_id, "cycle count", count_id=count_id)
        if count.status != "open":
            self.fail(
                "invalid_transition",
                f"cycle count {count_id} is {count.status}",
                count_id=count_id,
                status=count.status,
            )
        return count

    def _open_period(self, period: str) -> Period:
        target = self.lookup(
            self.state.periods, period, "period", period=period, periods=sorted(self.state.periods)
        )
        if target.status != "open":
            self.fail(
                "invalid_transition",
                f"period {period} is closed and accepts no postings; post to an open period",
                period=period,
                status=target.status,
            )
        return target

    def _positive(self, quantity: int) -> None:
        if quantity < 1:
            self.fail("invalid_argument", "quantity must be at least 1", field="quantity")

    def _require_scope(self, warehouse_id: str) -> None:
        if warehouse_id not in self.state.operator.warehouses:
            self.fail(
                "permission_denied",
                f"{self.state.operator.name} may not change stock at {warehouse_id}",
                warehouse_id=warehouse_id,
                missing_permission=f"post:{warehouse_id}",
            )

    def _require_available(self, journal: Journal, warehouse: Warehouse, sku_id: str, quantity: int) -> None:
        balance = warehouse.stock.get(sku_id, Balance())
        staged = sum(
            ln.quantity
            for ln in journal.lines
            if ln.warehouse_id == warehouse.warehouse_id and ln.sku_id == sku_id
        )
        free = available(balance) + staged
        if quantity > free:
            self.fail(
                "conflict",
                f"only {max(free, 0)} of {sku_id} available at {warehouse.warehouse_id} "
                f"(on hand {balance.on_hand}, reserved {balance.reserved}, staged in this journal {staged})",
                warehouse_id=warehouse.warehouse_id,
                sku_id=sku_id,
                requested=quantity,
                available=max(free, 0),
            )

    def _post(self, journal: Journal) -> list[str]:
        """Post every line of a draft journal, or fail with all violations and post nothing."""
        self._open_period(journal.period)
        violations = posting_violations(self.state, journal)
        if violations:
            self.fail(
                "conflict",
                f"journal {journal.journal_id} cannot post ({len(violations)} violations); nothing posted",
                journal_id=journal.journal_id,
                violations=violations,
            )
        return post_journal(self.state, journal, iso(self.now()))

    # -- initial states ----------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A distribution network of ``3 + size`` warehouses plus a partner 3PL outside your scope,
        near-duplicate SKUs, purchase orders in every status, orders that fit, orders that need a
        transfer first, an open cycle count blocking the December close."""
        return Initial(
            state=generate_state(random.Random(seed), max(1, size), cls.repository(data), cls.base_time())
        )
