"""Classes found by the sixty-fourth blind audit (a run at ``bb943f4``, seed 64; the real tasks in
``tests/fixtures/audit_tasks_round64.jsonl``, stored without their verifiers):

* A report that gives an asked record a value of its kind's choices it does not hold, in their
  words ("Note: refund was issued as store credit" of a refund to the original payment; R1: 1.0):
  a choice of two words is a state too, and a line that names no id names the one asked record of
  the kind it names.
* A handover that says what is left for the next shift ("CC-0002 (awaiting physical count)",
  "please ... reconcile CC-0002", "frozen until the count is reconciled"; R2: 0.875 each): an
  act still to come is no claim that it came.
* A dedupe rule given an option nobody named, where the rule's own field is the change
  (``rules/12/option``; R1: 0.996): the option is the agent's, as it is inside a new record.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, score
from .test_created_records import audit_tasks

SUMMARY = "returns_desk-0bc6ccae8537"  # RMA-00003 (damaged) refunded as RF-00003 to the original payment
HANDOVER = "inventory_ledger-bfc8b4b2daca"  # cycle count CC-0002 started, SO-23466 shipped
RECIPE = "sheet_analytics-f79fa22e36d6"  # a dedupe rule on order_id added to RCP-01, no option named


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round64.jsonl")


def written(task: Task, content: str) -> float:
    """The score of ``task``'s reference with its last file written as ``content``."""
    turns = reference(task, {})
    turns[-1][-1]["args"]["content"] = content
    return score(task, turns)


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        ("", True),
        ("- Note: refund issued to the original payment\n", True),
        ("- Refund RF-00003 to the original payment (not store credit)\n", True),
        ("- Return RMA-00003 (damaged)\n", True),
        ("- Return RMA-00003 (opened as damaged, received, refunded)\n", True),  # what was done to it
        ("- Return RMA-00003 (open)\n", False),  # a state it left
        ("- Note: refund was issued as store credit\n", False),
        ("- Refund RF-00003 issued as store credit\n", False),
        ("- Note: the refund went out as store credit\n", False),
        ("- Return RMA-00003: wrong item\n", False),
    ],
)
def test_a_report_may_not_give_a_record_a_choice_it_does_not_hold(
    tasks: dict[str, Task], note: str, paid: bool
) -> None:
    content = f"## Result\n\n- Return: RMA-00003\n- Refund: RF-00003\n{note}"
    assert (written(tasks[SUMMARY], content) == 1.0) is paid


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("- New cycle count: CC-0002 (awaiting count)\n- Order SO-23466 status: shipped\n", True),
        (
            "- New cycle count: CC-0002\n- Order SO-23466 status: shipped\n"
            "- Next shift: please count SKU-17643 at WH-ATL and reconcile CC-0002.\n",
            True,
        ),
        (
            "- New cycle count: CC-0002\n- Order SO-23466 status: shipped\n\n## Notes\n\n"
            "SKU-17643 is frozen at WH-ATL until the count is reconciled.\n",
            True,
        ),
        (
            "- New cycle count: CC-0002\n- Order SO-23466 status: shipped\n\n## Notes\n\n"
            "SKU-17643 is frozen at WH-ATL until the count is done.\n",
            True,
        ),
        ("- New cycle count: CC-0002 (reconciled)\n- Order SO-23466 status: shipped\n", False),
        ("- New cycle count: CC-0002, reconciled\n- Order SO-23466 status: shipped\n", False),
        (
            "- New cycle count: CC-0002\n- Order SO-23466 status: shipped\n\n## Notes\n\n"
            "SKU-17643 was frozen at WH-ATL until the count was reconciled.\n",
            False,
        ),
        (
            "- New cycle count: CC-0002\n- Order SO-23466 status: shipped\n"
            "- Next shift: nothing left, CC-0002 already reconciled.\n",
            False,
        ),
        (
            "- New cycle count: CC-0002\n- Order SO-23466 status: shipped\n"
            "- Next shift: please cancel SO-23466.\n",
            False,
        ),
    ],
)
def test_a_handover_may_say_what_is_left_for_the_next_shift(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    assert (written(tasks[HANDOVER], f"# Handover\n\n## Result\n{text}") == 1.0) is paid


@pytest.mark.parametrize(
    ("change", "paid"),
    [
        ({"option": "first"}, True),
        ({"option": "last"}, True),
        ({}, True),
        ({"column": "customer_id"}, False),
    ],
)
def test_an_option_nobody_named_is_the_agents_in_a_rule_changed_in_place(
    tasks: dict[str, Task], change: dict[str, str], paid: bool
) -> None:
    task = tasks[RECIPE]
    [at] = [i for i, c in enumerate(task.reference.calls) if c.tool == "add_cleaning_rule"]
    assert (score(task, reference(task, {at: change})) == 1.0) is paid
