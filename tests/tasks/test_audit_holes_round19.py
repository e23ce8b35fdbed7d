"""The nineteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round19.jsonl``,
a default run at ``455bb4d``, seed 19), each verifier synthesized again by this checkout:

* helper WB: ``"incident": "INC-2041"`` beside the asked new recipe's id scored 0.8, though the
  run had just added the recipe's note to that incident: a report may name a record the run made
  or changed under its kind (``runtime.made_ids``), not one it left alone.
"""

from __future__ import annotations

import json

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round19.jsonl")


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({"incident": "INC-2041"}, True),  # the incident the run added the note to
        ({"incident": "INC-2031"}, False),  # an incident the run never touched
        ({"recipe": "RCP-01"}, False),  # another recipe: a second answer
    ],
)
def test_a_report_may_name_a_record_the_run_changed(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    """sheet_analytics-4bb33549317a: a new recipe, its note on INC-2041's timeline, then
    handover/result.json with "new_cleaning_recipe"."""
    task = tasks["sheet_analytics-4bb33549317a"]
    turns = reference(task)
    write = next(c for c in turns[-1] if c["tool"] == "write_file")
    write["args"]["content"] = json.dumps({**json.loads(write["args"]["content"]), **extra})
    assert (score(task, turns) == 1.0) is paid
