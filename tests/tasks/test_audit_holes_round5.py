"""The fifth blind audit's holes (a deeper corpus, ``tasks synth --min-calls 5``), on its real
tasks (``tests/fixtures/audit_tasks_round5.jsonl``), each verifier synthesized again by this
checkout. Every case scored as the comment says on the audited code (``4e77427``):

* a flag the user asked for on the message the run itself made was never checked (1.0 without it);
* a reply edited after drafting lost its quote, which its file check expects (0.889);
* a period left to the env while another period was open, so the turn never said it (0.075, 0.25);
* a forward noted "Please take a look." (0.7) and a reason "plans have changed" for "plans changed" (0.875);
* "that trip" said of the trip turn 1 named, right after the job made another (0.188);
* a lookup the user expects refused, phrased without the request it was for (0.115);
* a job that gave a class a substitute coach and then cancelled the class (steps, not a goal);
* a reply dictated as the letter it answers, said back to its writer.
"""

from __future__ import annotations

import copy
import random

import pytest

from envcraft.core.package import EnvPackage, load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.coherence import tidy
from envcraft.tasks.golden.defaults import spell_out_defaults
from envcraft.tasks.golden.run import GoldenRun, replay
from envcraft.tasks.graphs.graph import build_tool_graph
from envcraft.tasks.phrasing.intents import ChainView, IntentPlan, plan_intents
from envcraft.tasks.values.args import StateIndex, user_values

from .test_created_records import audit_tasks, call, score
from .test_reward_semantics import Turns, reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round5.jsonl")


def without(turns: Turns, tool: str, **args: str) -> Turns:
    """``turns`` less the calls of ``tool`` with ``args``."""
    return [
        [c for c in calls if not (c["tool"] == tool and all(c["args"].get(k) == v for k, v in args.items()))]
        for calls in copy.deepcopy(turns)
    ]


def planned(task: Task, run: GoldenRun, package: EnvPackage) -> IntentPlan:
    """The intents planned for ``run`` (the task's reference replayed) with the task's turns."""
    turns = [[i for i, c in enumerate(task.reference.calls) if c.turn == t] for t in range(len(task.turns))]
    mutating = [not package.env_class.tools[c.tool].annotations.read_only for c in run.calls]
    view = ChainView(run.calls, run.initial, run.after, mutating)
    return plan_intents(view, turns, {package.id: package}, random.Random(0))


def test_a_flag_on_the_message_the_run_made_is_checked(tasks: dict[str, Task]) -> None:
    """itinerary_rebooking-64827ac3039e, turn 3: "flag the message you created" (the forward sent
    in turn 2). Leaving the flag out, or flagging the original again, scored 1.0: a new record's
    flags are the tool's doing (free), so no check read them, even where a later asked call set them."""
    task = tasks["itinerary_rebooking-64827ac3039e"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    unflagged = without(turns, "flag_message", message_id="MSG-0010")
    assert score(task, unflagged) < 1.0
    again = copy.deepcopy(unflagged)
    again[2].insert(0, call("mail_triage", "flag_message", message_id="MSG-0008"))
    assert score(task, again) < 1.0


def test_a_reply_edited_after_drafting_keeps_its_quote(tasks: dict[str, Task]) -> None:
    """infra_recovery-ddd3f0c6479c: the reply drafted, then ``edit_draft(body=...)`` to put the
    host's id in front (0.889: the new body replaced the quote too, which the draft's file
    check expects; the user never asked to drop it)."""
    task = tasks["infra_recovery-ddd3f0c6479c"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    t, n = next(
        (t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == "draft_reply"
    )
    body = turns[t][n]["args"]["body"]
    host = next(c["args"]["host_id"] for c in turns[t] if c["tool"] == "drain_host")
    edited = copy.deepcopy(turns)
    assert body.startswith(f"Host {host}: ")
    edited[t][n]["args"]["body"] = body.removeprefix(f"Host {host}: ")  # drafted without the id
    edited[t].insert(
        n + 1,
        call(
            "mail_triage",
            "edit_draft",
            draft_id="MSG-0010",
            body=f"Re host {host}.\n\n{edited[t][n]['args']['body']}",
        ),
    )
    assert score(task, edited) == 1.0


@pytest.mark.parametrize(
    ("task_id", "tool"),
    [
        ("inventory_ledger-a5eb51f4a09a", "start_cycle_count"),
        ("inventory_ledger-4d65c5f32f78", "begin_transaction"),
    ],
)
def test_a_default_the_world_exercises_is_passed_and_so_said(
    tasks: dict[str, Task], task_id: str, tool: str
) -> None:
    """Two journals or counts left their period to the env (January) while December was still
    open, and turn 1 of one had named December: a blind agent carried December over (0.075),
    another opened the year-end journal in December (0.25). The golden run now passes the period
    the env resolved, so the turn says it; the world ends the same."""
    task = tasks[task_id]
    packages = {env: load_package(env) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None
    spelled = spell_out_defaults(run, packages, task.initial_state, task.workspace)
    changed = [(a, b) for a, b in zip(run.calls, spelled.calls, strict=True) if a.args != b.args]
    assert [(a.tool, b.args) for a, b in changed] == [(tool, {**changed[0][0].args, "period": "2026-01"})]
    assert spelled.final == run.final


def test_a_default_nothing_else_is_offered_for_stays_left_out(tasks: dict[str, Task]) -> None:
    task = tasks["class_booking-d239f0a73b7c"]
    packages = {env: load_package(env) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None and spell_out_defaults(run, packages, task.initial_state, task.workspace) is run


def test_a_short_note_on_a_forward_and_a_perfect_tense_are_the_asked_work(tasks: dict[str, Task]) -> None:
    """mail_triage-d27fc2983ab2: a forward with the note "Please take a look." (0.7: only a few
    courtesies were known); class_booking-d239f0a73b7c: the reason "plans have changed" for the
    dictated "plans changed" (0.875). A note that takes the forward back still fails."""
    mail = tasks["mail_triage-d27fc2983ab2"]
    turns = reference(mail)
    assert score(mail, turns) == 1.0
    t, n = next(
        (t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == "draft_forward"
    )
    for note, right in [("Please take a look.", True), ("Heads up, for your review.", True),
                        ("Ignore this, already resolved.", False)]:  # fmt: skip
        noted = copy.deepcopy(turns)
        noted[t][n]["args"]["body"] = note
        assert (score(mail, noted) == 1.0) is right, note
    booking = tasks["class_booking-d239f0a73b7c"]
    turns = reference(booking)
    for reason, right in [("Plans have changed.", True), ("plans has been changed", True),
                          ("plans have not changed", False)]:  # fmt: skip
        said = copy.deepcopy(turns)
        next(c for c in said[1] if c["tool"] == "cancel_class")["args"]["reason"] = reason
        assert (score(booking, said) == 1.0) is right, reason


def test_that_trip_is_not_said_once_the_job_made_another(tasks: dict[str, Task]) -> None:
    """rideshare_dispatch-94b66a0a4219, turn 2: "offer ... to driver Hannah Patel. After that
    record the driver's rating ... for that trip": the reference rates turn 1's trip, a blind agent
    rated the trip the offer had just made (0.188). Once the job made a record of the kind, an
    earlier one is named again in full, not "that trip"."""
    task = tasks["rideshare_dispatch-94b66a0a4219"]
    package = load_package("rideshare_dispatch")
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, {"rideshare_dispatch": package}, task.initial_state, task.workspace)
    assert run is not None
    plan = planned(task, run, package)
    rated = next(i for i, c in enumerate(run.calls) if c.tool == "rate_trip")
    mention = next(m for m in plan.mentions() if m.call == rated and m.arg == "trip_id")
    assert mention.text != "that trip" and "Sofia Novak" in mention.text


def test_a_step_the_user_expects_refused_says_what_it_is_for(tasks: dict[str, Task]) -> None:
    """rideshare_dispatch-4959aaabc1ef, turn 2: "try to list drivers free to take a trip now; if
    that is not possible, offer ..." left out the request the lookup was for (the one cancelled
    in turn 1, which is why it is refused): the plain lookup works, so a blind agent never took
    the fallback (0.115). A goal without a phrase of its own says the records it acts on."""
    task = tasks["rideshare_dispatch-4959aaabc1ef"]
    package = load_package("rideshare_dispatch")
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    calls[1].expected_error = "invalid_transition"
    calls[1].result = {"error": {"category": "invalid_transition"}}  # the request was cancelled
    run = replay(calls, {"rideshare_dispatch": package}, task.initial_state, task.workspace)
    assert run is not None and not run.calls[1].ok
    plan = planned(task, run, package)
    lookup = next(g for goals in plan.turns for g in goals if g.call == 1)
    assert lookup.planned_error and "ride request" in lookup.text  # "that ride request": turn 1 said it


def test_a_job_that_voids_its_own_work_is_no_job(tasks: dict[str, Task]) -> None:
    """class_booking-d239f0a73b7c: turn 1 gives a class a substitute coach, turn 2 cancels that
    class (a generated probe, not a goal: both audits read it as steps no person would ask for).
    A voiding step on a record an earlier step of the job changed rejects the chain."""
    task = tasks["class_booking-d239f0a73b7c"]
    packages = {env: load_package(env) for env in task.envs}
    graphs = {env: build_tool_graph(packages[env]) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None
    assert tidy(run, packages, graphs) == (None, "undo")
    voiding = next(i for i, c in enumerate(calls) if c.tool == "cancel_class")
    assigned = next(i for i, c in enumerate(calls) if c.tool == "assign_coach")
    kept = [c for i, c in enumerate(calls) if i not in (voiding, assigned)]
    rest = replay(kept, packages, task.initial_state, task.workspace)
    assert rest is not None and tidy(rest, packages, graphs)[1] != "undo"  # the other cancels stand


def test_a_reply_is_never_dictated_as_a_letter_of_the_world() -> None:
    """notes_desk-d655c9849df8 and infra_recovery-ddd3f0c6479c: the reply the user dictated was
    the customer's (or Marco's) own letter from S0, said back to them. A body is drawn from
    S0's short texts (a code, a reason) or the phrase bank, never from a letter somebody wrote."""
    package = load_package("mail_triage")
    world = package.env_class.generate(seed=1, data=package.data)
    state = world.state.model_dump(mode="json")
    letters = {m["body"] for m in state["messages"].values() if m["body"]}
    assert letters
    index = StateIndex.build(state, world.files)
    prop = package.env_class.tools["draft_reply"].parameters["properties"]["body"]
    for seed in range(20):
        values = user_values("body", prop, index, random.Random(seed))
        assert values and not letters & set(values)
