"""What an agent fetches once the work is done is the world's doing (the sixty-seventh blind
audit, R4: 0.056; the real task in ``tests/fixtures/audit_tasks_round67.jsonl``, stored without its
verifier).

An agent that sends and then runs send/receive (``sync_mailbox``, which the README offers) brings
in the out-of-office reply the world had already decided: a goal on the reply "on its way", a count
of new messages and the files guard all held that against it. A tool marked ``fetches`` only brings
in what the world decided, so the tail runs call it after the work, and what it delivers there is
the world's: a new record like it is no unasked one (``only_asked``'s ``arrivals``).

A fetch within the work, in the turn that sent (R4's own run: 0.25 after the first fix), brought the
same reply in earlier: the turn's count of new messages, its only-asked guard and the files guard
(the reply's ``mail/inbox/MSG-0011.eml``, where the tail runs' reply had another id) held it against
the run. Each turn's guards now know the arrivals too, the counts leave them out, and a file of an
arrival is named by its id whenever it came.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import reference_turns

from .test_created_records import audit_tasks, call, score

MAIL = "mail_triage-0001541f78c9"  # reply all to Sofia (out of office), then draft a reply to it
SYNC = call("mail_triage", "sync_mailbox")


@pytest.fixture(scope="module")
def round67() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round67.jsonl")


def test_mail_fetched_after_the_work_is_the_worlds(round67: dict[str, Task]) -> None:
    task = round67[MAIL]
    turns = reference_turns(task)
    assert score(task, turns) == 1.0
    assert score(task, [*turns[:-1], [*turns[-1], SYNC]]) == 1.0


def test_mail_fetched_in_the_turn_that_sent_is_the_worlds(round67: dict[str, Task]) -> None:
    task = round67[MAIL]
    turns = reference_turns(task)
    assert score(task, [[*turns[0], SYNC], *turns[1:]]) == 1.0
    assert score(task, [[*turns[0], SYNC], *turns[1:-1], [*turns[-1], SYNC]]) == 1.0


def test_a_fetched_reply_the_agent_read_is_still_the_worlds(round67: dict[str, Task]) -> None:
    """Reading the reply marks it "seen", which no arrival in the tail runs is (round 70, R3: 0.5)."""
    task = round67[MAIL]
    turns = reference_turns(task)
    read = call("mail_triage", "read_message", message_id="MSG-0011")
    assert score(task, [[*turns[0], SYNC, read], *turns[1:]]) == 1.0
    assert (
        score(
            task,
            [*turns[:-1], [*turns[-1], SYNC, call("mail_triage", "read_message", message_id="MSG-0012")]],
        )
        == 1.0
    )


def test_an_unasked_message_beside_the_fetched_reply_still_fails(round67: dict[str, Task]) -> None:
    task = round67[MAIL]
    turns = reference_turns(task)
    extra = call(
        "mail_triage", "compose_draft", to=["tom.becker@northwind.example"], subject="hi", body="Ping"
    )
    assert score(task, [*turns[:-1], [*turns[-1], extra, SYNC]]) < 1.0
    assert score(task, [*turns[:-1], [*turns[-1], SYNC, extra]]) < 1.0
    assert score(task, [[*turns[0], SYNC, extra], *turns[1:]]) < 1.0


def test_the_arrival_is_a_pattern_of_what_the_world_delivers(round67: dict[str, Task]) -> None:
    [guard] = [
        c
        for c in round67[MAIL].verifier.checks
        if c["name"] == "every new message of mail_triage is one asked for"
    ]
    [arrival] = guard["arrivals"]
    assert arrival["$fields"]["status"] == "received"
    assert arrival["$fields"]["subject"].startswith("Automatic reply:")
    assert "message_id" not in arrival["$fields"] and "date" not in arrival["$fields"]
