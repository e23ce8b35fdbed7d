"""Declared jobs: the work a desk exists for, found in a golden run and asked as one outcome."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from envcraft.core.package import builtin_ids, load_package
from envcraft.core.phrasing import Job, check_job, check_jobs
from envcraft.tasks.corpus.compose import SynthConfig, compose_draft, generate_initial, load_library
from envcraft.tasks.format.model import GoldenCall
from envcraft.tasks.golden.choose import Experience, Retry, carried_values
from envcraft.tasks.golden.coherence import job_spans, job_writes, tidy, writes
from envcraft.tasks.golden.run import GoldenRun, replay, run_chain
from envcraft.tasks.graphs.graph import build_tool_graph
from envcraft.tasks.graphs.walk import Coverage, Step, job_walk
from envcraft.tasks.phrasing.intents import ChainView, IntentPlan, plan_intents, split_turns
from envcraft.tasks.phrasing.leaks import missing_user_values
from envcraft.tasks.phrasing.render import TemplateRenderer

LEDGER = load_package("inventory_ledger")
RECEIVE = next(j for j in LEDGER.env_class.jobs if j.steps[1] == "add_receipt_line")


def ledger_state(seed: int = 1) -> dict[str, Any]:
    return LEDGER.env_class.generate(seed=seed, data=LEDGER.data).state.model_dump(mode="json")


def open_po_line(state: dict[str, Any]) -> tuple[str, str]:
    for po_id, po in sorted(state["purchase_orders"].items()):
        for sku_id, line in sorted(po["lines"].items()):
            if po["status"] == "open" and line["ordered"] - line["received"] >= 5:
                return po_id, sku_id
    raise AssertionError("no open purchase order line in S0")


def receive_run() -> GoldenRun:
    """begin_transaction -> add_receipt_line -> commit_transaction of 5 units, run for real."""
    state = ledger_state()
    po_id, sku_id = open_po_line(state)
    journal = {"journal_id": "JNL-00001"}
    calls = [
        GoldenCall(
            "inventory_ledger", "begin_transaction", {"memo": "Dock 4 delivery"}, {"memo": "user"}, {}
        ),
        GoldenCall(
            "inventory_ledger",
            "add_receipt_line",
            {**journal, "po_id": po_id, "sku_id": sku_id, "quantity": 5},
            {"journal_id": "derived:0.journal_id", "po_id": "user", "sku_id": "user", "quantity": "user"},
            {},
        ),
        GoldenCall(
            "inventory_ledger", "commit_transaction", journal, {"journal_id": "derived:0.journal_id"}, {}
        ),
    ]
    run = replay(calls, {"inventory_ledger": LEDGER}, {"inventory_ledger": state}, {})
    assert run is not None and all(c.ok for c in run.calls), [c.result for c in run.calls] if run else None
    return run


GRAPHS = {"inventory_ledger": build_tool_graph(LEDGER)}


def test_check_job_names_unknown_tools_parameters_and_single_steps() -> None:
    params = {"a": {"x"}, "b": {"y"}}
    assert check_job(Job("ok", ("a", "b"), "do {x} with {y}"), params) == []
    assert "unknown tools c" in check_job(Job("j", ("a", "c"), "do {x}"), params)[0]
    assert "fewer than two steps" in check_job(Job("j", ("a",), "do {x}"), params)[0]
    assert "fewer than two steps" in check_job(Job("j", ("a", "b"), "do {x}"), params, frozenset({"a"}))[0]
    assert check_job(Job("ok", ("a", "b"), "do {a.x} with {b.y}"), params) == []  # a step's own
    assert "unknown parameters b.x" in check_job(Job("j", ("a", "b"), "do {b.x}"), params)[0]
    assert "unknown parameters z" in check_job(Job("j", ("a", "b"), "do {z}"), params)[0]
    assert "unclosed" in check_job(Job("j", ("a", "b"), "do [{x}"), params)[0]
    assert check_job(Job("ok", ("a", "b"), "do {x}", examples={"x": ("one",), "b.y": ("two",)}), params) == []
    assert (
        "examples for unknown parameter z"
        in check_job(Job("j", ("a", "b"), "do {x}", examples={"z": ("t",)}), params)[0]
    )
    assert (
        "not a tuple of texts" in check_job(Job("j", ("a", "b"), "do {x}", examples={"x": ("",)}), params)[0]
    )


def test_a_job_says_its_own_words_for_a_free_text_parameter() -> None:
    """The receipt's memo is a receipt's ("Goods received at the dock"), not one of the memo
    examples the journal tool declares for any journal ("Month-end stock correction"), nor a
    memo of S0's journals: what a user of the desk dictates for this work."""
    library = load_library(["inventory_ledger"])
    assert RECEIVE.examples_for("begin_transaction") == {"memo": RECEIVE.examples["memo"]}
    words = {tool: RECEIVE.examples_for(tool) for tool in RECEIVE.steps}
    memos = set()
    for seed in range(4):
        initial, files = generate_initial(library.packages, f"memo:{seed}", 1)
        chain = [Step("inventory_ledger", tool) for tool in RECEIVE.steps]
        run = run_chain(
            chain, library.packages, library.graphs, initial, files, random.Random(seed), examples=words
        )
        if run is not None:
            memos |= {c.args["memo"] for c in run.calls if c.tool == "begin_transaction"}
    assert memos and memos <= set(RECEIVE.examples["memo"])


@pytest.mark.parametrize("env", builtin_ids())
def test_every_builtin_job_names_its_own_tools_and_parameters(env: str) -> None:
    env_class = load_package(env).env_class
    params = {name: set(spec.parameters.get("properties", {})) for name, spec in env_class.tools.items()}
    reads = frozenset(n for n, spec in env_class.tools.items() if spec.annotations.read_only)
    for job in env_class.jobs:
        assert check_job(job, params, reads) == [], job.name


def test_job_spans_find_a_job_whose_steps_act_on_what_the_earlier_made() -> None:
    run = receive_run()
    assert job_spans(run.calls, writes(run, GRAPHS), {"inventory_ledger": LEDGER}) == [(RECEIVE, [0, 1, 2])]


def test_job_spans_refuse_a_last_step_on_a_record_the_job_did_not_touch() -> None:
    run = receive_run()
    wrote = writes(run, GRAPHS)
    run.calls[2] = replace(run.calls[2], args={"journal_id": "JNL-09999"}, result={"journal_id": "JNL-09999"})
    assert job_spans(run.calls, wrote, {"inventory_ledger": LEDGER}) == []


def test_job_spans_refuse_a_job_with_a_planned_refusal_inside() -> None:
    run = receive_run()
    run.calls[1].expected_error = "conflict"
    assert job_spans(run.calls, writes(run, GRAPHS), {"inventory_ledger": LEDGER}) == []


def test_split_turns_keeps_a_jobs_steps_in_one_turn() -> None:
    mutating = [True, True, True, True]
    held = [True, True, False, False]  # calls 0-2 are one job
    for seed in range(30):
        turns = split_turns(mutating, held, random.Random(seed), min_turns=2)
        assert any({0, 1, 2} <= set(t) for t in turns)


RECEIPT_MENTIONS = {(0, "memo"), (1, "po_id"), (1, "sku_id"), (1, "quantity")}  # what the user says


def planned(run: GoldenRun, turns: list[list[int]], spans: list[tuple[Job, list[int]]]) -> IntentPlan:
    """The intent plan of ``run`` split into ``turns``, with ``spans`` its jobs."""
    view = ChainView(run.calls, run.initial, run.after, writes(run, GRAPHS))
    return plan_intents(view, turns, {"inventory_ledger": LEDGER}, random.Random(0), jobs=spans)


def test_a_job_is_asked_as_its_outcome_with_every_value_the_user_holds() -> None:
    run = receive_run()
    spans = job_spans(run.calls, writes(run, GRAPHS), {"inventory_ledger": LEDGER})
    plan = planned(run, [[0, 1, 2]], spans)
    [goal] = plan.turns[0]
    assert goal.job == RECEIVE.name and goal.calls == (0, 1, 2)
    assert goal.text.startswith("book the receipt of 5 units of")
    assert "“Dock 4 delivery”" in goal.text
    assert "draft journal" not in goal.text and "post" not in goal.text  # the steps are the agent's
    assert {(m.call, m.arg) for m in goal.mentions} == RECEIPT_MENTIONS


def test_the_same_job_split_over_two_turns_is_asked_step_by_step() -> None:
    run = receive_run()
    spans = job_spans(run.calls, writes(run, GRAPHS), {"inventory_ledger": LEDGER})
    plan = planned(run, [[0, 1], [2]], spans)
    assert [len(goals) for goals in plan.turns] == [2, 1] and not any(g.job for t in plan.turns for g in t)


def test_a_later_step_using_up_what_an_earlier_step_set_aside_is_no_undo() -> None:
    """reserve_stock then ship_order puts `reserved` back where it was: a declared job's later
    step, not a step taking the earlier one back."""
    state = ledger_state()
    for order in sorted(k for k, o in state["orders"].items() if o["status"] == "open"):
        calls = [
            GoldenCall("inventory_ledger", "reserve_stock", {"order_id": order}, {"order_id": "user"}, {}),
            GoldenCall("inventory_ledger", "ship_order", {"order_id": order}, {"order_id": "user"}, {}),
        ]
        run = replay(calls, {"inventory_ledger": LEDGER}, {"inventory_ledger": state}, {})
        if run is not None and all(c.ok for c in run.calls):
            break
    else:
        raise AssertionError("no open order S0 can reserve and ship")
    tidied, reason = tidy(run, {"inventory_ledger": LEDGER}, GRAPHS)
    assert reason == "ok" and tidied is not None and len(tidied.calls) == 2


def test_an_error_listing_the_ids_a_parameter_may_take_blames_that_parameter() -> None:
    node = GRAPHS["inventory_ledger"].nodes["record_count"]
    call = GoldenCall(
        "inventory_ledger",
        "record_count",
        {"count_id": "CC-0002", "sku_id": "SKU-12828", "counted_quantity": 1},
        {"count_id": "derived:0.count_id", "sku_id": "user", "counted_quantity": "user"},
        {
            "error": {
                "category": "not_found",
                "message": "...",
                "count_id": "CC-0002",
                "sku_ids": ["SKU-13960"],
            }
        },
    )
    retry = Retry()
    retry.learn(node, call, random.Random(0))
    assert retry.suggested == {"sku_id": "SKU-13960"}  # not a SKU offered as the count's id
    assert ("count_id", "CC-0002") not in retry.avoid and "count_id" in retry.keep


def test_a_refusal_that_blames_no_argument_moves_the_next_try_off_the_option_it_refused() -> None:
    """The refusal "has not opted in to SMS; use email" echoes the traveler, no argument: kept so,
    the next tries asked for SMS again until the step ran out of them (the itinerary desk's job
    "re-time the pickup and tell the traveler" failed in most drafts of a deeper corpus)."""
    itinerary = load_package("itinerary_rebooking")
    node = build_tool_graph(itinerary).nodes["notify_traveler"]
    args = {"itinerary_id": "ITN-4002", "channel": "sms", "message": "Your pickup moved."}
    call = GoldenCall(
        "itinerary_rebooking",
        "notify_traveler",
        args,
        {"itinerary_id": "user", "channel": "user", "message": "user"},
        {
            "error": {
                "category": "permission_denied",
                "message": "traveler TRV-102 has not opted in to SMS; use email",
                "traveler_id": "TRV-102",
                "missing_permission": "sms_opt_in",
            }
        },
    )
    retry = Retry()
    retry.learn(node, call, random.Random(0))
    assert ("channel", "sms") in retry.avoid and "channel" not in retry.keep
    assert set(retry.keep) == {"itinerary_id", "message"}  # the itinerary and the text stand


def test_job_walks_weigh_jobs_the_corpus_asked_less() -> None:
    jobs = LEDGER.env_class.jobs
    coverage = Coverage()
    coverage.jobs.update({("inventory_ledger", j.name): 9 for j in jobs[1:]})
    drawn = Counter(job_walk("inventory_ledger", jobs, random.Random(s), coverage)[0].name for s in range(40))
    assert drawn.most_common(1)[0][0] == jobs[0].name
    job, steps = job_walk("inventory_ledger", jobs, random.Random(0), Coverage())
    assert steps == [Step("inventory_ledger", t) for t in job.steps]


def test_a_walked_job_becomes_a_task_that_asks_for_it_or_is_refused_as_job() -> None:
    library = load_library(["inventory_ledger"])
    outcomes: Counter[str] = Counter()
    for seed in range(6):
        chain = [Step("inventory_ledger", t) for t in RECEIVE.steps]
        draft, reason = compose_draft(
            library,
            chain,
            f"jobs:{seed}",
            random.Random(seed),
            Coverage(),
            SynthConfig(),
            TemplateRenderer(seed=str(seed)),
            Experience(),
            job=RECEIVE,
        )
        outcomes[reason] += 1
        if draft is None:
            continue
        task = draft.task
        assert task is not None
        [asked] = [j for j in task.provenance["jobs"] if j["job"] == RECEIVE.name]
        tools = [task.reference.calls[i].tool for i in asked["calls"]]
        assert tools == list(RECEIVE.steps)
        assert len({task.reference.calls[i].turn for i in asked["calls"]}) == 1
        text = " ".join(t.user for t in task.turns).lower()
        assert "book the receipt" in text and "draft journal" not in text
        assert missing_user_values(task) == []
    assert outcomes["ok"] >= 2, outcomes
    assert set(outcomes) <= {"ok", "job"}, outcomes


def test_a_step_placeholder_shows_that_steps_own_value_where_two_steps_share_a_parameter() -> None:
    """Two steps both take ``quantity``: ``{quantity}`` would show the first step's alone, and the
    second's would be said again in parentheses; ``{tool.param}`` shows each where it belongs."""
    run = receive_run()
    job = Job(
        "receive with a note",
        ("begin_transaction", "add_receipt_line", "commit_transaction"),
        "book {add_receipt_line.quantity} unit(s) of {sku_id} against {po_id} as {begin_transaction.memo}",
    )
    spans = [(job, [0, 1, 2])]
    plan = planned(run, [[0, 1, 2]], spans)
    [goal] = plan.turns[0]
    assert goal.text.startswith("book 5 units of") and goal.text.endswith("as “Dock 4 delivery”")
    assert "(" not in goal.text
    assert {(m.call, m.arg) for m in goal.mentions} == RECEIPT_MENTIONS


def test_a_step_naming_no_record_goes_with_any_job_step_before_it() -> None:
    """An export of the whole desk names no record: it belongs to the job it follows."""
    run = receive_run()
    wrote = writes(run, GRAPHS)
    run.calls[2] = replace(run.calls[2], args={}, result={"posted": True})
    assert job_spans(run.calls, wrote, {"inventory_ledger": LEDGER}) == [(RECEIVE, [0, 1, 2])]


def test_a_jobs_read_only_step_is_walked_but_not_matched() -> None:
    job = Job("receive after a look", ("list_purchase_orders", *RECEIVE.steps), RECEIVE.goal)
    assert job_writes(job, LEDGER) == RECEIVE.steps
    assert (
        job_walk("inventory_ledger", (job,), random.Random(0), Coverage())[1][0].tool
        == "list_purchase_orders"
    )


def test_a_jobs_later_step_rewriting_what_its_earlier_step_wrote_is_no_undo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """add_todo writes "- [ ] TODO-01 ..." to todo.md, complete_todo rewrites it "[x]": text an
    earlier step wrote, rewritten (an undo), unless the two are a declared job's steps."""
    library = load_library(["mail_triage"])
    packages = {"mail_triage": library.packages["mail_triage"]}
    initial, files = generate_initial(packages, "todo", 1, {})
    calls = [
        GoldenCall("mail_triage", "add_todo", {"text": "Call the venue"}, {"text": "user"}, {}),
        GoldenCall(
            "mail_triage", "complete_todo", {"todo_id": "TODO-01"}, {"todo_id": "derived:0.todo_id"}, {}
        ),
    ]
    run = replay(calls, packages, initial, files)
    assert run is not None and all(c.ok for c in run.calls)
    env_class = packages["mail_triage"].env_class
    monkeypatch.setattr(env_class, "jobs", ())  # (mail_triage declares such a job itself)
    assert tidy(run, packages, library.graphs)[1] == "undo"
    monkeypatch.setattr(
        env_class, "jobs", (Job("log a done task", ("add_todo", "complete_todo"), "log {text}"),)
    )
    assert tidy(run, packages, library.graphs)[1] == "ok"


def test_a_step_naming_no_record_stays_in_the_run_after_a_step_of_its_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """export_action_items() names no record: after an unrelated step it is cut off (no step of
    the job names anything it uses); as the next step of a declared job it stays."""
    library = load_library(["notes_desk"])
    packages = {"notes_desk": library.packages["notes_desk"]}
    initial, files = generate_initial(packages, "export", 1, {})
    item = {"title": "Draft the launch FAQ", "owner": "chen", "due": "2026-03-09"}
    calls = [
        GoldenCall("notes_desk", "add_action_item", item, dict.fromkeys(item, "user"), {}),
        GoldenCall("notes_desk", "export_action_items", {}, {}, {}),
    ]
    run = replay(calls, packages, initial, files)
    assert run is not None and all(c.ok for c in run.calls)
    env_class = packages["notes_desk"].env_class
    monkeypatch.setattr(env_class, "jobs", ())  # (notes_desk declares such a job itself)
    tidied = tidy(run, packages, library.graphs)[0]
    assert tidied is not None and [c.tool for c in tidied.calls] == ["add_action_item"]
    job = Job("track and publish", ("add_action_item", "export_action_items"), "track {title} for {owner}")
    monkeypatch.setattr(env_class, "jobs", (job,))
    tidied = tidy(run, packages, library.graphs)[0]
    assert tidied is not None and [c.tool for c in tidied.calls] == ["add_action_item", "export_action_items"]
    assert job_spans(tidied.calls, writes(tidied, library.graphs), packages) == [(job, [0, 1])]


def test_two_jobs_of_the_same_changing_steps_are_refused() -> None:
    params = {"a": {"x"}, "b": {"y"}, "look": set()}
    jobs = (Job("one", ("a", "b"), "do {x}"), Job("two", ("look", "a", "b"), "do {x} and {y}"))
    assert check_jobs(jobs, params, frozenset({"look"})) == [
        "jobs 'one' and 'two' change things with the same steps"
    ]
    assert check_jobs(jobs[:1], params, frozenset({"look"})) == []


def test_a_lookup_between_two_steps_links_the_second_only_to_the_record_the_job_made() -> None:
    """open an incident for a service, list that service's hosts, drain one: the host is no value
    the incident named, but the lookup on its service answered it. A record of the kind the job
    made is that record, though: a lookup on the opened journal that answered another journal
    links no posting of that one (round 39, Q4: "already done" of another of emil's items, the
    first a listing by owner gave)."""
    run = receive_run()
    wrote = writes(run, GRAPHS)
    po_id = run.calls[1].args["po_id"]
    look = GoldenCall(
        "inventory_ledger", "get_journal", {"journal_id": "JNL-00001"}, {}, {"journal_id": "JNL-X"}
    )
    calls = list(run.calls)
    calls[2] = replace(calls[2], args={"journal_id": "JNL-X"}, result={"journal_id": "JNL-X"})
    assert job_spans(calls, wrote, {"inventory_ledger": LEDGER}) == []
    calls.insert(2, look)
    assert job_spans(calls, [*wrote[:2], False, wrote[2]], {"inventory_ledger": LEDGER}) == []
    calls[3] = run.calls[2]  # the posting of the journal the job opened, the lookup between
    assert job_spans(calls, [*wrote[:2], False, wrote[2]], {"inventory_ledger": LEDGER}) == [
        (RECEIVE, [0, 1, 3])
    ]
    unrelated = replace(look, args={"journal_id": po_id + "-other"})  # a lookup on nothing the job touched
    calls[2] = unrelated
    calls[3] = replace(calls[3], args={"journal_id": "JNL-X"}, result={"journal_id": "JNL-X"})
    assert job_spans(calls, [*wrote[:2], False, wrote[2]], {"inventory_ledger": LEDGER}) == []


def test_an_error_stating_a_time_window_blames_the_time_and_offers_its_bounds() -> None:
    """ "pickup must be between 14:10 and 15:20 for the flight's arrival" echoes no argument:
    the next tries kept the pickup time, or moved off the transfer, until the step ran out of
    tries (the itinerary desk's job was refused in most of its drafts)."""
    itinerary = load_package("itinerary_rebooking")
    node = build_tool_graph(itinerary).nodes["reschedule_transfer"]
    args = {"transfer_id": "TRF-0003", "pickup_at": "2026-03-13T18:00:00Z"}
    call = GoldenCall(
        "itinerary_rebooking",
        "reschedule_transfer",
        args,
        {"transfer_id": "user", "pickup_at": "user"},
        {
            "error": {
                "category": "conflict",
                "message": "pickup must be between 2026-03-13T14:10:00Z and 2026-03-13T15:20:00Z for the "
                "flight's arrival",
                "earliest": "2026-03-13T14:10:00Z",
                "latest": "2026-03-13T15:20:00Z",
            }
        },
    )
    retry = Retry()
    retry.learn(node, call, random.Random(0))
    # inside the window, never on a bound the world computes (and may move the pickup to itself)
    assert retry.suggested["pickup_at"] == "2026-03-13T14:45:00Z"
    assert retry.keep == {"transfer_id": ("TRF-0003", "user", None)}  # the transfer stands


def test_job_walks_draw_a_job_the_world_keeps_refusing_less() -> None:
    jobs = LEDGER.env_class.jobs
    coverage = Coverage()
    coverage.jobs.update({("inventory_ledger", j.name): 3 for j in jobs[1:]})
    coverage.jobs_refused[("inventory_ledger", jobs[0].name)] = 30
    drawn = Counter(job_walk("inventory_ledger", jobs, random.Random(s), coverage)[0].name for s in range(60))
    assert drawn[jobs[0].name] < 60 / len(jobs) / 2, drawn


STREAM = load_package("event_stream")
STREAM_GRAPHS = {"event_stream": build_tool_graph(STREAM)}


def stream_job_runs(job_name: str, seeds: range) -> list[GoldenRun]:
    job = next(j for j in STREAM.env_class.jobs if j.name == job_name)
    runs = []
    for seed in seeds:
        initial = STREAM.env_class.generate(seed=seed, data=STREAM.data)
        run = run_chain(
            [Step("event_stream", t) for t in job.steps],
            {"event_stream": STREAM},
            STREAM_GRAPHS,
            {"event_stream": initial.state.model_dump(mode="json")},
            dict(initial.files),
            random.Random(seed),
            p_error=0.0,
            examples={tool: job.examples_for(tool) for tool in job.steps},
        )
        assert run is not None
        runs.append(run)
    return runs


def test_a_jobs_steps_name_the_record_the_step_before_named() -> None:
    """A partition is a topic and a number: chosen each on its own, the commit named another
    partition than the one processed (payments/p2, then refunds/p2), and the job was refused."""
    runs = stream_job_runs("catch a partition up and commit it", range(12))
    named = []
    for run in runs:
        done = {c.tool: (c.args["topic"], c.args["partition"]) for c in run.calls if c.ok}
        process = done.get("process_batch")
        named.append(process is not None and done.get("commit_offsets") == process)
    assert all(named), named


def test_a_jobs_step_that_changes_nothing_is_tried_again() -> None:
    """A replay "from" the offset the partition stands at (seek's default) moves nothing; kept, the
    job was refused after its golden run, or asked for a step that does nothing."""
    for run in stream_job_runs("replay a partition from an offset", range(6)):
        for i, call in enumerate(run.calls):
            if call.ok and call.tool == "seek":
                assert run.changed_by(i), call.args


def test_carried_values_are_the_last_stated_values_of_the_required_parameters() -> None:
    node = STREAM_GRAPHS["event_stream"].nodes["commit_offsets"]
    calls = [
        GoldenCall(
            "event_stream",
            "process_batch",
            {"topic": "payments", "partition": 2},
            {"topic": "user", "partition": "user"},
            {"ok": True},
        ),
        GoldenCall(
            "event_stream",
            "process_batch",
            {"topic": "refunds", "partition": 0},
            {"topic": "user", "partition": "user"},
            {"error": {"category": "conflict", "message": "x"}},
        ),
    ]
    assert carried_values(calls, node) == {"topic": "payments", "partition": 2}
