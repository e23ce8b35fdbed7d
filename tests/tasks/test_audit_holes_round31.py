"""The thirty-first round's finding on its real task (``tests/fixtures/audit_tasks_round31.jsonl``,
a default run at ``988f56f``, seed 31, stored without verifiers): a report's number is the one
given its label, and a record may be called by its parts joined.

* "Position of payments partition 2: 38" and "the position of partition 2 is now 38" read as
  the position 2 (0.75): the record between a label and its number is named by capitalised
  words only ("on-hand at Atlanta is now 51"), though the label is read in any case;
* "payments-2 position: 38" (0.75): a word of allowed words and a number the record holds,
  joined by a hyphen, is framing; a zero-padded number (an id's) still is not.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

STREAM = "event_stream-678648661c04"  # process partition 2 of payments, then its position in a report


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round31.jsonl")


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- partition_position: 38", True),
        ("Position of payments partition 2: 38", True),
        ("The position of partition 2 is now 38.", True),
        ("payments-2 position: 38", True),
        ("Position (payments, partition 2): 38", True),
        ("Position of payments partition 2: 26", False),  # what it was
        ("Position of payments partition 2: 44", False),  # what it never was
        ("payments-0002 position: 38", False),
    ],
)
def test_a_reports_number_is_the_one_its_label_gives(tasks: dict[str, Task], result: str, paid: bool) -> None:
    turns = [
        [call("event_stream", "process_batch", topic="payments", partition=2)],
        [
            call(
                "event_stream",
                "write_file",
                path="handover/status.md",
                content=f"# Summary\n\n## Result\n{result}\n",
            )
        ],
    ]
    assert (score(tasks[STREAM], turns) == 1.0) is paid
