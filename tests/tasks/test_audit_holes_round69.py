"""Classes found by the sixty-ninth blind audit (a run at ``16a9ba7``, seed 69; the real task in
``tests/fixtures/audit_tasks_round69.jsonl``, stored without its verifier):

* A dictated note signed with the name of the person the record is for ("Shared in the team
  channel. (Amara)" on the item completed for amara; R4: 0.75). A bare name after dictated words
  is a user's or one of the people the call's records are for; the item's owner is a handle the
  world's roster maps to a name ("amara": "Amara Okafor"), which no record's name field held, so
  she was nobody's. A handle a roster names is now that person (``checks.rostered``). Another
  member ("(Dana)", who had taken it on) and a claim ("(not done)") still fail.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks

DONE = "notes_desk-ce94285a1069"  # amara did "Budget draft", which dana had taken on
NOTE = "Shared in the team channel."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round69.jsonl")


@pytest.mark.parametrize(
    ("note", "paid"),
    [
        (NOTE, True),
        (f"{NOTE} (Amara)", True),
        (f"{NOTE} - Amara Okafor", True),
        (f"{NOTE} (Dana)", False),  # who had it, not who did it
        (f"{NOTE} (not done)", False),
        ("Not shared in the team channel.", False),
    ],
)
def test_a_note_may_name_the_person_the_item_is_for(tasks: dict[str, Task], note: str, paid: bool) -> None:
    assert (said(tasks[DONE], "complete_action_item", "note", note, 0) == 1.0) is paid
