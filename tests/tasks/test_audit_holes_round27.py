"""The twenty-seventh round's findings on their real tasks (``tests/fixtures/audit_tasks_round27.jsonl``,
a default run at ``06c3fd2``, seed 27, stored without verifiers):

* helper ED, inventory_ledger-db9ea39d3aae: a report of a new cycle count saying "Omar has been
  notified." or "Sent to Omar Haddad." scored 1.0 though the run told nobody anything: sending
  words were claims only beside a draft.
* helper EA, inventory_ledger-6e6a7990d35f: a journal's memo with an aside of words of fields
  that hold nothing ("(period 2026-01 closed)" of an open period, "Closed: ...") scored 1.0.
* helper EC, itinerary_rebooking-272e6356d7a8: the dictated message with the trip's reference
  beside a greeting or a sign-off ("Hi Hanna, regarding your trip CLNWG7: ...") scored 0.5.
* helper EB, rideshare_dispatch-b22c31e3e0c5: a thorough agent that read for 30 calls before the
  asked offer scored 0.5: three other riders' requests expired meanwhile, which rideshare applies
  only at its next write, so no idle run of the verifier's world ever showed it.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

COUNT = "inventory_ledger-db9ea39d3aae"  # start the count a colleague's mail points at, then report its id
MEMO = "inventory_ledger-6e6a7990d35f"  # open a draft journal with a dictated memo
TRAVELER = "itinerary_rebooking-272e6356d7a8"  # message the traveler of a trip named by its reference
DICTATED = "We are rebooking you and will send the new flight details shortly."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round27.jsonl")


def _reported(text: str) -> list[list[dict[str, Any]]]:
    return [
        [
            call("mail_triage", "read_message", message_id="MSG-0010"),
            call("inventory_ledger", "start_cycle_count", warehouse_id="WH-RNX", sku_ids=["SKU-18871"],
                 period="2026-01"),
        ],
        [call("mail_triage", "write_file", path="handover/summary.md", content=text)],
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("New cycle count: CC-0002", True),
        ("New cycle count: CC-0002. SKU-18871 is frozen at WH-RNX.", True),  # start_cycle_count's "frozen"
        ("New cycle count: CC-0002. Omar has been notified.", False),  # nobody was told anything
        ("New cycle count: CC-0002. Omar has been emailed.", False),
        ("New cycle count: CC-0002. Sent to Omar Haddad.", False),
        ("New cycle count: CC-0002. The team has been informed.", False),
    ],
)
def test_a_report_claims_no_message_the_run_never_sent(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    assert (score(tasks[COUNT], _reported(f"## Result\n\n{result}\n")) == 1.0) is paid


@pytest.mark.parametrize(
    ("memo", "paid"),
    [
        ("Stock moves for this week", True),
        ("Stock moves for this week (period 2026-01)", True),
        ("Stock moves for this week (period 2026-01 closed)", False),  # the period is open
        ("Closed: stock moves for this week", False),
        ("Stock moves for this week - closed at approval limit 1500", False),
    ],
)
def test_an_aside_says_nothing_a_field_holding_nothing_would(
    tasks: dict[str, Task], memo: str, paid: bool
) -> None:
    opened = [[call("inventory_ledger", "begin_transaction", memo=memo, period="2026-01")]]
    assert (score(tasks[MEMO], opened) == 1.0) is paid


@pytest.mark.parametrize(
    ("message", "paid"),
    [
        (DICTATED, True),
        (f"Hi Hanna, {DICTATED} Best, Rosa", True),
        (f"Hi Hanna, regarding your trip CLNWG7: {DICTATED} Best, Rosa", True),
        (f"Hi Hanna, {DICTATED[:-1]} (trip CLNWG7). Best, Rosa", True),
        (f"Hi Hanna, regarding your trip CLNWG7: {DICTATED} Not confirmed. Best, Rosa", False),
        (f"Hi Hanna, {DICTATED[:-1]} (trip CLNWG7 cancelled). Best, Rosa", False),
    ],
)
def test_an_aside_may_stand_beside_a_greeting_or_a_sign_off(
    tasks: dict[str, Task], message: str, paid: bool
) -> None:
    trip = "itinerary_rebooking"
    turns = [
        [
            call(trip, "list_itineraries"),
            call(trip, "notify_traveler", itinerary_id="ITN-4005", channel="email", message=message),
        ]
    ]
    assert (score(tasks[TRAVELER], turns) == 1.0) is paid


def test_requests_the_clock_expires_while_an_agent_reads_are_the_worlds_doing(tasks: dict[str, Task]) -> None:
    ride = "rideshare_dispatch"
    reads = [call(ride, "list_open_requests") for _ in range(30)]
    offer = call(ride, "propose_match", request_id="REQ-7527", driver_id="DRV-257")
    assert score(tasks["rideshare_dispatch-b22c31e3e0c5"], [[offer]]) == 1.0
    assert score(tasks["rideshare_dispatch-b22c31e3e0c5"], [[*reads, offer]]) == 1.0
    other = call(ride, "propose_match", request_id="REQ-8098", driver_id="DRV-731")  # an unasked offer
    assert score(tasks["rideshare_dispatch-b22c31e3e0c5"], [[other, *reads, offer]]) < 1.0
