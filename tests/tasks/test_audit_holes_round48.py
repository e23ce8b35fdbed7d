"""Classes found by the forty-eighth blind audit (a run at ``105616e``, seed 48; the real tasks in
``tests/fixtures/audit_tasks_round48.jsonl``, stored without verifiers), each on its real task:

* A dictated reason may be led by the name of the thing the call acts on, never by a sibling's:
  "Send invoices replaced by the new pipeline" as why compute_invoices was cancelled (R2: 1.0;
  every job of the run was a name the reason could lead with).
* An optional argument the user never mentioned is the agent's to pass, in the record that keeps
  it under its own name: a to-do linked to the message it comes from, where the reference
  linked none (``add_todo(message_id=...)`` fills ``source_message_id``; R1: 0.4).
* A job is its goal's outcome: "get the request on its way ...: the driver takes it and the
  rider confirms" of a confirm the rider declined asks for what cannot happen (R1: a careful
  agent scored 0.0); such a run is no "dispatch a ride".
* A record pointed at, said again after the work made another of its kind, is said by what the
  pointer said of it ("the flagged cleaning recipe"; R4: "that cleaning recipe" read as the one
  just created, 0.0); an id a reply must carry names its record where "that recipe" could be
  the one made before (R1).
"""

from __future__ import annotations

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import Task
from envcraft.tasks.golden.coherence import job_spans

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, planned, replayed, score

CANCEL = "job_scheduler-8c00867b4a41"  # cancel compute_invoices of RUN-7758, then a wave
TODO = "mail_triage-7e23986877f6"  # forward the urgent message, a to-do ticked off, spam, label
DISPATCH = "rideshare_dispatch-794ce69a8c56"  # propose and confirm: the rider declines the fare
FLAGGED = "sheet_analytics-5089755bc53b"  # a recipe made, then the flagged one used in 4 turns
REPLY = "sheet_analytics-01ee27e1af5a"  # a recipe made, another edited, a reply carrying its id


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round48.jsonl")


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("replaced by the new pipeline", True),
        ("Compute invoices replaced by the new pipeline", True),
        ("Send invoices replaced by the new pipeline", False),
        ("reconcile payments replaced by the new pipeline", False),
    ],
)
def test_a_reason_is_led_by_what_the_call_acts_on_not_a_sibling(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (said(tasks[CANCEL], "cancel_job", "reason", reason) == 1.0) is paid


@pytest.mark.parametrize(("link", "paid"), [("", True), ("MSG-0003", True)])
def test_an_optional_link_nobody_mentioned_is_the_agents_to_make(
    tasks: dict[str, Task], link: str, paid: bool
) -> None:
    task = tasks[TODO]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "add_todo"]
    assert (score(task, reference(task, {i: {"message_id": link}})) == 1.0) is paid


def test_a_job_whose_last_step_missed_its_outcome_is_no_such_job(tasks: dict[str, Task]) -> None:
    task = tasks[DISPATCH]
    run, wrote = replayed(task)
    [confirm] = [c for c in run.calls if c.tool == "confirm_match"]
    assert confirm.result["status"] == "rider_declined"
    spans = job_spans(run.calls, wrote, {env: load_package(env) for env in task.envs})
    assert "dispatch a ride" not in [job.name for job, _ in spans]


def test_a_pointed_record_said_again_after_another_was_made_is_the_flagged_one(
    tasks: dict[str, Task],
) -> None:
    texts = [" ".join(g.text for g in goals) for goals in planned(tasks[FLAGGED], pointed=True).turns]
    assert "with the flagged cleaning recipe" in texts[1], texts
    assert "that cleaning recipe" not in " ".join(texts[1:]), texts


def test_an_id_a_reply_carries_names_its_record_where_another_of_its_kind_was_made(
    tasks: dict[str, Task],
) -> None:
    [body] = [m for m in planned(tasks[REPLY]).mentions() if m.arg == "body"]
    assert body.text.endswith("mentioning the id of the cleaning recipe “Quarterly sales cleanup”"), body.text
