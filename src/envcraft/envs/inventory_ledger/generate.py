"""The seeded S0 generator behind :meth:`~.env.InventoryLedger.generate`.

Inventory ledger (multi-warehouse stock movements as transactions). Runs once per initial state
(seed, size), never during a tool call; it builds the State models of ``state.py`` with the rules
of ``rules.py``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from envcraft import Repository, iso

from .rules import available
from .state import (
    Balance,
    CountLine,
    CycleCount,
    LedgerState,
    Operator,
    OrderStatus,
    Period,
    PoLine,
    PoStatus,
    PurchaseOrder,
    SalesOrder,
    Sku,
    Warehouse,
)


# -- generator ------------------------------------------------------------------------------------
def generate_state(rng: random.Random, size: int, data: Repository, base: datetime) -> LedgerState:
    state = LedgerState()
    parties = data.json("parties.json")
    sites = list(data.json("sites.json"))[: 3 + size]
    partner = parties["partner_site"]
    for site in [*sites, partner]:
        state.warehouses[site["id"]] = Warehouse(
            warehouse_id=site["id"], name=site["name"], city=site["city"]
        )
    scope = [site["id"] for site in sites]
    state.operator = Operator(
        name=rng.choice(parties["operators"]), warehouses=scope, approval_limit=1500.0, can_close_periods=True
    )
    _add_skus(rng, state, data, 8 + 4 * size)
    sku_ids = sorted(state.skus)
    for wh in state.warehouses.values():
        for sku_id in sku_ids:
            if rng.random() < 0.7:
                qty = rng.choice((0, 5, 12, 24, 40, 60, 80, 120, 150, 240))
                wh.stock[sku_id] = Balance(opening=qty, on_hand=qty)
    current = base.strftime("%Y-%m")
    previous = (base.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    before = (base.replace(day=1) - timedelta(days=32)).strftime("%Y-%m")
    state.periods = {
        before: Period(period=before, status="closed", closed_at=f"{previous}-03T17:00:00Z"),
        previous: Period(period=previous, status="open"),
        current: Period(period=current, status="open"),
    }
    _add_purchase_orders(rng, state, list(parties["suppliers"]), scope, partner["id"], 3 + 3 * size, base)
    _add_orders(rng, state, list(parties["customers"]), scope, 4 + 3 * size, base)
    _add_open_count(rng, state, scope[0], previous, base)
    return state


def _add_skus(rng: random.Random, state: LedgerState, data: Repository, wanted: int) -> None:
    families = list(data.json("catalog.json"))
    rng.shuffle(families)
    numbers = rng.sample(range(10100, 19999), 64)
    for family in families:
        for variant in family["variants"]:
            if len(state.skus) >= wanted:
                return
            sku_id = f"SKU-{numbers[len(state.skus)]}"
            cost = round(family["cost"] * rng.uniform(0.92, 1.08), 2)
            state.skus[sku_id] = Sku(
                sku_id=sku_id,
                name=f"{family['family']} {variant}",
                category=family["category"],
                uom=family["uom"],
                unit_cost=cost,
            )


def _add_purchase_orders(
    rng: random.Random,
    state: LedgerState,
    suppliers: list[str],
    scope: list[str],
    partner_id: str,
    count: int,
    base: datetime,
) -> None:
    sku_ids = sorted(state.skus)
    numbers = rng.sample(range(4400, 4999), count)
    for i, number in enumerate(numbers):
        warehouse_id = partner_id if i == count - 1 else rng.choice(scope)
        status: PoStatus = rng.choice(("open", "open", "partially_received", "received", "cancelled"))
        if i < 2:
            status = ("open", "partially_received")[i]
        lines = {}
        for sku_id in rng.sample(sku_ids, rng.randint(1, 3)):
            ordered = rng.choice((24, 48, 60, 96, 120, 200))
            received = {"received": ordered, "partially_received": ordered // 2}.get(status, 0)
            lines[sku_id] = PoLine(ordered=ordered, received=received)
            if received:
                balance = state.warehouses[warehouse_id].stock.setdefault(sku_id, Balance())
                balance.opening += received
                balance.on_hand += received
        expected = base + timedelta(days=rng.randint(-6, 10))
        po_id = f"PO-{number}"
        state.purchase_orders[po_id] = PurchaseOrder(
            po_id=po_id,
            supplier=rng.choice(suppliers),
            warehouse_id=warehouse_id,
            status=status,
            expected_date=expected.strftime("%Y-%m-%d"),
            lines=lines,
        )


def _add_orders(
    rng: random.Random, state: LedgerState, customers: list[str], scope: list[str], count: int, base: datetime
) -> None:
    numbers = rng.sample(range(20100, 29999), count)
    for i, number in enumerate(numbers):
        warehouse_id = rng.choice(scope)
        stock = state.warehouses[warehouse_id].stock
        stocked = sorted(s for s, b in stock.items() if available(b) > 0)
        if not stocked:
            continue
        lines = {}
        for sku_id in rng.sample(stocked, min(len(stocked), rng.randint(1, 3))):
            units = available(stock[sku_id])
            # Every third order asks for more than the warehouse has: it needs a transfer first.
            lines[sku_id] = units + rng.randint(5, 30) if i % 3 == 2 else rng.randint(1, max(1, units // 3))
        status: OrderStatus = "open"
        if i % 3 == 0 and all(qty <= available(stock[s]) for s, qty in lines.items()):
            for sku_id, qty in lines.items():
                stock[sku_id].reserved += qty
            status = "reserved"
        order_id = f"SO-{number}"
        state.orders[order_id] = SalesOrder(
            order_id=order_id,
            customer=customers[i % len(customers)],
            warehouse_id=warehouse_id,
            status=status,
            ship_by=(base + timedelta(days=rng.randint(1, 7))).strftime("%Y-%m-%d"),
            lines=lines,
        )


def _add_open_count(
    rng: random.Random, state: LedgerState, warehouse_id: str, period: str, base: datetime
) -> None:
    """A December count left half done: it freezes two SKUs and blocks the December close."""
    stock = state.warehouses[warehouse_id].stock
    candidates = sorted(s for s, b in stock.items() if b.on_hand > b.reserved + 4)
    if len(candidates) < 2:
        return
    chosen = rng.sample(candidates, 2)
    lines = {s: CountLine(system_quantity=stock[s].on_hand) for s in sorted(chosen)}
    first = sorted(chosen)[0]
    lines[first].counted = stock[first].on_hand - rng.randint(1, 3)
    count_id = f"CC-{state.next_count:04d}"
    state.next_count += 1
    state.cycle_counts[count_id] = CycleCount(
        count_id=count_id,
        warehouse_id=warehouse_id,
        period=period,
        status="open",
        started_at=iso(base - timedelta(days=2, hours=3)),
        lines=lines,
    )
