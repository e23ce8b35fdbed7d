"""Classes found by the forty-third blind audit (a run at ``d06b93a``, seed 43; the real tasks in
``tests/fixtures/audit_tasks_round43.jsonl``, stored without verifiers), each on its real task:

* An asked report says each asked value as words of its own, as often as it was asked (R2: two
  versions both "2", and "- dataset_version: 2" alone, or one of them wrong, paid 1.0), and a
  value is not labelled with another's record ("Committed offset of payments partition 1: 24"
  of partition 0's committed offset; R1: 1.0); a table's "| metric | value |" header and "(one
  duplicate dropped)" are framing (R1: 0.909).
* "The message you created" may not be said where the work made another message since (R3: the
  reply or the forward, 0.364 for the forward).
* A job's step that its phrase says nothing of alone and that the work did not need is no part
  of the job (R4: "clean DS-007 ... with a new recipe" profiled the clean DS-007 first; the right
  run without the profile scored 0.444).
"""

from __future__ import annotations

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.corpus.compose import load_library, needless_step
from envcraft.tasks.format.model import Task
from envcraft.tasks.phrasing.intents import Unnameable

from .test_audit_holes_round41 import reference
from .test_created_records import audit_tasks, planned, replayed, score

OFFSETS = "event_stream-bd50efbc84fc"  # catch p0 up and commit, pause two, dedupe p1; a report
VERSIONS = "event_stream-c5358748825d"  # a batch, a recipe rule, register, rerun; two versions "2"
TODO = "mail_triage-44576613e780"  # answer, forward and flag a message; a to-do for the reply
PROFILE = "sheet_analytics-46dd5e0d905c"  # profile and clean the clean DS-007 with a new recipe


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round43.jsonl")


def reported(task: Task, result: str) -> float:
    """The score of ``task``'s reference with its report's Result section written as ``result``."""
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "write_file"]
    content = f"# Summary\n\n## Result\n{result}\n"
    return score(task, reference(task, {i: {"content": content}}))


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- dataset_version: 2\n- cleaning_recipe_version: 2", True),
        ("- dataset_version: 2", False),
        ("- cleaning_recipe_version: 2", False),
        ("- dataset_version: 2\n- cleaning_recipe_version: 1", False),
        ("- 2026 review: 2", False),  # "2" inside "2026" is not said
    ],
)
def test_a_value_asked_twice_is_said_twice(tasks: dict[str, Task], result: str, paid: bool) -> None:
    assert (reported(tasks[VERSIONS], result) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- Committed offset of payments partition 0: 24\n- Read position of payments partition 1: 30", True),
        (
            "| partition | metric | value |\n|---|---|---|\n"
            "| payments/p0 | committed offset | 24 |\n| payments/p1 | read position | 30 |",
            True,
        ),
        (
            "- Committed offset of payments partition 0: 24\n"
            "- Read position of payments partition 1: 30 (one duplicate dropped)",
            True,
        ),
        (
            "- Committed offset of payments partition 1: 24\n- Read position of payments partition 0: 30",
            False,
        ),
        (
            "- Committed offset of payments partition 0: 24\n- Read position of payments partition 1: 30\n"
            "- Committed offset of payments partition 1: 30",
            False,
        ),
    ],
)
def test_a_value_is_labelled_with_its_own_record(tasks: dict[str, Task], result: str, paid: bool) -> None:
    assert (reported(tasks[OFFSETS], result) == 1.0) is paid


def test_the_message_you_created_is_no_reference_where_another_was_made_since(tasks: dict[str, Task]) -> None:
    with pytest.raises(Unnameable):  # the reply MSG-0010, or the forward MSG-0011 made since
        planned(tasks[TODO], pointed=True)


def needless(task: Task, change: dict[int, dict[str, object]] | None = None) -> bool:
    run, _ = replayed(task, change)
    packages = {env: load_package(env) for env in task.envs}
    [job] = [
        j
        for j in packages["sheet_analytics"].env_class.jobs
        if j.name == "clean a raw sheet with a new recipe"
    ]
    return needless_step(job, run, load_library(task.envs).graphs, packages)


def test_a_profile_the_clean_did_not_need_is_no_part_of_the_job(tasks: dict[str, Task]) -> None:
    assert needless(tasks[PROFILE])  # DS-007 is a clean artifact: the clean takes it unprofiled


def test_a_profile_the_clean_needs_is_part_of_the_job(tasks: dict[str, Task]) -> None:
    q4 = {
        1: {"dataset_id": "DS-004"},
        4: {"dataset_id": "DS-004", "output_path": "data/clean/sales_2025Q4.csv"},
    }
    assert not needless(tasks[PROFILE], q4)  # the new quarter's raw sheet, never profiled
