"""The twenty-first round's findings on their real tasks (``tests/fixtures/audit_tasks_round21.jsonl``,
a default run at ``83dc15b``, seed 21):

* helpers YD and YC, itinerary_rebooking-d04ee8d37d5c: filing the asked claim and nothing else
  scored 0.5. Every call moves the clock, and a notification about another trip appears a few
  calls in; a run of fewer calls than the reference ended before the world made it, and the guard
  "as the world made it" counted its absence as harm. Absent now passes (``unmade``); a record the
  world made and the agent changed still fails.
* helper YD, itinerary_rebooking-21c7e9cbbf2b: "Thanks Noah, this is confirmed." scored 0.5 where
  "Hi Noah, thanks, this is confirmed." scored 1.0: the addressee called by name inside the
  dictated words, set off by a comma, is a courtesy (``runtime._without_vocatives``).
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.validation import mutations
from envcraft.tasks.verifier import runtime

from .test_created_records import audit_tasks, call, score
from .test_reward_semantics import reference_with

CLAIM = "itinerary_rebooking-d04ee8d37d5c"
ENV = "itinerary_rebooking"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round21.jsonl")


def _claim() -> dict[str, object]:
    return call(ENV, "file_compensation_claim", itinerary_id="ITN-4006", event_id="EVT-006")


@pytest.mark.parametrize(
    "calls",
    [
        [_claim()],  # the asked claim alone: the world's later notice never came
        [call(ENV, "list_notifications"), _claim()],
        [call(ENV, "list_notifications", itinerary_id="ITN-4006"), _claim()],
        [_claim(), call(ENV, "get_itinerary", itinerary_id="ITN-4006"), call(ENV, "list_notifications")],
    ],
)
def test_a_run_that_ends_before_the_world_makes_a_record_is_not_harmed(
    tasks: dict[str, Task], calls: list[dict[str, object]]
) -> None:
    assert score(tasks[CLAIM], [calls]) == 1.0


def test_a_record_the_world_made_and_the_agent_changed_or_removed_still_fails(tasks: dict[str, Task]) -> None:
    task = tasks[CLAIM]
    guard = next(c for c in task.verifier.checks if c["name"].endswith("NTF-0003 as the world made it"))
    assert guard["unmade"] is True
    made = {"notification_id": "NTF-0003", "kind": "cancellation", "acknowledged_at": None}
    check = {**guard, "expected": made}
    assert runtime._state_check("matches", check, runtime.MISSING, runtime.MISSING) == 1.0  # not made yet
    assert runtime._state_check("matches", check, made, runtime.MISSING) == 1.0
    acknowledged = {**made, "acknowledged_at": "2026-03-13T06:00:00Z"}
    assert runtime._state_check("matches", check, acknowledged, runtime.MISSING) == 0.0
    assert runtime._state_check("matches", check, runtime.MISSING, made) == 0.0  # made, then gone
    assert (
        runtime._state_check("matches", {**check, "unmade": False}, runtime.MISSING, runtime.MISSING) == 0.0
    )


@pytest.mark.parametrize(
    ("text", "paid"),
    [
        ("Thanks Noah, this is confirmed.", True),  # the addressee, inside the words
        ("Thanks, Noah, this is confirmed.", True),
        ("Thanks Liam, this is confirmed.", False),  # someone else
        ("Thanks Noah, this is not confirmed.", False),
        ("Thanks Noah this is confirmed, sort of.", False),
    ],
)
def test_the_addressee_may_be_called_by_name_inside_the_dictated_words(
    tasks: dict[str, Task], text: str, paid: bool
) -> None:
    task = tasks["itinerary_rebooking-21c7e9cbbf2b"]
    assert (score(task, reference_with(task, "notify_traveler", message=text)) == 1.0) is paid


def test_validation_does_not_ask_a_run_to_keep_a_record_the_world_may_not_have_made_yet(
    tasks: dict[str, Task],
) -> None:
    """Dropping a world-made record is no mutation the verifier must catch (a shorter right run
    ends without it: the guard lets it be absent); altering it still is. Without this the default
    run refused 97 more candidates in validation (101 against 4), itinerary tasks most."""
    guard = next(
        c for c in tasks[CLAIM].verifier.checks if c["name"].endswith("NTF-0003 as the world made it")
    )
    path = guard["path"]
    assert not mutations._covers(guard, ENV, path, new=True)  # drop the record
    assert mutations._covers(guard, ENV, path + "/acknowledged_at", new=True)  # alter it
    assert mutations._covers({**guard, "unmade": False}, ENV, path, new=True)
