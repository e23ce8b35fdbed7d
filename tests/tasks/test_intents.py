"""Intents: turn splitting, offline rendering, personas and the information-hiding checks."""

from __future__ import annotations

import random
from collections.abc import Mapping

from envcraft.tasks.choose import Hint
from envcraft.tasks.golden import GoldenCall
from envcraft.tasks.graph import ToolGraph
from envcraft.tasks.intents import (
    MAX_TURNS,
    Persona,
    TemplateRenderer,
    find_leaks,
    imperative,
    missing_user_values,
    personas,
    split_turns,
)
from envcraft.tasks.model import Reference, ReferenceCall, Task, Turn, Verifier
from envcraft.tasks.synth import load_library

ORDER = "ORD-100004"
CUSTOMER = "CUS-1002"


def golden_chain() -> list[GoldenCall]:
    """list_orders (user id) -> cancel_order (order picked from the listing, described by date)."""
    listing = {
        "customer_id": CUSTOMER,
        "orders": [
            {"order_id": "ORD-100003", "status": "delivered", "placed_at": "2025-12-01T10:00:00Z"},
            {"order_id": ORDER, "status": "placed", "placed_at": "2026-01-04T08:00:00Z"},
        ],
    }
    return [
        GoldenCall(
            "returns_desk", "list_orders", {"customer_id": CUSTOMER}, {"customer_id": "user"}, listing
        ),
        GoldenCall(
            "returns_desk",
            "cancel_order",
            {"order_id": ORDER, "reason": "ordered by mistake"},
            {"order_id": "derived:0.orders.1.order_id", "reason": "user"},
            {"order_id": ORDER},
            hints={"order_id": Hint(0, "order", "status", "placed", 2)},
        ),
    ]


def as_task(chain: list[GoldenCall], texts: list[str], turns: list[list[int]]) -> Task:
    turn_of = {i: t for t, ids in enumerate(turns) for i in ids}
    calls = [
        ReferenceCall(turn=turn_of[i], env=c.env, tool=c.tool, args=c.args, provenance=c.provenance)
        for i, c in enumerate(chain)
    ]
    return Task(
        id="t",
        envs=["returns_desk"],
        kind="tool",
        turns=[Turn(user=t) for t in texts],
        initial_state={"returns_desk": {}},
        verifier=Verifier(source=""),
        reference=Reference(calls=calls, final_hash=""),
    )


def graphs() -> Mapping[str, ToolGraph]:
    return load_library(["returns_desk"]).graphs


def test_split_turns_is_contiguous_bounded_and_keeps_recoveries_together() -> None:
    chain = golden_chain() * 3
    chain[2] = GoldenCall(
        "returns_desk",
        "cancel_order",
        {},
        {},
        {"error": {"category": "invalid_transition"}},
        expected_error="invalid_transition",
    )
    for seed in range(50):
        turns = split_turns(chain, random.Random(seed))
        assert 1 <= len(turns) <= MAX_TURNS
        assert [i for t in turns for i in t] == list(range(len(chain)))
        assert all(t for t in turns)
        assert any(2 in t and 3 in t for t in turns)  # the planned error and its recovery share a turn


def test_render_states_user_values_and_describes_derived_ones() -> None:
    chain = golden_chain()
    persona = Persona("p", "Ana", "shop owner", "friendly", "chatty")
    texts = TemplateRenderer(seed=1).render(chain, persona, turns=[[0], [1]], graphs=graphs())
    assert len(texts) == 2
    assert CUSTOMER in texts[0] and "ordered by mistake" in texts[1]
    assert ORDER not in " ".join(texts)
    assert "whose status is placed" in texts[1]
    assert "Ana" in texts[0]  # a chatty persona introduces itself
    task = as_task(chain, texts, [[0], [1]])
    assert find_leaks(task) == [] and missing_user_values(task) == []


def test_find_leaks_and_missing_values_catch_bad_text() -> None:
    chain = golden_chain()
    leaky = as_task(
        chain, [f"List orders of {CUSTOMER}.", f"Cancel {ORDER} because ordered by mistake."], [[0], [1]]
    )
    assert find_leaks(leaky) == [{"turn": 1, "call": 1, "arg": "order_id", "value": ORDER}]
    silent = as_task(chain, ["List my orders.", "Cancel the placed one, I ordered by mistake."], [[0], [1]])
    missing = missing_user_values(silent)
    assert {"call": 0, "arg": "customer_id", "value": CUSTOMER} in missing
    assert not any(m["arg"] == "reason" for m in missing)
    # a value the user states elsewhere is not a leak even where another call derives it
    both = golden_chain()
    both.append(GoldenCall("returns_desk", "get_order", {"order_id": ORDER}, {"order_id": "user"}, {}))
    task = as_task(
        both,
        [f"List orders of {CUSTOMER}.", f"Cancel, ordered by mistake. Then show {ORDER}."],
        [[0], [1, 2]],
    )
    assert find_leaks(task) == []
    # an id that only appears inside a longer token is not a mention
    near = as_task(
        chain, [f"List orders of {CUSTOMER}.", f"Cancel X{ORDER}9, ordered by mistake."], [[0], [1]]
    )
    assert find_leaks(near) == []


def test_imperative_from_docstring_summaries() -> None:
    assert (
        imperative("Find a customer by email address.", "get_customer") == "find a customer by email address"
    )
    assert imperative("Searches the catalog.", "search") == "search the catalog"
    assert imperative("Lists open tickets", "list") == "list open tickets"
    assert imperative("Process a refund.", "refund") == "process a refund"
    assert imperative("A tool with a bug: it raises.", "explode") == "use explode (a tool with a bug)"
    assert imperative("", "ping") == "use ping"
    assert imperative("Cancel a booking; late cancellations cost a fee.", "c") == "cancel a booking"
    assert imperative("Start a cycle count: snapshot the quantities.", "s") == "start a cycle count"


def test_persona_set_is_diverse_and_shippable() -> None:
    people = personas()
    assert len(people) >= 40
    assert len({p.id for p in people}) == len(people)
    assert len({p.role for p in people}) >= 35
    assert {p.tone for p in people} >= {"formal", "casual", "terse", "anxious"}
    assert {p.verbosity for p in people} == {"terse", "normal", "chatty"}
    texts = {TemplateRenderer().render(golden_chain(), p, turns=[[0, 1]], graphs=graphs())[0] for p in people}
    assert len(texts) >= 20  # personas really change the voice
