"""Returns desk: the rules the tools and the generator share (return windows, refund amounts,
recording a refund), as functions over the State and the package's reference data."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, parse_time

from .state import Order, Refund, RefundMethod, ReturnRequest, ReturnsDeskState

# Reasons that are the seller's fault: no restocking fee, whatever the item's condition.
SELLER_FAULT: frozenset[str] = frozenset({"damaged", "wrong_item"})


def catalog(data: Repository) -> dict[str, Any]:
    return {p["sku"]: p for p in data.json("catalog.json")}


def return_deadline(data: Repository, order: Order, category: str) -> datetime | None:
    policy = data.json("policies.json")["categories"][category]
    if not policy["returnable"] or order.delivered_at is None:
        return None
    return parse_time(order.delivered_at) + timedelta(days=policy["window_days"])


def refund_amount(data: Repository, order: Order, request: ReturnRequest) -> int:
    line = next(ln for ln in order.lines if ln.sku == request.sku)  # the State model ensures it is there
    gross = line.unit_price_cents * request.quantity
    if request.condition != "opened" or request.reason in SELLER_FAULT:
        return gross
    category = catalog(data)[request.sku]["category"]
    fee_pct = data.json("policies.json")["categories"][category]["opened_restocking_fee_pct"]
    return gross - gross * fee_pct // 100


def make_refund(
    data: Repository,
    state: ReturnsDeskState,
    order: Order,
    request: ReturnRequest | None,
    amount: int,
    method: RefundMethod,
    when: str,
) -> Refund:
    """Record a refund and keep the order, the return and the customer's credit consistent."""
    refund_id = f"RF-{state.next_refund_number:05d}"
    state.next_refund_number += 1
    bonus = 0
    if method == "store_credit":
        bonus = amount * data.json("policies.json")["store_credit_bonus_pct"] // 100
        state.customers[order.customer_id].store_credit_cents += amount + bonus
    refund = Refund(
        refund_id=refund_id,
        order_id=order.order_id,
        return_id=request.return_id if request else None,
        amount_cents=amount,
        bonus_cents=bonus,
        method=method,
        issued_at=when,
    )
    state.refunds[refund_id] = refund
    order.refunded_cents += amount
    if request is not None:
        request.status = "refunded"
        request.refund_id = refund_id
    return refund
