"""The text scan finds each mark of generated text on an example, and a fresh default-style
corpus has none of them: user turns read as a person with a goal, not as a template's seams."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.phrasing import lint

ENVCRAFT = str(Path(sys.executable).parent / "envcraft")


def test_a_quoted_sentence_ends_the_users_sentence_once() -> None:
    from envcraft.tasks.phrasing.words import sentence

    said = sentence("message the traveler, saying “Running late.”")
    assert said == "Message the traveler, saying “Running late.”" and lint.doubled_stops(said) == []
    assert sentence("cancel it; the reason is “plans changed”") == "Cancel it; the reason is “plans changed”."
    assert lint.doubled_stops("saying “Running late.”.") == [".”."]


def test_doubled_quotes() -> None:
    assert lint.doubled_quotes("saying ““Running late.””") == ["““", "””"]
    assert lint.doubled_quotes('the note "" is empty') == ['""']
    assert lint.doubled_quotes("saying “Running late.” to “Alex”") == []


def test_doubled_words() -> None:
    assert lint.doubled_words("Start a count in period period 2025-12.") == ["period period"]
    assert lint.doubled_words("Start a cycle count of SKU SKU-13408.") == ["SKU SKU"]
    assert lint.doubled_words("Retry run RUN-7534 of the workflow.") == ["run RUN"]
    assert lint.doubled_words("Open an incident for the auth-service service.") == []
    assert lint.doubled_words("Count SKU-13408 at the Reno warehouse.") == []
    assert lint.doubled_words("Start a count in period accounting period 2026-01.") == [
        "period accounting period"
    ]


def test_persona_prefix() -> None:
    text = "Hi there, I'm Jonas, a compliance officer. Cancel the power-spin class."
    assert lint.persona_prefix(text) == ["I'm Jonas, a compliance officer."]
    assert lint.persona_prefix("I'm covering the front desk today, so cancel the class.") == []


def test_empty_openers() -> None:
    assert lint.empty_openers("Last time this went wrong, so please be careful. Flag it.") == [
        "Last time this went wrong, so please be careful."
    ]
    assert lint.empty_openers("Two members called the front desk this morning.") == []


def test_chain_leftovers() -> None:
    assert lint.chain_leftovers("It concerns Maria Novak. Open a return.") == ["It concerns"]
    assert lint.chain_leftovers("Open a return (it concerns order ORD-1).") == ["it concerns"]
    assert lint.chain_leftovers("This concerns nobody.") == []


def test_dictated_steps() -> None:
    text = "Draft a new message to Alex saying “Hi”. After that send the new message."
    assert lint.dictated_steps(text) == ["After that send the new message"]
    assert lint.dictated_steps("Track a new item for emil. Then mark the new action item as done.") == [
        "Then mark the new action item as done"
    ]
    assert lint.dictated_steps("Write to Alex saying “Hi”, and send it.") == []
    assert lint.dictated_steps("Mark the action item you just created as done.") == []


def test_nested_prefixes() -> None:
    assert lint.nested_prefixes("the to-do “Message MSG-0001: Message MSG-0004: Follow up.”") == [
        "Message MSG-0001: Message MSG-0004:"
    ]
    assert lint.nested_prefixes("the to-do “Message MSG-0001: Follow up.”") == []


def test_repeated_values_across_turns() -> None:
    turns = [
        "Flag the message “Invoice INV-4577 for December” from Cascade Freight Billing.",
        "Forward the message “Invoice INV-4577 for December” to Operations.",
    ]
    assert lint.repeated_values(turns) == [(1, "Invoice INV-4577 for December")]
    booked = "Chris Nguyen for the power-spin class on January 5 at 07:00 in room RM-12"
    assert lint.repeated_values([f"Book {booked}.", f"Then cancel {booked}."]) == [
        (1, "Chris Nguyen for the power-spin class on January 5 at 07:00 in room RM-12.")
    ]
    assert lint.repeated_values([turns[0], "Forward that message to Operations."]) == []
    assert lint.repeated_values(["Say “Running late.” to Ana.", "Say “Running late.” to Bo."]) == []


def test_scan_turns_names_task_turn_and_check() -> None:
    found = lint.scan_turns("t1", ["Hello.", "Fine. I'm Ana, a cook. Cancel it. It concerns Bo."])
    assert [(f.task, f.turn, f.check) for f in found] == [
        ("t1", 1, "chain_leftovers"),
        ("t1", 1, "persona_prefix"),
    ]
    assert lint.counts(found)["persona_prefix"] == 1
    assert set(lint.counts(found)) == {*lint.TURN_CHECKS, *lint.FIRST_TURN_CHECKS, "repeated_values"}


def test_a_time_of_day_and_a_reply_opening_the_conversation() -> None:
    """ "Good afternoon." when the world's clock says 06:30, and a first message opening "Right."
    as if answering (round 10's blind auditors read both as a template)."""
    assert lint.clock_claims("Good afternoon. Cancel the class.") == ["Good afternoon"]
    assert lint.clock_claims("Morning! We're cleaning up after this morning's alerts.") == [
        "Morning!",
        "this morning",
    ]
    assert lint.clock_claims("Cancel the 07:00 class on the morning of January 12.") == []
    found = lint.scan_turns("t", ["Right. Start the trip.", "Okay. Now complete it."])
    assert [(f.turn, f.check, f.text) for f in found] == [(0, "reply_openers", "Right.")]


@pytest.mark.slow
def test_a_default_style_corpus_has_no_artifacts(tmp_path: Path) -> None:
    done = subprocess.run(
        [ENVCRAFT, "tasks", "synth", "--envs", "all", "--n", "5", "--seed", "0", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    tasks = read_tasks(tmp_path)
    assert len(tasks) >= 40
    findings = lint.scan(tasks)
    assert findings == [], "\n".join(f"{f.task} turn {f.turn} {f.check}: {f.text}" for f in findings[:30])


def test_a_mention_that_says_its_own_noun_is_not_led_by_it_again() -> None:
    """A goal phrase "in period {period}" with a period named "accounting period 2026-01" said
    the noun twice (17 times in the default corpus at 4e77427); the phrase's word goes."""
    from envcraft.tasks.phrasing.intents import _single_words

    said = _single_words("start a count in period accounting period 2026-01", ["accounting period 2026-01"])
    assert said == "start a count in accounting period 2026-01" and lint.doubled_words(said) == []
    assert _single_words("start a count in period 2026-01", ["2026-01"]) == "start a count in period 2026-01"
    assert _single_words("a count in period that accounting period", ["that accounting period"]) == (
        "a count in that accounting period"
    )
    named = "the message “Q4 freight cost for the board deck” from Marta"  # its words are its own
    assert _single_words(f"add a to-do for {named}", [named]) == f"add a to-do for {named}"
