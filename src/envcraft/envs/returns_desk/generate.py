"""Returns desk: the seeded S0 generator (customers, their orders, returns in every stage)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, iso

from .rules import catalog, make_refund, refund_amount, return_deadline
from .state import Customer, Order, OrderLine, OrderStatus, RefundMethod, ReturnRequest, ReturnsDeskState

FIRST_NAMES = (
    "Amara",
    "Bastian",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiroshi",
    "Ines",
    "Jamal",
    "Keira",
    "Lukas",
    "Maya",
    "Nikhil",
    "Olivia",
    "Pablo",
    "Quinn",
    "Rosa",
    "Samuel",
    "Tamsin",
    "Umar",
    "Valentina",
    "Wei",
    "Ximena",
    "Yusuf",
    "Zoe",
)
LAST_NAMES = (
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Petrov",
    "Garcia",
    "Haddad",
    "Nguyen",
    "Tanaka",
    "Silva",
    "Brooks",
    "Kowalski",
    "Fischer",
    "Patel",
    "Reyes",
    "O'Brien",
    "Schmidt",
    "Adeyemi",
    "Rossi",
    "Chen",
    "Dubois",
    "Novak",
    "Larsen",
)


def generate_state(rng: random.Random, size: int, data: Repository, base: datetime) -> ReturnsDeskState:
    state = ReturnsDeskState()
    catalog = list(data.json("catalog.json"))
    emails: set[str] = set()
    for i in range(4 * size):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        customer_id = f"CUS-{1001 + i}"
        handle = f"{first}.{last}".lower().replace("'", "")
        email = f"{handle}@example.com"
        if email in emails:
            email = f"{handle}{i}@example.com"
        emails.add(email)
        state.customers[customer_id] = Customer(
            customer_id=customer_id,
            name=f"{first} {last}",
            email=email,
            tier="gold" if rng.random() < 0.2 else "standard",
        )
        for _ in range(rng.randint(1, 4)):
            _add_order(rng, state, customer_id, catalog, data, base)
    return state


def _add_order(
    rng: random.Random,
    state: ReturnsDeskState,
    customer_id: str,
    catalog: list[Any],
    data: Repository,
    base: datetime,
) -> None:
    order_id = f"ORD-{100001 + len(state.orders)}"
    products = rng.sample(catalog, rng.randint(1, 3))
    lines = [
        OrderLine(sku=p["sku"], quantity=rng.choice((1, 1, 1, 2, 3)), unit_price_cents=p["price_cents"])
        for p in products
    ]
    status: OrderStatus = rng.choices(("placed", "shipped", "delivered", "cancelled"), (2, 2, 8, 1))[0]
    age_days = {"placed": rng.randint(0, 1), "shipped": rng.randint(2, 5)}.get(status, rng.randint(6, 80))
    placed = base - timedelta(days=age_days, hours=rng.randint(1, 20))
    delivered = placed + timedelta(days=rng.randint(2, 5)) if status == "delivered" else None
    order = Order(
        order_id=order_id,
        customer_id=customer_id,
        status=status,
        placed_at=iso(placed),
        delivered_at=iso(delivered) if delivered else None,
        lines=lines,
        total_cents=sum(ln.unit_price_cents * ln.quantity for ln in lines),
    )
    state.orders[order_id] = order
    if status == "cancelled":
        order.cancel_reason = rng.choice(("ordered by mistake", "found it cheaper", "delivery too slow"))
        make_refund(data, state, order, None, order.total_cents, "original_payment", iso(placed))
    elif status == "delivered" and delivered is not None and rng.random() < 0.3:
        _add_past_return(rng, state, order, data, delivered)


def _add_past_return(
    rng: random.Random, state: ReturnsDeskState, order: Order, data: Repository, delivered: datetime
) -> None:
    """A return already under way for a delivered order, in a random stage of its life."""
    line = rng.choice(order.lines)
    category = catalog(data)[line.sku]["category"]
    if return_deadline(data, order, category) is None:
        return
    return_id = f"RMA-{state.next_return_number:05d}"
    state.next_return_number += 1
    line.returned_quantity = line.quantity
    request = ReturnRequest(
        return_id=return_id,
        order_id=order.order_id,
        sku=line.sku,
        quantity=line.quantity,
        reason=rng.choice(("damaged", "wrong_item", "not_as_described", "no_longer_needed")),
        status="open",
        opened_at=iso(delivered + timedelta(hours=12)),
    )
    state.returns[return_id] = request
    stage = rng.choice(("open", "received", "refunded"))
    if stage != "open":
        request.condition = rng.choice(("unopened", "opened", "damaged"))
        request.status = "received"
    if stage == "refunded":
        method: RefundMethod = rng.choice(("original_payment", "store_credit"))
        amount = refund_amount(data, order, request)
        make_refund(data, state, order, request, amount, method, iso(delivered + timedelta(hours=20)))
