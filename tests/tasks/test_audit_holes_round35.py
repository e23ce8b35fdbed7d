"""Classes found by the thirty-fifth blind audit, the first played on a deeper corpus (a run at
``0f0b2af``, seed 35, ``--depth 5``; the real tasks in ``tests/fixtures/audit_tasks_round35.jsonl``,
stored without verifiers), each on its real task:

* A log in a file the environment renders holds the asked entries beside others (M2: 0.733,
  0.933): the run log of ``pipeline/lineage.json`` was pinned as a list, so a clean run twice
  (identical output) and a pivot built with the mean and then again with the asked sum failed
  it, while the records it renders (``/runs gains 3 new pipeline run``) held. The entries the
  records' own checks judge; a missing entry still fails.
* A field that copies another kind of record's counter moves with it (M2: 0.933): a rule added,
  removed by mistake and added again leaves the recipe at version 16 for 14, and the cleaned
  dataset's ``recipe_version`` was pinned at 14. ``schema_version``, of no kind of record, stays
  content.
* A report tells what the user asked as done, in the user's words (M4: 0.875): "Filed the
  message in travel." of "File that message in a new folder travel"; "Labels ... applied.";
  "Draft not sent yet." A draft said to be sent still fails, and so does a form of a tool's act
  the run did not do to the record ("the flagged message": it carries no flag).

And what the corpus-wide semantics tests found when the default corpus became the deeper one
(``tasks synth --envs mail_triage,itinerary_rebooking,inventory_ledger,notes_desk,rideshare_dispatch
--n 10 --seed 0`` at depth 5; the same fixture):

* A greeting in a text the agent composes names its addressee (1.0): "Hi Ines," on a message to
  Daniel Brennan carrying an order id, as around dictated words.
* A draft discarded and written again is on time (0.5): the turn's guard read the reference's
  file ``mail/drafts/MSG-0011.eml`` where the run's draft is ``MSG-0012.eml``.
* A field the user leaves to the agent is free in a table the environment renders (0.875): an
  action item linked to the meeting note that lists it shows the note in ``action_items.csv``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier.checks import counter_copies

from .test_created_records import audit_tasks, call, score, verified

Turns = list[list[dict[str, Any]]]
PIPELINE = "event_stream-78dddd3a22bf"  # process a batch, clean, add a rule, a recipe, rerun, pivot, a file
HANDOVER = "mail_triage-4854deab8ecb"  # file, label and answer a message, then its id in a section
ORDER = "inventory_ledger-07d789fbfbc1"  # reserve, ship, then email a traveler carrying the order id
REPLY = "mail_triage-e6f617d23d39"  # send a reply, draft a reply to it, a to-do, then a JSON file
EXPORT = "notes_desk-b2752691ae6e"  # track an action item, hand it over, close it, export; then mail
SHEET, STREAM, MAIL = "sheet_analytics", "event_stream", "mail_triage"
PIVOT = "reports/revenue_region_quarter_q1_q3.csv"
CONTEXT = "# Handover\n\n## Context\n\n{}\n\n## Result\n\n- new_message: MSG-0010\n"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round35.jsonl")


def pipeline(
    clean: int = 1, rules: tuple[str, ...] = ("last",), pivots: tuple[str, ...] = ("sum",), rerun: bool = True
) -> Turns:
    """The pipeline task as the reference does it, with the clean made ``clean`` times, the
    rule's options added in order (each one after the first replacing the one before) and the
    pivot built with each aggregation in turn into the asked path."""
    cleaned = call(
        SHEET,
        "clean_dataset",
        dataset_id="DS-003",
        recipe_id="RCP-01",
        output_path="data/clean/sales_2025Q2.csv",
    )
    added: list[dict[str, Any]] = []
    for n, option in enumerate(rules):
        if n:
            added.append(call(SHEET, "remove_cleaning_rule", recipe_id="RCP-01", rule_no=13 + n))
        added.append(
            call(
                SHEET, "add_cleaning_rule", recipe_id="RCP-01", operation="dedupe", column="*", option=option
            )
        )
    built = [
        call(SHEET, "build_pivot", dataset_id="DS-007", index="region", values="revenue",
             output_path=PIVOT, **({} if how == "sum" else {"aggregation": how}))
        for how in pivots
    ]  # fmt: skip
    return [
        [call(STREAM, "process_batch", topic="payments", partition=2), *[cleaned] * clean],
        added,
        [call(SHEET, "create_recipe", name="Northwind review")],
        [
            *([call(SHEET, "rerun_stage", dataset_id="DS-007")] if rerun else []),
            *built,
            call(
                SHEET, "write_file", path="reports/result.json", content='{"new_cleaning_recipe": "RCP-03"}\n'
            ),
        ],
    ]


@pytest.mark.parametrize(
    ("turns", "paid"),
    [
        (pipeline(), True),
        (pipeline(clean=2), True),  # the same clean made twice: the log shows two runs of it
        (pipeline(pivots=("mean", "sum")), True),  # built with the mean, then again as asked
        (pipeline(pivots=("mean",)), False),  # the mean alone is not the asked pivot
        (pipeline(rerun=False), False),  # the asked rerun missing from the log and the records
    ],
)
def test_a_log_in_a_file_the_env_renders_holds_the_asked_entries_beside_others(
    tasks: dict[str, Task], turns: Turns, paid: bool
) -> None:
    assert (score(tasks[PIPELINE], turns) == 1.0) is paid


def test_a_field_that_copies_a_counter_moves_with_it(tasks: dict[str, Task]) -> None:
    assert score(tasks[PIPELINE], pipeline(rules=("first", "last"))) == 1.0  # recipe at version 16, not 14
    assert score(tasks[PIPELINE], pipeline(rules=("first",))) < 1.0  # the option nobody asked for stays
    state = tasks[PIPELINE].initial_state
    assert "recipe_version" in counter_copies(state[SHEET])
    assert "schema_version" not in counter_copies(state[STREAM])  # the events' schema is content


def handover(content: str) -> Turns:
    return [
        [
            call(MAIL, "read_file", path="shift/escalation.md"),
            call(MAIL, "create_folder", name="travel"),
            call(MAIL, "move_message", message_id="MSG-0007", folder="travel"),
            call(MAIL, "label_message", message_id="MSG-0007", label="customer-escalation"),
        ],
        [call(MAIL, "draft_reply", message_id="MSG-0007", body="Thanks, I will look into this today.")],
        [call(MAIL, "label_message", message_id="MSG-0007", label="finance")],
        [call(MAIL, "write_file", path="handover/handover.md", content=content)],
    ]


@pytest.mark.parametrize(
    ("content", "paid"),
    [
        ("## Result\n\n- new_message: MSG-0010\n", True),
        (CONTEXT.format("Filed the message in travel."), True),
        # the message carries no flag: the user's "flags" is the handoff note's word for it, and
        # which record a tool's act ("flag_message") was done to is the run's to show
        (CONTEXT.format("Filed the flagged message in travel."), False),
        (CONTEXT.format("Labels customer-escalation and finance applied."), True),
        (CONTEXT.format("Filed the flagged message in archive."), False),  # not where it was filed
        ("## Result\n\nMSG-0010\n\n## Notes\n\nDraft not sent yet.\n", True),
        ("## Result\n\nMSG-0010\n\n## Notes\n\nDraft sent.\n", False),  # a draft said to be sent
        ("## Result\n\nMSG-0010\n\n## Notes\n\nReply sent to the sender.\n", False),
        ("## Result\n\nMSG-0007\n", False),  # the old message, not the new one
    ],
)
def test_a_report_tells_what_was_asked_as_done_in_the_users_words(
    tasks: dict[str, Task], content: str, paid: bool
) -> None:
    assert (score(tasks[HANDOVER], handover(content)) == 1.0) is paid


def reference(task: Task) -> Turns:
    turns: Turns = [[] for _ in task.turns]
    for c in task.reference.calls:
        turns[c.turn].append(call(c.env, c.tool, **copy.deepcopy(c.args)))
    return turns


@pytest.mark.parametrize(
    ("greeting", "paid"),
    [
        ("Hi Daniel,\n\n", True),
        ("Dear Daniel Brennan,\n\n", True),
        ("Hello,\n\n", True),
        ("Hi Ines,\n\n", False),
    ],
)
def test_a_greeting_in_a_composed_text_names_its_addressee(
    tasks: dict[str, Task], greeting: str, paid: bool
) -> None:
    turns = reference(tasks[ORDER])
    for c in (c for calls in turns for c in calls if c["tool"] == "notify_traveler"):
        c["args"]["message"] = greeting + c["args"]["message"]
    assert (score(tasks[ORDER], turns) == 1.0) is paid


def test_a_draft_discarded_and_written_again_is_on_time(tasks: dict[str, Task]) -> None:
    turns = reference(tasks[REPLY])
    first = turns[0]
    sent = next(i for i, c in enumerate(first) if c["tool"] == "send_draft")
    again = copy.deepcopy(first[sent - 1])  # the reply drafted again after the first is discarded
    redone = [*first[:sent], call(MAIL, "discard_draft", draft_id="MSG-0010"), again]
    later = [_renamed(c, {"MSG-0010": "MSG-0011"}) for c in first[sent:]]
    rest = [[_renamed(c, {"MSG-0010": "MSG-0011"}) for c in calls] for calls in turns[1:]]
    assert score(tasks[REPLY], [[*redone, *later], *rest]) == 1.0
    assert score(tasks[REPLY], [[*redone], *rest]) < 1.0  # the reply never sent, nor answered


def _renamed(c: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {**c, "args": {k: names.get(v, v) if isinstance(v, str) else v for k, v in c["args"].items()}}


def test_a_field_left_to_the_agent_is_free_in_a_table_the_env_renders(tasks: dict[str, Task]) -> None:
    task = tasks[EXPORT]
    note = sorted(p for p in task.workspace if p.startswith("notes/"))[-1]
    turns = reference(task)
    item = next(c for calls in turns for c in calls if c["tool"] == "add_action_item")
    args = item["args"]
    line = f"- [ ] @{args['owner']}: {args['title']} (due {args['due']})\n"
    listed = task.model_copy(update={"workspace": {**task.workspace, note: task.workspace[note] + line}})
    assert score(verified(listed), turns) == 1.0
    args["meeting"] = note  # linked to the note that lists it: the export shows the link
    assert score(verified(listed), turns) == 1.0
    args["due"] = "2026-12-31"  # what the user said is still pinned, in the record and the export
    assert score(verified(listed), turns) < 1.0
