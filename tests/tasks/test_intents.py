"""Intents: turn splitting, goal planning from declarations, rendering, and the hiding checks."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from envcraft.core.package import builtin_ids, load_package
from envcraft.core.phrasing import Template, TemplateError
from envcraft.tasks.format.model import GoldenCall, Reference, ReferenceCall, Task, Turn, Verifier
from envcraft.tasks.golden.run import replay
from envcraft.tasks.phrasing import lint
from envcraft.tasks.phrasing.intents import MAX_TURNS, ChainView, Unnameable, plan_intents, split_turns
from envcraft.tasks.phrasing.leaks import find_leaks, missing_user_values
from envcraft.tasks.phrasing.phrasebook import phrasebook
from envcraft.tasks.phrasing.render import Persona, TemplateRenderer, draw_persona, personas, situations
from envcraft.tasks.phrasing.words import imperative

DESK = load_package("returns_desk")


def desk_state(seed: int = 1) -> dict[str, Any]:
    return DESK.env_class.generate(seed=seed, data=DESK.data).state.model_dump(mode="json")


def cancel_chain(state: dict[str, Any]) -> tuple[list[GoldenCall], str]:
    """get_order (a user-known order) -> cancel_order, replayed for real on ``state``."""
    order = next(k for k, o in state["orders"].items() if o["status"] == "placed")
    calls = [
        GoldenCall("returns_desk", "get_order", {"order_id": order}, {"order_id": "user"}, {}),
        GoldenCall(
            "returns_desk",
            "cancel_order",
            {"order_id": order, "reason": "ordered by mistake"},
            {"order_id": "derived:0.order_id", "reason": "user"},
            {},
        ),
    ]
    run = replay(calls, {"returns_desk": DESK}, {"returns_desk": state}, {})
    assert run is not None
    return run.calls, order


def plan_for(calls: list[GoldenCall], state: dict[str, Any], turns: list[list[int]], seed: int = 0) -> Any:
    run = replay(calls, {"returns_desk": DESK}, {"returns_desk": state}, {})
    assert run is not None
    view = ChainView(run.calls, run.initial, run.after, [False, True])
    return run, plan_intents(view, turns, {"returns_desk": DESK}, random.Random(seed))


def as_task(calls: list[GoldenCall], texts: list[str], turns: list[list[int]], plan: Any = None) -> Task:
    turn_of = {i: t for t, ids in enumerate(turns) for i in ids}
    task = Task(
        id="t",
        envs=["returns_desk"],
        kind="tool",
        turns=[Turn(user=t) for t in texts],
        initial_state={"returns_desk": {}},
        verifier=Verifier(source=""),
        reference=Reference(
            calls=[
                ReferenceCall(turn=turn_of[i], env=c.env, tool=c.tool, args=c.args, provenance=c.provenance)
                for i, c in enumerate(calls)
            ],
            final_hash="",
        ),
    )
    if plan is not None:
        task.provenance["mentions"] = [m.to_json() for m in plan.mentions()]
        task.provenance["goal_calls"] = sorted({g.call for goals in plan.turns for g in goals})
    return task


def test_split_turns_gives_every_turn_a_write_and_keeps_recoveries_together() -> None:
    mutating = [False, True, False, True, True, False, True]
    planned = [False, False, False, True, False, False, False]
    for seed in range(50):
        turns = split_turns(mutating, planned, random.Random(seed))
        assert 1 <= len(turns) <= MAX_TURNS
        assert [i for t in turns for i in t] == list(range(len(mutating)))
        assert all(any(mutating[i] for i in t) for t in turns)  # nothing a turn asks for is a mere lookup
        assert any(3 in t and 4 in t for t in turns)  # the planned error and its recovery share a turn


def test_split_turns_gives_a_deeper_job_at_least_the_turns_asked_where_it_has_the_writes() -> None:
    mutating = [False, True, False, True, True, False, True]
    planned = [False] * len(mutating)
    counts = {len(split_turns(mutating, planned, random.Random(seed), min_turns=2)) for seed in range(50)}
    assert min(counts) == 2 and max(counts) == MAX_TURNS
    assert split_turns([True], [False], random.Random(0), min_turns=2) == [[0]]  # one write: one turn


def test_goals_name_records_as_a_person_does_and_never_a_tool_or_parameter() -> None:
    state = desk_state()
    calls, order = cancel_chain(state)
    seen_named = False
    for seed in range(12):
        run, plan = plan_for(
            [GoldenCall(c.env, c.tool, c.args, dict(c.provenance), c.result) for c in calls],
            state,
            [[0, 1]],
            seed,
        )
        (goal,) = plan.turns[0]  # the lookup is the agent's business: only the cancellation is asked for
        assert goal.tool == "cancel_order" and goal.text.startswith("cancel ")
        text = TemplateRenderer(seed=seed).render(plan, personas()[0])[0]
        assert "cancel_order" not in text and "order_id" not in text and "(reason:" not in text
        assert "“ordered by mistake”" in text
        if order not in text:  # told by who placed it and when, not by its id
            seen_named = True
            customer = state["customers"][state["orders"][order]["customer_id"]]
            namesakes = [c for c in state["customers"].values() if c["name"] == customer["name"]]
            assert customer["name"] in text  # the email only where another customer has the name
            assert (customer["email"] in text) == (len(namesakes) > 1)
        task = as_task(run.calls, [text], [[0, 1]], plan)
        assert find_leaks(task) == [] and missing_user_values(task) == []
    assert seen_named


def test_a_name_says_its_detail_in_parentheses_only_where_a_namesake_needs_it() -> None:
    state = desk_state()
    book = phrasebook(DESK)
    order = next(iter(state["orders"]))
    customer = state["customers"][state["orders"][order]["customer_id"]]
    plain = book.name_of(state, "orders", order)
    assert plain is not None and customer["name"] in plain and customer["email"] not in plain
    assert book.name_of(state, "customers", customer["customer_id"]) == customer["name"]
    # a namesake (another customer of the same name) with no order that day: the order still
    # needs no email, the customer does
    twin = {**customer, "customer_id": "CUS-9999", "email": "second." + customer["email"]}
    state["customers"]["CUS-9999"] = twin
    assert book.name_of(state, "orders", order) == plain
    assert book.name_of(state, "customers", customer["customer_id"]) == (
        f"{customer['name']} ({customer['email']})"
    )
    # the namesake ordered the same day: the email tells the two orders apart
    state["orders"]["ORD-999999"] = {
        **state["orders"][order],
        "order_id": "ORD-999999",
        "customer_id": "CUS-9999",
    }
    detailed = book.name_of(state, "orders", order)
    assert detailed is not None and customer["email"] in detailed


def test_a_value_no_declaration_can_name_makes_the_chain_unusable() -> None:
    state = desk_state()
    calls, order = cancel_chain(state)
    customer = state["orders"][order]["customer_id"]
    for other in state["orders"].values():  # two identical orders of one customer on one day
        other["customer_id"], other["placed_at"] = customer, state["orders"][order]["placed_at"]
    state["orders"][order]["lines"] = state["orders"][order]["lines"]
    fresh = [
        GoldenCall(c.env, c.tool, c.args, {"order_id": "user", "reason": "user"}, c.result) for c in calls[1:]
    ]

    class Anonymous(DESK.env_class):  # type: ignore[misc,name-defined]
        entities = tuple(
            e if e.collection != "orders" else type(e)("orders", "order", e.names)
            for e in DESK.env_class.entities
        )

    package = type(DESK)(DESK.root, DESK.manifest, Anonymous)
    view = ChainView(fresh, {"returns_desk": state}, lambda i: {"returns_desk": state}, [True])
    with pytest.raises(Unnameable):
        plan_intents(view, [[0]], {"returns_desk": package}, random.Random(0))


def test_find_leaks_and_missing_values_catch_bad_text() -> None:
    state = desk_state()
    calls, order = cancel_chain(state)
    run, plan = plan_for(calls, state, [[0, 1]])
    named = plan.mentions()[0].text != f"order {order}"
    good = TemplateRenderer().render(plan, personas()[1])
    assert find_leaks(as_task(run.calls, good, [[0, 1]], plan)) == []
    leaky = as_task(run.calls, [f"Cancel {order}, ordered by mistake."], [[0, 1]], plan)
    if named:  # the untold lookup reads the same named order: its id is the agent's to find too
        assert find_leaks(leaky) == [
            {"turn": 0, "call": 0, "arg": "order_id", "value": order},
            {"turn": 0, "call": 1, "arg": "order_id", "value": order},
        ]
    silent = as_task(run.calls, ["Cancel my last order, please."], [[0, 1]], plan)
    missing = missing_user_values(silent)
    assert {m["arg"] for m in missing} >= {"reason"}
    # an id that only appears inside a longer token is not a mention
    assert find_leaks(as_task(run.calls, [f"Cancel X{order}9, ordered by mistake."], [[0, 1]], plan)) == []


def test_templates_parse_choices_and_optional_parts() -> None:
    template = Template.parse("refund {return_id}[ {method|store_credit=as store credit|*=to the card}]")
    assert template.fields() == {"return_id", "method"}
    shown = {"return_id": "RMA-1", "method": "store_credit"}

    def show(part: Any) -> str | None:
        value = shown.get(part.name)
        return None if value is None else (part.choose(value) if part.choices else str(value))

    assert template.render(show) == "refund RMA-1 as store credit"
    shown["method"] = "card"
    assert template.render(show) == "refund RMA-1 to the card"
    del shown["method"]
    assert template.render(show) == "refund RMA-1"
    for bad in ("refund {", "refund [x", "refund {x:weird}", "refund {x|y}"):
        with pytest.raises(TemplateError):
            Template.parse(bad)


def test_imperative_from_docstring_summaries() -> None:
    assert imperative("Find a customer by email address.") == "find a customer by email address"
    assert imperative("Searches the catalog.") == "search the catalog"
    assert imperative("Lists open tickets") == "list open tickets"
    assert imperative("A tool with a bug: it raises.") == "work on a tool with a bug"
    assert imperative("Cancel a booking; late cancellations cost a fee.") == "cancel a booking"
    assert imperative("Start a cycle count: snapshot the quantities.") == "start a cycle count"


def test_persona_set_is_diverse_and_shippable() -> None:
    people = personas()
    assert len(people) >= 40
    assert len({p.id for p in people}) == len(people)
    assert len({p.role for p in people}) >= 35
    assert {p.tone for p in people} >= {"formal", "casual", "terse", "anxious"}
    assert {p.verbosity for p in people} == {"terse", "normal", "chatty"}
    state = desk_state()
    calls, _ = cancel_chain(state)
    _, plan = plan_for(calls, state, [[0, 1]])
    texts = {TemplateRenderer().render(plan, p)[0] for p in people}
    assert len(texts) >= 20  # personas really change the voice
    chatty = Persona("p", "Ana", "shop owner", "friendly", "chatty")
    said = TemplateRenderer().render(plan, chatty)[0]
    assert "Ana" not in said and "shop owner" not in said  # it shapes the text, never introduces itself
    assert any(line in said for line in situations()["returns_desk"])  # a chatty one says why they write
    assert [f for text in texts for f in lint.scan_turns("t", [text])] == []


def test_a_persona_is_drawn_to_fit_the_environment() -> None:
    """Who asks fits the desk: a fitness club's front desk, not a delivery driver, books classes."""
    for env in builtin_ids():
        fitting = {p.id for p in personas() if env in p.envs}
        assert len(fitting) >= 3, env
        drawn = {draw_persona(random.Random(seed), [env]).id for seed in range(60)}
        assert drawn == fitting, env
    assert draw_persona(random.Random(0), ["bfcl_gorilla_file_system"]).envs == ()  # no desk: a generic one
    assert draw_persona(random.Random(0), ["bfcl_x", "notes_desk"]).envs != ()  # the first env with one


def test_an_id_carried_in_free_text_is_asked_for_by_the_record_it_names() -> None:
    packages = {env: load_package(env) for env in ("infra_recovery", "mail_triage")}
    worlds = {env: p.env_class.generate(seed=1, data=p.data) for env, p in packages.items()}
    initial = {env: world.state.model_dump(mode="json") for env, world in worlds.items()}
    files = {path: text for world in worlds.values() for path, text in world.files.items()}
    incident = next(k for k, v in initial["infra_recovery"]["incidents"].items() if v["status"] == "open")
    message = next(iter(initial["mail_triage"]["messages"]))
    calls = [
        GoldenCall(
            "infra_recovery",
            "append_ops_note",
            {"incident_id": incident, "note": "Handled per the customer's phone call."},
            {"incident_id": "user", "note": "user"},
            {},
        ),
        GoldenCall(
            "mail_triage",
            "draft_reply",
            {"message_id": message, "body": f"Incident {incident}: on it, details to follow."},
            {"message_id": "user", "body": "embed:0.incident_id"},
            {},
        ),
    ]
    run = replay(calls, packages, initial, files)
    assert run is not None
    view = ChainView(run.calls, run.initial, run.after, [True, True])
    plan = plan_intents(view, [[0, 1]], packages, random.Random(0))
    body = next(m for m in plan.mentions() if m.arg == "body")
    assert body.text == "“on it, details to follow.”, mentioning the id of that incident", body.text


def _mail_plan(turns: list[list[int]]) -> tuple[list[str], Any]:
    """A real mail_triage chain: a draft, its sending, a to-do on it and a flag on an S0 message
    named twice, planned over ``turns`` and rendered by a terse persona (no greeting)."""
    package = load_package("mail_triage")
    world = package.env_class.generate(seed=1, data=package.data)
    initial = {"mail_triage": world.state.model_dump(mode="json")}
    message = next(iter(initial["mail_triage"]["messages"]))
    to = ["Operations <ops@northwind.example>"]
    calls = [
        GoldenCall(
            "mail_triage",
            "compose_draft",
            {"to": to, "subject": "Ops sync", "body": "Moved to Wednesday."},
            {},
            {},
        ),
        GoldenCall("mail_triage", "send_draft", {"draft_id": ""}, {"draft_id": "derived:0.draft_id"}, {}),
        GoldenCall("mail_triage", "flag_message", {"message_id": message}, {"message_id": "named"}, {}),
        GoldenCall(
            "mail_triage",
            "add_todo",
            {"message_id": message, "text": "Call back."},
            {"message_id": "named"},
            {},
        ),
    ]
    first = replay(calls[:1], {"mail_triage": package}, initial, world.files)
    assert first is not None
    calls[1].args["draft_id"] = first.calls[0].result["draft_id"]
    run = replay(calls, {"mail_triage": package}, initial, world.files)
    assert run is not None
    view = ChainView(run.calls, run.initial, run.after, [True] * 4)
    plan = plan_intents(view, turns, {"mail_triage": package}, random.Random(0))
    terse = Persona("p", "Ana", "operations lead", "terse", "terse")
    return TemplateRenderer().render(plan, terse), plan


def test_follow_ups_refer_back_instead_of_dictating_steps_or_repeating_names() -> None:
    texts, plan = _mail_plan([[0, 1, 2, 3]])
    (text,) = texts
    assert "saying “Moved to Wednesday.”, and send it." in text  # the step on the new draft joins it
    assert "the new message" not in text and lint.scan_turns("t", texts) == []
    flagged = next(m.text for m in plan.mentions() if m.call == 2)
    assert text.count(flagged) == 1 and "for that message" in text  # named once, then "that message"
    # in a turn after the one that named it, "that message" could be the one the agent made too,
    # and naming it again repeats it (round 50, R2): no plan says it so
    for turns in ([[0, 1, 2], [3]], [[0], [1, 2], [3]]):
        with pytest.raises(Unnameable, match="could be the one made before"):
            _mail_plan(turns)


def test_it_is_said_only_of_a_record_the_step_before_leaves_no_doubt_about() -> None:
    """A forward of a message, then a to-do on the new forward: "add the to-do ... for it" could
    mean either message (an audit's blind agent linked the one forwarded, and scored 0.35), so
    the user says which: the new one."""
    package = load_package("mail_triage")
    world = package.env_class.generate(seed=1, data=package.data)
    initial = {"mail_triage": world.state.model_dump(mode="json")}
    message = next(iter(initial["mail_triage"]["messages"]))
    forward = GoldenCall(
        "mail_triage",
        "draft_forward",
        {"message_id": message, "to": ["Operations <ops@northwind.example>"]},
        {"message_id": "named", "to": "user"},
        {},
    )
    first = replay([forward], {"mail_triage": package}, initial, world.files)
    assert first is not None
    made = first.calls[0].result["draft_id"]
    todo = GoldenCall(
        "mail_triage",
        "add_todo",
        {"text": "Call back.", "message_id": made},
        {"text": "user", "message_id": "derived:0.draft_id"},
        {},
    )
    run = replay([forward, todo], {"mail_triage": package}, initial, world.files)
    assert run is not None
    view = ChainView(run.calls, run.initial, run.after, [True, True])
    plan = plan_intents(view, [[0, 1]], {"mail_triage": package}, random.Random(0))
    terse = Persona("p", "Ana", "operations lead", "terse", "terse")
    (text,) = TemplateRenderer().render(plan, terse)
    assert "for it" not in text and "for your new message" in text, text


def test_an_id_a_step_gave_back_for_another_it_took_is_the_resulting_one() -> None:
    """sheet_analytics-c684085d236c (round 14, helper RB): "clean the raw dataset ... into
    data/clean/sales_2025Q1.csv", then an incident "mentioning the id of that dataset" meant the
    cleaned one (DS-007) though the step was given the raw one (DS-003)."""
    fixture = Path(__file__).parent.parent / "fixtures" / "audit_tasks_round14.jsonl"
    task = next(
        Task.model_validate(json.loads(line))
        for line in fixture.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["id"] == "sheet_analytics-c684085d236c"
    )
    packages = {env: load_package(env) for env in task.envs}
    picked = [
        c for c in task.reference.calls if c.tool in ("create_recipe", "clean_dataset", "open_incident")
    ]
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in picked]
    calls[2].provenance["title"] = "embed:1.dataset_id"
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None and run.calls[1].result["dataset_id"] != calls[1].args["dataset_id"]
    view = ChainView(run.calls, run.initial, run.after, [True, True, True])
    plan = plan_intents(view, [[0], [1], [2]], packages, random.Random(0))
    title = next(m for m in plan.mentions() if m.arg == "title")
    said = "“Onboarding checklist”, mentioning the id of the resulting dataset in the title"
    assert title.text == said, title.text


def test_an_address_said_before_is_said_again() -> None:
    """itinerary_rebooking-45ee97c58355 (round 16, helper TC): a second forward "to “Operations
    <ops@northwind.example>” and the same as before" read as "also a forward" as well as "the
    same recipient": only a text (a note, a message) is "the same as before"; an address is
    "the same address as before"."""
    package = load_package("mail_triage")
    world = package.env_class.generate(seed=1, data=package.data)
    initial = {"mail_triage": world.state.model_dump(mode="json")}
    first, second = list(initial["mail_triage"]["messages"])[:2]
    team = "Customer Operations <cs-team@northwind.example>"
    note = "Could you share an update on this one?"
    calls = [
        GoldenCall(
            "mail_triage",
            "draft_forward",
            {"message_id": message, "to": to, "body": note},
            {"message_id": "named", "to": "user", "body": "user"},
            {},
        )
        for message, to in ((first, [team]), (second, ["Operations <ops@northwind.example>", team]))
    ]
    run = replay(calls, {"mail_triage": package}, initial, world.files)
    assert run is not None
    view = ChainView(run.calls, run.initial, run.after, [True, True])
    plan = plan_intents(view, [[0, 1]], {"mail_triage": package}, random.Random(0))
    (text,) = TemplateRenderer().render(plan, Persona("p", "Ana", "operations lead", "terse", "terse"))
    assert "and the same address as before" in text and text.count("the same as before") == 1, text


def test_a_code_from_a_fixed_list_is_said_in_words_in_a_name() -> None:
    """Round 21: "owed for the hotel_overbooking at hotel HTL-FCO-01" (an enum literal)."""
    package = load_package("itinerary_rebooking")
    state = package.env_class.generate(seed=0, data=package.data).state.model_dump(mode="json")
    book = phrasebook(package)
    coded = {k: e for k, e in state["events"].items() if "_" in e["kind"]}
    assert coded, "no event of S0 has a kind with an underscore"
    for key, event in coded.items():
        name = book.name_of(state, "events", key) or book.short_name(state, "events", key)
        assert name is not None and event["kind"] not in name
        assert event["kind"].replace("_", " ") in name


def _pointed_mail_plan(turns: list[list[int]]) -> list[str]:
    """A real mail_triage chain on one S0 message the user points at through a handoff note
    (``file:`` provenance, a pointer sentence): a flag, a forward (a new message: "that message"
    could then be either), a label, over ``turns``, rendered by a terse persona."""
    package = load_package("mail_triage")
    world = package.env_class.generate(seed=1, data=package.data)
    initial = {"mail_triage": world.state.model_dump(mode="json")}
    message = next(iter(initial["mail_triage"]["messages"]))
    note = "file:inbox/shift-notes.md"
    calls = [
        GoldenCall("mail_triage", "flag_message", {"message_id": message}, {"message_id": note}, {}),
        GoldenCall(
            "mail_triage",
            "draft_forward",
            {"message_id": message, "to": ["Operations <ops@northwind.example>"]},
            {"message_id": note},
            {},
        ),
        GoldenCall(
            "mail_triage",
            "label_message",
            {"message_id": message, "label": "finance"},
            {"message_id": note},
            {},
        ),
    ]
    run = replay(calls, {"mail_triage": package}, initial, world.files)
    assert run is not None
    lead = "The handoff note in inbox/shift-notes.md flags a message as needing action."
    pointer = "the message that the handoff note in inbox/shift-notes.md flags as needing action"
    view = ChainView(
        run.calls,
        run.initial,
        run.after,
        [True] * 3,
        pointers={("mail_triage", message): pointer},
        leads={("mail_triage", message): lead},
    )
    plan = plan_intents(view, turns, {"mail_triage": package}, random.Random(0))
    return TemplateRenderer().render(plan, Persona("p", "Ana", "operations lead", "terse", "terse"))


def test_a_pointer_sentence_is_said_once_and_later_turns_refer_back() -> None:
    """Goals are planned out of turn order, so each used to say its own pointer sentence: the
    same "The handoff note ... flags a message" in every turn reads as two messages, and the
    draft was refused as repeated text. Said once now; after the forward (a message too) a later
    turn says which message it means."""
    texts = _pointed_mail_plan([[0], [1], [2]])
    said = " ".join(texts)
    assert said.count("flags a message as needing action") == 1, texts
    assert texts[0].startswith("The handoff note in inbox/shift-notes.md flags a message")
    assert "the flagged message" in texts[2], texts  # "that message" could be the forward
    assert lint.scan_turns("t", texts) == []
