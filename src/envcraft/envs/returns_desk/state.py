"""Returns desk: the State models (customers, orders, returns, refunds) and their link invariants."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator

from envcraft import IsoTime, Repository, StateModel, invariant

OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]
ReturnReason = Literal["damaged", "wrong_item", "not_as_described", "no_longer_needed"]
Condition = Literal["unopened", "opened", "damaged"]
RefundMethod = Literal["original_payment", "store_credit"]

REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


@cache
def _catalog_skus() -> frozenset[str]:
    return frozenset(product["sku"] for product in REFERENCE.json("catalog.json"))


def _catalog_sku(sku: str) -> str:
    """Prices, categories and return windows of a line live in the catalog: it must be there."""
    if sku not in _catalog_skus():
        raise ValueError(f"{sku!r} is not a product of data/catalog.json")
    return sku


Sku = Annotated[str, AfterValidator(_catalog_sku)]


class Customer(StateModel):
    customer_id: str
    name: str
    email: str
    tier: Literal["standard", "gold"]
    store_credit_cents: int = 0


class OrderLine(StateModel):
    sku: Sku
    quantity: int
    unit_price_cents: int
    returned_quantity: int = 0  # units covered by a return request, whatever its status


class Order(StateModel):
    order_id: str
    customer_id: str
    status: OrderStatus
    placed_at: IsoTime
    delivered_at: IsoTime | None = None
    lines: list[OrderLine]
    total_cents: int
    refunded_cents: int = 0
    cancel_reason: str | None = None


class ReturnRequest(StateModel):
    return_id: str
    order_id: str
    sku: Sku
    quantity: int
    reason: ReturnReason
    status: Literal["open", "received", "refunded"]
    opened_at: IsoTime
    condition: Condition | None = None
    refund_id: str | None = None


class Refund(StateModel):
    refund_id: str
    order_id: str
    return_id: str | None
    amount_cents: int  # the value of the goods refunded; counts against the order total
    bonus_cents: int = 0  # store-credit bonus paid on top
    method: RefundMethod
    issued_at: IsoTime


class ReturnsDeskState(StateModel):
    customers: dict[str, Customer] = {}
    orders: dict[str, Order] = {}
    returns: dict[str, ReturnRequest] = {}
    refunds: dict[str, Refund] = {}
    next_return_number: int = 1
    next_refund_number: int = 1

    # Each link is checked per record, so a call re-checks only the records it touched and
    # those whose links it changed (envcraft.core.invariants): the tools follow these links
    # without looking.
    @invariant("customers")
    def _customer_filed(self, key: str, customer: Customer) -> None:
        if customer.customer_id != key:
            raise ValueError(f"{key} holds {customer.customer_id!r}")

    @invariant("orders")
    def _order_has_its_customer(self, key: str, order: Order) -> None:
        if order.order_id != key:
            raise ValueError(f"{key} holds {order.order_id!r}")
        if order.customer_id not in self.customers:
            raise ValueError(f"{order.order_id} belongs to unknown customer {order.customer_id}")

    @invariant("returns")
    def _return_names_a_line_of_its_order(self, key: str, request: ReturnRequest) -> None:
        if request.return_id != key:
            raise ValueError(f"{key} holds {request.return_id!r}")
        owner = self.orders.get(request.order_id)
        if owner is None or all(line.sku != request.sku for line in owner.lines):
            raise ValueError(f"{request.return_id} returns {request.sku}, not a line of {request.order_id}")

    @invariant("refunds")
    def _refund_has_its_order_and_return(self, key: str, refund: Refund) -> None:
        if refund.refund_id != key:
            raise ValueError(f"{key} holds {refund.refund_id!r}")
        if refund.order_id not in self.orders or (refund.return_id and refund.return_id not in self.returns):
            raise ValueError(f"{refund.refund_id} refers to an unknown order or return")
