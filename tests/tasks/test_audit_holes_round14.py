"""The fourteenth round's findings on their real tasks (``tests/fixtures/audit_tasks_round14.jsonl``,
a default run at ``3c48b69``, seed 14), each verifier synthesized again by this checkout:

* helper RA: a cancel reason going on after a comma with words of the world's own records,
  "requested by the owner, send invoices" (another job) or "..., cancel the billing close run",
  paid 1.0: a comma set off an aside as a bracket or a dash does;
* helper RB: an asked "## Result" section listing an old recipe beside the new one, "new
  cleaning recipes: RCP-03, RCP-01", paid 1.0: any id of the run's records was allowed there;
* helper RB: the incident title "DS-007 Onboarding checklist" (the id the user asked it to
  mention, put first) scored 0.833: the dictated words had to open the title or follow a break;
* helper RD: "I drafted the forward as MSG-0010" in an asked section, and "I emailed the traveler
  (MSG-0001)." in a reply, scored 0.833 and 0.8: "I" was no word a note may use ("my" was);
* helpers RB and RD: a status file saying true things of the run's other work beside the asked
  section ("Opened incident INC-2042 for inventory-sync", "Removed rule 12 from RCP-01") scored
  0.917: only the words of the asked records framed the whole file.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference_with, reference_writing


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round14.jsonl")


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("Requested by the owner.", True),
        ("requested by the owner (archive_reports)", True),
        ("requested by the owner - archive_reports on RUN-7714", True),
        ("requested by the owner, per Ingrid", True),
        ("requested by the owner, send invoices", False),
        ("requested by the owner, cancel the billing close run", False),
    ],
)
def test_words_after_a_comma_are_no_aside(tasks: dict[str, Task], reason: str, paid: bool) -> None:
    """job_scheduler-70ea1f9e6f9c: "Cancel job archive_reports of RUN-7714; the reason is
    “requested by the owner”."."""
    task = tasks["job_scheduler-70ea1f9e6f9c"]
    assert (score(task, reference_with(task, "cancel_job", reason=reason)) == 1.0) is paid


REPORT = "reports/status.md"


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- new_cleaning_recipe: RCP-03\n", True),
        ("- new cleaning recipe: RCP-03 (cleaned with RCP-01)\n", True),
        ("- new cleaning recipes: RCP-03, RCP-01\n", False),
        ("- new cleaning recipes: RCP-01 and RCP-03\n", False),
    ],
)
def test_an_old_record_listed_with_the_asked_one_is_a_second_answer(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    """sheet_analytics-c684085d236c, turn 4: "... write reports/status.md with a “## Result”
    section that gives the id of the new cleaning recipe" (RCP-03; RCP-01 is the old one the run
    cleaned with)."""
    task = tasks["sheet_analytics-c684085d236c"]
    turns = reference_writing(task, REPORT, "# Summary\n\n## Result\n" + result)
    assert (score(task, turns) == 1.0) is paid


@pytest.mark.parametrize(
    ("title", "paid"),
    [
        ("Dataset DS-007: Onboarding checklist", True),
        ("DS-007 Onboarding checklist", True),
        ("Onboarding checklist (DS-007)", True),
        ("DS-003 Onboarding checklist", False),  # the raw dataset, not the one made
        ("DS-007 not an onboarding checklist", False),
    ],
)
def test_a_title_may_name_the_record_first(tasks: dict[str, Task], title: str, paid: bool) -> None:
    """sheet_analytics-c684085d236c, turn 4: "open a sev2 incident for service inventory-sync
    titled “Onboarding checklist”, mentioning the id of that dataset" (DS-007, the cleaned one)."""
    task = tasks["sheet_analytics-c684085d236c"]
    assert (score(task, reference_with(task, "open_incident", title=title)) == 1.0) is paid


def test_a_note_may_say_i(tasks: dict[str, Task]) -> None:
    """event_stream-36aa7b580d91, turn 2, and itinerary_rebooking-c950feaf1fd5, turn 2: the
    writer speaks of what they did in the first person."""
    task = tasks["event_stream-36aa7b580d91"]
    turns = reference_writing(
        task,
        "notes/result.md",
        "## Result\n\nI drafted the forward as MSG-0010; it is in conversation THR-010.\n",
    )
    assert score(task, turns) == 1.0
    task = tasks["itinerary_rebooking-c950feaf1fd5"]
    body = "Message MSG-0002: Running a few minutes late.\n\nI emailed the traveler (MSG-0001)."
    assert score(task, reference_with(task, "draft_reply", body=body)) == 1.0
    body = "Message MSG-0002: Running a few minutes late.\n\nI cancelled the trip (MSG-0001)."
    assert score(task, reference_with(task, "draft_reply", body=body)) < 1.0


@pytest.mark.parametrize(
    ("notes", "paid"),
    [
        ("Incident INC-2042 opened for inventory-sync, mentioning dataset DS-007.\n", True),
        ("- Removed rule 12 from RCP-01.\n- Opened incident INC-2042 for inventory-sync.\n", True),
        ("Incident INC-2042 opened and resolved.\n", False),  # nothing resolved it
        ("- Deleted RCP-01.\n", False),  # a rule was removed from it, it stays
        ("- Removed rule 12 from RCP-03.\n", False),  # the act on another recipe
    ],
)
def test_a_report_may_say_what_the_run_did_to_other_records(
    tasks: dict[str, Task], notes: str, paid: bool
) -> None:
    """sheet_analytics-c684085d236c, turn 4: the asked status file with a notes section too."""
    task = tasks["sheet_analytics-c684085d236c"]
    turns = reference_writing(
        task, REPORT, "# Quarterly review prep\n\n## Result\nRCP-03\n\n## Notes\n" + notes
    )
    assert (score(task, turns) == 1.0) is paid
