"""Returns desk: an e-commerce support desk that handles orders, returns and refunds."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from envcraft.core import Entity, Environment, Initial, Repository, StateModel, invariant, tool
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoTime, iso, parse_time

OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]
ReturnReason = Literal["damaged", "wrong_item", "not_as_described", "no_longer_needed"]
Condition = Literal["unopened", "opened", "damaged"]
RefundMethod = Literal["original_payment", "store_credit"]

# Reasons that are the seller's fault: no restocking fee, whatever the item's condition.
SELLER_FAULT: frozenset[str] = frozenset({"damaged", "wrong_item"})
REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


@cache
def _catalog_skus() -> frozenset[str]:
    return frozenset(_catalog(REFERENCE))


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


class ReturnsDesk(Environment):
    """Customer support desk of an online shop.

    Look up customers and their orders, cancel orders that have not shipped, open returns
    for delivered items within the category's return window, record returned parcels when
    they arrive at the warehouse, and refund received returns to the original payment method
    or as store credit. Amounts are integer cents.
    """

    State = ReturnsDeskState
    state: ReturnsDeskState
    entities = (
        Entity("customers", "customer", ("{name} ({email})",), vary=("tier",)),
        Entity(
            "orders",
            "order",
            (
                "the order {customer_id} placed on {placed_at:date}",
                "the order {customer_id} placed on {placed_at:when}",
            ),
            id_known=True,
            vary=("placed_at",),
        ),
        Entity("returns", "return", ("the return of {sku} from {order_id}",), id_known=True),
        Entity("refunds", "refund", ("the refund of {amount_cents:cents} for {order_id}",), id_known=True),
    )

    @classmethod
    def rule_violations(cls, state: ReturnsDeskState, files: Mapping[str, str]) -> list[str]:
        """Money and units add up: an order's refunded amount is the sum of its refunds, a line's
        returned units the sum of its returns; an order is delivered after it was placed."""
        del files
        problems = []
        refunded: dict[str, int] = {}
        for refund in state.refunds.values():
            refunded[refund.order_id] = refunded.get(refund.order_id, 0) + refund.amount_cents
        returned: dict[tuple[str, str], int] = {}
        for request in state.returns.values():
            key = (request.order_id, request.sku)
            returned[key] = returned.get(key, 0) + request.quantity
        for order in state.orders.values():
            if order.refunded_cents != refunded.get(order.order_id, 0):
                problems.append(
                    f"{order.order_id} shows {order.refunded_cents} refunded, its refunds say otherwise"
                )
            for line in order.lines:
                if line.returned_quantity != returned.get((order.order_id, line.sku), 0):
                    problems.append(
                        f"{order.order_id} line {line.sku}: returned units do not match its returns"
                    )
            if (order.status == "delivered") != (order.delivered_at is not None):
                problems.append(f"{order.order_id} is {order.status} with delivered_at {order.delivered_at}")
            if order.delivered_at is not None and order.delivered_at < order.placed_at:
                problems.append(f"{order.order_id} was delivered before it was placed")
        return problems

    # -- reads ---------------------------------------------------------------------------
    @tool(read_only=True, produces=["customer_id"], goal="the customer's email address is {email}")
    def get_customer(self, email: str) -> dict[str, Any]:
        """Find a customer by email address.

        Args:
            email: The customer's email address (case does not matter).

        Returns:
            The customer's id, name, tier, store credit balance and order ids.
        """
        wanted = email.strip().lower()
        for customer in self.state.customers.values():
            if customer.email == wanted:
                orders = sorted(
                    o.order_id for o in self.state.orders.values() if o.customer_id == customer.customer_id
                )
                return {**customer.model_dump(), "order_ids": orders}
        self.fail("not_found", f"no customer with email '{email}'", email=email)

    @tool(read_only=True, consumes=["customer_id"], produces=["order_id"])
    def list_orders(self, customer_id: str, status: OrderStatus | None = None) -> dict[str, Any]:
        """List a customer's orders, oldest first.

        Args:
            customer_id: The customer's id, e.g. CUS-1004.
            status: Only orders in this status; all orders when omitted.

        Returns:
            Order summaries: id, status, placement date, total and refunded amount.
        """
        if customer_id not in self.state.customers:
            self.fail("not_found", f"no customer '{customer_id}'", customer_id=customer_id)
        orders = [
            {
                "order_id": o.order_id,
                "status": o.status,
                "placed_at": o.placed_at,
                "total_cents": o.total_cents,
                "refunded_cents": o.refunded_cents,
            }
            for o in sorted(self.state.orders.values(), key=lambda o: (o.placed_at, o.order_id))
            if o.customer_id == customer_id and (status is None or o.status == status)
        ]
        return {"customer_id": customer_id, "orders": orders, "count": len(orders)}

    @tool(read_only=True, consumes=["order_id"], produces=["sku", "return_id", "refund_id"])
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Show an order with its lines, return eligibility, returns and refunds.

        Args:
            order_id: The order id, e.g. ORD-100012.

        Returns:
            The order, each line with product name, category, how many units can still be
            returned and the return deadline (delivered orders only), plus its returns and refunds.
        """
        order = self._order(order_id)
        lines = []
        for line in order.lines:
            product = self._product(line.sku)
            deadline = self._return_deadline(order, product["category"])
            open_window = order.status == "delivered" and deadline is not None and self.now() <= deadline
            lines.append(
                {
                    **line.model_dump(),
                    "name": product["name"],
                    "category": product["category"],
                    "returnable_quantity": line.quantity - line.returned_quantity if open_window else 0,
                    "return_deadline": iso(deadline) if deadline else None,
                }
            )
        returns = [r.model_dump() for r in self.state.returns.values() if r.order_id == order_id]
        refunds = [r.model_dump() for r in self.state.refunds.values() if r.order_id == order_id]
        return {**order.model_dump(exclude={"lines"}), "lines": lines, "returns": returns, "refunds": refunds}

    @tool(read_only=True, produces=["sku"])
    def search_catalog(
        self, query: str = "", categories: list[str] | None = None, max_results: int = 10
    ) -> dict[str, Any]:
        """Search the product catalog by name and category.

        Args:
            query: Words that must all appear in the product name (case does not matter).
            categories: Only products in these categories (electronics, apparel, home, books,
                grocery, personal_care); every category when omitted.
            max_results: Maximum number of products to return (1 to 50).

        Returns:
            Matching products with sku, name, category, price and return policy.
        """
        policies = self.data.json("policies.json")["categories"]
        unknown = sorted(set(categories or []) - set(policies))
        if unknown:
            self.fail(
                "invalid_argument",
                f"unknown categories {unknown}; known: {sorted(policies)}",
                field="categories",
            )
        if not 1 <= max_results <= 50:
            self.fail("invalid_argument", "max_results must be between 1 and 50", field="max_results")
        words = query.lower().split()
        found = [
            {
                **product,
                "returnable": policies[product["category"]]["returnable"],
                "window_days": policies[product["category"]]["window_days"],
            }
            for product in self.data.json("catalog.json")
            if (not categories or product["category"] in categories)
            and all(w in product["name"].lower() for w in words)
        ]
        return {"products": found[:max_results], "count": len(found)}

    # -- writes --------------------------------------------------------------------------
    @tool(
        consumes=["order_id"],
        produces=["refund_id"],
        goal="cancel {order_id} and refund it in full; the reason is {reason}",
    )
    def cancel_order(self, order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet and refund it in full.

        Args:
            order_id: The order id.
            reason: Why the customer cancels, in a few words.

        Returns:
            The cancelled order id and the refund issued to the original payment method.
        """
        order = self._order(order_id)
        if order.status != "placed":
            hint = " Open a return once it is delivered." if order.status in ("shipped", "delivered") else ""
            self.fail(
                "invalid_transition",
                f"order {order_id} is {order.status}; only placed orders can be cancelled.{hint}",
                order_id=order_id,
                status=order.status,
            )
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        order.status = "cancelled"
        order.cancel_reason = reason.strip()
        refund = self._refund(order, None, order.total_cents - order.refunded_cents, "original_payment")
        return {"order_id": order_id, "status": order.status, "refund": refund.model_dump()}

    @tool(
        consumes=["order_id", "sku"],
        produces=["return_id"],
        goal="open a return for {quantity} unit(s) of {sku} from {order_id}, because "
        "{reason|damaged=they arrived damaged|wrong_item=the wrong item was sent|"
        "not_as_described=they are not as described|no_longer_needed=the customer no longer needs them}",
    )
    def open_return(self, order_id: str, sku: str, quantity: int, reason: ReturnReason) -> dict[str, Any]:
        """Open a return request for units of one line of a delivered order.

        Args:
            order_id: The order id.
            sku: The product's sku as listed on the order.
            quantity: How many units the customer sends back (at least 1).
            reason: Why the items come back.

        Returns:
            The new return id and its status ("open": waiting for the parcel).
        """
        order = self._order(order_id)
        if order.status != "delivered":
            self.fail(
                "invalid_transition",
                f"order {order_id} is {order.status}; only delivered orders can be returned",
                order_id=order_id,
                status=order.status,
            )
        line = next((ln for ln in order.lines if ln.sku == sku), None)
        if line is None:
            self.fail(
                "not_found",
                f"sku {sku} is not on order {order_id}",
                order_id=order_id,
                sku=sku,
                skus=[ln.sku for ln in order.lines],
            )
        category = self._product(sku)["category"]
        deadline = self._return_deadline(order, category)
        if deadline is None:
            self.fail(
                "permission_denied",
                f"{category} items cannot be returned",
                sku=sku,
                product_category=category,
            )
        if self.now() > deadline:
            self.fail(
                "invalid_transition",
                f"the return window for {sku} closed on {iso(deadline)}",
                sku=sku,
                return_deadline=iso(deadline),
            )
        available = line.quantity - line.returned_quantity
        if not 1 <= quantity <= available:
            self.fail(
                "invalid_argument",
                f"quantity must be between 1 and {available} for {sku}",
                field="quantity",
                returnable_quantity=available,
            )
        line.returned_quantity += quantity
        return_id = f"RMA-{self.state.next_return_number:05d}"
        self.state.next_return_number += 1
        self.state.returns[return_id] = ReturnRequest(
            return_id=return_id,
            order_id=order_id,
            sku=sku,
            quantity=quantity,
            reason=reason,
            status="open",
            opened_at=iso(self.now()),
        )
        return {
            "return_id": return_id,
            "status": "open",
            "order_id": order_id,
            "sku": sku,
            "quantity": quantity,
        }

    @tool(
        consumes=["return_id"],
        goal="record that the parcel for {return_id} arrived at the warehouse "
        "{condition|unopened=unopened|opened=opened|damaged=damaged}",
    )
    def receive_return(self, return_id: str, condition: Condition) -> dict[str, Any]:
        """Record that a returned parcel arrived at the warehouse, with the items' condition.

        Args:
            return_id: The return id, e.g. RMA-00003.
            condition: The condition the items arrived in.

        Returns:
            The return id, its new status ("received") and the refund it qualifies for.
        """
        request = self._return(return_id)
        if request.status != "open":
            self.fail(
                "invalid_transition",
                f"return {return_id} is already {request.status}",
                return_id=return_id,
                status=request.status,
            )
        request.condition = condition
        request.status = "received"
        return {
            "return_id": return_id,
            "status": "received",
            "condition": condition,
            "refundable_cents": self._refund_amount(request),
        }

    @tool(
        consumes=["return_id"],
        produces=["refund_id"],
        goal="refund {return_id}[ {method|original_payment=to the original payment method|"
        "store_credit=as store credit}]",
    )
    def issue_refund(self, return_id: str, method: RefundMethod = "original_payment") -> dict[str, Any]:
        """Refund a received return, once.

        A restocking fee applies to opened items returned for a reason that is not the seller's
        fault. Store credit adds a bonus on top of the refund.

        Args:
            return_id: The return id.
            method: Where the money goes.

        Returns:
            The refund (id, amount and store-credit bonus in cents, method) and the customer's
            store credit balance.
        """
        request = self._return(return_id)
        if request.status == "refunded":
            self.fail(
                "conflict",
                f"return {return_id} was already refunded ({request.refund_id})",
                return_id=return_id,
                refund_id=request.refund_id,
            )
        if request.status != "received":
            self.fail(
                "invalid_transition",
                f"return {return_id} has not been received yet",
                return_id=return_id,
                status=request.status,
            )
        order = self._order(request.order_id)
        amount = self._refund_amount(request)
        if order.refunded_cents + amount > order.total_cents:
            self.fail(
                "conflict",
                f"refund would exceed the order total of {order.order_id}",
                order_id=order.order_id,
                refunded_cents=order.refunded_cents,
            )
        refund = self._refund(order, request, amount, method)
        customer = self.state.customers[order.customer_id]
        return {**refund.model_dump(), "store_credit_cents": customer.store_credit_cents}

    # -- helpers -------------------------------------------------------------------------
    def _order(self, order_id: str) -> Order:
        order = self.state.orders.get(order_id)
        if order is None:
            self.fail("not_found", f"no order '{order_id}'", order_id=order_id)
        return order

    def _return(self, return_id: str) -> ReturnRequest:
        request = self.state.returns.get(return_id)
        if request is None:
            self.fail("not_found", f"no return '{return_id}'", return_id=return_id)
        return request

    def _product(self, sku: str) -> Any:
        return _catalog(self.data)[sku]

    def _return_deadline(self, order: Order, category: str) -> datetime | None:
        return _deadline(self.data, order, category)

    def _refund_amount(self, request: ReturnRequest) -> int:
        order = self.state.orders[request.order_id]
        return _refund_amount(self.data, order, request)

    def _refund(
        self, order: Order, request: ReturnRequest | None, amount: int, method: RefundMethod
    ) -> Refund:
        return _make_refund(self.data, self.state, order, request, amount, method, iso(self.now()))

    # -- initial states ------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A shop with ``4 * size`` customers, their orders, and returns in every status."""
        repo = data if data is not None else (cls.package.data if cls.package else Repository(None))
        base = cls.package.clock.base_time if cls.package else DEFAULT_BASE_TIME
        return Initial(state=_generate(random.Random(seed), max(1, size), repo, base))


# -- pure rules shared by the tools and the generator ------------------------------------------
def _catalog(data: Repository) -> dict[str, Any]:
    return {p["sku"]: p for p in data.json("catalog.json")}


def _deadline(data: Repository, order: Order, category: str) -> datetime | None:
    policy = data.json("policies.json")["categories"][category]
    if not policy["returnable"] or order.delivered_at is None:
        return None
    return parse_time(order.delivered_at) + timedelta(days=policy["window_days"])


def _refund_amount(data: Repository, order: Order, request: ReturnRequest) -> int:
    line = next(ln for ln in order.lines if ln.sku == request.sku)  # the State model ensures it is there
    gross = line.unit_price_cents * request.quantity
    if request.condition != "opened" or request.reason in SELLER_FAULT:
        return gross
    category = _catalog(data)[request.sku]["category"]
    fee_pct = data.json("policies.json")["categories"][category]["opened_restocking_fee_pct"]
    return gross - gross * fee_pct // 100


def _make_refund(
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


def _generate(rng: random.Random, size: int, data: Repository, base: datetime) -> ReturnsDeskState:
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
        _make_refund(data, state, order, None, order.total_cents, "original_payment", iso(placed))
    elif status == "delivered" and delivered is not None and rng.random() < 0.3:
        _add_past_return(rng, state, order, data, delivered)


def _add_past_return(
    rng: random.Random, state: ReturnsDeskState, order: Order, data: Repository, delivered: datetime
) -> None:
    """A return already under way for a delivered order, in a random stage of its life."""
    line = rng.choice(order.lines)
    category = _catalog(data)[line.sku]["category"]
    if _deadline(data, order, category) is None:
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
        amount = _refund_amount(data, order, request)
        _make_refund(data, state, order, request, amount, method, iso(delivered + timedelta(hours=20)))
