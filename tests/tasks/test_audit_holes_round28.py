"""The twenty-eighth round's findings on their real tasks (``tests/fixtures/audit_tasks_round28.jsonl``,
a default run at ``49627dc``, seed 28, the first with declared jobs, stored without verifiers):

* helper FA, infra_recovery-ec542aeed08c: the dictated note added to the incident's record under
  "## Resolution" or "## Root cause" instead of its timeline scored 1.0: a file's asked line was
  checked for being there, in time order, not for its section.
* helper FB, event_stream-98b88ff49264: a report giving the partition's old position as its
  current one ("Current position: 7" beside "Position: 12", "Processed: 7") scored 1.0: a number
  the field held before the run was as good as the one it holds.
* helper FC, infra_recovery-36553eb05083: running the asked health check twice (both healthy)
  scored 0.8: the new incident's record was pinned to the reference's ten lines, and a health
  check, a log record an agent may add to without harm, writes its line again.
* helper FC, rideshare_dispatch-21b43351c4da: a proposal that lapsed while the agent read (eight
  lookups), proposed again as it was and confirmed, scored 0.3: a lapsed record counted as no
  live record only where a later call on it had been refused; an agent that saw the lapse by
  looking never made that call.
* helper FA, job_scheduler-f858c585f1eb: the dictated reason "replaced by the new pipeline" opened
  by the cancelled job's own name ("archive_reports replaced by the new pipeline") scored 0.5: a
  reason could open with the person it is about, not with the record the call names.
"""

from __future__ import annotations

from typing import Any

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score

NOTE = "infra_recovery-ec542aeed08c"  # add a dictated note to an open incident's timeline
POSITION = "event_stream-98b88ff49264"  # process a batch, then report the partition's position
CHECKED = "infra_recovery-36553eb05083"  # open an incident and get a health check on its record
DISPATCH = "rideshare_dispatch-21b43351c4da"  # propose a driver for a request, then confirm the trip
CANCEL = "job_scheduler-f858c585f1eb"  # cancel a job of a run with a dictated reason
RECORD = "ops/incident-INC-2041.md"
LINE = "- 2026-02-17T02:10:00Z Support reports customers seeing checkout errors."


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round28.jsonl")


@pytest.mark.parametrize(
    ("old", "new", "paid"),
    [
        ("error rate alert\n", f"error rate alert\n{LINE}\n", True),  # the timeline's end
        ("## Root cause\nTBD", f"## Root cause\nTBD\n{LINE}", False),
        ("## Resolution\nTBD", f"## Resolution\n{LINE}\nTBD", False),
        ("## Resolution\nTBD\n", f"## Resolution\nTBD\n{LINE}\n", False),  # the file's end
    ],
)
def test_an_asked_line_is_in_the_section_it_was_asked_for(
    tasks: dict[str, Task], old: str, new: str, paid: bool
) -> None:
    edited = [[call("infra_recovery", "edit_file", path=RECORD, old=old, new=new)]]
    assert (score(tasks[NOTE], edited) == 1.0) is paid


def test_the_desks_own_tool_puts_the_note_on_the_timeline(tasks: dict[str, Task]) -> None:
    noted = [[call("infra_recovery", "append_ops_note", incident_id="INC-2041", note=LINE.split("Z ", 1)[1])]]
    assert score(tasks[NOTE], noted) == 1.0


def _reported(text: str) -> list[list[dict[str, Any]]]:
    return [
        [call("event_stream", "process_batch", topic="refunds", partition=0, max_records=5)],
        [call("event_stream", "write_file", path="reports/summary.md", content=text)],
    ]


@pytest.mark.parametrize(
    ("report", "paid"),
    [
        ("## Result\n\nPosition: 12\n", True),
        ("## Result\n\nPosition: from 7 to 12\n", True),  # what it was, said as such
        ("## Result\n\nPosition: 12 (was 7)\n", True),
        ("## Result\n\nPosition: 7 -> 12\n", True),
        ("# Summary\n\nCurrent position: 7\n\n## Result\n\nPosition: 12\n", False),
        ("## Result\n\nPosition: 12\nProcessed: 7\n", False),
        ("## Result\n\nPosition: 7\n\nPosition: 12\n", False),
    ],
)
def test_a_number_the_field_held_before_is_no_number_it_holds(
    tasks: dict[str, Task], report: str, paid: bool
) -> None:
    assert (score(tasks[POSITION], _reported(report)) == 1.0) is paid


def _opened(*more: dict[str, Any]) -> list[list[dict[str, Any]]]:
    title = "Slow responses reported by support"
    return [
        [
            call("infra_recovery", "read_file", path="handover/shift-notes.md"),
            call("infra_recovery", "open_incident", service_id="auth-service", severity="sev1", title=title),
            call("infra_recovery", "run_health_check", service_id="auth-service"),
            *more,
        ],
        [
            call(
                "infra_recovery",
                "write_file",
                path="reports/result.json",
                content='{"new_incident": "INC-2042"}\n',
            )
        ],
    ]


def test_a_second_health_check_on_the_record_is_harmless_and_an_unasked_note_is_not(
    tasks: dict[str, Task],
) -> None:
    assert score(tasks[CHECKED], _opened()) == 1.0
    assert (
        score(tasks[CHECKED], _opened(call("infra_recovery", "run_health_check", service_id="auth-service")))
        == 1.0
    )
    noted = call("infra_recovery", "append_ops_note", incident_id="INC-2042", note="Paged the on-call.")
    assert score(tasks[CHECKED], _opened(noted)) < 1.0


def _dispatched(reads: int, *again: dict[str, Any], trip: str = "TRP-40452") -> list[list[dict[str, Any]]]:
    propose = call("rideshare_dispatch", "propose_match", request_id="REQ-6632", driver_id="DRV-550")
    looks = [call("rideshare_dispatch", "get_request", request_id="REQ-6632")] * reads
    return [[propose, *looks, *again, call("rideshare_dispatch", "confirm_match", trip_id=trip)]]


def test_a_proposal_that_lapsed_while_the_agent_looked_and_was_made_again_is_the_asked_one(
    tasks: dict[str, Task],
) -> None:
    propose = call("rideshare_dispatch", "propose_match", request_id="REQ-6632", driver_id="DRV-550")
    assert score(tasks[DISPATCH], _dispatched(0)) == 1.0
    assert score(tasks[DISPATCH], _dispatched(8, propose, trip="TRP-40453")) == 1.0
    other = call("rideshare_dispatch", "propose_match", request_id="REQ-6632", driver_id="DRV-553")
    assert score(tasks[DISPATCH], _dispatched(8, other, trip="TRP-40453")) < 1.0  # another driver


@pytest.mark.parametrize(
    ("reason", "paid"),
    [
        ("replaced by the new pipeline", True),
        ("archive_reports replaced by the new pipeline", True),  # the record the call names
        ("RUN-7746 replaced by the new pipeline", True),
        ("send_invoices replaced by the new pipeline", False),  # another job of the run
        ("archive_reports not replaced by the new pipeline", False),
    ],
)
def test_a_reason_may_open_with_the_record_it_tells_of(
    tasks: dict[str, Task], reason: str, paid: bool
) -> None:
    cancelled = [
        [call("job_scheduler", "cancel_job", run_id="RUN-7746", job="archive_reports", reason=reason)]
    ]
    assert (score(tasks[CANCEL], cancelled) == 1.0) is paid


def test_a_lookup_asked_twice_about_a_record_the_world_moved_voids_nothing(tasks: dict[str, Task]) -> None:
    """The lapse rule reads the call that made a record: a lookup answering its id (get_request's
    ``trip_id``) asked again, while the world moved the trip off what the lookup said, is no
    proposal made again (the adversaries' repeated reads dropped right tasks of the default run)."""
    look = call("rideshare_dispatch", "get_request", request_id="REQ-6632")
    done = _dispatched(0)
    assert score(tasks[DISPATCH], [[*done[0], look, look]]) == 1.0
    assert (
        score(tasks[DISPATCH], [[*done[0], look, *[call("rideshare_dispatch", "list_trips")] * 6, look]])
        == 1.0
    )
