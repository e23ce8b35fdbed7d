"""The fourth blind audit's holes, on its real tasks (``tests/fixtures/audit_tasks_round4.jsonl``),
each verifier synthesized again by this checkout. Every case scored as the comment says on the
audited code (``762b8c6``):

* a "Cc:" added to a draft the user asked for (1.0: a mail file's lines were not counted);
* a reason labelled with the record's kind, "Run created by mistake" (0.5);
* profiling a dataset before cleaning it, which bumps its ``updated_at`` (0.5);
* an asked JSON object's extra key naming the asked record's own field, ``"forward_of"`` (0.8).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier.explain import explain_trajectory

from .test_created_records import audit_tasks, score
from .test_reward_semantics import Turns, reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round4.jsonl")


def call(env: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"env": env, "tool": tool, "args": args}


def where(turns: Turns, tool: str) -> tuple[int, int]:
    return next((t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == tool)


def test_a_header_added_to_an_asked_draft_is_not_paid(tasks: dict[str, Task]) -> None:
    """mail_triage-8f37924aebb7: a forward draft with an unasked Cc (the draft's headers live in
    its .eml file only) scored 1.0; the confidential reply Cc'd to a customer too."""
    task = tasks["mail_triage-8f37924aebb7"]
    turns = reference(task)
    assert score(task, turns) == 1.0
    t, n = where(turns, "draft_forward")
    cc = call(
        "mail_triage", "edit_draft", draft_id="MSG-0010", cc=["Lena Fischer <lena.fischer@northwind.example>"]
    )
    copied = copy.deepcopy(turns)
    copied[t].insert(n + 1, cc)
    assert score(task, copied) < 1.0


def test_explain_names_the_unasked_line(tasks: dict[str, Task]) -> None:
    """``tasks score --explain`` says which line no correct run writes, not only "N lines"
    (the audit's friction: a line-count failure said "no such line; 17 lines")."""
    task = tasks["mail_triage-8f37924aebb7"]
    turns = reference(task)
    t, n = where(turns, "draft_forward")
    copied = copy.deepcopy(turns)
    copied[t].insert(
        n + 1, call("mail_triage", "edit_draft", draft_id="MSG-0010", cc=["lena@northwind.example"])
    )
    _, explanation = explain_trajectory(task, copied)
    assert explanation.checks is not None
    [failed] = [c for c in explanation.checks if not c["passed"] and c["kind"] == "file"]
    assert failed["expected"] == "mail/drafts/MSG-0010.eml: only lines the correct runs write"
    assert failed["had"] == 'also "Cc: lena@northwind.example"'


def test_a_reason_may_be_labelled_with_its_records_kind(tasks: dict[str, Task]) -> None:
    """job_scheduler-5aa3c511e092: "cancel ...; the reason is 'created by mistake'" written
    "Run created by mistake" scored 0.5 (a label without a colon was a word of its own)."""
    task = tasks["job_scheduler-5aa3c511e092"]
    turns = reference(task)
    t, n = where(turns, "cancel_run")

    def reason(text: str) -> Turns:
        changed = copy.deepcopy(turns)
        changed[t][n]["args"]["reason"] = text
        return changed

    assert score(task, reason("Run created by mistake")) == 1.0
    assert score(task, reason("Not created by mistake")) < 1.0
    assert score(task, reason("Mostly created by mistake")) < 1.0


def test_a_record_touched_but_not_changed_is_untouched(tasks: dict[str, Task]) -> None:
    """sheet_analytics-6e5df2c69998: profiling the dataset before cleaning it (the tool's doc
    asks for a profiled dataset) only bumps its ``updated_at``; the guard on the other datasets
    halved the reward."""
    task = tasks["sheet_analytics-6e5df2c69998"]
    turns = reference(task)
    t, n = where(turns, "clean_dataset")
    dataset = turns[t][n]["args"]["dataset_id"]
    profiled = copy.deepcopy(turns)
    profiled[t].insert(n, call("sheet_analytics", "profile_dataset", dataset_id=dataset))
    assert score(task, profiled) == 1.0


def test_an_extra_key_may_name_the_asked_records_own_field(tasks: dict[str, Task]) -> None:
    """mail_triage-80508cabd09c: reports/result.json with the new forward's id and its
    ``"forward_of": "MSG-0002"`` scored 0.8 (another MSG- id read as a second answer)."""
    task = tasks["mail_triage-80508cabd09c"]
    turns = reference(task)
    t, n = where(turns, "write_file")
    asked = json.loads(turns[t][n]["args"]["content"])

    def written(**extra: Any) -> Turns:
        changed = copy.deepcopy(turns)
        changed[t][n]["args"]["content"] = json.dumps({**asked, **extra}) + "\n"
        return changed

    assert score(task, written(forward_of="MSG-0002")) == 1.0
    assert score(task, written(forward_of="MSG-0003")) < 1.0
    assert score(task, written(related="MSG-0002")) < 1.0
