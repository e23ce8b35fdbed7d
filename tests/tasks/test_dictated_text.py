"""A message the user dictates is read by its words within reason (issue 20 item 3): the same
words up to case, quotes, dashes, final punctuation and a greeting or a sign-off earn the reward;
the words negated, retracted or said about someone else do not; names and titles read the same
way; a composed text is read by the values it must carry; an address is the same address with or
without its display name. Cases are unit ones and the reference runs of real tasks, altered."""

from __future__ import annotations

import json
import logging
from functools import cache
from typing import Any

from envcraft.tasks.corpus import compose as synth
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute_reference, reference_turns
from envcraft.tasks.validation.adversarial import Adversary, cosmetic, dictated, negated
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import as_block, frame
from envcraft.tasks.verifier.scoring import build_context, score_contexts, score_trajectory


def test_says_finds_the_words_as_a_phrase() -> None:
    said = {"$says": "Thanks, this is confirmed."}
    assert vr.matches("Hi Lucas,\n\nthanks,  this is CONFIRMED!\n\nBest, Rosa", said)
    assert vr.matches("“Thanks, this is confirmed.”", said)
    assert vr.matches("could you share an update", {"$says": "Could you share an update?"})
    assert vr.matches("Could you share an update.", {"$text": "Could you share an update?"})
    assert not vr.matches("Thanks, this is not confirmed.", said)
    assert not vr.matches("Thanks, this is confirmedly late.", said)
    assert not vr.matches("", said) and not vr.matches(7, said)
    assert not vr.matches("anything", {"$says": ""})


LATE = {"$says": "Running a few minutes late."}


def test_the_same_words_within_reason_are_said() -> None:
    for text in (
        "running a few minutes late",  # case, no final period
        "“Running a few minutes late.”",  # curly quotes
        "Hi Ana,\n\nRunning a few minutes late!\n\nBest regards,\nRosa Lopez",  # greeting, sign-off
        "Ana, running a few minutes late. Thank you, have a nice day!",
        "Running a few minutes late.\n\nDaniel Kim",  # a signature line
    ):
        assert vr.matches(text, LATE), text
    note = {"$says": "Handled per the customer's phone call."}
    assert vr.matches("Handled per the customer’s phone call", note)  # curly apostrophe
    careful = {"$text": "This is confidential: please do not share it - ever."}
    assert vr.matches("This is confidential: please don't share it — ever", careful)  # contraction, dash


def test_an_article_left_out_or_the_envs_own_token_says_the_same_words() -> None:
    """A reason "superseded by newer request" for the dictated "superseded by a newer request"
    (0.5 in the round-6 audit), or the env's enum token "no_longer_needed" for "no longer needed"
    (0.75): the same words. A token is the whole text; inside a sentence it is an id."""
    newer = {"$text": "superseded by a newer request"}
    assert vr.matches("Superseded by newer request", newer)
    assert vr.matches("superseded by the newer request.", newer)
    assert not vr.matches("not superseded by a newer request", newer)
    assert not vr.matches("superseded by an older request", newer)
    needed = {"$text": "no longer needed"}
    assert vr.matches("no_longer_needed", needed)
    assert not vr.matches("still_needed", needed)
    assert not vr.matches("no_longer_needed, ignore", needed)


def test_negated_retracted_or_redirected_words_are_not_said() -> None:
    for text in (
        "Not running a few minutes late.",
        "Running a few minutes late. Correction: I am NOT the contact, please ignore",
        "Running a few minutes late. Scratch that.",
        "Running a few minutes late. Not true.",
        "Your flight is running a few minutes late",  # changes who
        "I am running a few minutes late, you are not",
        "Running a few minutes late. Delayed.",  # a capital letter is no name
    ):
        assert not vr.matches(text, LATE), text
    careful = {"$says": "Please do not share it outside the company."}
    assert not vr.matches("Please do share it outside the company.", careful)  # the "not" taken out
    assert not vr.matches("Please do not share it outside the company. Actually, do.", careful)


def test_composed_text_carries_its_values_and_does_not_take_the_words_back() -> None:
    mention = {"$composed": {"says": "Please double-check before closing.", "carries": ["MSG-0001"]}}
    assert vr.matches("Message MSG-0001: Please double-check before closing.", mention)
    assert vr.matches("please double-check before closing (re msg-0001)", mention)
    assert not vr.matches("Please double-check before closing.", mention)  # the value left out
    assert not vr.matches("Message MSG-00012: Please double-check before closing.", mention)
    assert not vr.matches("MSG-0001: Please double-check before closing. Ignore this.", mention)
    assert not vr.matches("MSG-0001: Please do not double-check before closing.", mention)


def test_a_short_attribution_may_follow_dictated_words_and_a_title_takes_nothing_else() -> None:
    reason = {"$text": {"text": "plans changed", "names": [], "attributed": True}}
    assert vr.matches("plans changed (per Ximena)", reason)
    assert vr.matches("Plans changed - Ximena", reason)
    assert vr.matches("plans changed, according to the owner", reason)
    assert not vr.matches("plans changed (by mistake)", reason)  # taken back
    assert not vr.matches("plans changed (not really)", reason)
    assert not vr.matches("plans changed. Delayed.", reason)  # a sentence, not a name
    assert not vr.matches("plans changed, per the customer request last week", reason)  # too long
    assert not vr.matches("plans changed (by Friday)", reason)  # a deadline, not who said it
    title = {"$text": {"text": "Fix the contrast issues on the settings page", "names": ["hana"]}}
    assert vr.matches("Fix the contrast issues on the settings page (per Paula)", title)
    assert vr.matches("fix the contrast issues on the settings page - Paula", title)
    # notes_desk-f26dcb153b11 (audit): "with Hana" names the look-alike item's owner; a greeting
    # and a sign-off were read around a title as around a message
    assert not vr.matches("Fix the contrast issues on the settings page with Hana", title)
    assert not vr.matches("Hi, fix the contrast issues on the settings page. Thanks!", title)
    assert not vr.matches("Fix the contrast issues on the settings page by Friday", title)
    asked = {"$says": "Could you share an update?"}  # itinerary_rebooking-d68e26263ac2 (audit)
    assert vr.matches("Could you please share an update?", asked)
    assert not vr.matches("Could you not share an update?", asked)
    assert vr.matches("Running a few minutes late (per Ana)", {"$says": "Running a few minutes late."})
    late = {"$says": {"text": "Running a few minutes late.", "names": ["mila"]}}
    assert vr.matches("Hello Mila,\n\nRunning a few minutes late.\n\nBest regards,\nTravel desk", late)
    assert not vr.matches("Hello Mila,\n\nRunning a few minutes late.\n\nNot the travel desk", late)


def test_a_composed_title_may_end_by_naming_the_record_it_carries() -> None:
    """From sheet_analytics-50174358a7ce (audit): "Lower the queue backlog alert threshold for
    DS-009" was read as the dictated words not standing as a clause; "; DS-009 validated" passed
    because the dataset's field name "validated" was context (the dataset is not validated)."""
    spec = {
        "says": "Lower the queue backlog alert threshold",
        "carries": ["DS-009"],
        "framing": ["dataset"],
        "context": ["dataset", "datasets", "ds-009", "sales"],
    }
    title = {"$composed": spec}
    assert vr.matches("Lower the queue backlog alert threshold for DS-009", title)
    assert vr.matches("Lower the queue backlog alert threshold on dataset DS-009", title)
    assert not vr.matches("Lower the queue backlog alert threshold; DS-009 validated", title)
    assert not vr.matches("Lower the queue backlog alert threshold for DS-009 never", title)


def test_a_dictated_note_may_carry_a_short_aside_naming_its_record() -> None:
    """From event_stream-75ce3810ad0e (audit): the to-do "Priority for this week." for a
    flagged invoice message, written "Priority for this week. (Cascade Freight invoice)" or
    "Invoice INV-4765: Priority for this week.", scored 0.714. An aside in the words of the
    record the call is about is the note; one with a word of its own, a negation or another
    person is not."""
    names = ["cascade", "freight", "inv", "invoice", "msg", "received", "alex", "for", "the"]
    todo = {"$says": {"text": "Priority for this week.", "names": names, "others": ["daniel"]}}
    assert vr.matches("Priority for this week. (Cascade Freight invoice)", todo)
    assert vr.matches("Invoice INV-4765: Priority for this week.", todo)
    assert vr.matches("Priority for this week - MSG-0005", todo)
    assert not vr.matches("Priority for this week: pay the Cascade Freight invoice", todo)
    assert not vr.matches("Priority for this week. Not the Cascade invoice", todo)
    assert not vr.matches("Priority for this week. (Daniel invoice)", todo)
    assert not vr.matches("Priority for this week. Invoice received, please archive.", todo)
    assert not vr.matches("Priority for this week. For the invoice.", todo)
    assert not vr.matches(
        "Priority for this week (invoice)", {"$text": {"text": "Priority for this week", "names": names}}
    )


def test_an_aside_may_say_the_records_kind_fields_and_numbers_but_no_other_record() -> None:
    """From the second audit (right runs below 1.0): "(load_warehouse on RUN-7385)", "(offset
    22)", "(Power Spin, Jan 5 07:00)", "Reason: duplicate request" and "on your trip UFE6UR"
    around a dictated reason or note. ``aside`` (synthesized from the call's records: their
    kinds, field names, the digits of their values, the parameter's name) lets an aside say
    them; a number of another record, a claim or a retraction stays content."""
    names = ["load", "warehouse", "run", "power", "spin", "itn", "ufe", "ur"]
    aside = ["7385", "22", "5", "07", "00", "6", "4001", "offset", "trip", "class", "reason"]
    reason = {"$text": {"text": "duplicate request", "names": names, "attributed": True, "aside": aside}}
    assert vr.matches("duplicate request (load_warehouse on RUN-7385)", reason)
    assert vr.matches("duplicate request (offset 22)", reason)
    assert vr.matches("duplicate request (Power Spin, Jan 5 07:00)", reason)
    assert vr.matches("Reason: duplicate request", reason)
    assert vr.matches("duplicate request on your trip UFE6UR", reason)
    assert vr.matches("duplicate request, ITN-4001", reason)
    assert not vr.matches("duplicate request (re ITN-4002)", reason)
    assert not vr.matches("duplicate request (offset 23)", reason)
    assert not vr.matches("duplicate request on the refunded trip", reason)
    assert not vr.matches("duplicate request (power spin, not really)", reason)
    assert not vr.matches("duplicate request. On your trip UFE6UR I was wrong", reason)


def test_a_label_without_a_colon_names_the_act_or_its_record_never_another_field() -> None:
    """From the seventh audit: "Cancellation requested by the owner" for the reason "requested by
    the owner" of a ``cancel_order`` scored 0.75, while "driver created by mistake" for the reason
    "created by mistake" of a ``cancel_trip`` scored 1.0: the label was any of the call's records'
    kinds and field names. ``label`` (synthesized: the kind of the record the call names and the
    words of its act) labels the words; another record's kind or a field says who or what the
    reason is about. "Duplicate request per Viktor" scored 0.5: "per" needs no comma."""
    aside = ["driver", "rider", "trip", "request", "status", "reason", "cancel", "40472"]
    label = ["cancel", "trip", "reason"]
    spec = {"text": "created by mistake", "names": [], "attributed": True, "aside": aside, "label": label}
    reason = {"$text": spec}
    assert vr.matches("Cancellation: created by mistake", reason)
    assert vr.matches("Cancellation created by mistake", reason)
    assert vr.matches("Trip created by mistake", reason)
    assert vr.matches("Cancelled trip created by mistake", reason)
    assert not vr.matches("driver created by mistake", reason)
    assert not vr.matches("Status created by mistake", reason)
    assert not vr.matches("Cancellation not created by mistake", reason)
    before = {"$text": {k: v for k, v in reason["$text"].items() if k != "label"}}
    assert vr.matches("driver created by mistake", before)  # a verifier from before: as it was
    per = {"$text": {"text": "duplicate request", "names": [], "attributed": True}}
    assert vr.matches("Duplicate request per Viktor", per)
    assert not vr.matches("Duplicate request by Viktor", per)  # "by" may be who did it: set apart
    assert not vr.matches("Duplicate request per Viktor, not really", per)


def test_a_composed_mention_may_point_at_its_record_as_a_person_would() -> None:
    """From the second audit: "(Our message to the traveler: MSG-0001)", "See also the traveler
    message MSG-0001." and "See the recipe we created, RCP-03." carry the id and point at it."""
    spec = {"says": "", "carries": ["MSG-0001"], "framing": [], "context": ["traveler", "recipe"]}
    mention = {"$composed": spec}
    assert vr.matches("(Our message to the traveler: MSG-0001)", mention)
    assert vr.matches("See also the traveler message MSG-0001.", mention)
    assert vr.matches("See the recipe we created, MSG-0001.", mention)
    assert not vr.matches("See the recipe we approved, MSG-0001.", mention)
    assert vr.matches("This concerns the traveler message MSG-0001.", mention)  # seventh audit
    assert not vr.matches("This concerns the traveler message MSG-0001, now resolved.", mention)


def test_a_fault_names_the_words_that_broke_the_reading() -> None:
    mention = {"$composed": {"says": "Priority for this week.", "carries": ["MSG-0001"], "framing": []}}
    assert vr.text_fault("Priority for this week. MSG-0001 approved", mention) == (
        "words that are no framing: 'approved'"
    )
    assert vr.text_fault("Priority for this week.", mention) == "it does not carry MSG-0001"
    late = {"$says": "Running late"}
    assert vr.text_fault("Ignore: running late", late) == "other words around them: 'Ignore'"
    assert vr.text_fault("Running late", late) is None


def test_an_address_is_the_same_with_or_without_its_display_name() -> None:
    named = "CS Team <cs-team@northwind.example>"
    assert vr.matches("cs-team@northwind.example", named)
    assert vr.matches("Customer Ops <CS-Team@Northwind.example>", named)
    assert vr.matches(["cs-team@northwind.example"], [named])
    assert vr.matches(named, "cs-team@northwind.example")
    assert not vr.matches("ops@northwind.example", named)
    assert not vr.matches("MSG-1@mail.example", "Message-ID: <MSG-1@mail.example>")  # no address
    header = {"$framed": ["To: ", {"$addresses": [named, "ops@northwind.example"]}, ""]}
    assert vr.matches("To: Ops <ops@northwind.example>, cs-team@northwind.example", header)
    assert not vr.matches("To: cs-team@northwind.example", header)


def test_a_dictated_block_of_lines_is_the_whole_run_between_the_lines_the_env_writes() -> None:
    expected = ["Subject: Hi", {"$block": {"$says": "Hi Alex,\n\nare you free?\n\nRosa"}}, "> quoted"]
    fine = "Subject: Hi\n\nhi alex,\n\nare you free\n\nRosa\n\n> quoted"
    assert vr.content_matches(fine, "lines", expected)
    retracted = "Subject: Hi\n\nHi Alex,\n\nare you free?\n\nRosa\nCorrection: ignore this\n> quoted"
    assert not vr.content_matches(retracted, "lines", expected)
    assert not vr.content_matches("Subject: Hi\n> quoted", "lines", expected)


def test_a_composed_note_may_run_over_a_few_lines_of_a_file() -> None:
    """The note, a blank line, then the line naming the record: one note as people write it
    (0.833 in the round-6 audit, where the lines check read one line at a time). Lines that are
    no framing between them, or the id left out, still fail."""
    note = {
        "$composed": {"says": "Running a few minutes late.", "carries": ["MSG-0001"], "framing": ["traveler"]}
    }
    expected = ["Subject: Trip", note, "> quoted"]
    for body in (
        "Running a few minutes late.\n\nSee the new message to the traveler: MSG-0001",
        "Running a few minutes late.\n(message MSG-0001)",
        "Running a few minutes late. See MSG-0001.",
    ):
        assert vr.content_matches(f"Subject: Trip\n\n{body}\n\n> quoted", "lines", expected), body
    for body in (
        "Running a few minutes late.\nNot really.\nMSG-0001",
        "Running a few minutes late.\n\nSee the new message to the traveler.",
        "Running a few minutes late.\n\n\n\nSee MSG-0001",  # too far apart to be one note
    ):
        assert not vr.content_matches(f"Subject: Trip\n\n{body}\n\n> quoted", "lines", expected), body


def test_a_reply_quoting_a_dictated_body_reads_the_quote_within_reason_too() -> None:
    """From itinerary_rebooking-e9cabe0bb53e (n10 seed 0): a second reply quotes the first one's
    dictated body with "> "; before, the quote was pinned line by line, so a lower-cased first
    body failed the second draft's file."""
    body = "Hi Alex,\n\nthe cost is final.\n\nThanks,\nOmar"
    checks = as_block(
        [
            "X-Status: draft",
            "On <time>, A wrote:",
            "> Hi Alex,",
            ">",
            "> the cost is final.",
            ">",
            "> Thanks,",
            "> Omar",
            ">",
            "> > older",
        ],
        body,
        {"$says": body},
    )
    assert checks == ["X-Status: draft", "On <time>, A wrote:", {"$block": {"$says": body}}, ">", "> > older"]
    head = ["X-Status: draft", "On <time>, A wrote:"]
    quoted = "\n".join(
        [*head, "> hi alex,", ">", "> the cost is final", ">", "> thanks,", "> Omar", ">", "> > older"]
    )
    assert vr.content_matches(quoted, "lines", checks)
    assert not vr.content_matches(quoted.replace("is final", "is not final"), "lines", checks)


@cache
def _tasks() -> list[Task]:
    logging.getLogger("envcraft").setLevel(logging.CRITICAL)
    library = synth.load_library(["itinerary_rebooking", "returns_desk", "mail_triage"])
    found: list[Task] = []
    for env in ("itinerary_rebooking", "returns_desk", "mail_triage"):
        found += synth.synthesize_shard(library, env, 0, 6, synth.SynthConfig(seed=5)).tasks
    return found


def _with_arg(task: Task, tool: str, arg: str, change: Any) -> list[list[dict[str, Any]]]:
    turns = reference_turns(task)
    for turn in turns:
        for call in turn:
            if call["tool"] == tool:
                call["args"] = {**call["args"], arg: change(call["args"][arg])}
    return turns


def test_a_dictated_message_with_a_greeting_scores_one_and_other_words_do_not() -> None:
    played = 0
    for task in _tasks():
        if not any(c.tool == "notify_traveler" for c in task.reference.calls):
            continue
        assert "$says" in json.dumps(task.verifier.checks)
        greeted = _with_arg(
            task, "notify_traveler", "message", lambda m: f"Hello,\n\n{m}\n\nKind regards, Rosa"
        )
        assert score_trajectory(task, greeted).score == 1.0, task.id
        other = _with_arg(task, "notify_traveler", "message", lambda m: "Your trip is cancelled.")
        assert score_trajectory(task, other).score < 1.0, task.id
        played += 1
    assert played >= 2


def test_a_reason_is_still_the_words_given() -> None:
    """A short text field (a cancellation's reason, a to-do's text) padded with words of the
    agent's own is not the words given."""
    played = 0
    for task in _tasks():
        asked = [(t, a) for t, a in (("cancel_order", "reason"), ("add_todo", "text")) if _calls(task, t)]
        for tool, arg in asked:
            assert score_trajectory(task, reference_turns(task)).score == 1.0
            padded = _with_arg(task, tool, arg, lambda r: f"Customer says: {r}, please hurry")
            assert score_trajectory(task, padded).score < 1.0, task.id
            played += 1
    assert played >= 1


def _calls(task: Task, tool: str) -> bool:
    return any(c.tool == tool for c in task.reference.calls)


def _rewritten(task: Task, change: Any) -> list[list[dict[str, Any]]]:
    turns = reference_turns(task)
    for turn in turns:
        for call in turn:
            for arg in dictated(call):
                call["args"] = {**call["args"], arg: change(arg, call["args"][arg])}
    return turns


def _texts(tasks: list[Task]) -> list[Task]:
    return [t for t in tasks if any(dictated(c.model_dump()) for c in t.reference.calls)]


def test_real_tasks_pay_cosmetic_variants_and_refuse_negated_or_retracted_text() -> None:
    """Before: a to-do or a mail body without its final period, lower-cased or with a curly
    apostrophe scored 0-0.75 (exact text in the env's files), "Not ..." or the words plus a
    correction scored 1.0 (a phrase anywhere)."""
    tasks = _texts(_tasks())
    assert len(tasks) >= 4
    for task in tasks:
        assert score_trajectory(task, _rewritten(task, cosmetic)).score == 1.0, task.id
        assert score_trajectory(task, _rewritten(task, lambda a, t: negated(t))).score < 1.0, task.id
        retracted = _rewritten(task, lambda a, t: f"{t}\n\nCorrection: please ignore this.")
        assert score_trajectory(task, retracted).score < 1.0, task.id


def test_real_mail_tasks_take_a_bare_address_for_a_display_name() -> None:
    """Before: ``cs-team@northwind.example`` for ``Customer Operations <cs-team@...>`` failed the
    draft's record and its ``To:`` line."""
    played = 0
    for task in _tasks():
        named = [c for c in task.reference.calls if "<" in json.dumps(c.args.get("to", ""))]
        if not named:
            continue
        bare = _with_arg(task, named[0].tool, "to", lambda to: [a.split("<")[1].rstrip(">") for a in to])
        assert score_trajectory(task, bare).score == 1.0, task.id
        played += 1
    assert played >= 1


def test_the_text_policies_apply_to_tasks_with_text_and_come_out_as_they_must() -> None:
    kinds = ("negation", "retraction", "cosmetic_text", "bare_address")
    seen: set[str] = set()
    for task in _tasks():
        trials, missing = Adversary(task, resolve_packages(task)).trials(execute_reference(task))
        trials = [t for t in trials if t.kind in kinds]
        if not _texts([task]):
            assert {"negation", "retraction", "cosmetic_text"} <= set(missing), task.id
        scores = score_contexts(task.verifier.source, [build_context(t.outcome) for t in trials])
        for trial, score in zip(trials, scores, strict=True):
            assert trial.passes(score.score), (task.id, trial.kind, score.components)
            seen.add(trial.kind)
    assert seen == set(kinds)


def test_a_dictated_text_in_a_json_line_is_read_as_text_not_as_its_escapes() -> None:
    """From event_stream (n10 seed 5151): a dead-letter note the env writes into a JSONL line;
    a greeting around the dictated words is escaped there (``\\n``), and the line was pinned as
    text around them, so a right note ("Hi,\\n\\nfollow up next week\\n\\nThanks!") failed."""
    line = {"$json": {"dlq_id": "DLQ-0001", "note": {"$says": "Follow up next week."}, "offset": 34}}
    right = json.dumps({"dlq_id": "DLQ-0001", "note": "Hi,\n\nfollow up next week\n\nThanks!", "offset": 34})
    assert vr.content_matches(right + "\n", "lines", [line])
    negated = json.dumps({"dlq_id": "DLQ-0001", "note": "Do not follow up next week.", "offset": 34})
    assert not vr.content_matches(negated, "lines", [line])
    other = json.dumps({"dlq_id": "DLQ-0002", "note": "Follow up next week.", "offset": 34})
    assert not vr.content_matches(other, "lines", [line])
    assert not vr.matches("not json {", line) and not vr.matches(7, line)


def test_a_dictated_text_the_env_renders_twice_is_read_within_reason_both_times() -> None:
    """From mail_triage-0484dd3c44ca (n10 seed 0): the same to-do added twice ("then add the to-do
    the same as before"); todo.md lists it twice and only its first occurrence was read as the
    words, the second pinned as written, so the cosmetic agent's right run failed the file."""
    text = "Handled per the customer's phone call."
    whole = f"# To do\n\n- [ ] TODO-01 {text} (from MSG-0004)\n- [ ] TODO-02 {text}"
    pattern = frame(whole, {text: {"$says": text}})
    assert vr.matches(whole, pattern)
    hurried = "Hi,\n\nhandled per the customer\u2019s phone call\n\nThanks!"
    assert vr.matches(whole.replace(text, hurried), pattern)
    assert not vr.matches(whole.replace(f"TODO-02 {text}", f"TODO-02 Not {text.lower()}"), pattern)
    assert not vr.matches(whole.replace(" (from MSG-0004)", ""), pattern)


def test_every_dictated_text_of_a_file_is_read_within_reason() -> None:
    """From mail_triage-37764b15133c (the default run, seed 0): two to-dos, each dictated;
    todo.md read only the first within reason and pinned the second as written, so the
    cosmetic agent's right run (both in a greeting, lower-cased) failed the file."""
    first, second = "Priority for this week.", "Please double-check before closing."
    whole = f"# To do\n\n- [ ] TODO-01 {first}\n- [ ] TODO-02 {second}"
    pattern = frame(whole, {first: {"$says": first}, second: {"$says": second}})
    hurried = whole.replace(first, "Hi,\n\npriority for this week\n\nThanks!").replace(
        second, "Hi,\n\nplease double-check before closing\n\nThanks!"
    )
    assert vr.matches(hurried, pattern)
    assert not vr.matches(whole.replace(second, "Please do not double-check before closing."), pattern)


def test_a_note_the_env_flattened_to_one_line_is_read_in_the_envs_line() -> None:
    """From mail_triage-c9209531fd7b and sheet_analytics-a162d51933ed (the default run, seed 0):
    infra_recovery writes an ops note as one timeline line, spaces for its line breaks, so the
    cosmetic agent's note in a greeting and a sign-off ended "... before closing Thanks!" with no
    full stop before the sign-off, and the note was not read as a clause of its own."""
    note = {
        "$composed": {"says": "Agreed with the team lead.", "carries": ["MSG-0010"], "framing": ["message"]}
    }
    expected = ["# INC-2041", {"$framed": ["- <time> ", note, ""]}]
    flattened = ["# INC-2041", "- <time> Hi, message msg-0010: agreed with the team lead Thanks!"]
    assert vr.lines_match(flattened, expected)
    assert vr.lines_match(["# INC-2041", "- <time> MSG-0010: Agreed with the team lead."], expected)
    assert not vr.lines_match(["# INC-2041", "- <time> MSG-0010: agreed with the team lead not"], expected)
    assert not vr.lines_match(["# INC-2041", "- <time> MSG-0010: agreed with the team lead mostly"], expected)
    assert not vr.lines_match(
        ["# INC-2041", "- <time> MSG-0010: not agreed with the team lead Thanks!"], expected
    )


def test_an_asked_section_frames_its_values_and_makes_no_claim() -> None:
    """From notes_desk-b9f9f80b9af8 (second audit): "## Result" asked for the id of the new
    action item; "AI-006 (already done and closed by bruno)" scored 1.0 (only the id was read)."""
    framing = ["action", "ai-006", "customers", "farah", "item", "open", "publish", "result", "summary"]
    check = {"expected": {"result": ["AI-006"]}, "framing": framing}

    def fault(content: str) -> str | None:
        return vr.section_fault(content, check)

    assert fault("# Summary\n\n## Result\n- new_action_item: AI-006\n") is None
    assert fault("## Result\nCreated action item AI-006 for Farah (open), 2026-02-13.\n") is None
    assert fault("## Result\nAI-006 (already done and closed by bruno)\n") == (
        "words that are no framing: 'done', 'closed', 'bruno'"
    )
    assert fault("## Result\nAI-006\n\n## Notes\nincident resolved\n") is not None
