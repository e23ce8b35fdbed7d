"""The nineteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round19.jsonl``,
a default run at ``455bb4d``, seed 19), each verifier synthesized again by this checkout:

* helper WB: ``"incident": "INC-2041"`` beside the asked new recipe's id scored 0.8, though the
  run had just added the recipe's note to that incident: a report may name a record the run made
  or changed under its kind (``runtime.made_ids``), not one it left alone.
* helper WB: the same task's timeline note written by hand with ``edit_file`` scored 1.0 when dated
  2031 (an entry is written now: ``dated_until``, a day after the correct runs' entries) and when
  put under a made-up ``## Timeline note`` heading (a heading is structure, never a courtesy line).
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


OPENED = "- 2026-02-17T02:04:00Z opened by on-call: error rate alert\n"
NOTE = " Recipe RCP-03: Follow up next week.\n"


@pytest.mark.parametrize(
    ("old", "new", "paid"),
    [
        (OPENED, OPENED + "- 2026-02-17T02:14:00Z" + NOTE, True),
        (OPENED, OPENED + "- 2026-02-17T09:30:00Z" + NOTE, True),  # later today
        (OPENED, OPENED + "- 2031-12-31T23:59:00Z" + NOTE, False),  # years ahead
        (OPENED, OPENED + "- 2026-02-17T01:00:00Z" + NOTE, False),  # before the last
        (
            "## Root cause",
            "## Timeline note\n- 2026-02-17T02:14:00Z Recipe RCP-03: Follow up next week.\n\n## Root cause",
            False,  # a heading nobody asked for
        ),
    ],
)
def test_a_timeline_entry_written_by_hand_is_dated_now_under_the_timeline(
    tasks: dict[str, Task], old: str, new: str, paid: bool
) -> None:
    """sheet_analytics-4bb33549317a: the asked note on INC-2041's timeline, written by hand."""
    task = tasks["sheet_analytics-4bb33549317a"]
    turns = reference(task)
    at = next(i for i, c in enumerate(turns[1]) if c["tool"] == "append_ops_note")
    turns[1][at] = {
        "env": "infra_recovery",
        "tool": "edit_file",
        "args": {"path": "ops/incident-INC-2041.md", "old": old, "new": new},
    }
    assert (score(task, turns) == 1.0) is paid
