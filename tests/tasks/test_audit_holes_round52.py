"""Classes found by the fifty-second blind audit (a run at ``8e14724``, seed 52; the real tasks in
``tests/fixtures/audit_tasks_round52.jsonl``, stored without verifiers), each on its real task:

* A text dictated for a try and its fallback is read with the fallback's records, the call that
  went through: "public holiday (RUN-7368)" on the run the fallback skipped a job of scored 0.5,
  and "(RUN-7367)", the run the refused try named, 1.0 (R2).
* A report may say what the run did to the whole desk beside the asked id: "Exported 6 tracked
  items" of an export of every item (R4: 0.833).
* A symbolic link an agent makes is a new workspace file (R3: ``ln -s`` passed "no other
  workspace file created"; ``tests/core/test_state.py`` holds the snapshot's side), and so is a
  mode its owner cannot use (R3: ``chmod 000`` of a config file nobody asked about passed).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, score

FALLBACK = "job_scheduler-6105c4a7adc0"  # skip a job of a run that lacks it; else of RUN-7368
EXPORT = "notes_desk-1b9e5513b12f"  # an item recorded done, one handed over, an export, a report
HEALTH = "infra_recovery-feb4ec9ba1d2"  # one health check; a shell is at hand


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round52.jsonl")


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("public holiday", True),
        ("public holiday (RUN-7368)", True),
        ("public holiday (RUN-7368, Orders ETL (us))", True),
        ("public holiday (RUN-7367)", False),  # the run the refused try named
    ],
)
def test_a_fallbacks_text_is_read_with_its_own_records(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    assert (said(tasks[FALLBACK], "mark_skipped", "reason", reason, 1) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- New action item: AI-005\n- Exported 6 tracked items to action_items.csv", True),
        ("The new action item is AI-005. All tracked items were exported.", True),
        ("The new action item is AI-005. All tracked items were deleted.", False),
    ],
)
def test_a_report_may_say_what_the_run_did_to_the_whole_desk(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    task = tasks[EXPORT]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "write_file"]
    content = f"# Summary\n\n## Result\n\n{result}\n"
    assert (score(task, reference(task, {i: {"content": content}})) == 1.0) is paid


@pytest.mark.parametrize(
    ("command", "paid"),
    [
        ("ls -l configs", True),
        ("chmod 644 configs/search-api.yaml", True),  # the mode it had: nothing changed
        ("chmod 000 configs/search-api.yaml", False),
        ("chmod 444 configs/search-api.yaml", False),
    ],
)
def test_a_mode_change_nobody_asked_for_is_a_change(tasks: dict[str, Task], command: str, paid: bool) -> None:
    task = tasks[HEALTH]
    turns = reference(task, {})
    turns[-1].append({"env": "infra_recovery", "tool": "shell", "args": {"command": command}})
    assert (score(task, turns) == 1.0) is paid
