"""Classes found by the fifty-ninth blind audit (a run at ``0344e57``, seed 59; the real tasks in
``tests/fixtures/audit_tasks_round59.jsonl``, stored without their verifiers):

* "with 3 minutes of waiting" where the first 3 minutes are free (R4: none paid 1.0): one more
  minute costs, so the old test (neither neighbour changes the world) called it exercised, but
  one less, and none, end the same.
* A report's true line about a record the run made, in a word that is a claim of the asked one
  ("Health check HC-0001 failed" beside an incident whose health check field is empty; R2:
  0.889).
* An option nobody named, inside a record the run made (a recipe's dedupe rule given "first";
  R3: 0.41): free at the top of a record, pinned inside its list of rules.
* "Processed 5 records" read as the processed offset 5 (R3: 0.909).
"""

from __future__ import annotations

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.validation.exercised import unexercised_choices
from envcraft.tasks.verifier import runtime as vr

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, score

SETTLE = "rideshare_dispatch-083961c1e1fa"  # complete TRP-40370 with 3 minutes of waiting, rate it
INCIDENT = "infra_recovery-3b0b612f1ac1"  # open INC-2042, health check HC-0001, a note; drain; a report
RECIPE = "event_stream-e25c78929ec9"  # a recipe with a parse_number rule, then a dedupe rule


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round59.jsonl")


def test_a_stated_number_one_less_of_which_ends_alike_is_unexercised(tasks: dict[str, Task]) -> None:
    task = tasks[SETTLE]
    packages = {env: load_package(env) for env in task.envs}
    assert unexercised_choices(task, execute_reference(task), packages) == ["complete_trip.waiting_minutes"]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "complete_trip"]
    task.reference.calls[i].args["waiting_minutes"] = 6  # past the free minutes: 5, 7 and none cost otherwise
    assert unexercised_choices(task, execute_reference(task), packages) == []


@pytest.mark.parametrize(
    ("notes", "paid"),
    [
        ("Health check HC-0001 failed; paygw-a1 is draining.", True),
        ("INC-2042 health check passed.", False),  # no health check passed
    ],
)
def test_a_report_may_say_what_the_world_says_of_a_record_the_run_made(
    tasks: dict[str, Task], notes: str, paid: bool
) -> None:
    content = f"## Result\n\nINC-2042\n\n## Notes\n\n{notes}\n"
    assert (said(tasks[INCIDENT], "write_file", "content", content) == 1.0) is paid


@pytest.mark.parametrize(("option", "paid"), [("first", True), ("last", True), (None, True)])
def test_an_option_nobody_named_is_the_agents_inside_a_record_too(
    tasks: dict[str, Task], option: str | None, paid: bool
) -> None:
    task = tasks[RECIPE]
    i = [i for i, c in enumerate(task.reference.calls) if c.tool == "add_cleaning_rule"][1]  # the dedupe
    change = {} if option is None else {i: {"option": option}}
    assert (score(task, reference(task, change)) == 1.0) is paid


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("Processed 5 records of payments/p2", False),  # a count of records
        ("processed 31 records so far", False),
        ("processed: 5", True),  # the processed offset is 26, then 31
        ("processed 5 was the old position", True),
    ],
)
def test_a_number_before_a_plural_noun_counts_things(text: str, wrong: bool) -> None:
    assert (vr.misnumbered(text, {"processed": ["26", "31"]}) is not None) is wrong


FORWARD = "mail_triage-91d42e9a6f40"  # forward the urgent message; its ids in handover/status.json


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ("", True),
        (', "sent": true', True),  # the new message was sent
        (', "status": "sent"', True),
        (', "sent": false', False),
        (', "draft": true', False),  # it is no draft
        (', "urgent": true', False),
    ],
)
def test_a_flag_may_say_a_state_the_asked_record_is_in(
    tasks: dict[str, Task], extra: str, paid: bool
) -> None:
    content = '{"new_message": "MSG-0010", "new_conversation": "THR-010"' + extra + "}"
    assert (said(tasks[FORWARD], "write_file", "content", content) == 1.0) is paid
