"""Classes found by the forty-first blind audit (a run at ``681ec91``, seed 41; the real tasks in
``tests/fixtures/audit_tasks_round41.jsonl``, stored without verifiers), each on its real task:

* A sentence offering help says nothing of the records (R4: 0.667): "Please call the travel desk
  about your disrupted trip. We will be happy to help."; "If anything is unclear, we will be glad
  to help." A future tense may tell what was done ("Your airport transfer will pick you up at
  16:35."), and a time told must be the one written ("... at 16:00" of a pickup at 16:35 paid 1.0).
* A signature may name a team by what it does in any case ("- Tamsin, travel desk", "(Corporate
  travel desk)"; R1: 0.833), and the person the records are for may sign though the world names
  them ("Had two large suitcases. - Olivia" of Olivia's rating; R3: 0.5).
* A report may say a record's snake_case value in words ("schema violation" of
  ``schema_violation``; R1: 0.889).
* "That service" may not point back where the turns named another service since (R2: the right
  run 0.364): the user names a record in full, or the task is refused ("clean dataset DS-003 ...,
  and clean that dataset": R1's reading 0.116).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import Unnameable

from .test_created_records import audit_tasks, planned, score

Turns = list[list[dict[str, Any]]]
PICKUP = "itinerary_rebooking-90f91729a490"  # re-time a pickup, email the traveler a dictated text
NOTIFY = "itinerary_rebooking-9bae7c4d6c23"  # an SMS, a claim, an email, each dictated
RATING = "rideshare_dispatch-a0a7a8478268"  # Olivia Kowalski's 1-star rating with a dictated comment
DEAD = "event_stream-4ec58a35499e"  # replay p0, catch p1 up dead-lettering, the dead letter's id in a file
HOSTS = "infra_recovery-e251db48d0ff"  # two incidents, drain a host, a health check of payments-gateway
CLEAN = "mail_triage-6c2edfc04c5c"  # a mail, a rerun, a new recipe, two cleanings with it


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round41.jsonl")


def reference(task: Task, change: dict[int, dict[str, Any]]) -> Turns:
    """``task``'s reference calls by turn, with the arguments ``change`` gives per call."""
    turns: Turns = []
    for i, c in enumerate(task.reference.calls):
        while len(turns) <= c.turn:
            turns.append([])
        turns[c.turn].append({"env": c.env, "tool": c.tool, "args": {**c.args, **change.get(i, {})}})
    return turns


def said(task: Task, tool: str, arg: str, text: str, nth: int = 0) -> float:
    """The score of ``task``'s reference with the ``nth`` ``tool`` call's ``arg`` (the first by
    default) written as ``text``."""
    i = [i for i, c in enumerate(task.reference.calls) if c.tool == tool][nth]
    return score(task, reference(task, {i: {arg: text}}))


DICTATED = "Please call the travel desk about your disrupted trip."


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        (DICTATED, True),
        (f"{DICTATED} We will be happy to help.", True),
        (f"{DICTATED} If anything is unclear, we'll be glad to help!", True),
        (f"Please don't hesitate to contact us. {DICTATED}", True),
        (f"{DICTATED} Let us know if you have any questions.", True),
        (f"Your airport transfer will pick you up at 16:35. {DICTATED}", True),
        (f"{DICTATED} We will refund you.", False),
        (f"{DICTATED} Let us know when you land.", False),
        (f"{DICTATED} We will be happy to help you rebook.", False),
        (f"Your airport transfer will not pick you up at 16:35. {DICTATED}", False),
        (f"Your airport transfer will pick you up at 16:00. {DICTATED}", False),  # the pickup is at 16:35
        (f"Your airport transfer now picks you up at 16:00. {DICTATED}", False),
    ],
)
def test_a_sentence_offering_help_says_nothing_of_the_records(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    assert (said(tasks[PICKUP], "notify_traveler", "message", text) == 1.0) is paid


CHANGED = "Your trip has changed; please check the new itinerary in your app."


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        (f"Hi Mila, {CHANGED} - Tamsin, travel desk", True),
        (f"{CHANGED} (Corporate travel desk)", True),
        (f"{CHANGED} - Tamsin, cancelled desk", False),
        (f"{CHANGED} (Flight cancelled)", False),
    ],
)
def test_a_signature_may_name_a_team_by_what_it_does(tasks: dict[str, Task], text: str, paid: bool) -> None:
    assert (said(tasks[NOTIFY], "notify_traveler", "message", text) == 1.0) is paid


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("Had two large suitcases. - Olivia", True),
        ("Had two large suitcases. Best, Olivia Kowalski", True),
        ("Had two large suitcases. - James", False),  # nobody the rating is for
        ("Had two large suitcases. Economy", False),
    ],
)
def test_the_person_the_records_are_for_may_sign(tasks: dict[str, Task], text: str, paid: bool) -> None:
    assert (said(tasks[RATING], "rate_trip", "comment", text) == 1.0) is paid


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("- DLQ-0001", True),
        ("- DLQ-0001 - schema violation in partition 1 (offset 21)", True),
        ("- DLQ-0001 (schema_violation)", True),
        ("- DLQ-0001 - no schema violation", False),
        ("- DLQ-0002 - schema violation in partition 1", False),
        ("- DLQ-0001 - duplicate in partition 1", False),
    ],
)
def test_a_report_may_say_a_snake_case_value_in_words(tasks: dict[str, Task], line: str, paid: bool) -> None:
    content = f"## Result\n\n{line}\n"
    assert (said(tasks[DEAD], "write_file", "content", content) == 1.0) is paid


def test_that_service_is_said_in_full_where_another_service_was_named_since(tasks: dict[str, Task]) -> None:
    [second] = planned(tasks[HOSTS], pointed=True).turns[1][1:]  # the health check, after draining the host
    assert "the payments-gateway service" in second.text
    assert "that service" not in second.text


def test_that_dataset_is_no_reference_where_another_dataset_was_named_since(tasks: dict[str, Task]) -> None:
    with pytest.raises(Unnameable):  # "clean dataset DS-003 ..., and clean that dataset with it"
        planned(tasks[CLEAN], pointed=True)
