"""The returns_desk example environment: its rules, its generator, and its invariants."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcraft.core import Session, is_error, load_package
from envcraft.core.lint import lint_package

ENV = "returns_desk"


def _order(order_id: str, status: str, lines: list[tuple[str, int, int]], **extra: Any) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "customer_id": "CUS-1",
        "status": status,
        "placed_at": "2025-12-20T10:00:00Z",
        "lines": [{"sku": s, "quantity": q, "unit_price_cents": p} for s, q, p in lines],
        "total_cents": sum(q * p for _, q, p in lines),
        **extra,
    }


# The clock starts at 2026-01-05T09:00Z (envcraft.toml) and ticks a minute per call.
STATE = {
    "customers": {
        "CUS-1": {
            "customer_id": "CUS-1",
            "name": "Ines Silva",
            "email": "ines.silva@example.com",
            "tier": "gold",
        },
    },
    "orders": {
        "ORD-1": _order(
            "ORD-1",
            "delivered",
            [("EL-1001", 2, 7999), ("GR-5001", 1, 2600)],
            delivered_at="2025-12-30T15:00:00Z",
        ),
        "ORD-2": _order("ORD-2", "delivered", [("BK-4001", 1, 2799)], delivered_at="2025-12-01T15:00:00Z"),
        "ORD-3": _order("ORD-3", "shipped", [("HM-3004", 1, 4599)]),
        "ORD-4": _order("ORD-4", "placed", [("AP-2003", 3, 2400)]),
        "ORD-5": _order("ORD-5", "delivered", [("AP-2002", 1, 14500)], delivered_at="2026-01-02T15:00:00Z"),
    },
}


@pytest.fixture
def desk() -> Session:
    return Session.memory(ENV, state=STATE)


def _category(result: dict[str, Any]) -> str:
    assert is_error(result), result
    return str(result["error"]["category"])


def test_reads(desk: Session) -> None:
    customer = desk.call("get_customer", {"email": "  Ines.Silva@EXAMPLE.com"})
    assert customer["customer_id"] == "CUS-1" and customer["order_ids"] == [
        "ORD-1",
        "ORD-2",
        "ORD-3",
        "ORD-4",
        "ORD-5",
    ]
    assert _category(desk.call("get_customer", {"email": "nobody@example.com"})) == "not_found"
    assert desk.call("get_customer", {"full_name": " ines  SILVA"})["customer_id"] == "CUS-1"
    assert _category(desk.call("get_customer", {"full_name": "Ines"})) == "not_found"  # the full name
    assert _category(desk.call("get_customer", {})) == "missing_field"
    both = {"email": "ines.silva@example.com", "full_name": "Ines Silva"}
    assert desk.call("get_customer", both)["customer_id"] == "CUS-1"
    assert _category(desk.call("get_customer", {**both, "full_name": "Wei Larsen"})) == "invalid_argument"


def test_a_customer_found_by_a_name_two_people_share_is_not_chosen() -> None:
    """A user who names the customer ("the order Wei Larsen placed on January 5") leaves the
    agent no email to look up: rounds 25 and 26 guessed one from the README's example. By name,
    a namesake is listed, never picked."""
    twin = {**STATE["customers"]["CUS-1"], "customer_id": "CUS-2", "email": "ines.silva@example.org"}
    desk = Session.memory(ENV, state={**STATE, "customers": {**STATE["customers"], "CUS-2": twin}})
    result = desk.call("get_customer", {"full_name": "Ines Silva"})
    assert _category(result) == "conflict"
    assert [c["customer_id"] for c in result["error"]["candidates"]] == ["CUS-1", "CUS-2"]
    assert desk.call("get_customer", {"email": "ines.silva@example.org"})["customer_id"] == "CUS-2"
    shipped = desk.call("list_orders", {"customer_id": "CUS-1", "status": "shipped"})
    assert [o["order_id"] for o in shipped["orders"]] == ["ORD-3"]
    order = desk.call("get_order", {"order_id": "ORD-1"})
    lines = {line["sku"]: line for line in order["lines"]}
    assert lines["EL-1001"]["returnable_quantity"] == 2
    assert lines["EL-1001"]["return_deadline"] == "2026-01-29T15:00:00Z"
    assert lines["GR-5001"]["returnable_quantity"] == 0 and lines["GR-5001"]["return_deadline"] is None
    late = desk.call("get_order", {"order_id": "ORD-2"})["lines"][0]
    assert late["returnable_quantity"] == 0, "the books window (14 days) closed on 2025-12-15"
    assert _category(desk.call("search_catalog", {"max_results": 0})) == "invalid_argument"
    books = desk.call("search_catalog", {"categories": ["books"], "max_results": 2})
    assert books["count"] == 4 and len(books["products"]) == 2


def test_full_return_with_restocking_fee_and_single_refund(desk: Session) -> None:
    opened = desk.call(
        "open_return", {"order_id": "ORD-1", "sku": "EL-1001", "quantity": 2, "reason": "no_longer_needed"}
    )
    rid = opened["return_id"]
    assert (rid, opened["status"]) == ("RMA-00001", "open")
    assert _category(desk.call("issue_refund", {"return_id": rid})) == "invalid_transition"
    received = desk.call("receive_return", {"return_id": rid, "condition": "opened"})
    assert received["refundable_cents"] == 15998 - 15998 * 15 // 100  # electronics: 15% when opened
    assert (
        _category(desk.call("receive_return", {"return_id": rid, "condition": "opened"}))
        == "invalid_transition"
    )
    refund = desk.call("issue_refund", {"return_id": rid})
    assert (refund["refund_id"], refund["amount_cents"], refund["bonus_cents"]) == ("RF-00001", 13599, 0)
    again = desk.call("issue_refund", {"return_id": rid, "method": "store_credit"})
    assert _category(again) == "conflict" and again["error"]["refund_id"] == "RF-00001"
    state = desk.state()
    assert state["orders"]["ORD-1"]["refunded_cents"] == 13599
    assert state["customers"]["CUS-1"]["store_credit_cents"] == 0


def test_seller_fault_waives_the_fee_and_store_credit_adds_a_bonus(desk: Session) -> None:
    rid = desk.call(
        "open_return", {"order_id": "ORD-1", "sku": "EL-1001", "quantity": 1, "reason": "damaged"}
    )["return_id"]
    desk.call("receive_return", {"return_id": rid, "condition": "opened"})
    refund = desk.call("issue_refund", {"return_id": rid, "method": "store_credit"})
    assert (refund["amount_cents"], refund["bonus_cents"]) == (7999, 399)
    assert refund["store_credit_cents"] == 8398


@pytest.mark.parametrize(
    ("args", "category"),
    [
        ({"order_id": "ORD-3", "sku": "HM-3004", "quantity": 1}, "invalid_transition"),  # only shipped
        ({"order_id": "ORD-1", "sku": "GR-5001", "quantity": 1}, "permission_denied"),  # grocery
        ({"order_id": "ORD-2", "sku": "BK-4001", "quantity": 1}, "invalid_transition"),  # window closed
        ({"order_id": "ORD-1", "sku": "EL-1001", "quantity": 3}, "invalid_argument"),  # only 2 bought
        ({"order_id": "ORD-1", "sku": "EL-1001", "quantity": 0}, "invalid_argument"),
        ({"order_id": "ORD-1", "sku": "AP-2003", "quantity": 1}, "not_found"),  # not on this order
        ({"order_id": "ORD-404", "sku": "EL-1001", "quantity": 1}, "not_found"),
    ],
)
def test_return_preconditions(desk: Session, args: dict[str, Any], category: str) -> None:
    before = desk.state_hash()
    assert _category(desk.call("open_return", {**args, "reason": "wrong_item"})) == category
    assert desk.state_hash() == before


def test_units_cannot_be_returned_twice(desk: Session) -> None:
    desk.call("open_return", {"order_id": "ORD-5", "sku": "AP-2002", "quantity": 1, "reason": "wrong_item"})
    second = desk.call(
        "open_return", {"order_id": "ORD-5", "sku": "AP-2002", "quantity": 1, "reason": "damaged"}
    )
    assert _category(second) == "invalid_argument" and second["error"]["returnable_quantity"] == 0


def test_cancel_only_placed_orders(desk: Session) -> None:
    assert (
        _category(desk.call("cancel_order", {"order_id": "ORD-3", "reason": "too slow"}))
        == "invalid_transition"
    )
    assert _category(desk.call("cancel_order", {"order_id": "ORD-4", "reason": "   "})) == "invalid_argument"
    cancelled = desk.call("cancel_order", {"order_id": "ORD-4", "reason": "ordered by mistake"})
    assert cancelled["refund"]["amount_cents"] == 7200
    assert (
        _category(desk.call("cancel_order", {"order_id": "ORD-4", "reason": "again"})) == "invalid_transition"
    )
    order = desk.state()["orders"]["ORD-4"]
    assert (order["status"], order["refunded_cents"], order["cancel_reason"]) == (
        "cancelled",
        7200,
        "ordered by mistake",
    )


def _check_invariants(state: dict[str, Any]) -> None:
    """What must hold in every reachable state (and in every generated one)."""
    catalog = {p["sku"] for p in load_package(ENV).data.json("catalog.json")}
    returned: dict[tuple[str, str], int] = defaultdict(int)
    for request in state["returns"].values():
        returned[(request["order_id"], request["sku"])] += request["quantity"]
        assert (request["status"] == "refunded") == (request["refund_id"] is not None)
        if request["refund_id"]:
            assert state["refunds"][request["refund_id"]]["return_id"] == request["return_id"]
    refunded: dict[str, int] = defaultdict(int)
    credit: dict[str, int] = defaultdict(int)
    for refund in state["refunds"].values():
        refunded[refund["order_id"]] += refund["amount_cents"]
        if refund["method"] == "store_credit":
            credit[state["orders"][refund["order_id"]]["customer_id"]] += (
                refund["amount_cents"] + refund["bonus_cents"]
            )
    for order_id, order in state["orders"].items():
        assert order["customer_id"] in state["customers"]
        assert order["total_cents"] == sum(ln["quantity"] * ln["unit_price_cents"] for ln in order["lines"])
        assert 0 <= order["refunded_cents"] == refunded[order_id] <= order["total_cents"]
        for line in order["lines"]:
            assert line["sku"] in catalog
            assert 0 <= line["returned_quantity"] == returned[(order_id, line["sku"])] <= line["quantity"]
        if order["status"] == "cancelled":
            assert order["refunded_cents"] == order["total_cents"]
    for customer_id, customer in state["customers"].items():
        assert customer["store_credit_cents"] == credit[customer_id]
    numbers = [int(r[4:]) for r in state["returns"]]
    assert state["next_return_number"] > max(numbers, default=0)
    assert state["next_refund_number"] > max((int(r[3:]) for r in state["refunds"]), default=0)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_generated_states_are_realistic_consistent_and_seeded(seed: int) -> None:
    state = Session.memory(ENV, seed=seed, size=3).state()
    assert state == Session.memory(ENV, seed=seed, size=3).state()
    assert state != Session.memory(ENV, seed=seed + 100, size=3).state()
    assert len(state["customers"]) == 12
    emails = [c["email"] for c in state["customers"].values()]
    assert len(set(emails)) == len(emails)
    assert all(re.fullmatch(r"[a-z]+\.[a-z]+\d*@example\.com", e) for e in emails)
    assert all(order["placed_at"] < "2026-01-05T09:00:00Z" for order in state["orders"].values())
    assert {o["status"] for o in state["orders"].values()} >= {"placed", "shipped", "delivered"}
    _check_invariants(state)


CALLS = st.sampled_from(["open_return", "receive_return", "issue_refund", "cancel_order", "get_order"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_invariants_hold_along_random_workflows(data: st.DataObject) -> None:
    session = Session.memory(ENV, seed=data.draw(st.integers(0, 5)), size=1)
    state = session.state()
    orders, returns = sorted(state["orders"]), sorted(state["returns"]) or ["RMA-00001"]
    for _ in range(data.draw(st.integers(1, 25))):
        tool = data.draw(CALLS)
        order_id = data.draw(st.sampled_from(orders))
        skus = [ln["sku"] for ln in state["orders"][order_id]["lines"]]
        return_ids = [*returns, f"RMA-{session.state()['next_return_number'] - 1:05d}"]
        args = {
            "open_return": {
                "order_id": order_id,
                "sku": data.draw(st.sampled_from(skus)),
                "quantity": data.draw(st.integers(0, 3)),
                "reason": data.draw(st.sampled_from(["damaged", "no_longer_needed"])),
            },
            "receive_return": {
                "return_id": data.draw(st.sampled_from(return_ids)),
                "condition": data.draw(st.sampled_from(["unopened", "opened", "damaged"])),
            },
            "issue_refund": {
                "return_id": data.draw(st.sampled_from(return_ids)),
                "method": data.draw(st.sampled_from(["original_payment", "store_credit"])),
            },
            "cancel_order": {"order_id": order_id, "reason": "customer asked"},
            "get_order": {"order_id": order_id},
        }[tool]
        before = session.state_hash()
        result = session.call(tool, args)
        if is_error(result):
            assert session.state_hash() == before
        _check_invariants(session.state())


def test_package_passes_the_contract_linter_and_documents_every_tool() -> None:
    report = lint_package(ENV)
    assert report.findings == [], report.findings
    package = load_package(ENV)
    assert set(package.skills) == {"process-return"}
    skill = package.skills["process-return"].read_text(encoding="utf-8")
    for name in package.env_class.tools:
        assert f"`{name}(" in package.readme, f"README does not document {name}"
        assert name in skill or name == "search_catalog", f"the skill does not mention {name}"
