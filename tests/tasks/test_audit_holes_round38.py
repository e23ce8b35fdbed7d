"""Classes found by the thirty-eighth blind audit (a run at ``7f9d9df``, seed 38; the real tasks in
``tests/fixtures/audit_tasks_round38.jsonl``, stored without verifiers), each on its real task:

* A status the clock moves after the act may end at any state on its way (P2: 0.889): a host
  drained in turn 3 is "draining", two minutes later "maintenance". The end of the run pinned
  "maintenance", the state the reference reached by making two more calls; an agent that drained
  the escalated host in one shell call ended while the first was still draining.
* A job's phrase says what each of its steps does (P3: 0.944): "Put that message on my to-do
  list as ..., and flag the message" of a to-do the reference linked to nothing; the agent that
  linked it was paid less than one that did not.
* A job's phrase shows one value per name (P4: 0.059 for every run that followed the text):
  "Clean that dataset" showed the dataset the job's profile step named, while its clean step
  cleaned another (the first row of a listing), said nowhere.
* A switch the job's phrase already says is not said again: "flag the message for follow-up
  (for flag)" (P3: an agent added a label "flag").
* "The same as before" is the text said last for that parameter (P1: 0.833): a reason given in
  turn 1, another in turn 2, then turn 1's again.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import IntentPlan

from .test_created_records import audit_tasks, call, planned, score

Turns = list[list[dict[str, Any]]]
DRAIN = "infra_recovery-a8618040e96a"  # a health check, a note, drain auth-a1; drain the escalated host
REPLAY = "event_stream-fd8e1fc6ede9"  # replay p0 (a reason), pause p2 (another), rewind p2 (the first)
TODO = "mail_triage-b80d01390aa4"  # flag a message, a to-do, a to-do linked to it; more
CLEAN = "sheet_analytics-a963ca9c7661"  # profile DS-009, a new recipe, clean DS-001 into the Q3 path
INFRA = "infra_recovery"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round38.jsonl")


def drained(last: list[dict[str, Any]], first: list[dict[str, Any]] | None = None) -> Turns:
    noted = call(
        INFRA, "append_ops_note", incident_id="INC-2041", note="Rollback approved by the change manager."
    )
    return [
        [*(first or []), call(INFRA, "run_health_check", service_id="auth-service")],
        [call(INFRA, "list_services"), noted],
        [call(INFRA, "drain_host", host_id="auth-a1")],
        last,
    ]


SHELL_DRAIN = (
    "h=$(grep escalated watch/alerts.log | grep -o 'host=[a-z0-9-]*' | cut -d= -f2); "
    "envcraft-tool drain_host --host_id $h"
)


@pytest.mark.parametrize(
    ("turns", "paid"),
    [
        (
            drained(
                [
                    call(INFRA, "read_file", path="watch/alerts.log"),
                    call(INFRA, "drain_host", host_id="auth-c1"),
                ]
            ),
            True,
        ),
        (drained([call(INFRA, "shell", command=SHELL_DRAIN)]), True),  # one call after the first drain
        (
            drained(
                [call(INFRA, "drain_host", host_id="auth-c1")],
                [call(INFRA, "read_file", path="watch/alerts.log")],  # read while getting oriented
            ),
            True,
        ),
        (drained([call(INFRA, "read_file", path="watch/alerts.log")]), False),  # the escalated host left
        (drained([call(INFRA, "drain_host", host_id="auth-b1")]), False),  # another host
    ],
)
def test_a_status_the_clock_moves_after_the_act_may_end_on_its_way(
    tasks: dict[str, Task], turns: Turns, paid: bool
) -> None:
    assert (score(tasks[DRAIN], turns) == 1.0) is paid


def test_a_drain_done_a_turn_late_is_still_late(tasks: dict[str, Task]) -> None:
    turns = drained([call(INFRA, "drain_host", host_id="auth-c1")])
    turns[3].insert(0, turns[2].pop())  # auth-a1 drained only in turn 4
    assert score(tasks[DRAIN], turns) < 1.0


def texts(plan: IntentPlan, turn: int) -> list[str]:
    return [goal.text for goal in plan.turns[turn]]


def test_a_job_whose_step_leaves_out_what_its_phrase_says_is_asked_step_by_step(
    tasks: dict[str, Task],
) -> None:
    plan = planned(tasks[TODO])
    assert not any(goal.job for goal in plan.turns[0])
    assert "add the to-do “Book the meeting room for Thursday”" in texts(plan, 0)  # linked to nothing


def test_a_job_whose_steps_do_what_its_phrase_says_is_asked_as_one_outcome_without_repeating_a_switch(
    tasks: dict[str, Task],
) -> None:
    plan = planned(tasks[TODO], {2: {"message_id": "MSG-0007"}})  # the to-do linked to the flagged message
    [job] = [goal for goal in plan.turns[0] if goal.job]
    assert job.job == "turn a message into an action item"
    assert "flag the message for follow-up" in job.text and "(for" not in job.text


def test_a_job_whose_steps_name_two_records_under_one_name_is_asked_step_by_step(
    tasks: dict[str, Task],
) -> None:
    plan = planned(tasks[CLEAN])
    said = texts(plan, 0)
    assert not any(goal.job for goal in plan.turns[0])
    assert any("data/sales_2025Q1.csv" in text and text.startswith("clean") for text in said), said


def test_the_same_as_before_is_only_the_text_said_last_for_that_parameter(tasks: dict[str, Task]) -> None:
    plan = planned(tasks[REPLAY])
    assert texts(plan, 2) == [
        "move partition 2 of the payments topic back to offset 10; "
        "the reason is “replay after the consumer fix”"
    ]
