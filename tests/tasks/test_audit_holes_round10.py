"""The tenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round10.jsonl``, a
default run at ``88476ce``, seed 10), each verifier synthesized again by this checkout:

* the validation's ``cosmetic_text`` agent: the dictated note of a journal line staged in a
  journal the task also opened was compared byte for byte (a list of new records matched by
  content kept its text fields exact), so the note without its final full stop scored 0.25;
* the validation's ``extra_write`` agent rescheduled another transfer to the time it already had
  and counted a flight the world cancelled meanwhile (a scheduled event, as in any slower correct
  run) as its harm: the task was dropped for a verifier that was right to pay 1.0;
* helper X: the asked cancel reason with an aside naming the class by its type and date,
  "requested by the owner (Boxing Fit, Jan 12 07:00)", scored 0.5: an aside could name a
  record by its ids, names and titles, not by its type;
* helper W: a dedupe rule the user did not say how to apply, added with ``option="last"`` (as
  the recipe's other dedupe rule) scored 0.25: the rule and the lineage file the environment
  renders from it pinned the empty option the reference left out;
* helper V: a reply naming the incident by its title, "Incident INC-2041 (inventory-sync error
  rate above 5%)", scored 0.75: the numbers of what the world says about a record were never
  words a composed text may use, not even those of the record's own title;
* helper V: the asked handover JSON also naming the health check the user asked for,
  ``"health_check": "HC-0001"``, scored 0.8: an extra key could only repeat the asked record;
* round 11, helper YA (a seed-11 default run at ``4c750ce``, same fixture file): an unasked offer
  of the request to another driver, cancelled by the dispatcher, left that driver in the
  request's ``declined_by`` for good and paid 1.0: a list goal let other members come and go;
* round 11, helper YD: a dictated reason followed by title-cased words of the world's own
  vocabulary, "Duplicate request - Cancelled By Rider" (a dispatcher's cancellation) and "plans
  changed - Load Warehouse Skipped" (a job still pending), paid 1.0: the words were read as a
  person's name signing or attributing the reason;
* round 11, helper YD: a reply carrying the new health check's id and a false word about it,
  "Health check HC-0001: notification-worker healthy." (the check failed), paid 1.0: the words
  the world says about a carried record included a failure's "not healthy" without its "not",
  and every word of the records it points at (a service's dependencies and their statuses);
* round 11, helper YB: the text message to the traveler (itinerary_rebooking's MSG-0001)
  described in a reply as the inbox's MSG-0001, "Omar's message MSG-0001 about the Q4 freight
  cost for the board deck", paid 1.0: the words of the inbox message's file, which shares the
  id, counted as words about the carried record;
* round 11, helper YD: a cancel after 36 lookups (18 minutes on the dispatch clock) scored 0.5:
  another rider's request expired meanwhile, and the late runs the guards excuse the world's
  own changes by went only to 24 lookups;
* round 12, helper ZB (a seed-12 default run at ``07eea06``): an asked Markdown section giving
  the new draft's id scored 0.667 with "Drafted a reply ..." (the act's own words were no
  framing) and 1.0 with "Sent reply MSG-0010 to Omar." (a draft went nowhere);
* round 12, helper ZC: "Process partition 2 of the payments topic, ..." of a 25-record backlog,
  all of it processed, scored 0.167: the reference left the batch size to its default of 20,
  which the turn never said (only codes were spelled out as defaults the world exercises).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.defaults import spell_out_defaults
from envcraft.tasks.golden.run import replay
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.validation.adversarial import Adversary
from envcraft.tasks.verifier.scoring import run_verifier

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference, reference_with


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round10.jsonl")


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("please double-check before closing", True),
        ("Please double-check before closing!", True),
        ("Please do not double-check before closing.", False),
        ("Please double-check before closing. Correction: please disregard this message.", False),
        ("Closing as is.", False),
    ],
)
def test_a_journal_lines_dictated_note_is_read_within_reason(
    tasks: dict[str, Task], note: str, paid: bool
) -> None:
    """inventory_ledger-938e40cfbac6: open a draft journal, then stage an adjustment in it
    "noting “Please double-check before closing.”" (the journal and its line are both new)."""
    task = tasks["inventory_ledger-938e40cfbac6"]
    assert score(task, reference(task)) == 1.0
    assert (score(task, reference_with(task, "add_adjustment_line", note=note)) == 1.0) is paid


def test_what_the_world_does_meanwhile_is_no_extra_writes_harm(tasks: dict[str, Task]) -> None:
    """itinerary_rebooking-f274f76545f5: move one transfer's pickup and e-mail its traveler. An
    extra call moves the clock past a scheduled flight cancellation; a real extra write is caught."""
    task = tasks["itinerary_rebooking-f274f76545f5"]
    trials, _ = Adversary(task, resolve_packages(task)).trials(execute_reference(task))
    for trial in trials:
        if trial.kind == "extra_write":
            assert run_verifier(task, trial.outcome).score < 1.0, trial.note
    same = {"transfer_id": "TRF-0003", "pickup_at": "2026-03-13T14:35:00Z"}  # the time it has
    moved = {"transfer_id": "TRF-0003", "pickup_at": "2026-03-13T14:45:00Z"}
    for args, paid in ((same, True), (moved, False)):
        turns = reference(task)
        turns[0].append({"env": "itinerary_rebooking", "tool": "reschedule_transfer", "args": args})
        assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("Requested by the owner (Boxing Fit, Jan 12 07:00)", True),
        ("Requested by the owner (Boxing Fit, Jan 12)", True),
        ("requested by the owner (boxing-fit class, 2026-01-12)", True),
        ("Requested by the owner (Boxing Fit, Jan 12 07:00, RM-11)", True),
        ("requested by the owner (cycling)", False),  # another type: the coach's qualification
        ("requested by the owner; members refunded", False),
        ("requested by the owner due to low bookings", False),
        ("not requested by the owner", False),
    ],
)
def test_an_aside_may_name_the_class_by_its_type(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    """class_booking-54bb76213e25: "Cancel the boxing-fit class on January 12 at 07:00 in room
    RM-11; the reason is “requested by the owner”."."""
    task = tasks["class_booking-54bb76213e25"]
    assert (score(task, reference_with(task, "cancel_class", reason=reason)) == 1.0) is paid


@pytest.mark.parametrize(
    ("step", "paid"),
    [
        ({"option": "last"}, True),
        ({"option": "first"}, True),
        ({"column": "customer_id"}, False),
        ({"operation": "trim"}, False),
        ({"recipe_id": "RCP-01"}, False),
    ],
)
def test_an_option_nobody_named_is_the_agents_choice(
    tasks: dict[str, Task], step: dict[str, Any], paid: bool
) -> None:
    """sheet_analytics-d07bf021ac3b: "Add a dedupe rule for the order_id column to cleaning
    recipe RCP-02.", then "remove rule 6 from cleaning recipe RCP-01"."""
    task = tasks["sheet_analytics-d07bf021ac3b"]
    assert (score(task, reference_with(task, "add_cleaning_rule", **step)) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        (
            "Host search-a1: Running a few minutes late. "
            "Incident INC-2041 (inventory-sync error rate above 5%).",
            True,
        ),
        ("Host search-a1: Running a few minutes late. Incident INC-2041.", True),
        ("Host search-a1: Running a few minutes late. Incident INC-2041, error rate above 7%.", False),
        ("Host search-a1: Running a few minutes late. Incident INC-2041 costs 5 dollars.", False),
    ],
)
def test_a_reply_may_name_the_incident_by_its_title(tasks: dict[str, Task], body: str, paid: bool) -> None:
    """infra_recovery-7b6c4829aa64: a note on the incident, then "draft a reply to the message
    “Q4 freight cost for the board deck” ... saying “Host search-a1: Running a few minutes
    late.”, mentioning the id of that incident"."""
    task = tasks["infra_recovery-7b6c4829aa64"]
    assert (score(task, reference_with(task, "draft_reply", body=body)) == 1.0) is paid


HANDOVER = "reports/handover.json"


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({"health_check": "HC-0001"}, True),
        ({"Health checks": "HC-0001"}, True),
        ({"health_check": "HC-0002"}, False),  # no such check was made
        ({"incident": "INC-2041"}, False),  # another incident: a second answer
        ({"health_check": "passed"}, False),  # a claim
    ],
)
def test_an_asked_object_may_name_another_record_the_run_made(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    """infra_recovery-219f4b25882a: a health check, a new incident, then "save a JSON object in
    reports/handover.json with “new_incident” set to the id of the new incident"."""
    task = tasks["infra_recovery-219f4b25882a"]
    turns = reference(task)
    write = next(c for c in turns[-1] if c["args"].get("path") == HANDOVER)
    write["args"]["content"] = json.dumps({"new_incident": "INC-2042", **extra})
    assert (score(task, turns) == 1.0) is paid


RIDE = "rideshare_dispatch"


def _offer(driver: str) -> dict[str, Any]:
    return {"env": RIDE, "tool": "propose_match", "args": {"request_id": "REQ-2606", "driver_id": driver}}


def _cancel(trip: str) -> dict[str, Any]:
    args = {"trip_id": trip, "cancelled_by": "dispatcher", "reason": "not asked"}
    return {"env": RIDE, "tool": "cancel_trip", "args": args}


LOOK = {"env": RIDE, "tool": "score_match", "args": {"request_id": "REQ-2606", "driver_id": "DRV-593"}}


@pytest.mark.parametrize(
    ("calls", "paid"),
    [
        ([_offer("DRV-593")], True),
        ([LOOK, _offer("DRV-593")], True),
        ([_offer("DRV-855"), _cancel("TRP-40164"), _offer("DRV-593")], False),
        ([_offer("DRV-593"), _offer("DRV-855"), _cancel("TRP-40165")], False),
    ],
)
def test_no_driver_is_excluded_from_a_request_but_the_asked_one(
    tasks: dict[str, Task], calls: list[dict[str, Any]], paid: bool
) -> None:
    """rideshare_dispatch-eb532237b4ec: "Offer Hannah Kim (+1-555-857-1616)'s ride request from
    Z-MID to Z-RIV to driver DRV-593." (the driver declines: the asked outcome)."""
    task = tasks["rideshare_dispatch-eb532237b4ec"]
    assert (score(task, [calls]) == 1.0) is paid


@pytest.mark.parametrize(
    ("task_id", "tool", "reason", "paid"),
    [
        ("rideshare_dispatch-a2051b5c2302", "cancel_trip", "Duplicate request - Cancelled By Rider", False),
        ("rideshare_dispatch-a2051b5c2302", "cancel_trip", "Duplicate request - Ingrid", True),
        ("rideshare_dispatch-a2051b5c2302", "cancel_trip", "duplicate request, per the rider", True),
        ("job_scheduler-170cbc4c44f9", "mark_skipped", "plans changed - Load Warehouse Skipped", False),
        ("job_scheduler-170cbc4c44f9", "mark_skipped", "plans changed - Viktor", True),
        # the act said of the very job the call skips (round 11, YD), never of another one
        ("job_scheduler-170cbc4c44f9", "mark_skipped", "plans changed - notify_finance skipped", True),
        ("job_scheduler-170cbc4c44f9", "mark_skipped", "plans changed (skipped notify_finance)", True),
        ("job_scheduler-170cbc4c44f9", "mark_skipped", "plans changed - load_warehouse skipped", False),
        ("job_scheduler-170cbc4c44f9", "mark_skipped", "plans changed - notify_finance cancelled", False),
    ],
)
def test_words_of_the_world_are_no_name_signing_a_reason(
    tasks: dict[str, Task], task_id: str, tool: str, reason: str, paid: bool
) -> None:
    """rideshare_dispatch-a2051b5c2302: "Cancel the trip of driver Ingrid Berg (DRV-422) for James
    Nakamura ...'s ride request ... on behalf of the dispatcher" with the reason "duplicate
    request"; job_scheduler-170cbc4c44f9: "Skip the optional job notify_finance of RUN-7360; the
    reason is “plans changed”"."""
    task = tasks[task_id]
    assert (score(task, reference_with(task, tool, reason=reason)) == 1.0) is paid


@pytest.mark.parametrize(
    ("said", "paid"),
    [
        ("", True),
        (" See health check HC-0001.", True),
        (" Health check HC-0001 has just been run.", True),  # the act that made it
        (" Health check HC-0001 has been cancelled.", False),  # no act of the run on it
        (" Health check HC-0001: notification-worker healthy.", False),
        (" HC-0001: all services healthy.", False),
        (" Health check HC-0001: memcached down.", False),
        # what the check says of itself, in a person's words (round 11, YD)
        (" Health check HC-0001 failed.", True),
        (" Health check HC-0001 on notification-worker failed: notify-a1 is down.", True),
        (" I ran health check HC-0001.", True),
        (" Health check HC-0001 passed.", False),
        (" Health check HC-0001 failed: notify-b1 is down.", False),
    ],
)
def test_a_reply_may_not_say_what_the_check_did_not(tasks: dict[str, Task], said: str, paid: bool) -> None:
    """infra_recovery-40e8f68dc9b1: "Run a health check of service notification-worker. And then
    draft a reply to the message that the escalated entry in watch/message-watch.log names,
    saying “Running a few minutes late.”, mentioning the new health check by its id." The check
    fails: notify-a1 is down."""
    task = tasks["infra_recovery-40e8f68dc9b1"]
    body = f"Check HC-0001: Running a few minutes late.{said}"
    assert (score(task, reference_with(task, "draft_reply", body=body)) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        ("Message MSG-0001: Could you share an update?", True),
        ("Could you share an update? (MSG-0001)", True),
        (
            "Could you share an update? "
            "See Omar's message MSG-0001 about the Q4 freight cost for the board deck.",
            False,
        ),
    ],
)
def test_a_record_is_not_described_by_another_envs_record_of_its_id(
    tasks: dict[str, Task], body: str, paid: bool
) -> None:
    """itinerary_rebooking-6272c4bacfbf, turn 2: "draft a reply to everyone to the message ...,
    saying “Could you share an update?”, mentioning the message to the traveler you created by
    its id" (the text message MSG-0001 of turn 1; the inbox holds a MSG-0001 too)."""
    task = tasks["itinerary_rebooking-6272c4bacfbf"]
    assert (score(task, reference_with(task, "draft_reply", body=body)) == 1.0) is paid


def test_the_worlds_own_changes_after_three_dozen_lookups_are_not_the_agents(tasks: dict[str, Task]) -> None:
    """rideshare_dispatch-a2051b5c2302: the asked cancel after 36 lookups; REQ-7772 expires."""
    task = tasks["rideshare_dispatch-a2051b5c2302"]
    looks = [
        {"env": RIDE, "tool": "list_open_requests", "args": {}},
        {"env": RIDE, "tool": "get_trip", "args": {"trip_id": "TRP-40684"}},
        {"env": RIDE, "tool": "get_driver", "args": {"driver_id": "DRV-422"}},
    ] * 12
    turns = reference(task)
    assert score(task, [[*copy.deepcopy(looks), *turns[0]]]) == 1.0
    by_rider = reference_with(task, "cancel_trip", cancelled_by="rider")[0]
    assert score(task, [[*copy.deepcopy(looks), *by_rider]]) < 1.0  # late, and not as asked


@pytest.mark.parametrize(
    ("section", "paid"),
    [
        ("- new_message: MSG-0010", True),
        ("Drafted a reply to MSG-0001. The new draft message id is MSG-0010.", True),
        ("Created draft MSG-0010 replying to MSG-0001.", True),
        ("Sent reply MSG-0010 to Omar.", False),
        ("MSG-0010 (sent to Omar Haddad)", False),
    ],
)
def test_a_report_of_a_draft_says_how_it_was_made_and_never_that_it_went(
    tasks: dict[str, Task], section: str, paid: bool
) -> None:
    """mail_triage-bddddaedd954: "Draft a reply to the message that the handoff note ... flags
    ..., saying “Thanks, this is confirmed.”. Finally, write reports/result.md with a “## Result”
    section that gives the id of the new message."."""
    task = tasks["mail_triage-bddddaedd954"]
    content = f"# Summary\n\n## Result\n{section}\n"
    assert (score(task, reference_with(task, "write_file", content=content)) == 1.0) is paid


def test_a_batch_size_the_world_exercises_is_passed_and_so_said(tasks: dict[str, Task]) -> None:
    """event_stream-1151a488de09, turn 1: process partition 2 (25 records wait; a batch is 20 by
    default). The golden run now passes ``max_records=20``, so the turn says "up to 20 records";
    the world ends the same. Turn 2's partition 0 halts before 20: its default stays unsaid."""
    task = tasks["event_stream-1151a488de09"]
    packages = {env: load_package(env) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None
    spelled = spell_out_defaults(run, packages, task.initial_state, task.workspace)
    said = [
        (b.args["partition"], b.args.get("max_records")) for b in spelled.calls if b.tool == "process_batch"
    ]
    assert said == [(2, 20), (0, None)]
    assert spelled.final == run.final


def test_a_reports_act_words_take_their_past_and_ing_forms() -> None:
    from envcraft.tasks.verifier.checks import word_forms

    assert word_forms("draft") == {"drafted", "drafting"}
    assert word_forms("reply") == {"replied", "replying"}
    assert word_forms("flag") == {"flagged", "flagging"}
    assert word_forms("create") == {"created", "creating"}
    assert word_forms("run") == {"ran", "running", "runs"}  # irregular: known, not guessed
    assert word_forms("set") == set()  # too short to guess
