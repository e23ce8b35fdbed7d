"""Classes found by the thirty-seventh blind audit (a run at ``c5af9dc``, seed 37; the real task in
``tests/fixtures/audit_tasks_round37.jsonl``, stored without its verifier), each on its real task:

* A report's line may name a record the work was done from (O4: 0.875): "- The escalated dataset
  in the watch log was DS-007." in a "## Notes" section beside the asked "## Result", of a clean
  that read DS-007. A line naming a record the run made or changed could say what the world
  says of it; one naming a record the run only named in its calls could say nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

Turns = list[list[dict[str, Any]]]
CLEAN = "sheet_analytics-c3fc7d86ae13"  # register Q2, clean the escalated DS-007, a new recipe; a report
SHEET = "sheet_analytics"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round37.jsonl")


def reported(notes: str) -> Turns:
    summary = "# Summary\n\n## Result\n- New cleaning recipe: RCP-03\n- data/sales_2025Q2.csv version: 2\n"
    return [
        [
            call(SHEET, "register_dataset", path="data/sales_2025Q2.csv", schema_name="sales"),
            call(SHEET, "read_file", path="watch/dataset-watch.log"),
            call(
                SHEET,
                "clean_dataset",
                dataset_id="DS-007",
                recipe_id="RCP-02",
                output_path="data/clean/sales_2025Q3.csv",
            ),
        ],
        [
            call(SHEET, "create_recipe", name="Blue Harbor"),
            call(SHEET, "add_cleaning_rule", recipe_id="RCP-03", operation="dedupe", column="rep"),
        ],
        [call(SHEET, "write_file", path="reports/summary.md", content=summary + notes)],
    ]


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        (None, True),
        ("- The escalated dataset in the watch log was DS-007.", True),
        ("- Cleaned DS-007 with RCP-02 (Drop orders exported twice).", True),
        ("- DS-008 was the escalated dataset.", False),  # a dataset the work never named
        ("- DS-007 was deleted.", False),
        ("- DS-007 was approved by finance.", False),
        ("- DS-007 was sent to finance.", False),
        ("- The escalated dataset DS-007 is not cleaned.", False),
    ],
)
def test_a_report_line_may_name_the_record_the_work_was_done_from(
    tasks: dict[str, Task], line: str | None, paid: bool
) -> None:
    notes = "" if line is None else f"\n## Notes\n{line}\n"
    assert (score(tasks[CLEAN], reported(notes)) == 1.0) is paid
