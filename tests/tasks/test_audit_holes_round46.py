"""Classes found by the forty-sixth blind audit (a run at ``410b7ad``, seed 46; the real tasks in
``tests/fixtures/audit_tasks_round46.jsonl``, stored without verifiers), each on its real task:

* A JSON file that gives a key twice says two things (R3: ``{"new_incident": "INC-2041",
  "new_incident": "INC-2042"}`` paid 1.0, the parser keeping the last).
* "Time" in a sentence telling the traveler the change names the time that follows it ("Your new
  pickup time is 12:55."), never a claim of its own ("Your flight is on time." of a delayed
  flight paid 1.0; R4).
* A report line naming one asked record may not give it a state its kind can be in and it is
  not ("Return RMA-00001 (refunded)" or "(open)" of a return received paid 1.0; R2), unless it
  denies it ("not refunded yet").
* Nor what the world says only of another record the run changed, one it does not point at
  ("Return RMA-00001 (reason: found a better price elsewhere)", the reason another order was
  cancelled; "Refund RF-00002 for return RMA-00001" of a refund of that order; R2: 1.0).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task

from .test_audit_holes_round41 import reference
from .test_audit_holes_round43 import reported
from .test_created_records import audit_tasks, score

STATUS = "infra_recovery-04d2827173d4"  # a sev1 incident, a check, a note; its id in status.json
PICKUP = "itinerary_rebooking-da60733c834a"  # re-time a pickup to 12:55 and email the traveler
HANDOVER = "returns_desk-e3ed0e5564c9"  # open and receive a return, cancel an order; a handover


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round46.jsonl")


@pytest.mark.parametrize(
    ("content", "paid"),
    [
        ('{\n  "new_incident": "INC-2042"\n}\n', True),
        ('{\n  "new_incident": "INC-2041",\n  "new_incident": "INC-2042"\n}\n', False),
        ('{\n  "new_incident": "INC-2042",\n  "new_incident": "INC-2042"\n}\n', False),
    ],
)
def test_a_json_key_stands_once(tasks: dict[str, Task], content: str, paid: bool) -> None:
    task = tasks[STATUS]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "write_file"]
    assert (score(task, reference(task, {i: {"content": content}})) == 1.0) is paid


DICTATED = "Please call the travel desk if anything about your trip is unclear."


@pytest.mark.parametrize(
    ("told", "paid"),
    [
        ("Your new pickup time is 12:55.", True),
        ("Your flight is on time.", False),
        ("Your transfer is at 12:55 and your flight is on time.", False),
    ],
)
def test_time_names_the_time_that_follows(tasks: dict[str, Task], told: str, paid: bool) -> None:
    task = tasks[PICKUP]
    [i] = [i for i, c in enumerate(task.reference.calls) if c.tool == "notify_traveler"]
    assert (score(task, reference(task, {i: {"message": f"{told} {DICTATED}"}})) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- new_return: RMA-00001\n- new_refund: RF-00002", True),
        ("- Return RMA-00001 (received)\n- Refund RF-00002", True),
        ("- Return RMA-00001 (received, not refunded yet)\n- Refund RF-00002", True),
        ("- Return RMA-00001 (refunded)\n- Refund RF-00002", False),
        ("- Return RMA-00001 (refunded in full)\n- Refund RF-00002", False),
        ("- Return RMA-00001 (open)\n- Refund RF-00002", False),
    ],
)
def test_a_line_gives_its_record_no_state_it_is_not_in(
    tasks: dict[str, Task], result: str, paid: bool
) -> None:
    assert (reported(tasks[HANDOVER], result) == 1.0) is paid


@pytest.mark.parametrize(
    ("result", "paid"),
    [
        ("- Return RMA-00001 for ORD-100006 (2 x HM-3001, wrong_item)\n- Refund RF-00002", True),
        ("- Return RMA-00001\n- Refund RF-00002 issued for ORD-100007", True),
        ("- Return RMA-00001 received; ORD-100007 cancelled\n- Refund RF-00002", True),
        ("- Return RMA-00001 received, ORD-100007 cancelled\n- Refund RF-00002 (58.50)", True),
        ("- Return RMA-00001 received and the other order was cancelled\n- Refund RF-00002", True),
        ("- Return RMA-00001 (cancelled)\n- Refund RF-00002", False),
        ("- Return RMA-00001 (reason: found a better price elsewhere)\n- Refund RF-00002", False),
        ("- Return RMA-00001 for ORD-100007\n- Refund RF-00002", False),
        ("- Return RMA-00001\n- Refund RF-00002 for return RMA-00001", False),
        ("- Return RMA-00001\n- Refund RF-00002 for the HM-3001 return", False),
        ("- Return RMA-00001\n- Refund RF-00002 for ORD-100006", False),
    ],
)
def test_a_line_gives_its_record_no_facts_of_another(tasks: dict[str, Task], result: str, paid: bool) -> None:
    assert (reported(tasks[HANDOVER], result) == 1.0) is paid
