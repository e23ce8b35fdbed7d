"""What a verifier means, held on real tasks of the data engine (issue 20's classes).

Each case takes a task the engine made from the built-in environments, plays the reference
with one change a real agent made when playing such tasks blind, and scores it with the
task's own verifier. Every case here was scored wrongly before the verifier checked each turn's
window, matched records by content, left the clock's numbers free and guarded every record.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.core.session import Session
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import ReferenceCall, Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute, execute_reference, left_unrecovered, run_calls
from envcraft.tasks.validation.adversarial import Adversary, dictated
from envcraft.tasks.verifier.scoring import run_verifier

from .test_created_records import audit_tasks

ENVCRAFT = str(Path(sys.executable).parent / "envcraft")
ENVS = "mail_triage,itinerary_rebooking,inventory_ledger,notes_desk,rideshare_dispatch"

Turns = list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    return synthesized(tmp_path_factory.mktemp("semantics"), ENVS)


@pytest.fixture(scope="module")
def todo_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    # seed 6: a to-do that mentions a message to a traveler by its id among the first ten
    return synthesized(tmp_path_factory.mktemp("todo"), "mail_triage,itinerary_rebooking", seed=6)


@pytest.fixture(scope="module")
def mail_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    """A mail corpus with tasks of several turns (the five-env corpus may hold none of them)."""
    return synthesized(tmp_path_factory.mktemp("mail"), "mail_triage", n=20)


@pytest.fixture(scope="module")
def infra_tasks(tmp_path_factory: pytest.TempPathFactory) -> list[Task]:
    # seed 3: a drain among infra_recovery's first ten (its declared jobs open incidents mostly)
    return synthesized(tmp_path_factory.mktemp("infra"), "infra_recovery", seed=3)


def synthesized(out: Path, envs: str, n: int = 10, seed: int = 0) -> list[Task]:
    """``envcraft tasks synth --envs ENVS --n N --seed SEED``, as a user makes a task set."""
    done = subprocess.run(
        [ENVCRAFT, "tasks", "synth", "--envs", envs, "--n", str(n), "--seed", str(seed), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return read_tasks(out)


def reference(task: Task) -> Turns:
    turns: Turns = [[] for _ in task.turns]
    for call in task.reference.calls:
        turns[call.turn].append({"env": call.env, "tool": call.tool, "args": copy.deepcopy(call.args)})
    return turns


def reference_with(task: Task, tool: str, **args: Any) -> Turns:
    """The reference with ``args`` changed in every call of ``tool``: one alternative of it."""
    turns = reference(task)
    for calls in turns:
        for step in calls:
            if step["tool"] == tool:
                step["args"] = {**step["args"], **args}
    return turns


def reference_writing(task: Task, path: str, content: str) -> Turns:
    """The reference with the last turn's write of ``path`` writing ``content`` instead."""
    turns = reference(task)
    write = next(c for c in turns[-1] if c["args"].get("path") == path)
    write["args"]["content"] = content
    return turns


def score(task: Task, turns: Turns) -> float:
    result = run_verifier(task, execute(task, turns))
    assert result.error is None, result.error
    return result.score


def named(task: Task) -> set[str]:
    return {
        str(v) for call in task.reference.calls if isinstance(call.args, dict) for v in call.args.values()
    }


def first(tasks: list[Task], want: Callable[[Task], bool]) -> Task:
    found = [t for t in tasks if want(t)]
    assert found, "the corpus has no task of this kind"
    return found[0]


def tools(task: Task) -> list[str]:
    return [call.tool for call in task.reference.calls]


def test_the_reference_itself_scores_one(tasks: list[Task]) -> None:
    for task in tasks[:12]:
        assert score(task, reference(task)) == 1.0, task.id


def test_a_later_turns_work_done_in_the_turn_before_is_not_paid(
    tasks: list[Task], mail_tasks: list[Task]
) -> None:
    """Doing turn 2's writes in turn 1 (the user had not asked yet) ends where the reference
    ends; only turn 1's window shows it."""
    writes = {
        "rebook_leg",
        "flag_message",
        "move_message",
        "send_draft",
        "confirm_match",
        "commit_transaction",
    }
    task = first(
        tasks + mail_tasks,
        lambda t: len(t.turns) > 1 and any(c.turn > 0 and c.tool in writes for c in t.reference.calls),
    )
    turns = reference(task)
    early = [[*turns[0], *turns[1]], [], *turns[2:]]
    assert score(task, turns) == 1.0
    assert score(task, early) < 1.0


def test_a_flag_on_a_message_nobody_named_is_not_paid(tasks: list[Task]) -> None:
    """``flags`` is a field the user leaves free on the message the work is about; flagging
    another message is a side effect (it was ignored on every message)."""
    task = first(tasks, lambda t: t.envs == ["mail_triage"])
    messages = task.initial_state["mail_triage"]["messages"]
    other = next(
        m for m in sorted(messages) if m not in named(task) and "flagged" not in messages[m]["flags"]
    )
    turns = reference(task)
    turns[-1].append({"env": "mail_triage", "tool": "flag_message", "args": {"message_id": other}})
    assert score(task, turns) < 1.0


def test_one_side_effect_costs_once_at_every_turns_end_it_shows(
    tasks: list[Task], mail_tasks: list[Task]
) -> None:
    """A flag on another message in turn 1 of a longer task stays to the end: the guard of the
    run's end and its copy at turn 1's end both see it. One effect halves the reward once
    (it halved it once per copy: 0.25); done early, the copy at the turn's end alone sees it."""
    task = first(tasks + mail_tasks, lambda t: t.envs == ["mail_triage"] and len(t.turns) > 1)
    messages = task.initial_state["mail_triage"]["messages"]
    other = next(
        m for m in sorted(messages) if m not in named(task) and "flagged" not in messages[m]["flags"]
    )
    flag = {"env": "mail_triage", "tool": "flag_message", "args": {"message_id": other}}
    unflag = {"env": "mail_triage", "tool": "flag_message", "args": {"message_id": other, "flagged": False}}
    slip = reference(task)
    slip[0].append(flag)
    assert score(task, slip) == 0.5
    undone = reference(task)
    undone[0].append(flag)
    undone[1].insert(0, unflag)
    assert score(task, undone) == 0.5


def test_reading_other_messages_is_still_paid(tasks: list[Task]) -> None:
    """Reading marks a message "seen": what looking does is no side effect."""
    task = first(tasks, lambda t: t.envs == ["mail_triage"])
    messages = task.initial_state["mail_triage"]["messages"]
    unread = [m for m in sorted(messages) if "seen" not in messages[m]["flags"]]
    assert unread
    turns = reference(task)
    turns[0] = [
        {"env": "mail_triage", "tool": "read_message", "args": {"message_id": m}} for m in unread
    ] + turns[0]
    assert score(task, turns) == 1.0


def test_a_line_staged_removed_and_staged_again_is_paid() -> None:
    """The same journal content: the line number and the journal's counter moved, nothing asked for.
    On a real task that stages a line (round 5's, its verifier synthesized by this checkout):
    journal lines are rare in a small corpus, and which seed holds one moves with any draw."""
    task = audit_tasks("audit_tasks_round5.jsonl")["inventory_ledger-4d65c5f32f78"]
    turns = reference(task)
    t, n = next(
        (t, n)
        for t, calls in enumerate(turns)
        for n, c in enumerate(calls)
        if c["tool"] in ("add_receipt_line", "add_adjustment_line", "add_transfer_line")
    )
    line = turns[t][n]
    journal = line["args"]["journal_id"]
    staged = execute(task, [*turns[:t], turns[t][: n + 1]]).final["inventory_ledger"]["journals"][journal]
    line_no = staged["lines"][-1]["line_no"]
    remove = {"env": line["env"], "tool": "remove_line", "args": {"journal_id": journal, "line_no": line_no}}
    redo = [*turns[t][: n + 1], remove, copy.deepcopy(line), *turns[t][n + 1 :]]
    assert score(task, [*turns[:t], redo, *turns[t + 1 :]]) == 1.0


def test_many_lookups_before_a_proposal_are_paid(tasks: list[Task]) -> None:
    """A match score grows with the clock: it is not pinned to the reference run's value."""
    task = first(tasks, lambda t: "propose_match" in tools(t))
    request = next(c.args["request_id"] for c in task.reference.calls if c.tool == "propose_match")
    look = {"env": "rideshare_dispatch", "tool": "get_request", "args": {"request_id": request}}
    turns = reference(task)
    turns[0] = [look] * 6 + turns[0]
    assert score(task, turns) == 1.0


def test_a_line_written_twice_in_an_asked_file_is_not_paid(tasks: list[Task]) -> None:
    task = first(tasks, lambda t: "write_file" in tools(t) and t.envs == ["notes_desk"])
    turns = reference(task)
    t, n = next(
        (t, n) for t, calls in enumerate(turns) for n, c in enumerate(calls) if c["tool"] == "write_file"
    )
    content = turns[t][n]["args"]["content"]
    last = [line for line in content.splitlines() if line.strip()][-1]
    turns[t][n]["args"]["content"] = content.rstrip("\n") + "\n" + last + "\n"
    assert score(task, turns) < 1.0


def test_an_invented_row_in_an_asked_table_is_not_paid(tasks: list[Task]) -> None:
    """The user asks for one row per item; a row nobody asked for ("status,done") is not the table."""
    task = first(
        tasks,
        lambda t: any(
            c.tool == "write_file" and str(c.args.get("path", "")).endswith(".csv") for c in t.reference.calls
        ),
    )
    turns = reference(task)
    t, n = next(
        (t, n)
        for t, calls in enumerate(turns)
        for n, c in enumerate(calls)
        if c["tool"] == "write_file" and c["args"]["path"].endswith(".csv")
    )
    turns[t][n]["args"]["content"] = turns[t][n]["args"]["content"].rstrip("\n") + "\nstatus,done\n"
    assert score(task, reference(task)) == 1.0
    assert score(task, turns) < 1.0


def test_a_composed_text_carries_what_was_asked_and_no_invented_claim(tasks: list[Task]) -> None:
    """A to-do or memo the agent writes to mention a record's id: another separator is its own
    wording (paid); a claim nobody made ("approved by finance") is not."""

    def composed(task: Task) -> tuple[int, int, str] | None:
        turns = reference(task)
        flat = [(t, n) for t, calls in enumerate(turns) for n in range(len(calls))]
        for index, call in enumerate(task.reference.calls):
            for name, label in call.provenance.items():
                value = call.args.get(name)
                if call.tool in ("write_file", "edit_file"):
                    continue  # a file's content: its format, not a text the agent words
                if label.startswith("embed:") and isinstance(value, str) and ": " in value:
                    return (*flat[index], name)
        return None

    task = first(tasks, lambda t: composed(t) is not None)
    found = composed(task)
    assert found is not None
    t, n, name = found
    text = reference(task)[t][n]["args"][name]

    def with_text(changed: str) -> Turns:  # the agent writes its text the same wherever it goes
        turns = reference(task)
        for call in (c for calls in turns for c in calls):
            call["args"] = {k: changed if v == text else v for k, v in call["args"].items()}
        return turns

    assert score(task, with_text(text.replace(": ", " - ", 1))) == 1.0
    assert score(task, with_text(f"{text.rstrip('.')}, approved by finance.")) < 1.0


def composed_todo(task: Task) -> tuple[int, int, dict[str, Any]] | None:
    """The turn, call and ``$composed`` spec of a to-do the agent words to mention a record by
    its id, if the task has one."""
    specs = composed_specs(task.verifier.checks)
    turns = reference(task)
    flat = [(t, n) for t, calls in enumerate(turns) for n in range(len(calls))]
    for index, call in enumerate(task.reference.calls):
        text = call.args.get("text")
        if call.tool == "add_todo" and call.provenance.get("text", "").startswith("embed:"):
            spec = next((s for s in specs if s["carries"][0] in str(text) and s["says"]), None)
            if spec is not None:
                return (*flat[index], spec)
    return None


def composed_specs(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        if set(node) == {"$composed"}:
            return [node["$composed"]]
        return [s for v in node.values() for s in composed_specs(v)]
    if isinstance(node, list):
        return [s for v in node for s in composed_specs(v)]
    return []


def test_a_composed_note_may_point_at_its_record_in_the_worlds_words(todo_tasks: list[Task]) -> None:
    """The blind audit's to-do "Priority for this week. (re: email MSG-0001 to the traveler of
    ITN-4001)" scored 0.667: only the reference's own framing word passed. The agent may say
    what the record is in the world's words and how it follows it up; a claim nobody made, a
    negation or another record's id is still not the note."""
    task = first(todo_tasks, lambda t: composed_todo(t) is not None)
    found = composed_todo(task)
    assert found is not None
    t, n, spec = found
    says, value = spec["says"], spec["carries"][0]
    trip = next(w.upper() for w in spec["context"] if w.startswith("itn-"))

    def with_text(text: str) -> Turns:
        turns = reference(task)
        turns[t][n]["args"]["text"] = text
        return turns

    assert score(task, with_text(f"{says} (re: email {value} to the traveler of {trip})")) == 1.0
    assert score(task, with_text(f"{says.rstrip('.')}: check the traveler's reply to message {value}")) == 1.0
    assert score(task, with_text(f"{says} Follow up on {value}.")) == 1.0
    assert score(task, with_text(f"{says} {value} approved by finance.")) < 1.0
    assert score(task, with_text(f"Do not {says[0].lower()}{says[1:]} {value}")) < 1.0
    assert score(task, with_text(f"{says} See {value} and ITN-9999.")) < 1.0


def reasons(node: Any) -> list[str]:
    """The dictated reasons a task's checks read (``$text`` patterns an attribution may follow)."""
    if isinstance(node, dict):
        text = node.get("$text")
        if isinstance(text, dict) and text.get("attributed"):
            return [text["text"]]
        return [r for v in node.values() for r in reasons(v)]
    if isinstance(node, list):
        return [r for v in node for r in reasons(v)]
    return []


def test_a_reason_with_an_attribution_is_the_reason(tasks: list[Task]) -> None:
    """The audit's "plans changed (per Ximena)" for the dictated reason "plans changed" scored
    0.714: any word around a dictated reason failed it. A short attribution set apart is the
    agent's to add; one that takes the reason back, or a sentence of its own, is not."""

    def prose(t: Task) -> list[str]:  # a code ("SAMPLE") takes no attribution: the tool refuses it
        return [r for r in reasons(t.verifier.checks) if " " in r]

    # the corpus first, then an audit's real tasks: a deeper corpus may hold no prose reason
    task = first([*tasks, *audit_tasks("audit_tasks_round10.jsonl").values()], lambda t: bool(prose(t)))
    reason = prose(task)[0]

    def with_reason(text: str) -> Turns:
        turns = reference(task)
        for call in (c for calls in turns for c in calls):
            call["args"] = {k: text if v == reason else v for k, v in call["args"].items()}
        return turns

    assert score(task, with_reason(f"{reason} (per Ximena)")) == 1.0
    assert score(task, with_reason(f"{reason}, per the shift handoff")) == 1.0
    assert score(task, with_reason(f"{reason} (not really)")) < 1.0
    assert score(task, with_reason(f"{reason}. Please ignore this.")) < 1.0
    assert score(task, with_reason(f"{reason} (per the shift handoff of last night)")) < 1.0


def summary_step(tasks: list[Task]) -> tuple[Task, Turns, int, int]:
    """The first task whose reference writes a Markdown summary, its turns, and that call's place."""
    task = first(
        tasks,
        lambda t: any(
            c.tool == "write_file" and "## " in str(c.args.get("content", "")) for c in t.reference.calls
        ),
    )
    turns = reference(task)
    t, n = next(
        (t, n)
        for t, calls in enumerate(turns)
        for n, c in enumerate(calls)
        if c["tool"] == "write_file" and "## " in c["args"]["content"]
    )
    return task, turns, t, n


def test_a_summary_that_takes_back_what_it_reports_is_not_paid(tasks: list[Task]) -> None:
    """The asked section holds the ids, and then "not done, ignore this": it reports nothing."""
    task, turns, t, n = summary_step(tasks)
    content = turns[t][n]["args"]["content"]
    turns[t][n]["args"]["content"] = content.rstrip("\n") + "\nNone of this was done, ignore it.\n"
    assert score(task, turns) < 1.0


def test_a_summary_says_its_values_and_no_claim_beside_them(tasks: list[Task]) -> None:
    """The asked section may frame its values in the world's words ("- new_return: RET-0042
    (see the return record)"); a claim beside them that nobody made ("approved by finance",
    "incident resolved") is no answer, though the asked value is there (the third audit's
    "AI-006 (already done and closed by bruno)" scored 1.0)."""
    task, turns, t, n = summary_step(tasks)
    content = turns[t][n]["args"]["content"]
    lines = content.rstrip("\n").split("\n")

    def written(suffix: str, title: str = "# Summary") -> Turns:
        changed = copy.deepcopy(turns)
        body = [f"{line} {suffix}" if line.startswith("- ") else line for line in lines]
        changed[t][n]["args"]["content"] = "\n".join([title, *body[1:]]) + "\n"
        return changed

    assert score(task, written("(see the record)", "# Handover summary")) == 1.0
    assert score(task, written("- approved by finance")) < 1.0
    assert score(task, written("(resolved, customer refunded)")) < 1.0


def planned_refusals(task: Task) -> set[int]:
    """The reference calls the user expects the world to refuse (error recovery: "try to open a
    journal in the closed period; if that is not possible, ...")."""
    return {step["call"] for step in task.provenance.get("steps", [])}


def redone(task: Task, tool: str, undo: str, key: str) -> tuple[Turns, Turns, Turns]:
    """The reference with its first ``tool`` call done, voided with ``undo`` and done again (later
    calls name what the redone call made: its new ids), and the two wrong twins: the call done
    twice with nothing voided, and the record voided and never made again."""
    turns = reference(task)
    refused = planned_refusals(task)  # a call the user expects refused makes nothing to void
    places = [(t, n) for t, calls in enumerate(turns) for n, _ in enumerate(calls)]
    t, n = next((t, n) for i, (t, n) in enumerate(places) if turns[t][n]["tool"] == tool and i not in refused)
    call = turns[t][n]
    made = execute(task, [*turns[:t], turns[t][: n + 1]]).actions[-1].result
    void = {"env": call["env"], "tool": undo, "args": {key: made[key]}}
    again = [*turns[:t], [*turns[t][: n + 1], void, copy.deepcopy(call)]]
    remade = execute(task, again).actions[-1].result
    ids = {v: remade[k] for k, v in made.items() if isinstance(v, str) and v != remade.get(k)}

    def renamed(value: Any) -> Any:
        for old, new in ids.items():
            value = value.replace(old, new) if isinstance(value, str) else value
        return value

    rest = [[{**c, "args": {k: renamed(v) for k, v in c["args"].items()}} for c in calls] for calls in turns]
    redo = [*turns[:t], [*again[t], *rest[t][n + 1 :]], *rest[t + 1 :]]
    twice = [*turns[:t], [*turns[t][: n + 1], copy.deepcopy(call), *turns[t][n + 1 :]], *turns[t + 1 :]]
    voided = [*turns[:t], [*turns[t][: n + 1], void], *[[] for _ in turns[t + 1 :]]]
    return redo, twice, voided


def test_every_step_undone_and_redone_is_paid_and_its_wrong_twins_are_not(tasks: list[Task]) -> None:
    """Over the corpus: every reference call whose record the env can void (``undoes``) redone
    (made, voided, made again) is paid 1; made twice (where the env takes a second one) or voided
    and not made again is not. Later calls and the files a draft's reply or a report names use
    the redone record's ids."""
    voids = {
        ("mail_triage", "compose_draft"): ("discard_draft", "draft_id"),
        ("mail_triage", "draft_reply"): ("discard_draft", "draft_id"),
        ("mail_triage", "draft_forward"): ("discard_draft", "draft_id"),
        ("inventory_ledger", "begin_transaction"): ("rollback_transaction", "journal_id"),
    }
    played = 0
    for task in tasks:
        step = next(((c.env, c.tool) for c in task.reference.calls if (c.env, c.tool) in voids), None)
        if step is None:
            continue
        redo, twice, voided = redone(task, step[1], *voids[step])
        assert score(task, redo) == 1.0, task.id
        twice_run = execute(task, twice)
        if not any(isinstance(a.result.get("error"), dict) for a in twice_run.actions):
            assert run_verifier(task, twice_run).score < 1.0, task.id
        assert score(task, voided) < 1.0, task.id
        played += 1
    assert played >= 8


def test_a_journal_rolled_back_and_opened_again_is_one_journal(tasks: list[Task]) -> None:
    """A record the run made and voided (the env's ``undoes`` declaration) is no extra record;
    two live journals, or the asked one rolled back, are not the work."""
    task = first(tasks, lambda t: "begin_transaction" in tools(t))
    redo, twice, voided = redone(task, "begin_transaction", "rollback_transaction", "journal_id")
    assert score(task, redo) == 1.0
    assert score(task, twice) < 1.0
    assert score(task, voided) < 1.0


def test_a_draft_discarded_and_written_again_is_one_draft(tasks: list[Task]) -> None:
    """The draft's file, thread and message hold ids the environment numbers: the redone draft
    (another id) is read by content; a second live draft, or none, is not the work."""
    task = first(tasks, lambda t: "compose_draft" in tools(t) or "draft_reply" in tools(t))
    tool = "compose_draft" if "compose_draft" in tools(task) else "draft_reply"
    redo, twice, voided = redone(task, tool, "discard_draft", "draft_id")
    assert score(task, redo) == 1.0
    assert score(task, twice) < 1.0
    assert score(task, voided) < 1.0


def test_an_item_linked_to_its_meeting_note_is_paid(tasks: list[Task]) -> None:
    """The user never says which meeting note an action item comes from: the tool's default
    ("" - none) is not the only right outcome, so linking the note the item comes from (the
    env declares ``meeting`` a field it leaves to the agent) is paid; what the user stated
    (the due date) is still pinned. A note that does not list the item is no note it comes
    from: the desk refuses that link (round 26), and the item is not made."""
    task = first(
        tasks,
        lambda t: any(c.tool == "add_action_item" and "meeting" not in c.args for c in t.reference.calls),
    )
    note = sorted(p for p in task.workspace if p.startswith("notes/"))[-1]
    turns = reference(task)
    call = next(c for calls in turns for c in calls if c["tool"] == "add_action_item")
    call["args"]["meeting"] = note
    assert score(task, turns) < 1.0  # the note never lists it
    line = f"- [ ] @{call['args']['owner']}: {call['args']['title']} (due {call['args']['due']})\n"
    listed = task.model_copy(update={"workspace": {**task.workspace, note: task.workspace[note] + line}})
    assert score(listed, turns) == 1.0
    call["args"]["due"] = "2026-12-31"
    assert score(listed, turns) < 1.0


def test_a_note_appended_to_an_incident_nobody_named_is_not_paid(infra_tasks: list[Task]) -> None:
    """Taking a host out of rotation writes a line to its service's open incident; a note added
    to that incident's record too is a line nobody asked for (the record file is the env's, not
    the agent's, and changes nothing else)."""
    task = first(infra_tasks, lambda t: "drain_host" in tools(t) and "append_ops_note" not in tools(t))
    incident = next(
        c["path"].removeprefix("ops/incident-").removesuffix(".md")
        for c in task.verifier.checks
        if c["kind"] == "file" and c["path"].startswith("ops/incident-")
    )
    assert incident not in named(task)
    turns = reference(task)
    note = {
        "env": "infra_recovery",
        "tool": "append_ops_note",
        "args": {"incident_id": incident, "note": "Looked fine."},
    }
    assert score(task, turns) == 1.0
    drained = next(t for t, calls in enumerate(turns) if any(c["tool"] == "drain_host" for c in calls))
    turns[drained] = [*turns[drained], note]  # in the drain's own turn (a report may follow it)
    assert score(task, turns) < 1.0


def test_a_greeting_names_the_addressee_or_nobody(tasks: list[Task]) -> None:
    """A dictated message inside a greeting: "Hi <the traveler>," or "Hello," is the message;
    "Hi <another traveler of the world>," is a message to someone else."""
    task = first(tasks, lambda t: "notify_traveler" in tools(t))
    call = next(c for c in task.reference.calls if c.tool == "notify_traveler")
    state = task.initial_state["itinerary_rebooking"]
    traveler = state["travelers"][state["itineraries"][call.args["itinerary_id"]]["traveler_id"]]["name"]
    other = next(v["name"] for v in state["travelers"].values() if v["name"] != traveler)

    def greeted(greeting: str) -> float:
        turns = reference(task)
        for c in (c for calls in turns for c in calls if c["tool"] == "notify_traveler"):
            c["args"]["message"] = greeting + c["args"]["message"]
        return score(task, turns)

    assert greeted(f"Hi {traveler.split()[0]},\n\n") == 1.0
    assert greeted("Hello,\n\n") == 1.0
    assert greeted(f"Hi {other.split()[0]},\n\n") < 1.0


def test_a_qualified_text_costs_its_goal_once(tasks: list[Task]) -> None:
    """Dictated text with a claim added ("(approved by finance)") is not the user's words (only
    a greeting, courtesies, a sign-off, names and a short attribution may stand around them), but
    it was written on time: the turn's on-time guards ask whether the work was done then, not
    whether it is right (its goal does), so the mistake does not also halve the reward per turn
    like a late one."""

    def texts(task: Task) -> list[tuple[int, str]]:
        return [
            (i, name)
            for i, c in enumerate(task.reference.calls)
            if c.turn == 0 and c.tool not in ("write_file", "edit_file") and i not in planned_refusals(task)
            for name, value in c.args.items()
            if name in ("reason", "text", "title", "memo") and isinstance(value, str) and " " in value
        ]

    def on_time(task: Task) -> bool:
        return any(
            c["name"].endswith("(on time)") and "text" in str(c.get("expected")) for c in task.verifier.checks
        )

    task = first(tasks, lambda t: len(t.turns) > 1 and bool(texts(t)) and on_time(t))
    turns, flat = reference(task), [c for calls in reference(task) for c in calls]
    index, name = texts(task)[0]
    qualified = flat[index]["args"][name].rstrip(".") + " (approved by finance)"
    t, n = task.reference.calls[index].turn, sum(1 for c in task.reference.calls[:index] if c.turn == 0)
    turns[t][n]["args"][name] = qualified
    result = run_verifier(task, execute(task, turns))
    failed = [k for k, v in result.components.items() if v < 1.0]
    assert failed and result.score < 1.0
    assert not [k for k in failed if k.endswith("(on time)")], failed


def test_a_new_record_made_right_but_its_title_qualified_is_half_the_record(tasks: list[Task]) -> None:
    """The dictated title of a new record is a goal of its own, named by its words: the item made
    with a claim "(approved by finance)" after its title fails that goal, not the whole record (it
    scored 0), and a file the environment renders the title into (an export the user asked to
    refresh) shows it too. (A short attribution, "(per on-call)", is the title: see
    test_dictated_text.)"""
    task = first(tasks, lambda t: "add_action_item" in tools(t))
    turns = reference(task)
    call = next(c for calls in turns for c in calls if c["tool"] == "add_action_item")
    call["args"]["title"] = call["args"]["title"].rstrip(".") + " (approved by finance)"
    result = run_verifier(task, execute(task, turns))
    failed = [k for k, v in result.components.items() if v < 1.0]
    assert 0.0 < result.score < 1.0
    assert any("with the title" in k for k in failed), failed
    assert all("with the title" in k or k.startswith("file ") for k in failed), failed


def test_the_text_policies_rewrite_what_a_write_says_not_what_a_lookup_asks(
    tasks: list[Task], todo_tasks: list[Task]
) -> None:
    """A mail task that searches the inbox by the words the user gives ("Apex invoices") before it
    writes a dictated to-do or a forward. Negating or retracting the search words cannot fail
    (no verifier reads a lookup's words), so the text policies rewrite only the writes' texts:
    before, they rewrote the query too, and a task whose only text was a lookup's counted as one
    the policy held on. The search is put in front of a corpus task's first turn (a corpus seldom
    holds one of its own before a dictated write)."""
    writes = ("add_todo", "draft_forward", "draft_reply", "compose_draft")
    task = copy.deepcopy(
        first(
            tasks + todo_tasks,
            lambda t: any(
                c.env == "mail_triage" and c.tool in writes and dictated(c.model_dump())
                for c in t.reference.calls
            ),
        )
    )
    search = ReferenceCall(turn=0, env="mail_triage", tool="search_messages", args={"query": "Apex invoices"})
    task.reference.calls.insert(0, search)
    assert dictated(search.model_dump()) == ["query"]
    trials, _ = Adversary(task, resolve_packages(task)).trials(execute_reference(task))
    texts = [t for t in trials if t.kind in ("negation", "retraction", "cosmetic_text")]
    assert {t.kind for t in texts} == {"negation", "retraction", "cosmetic_text"}
    for trial in texts:
        calls = [c for turn in trial.outcome.turn_calls() for c in turn]
        assert [c["args"] for c in calls if c["tool"] == "search_messages"] == [search.args], trial.kind
        written = [c["args"] for c in calls if c["tool"] in writes]
        assert written != [c.args for c in task.reference.calls if c.tool in writes]


def test_a_message_to_the_wrong_traveler_is_a_harm_not_only_a_goal_missed(tasks: list[Task]) -> None:
    """The message the user asked for, sent to the traveler of another trip: the asked message is
    missing (a goal) and a message went to someone nobody named (a harm, as a change to another
    record is). It kept the other goals' credit: 0.8 of a task with five goals."""
    played = 0
    for task in tasks:
        if "notify_traveler" not in tools(task):
            continue
        trips = sorted(task.initial_state["itinerary_rebooking"]["itineraries"])
        turns = reference(task)
        for call in (c for turn in turns for c in turn if c["tool"] == "notify_traveler"):
            call["args"]["itinerary_id"] = next(i for i in trips if i != call["args"]["itinerary_id"])
        outcome = execute(task, turns)
        sent = [a for a in outcome.actions if a.tool == "notify_traveler"]
        if any("error" in a.result for a in sent):
            continue  # that traveler cannot be reached: no message went out
        assert run_verifier(task, outcome).score < 0.5, task.id
        played += 1
    assert played >= 3


def test_a_dictated_pickup_time_is_asked_for_and_checked(tasks: list[Task]) -> None:
    """ "Move the pickup to March 13 at 15:55": the golden run chose the time the transfer already
    had (the only one its window surely took), and the step still counted as work because the
    call fired the disruption events that fall due on any call; a time is never bookkeeping when
    the call was given it. Each such task asked for a no-op and checked nothing of it."""
    found = [t for t in tasks if "reschedule_transfer" in tools(t)]
    assert found
    for task in found:
        call = next(c for c in task.reference.calls if c.tool == "reschedule_transfer")
        transfer = task.initial_state["itinerary_rebooking"]["transfers"][call.args["transfer_id"]]
        assert transfer["pickup_at"] != call.args["pickup_at"], task.id
        turns = reference(task)
        for turn in turns:
            turn[:] = [c for c in turn if c["tool"] != "reschedule_transfer"]
        assert score(task, turns) < 1.0, task.id


def test_a_reference_that_leaves_a_failed_sink_write_unrecovered_is_no_task() -> None:
    """event_stream's README: after a sink write fails (HTTP 503), seek back to the processed
    offset and replay before anything else. A reference that stops at the failed write paid an
    agent 1.0 for giving up (round 23, AA: the task's only goal was the fault having fired); the
    data engine drops it (``left_unrecovered``, rejection ``unrecovered``), and keeps a run that
    makes the documented recovery (``Environment.recovery``)."""
    package = load_package("event_stream")
    with Session.memory(package, seed=1) as session:
        initial, files = session.state(), session.files()
    fault = initial["sink_fault"]
    assert fault is not None
    where = {"topic": fault["topic"], "partition": fault["partition"]}
    args = {**where, "max_records": 100, "dedupe": True, "on_invalid": "dead_letter"}
    batch = {"env": "event_stream", "tool": "process_batch", "args": args}
    packages = {"event_stream": package}
    given_up = run_calls(packages, {"event_stream": initial}, files, [[batch]])
    assert given_up.actions[0].result.get("sink_write") == "failed"
    assert left_unrecovered(given_up)
    recovery = package.env_class.recovery("process_batch", args, given_up.actions[0].result)
    replayed = [batch, *({"env": "event_stream", "tool": t, "args": a} for t, a in recovery)]
    assert not left_unrecovered(run_calls(packages, {"event_stream": initial}, files, [replayed]))
