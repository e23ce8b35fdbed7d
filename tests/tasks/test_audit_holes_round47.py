"""Classes found by the forty-seventh blind audit (a run at ``595abab``, seed 47; the real tasks in
``tests/fixtures/audit_tasks_round47.jsonl``, stored without verifiers), each on its real task:

* "That run" after a sentence pointing at a run ("The message ... says a run still needs
  attention.") reads as the run said last: where the turns name another run of the kind, the
  pointed one cannot be "that run" (R3: "Try to skip a job of the run ... submitted on January 4
  ...; if that is not possible, skip another of that run" meant the message's run; a literal
  agent scored 0.0).
* A value a title must carry is said to go in the title: "titled “...”, mentioning the message
  you created by its id" left room for a note beside the title (R2: 0.75 for a right reading).
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import IntentPlan, Unnameable

from .test_created_records import audit_tasks, planned

FALLBACK = "job_scheduler-56b892c4a016"  # try a skip on one run, else skip a job of the cited run
FORWARD = "mail_triage-b021b1e11025"  # forward a message, then an incident titled with its id
CITED = "The message “Runs on my list” from Yusuf Demir says a run still needs attention."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round47.jsonl")


def cited(task: Task, change: dict[int, dict[str, Any]] | None = None) -> IntentPlan:
    """The plan of ``task`` with its fallback's run pointed at by the message that cites it, as
    the data engine points at it (a sentence of its own said first)."""
    return planned(task, change, cited={("job_scheduler", "RUN-7600"): ("the run the message names", CITED)})


def test_a_pointed_record_is_that_one_only_where_no_other_of_its_kind_is_named(
    tasks: dict[str, Task],
) -> None:
    task = tasks[FALLBACK]
    assert task.reference.calls[2].args["run_id"] == "RUN-7593"  # the run the try describes
    with pytest.raises(Unnameable, match="'that run' could be another one said"):
        cited(task)
    plan = cited(task, {2: {"run_id": "RUN-7600"}})  # the try on the cited run too: one run named
    said = " ".join(goal.text for goals in plan.turns for goal in goals)
    assert "of that run" in said, said


def test_a_value_a_title_carries_is_said_to_go_in_the_title(tasks: dict[str, Task]) -> None:
    plan = planned(tasks[FORWARD], pointed=True)
    [title] = [m for m in plan.mentions() if m.arg == "title"]
    assert title.text.endswith("mentioning the message you created by its id in the title"), title.text
