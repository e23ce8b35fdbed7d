"""Classes found by the fifty-first blind audit (a run at ``6808df9``, seed 51; the real tasks in
``tests/fixtures/audit_tasks_round51.jsonl``, stored without verifiers), each on its real task:

* A job's phrase says its steps act on one subject: "Swap the booking of Luca Adeyemi for ...
  for a seat in the hiit circuit class" of a reference that booked the member the cancel
  promoted from the waitlist (R4: every right run 0.389, the reference's wrong run 1.0).
* A list's old entries keep their order though the world renumbers them: rule 3 removed, then
  ``fill_missing discount`` moved after the derive rule that reads it (R3: 1.0).
* A cover note nobody dictated may say what the desk's own notes say of its record: "Needs
  action today, per the shift handoff." of a message the handoff says "needs action today" of,
  also where a later forward quotes it (R3: 0.778).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.coherence import job_spans, writes
from envcraft.tasks.golden.run import replay
from envcraft.tasks.graphs.graph import build_tool_graph

from .test_audit_holes_round41 import reference
from .test_created_records import audit_tasks, score

SWAP = "class_booking-1d58294c68db"  # cancel Luca's booking, a seat elsewhere; a series in turn 2
RULES = "sheet_analytics-d9573e0c079a"  # rule 3 removed from the house recipe, items, a CSV
FORWARD = "mail_triage-a0e93f149cc6"  # the handoff's message forwarded, then the forward forwarded


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round51.jsonl")


@pytest.mark.parametrize(("member", "swap"), [("MEM-2011", False), ("MEM-2013", True)])
def test_a_swap_books_the_member_whose_booking_it_cancels(
    tasks: dict[str, Task], member: str, swap: bool
) -> None:
    task = tasks[SWAP]
    package = load_package("class_booking")
    packages, graph = {"class_booking": package}, build_tool_graph(package)
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    [book] = [c for c in calls if c.tool == "book_class"]
    book.args["member_id"] = member  # the reference's: MEM-2011, the member the cancel promoted
    run = replay(calls[: calls.index(book) + 1], packages, task.initial_state, task.workspace)
    assert run is not None and all(c.ok for c in run.calls)
    spans = job_spans(run.calls, writes(run, {"class_booking": graph}), packages)
    assert any(job.name == "switch a member to another class" for job, _ in spans) is swap


def _moved(task: Task, rule_no: int) -> list[list[dict[str, Any]]]:
    """The reference, with house recipe rule ``rule_no`` (as numbered once rule 3 is gone)
    removed and added again at the end, after the removal the user asked for, and the recipe's
    version it then has (two more) in the asked file."""
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "write_file"]
    content = (
        task.reference.calls[i]
        .args["content"]
        .replace("cleaning_recipe_version,14", "cleaning_recipe_version,16")
    )
    turns = reference(task, {i: {"content": content}})
    rules = task.initial_state["sheet_analytics"]["recipes"]["RCP-01"]["rules"]
    rule = rules[rule_no]  # numbered from 1 once rule 3 is gone: rules[rule_no] in S0's list
    [turn] = [t for t in turns if any(c["tool"] == "remove_cleaning_rule" for c in t)]
    at = next(n for n, c in enumerate(turn) if c["tool"] == "remove_cleaning_rule") + 1
    turn[at:at] = [
        {
            "env": "sheet_analytics",
            "tool": "remove_cleaning_rule",
            "args": {"recipe_id": "RCP-01", "rule_no": rule_no},
        },
        {
            "env": "sheet_analytics",
            "tool": "add_cleaning_rule",
            "args": {"recipe_id": "RCP-01", **{k: rule[k] for k in ("operation", "column", "option")}},
        },
    ]
    return turns


@pytest.mark.parametrize("rule_no", [4, 10, 11])
def test_the_rules_a_removal_renumbers_keep_their_order(tasks: dict[str, Task], rule_no: int) -> None:
    task = tasks[RULES]
    assert score(task, reference(task, {})) == 1.0
    assert score(task, _moved(task, rule_no)) < 1.0


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("Needs action today, per the shift handoff.", True),
        ("Please action this today. Thanks, Alex", True),
        ("Please action this.", True),
        ("FYI only, already discussed.", False),  # what the handoff says of the other message
    ],
)
def test_a_cover_note_may_say_what_the_desk_notes_say_of_its_record(
    tasks: dict[str, Task], note: str, paid: bool
) -> None:
    task = tasks[FORWARD]
    first = next(i for i, c in enumerate(task.reference.calls) if c.tool == "draft_forward")
    assert (score(task, reference(task, {first: {"body": note}})) == 1.0) is paid
