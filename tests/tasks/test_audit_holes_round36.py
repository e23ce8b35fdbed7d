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
* A report may say whose record it is (N1: 0.75): "RF-00002 (customer Chloe Fischer)" of a
  refund for her order; names reach two records away (refund, order, customer).
* An extra key may name the act in its irregular past (N3: 0.667): "left_waitlist" holding the
  entry leave_waitlist gave up.
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


SETTLE = "returns_desk-470b22e96a14"  # settle the return a message points at; the refund's id in a section
CLASSES = "class_booking-fbb8f22c080d"  # leave a waitlist place, book the class instead; a JSON file


def settled(line: str) -> Turns:
    task_calls = [
        call("mail_triage", "read_message", message_id="MSG-0010"),
        call("returns_desk", "receive_return", return_id="RMA-00001", condition="opened"),
        call("returns_desk", "issue_refund", return_id="RMA-00001"),
    ]
    content = f"# Summary\n\n## Result\n{line}\n"
    return [task_calls, [call("mail_triage", "write_file", path="notes/status.md", content=content)]]


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("- new_refund: RF-00002", True),
        ("- RF-00002 (customer Chloe Fischer)", True),
        ("- RF-00002 (Chloe Fischer's return)", True),
        ("- RF-00002, approved by finance", False),
    ],
)
def test_a_report_may_name_whose_record_it_is(tasks: dict[str, Task], line: str, paid: bool) -> None:
    """The refund points at its order, the order at its customer: her name is what the world
    says of the refund."""
    assert (score(tasks[SETTLE], settled(line)) == 1.0) is paid


def rebooked(answer: str) -> Turns:
    work = [
        call("mail_triage", "read_message", message_id="MSG-0010"),
        call("class_booking", "leave_waitlist", entry_id="WL-7005"),
        call("mail_triage", "read_file", path="tracking/class-review.csv"),
        call("class_booking", "book_class", member_id="MEM-2003", session_id="CLS-30023"),
    ]
    return [work, [call("mail_triage", "write_file", path="reports/result.json", content=answer)]]


@pytest.mark.parametrize(
    ("answer", "paid"),
    [
        ('{"new_booking": "BKG-50062"}', True),
        ('{"new_booking": "BKG-50062", "waitlist": "WL-7005"}', True),
        ('{"new_booking": "BKG-50062", "left_waitlist": "WL-7005"}', True),
        ('{"new_booking": "BKG-50062", "left_waitlist": "WL-7004"}', False),  # a place it did not give up
        ('{"new_booking": "BKG-50062", "joined_waitlist": "WL-7005"}', False),  # an act it did not do
    ],
)
def test_an_extra_key_may_name_the_act_in_its_irregular_past(
    tasks: dict[str, Task], answer: str, paid: bool
) -> None:
    """ "left_waitlist" of the entry leave_waitlist gave up is as true as "waitlist" (N3: 0.667)."""
    assert (score(tasks[CLASSES], rebooked(answer)) == 1.0) is paid
