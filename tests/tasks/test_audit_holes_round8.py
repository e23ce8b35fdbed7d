"""The eighth round's findings on its real tasks (``tests/fixtures/audit_tasks_round8.jsonl``,
a default run at ``817cd08``, seed 8), each verifier synthesized again by this checkout:

* a reason with an aside of claims the run's records hold ("(training succeeded)", "- retry and
  publish model") paid 1.0: an aside could hold any word of the records, statuses included;
* eleven lookups before a cancel let another run's backup job finish at the cancel's sweep (0.5);
* a health check of every service (never reading the log that names the one asked) paid 1.0:
  a log collection had no guard, though the asked work is an entry of it;
* a note naming whom a draft is to ("See the new draft MSG-0010 to Customer Operations.") scored
  0.833: the draft's addressee lives in its ``.eml``, which the note's context never read, and
  "sent" must not be context for a draft;
* an asked section naming the new event with its true offset, partition or amount ("EVT-2c465fe7
  (offset 7, partition 0)") scored 0.667: only text fields of the record could label a value;
* ``--explain`` said "no such line" of a timeline note and "other ids" of a report whose words
  broke the reading: it now names the words.
"""

from __future__ import annotations

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.verifier.explain import explain_trajectory

from .test_created_records import audit_tasks, call, score
from .test_reward_semantics import reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round8.jsonl")


def _cancel(reason: str) -> list[list[dict[str, object]]]:
    return [[call("job_scheduler", "cancel_run", run_id="RUN-7388", reason=reason)]]


def test_an_aside_names_the_record_and_claims_nothing_about_it(tasks: dict[str, Task]) -> None:
    """job_scheduler-76a7913d64b1: "Cancel RUN-7388; the reason is “requested by the owner”".
    An aside may name the run by its id or its workflow's name, not say what its jobs did."""
    task = tasks["job_scheduler-76a7913d64b1"]
    assert score(task, reference(task)) == 1.0
    for right in (
        "requested by the owner (RUN-7388)",
        "requested by the owner (Churn model training)",
        "Cancelled: requested by the owner",
        "requested by the owner (per Ximena)",
    ):
        assert score(task, _cancel(right)) == 1.0, right
    for wrong in (
        "requested by the owner (training succeeded)",
        "requested by the owner - retry and publish model",
    ):
        assert score(task, _cancel(wrong)) < 1.0, wrong


def test_work_after_eleven_lookups_is_paid_though_another_runs_job_finished_meanwhile(
    tasks: dict[str, Task],
) -> None:
    """job_scheduler-6ec3fee56b04: eleven ``list_runs`` then the asked cancel; the protected
    backup run's ``snapshot_db`` was due at 07:50 and the cancel's sweep finished it (0.5)."""
    task = tasks["job_scheduler-6ec3fee56b04"]
    (asked,) = reference(task)[0][-1:]
    looks = [call("job_scheduler", "list_runs") for _ in range(11)]
    assert score(task, [[*looks, asked]]) == 1.0
    assert (
        score(task, [[*looks, asked, call("job_scheduler", "cancel_run", run_id="RUN-7620", reason="x")]])
        < 1.0
    )


def test_a_health_check_of_every_service_is_not_the_one_the_log_names(tasks: dict[str, Task]) -> None:
    """infra_recovery-10ce78a36c08: "Run a health check of the service that the escalated entry
    in ops-logs/alerts.log names" (payments-gateway). The checks are a log of the world, so no
    guard read them; a check of another service is now a check nobody asked for. The same check
    run twice is still the asked one."""
    task = tasks["infra_recovery-10ce78a36c08"]
    check = [
        call("infra_recovery", "run_health_check", service_id=s) for s in ("payments-gateway", "search-api")
    ]
    assert score(task, reference(task)) == 1.0
    assert score(task, [[*reference(task)[0], check[0]]]) == 1.0
    assert score(task, [[check[1], check[0]]]) < 1.0
    assert score(task, [[*reference(task)[0], check[1]]]) < 1.0


def _noting(task: Task, note: str) -> list[list[dict[str, object]]]:
    turns = reference(task)
    for step in turns[1]:
        if step["tool"] == "append_ops_note":
            step["args"] = {**step["args"], "note": note}
    return turns


def test_a_note_may_say_whom_the_draft_is_to_but_not_that_it_went_out(tasks: dict[str, Task]) -> None:
    """mail_triage-aafa17464d1a: "add the note “Follow up next week.”, mentioning the message you
    created by its id" (a draft to Customer Operations <cs-team@northwind.example>)."""
    task = tasks["mail_triage-aafa17464d1a"]
    assert score(task, reference(task)) == 1.0
    for right in (
        "Follow up next week. See the new draft MSG-0010 to Customer Operations.",
        "Follow up next week (draft MSG-0010 to cs-team@northwind.example).",
    ):
        assert score(task, _noting(task, right)) == 1.0, right
    for wrong in (
        "Follow up next week. See draft MSG-0010 sent to Customer Operations.",
        "Follow up next week. See the new draft MSG-0010 to Finance.",
    ):
        assert score(task, _noting(task, wrong)) < 1.0, wrong


def test_an_asked_section_may_give_the_records_numbers_with_their_names(tasks: dict[str, Task]) -> None:
    """event_stream-0301708c6f68: "write notes/summary.md with a “## Result” section that gives
    the id of the new aggregated event"."""
    task = tasks["event_stream-0301708c6f68"]
    turns = reference(task)
    *work, write = turns[0]

    def summary(content: str) -> list[list[dict[str, object]]]:
        return [[*work, {**write, "args": {"path": "notes/summary.md", "content": content}}]]

    assert score(task, turns) == 1.0
    assert score(task, summary("## Result\n\nEVT-2c465fe7 (offset 7, partition 0)\n")) == 1.0
    assert score(task, summary("## Result\n\nEVT-2c465fe7 (amount 1335 cents)\n")) == 1.0
    assert score(task, summary("## Result\n\nEVT-2c465fe7 (offset 7, replayed)\n")) < 1.0
    assert score(task, summary("## Result\n\nEVT-2c465fe7 (offset 9)\n")) < 1.0


def test_explain_names_the_words_that_broke_a_note_or_a_report(tasks: dict[str, Task]) -> None:
    """mail_triage-aafa17464d1a: a note "...; draft MSG-0010 asks Customer Operations for an
    update." and a report with a "## Notes" section the user did not ask for."""
    task = tasks["mail_triage-aafa17464d1a"]
    note = _noting(task, "Follow up next week; draft MSG-0010 asks Customer Operations for an update.")
    report = reference(task)
    for step in report[1]:
        if step["tool"] == "write_file":
            result = "## Result\n- new_message: MSG-0010\n- new_conversation: THR-010\n"
            content = result + "\n## Notes\nThe note was approved.\n"  # ("added" is true: round 15)
            step["args"] = {"path": "reports/status.md", "content": content}
    told = []
    for turns in (note, report):
        result, why = explain_trajectory(task, turns)
        assert result.score < 1.0
        failed = [c for c in why.to_json()["checks"] if not c["passed"]]
        told.append(" ".join(str(c.get("reading", "")) + str(c.get("had", "")) for c in failed))
    assert "'asks'" in told[0]
    assert "'approved'" in told[1] and "other ids" not in told[1]
