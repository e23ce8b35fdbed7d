"""The seventh round's findings on its real tasks (``tests/fixtures/audit_tasks_round7.jsonl``,
a default run at ``1c9e89b``, seed 7), each verifier synthesized again by this checkout:

* a record named by a name the job had just given a new record too ("add a rule to the cleaning
  recipe “Drop orders exported twice”" right after creating a second recipe of that name).
"""

from __future__ import annotations

import random

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.run import replay
from envcraft.tasks.phrasing.intents import ChainView, plan_intents

from .test_created_records import audit_tasks


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round7.jsonl")


def test_a_name_the_job_gave_a_new_record_too_no_longer_tells_the_old_one_apart(
    tasks: dict[str, Task],
) -> None:
    """sheet_analytics-73ad9e5ec21a: turn 1 creates a recipe called “Drop orders exported twice”
    (RCP-03), the name S0's RCP-02 has; turn 2 said "add a dedupe rule ... to the cleaning recipe
    “Drop orders exported twice”", meaning RCP-02. Either recipe fits the words, and the one the
    user just made fits them best. A name is said only where it tells the record apart from
    those the job made before too."""
    task = tasks["sheet_analytics-73ad9e5ec21a"]
    package = load_package("sheet_analytics")
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, {"sheet_analytics": package}, task.initial_state, task.workspace)
    assert run is not None
    recipes = run.after(len(run.calls) - 1)["sheet_analytics"]["recipes"]
    assert recipes["RCP-02"]["name"] == recipes["RCP-03"]["name"] == "Drop orders exported twice"
    turns = [[i for i, c in enumerate(task.reference.calls) if c.turn == t] for t in range(len(task.turns))]
    mutating = [not package.env_class.tools[c.tool].annotations.read_only for c in run.calls]
    plan = plan_intents(
        ChainView(run.calls, run.initial, run.after, mutating),
        turns,
        {"sheet_analytics": package},
        random.Random(0),
    )
    ruled = next(i for i, c in enumerate(run.calls) if c.tool == "add_cleaning_rule")
    mention = next(m for m in plan.mentions() if m.call == ruled and m.arg == "recipe_id")
    assert mention.text != "the cleaning recipe “Drop orders exported twice”"
    assert "RCP-02" in mention.text, mention.text
