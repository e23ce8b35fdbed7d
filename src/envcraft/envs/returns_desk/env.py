"""Returns desk: an e-commerce support desk that handles orders, returns and refunds."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from envcraft import Entity, Environment, Initial, Job, Repository, iso, tool

from .generate import generate_state
from .rules import catalog, make_refund, refund_amount, return_deadline
from .state import (
    Condition,
    OrderStatus,
    RefundMethod,
    ReturnReason,
    ReturnRequest,
    ReturnsDeskState,
)


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

    jobs = (
        Job(
            "take back and refund items at the counter",
            ("open_return", "receive_return", "issue_refund"),
            "the customer brought back {quantity} unit(s) of {sku} from {order_id} "
            "{reason|damaged=that arrived damaged|wrong_item=that were the wrong item|"
            "not_as_described=that are not as described|no_longer_needed=they no longer need}. The "
            "parcel came back {condition|unopened=unopened|opened=opened|damaged=damaged}: take the return "
            "and refund it"
            "[ {method|original_payment=to the original payment method|store_credit=as store credit}]",
        ),
        Job(
            "settle an arrived return",
            ("receive_return", "issue_refund"),
            "the parcel for {return_id} has arrived "
            "{condition|unopened=unopened|opened=opened|damaged=damaged}: settle it[ "
            "{method|original_payment=to the original payment method|store_credit=as store credit}]",
        ),
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
    def get_customer(self, email: str = "", full_name: str = "") -> dict[str, Any]:
        """Find a customer by email address, or by full name when the email is not known.

        Args:
            email: The customer's email address (case does not matter).
            full_name: The customer's full name, as "Wei Larsen" (case and spacing do not matter).
                Two customers of the same name are both listed, with their emails, and neither is
                chosen; beside an email, it must be that customer's name.

        Returns:
            The customer's id, name, tier, store credit balance and order ids.
        """
        if email.strip():
            wanted = email.strip().lower()
            found = [c for c in self.state.customers.values() if c.email == wanted]
            if not found:
                self.fail("not_found", f"no customer with email '{email}'", email=email)
            if (
                full_name.strip()
                and " ".join(full_name.split()).lower() != " ".join(found[0].name.split()).lower()
            ):
                self.fail("invalid_argument", f"{email} is not {full_name}'s email", field="full_name")
        elif full_name.strip():
            wanted = " ".join(full_name.split()).lower()
            found = [c for c in self.state.customers.values() if " ".join(c.name.split()).lower() == wanted]
            if not found:
                self.fail("not_found", f"no customer named '{full_name}'", field="full_name")
            if len(found) > 1:
                self.fail(
                    "conflict",
                    f"{len(found)} customers are named '{full_name}'; ask which email address is theirs",
                    candidates=[{"customer_id": c.customer_id, "email": c.email} for c in found],
                )
        else:
            self.fail("missing_field", "give the customer's email or full name", field="email")
        customer = found[0]
        mine = customer.customer_id
        orders = sorted(o.order_id for o in self.state.orders.values() if o.customer_id == mine)
        return {**customer.model_dump(), "order_ids": orders}

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
        order = self.lookup(self.state.orders, order_id, "order", order_id=order_id)
        lines = []
        for line in order.lines:
            product = catalog(self.data)[line.sku]
            deadline = return_deadline(self.data, order, product["category"])
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
        examples={
            "reason": (
                "ordered the wrong size",
                "found a better price elsewhere",
                "the delivery date is too late",
            )
        },
    )
    def cancel_order(self, order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet and refund it in full.

        Args:
            order_id: The order id.
            reason: Why the customer cancels, in a few words.

        Returns:
            The cancelled order id and the refund issued to the original payment method.
        """
        order = self.lookup(self.state.orders, order_id, "order", order_id=order_id)
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
        refund = make_refund(
            self.data,
            self.state,
            order,
            None,
            order.total_cents - order.refunded_cents,
            "original_payment",
            iso(self.now()),
        )
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
        order = self.lookup(self.state.orders, order_id, "order", order_id=order_id)
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
        category = catalog(self.data)[sku]["category"]
        deadline = return_deadline(self.data, order, category)
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
        request = self.lookup(self.state.returns, return_id, "return", return_id=return_id)
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
            "refundable_cents": refund_amount(self.data, self.state.orders[request.order_id], request),
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
        request = self.lookup(self.state.returns, return_id, "return", return_id=return_id)
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
        order = self.lookup(self.state.orders, request.order_id, "order", order_id=request.order_id)
        amount = refund_amount(self.data, order, request)
        if order.refunded_cents + amount > order.total_cents:
            self.fail(
                "conflict",
                f"refund would exceed the order total of {order.order_id}",
                order_id=order.order_id,
                refunded_cents=order.refunded_cents,
            )
        refund = make_refund(self.data, self.state, order, request, amount, method, iso(self.now()))
        customer = self.state.customers[order.customer_id]
        return {**refund.model_dump(), "store_credit_cents": customer.store_credit_cents}

    # -- initial states ------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A shop with ``4 * size`` customers, their orders, and returns in every status."""
        state = generate_state(random.Random(seed), max(1, size), cls.repository(data), cls.base_time())
        return Initial(state=state)
