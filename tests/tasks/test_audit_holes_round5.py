"""The fifth blind audit's holes (a deeper corpus, ``tasks synth --min-calls 5``), on its real
tasks (``tests/fixtures/audit_tasks_round5.jsonl``), each verifier synthesized again by this
checkout. Every case scored as the comment says on the audited code (``4e77427``):

* a flag the user asked for on the message the run itself made was never checked (1.0 without it);
* a reply edited after drafting lost its quote, which its file check expects (0.889);
"""

from __future__ import annotations

import copy

import pytest

from envcraft.tasks.format.model import Task

from .test_created_records import audit_tasks, call, score
from .test_reward_semantics import Turns, reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round5.jsonl")


def without(turns: Turns, tool: str, **args: str) -> Turns:
    """``turns`` less the calls of ``tool`` with ``args``."""
    return [
        [c for c in calls if not (c["tool"] == tool and all(c["args"].get(k) == v for k, v in args.items()))]
        for calls in copy.deepcopy(turns)
    ]


def test_a_flag_on_the_message_the_run_made_is_checked(tasks: dict[str, Task]) -> None:
    """itinerary_rebooking-64827ac3039e, turn 3: "flag the message you created" (the forward sent
    in turn 2). Leaving the flag out, or flagging the original again, scored 1.0: a new record's
    flags are the tool's doing (free), so no check read them, even where a later asked call set them."""
    task = tasks["itinerary_rebooking-64827ac3039e"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    unflagged = without(turns, "flag_message", message_id="MSG-0010")
    assert score(task, unflagged) < 1.0
    again = copy.deepcopy(unflagged)
    again[2].insert(0, call("mail_triage", "flag_message", message_id="MSG-0008"))
    assert score(task, again) < 1.0


def test_a_reply_edited_after_drafting_keeps_its_quote(tasks: dict[str, Task]) -> None:
    """infra_recovery-ddd3f0c6479c: the reply drafted, then ``edit_draft(body=...)`` to put the
    host's id in front (0.889: the new body replaced the quote too, which the draft's file
    check expects; the user never asked to drop it)."""
    task = tasks["infra_recovery-ddd3f0c6479c"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    t, n = next(
        (t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == "draft_reply"
    )
    body = turns[t][n]["args"]["body"]
    host = next(c["args"]["host_id"] for c in turns[t] if c["tool"] == "drain_host")
    edited = copy.deepcopy(turns)
    assert body.startswith(f"Host {host}: ")
    edited[t][n]["args"]["body"] = body.removeprefix(f"Host {host}: ")  # drafted without the id
    edited[t].insert(
        n + 1,
        call(
            "mail_triage",
            "edit_draft",
            draft_id="MSG-0010",
            body=f"Re host {host}.\n\n{edited[t][n]['args']['body']}",
        ),
    )
    assert score(task, edited) == 1.0
