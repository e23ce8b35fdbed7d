"""The tenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round10.jsonl``, a
default run at ``88476ce``, seed 10), each verifier synthesized again by this checkout:

* the validation's ``cosmetic_text`` agent: the dictated note of a journal line staged in a
  journal the task also opened was compared byte for byte (a list of new records matched by
  content kept its text fields exact), so the note without its final full stop scored 0.25.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round10.jsonl")


def _with(task: Task, tool: str, **args: Any) -> list[list[dict[str, Any]]]:
    turns = reference(task)
    for calls in turns:
        for step in calls:
            if step["tool"] == tool:
                step["args"] = {**copy.deepcopy(step["args"]), **args}
    return turns


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
    assert (score(task, _with(task, "add_adjustment_line", note=note)) == 1.0) is paid
