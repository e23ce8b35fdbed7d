"""The twenty-fifth round's findings on their real tasks (``tests/fixtures/audit_tasks_round25.jsonl``,
a default run at ``85f0301``, seed 25, stored without verifiers):

* helpers CA and CC: a message the user pointed at (a colleague's mail, a follow-up list) and the
  agent only read was flagged on top of the asked work, and scored 1.0: mail_triage declared a
  message's flags free for the agent, and the guard on a record the work touched ignored every
  field a correct run moved, the flag "seen" that reading sets among them. Only what looking
  sets is excused now; labelling or archiving such a message already cost, and so does a flag.
* helper CC: the work of a one-turn task done in a second turn nobody spoke in scored 1.0; a
  trajectory with calls past the task's last turn is no run of the task (0.0, and why).
* helper CA, event_stream-2af6e7e40ad5: a Markdown report of a partition's position paid 1.0 with
  a false number beside it ("committed 23") and 0.75 with a true one ("committed is still 21"),
  or with what process_batch itself answered ("the sink write succeeded"), or under "## Results".
* helper CB: a dictated message signed by a team in lower case ("Best regards, the travel desk",
  "Regards, Ravi (traveler services)") or followed by "Sorry for the delay." scored 0.67, where
  "Best regards, Travel desk" and "Sorry for the inconvenience." passed.
* helper CD: a JSON note naming the message the run forwarded under "forwarded_message" beside
  the two asked ids scored 0.83; MSG-0001 is of the asked ids' kind, so it read as a second answer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier.scoring import score_trajectory

from .test_created_records import audit_tasks, call, score

LABEL = "mail_triage-f6bd1a56096a"  # label the message a follow-up list flags
SKIP = "job_scheduler-39593a470407"  # skip the job a colleague's mail names
COUNT = "inventory_ledger-e573cf498133"  # start the cycle count a colleague's mail asks for
WAITLIST = "class_booking-3c656cff815d"  # take a member off a waitlist
MAIL = "mail_triage"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round25.jsonl")


def _label(*extra: dict[str, Any], read: bool = False) -> list[list[dict[str, Any]]]:
    looked = [call(MAIL, "read_message", message_id="MSG-0008")] if read else []
    return [
        [
            call(MAIL, "read_file", path="exports/message-followups.csv"),
            *looked,
            call(MAIL, "label_message", message_id="MSG-0008", label="customer-escalation"),
            *extra,
        ]
    ]


def _skip(*extra: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [
        [
            call(MAIL, "read_message", message_id="MSG-0010"),
            call("job_scheduler", "mark_skipped", run_id="RUN-7419", job="refresh_dashboards",
                 reason="covered by the manual rerun"),
            *extra,
        ]
    ]  # fmt: skip


def _count(*extra: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [
        [
            call(MAIL, "read_message", message_id="MSG-0010"),
            *extra,
            call("inventory_ledger", "start_cycle_count", warehouse_id="WH-CMH",
                 sku_ids=["SKU-13933", "SKU-13012"], period="2026-01"),
        ]
    ]  # fmt: skip


def test_reading_the_pointed_at_message_is_free_and_flagging_it_is_not(tasks: dict[str, Task]) -> None:
    flag = call(MAIL, "flag_message", message_id="MSG-0008", flagged=True)
    assert score(tasks[LABEL], _label()) == 1.0
    assert score(tasks[LABEL], _label(read=True)) == 1.0  # reading marks it "seen"
    assert score(tasks[LABEL], _label(flag)) < 1.0
    assert score(tasks[LABEL], _label(flag, read=True)) < 1.0


def test_a_flag_on_the_colleagues_mail_is_an_unasked_write(tasks: dict[str, Task]) -> None:
    flag = call(MAIL, "flag_message", message_id="MSG-0010", flagged=True)
    assert score(tasks[SKIP], _skip()) == 1.0
    assert score(tasks[SKIP], _skip(flag)) < 1.0
    assert score(tasks[COUNT], _count()) == 1.0
    assert score(tasks[COUNT], _count(flag)) < 1.0
    archive = call(MAIL, "move_message", message_id="MSG-0010", folder="archive")
    assert score(tasks[COUNT], _count(archive)) < 1.0  # as before


def test_work_in_a_turn_the_task_does_not_have_scores_nothing(tasks: dict[str, Task]) -> None:
    task = tasks[WAITLIST]
    assert len(task.turns) == 1
    done = [call("class_booking", "leave_waitlist", entry_id="WL-7003")]
    assert score_trajectory(task, [done]).score == 1.0
    assert score_trajectory(task, [done, []]).score == 1.0  # an empty turn after the last is no work
    late = score_trajectory(task, [[], done])
    assert late.score == 0.0
    assert late.error is not None and "turn 2" in late.error


REPORT = "event_stream-2af6e7e40ad5"  # process a partition, then report its position in Markdown


def _reported(text: str) -> list[list[dict[str, Any]]]:
    return [
        [call("event_stream", "process_batch", topic="payments", partition=0)],
        [call("event_stream", "write_file", path="handover/handover.md", content=text)],
    ]


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("## Result\n\nPosition: 23\n", True),
        ("## Result\n\nPosition: 23 (halted at the first duplicate; committed is still 21).\n", True),
        ("## Result\n\nposition: 23 (was 21 before processing)\n", True),
        ("## Result\n\nPosition: 23, committed 23.\n", False),  # committed stayed 21
        ("## Result\n\nposition: 23; committed: 23; log end: 23\n", False),  # and the log ends at 54
        ("## Result\n\nPosition: 22\n", False),
        ("## Result\n\nPosition 23; the sink write succeeded.\n", True),  # process_batch: "sink_write": "ok"
        ("## Results\n\nposition: 23\n", True),  # the asked "## Result", said in the plural
        ("## Result\n\nPosition 23. Processing halted at 21.\n", False),  # it halted at 23
        ("## Result\n\nPosition 23. Processing halted at offset 21.\n", False),
        ("## Result\n\nPosition 23; 5 consumed.\n", False),  # 5 is no number the world gave
        ("## Result\n\nPosition 23; 2 consumed.\n", True),
        ("## Result\n\nPosition 23; consumed 5.\n", False),  # the batch consumed 2
        ("## Result\n\nPosition 23; the sink write failed.\n", False),
        ("## Summary\n\nPosition: 23\n", False),  # not the asked section
    ],
)
def test_a_number_a_report_gives_a_field_is_one_it_held(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    """Helper CA: a report of the partition's position scored 1.0 with a false committed offset
    beside it (23, the asked position, was an allowed word), and 0.75 with the true one said as
    "still 21" or "was 21 before"."""
    assert (score(tasks[REPORT], _reported(text)) == 1.0) is paid


TRAVELER = "itinerary_rebooking-fa0da033c565"  # file the owed claim, then message the traveler
DICTATED = "Your trip has changed; please check the new itinerary in your app."


def _messaged(text: str) -> list[list[dict[str, Any]]]:
    trip = "itinerary_rebooking"
    return [
        [call(trip, "file_compensation_claim", itinerary_id="ITN-4002", event_id="EVT-006")],
        [call(trip, "notify_traveler", itinerary_id="ITN-4002", channel="email", message=text)],
    ]


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        (DICTATED, True),
        (f"{DICTATED} Best regards, Travel desk", True),
        (f"{DICTATED} Best regards, the travel desk", True),
        (f"Dear Lucas Rossi, {DICTATED} Kind regards, the travel desk", True),
        (f"{DICTATED} Regards, Ravi (traveler services)", True),
        (f"{DICTATED} Sorry for the delay.", True),
        (f"Apologies for the late reply! {DICTATED}", True),
        (f"{DICTATED} Sorry for the cancellation.", False),  # a claim about the trip
        (f"{DICTATED} Best, the refund desk approved", False),
        (f"{DICTATED} Regards, not the travel desk", False),
        (f"{DICTATED} the refund desk", False),  # no sign-off: a claim
        (f"{DICTATED} Sorry for the delay, not changed.", False),
    ],
)
def test_a_team_may_sign_in_lower_case_and_a_courtesy_may_apologize(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    assert (score(tasks[TRAVELER], _messaged(text)) == 1.0) is paid


def test_a_reply_with_an_apology_for_the_delay_says_the_dictated_words(tasks: dict[str, Task]) -> None:
    def replied(body: str) -> list[list[dict[str, Any]]]:
        return [
            [call(MAIL, "draft_reply", message_id="MSG-0007", body=body)],
            [call(MAIL, "write_file", path="reports/summary.json", content='{"new_message": "MSG-0010"}')],
        ]

    task = tasks["mail_triage-82b94720854b"]
    assert score(task, replied("Thanks, I will look into this today.")) == 1.0
    assert score(task, replied("Thanks, I will look into this today. Sorry for the delay.")) == 1.0
    assert score(task, replied("Thanks, I will look into this today. Sorry for the refund.")) < 1.0


FORWARD = "itinerary_rebooking-ce459ff27e6f"  # message a traveler, forward a flagged mail, note both ids


def _noted(note: dict[str, str], *looked: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [
        [call("itinerary_rebooking", "notify_traveler", itinerary_id="ITN-4002", channel="email",
              message=DICTATED)],
        [
            call(MAIL, "read_file", path="shift/escalation.md"),
            *looked,
            call(MAIL, "draft_forward", message_id="MSG-0001",
                 to=["Customer Operations <cs-team@northwind.example>", "Operations <ops@northwind.example>"],
                 body="Adding you so you can follow this thread. (Traveler message: MSG-0501)"),
        ],
        [call(MAIL, "write_file", path="notes/status.json", content=json.dumps(note))],
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "paid"),
    [
        ({}, True),
        ({"forwarded_message": "MSG-0001"}, True),
        ({"forwarded_message_id": "MSG-0001"}, True),
        ({"forwarded_message": "MSG-0002"}, False),  # only read, never forwarded
        ({"replied_message": "MSG-0001"}, False),  # forwarded, not replied to
        ({"message": "MSG-0002"}, False),  # another id of the asked kind: a second answer
        ({"itinerary_id": "ITN-4001"}, False),
    ],
)
def test_a_key_naming_an_act_may_hold_the_record_the_run_did_it_to(
    tasks: dict[str, Task], extra: dict[str, str], paid: bool
) -> None:
    note = {"new_message_to_the_traveler": "MSG-0501", "new_message": "MSG-0010", **extra}
    read = call(MAIL, "read_message", message_id="MSG-0002")
    assert (score(tasks[FORWARD], _noted(note, read)) == 1.0) is paid
