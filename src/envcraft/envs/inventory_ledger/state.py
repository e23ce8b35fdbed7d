"""The State of :class:`~.env.InventoryLedger`: warehouses, SKUs, orders, journals and the ledger.

The models, their status types and the link invariants (every warehouse and SKU a record names
exists), checked record by record when a call touches one. The rules over this State live in
``rules.py``, the tools in ``env.py``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from envcraft import StateModel, dangling, invariant, misfiled

JournalStatus = Literal["draft", "posted", "rolled_back"]
JournalSource = Literal["manual", "shipment", "cycle_count"]
MovementKind = Literal["receipt", "transfer_out", "transfer_in", "adjustment", "shipment", "count_variance"]
PoStatus = Literal["open", "partially_received", "received", "cancelled"]
OrderStatus = Literal["open", "reserved", "shipped", "cancelled"]


class Operator(StateModel):
    """The person the agent acts for: where they may change stock and how much they may adjust."""

    name: str = "operator"
    warehouses: list[str] = Field(default_factory=list)
    approval_limit: float = 0.0
    can_close_periods: bool = False


class Balance(StateModel):
    opening: int = 0  # on-hand when the ledger started; on_hand == opening + posted movements
    on_hand: int = 0
    reserved: int = 0


class Warehouse(StateModel):
    warehouse_id: str
    name: str
    city: str
    stock: dict[str, Balance] = Field(default_factory=dict)


class Sku(StateModel):
    sku_id: str
    name: str
    category: str
    uom: str
    unit_cost: float


class PoLine(StateModel):
    ordered: int
    received: int = 0


class PurchaseOrder(StateModel):
    po_id: str
    supplier: str
    warehouse_id: str
    status: PoStatus
    expected_date: str
    lines: dict[str, PoLine]


class SalesOrder(StateModel):
    order_id: str
    customer: str
    warehouse_id: str
    status: OrderStatus
    ship_by: str
    lines: dict[str, Annotated[int, Field(gt=0)]]  # SKU -> units ordered


class JournalLine(StateModel):
    line_no: int
    kind: MovementKind
    warehouse_id: str
    sku_id: str
    quantity: int  # signed change of on-hand
    reason_code: str = ""
    reference: str = ""  # PO id, transfer id, order id or count id
    note: str = ""


class Journal(StateModel):
    journal_id: str
    memo: str
    period: str
    source: JournalSource
    status: JournalStatus
    created_at: str
    posted_at: str = ""
    lines: list[JournalLine] = Field(default_factory=list)
    next_line_no: int = 1


class Movement(StateModel):
    movement_id: str
    seq: int
    journal_id: str
    period: str
    kind: MovementKind
    warehouse_id: str
    sku_id: str
    quantity: int
    reason_code: str = ""
    reference: str = ""
    posted_at: str


class CountLine(StateModel):
    system_quantity: int
    counted: int | None = None


class CycleCount(StateModel):
    count_id: str
    warehouse_id: str
    period: str
    status: Literal["open", "reconciled"]
    started_at: str
    reconciled_at: str = ""
    lines: dict[str, CountLine]


class Period(StateModel):
    period: str
    status: Literal["open", "closed"]
    closed_at: str = ""
    closed_after_seq: int = 0  # the last movement seq at closing time
    closing_value: float = 0.0


class LedgerState(StateModel):
    operator: Operator = Field(default_factory=Operator)
    warehouses: dict[str, Warehouse] = Field(default_factory=dict)
    skus: dict[str, Sku] = Field(default_factory=dict)
    purchase_orders: dict[str, PurchaseOrder] = Field(default_factory=dict)
    orders: dict[str, SalesOrder] = Field(default_factory=dict)
    journals: dict[str, Journal] = Field(default_factory=dict)
    movements: dict[str, Movement] = Field(default_factory=dict)
    cycle_counts: dict[str, CycleCount] = Field(default_factory=dict)
    periods: dict[str, Period] = Field(default_factory=dict)
    next_journal: int = 1
    next_movement: int = 1
    next_transfer: int = 1
    next_count: int = 1

    # Every warehouse and SKU a record names exists, and a staged receipt names a purchase order
    # line: balances, valuations and postings follow these links without looking. Each record is
    # checked when a call touches it or a record it links to (envcraft.core.invariants).
    @invariant("warehouses")
    def _warehouse_stocks_known_skus(self, key: str, warehouse: Warehouse) -> None:
        _refuse(
            [
                *misfiled({key: warehouse}, "warehouse_id"),
                *dangling(warehouse.warehouse_id, "SKU", list(warehouse.stock), self.skus),
            ]
        )

    @invariant("skus")
    def _sku_filed(self, key: str, sku: Sku) -> None:
        _refuse(misfiled({key: sku}, "sku_id"))

    @invariant("purchase_orders")
    def _po_links_resolve(self, key: str, po: PurchaseOrder) -> None:
        _refuse(
            [*misfiled({key: po}, "po_id"), *self._stock_links(po.po_id, po.warehouse_id, list(po.lines))]
        )

    @invariant("orders")
    def _order_links_resolve(self, key: str, order: SalesOrder) -> None:
        problems = misfiled({key: order}, "order_id")
        held = self.warehouses.get(order.warehouse_id)
        if order.status == "reserved" and held is not None and not set(order.lines) <= set(held.stock):
            problems.append(f"{order.order_id} is reserved on SKUs {order.warehouse_id} holds no stock of")
        _refuse([*problems, *self._stock_links(order.order_id, order.warehouse_id, list(order.lines))])

    @invariant("journals")
    def _journal_lines_resolve(self, key: str, journal: Journal) -> None:
        problems = misfiled({key: journal}, "journal_id")
        for line in journal.lines:
            po = self.purchase_orders.get(line.reference)
            if line.kind == "receipt" and (po is None or line.sku_id not in po.lines):
                problems.append(
                    f"{journal.journal_id} receives {line.sku_id} on no line of {line.reference!r}"
                )
        for line in journal.lines:
            problems += self._stock_links(journal.journal_id, line.warehouse_id, [line.sku_id])
        _refuse(problems)

    @invariant("movements")
    def _movement_links_resolve(self, key: str, movement: Movement) -> None:
        _refuse(
            [
                *misfiled({key: movement}, "movement_id"),
                *self._stock_links(movement.movement_id, movement.warehouse_id, [movement.sku_id]),
            ]
        )

    @invariant("cycle_counts")
    def _count_links_resolve(self, key: str, count: CycleCount) -> None:
        _refuse(
            [
                *misfiled({key: count}, "count_id"),
                *self._stock_links(count.count_id, count.warehouse_id, list(count.lines)),
            ]
        )

    @invariant("periods")
    def _period_filed(self, key: str, period: Period) -> None:
        _refuse(misfiled({key: period}, "period"))

    def _stock_links(self, owner: str, warehouse_id: str, sku_ids: list[str]) -> list[str]:
        return [
            *dangling(owner, "warehouse", [warehouse_id], self.warehouses),
            *dangling(owner, "SKU", sku_ids, self.skus),
        ]


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems[:5]))
