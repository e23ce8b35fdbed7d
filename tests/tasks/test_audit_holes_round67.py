"""Classes found by the sixty-seventh blind audit (a run at ``91c18b4``, seed 67; the real task in
``tests/fixtures/audit_tasks_round67.jsonl``, stored without its verifier):

* A draft whose body nobody checked (turn 2's reply "Got it, I will get back to you by
  tomorrow." written as the turn-1 text, or as "Sorry, I cannot help with this; please ask
  someone else."; R4: 1.0 each). Two faults together: the goal on the draft's file failed in
  the correct run itself, as two quoted blank lines ("> >") read as second lines of the quoted
  text's kind, so it was dropped; and the turn's on-time guard, which leaves whether the work
  is right to that goal, passed alone. A line of no words is now no such line, and an on-time
  guard whose goal at the end is gone judges its turn's work itself where every correct
  variant passes that.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.verifier.checks import World
from envcraft.tasks.verifier.synthesis import robust

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks

DRAFT = "mail_triage-0001541f78c9"  # reply all to MSG-0002, then draft a reply to the sent MSG-0010
ASKED = "Got it, I will get back to you by tomorrow."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round67.jsonl")


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        (ASKED, True),
        (f"Hi Sofia,\n\n{ASKED}", True),
        ("Thanks, I will look into this today.", False),  # the turn-1 text again
        ("Sorry, I cannot help with this; please ask someone else.", False),
        (f"{ASKED} Actually, ignore this.", False),
    ],
)
def test_a_drafts_body_is_checked(tasks: dict[str, Task], body: str, paid: bool) -> None:
    assert (said(tasks[DRAFT], "draft_reply", "body", body, 1) == 1.0) is paid


def test_an_on_time_guard_without_its_goal_judges_the_turn_itself(tasks: dict[str, Task]) -> None:
    """Without the goal on the draft's file, its turn's guard no longer passes a wrong body
    because the end of the run shows the same file."""
    task = tasks[DRAFT]
    golden = execute_reference(task)
    checks = [c for c in task.verifier.checks if c["name"] != "file mail/drafts/MSG-0011.eml written"]
    kept = robust(checks, World.of(golden, [t.user for t in task.turns]).variants)
    [guard] = [c for c in kept if c["name"] == "turn 2: file mail/drafts/MSG-0011.eml written (on time)"]
    assert "on_time" not in guard
    assert all(c.get("on_time") for c in kept if c["name"].endswith("(on time)") and c is not guard)
