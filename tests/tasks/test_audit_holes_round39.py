"""Classes found by the thirty-ninth blind audit (a run at ``f0d0d68``, seed 39; the real tasks in
``tests/fixtures/audit_tasks_round39.jsonl``, stored without verifiers), each on its real task:

* A job's later step acts on the record its earlier step made (Q4: every right run 0.025, the
  reference's copy 1.0): "record that emil has already done “Weekly sync notes”" added the item,
  then completed the first of emil's items a listing gave, another item due the same day; the
  lookup between the steps linked them because its answer held the new item too.
* A job's phrase says which message its to-do is for (Q3: 0.350): "Answer that message ..., and
  log “Call back about the order” on my to-do list as done" of a to-do the reference linked to
  the reply it sent, said nowhere; a placeholder showing the message answered may not stand for
  the reply too (a job's phrase shows one value per name, its own steps' answers included).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import Task
from envcraft.tasks.golden.coherence import job_spans

from .test_created_records import audit_tasks, planned, replayed, score

DONE = "notes_desk-6d264339a798"  # track an item, hand it over; record an item already done; a CSV
ANSWER = "mail_triage-af0361b6e00c"  # answer a message, log a to-do as done; a forward; a CSV


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round39.jsonl")


def jobs(task: Task, change: dict[int, dict[str, Any]] | None = None) -> list[tuple[str, list[int]]]:
    run, wrote = replayed(task, change)
    packages = {env: load_package(env) for env in task.envs}
    return [(job.name, span) for job, span in job_spans(run.calls, wrote, packages)]


def test_a_job_step_on_another_record_than_the_one_its_earlier_step_made_is_no_job(
    tasks: dict[str, Task],
) -> None:
    found = jobs(tasks[DONE])  # completes AI-004, the first of emil's items, not the new AI-006
    assert ("record an item that is already done", [3, 5]) not in found
    assert ("track an item and hand it over", [0, 1]) in found  # its reassignment is the new item's


def test_a_job_step_on_the_record_its_earlier_step_made_is_the_job(tasks: dict[str, Task]) -> None:
    found = jobs(
        tasks[DONE], {5: {"item_id": "AI-006"}, 6: {"content": "item,value\naction_item_status,open\n"}}
    )
    assert ("record an item that is already done", [3, 5]) in found


@pytest.mark.parametrize(
    ("link", "said"),
    [
        (None, "as done, for your new message"),  # the reference: the to-do of the reply it sent
        ("MSG-0003", "as done, for the message “Where is my order ORD-4421?” from Nadia Petrova"),
        ("", "on my to-do list as done"),  # linked to nothing
    ],
)
def test_a_jobs_phrase_says_which_message_its_to_do_is_for(
    tasks: dict[str, Task], link: str | None, said: str
) -> None:
    change = {} if link is None else {3: {"message_id": link or None}}
    plan = planned(tasks[ANSWER], change)
    [job] = [goal for goal in plan.turns[0] if goal.job]
    assert job.job == "answer and log it as done"
    assert job.text.endswith(said), job.text


HANDOVER = "event_stream-f67fbb9b5d4a"  # replay p1 and commit; process p0, commit, dead-letter; a report
SHEET = "sheet_analytics-9cfc30040d74"  # a derive rule, a new recipe; the recipe's id in a report


def reported(task: Task, content: str) -> list[list[dict[str, Any]]]:
    """The reference's calls by turn, its last call (the report) writing ``content`` instead."""
    turns: list[list[dict[str, Any]]] = []
    for stored in task.reference.calls:
        while len(turns) <= stored.turn:
            turns.append([])
        turns[stored.turn].append({"env": stored.env, "tool": stored.tool, "args": dict(stored.args)})
    turns[-1][-1]["args"]["content"] = content
    return turns


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("- partition_committed: 29", True),
        ("- payments p0 committed offset: 29", True),  # the environment's own name for it
        ("payments/p0 committed offset: 29", True),
        ("- payments p1 committed offset: 29", False),  # another partition's name
        ("- payments p0 committed offset: 30", False),
    ],
)
def test_a_report_may_name_the_record_by_the_environments_own_key(
    tasks: dict[str, Task], line: str, paid: bool
) -> None:
    turns = reported(tasks[HANDOVER], f"## Result\n\n{line}\n")
    assert (score(tasks[HANDOVER], turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("The derive rule went into RCP-01.", True),  # "into" points, it claims nothing
        ("The derive rule went into RCP-822.", False),  # the look-alike recipe the work never named
    ],
)
def test_a_report_line_may_say_into(tasks: dict[str, Task], line: str, paid: bool) -> None:
    turns = reported(tasks[SHEET], f"## Result\n- New cleaning recipe: RCP-03\n{line}\n")
    assert (score(tasks[SHEET], turns) == 1.0) is paid
