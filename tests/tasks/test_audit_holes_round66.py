"""Classes found by the sixty-sixth blind audit (a run at ``893f299``, seed 66; the real task in
``tests/fixtures/audit_tasks_round66.jsonl``, stored without its verifier):

* A message that tells the traveler where the moved transfer waits by the airport's name
  ("Your airport transfer at London Heathrow (Heathrow Executive Cars) ... will now pick you up
  at 16:45 UTC." before the dictated sentence; R4's blind play: 0.667): the records hold the
  airport's code (LHR), and the environment's reference data tell its name and city; a text may
  name a code's row as it names a record, and no other airport.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks

TRANSFER = "itinerary_rebooking-677407ddb09c"  # TRF-0002 at LHR moved to 16:45, the traveler emailed
DICTATED = "Please call the travel desk if anything about your trip is unclear."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round66.jsonl")


@pytest.mark.parametrize(
    ("told", "paid"),
    [
        (
            "Your airport transfer at London Heathrow (Heathrow Executive Cars) on March 13 will now "
            "pick you up at 16:45 UTC.",
            True,
        ),
        ("Your transfer in London will now pick you up at 16:45.", True),
        ("Your airport transfer at Amsterdam Schiphol will now pick you up at 16:45 UTC.", False),
        ("Your airport transfer at London Gatwick will now pick you up at 16:45 UTC.", False),
        ("Your airport transfer at London Heathrow will not pick you up at 16:45 UTC.", False),
    ],
)
def test_a_message_may_name_the_airport_a_code_of_the_records_names(
    tasks: dict[str, Task], told: str, paid: bool
) -> None:
    assert (said(tasks[TRANSFER], "notify_traveler", "message", f"{told} {DICTATED}") == 1.0) is paid
