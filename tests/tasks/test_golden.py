"""Golden runs: live execution, argument provenance, dropped and planned failures, distractors."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

from pydantic import model_validator

from envcraft.core import load_package
from envcraft.core.state import diff
from envcraft.tasks.golden.run import RECOVERABLE, GoldenRun, replay, run_chain
from envcraft.tasks.graphs.graph import ToolGraph, build_tool_graph
from envcraft.tasks.graphs.walk import Step
from envcraft.tasks.play.execute import run_calls
from envcraft.tasks.values.args import flatten, read_path
from envcraft.tasks.world.distractors import add_distractors, breaks_lookups

COUNTER = Path(__file__).resolve().parents[1] / "fixtures" / "counter"
_GRAPHS: dict[str, ToolGraph] = {}


def setup(
    ref: str | Path, seed: int = 1
) -> tuple[dict[str, Any], dict[str, ToolGraph], dict[str, dict[str, Any]]]:
    package = load_package(ref)
    if package.id not in _GRAPHS:
        _GRAPHS[package.id] = build_tool_graph(package)
    state = package.env_class.generate(seed=seed, size=1, data=package.data).state.model_dump(mode="json")
    return {package.id: package}, {package.id: _GRAPHS[package.id]}, {package.id: state}


def chain(env: str, *tools: str) -> list[Step]:
    return [Step(env, t) for t in tools]


def replayed_final(packages: dict[str, Any], run: GoldenRun) -> dict[str, Any]:
    """The final states V's executor reaches with exactly the reference calls."""
    calls = [{"env": c.env, "tool": c.tool, "args": c.args} for c in run.calls]
    return run_calls(packages, run.initial, run.files, [calls]).final


def check_provenance(run: GoldenRun, s0: dict[str, dict[str, Any]]) -> None:
    """Every derived label points at the value in that call's output; user values are stated
    things: from S0, the schema or free text, never an output only the chain produced."""
    for i, call in enumerate(run.calls):
        for name, label in call.provenance.items():
            value = call.args[name]
            if label == "user":
                continue
            source, path = label.removeprefix("derived:").split(".", 1)
            assert int(source) < i and run.calls[int(source)].ok
            found = read_path(run.calls[int(source)].result, path)
            assert found == (value[0] if isinstance(value, list) else value)


def test_derived_arguments_are_labelled_with_their_source() -> None:
    packages, graphs, s0 = setup("returns_desk")
    derived = 0
    for seed in range(12):
        run = run_chain(
            chain("returns_desk", "get_customer", "list_orders", "get_order", "cancel_order"),
            packages,
            graphs,
            s0,
            {},
            random.Random(seed),
        )
        if run is None:
            continue
        check_provenance(run, s0)
        tools = [c.tool for c in run.calls]
        if tools[:2] == ["get_customer", "list_orders"]:
            known = {v for _, v in flatten(s0["returns_desk"]["customers"])}
            for given in run.calls[0].args:  # the customer's email, their full name, or both
                assert run.calls[0].provenance[given] == "user"
                assert run.calls[0].args[given] in known
            if run.calls[1].provenance["customer_id"] == "derived:0.customer_id":
                assert run.calls[1].args["customer_id"] == run.calls[0].result["customer_id"]
                derived += 1
            else:  # now and then the user names the customer id (it is in S0): then it is stated
                assert run.calls[1].args["customer_id"] in s0["returns_desk"]["customers"]
    assert derived >= 6


def test_a_pick_from_a_list_is_described_by_a_field_that_tells_it_apart() -> None:
    packages, graphs, s0 = setup("returns_desk", seed=4)
    described = 0
    for seed in range(15):
        run = run_chain(
            chain("returns_desk", "list_orders", "get_order", "open_return"),
            packages,
            graphs,
            s0,
            {},
            random.Random(seed),
        )
        if run is None:
            continue
        for call in run.calls:
            for name, hint in call.hints.items():
                source = run.calls[hint.call].result
                label = call.provenance[name]
                path = label.split(".", 1)[1]
                if hint.field is not None:
                    siblings = read_path(source, path.rsplit(".", 2)[0])
                    values = [s.get(hint.field) for s in siblings]
                    assert values.count(hint.value) == 1  # the description picks exactly one record
                    described += 1
    assert described >= 3


def test_failed_calls_are_dropped_and_the_reference_replays_to_the_same_state() -> None:
    packages, graphs, s0 = setup(COUNTER)
    run = run_chain(
        chain("counter", "increment", "explode", "increment", "get"),
        packages,
        graphs,
        s0,
        {},
        random.Random(0),
    )
    assert run is not None
    assert [c.tool for c in run.calls] == ["increment", "increment", "get"]
    assert all(c.ok for c in run.calls)
    # explode was tried (and consumed action indices), yet the reference alone reaches the same state,
    # timestamps in the history included: the live sessions were rebuilt without the failed tries
    assert replayed_final(packages, run) == run.final
    assert run.final["counter"]["history"]


def test_a_chain_that_changes_nothing_is_rejected() -> None:
    packages, graphs, s0 = setup("returns_desk")
    for seed in range(5):
        assert (
            run_chain(
                chain("returns_desk", "get_customer", "list_orders"),
                packages,
                graphs,
                s0,
                {},
                random.Random(seed),
            )
            is None
        )


def test_planned_error_recovery_steps_are_labelled_and_replay() -> None:
    packages, graphs, s0 = setup("returns_desk", seed=2)
    planned: list[GoldenRun] = []
    for seed in range(40):
        run = run_chain(
            chain("returns_desk", "list_orders", "cancel_order"),
            packages,
            graphs,
            s0,
            {},
            random.Random(seed),
            p_error=1.0,
        )
        if run is not None and any(c.expected_error for c in run.calls):
            planned.append(run)
    assert planned
    for run in planned:
        i = next(i for i, c in enumerate(run.calls) if c.expected_error)
        failed, recovery = run.calls[i], run.calls[i + 1]
        assert not failed.ok and failed.result["error"]["category"] == failed.expected_error
        assert failed.expected_error in RECOVERABLE
        assert recovery.ok and recovery.tool == failed.tool and recovery.args != failed.args
        assert replayed_final(packages, run) == run.final


def test_targets_and_distractors_keep_the_run_solvable() -> None:
    packages, graphs, s0 = setup("returns_desk", seed=3)
    checked = 0
    for seed in range(10):
        run = run_chain(
            chain("returns_desk", "list_orders", "get_order", "cancel_order"),
            packages,
            graphs,
            s0,
            {},
            random.Random(seed),
        )
        if run is None:
            continue
        targets = run.targets
        assert targets and all(t["env"] == "returns_desk" for t in targets)
        changed = {
            c["path"].split("/")[2]
            for c in diff(run.initial["returns_desk"], run.final["returns_desk"])
            if c["path"].startswith("/orders/")
        }
        assert {f"/orders/{o}" for o in changed} <= {t["path"] for t in targets}
        states, made = add_distractors(run.initial, targets, packages, random.Random(seed))
        assert made
        for d in made:
            collection, new_id = d.path.strip("/").split("/")
            original = d.of.strip("/").split("/")[1]
            assert new_id not in run.initial["returns_desk"][collection]
            assert new_id != original and new_id in states["returns_desk"][collection]
        again = replay(run.calls, packages, states, {})
        if again is None:
            continue
        check_provenance(again, states)
        for d in made:  # the golden run leaves its near-duplicates alone
            assert not any(
                c["path"].startswith(d.path) for c in diff(again.initial[d.env], again.final[d.env])
            )
        checked += 1
    assert checked >= 3


def test_distractors_that_break_the_state_model_or_the_worlds_rules_are_dropped() -> None:
    packages, _, s0 = setup("returns_desk")
    desk = packages["returns_desk"]
    order = next(iter(s0["returns_desk"]["orders"]))
    target = [{"env": "returns_desk", "path": f"/orders/{order}"}]

    class NoNewOrders(desk.env_class.State):  # type: ignore[name-defined,misc]
        """A state model that rejects any state with more orders than this S0."""

        @model_validator(mode="after")
        def _same_orders(self) -> Any:
            if len(self.orders) != len(s0["returns_desk"]["orders"]):
                raise ValueError("no new orders")
            return self

    class StrictDesk(desk.env_class):  # type: ignore[name-defined,misc]
        State = NoNewOrders

    strict = {"returns_desk": dataclasses.replace(desk, env_class=StrictDesk)}
    states, made = add_distractors(s0, target, strict, random.Random(0))
    assert made == [] and states == s0

    # a cancelled order was refunded: a copy of it would show money no refund record accounts for
    # (the desk's declared rule), so it never becomes a look-alike
    s0 = next(
        state
        for seed in range(20)
        for state in [setup("returns_desk", seed)[2]]
        if any(o["refunded_cents"] for o in state["returns_desk"]["orders"].values())
    )
    refunded = [k for k, o in s0["returns_desk"]["orders"].items() if o["refunded_cents"]]
    for seed in range(10):
        targets = [{"env": "returns_desk", "path": f"/orders/{k}"} for k in refunded]
        states, made = add_distractors(s0, targets, packages, random.Random(seed))
        assert made == []
    # and every look-alike that is made keeps the rules
    for seed in range(10):
        targets = [
            {"env": "returns_desk", "path": f"/{c}/{k}"}
            for c in ("orders", "customers")
            for k in s0["returns_desk"][c]
        ]
        states, made = add_distractors(s0, targets, packages, random.Random(seed))
        model = desk.env_class.State.model_validate(states["returns_desk"])
        assert desk.env_class.rule_violations(model, {}) == []
        declared = {e.collection: e for e in desk.env_class.entities}
        for d in made:
            collection, key = d.path.strip("/").split("/")
            original = s0["returns_desk"][collection][d.of.strip("/").split("/")[1]]
            copy = states["returns_desk"][collection][key]
            changed = {f for f in copy if copy[f] != original[f] and not f.endswith("_id")}
            assert changed <= set(declared[collection].vary) | {"email", "name"}


FRAGILE_ENV = '''
from typing import Any
from envcraft import Environment, Initial, StateModel, tool


class Item(StateModel):
    item_id: str
    name: str
    stock: int


class FragileState(StateModel):
    items: dict[str, Item] = {}


class Fragile(Environment):
    """Items whose names must also be in the catalog (a rule the state model does not state)."""

    State = FragileState

    @tool
    def list_items(self) -> dict[str, Any]:
        """List items with their catalog entry.

        Returns:
            The items.
        """
        catalog = {c["item_id"]: c for c in self.data.json("catalog.json")}
        return {"items": [{**i.model_dump(), **catalog[i.item_id]} for i in self.state.items.values()]}

    @tool
    def restock(self, item_id: str, quantity: int) -> dict[str, Any]:
        """Add stock to an item.

        Args:
            item_id: The item.
            quantity: Units to add (1 to 10).

        Returns:
            The new stock.
        """
        item = self.state.items.get(item_id) or self.fail("not_found", f"no item {item_id}")
        item.stock += quantity
        return {"item_id": item_id, "stock": item.stock}

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Any = None) -> Initial:
        return Initial(FragileState(items={"IT-1": Item(item_id="IT-1", name="Lamp", stock=2)}))
'''


def test_distractors_that_crash_the_environments_lookups_are_detected(tmp_path: Path) -> None:
    root = tmp_path / "fragile"
    (root / "data").mkdir(parents=True)
    (root / "envcraft.toml").write_text('id = "fragile"\ntitle = "Fragile"\nkind = "tool"\n')
    (root / "data" / "catalog.json").write_text('[{"item_id": "IT-1", "sku": "L-1"}]')
    (root / "env.py").write_text(FRAGILE_ENV)
    package = load_package(root)
    graph = build_tool_graph(package)
    s0 = {"fragile": package.env_class.generate().state.model_dump(mode="json")}
    states, made = add_distractors(
        s0, [{"env": "fragile", "path": "/items/IT-1"}], {"fragile": package}, random.Random(0)
    )
    assert made  # the state model accepts the copy...
    assert breaks_lookups(package, graph, states["fragile"], made, {})  # ...but list_items now crashes
    assert not breaks_lookups(package, graph, s0["fragile"], [], {})

    packages, graphs, rd0 = setup("returns_desk")
    order = next(iter(rd0["returns_desk"]["orders"]))
    states, made = add_distractors(
        rd0, [{"env": "returns_desk", "path": f"/orders/{order}"}], packages, random.Random(0)
    )
    assert made and not breaks_lookups(
        packages["returns_desk"], graphs["returns_desk"], states["returns_desk"], made, {}
    )


def test_a_chain_after_a_prefix_continues_that_job_on_its_records() -> None:
    """``prefix``: a job already made runs first as it was; the follow-up prefers its records
    (receiving the return the job just opened, not one of S0's)."""
    packages, graphs, s0 = setup("returns_desk", seed=4)
    followed = 0
    for seed in range(10):
        first = run_chain(
            chain("returns_desk", "get_order", "open_return"), packages, graphs, s0, {}, random.Random(seed)
        )
        if first is None:
            continue
        opened = first.calls[-1].result["return_id"]
        assert opened not in s0["returns_desk"]["returns"]
        longer = run_chain(
            chain("returns_desk", "receive_return"), packages, graphs, s0, {}, random.Random(seed),
            cohesion=3.0, prefix=first.calls,
        )  # fmt: skip
        assert longer is not None
        assert [(c.tool, c.args) for c in longer.calls[:2]] == [(c.tool, c.args) for c in first.calls]
        assert replayed_final(packages, longer) == longer.final
        followed += longer.calls[-1].args.get("return_id") == opened
    assert followed >= 3


def test_a_text_that_worked_in_one_world_is_not_tried_in_the_next() -> None:
    """Round 14, helper RC: a search-api incident titled "payments-gateway disk usage above 85% on
    one replica" in a world with no payments-gateway: the title had worked in an earlier chain's
    world and was tried first again. Codes and amounts that worked still come first."""
    from envcraft.tasks.golden.choose import Experience
    from envcraft.tasks.values.args import StateIndex

    graph = build_tool_graph(load_package("infra_recovery"))
    node = graph.nodes["open_incident"]
    seen = Experience()
    title = "payments-gateway disk usage above 85% on one replica"
    seen.observe(node, {"severity": "sev2", "title": title}, StateIndex(), ok=True)
    rng = random.Random(0)
    firsts = {seen.good_first(node, "severity", ["sev1", "sev3"], rng)[0] for _ in range(20)}
    assert "sev2" in firsts
    assert all(seen.good_first(node, "title", ["disk alert"], rng) == ["disk alert"] for _ in range(20))
