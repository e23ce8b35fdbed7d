"""Synthesized verifiers: golden 1, do-nothing 0, wrong runs below 1, other correct runs still 1."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute
from envcraft.tasks.play.outcome import noop_outcome
from envcraft.tasks.verifier.scoring import build_context, run_verifier, score_contexts
from envcraft.tasks.verifier.synthesis import synthesize_verifier

from .verify_support import DESK_ENV, REPORTS_ENV, make_task, ticket, write_package


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("pkgs")
    return {
        "desk": str(write_package(root / "desk", "desk", "tool", DESK_ENV)),
        "reports": str(write_package(root / "reports", "reports", "claw", REPORTS_ENV)),
    }


def call(env: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"env": env, "tool": tool, "args": args}


def desk_initial() -> dict[str, dict[str, Any]]:
    tickets = [
        ticket("T-000001", "VPN down"),
        ticket("T-000002", "Old request"),
        ticket("T-000003", "Laptop"),
    ]
    return {"desk": {"tickets": {t["ticket_id"]: t for t in tickets}}}


def synthesized(task: Task, golden: Any, protected: list[dict[str, str]] | None = None) -> Task:
    verifier = synthesize_verifier(task.initial_state, task.workspace, golden, protected or [])
    assert verifier is not None
    task.verifier = verifier
    return task


def desk_task(packages: dict[str, str]) -> tuple[Task, Any]:
    """Create a ticket and assign it (rng id, clock times), close one S0 ticket, delete another."""
    probe, _ = make_task([[]], initial=desk_initial(), packages={"desk": packages["desk"]})
    first = execute(probe, [[call("desk", "create_ticket", title="Printer jam", priority="high")]])
    new_id = first.actions[0].result["ticket_id"]
    turns = [
        [
            call("desk", "create_ticket", title="Printer jam", priority="high"),
            {
                **call("desk", "assign", ticket_id=new_id, assignee="maria"),
                "provenance": {"ticket_id": "derived:0.ticket_id"},
            },
        ],
        [
            call("desk", "close_ticket", ticket_id="T-000001"),
            call("desk", "delete_ticket", ticket_id="T-000002"),
        ],
    ]
    task, golden = make_task(turns, initial=desk_initial(), packages={"desk": packages["desk"]})
    return synthesized(task, golden, [{"env": "desk", "path": "/tickets/T-000003"}]), golden


def score(task: Task, turns: list[list[dict[str, Any]]]) -> float:
    result = run_verifier(task, execute(task, turns))
    assert result.error is None, result.error
    return result.score


def test_golden_scores_one_and_doing_nothing_scores_zero(packages: dict[str, str]) -> None:
    task, golden = desk_task(packages)
    scores = score_contexts(
        task.verifier.source, [build_context(golden), build_context(noop_outcome(golden))]
    )
    assert [s.score for s in scores] == [1.0, 0.0]
    assert all(v == 1.0 for v in scores[0].components.values())
    on_time = [c for c in task.verifier.checks if c["name"].endswith("(on time)")]
    # turn 1's new ticket is still there at the end: checked at the end of turn 1 as a guard (the
    # ticket, and its dictated title: a goal of its own)
    assert [(c["role"], c["kind"], c["path"], c["turn"]) for c in on_time] == [
        ("guard", "created_in", "/tickets", 0)
    ] * 2
    assert "with the title" in on_time[1]["name"]
    guards = {
        (c["kind"], c["path"]): c
        for c in task.verifier.checks
        if c["role"] == "guard" and c not in on_time and "turn" not in c
    }
    # the distractor, the fields of the closed ticket the task did not ask to change, no ticket
    # created beyond the one asked for and none but it (one subject)
    # (every S0 ticket is named here, so no "other tickets" guard is left)
    assert set(guards) == {
        ("unchanged", "/tickets/T-000003"),
        ("unchanged", "/tickets/T-000001"),
        ("no_extra", "/tickets"),
        ("only_asked", "/tickets"),
    }
    assert guards[("no_extra", "/tickets")]["subject"] == guards[("only_asked", "/tickets")]["subject"]
    assert guards[("unchanged", "/tickets/T-000001")]["ignore"] == ["/status", "/updated_at"]
    assert guards[("no_extra", "/tickets")]["count"] == 1
    # at the end of turn 1, turn 2's tickets are still as they were: nothing done early
    early = {
        (c["kind"], c["path"]): c for c in task.verifier.checks if c.get("turn") == 0 and c not in on_time
    }
    assert early[("others_unchanged", "/tickets")]["except"] == ["T-000003"]  # the distractor: its own guard
    assert early[("no_extra", "/tickets")]["count"] == 1


def test_a_later_turns_work_done_early_is_not_paid(packages: dict[str, str]) -> None:
    """Turn 2's close and delete done already in turn 1 end where the golden run ends, yet the
    user had not asked for them then (this scored 1.0 before turn windows had guards)."""
    task, _ = desk_task(packages)
    as_asked = [[call(c.env, c.tool, **c.args) for c in task.reference.calls if c.turn == t] for t in (0, 1)]
    early = [[*as_asked[0], *as_asked[1]], []]
    assert score(task, as_asked) == 1.0
    assert score(task, early) <= 0.5


def test_checks_literal_in_source_is_exactly_the_declared_checks(packages: dict[str, str]) -> None:
    task, _ = desk_task(packages)
    tree = ast.parse(task.verifier.source)
    (embedded,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CHECKS" for t in node.targets)
    ]
    assert isinstance(embedded, ast.Call) and isinstance(embedded.args[0], ast.Constant)
    assert json.loads(embedded.args[0].value) == task.verifier.checks
    imported = {a.name for node in tree.body if isinstance(node, ast.Import) for a in node.names}
    assert imported <= {"csv", "functools", "io", "itertools", "json", "math", "re"}  # stdlib only
    kinds = {c["kind"] for c in task.verifier.checks}
    assert {"created_in", "value", "absent", "unchanged"} <= kinds


def test_another_correct_run_with_extra_reads_and_a_failed_call_still_scores_one(
    packages: dict[str, str],
) -> None:
    """Extra calls move the clock and the rng: the new id and times differ, the work does not."""
    task, _ = desk_task(packages)
    prefix = [
        call("desk", "list_tickets"),
        call("desk", "no_such_tool"),
        call("desk", "assign", ticket_id="T-9"),
    ]
    created = execute(task, [[*prefix, call("desk", "create_ticket", title="Printer jam", priority="high")]])
    new_id = created.actions[-1].result["ticket_id"]
    turns = [
        [*prefix, call("desk", "create_ticket", title="Printer jam", priority="high")],
        [call("desk", "list_tickets"), call("desk", "delete_ticket", ticket_id="T-000002")],
    ]
    turns[0].append(call("desk", "assign", ticket_id=new_id, assignee="maria"))
    turns[1].insert(1, call("desk", "close_ticket", ticket_id="T-000001"))
    assert score(task, turns) == 1.0


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda t: t[0].__setitem__(0, call("desk", "create_ticket", title="Printer jam", priority="low")),
            "wrong value",
        ),
        (lambda t: t[1].pop(), "missing deletion"),
        (lambda t: t[1].append(call("desk", "close_ticket", ticket_id="T-000003")), "distractor touched"),
        (lambda t: t[1].append(call("desk", "assign", ticket_id="T-000001", assignee="bob")), "side effect"),
    ],
)
def test_wrong_runs_score_below_one(packages: dict[str, str], change: Any, reason: str) -> None:
    task, golden = desk_task(packages)
    turns = [[dict(c) for c in turn] for turn in golden.turn_calls()]
    change(turns)
    assert score(task, turns) < 1.0, reason


def test_skipping_the_first_turn_fails_the_turn_check_even_if_redone_later(packages: dict[str, str]) -> None:
    """A value a later turn overwrites is checked on the turn that had to set it."""
    turns = [
        [call("counter", "increment", name="a", by=2)],
        [call("counter", "increment", name="a", by=3)],
    ]
    task, golden = make_task(turns, initial={"counter": {"counters": {}}})
    synthesized(task, golden)
    assert any(c.get("turn") == 0 for c in task.verifier.checks)
    assert score(task, turns) == 1.0
    late = [[], [call("counter", "increment", name="a", by=2), call("counter", "increment", name="a", by=3)]]
    assert score(task, late) < 1.0


def reports_task(packages: dict[str, str]) -> tuple[Task, Any]:
    files = {"old.txt": "stale\n", "README.md": "# Workspace\n", "config.json": '{"region": "west"}'}
    turns = [
        [
            call("reports", "export_sales", region="north"),
            call("reports", "archive", path="old.txt"),
            call("reports", "edit_file", path="config.json", old="west", new="north"),
        ]
    ]
    task, golden = make_task(
        turns,
        initial={"reports": {}},
        workspace=files,
        packages={"reports": packages["reports"]},
        kind="claw",
    )
    return synthesized(task, golden), golden


def test_file_checks_cover_created_changed_and_deleted_files(packages: dict[str, str]) -> None:
    task, golden = reports_task(packages)
    by_path = {c.get("path"): c for c in task.verifier.checks if c["kind"].startswith("file")}
    assert by_path["out/sales.csv"]["format"] == "csv"
    assert by_path["out/summary.json"]["format"] == "json"
    assert by_path["out/notes.txt"]["format"] == "lines"  # its stamp line moves with the clock
    assert by_path["config.json"]["expected"] == {"region": "north"}
    assert by_path["old.txt"]["kind"] == "file_absent"
    guard = next(c for c in task.verifier.checks if c["kind"] == "files_unchanged")
    assert guard["paths"] == ["README.md"]
    scores = score_contexts(
        task.verifier.source, [build_context(golden), build_context(noop_outcome(golden))]
    )
    assert [s.score for s in scores] == [1.0, 0.0]


def test_files_written_differently_but_equivalently_still_score_one(packages: dict[str, str]) -> None:
    """Reordered CSV rows, re-indented JSON, trailing spaces and a later clock are all fine."""
    task, _ = reports_task(packages)
    stamp = "2026-02-02T10:00:00+00:00"
    csv_text = f"region, amount ,at\r\nnorth,80.0,{stamp}\r\nnorth,120,{stamp}\r\n"
    summary = json.dumps({"total": 200, "generated_at": stamp, "region": "north"}, indent=4)
    turns = [
        [
            call("reports", "read_file", path="README.md"),
            call("reports", "export_sales", region="north"),
            call("reports", "write_file", path="out/sales.csv", content=csv_text),
            call("reports", "write_file", path="out/summary.json", content=summary),
            call(
                "reports",
                "write_file",
                path="out/notes.txt",
                content=f"Report for north   \nGenerated {stamp}\n\n",
            ),
            call("reports", "archive", path="old.txt"),
            call("reports", "write_file", path="config.json", content='{\n  "region": "north"\n}\n'),
        ]
    ]
    assert score(task, turns) == 1.0


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("out/sales.csv", "region,amount,at\nnorth,120,x\nnorth,81,x\n"),
        ("out/summary.json", '{"region": "north", "total": 201, "generated_at": "x"}'),
        ("out/notes.txt", "Report for south\nGenerated x\n"),
        ("README.md", "# Workspace (edited)\n"),
    ],
)
def test_wrong_file_content_scores_below_one(packages: dict[str, str], path: str, content: str) -> None:
    task, golden = reports_task(packages)
    turns = golden.turn_calls()
    turns[0].append(call("reports", "write_file", path=path, content=content))
    assert score(task, turns) < 1.0


def test_cross_environment_task_shares_one_workspace(packages: dict[str, str]) -> None:
    both = {"desk": packages["desk"], "reports": packages["reports"]}
    turns = [
        [call("reports", "export_sales", region="east"), call("desk", "close_ticket", ticket_id="T-000001")]
    ]
    initial = {**desk_initial(), "reports": {}}
    task, golden = make_task(turns, initial=initial, packages=both, kind="claw")
    synthesized(task, golden)
    assert (
        "out/sales.csv" in golden.files and golden.final["desk"]["tickets"]["T-000001"]["status"] == "closed"
    )
    assert score(task, turns) == 1.0
    assert score(task, [turns[0][:1]]) < 1.0


def test_a_run_that_changes_nothing_is_not_a_task(packages: dict[str, str]) -> None:
    task, golden = make_task(
        [[call("desk", "list_tickets")]], initial=desk_initial(), packages={"desk": packages["desk"]}
    )
    assert synthesize_verifier(task.initial_state, task.workspace, golden, []) is None


def test_a_golden_run_from_another_start_is_refused(packages: dict[str, str]) -> None:
    _, golden = desk_task(packages)
    other = desk_initial()
    other["desk"]["tickets"]["T-000001"]["title"] = "Something else"
    with pytest.raises(ValueError, match="did not start from this S0"):
        synthesize_verifier(other, {}, golden, [])


# -- found by an agent playing the tasks: answers that list every candidate, work done turns late --
def test_a_report_that_lists_every_candidate_id_is_no_answer() -> None:
    from envcraft.tasks.verifier import runtime as vr

    spec = {"prefixes": ["rcp-"], "allowed": ["RCP-01", "RCP-03"]}
    section = {"result": ["RCP-03"]}
    assert vr.only_ids("## Result\nThe new recipe is RCP-03.\n", "markdown", section, spec)
    assert vr.only_ids(
        "## Result\nRCP-03, made next to RCP-01.\n## Notes\nsee RCP-02\n", "markdown", section, spec
    )
    assert not vr.only_ids("## Result\nRCP-01 RCP-02 RCP-03 RCP-761\n", "markdown", section, spec)
    table = {"header": ["item", "value"], "rows": [["new_incident", "INC-2042"]], "exact": False}
    incidents = {"prefixes": ["inc-"], "allowed": ["INC-2042"]}
    assert vr.only_ids("item,value\nnew_incident,INC-2042\nowner,ana\n", "csv", table, incidents)
    shotgun = "item,value\nnew_incident,INC-2041\nnew_incident,INC-2042\nnew_incident,INC-2043\n"
    assert not vr.only_ids(shotgun, "csv", table, incidents)
    assert not vr.only_ids("item,value\nnew_incident,INC-2042\nold,INC-2043\n", "csv", table, incidents)


def test_work_asked_in_one_turn_and_done_in_the_last_is_not_paid_in_full() -> None:
    """Every multi-turn task of a sample: the reference scores 1; the same calls all made in the
    last turn score below 1 wherever a turn's work is still visible at the end (on-time guards)."""
    from envcraft.tasks.corpus.compose import SynthConfig, load_library, synthesize_shard
    from envcraft.tasks.verifier.scoring import score_trajectory

    library = load_library(["notes_desk", "infra_recovery"])
    checked = 0
    for seed in range(5, 13):  # up to the first seed whose sample has an on-time guard
        tasks = [
            t
            for env in ("notes_desk", "infra_recovery")
            for t in synthesize_shard(library, env, 0, 6, SynthConfig(seed=seed, p_cross=0.0)).tasks
            if len(t.turns) > 1
        ]
        for task in tasks:
            calls = [c.model_dump(include={"env", "tool", "args", "turn"}) for c in task.reference.calls]
            by_turn = [[c for c in calls if c["turn"] == i] for i in range(len(task.turns))]
            assert score_trajectory(task, by_turn).score == 1.0, task.id
            if any(c["role"] == "guard" and c["name"].endswith("(on time)") for c in task.verifier.checks):
                late = [[] for _ in task.turns[:-1]] + [calls]
                assert score_trajectory(task, late).score <= 0.5, task.id
                checked += 1
        if checked:
            break
    assert checked >= 1
