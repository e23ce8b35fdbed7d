"""Classes found by the forty-fifth blind audit (a run at ``41f77bb``, seed 45; the real tasks in
``tests/fixtures/audit_tasks_round45.jsonl``, stored without verifiers), each on its real task:

* Dictated words may give a number in digits ("Had 2 large suitcases." for "Had two large
  suitcases."; R3: 0.75), and a note may be labelled by whose it is ("Driver note: ..."; R3:
  0.75); a number changed ("Had three large suitcases.") is not the words.
* A title may lead with the record it is about, set apart ("search-api: One replica down,
  reduced capacity"; R3 and R4: 0.833 and 0.5); another record's name there is another title.
* A forward's cover note may say what the forwarded mail's short texts say (its subject, its
  sender), never what its body says as if it were the run's: "Payment confirmation sent to
  Cascade Freight Billing." of a phishing mail asking for a payment confirmation paid 1.0 (R2).
* A composed memo may say what the records it carries are now, not what they were: "RMA-00001
  status open" of a return received in turn 1 paid 1.0 (R4).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import said
from .test_created_records import audit_tasks

RATED = "rideshare_dispatch-9021276b8e08"  # settle a ride, both ratings with dictated comments
TITLED = "infra_recovery-ae5646ce5256"  # open a sev3 incident titled "One replica down, ..."
FORWARD = "mail_triage-ddad584f3926"  # forward the urgent (phishing) mail to Customer Operations
MEMO = "returns_desk-896ea6764367"  # receive a return; a draft journal whose memo names it


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round45.jsonl")


@pytest.mark.parametrize(
    ("comment", "paid"),
    [
        ("Had two large suitcases.", True),
        ("Had 2 large suitcases.", True),
        ("Driver note: Had two large suitcases.", True),
        ("Had 3 large suitcases.", False),
        ("Had three large suitcases.", False),
        ("Did not have 2 large suitcases.", False),
    ],
)
def test_dictated_words_may_give_a_number_in_digits(tasks: dict[str, Task], comment: str, paid: bool) -> None:
    assert (said(tasks[RATED], "rate_trip", "comment", comment, nth=1) == 1.0) is paid


@pytest.mark.parametrize(
    ("title", "paid"),
    [
        ("One replica down, reduced capacity", True),
        ("search-api: One replica down, reduced capacity", True),
        ("payments-api: One replica down, reduced capacity", False),
        ("Resolved: One replica down, reduced capacity", False),
    ],
)
def test_a_title_may_lead_with_its_record(tasks: dict[str, Task], title: str, paid: bool) -> None:
    assert (said(tasks[TITLED], "open_incident", "title", title) == 1.0) is paid


@pytest.mark.parametrize(
    ("body", "paid"),
    [
        ("FYI, forwarding as requested.", True),
        ("Forwarding the overdue invoice INV-4578 from Cascade Freight Billing.", True),
        ("Payment confirmation sent to Cascade Freight Billing.", False),
        ("Reply within 24 hours with your payment confirmation.", False),
    ],
)
def test_a_cover_note_says_no_words_of_the_forwarded_body(
    tasks: dict[str, Task], body: str, paid: bool
) -> None:
    assert (said(tasks[FORWARD], "draft_forward", "body", body) == 1.0) is paid


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        ("Return RMA-00001: Stock moves for this week", True),
        ("Stock moves for this week - RMA-00001 received", True),
        ("Stock moves for this week - RMA-00001 status open", False),
        ("Stock moves for this week - RMA-00001 open", False),
    ],
)
def test_a_memo_says_what_its_record_is_now(tasks: dict[str, Task], memo: str, paid: bool) -> None:
    assert (said(tasks[MEMO], "begin_transaction", "memo", memo) == 1.0) is paid
