"""Classes found by the fifty-fourth blind audit (a run at ``bf75ecf``, seed 54; the real tasks in
``tests/fixtures/audit_tasks_round54.jsonl``, stored without verifiers), each on its real task:

* An aside gives a day only of the records it names: "New pickup: March 05 at 16:10." after the
  dictated words, of a pickup moved to March 13, paid 1.0, as did "1 March" (R1): the aside's
  words held the records' numbers one by one ("05", "13", "march"), never their days.
* A slot of a rendered file is one line: a hand-typed "- [ ] Call back about the order" under
  the ticked to-do was read as part of its text and paid 1.0 (R1).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference, said
from .test_created_records import audit_tasks, score

PICKUP = "itinerary_rebooking-5b8198ee9541"  # a pickup moved to March 13 16:10, an SMS, an email
TODO = "mail_triage-4e79d680c7c5"  # a to-do added and ticked off at once
WORDS = "Your airport pickup time has changed; please check the new time in your app."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round54.jsonl")


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (f"{WORDS} New pickup: March 13 at 16:10.", True),
        (f"{WORDS} New pickup: 13 March at 16:10.", True),
        (f"{WORDS} New pickup: 16:10.", True),
        (f"{WORDS} New pickup: March 05 at 16:10.", False),
        (f"{WORDS} New pickup: 1 March at 16:10.", False),
    ],
)
def test_an_aside_gives_a_day_of_its_records(tasks: dict[str, Task], message: str, paid: bool) -> None:
    assert (said(tasks[PICKUP], "notify_traveler", "message", message) == 1.0) is paid


@pytest.mark.parametrize(
    ("line", "paid"),
    [
        ("", True),
        ("- [ ] Call back about the order\n", False),  # the done item open again, by hand
        ("- [ ] call the customer\n", False),
    ],
)
def test_a_line_added_under_a_rendered_one_is_no_part_of_it(
    tasks: dict[str, Task], line: str, paid: bool
) -> None:
    task = tasks[TODO]
    turns = reference(task, {})
    if line:
        command = f"printf '%s' '{line}' >> todo.md"
        turns[-1].append({"env": "mail_triage", "tool": "shell", "args": {"command": command}})
    assert (score(task, turns) == 1.0) is paid
