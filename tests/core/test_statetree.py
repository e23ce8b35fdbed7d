"""The incremental state path gives exactly what whole-state work would: same verdicts, same
bytes, same hashes; a failed call is undone exactly; item invariants re-run where needed."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import Session
from envcraft.core.state import canonical_json

SHOP = '''
from pydantic import model_validator

from envcraft import Environment, StateModel, tool
from envcraft.core.invariants import invariant

RUNS: list[str] = []  # which item checks ran (the test reads it; checks stay pure otherwise)


class Line(StateModel):
    sku: str
    qty: int


class Customer(StateModel):
    customer_id: str
    name: str


class Order(StateModel):
    order_id: str
    customer_id: str
    lines: list[Line] = []
    tags: dict[str, str] = {}
    status: str = "open"


class Shop(StateModel):
    customers: dict[str, Customer] = {}
    orders: dict[str, Order] = {}
    notes: list[str] = []
    max_lines: int = 3
    next_order: int = 1

    @invariant("orders")
    def _order_has_customer(self, order_id: str, order: Order) -> None:
        RUNS.append(order_id)
        if order.order_id != order_id:
            raise ValueError(f"{order_id} holds {order.order_id}")
        if order.customer_id not in self.customers:
            raise ValueError(f"{order_id} belongs to unknown customer {order.customer_id}")
        if len(order.lines) > self.max_lines:
            raise ValueError(f"{order_id} has more than {self.max_lines} lines")

    @model_validator(mode="after")
    def _notes_short(self) -> "Shop":
        if len(self.notes) > 5:
            raise ValueError("too many notes")
        return self


class Store(Environment):
    """A shop for runtime tests."""

    State = Shop

    @tool
    def add_order(self, customer_id: str, fail: bool = False) -> dict:
        """Open an order.

        Args:
            customer_id: Who orders.
            fail: Fail after mutating.
        """
        order_id = f"O{self.state.next_order}"
        self.state.next_order += 1
        order = Order(order_id=order_id, customer_id=customer_id)
        self.state.orders[order_id] = order
        order.tags["new"] = "yes"  # filled in after it was inserted: must be kept
        if fail:
            self.fail("conflict", "asked to fail")
        return {"order_id": order_id}

    @tool
    def add_line(self, order_id: str, sku: str, qty: int = 1) -> dict:
        """Add a line.

        Args:
            order_id: The order.
            sku: Product.
            qty: Units.
        """
        self.state.orders[order_id].lines.append(Line(sku=sku, qty=qty))
        return {"lines": len(self.state.orders[order_id].lines)}

    @tool
    def drop_customer(self, customer_id: str) -> dict:
        """Remove a customer.

        Args:
            customer_id: Who.
        """
        del self.state.customers[customer_id]
        return {"removed": customer_id}

    @tool
    def set_max_lines(self, value: int) -> dict:
        """Change the line limit.

        Args:
            value: The limit.
        """
        self.state.max_lines = value
        return {"max_lines": value}

    @tool
    def note(self, text: str) -> dict:
        """Add a note.

        Args:
            text: The note.
        """
        self.state.notes.append(text)
        return {"notes": len(self.state.notes)}

    @tool
    def churn(self) -> dict:
        """Mutate in every way, then fail."""
        state = self.state
        state.customers.pop("C2")
        state.customers["C9"] = Customer(customer_id="C9", name="new")
        state.orders["O1"].lines.insert(0, Line(sku="x", qty=9))
        state.orders["O1"].lines.sort(key=lambda line: line.sku)
        state.orders["O1"].tags.clear()
        state.orders["O1"].__dict__["status"] = "direct"
        state.notes.extend(["a", "b"])
        state.notes.reverse()
        state.next_order = 99
        self.state = Shop()
        self.fail("conflict", "undo all of that")

    @tool
    def bad_entity(self) -> dict:
        """Insert an entity that skipped validation."""
        self.state.customers["C7"] = Customer.model_construct(customer_id="C7", name=7)
        return {}

    @tool
    def replace_state(self, valid: bool) -> dict:
        """Replace the whole state.

        Args:
            valid: Keep the invariants.
        """
        order = Order(order_id="Z", customer_id="C1" if valid else "nobody")
        self.state = Shop(customers={"C1": Customer(customer_id="C1", name="a")}, orders={"Z": order})
        return {}
'''

S0 = {
    "customers": {"C1": {"customer_id": "C1", "name": "Ann"}, "C2": {"customer_id": "C2", "name": "Bo"}},
    "orders": {"O1": {"order_id": "O1", "customer_id": "C2", "lines": [{"sku": "a", "qty": 1}]}},
    "notes": ["first"],
    "next_order": 2,
}


@pytest.fixture
def shop(make_env: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVCRAFT_CHECK_STATE", "1")  # every step compared with whole-state work
    return make_env(textwrap.dedent(SHOP), env_id="shop")


def _runs(session: Session) -> list[str]:
    import sys

    module = sys.modules[type(session.env).__module__]
    runs: list[str] = module.RUNS
    return runs


def test_a_failed_call_is_undone_exactly(shop: Path) -> None:
    session = Session.memory(shop, state=S0)
    before = session.state()
    order = list(session.env.state.customers)
    result = session.call("churn")
    assert result["error"]["category"] == "conflict"
    assert session.state() == before
    assert list(session.env.state.customers) == order  # the dict's order, too
    assert session.env.state.orders["O1"].status == "open"
    assert session.call("note", {"text": "still tracked"}) == {"notes": 2}


def test_values_filled_in_after_insertion_are_kept_and_tracked(shop: Path) -> None:
    session = Session.memory(shop, state=S0)
    assert session.call("add_order", {"customer_id": "C1"}) == {"order_id": "O2"}
    state = session.state()
    assert state["orders"]["O2"]["tags"] == {"new": "yes"}
    assert type(session.env.state.orders["O2"].tags).__name__ == "TrackedDict"  # adopted at commit
    assert session.call("add_line", {"order_id": "O2", "sku": "s"}) == {"lines": 1}
    state = session.state()
    failed = session.call("add_order", {"customer_id": "C1", "fail": True})
    assert failed["error"]["category"] == "conflict"
    assert session.state() == state


def test_only_touched_items_and_their_readers_are_rechecked(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENVCRAFT_CHECK_STATE")  # its whole-state comparison would run every check
    orders = {f"O{i}": {"order_id": f"O{i}", "customer_id": "C1" if i % 2 else "C2"} for i in range(1, 41)}
    session = Session.memory(shop, state={**S0, "orders": orders})
    runs = _runs(session)
    runs.clear()
    assert session.call("add_line", {"order_id": "O7", "sku": "k"}) == {"lines": 1}
    assert runs == ["O7"]
    runs.clear()
    assert "notes" in session.call("note", {"text": "x"})
    assert runs == []  # nothing an order check reads changed
    runs.clear()
    refused = session.call("drop_customer", {"customer_id": "C2"})
    assert refused["error"]["category"] == "internal_error"  # 20 orders would lose their customer
    assert runs and all(int(key[1:]) % 2 == 0 for key in runs)  # only C2's orders were re-checked
    assert "C2" in session.state()["customers"]
    runs.clear()
    assert session.call("add_line", {"order_id": "O3", "sku": "a"}) == {"lines": 1}
    assert session.call("add_line", {"order_id": "O3", "sku": "b"}) == {"lines": 2}
    refused = session.call("set_max_lines", {"value": 1})  # every check read max_lines
    assert refused["error"]["category"] == "internal_error"
    assert session.state()["max_lines"] == 3


def test_model_validators_and_entity_types_still_hold(shop: Path) -> None:
    session = Session.memory(shop, state=S0)
    for i in range(4):
        assert session.call("note", {"text": str(i)}) == {"notes": i + 2}
    assert session.call("note", {"text": "too many"})["error"]["category"] == "internal_error"
    assert session.call("bad_entity")["error"]["category"] == "internal_error"
    assert "C7" not in session.state()["customers"]
    assert session.call("replace_state", {"valid": False})["error"]["category"] == "internal_error"
    assert session.call("replace_state", {"valid": True}) == {}
    assert set(session.state()["orders"]) == {"Z"}
    assert session.call("add_line", {"order_id": "Z", "sku": "q"}) == {"lines": 1}


def test_memory_hashes_are_computed_late_but_equal_the_durable_ones(shop: Path, tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("add_order", {"customer_id": "C1"}),
        ("add_line", {"order_id": "O1", "sku": "b"}),
        ("churn", {}),
        ("note", {"text": "n"}),
        ("drop_customer", {"customer_id": "C9"}),
        ("add_line", {"order_id": "O2", "sku": "c", "qty": 2}),
        ("replace_state", {"valid": True}),
        ("add_line", {"order_id": "Z", "sku": "z"}),
    ]
    memory = Session.memory(shop, state=S0)
    durable = Session.create(shop, tmp_path / "durable", state=S0)
    for tool, args in calls:
        assert memory.call(tool, args) == durable.call(tool, args)
    assert [e["state_hash"] for e in memory.actions()] == [e["state_hash"] for e in durable.actions()]
    assert memory.state_hash() == durable.state_hash()
    saved = Session.open(memory.save(tmp_path / "saved"))
    assert saved.actions() == durable.actions()
    assert (tmp_path / "saved" / "state.json").read_bytes() == (
        tmp_path / "durable" / "state.json"
    ).read_bytes()
    assert saved.call("note", {"text": "resumed"})["notes"] >= 1


def test_editing_the_bound_state_outside_a_call_is_checked_at_the_next_call(shop: Path) -> None:
    session = Session.memory(shop, state=S0)
    session.env.state.orders["O1"].customer_id = "C1"  # between calls: no journal
    assert session.state()["orders"]["O1"]["customer_id"] == "C1"
    assert session.call("note", {"text": "x"}) == {"notes": 2}
    session.env.state.orders["O1"].customer_id = "ghost"
    assert session.call("note", {"text": "y"})["error"]["category"] == "internal_error"


def test_canonical_bytes_match_the_whole_dump_on_generated_states() -> None:
    for env in ("returns_desk", "sheet_analytics", "job_scheduler", "mail_triage"):
        session = Session.memory(env, seed=3, size=2)
        text = session._tree.canonical()
        assert text == canonical_json(session.env.state.model_dump(mode="json")).encode("utf-8"), env
        assert json.loads(text) == session.state()
        session.close()
