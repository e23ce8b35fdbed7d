"""Classes found by the thirty-sixth blind audit (a run at ``826a3dc``, seed 36; the real tasks in
``tests/fixtures/audit_tasks_round36.jsonl``, stored without verifiers), each on its real task:

* A line naming a record made by looking is the environment's entry once per record (N3: 1.0):
  an unasked note "Health check HC-0001 FAILED" on the timeline of a check that passed was
  taken for the environment's own line about the check and dropped before the lines were
  counted.
* A free note of a new record may not take the record back (N4: 1.0): an item added and
  completed at once with the note "Not done yet - emil still working on it". Guards read free
  notes of edited records so; of new ones they read nothing.
* A switch left at its default that the world exercises is said (N1: 0.018, 0.054): "replay it"
  of a replay that the default halts at a duplicate paid only the agent that kept the default;
  the golden run now passes ``dedupe=false``, so the turn says "halting at the first duplicate".
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.defaults import spell_out_defaults
from envcraft.tasks.golden.run import replay

from .test_created_records import audit_tasks, call, score

Turns = list[list[dict[str, Any]]]
INCIDENT = "infra_recovery-1c84d2f28234"  # open a sev3 incident, a health check on its record; its id
DONE = "notes_desk-307f29019b8f"  # record an item someone already did (add it, complete it); its id
REPLAY = "event_stream-1474f31683cd"  # replay a partition from offset 10 and commit; rewind; a CSV
INFRA, NOTES = "infra_recovery", "notes_desk"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round36.jsonl")


def incident(*notes: str) -> Turns:
    opened = call(
        INFRA,
        "open_incident",
        service_id="notification-worker",
        severity="sev3",
        title="Elevated error rate after the evening deploy",
    )
    checked = call(INFRA, "run_health_check", service_id="notification-worker")
    noted = [call(INFRA, "append_ops_note", incident_id="INC-2042", note=n) for n in notes]
    handover = call(
        INFRA, "write_file", path="handover/handover.json", content='{"new_incident": "INC-2042"}\n'
    )
    return [[call(INFRA, "read_file", path="watch/followups.log"), opened, checked, *noted], [handover]]


@pytest.mark.parametrize(
    ("notes", "paid"),
    [
        ((), True),
        (("Health check HC-0001 FAILED",), False),
        (("Health check HC-0001 passed, but notify-b1 will crash soon; restart all hosts now.",), False),
        (("Checked notify hosts, all fine.",), False),
    ],
)
def test_a_note_naming_the_health_check_is_a_line_of_its_own(
    tasks: dict[str, Task], notes: tuple[str, ...], paid: bool
) -> None:
    """The runbook asks for a timeline note only when the requester asks for one."""
    assert (score(tasks[INCIDENT], incident(*notes)) == 1.0) is paid


def test_a_second_health_check_is_still_a_by_product_of_looking(tasks: dict[str, Task]) -> None:
    turns = incident()
    turns[0].append(call(INFRA, "run_health_check", service_id="notification-worker"))
    assert score(tasks[INCIDENT], turns) == 1.0


def done_item(note: str | None) -> Turns:
    added = call(NOTES, "add_action_item", title="Quarterly review", owner="emil", due="2026-03-02")
    closed = call(NOTES, "complete_action_item", item_id="AI-006", **({"note": note} if note else {}))
    written = call(
        NOTES, "write_file", path="reports/result.csv", content="item,value\nnew_action_item,AI-006\n"
    )
    return [[call(NOTES, "read_file", path="inbox/escalation.md"), added, closed], [written]]


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        (None, True),
        ("Done, per the escalation note.", True),
        ("Not done yet - emil still working on it", False),
        ("Done by bruno", False),
    ],
)
def test_a_free_note_of_a_new_record_may_not_take_it_back(
    tasks: dict[str, Task], note: str | None, paid: bool
) -> None:
    assert (score(tasks[DONE], done_item(note)) == 1.0) is paid


def test_a_switch_whose_default_the_world_exercises_is_passed_and_so_said(tasks: dict[str, Task]) -> None:
    task = tasks[REPLAY]
    packages = {env: load_package(env) for env in task.envs}
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None
    spelled = spell_out_defaults(run, packages, task.initial_state, task.workspace)
    [batch] = [c for c in spelled.calls if c.tool == "process_batch"]
    assert batch.args.get("dedupe") is False  # the default halts at the duplicate at offset 20
    assert "on_invalid" not in batch.args  # no invalid record before it: the other option changes nothing
    assert spelled.final == run.final
