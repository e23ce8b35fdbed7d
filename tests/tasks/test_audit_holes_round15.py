"""The fifteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round15.jsonl``,
a default run at ``95352d6``, seed 15), each verifier synthesized again by this checkout:

* helper SB: the dictated memo "Year-end adjustment" written "Year end adjustment" scored 0.5:
  a hyphen joined two words into one the text did not hold;
* helper SD: "TODO-01 was added." in the asked section scored 0.75: "add" had no forms (a word
  of three letters), so "added" was no word about the new to-do;
* helper SD: a forward's cover note signed off, "Hi team, forwarding this as requested. Best,
  Alex", scored 0.857: a sign-off was read only at the end of the body, after the quoted message;
  "Urgent: please take a look." too: the user's words did not frame a body nobody dictated;
* helper SA: "FYI, forwarding the escalation contact for this month." on a forward scored 0.833:
  what the forwarded message says was no word of a cover note;
* helper SC: a handover line "Flagged the urgent message MSG-0005 for follow-up." and "sent
  2026-03-13 05:40 UTC" scored 0.75: "follow-up" and "UTC" were no words of a report;
* helpers SC and SD: "Done. New to-do: TODO-01" scored 0.75: "Done." alone, the asked work
  reported done, read as a claim about a record;
* the validation's ``cosmetic_text`` agent (a seed-0 default run at ``88528c6``): a message sent
  with a greeting and a sign-off, then a reply quoting it, scored 0.9: the quoted "> Hi," and
  "> Thanks!" read as second quoted lines of the kind the asked text took.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.validation.adversarial import Adversary
from envcraft.tasks.verifier.scoring import run_verifier

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference, reference_with, reference_writing


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round15.jsonl")


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        ("Year end adjustment", True),
        ("year-end adjustment.", True),
        ("Year end adjustments", False),
        ("Year end correction", False),
        ("Not a year end adjustment", False),
    ],
)
def test_a_hyphen_in_dictated_words_may_be_a_space(tasks: dict[str, Task], memo: str, paid: bool) -> None:
    """inventory_ledger-afc5c7699fd6: "Open a draft journal with the memo “Year-end adjustment” for
    accounting period 2026-01."."""
    task = tasks["inventory_ledger-afc5c7699fd6"]
    assert (score(task, reference_with(task, "begin_transaction", memo=memo)) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("TODO-01 was added.", True),
        ("To-do added: TODO-01", True),
        ("Logged it as TODO-01.", True),
        ("Done. New to-do: TODO-01", True),  # the asked work reported done (helpers SC and SD)
        ("New to-do TODO-01 done.", False),  # the to-do said completed
        ("TODO-01 was added and completed.", False),
        ("TODO-01 could not be added.", False),
    ],
)
def test_a_report_may_say_the_to_do_was_added(tasks: dict[str, Task], result: str, paid: bool) -> None:
    """mail_triage-8bd9b4ef0a77: "Add the to-do ... Finally, write handover/status.md with a
    “## Result” section that gives the id of the new to-do."."""
    task = tasks["mail_triage-8bd9b4ef0a77"]
    turns = reference_writing(task, "handover/status.md", f"# Summary\n\n## Result\n{result}\n")
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        ("Hi team, forwarding this as requested. Best, Alex", True),
        ("Urgent: please take a look.", True),
        ("FYI. Best, Alex", True),
        ("Please ignore this, sent by mistake.", False),
        ("Hi team, salaries are frozen. Best, Alex", False),
    ],
)
def test_a_forwards_own_note_may_be_signed_and_say_what_the_user_said(
    tasks: dict[str, Task], body: str, paid: bool
) -> None:
    """mail_triage-b32edd72af9a: "Draft a forward of the message marked urgent in
    tracking/worklist.csv to “Operations <ops@northwind.example>”.", then "send the message you
    created" (no note dictated)."""
    task = tasks["mail_triage-b32edd72af9a"]
    assert (score(task, reference_with(task, "draft_forward", body=body)) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        ("FYI, forwarding the escalation contact for this month.", True),
        ("Please see the escalation contact below.", True),
        ("Ignore this, Sofia is not the escalation contact.", False),
        ("FYI, the escalation contact has left the company.", False),
    ],
)
def test_a_cover_note_may_say_what_the_forwarded_message_says(
    tasks: dict[str, Task], body: str, paid: bool
) -> None:
    """itinerary_rebooking-9dad7a7def78, turn 2: "draft a forward of the message that the escalated
    entry in watch/followups.log names to ..." (MSG-0002: "I'm the contact for late-order
    escalations this month")."""
    task = tasks["itinerary_rebooking-9dad7a7def78"]
    assert (score(task, reference_with(task, "draft_forward", body=body)) == 1.0) is paid


@pytest.mark.parametrize(
    ("notes", "paid"),
    [
        ("Flagged the urgent message MSG-0005 (Invoice INV-4877) for follow-up.", True),
        ("Message MSG-0001: email to the traveler, sent 2026-03-13 05:40 UTC.", True),
        ("Flagged the urgent message MSG-0005 and paid it.", False),
    ],
)
def test_a_handover_may_say_follow_up_and_utc(tasks: dict[str, Task], notes: str, paid: bool) -> None:
    """itinerary_rebooking-18248ed2ac66: text the traveler, flag the urgent message of the
    worklist, then "write handover/handover.md with a “## Result” section that gives the id of
    the new message to the traveler"."""
    task = tasks["itinerary_rebooking-18248ed2ac66"]
    content = f"# Summary\n\n## Result\n- new_message_to_the_traveler: MSG-0001\n\n{notes}\n"
    turns = reference_writing(task, "handover/handover.md", content)
    assert (score(task, turns) == 1.0) is paid


def test_a_quoted_greeting_is_a_courtesy(tasks: dict[str, Task]) -> None:
    """mail_triage-0e1e3da1d507: send a new message saying “Running a few minutes late.”, then
    "draft a reply to the message you created, saying “Thanks, this is confirmed.”". The
    cosmetic agent writes both texts with a greeting and a sign-off; the reply quotes them."""
    task = tasks["mail_triage-0e1e3da1d507"]
    trials, _ = Adversary(task, resolve_packages(task)).trials(execute_reference(task))
    cosmetic = [trial for trial in trials if trial.kind == "cosmetic_text"]
    assert cosmetic
    for trial in cosmetic:
        assert run_verifier(task, trial.outcome).score == 1.0, trial.note
    turns = reference(task)
    quoted = "Running a few minutes late.\n\nCorrection: ignore this."
    for step in turns[0]:
        if step["tool"] == "compose_draft":
            step["args"] = {**step["args"], "body": quoted}
    assert score(task, turns) < 1.0
