"""How a verifier matches what a run creates: records by what was asked, files by what was asked.

Each case is a real task of a blind play audit (``tests/fixtures/audit_tasks.jsonl``: two tasks
of library environments, one of a built-in one), its verifier synthesized again by this
checkout, and scored on runs a player wrote: right work that scored below 1 before, and the
wrong work next to it that must stay below 1.

* an optional argument nobody asked for (a transfer's ``memo``) is free on the created record;
* a proposal the world let lapse, proposed again: the new trip is the asked one, whatever its id;
* an asked JSON object may repeat facts of the task under keys of its own, not a second answer.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from envcraft.core.package import load_package
from envcraft.synth.library.store import REPO_LIBRARY, unpacked
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.coherence import job_spans, writes
from envcraft.tasks.golden.run import GoldenRun, replay
from envcraft.tasks.graphs.graph import build_tool_graph
from envcraft.tasks.phrasing.intents import ChainView, IntentPlan, plan_intents
from envcraft.tasks.play.execute import execute, execute_reference
from envcraft.tasks.verifier import runtime as vr
from envcraft.tasks.verifier.checks import FileRequest
from envcraft.tasks.verifier.scoring import run_verifier
from envcraft.tasks.verifier.synthesis import synthesize_verifier

AUDIT = Path(__file__).parent.parent / "fixtures" / "audit_tasks.jsonl"
BANK = "banking_trading_transfer"
RIDE = "rideshare_dispatch"
RECEIPTS = "invoice_receipt_processing_receipt"

Turns = list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Task]:
    """The audit's tasks by environment, each with the verifier this checkout synthesizes."""
    root = tmp_path_factory.mktemp("library")
    (root / "envs").mkdir()
    for env in (BANK, RECEIPTS):  # only the two library packages the tasks need
        shutil.copy(REPO_LIBRARY / "envs" / f"{env}.tar.xz", root / "envs")
    paths = {p.name: str(p) for p in unpacked(root, tmp_path_factory.mktemp("cache"))}
    found = {}
    for line in AUDIT.read_text(encoding="utf-8").splitlines():
        task = Task.model_validate(json.loads(line))
        task.provenance["packages"] = {env: paths[env] for env in task.envs if env in paths}
        found[task.envs[0]] = verified(task)
    return found


def audit_tasks(fixture: str) -> dict[str, Task]:
    """A blind audit's real tasks (``tests/fixtures/FIXTURE``, stored without verifiers) by id,
    each with the verifier this checkout synthesizes."""
    path = Path(__file__).parent.parent / "fixtures" / fixture
    tasks = [Task.model_validate(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    return {task.id: verified(task) for task in tasks}


def verified(task: Task) -> Task:
    """The task with its verifier synthesized from its reference as the data engine does."""
    golden = execute_reference(task)
    asked = task.provenance.get("file_request")
    requests = []
    if asked:
        sources = tuple((item["env"], item["state_path"]) for item in asked["items"])
        labels = tuple(item["what"] for item in asked["items"])
        requests = [FileRequest(asked["path"], asked["format"], asked["expected"], sources, labels)]
    said = [turn.user for turn in task.turns]
    verifier = synthesize_verifier(
        task.initial_state, task.workspace, golden, task.provenance["distractors"], True, requests, said
    )
    assert verifier is not None
    task.verifier = verifier
    return task


def score(task: Task, turns: Turns) -> float:
    result = run_verifier(task, execute(task, turns))
    assert result.error is None, result.error
    return result.score


def call(env: str, tool: str, **args: Any) -> dict[str, Any]:
    return {"env": env, "tool": tool, "args": args}


def replayed(task: Task, change: dict[int, dict[str, Any]] | None = None) -> tuple[GoldenRun, list[bool]]:
    """``task``'s reference run again, its calls' arguments updated by ``change`` (per call; a
    changed argument is the user's, one changed to None is left out), with which calls wrote; a
    planned error-recovery step fails again as planned."""
    packages = {env: load_package(env) for env in task.envs}
    failing = {step["call"]: step.get("expected_error") for step in task.provenance.get("steps", [])}
    calls = []
    for i, c in enumerate(task.reference.calls):
        changed = (change or {}).get(i, {})
        args = {**c.args, **changed}
        sources = {**c.provenance, **{name: "user" for name in changed}}
        left = {name for name, value in args.items() if value is None}
        calls.append(
            GoldenCall(
                c.env,
                c.tool,
                {k: v for k, v in args.items() if k not in left},
                {k: v for k, v in sources.items() if k not in left},
                {"error": {"category": failing[i]}} if i in failing else {},
                expected_error=failing.get(i),
            )
        )
    run = replay(calls, packages, task.initial_state, task.workspace)
    assert run is not None
    graphs = {env: build_tool_graph(package) for env, package in packages.items()}
    return run, writes(run, graphs)


def planned(
    task: Task,
    change: dict[int, dict[str, Any]] | None = None,
    pointed: bool = False,
    cited: dict[tuple[str, str], tuple[str, str]] | None = None,
) -> IntentPlan:
    """The intent plan this checkout makes of ``task``'s reference (:func:`replayed` with
    ``change``), split into the task's turns, with the jobs its calls carry out; where
    ``pointed``, the record the task's user points at through a workspace file is pointed at
    again, its stored pointer said as a sentence of its own before the work on it; ``cited``:
    records pointed at by a note elsewhere, ``(env, key) -> (pointer, its sentence)``."""
    run, wrote = replayed(task, change)
    packages = {env: load_package(env) for env in task.envs}
    turns: dict[int, list[int]] = {}
    for i, stored in enumerate(task.reference.calls):
        turns.setdefault(stored.turn, []).append(i)
    fact = task.provenance.get("file_fact") if pointed else None
    pointers = {(fact["env"], fact["value"]): fact["pointer"]} if fact else {}
    leads = {key: f"{pointer}." for key, pointer in pointers.items()}
    for key, (pointer, lead) in (cited or {}).items():
        pointers[key], leads[key] = pointer, lead
    view = ChainView(run.calls, run.initial, run.after, wrote, pointers, leads=leads)
    spans = job_spans(run.calls, wrote, packages)
    return plan_intents(view, [turns[t] for t in sorted(turns)], packages, random.Random(0), jobs=spans)


# -- an optional argument nobody asked for -------------------------------------------------------


def transfer(amount: int, to: str = "ACC-1002", **extra: Any) -> dict[str, Any]:
    return call(
        BANK,
        "transfer_between_accounts",
        from_account_id="ACC-1001",
        to_account_id=to,
        amount_cents=amount,
        **extra,
    )


def test_a_memo_nobody_asked_for_is_free_on_the_transfers_made(tasks: dict[str, Task]) -> None:
    """ "Move 1180.00 ... to the Rainy Day Savings account", then 250.00: an agent that labels
    each transfer with a memo did the asked transfers (0.417 before: the created transfers and
    the guard that every new one is asked for pinned ``memo: ""``, the default the reference
    left alone)."""
    task = tasks[BANK]
    assert score(task, [[transfer(118000)], [transfer(25000)]]) == 1.0
    memo = [[transfer(118000, memo="Urgent move to savings")], [transfer(25000, memo="Top-up to savings")]]
    assert score(task, memo) == 1.0


@pytest.mark.parametrize(
    "turns",
    [
        [[transfer(11800, memo="savings")], [transfer(25000, memo="savings")]],  # a wrong amount
        [
            [transfer(118000, to="ACC-1005", memo="savings")],
            [transfer(25000, to="ACC-1005")],
        ],  # wrong account
        [[transfer(118000, memo="savings")], [transfer(25000), transfer(25000, memo="again")]],  # one extra
        [[transfer(118000)], [transfer(25000, execute_at="2026-03-17T09:00:00Z")]],  # scheduled, not made
    ],
    ids=["amount", "account", "extra", "scheduled"],
)
def test_a_wrong_transfer_with_a_memo_is_still_wrong(tasks: dict[str, Task], turns: Turns) -> None:
    assert score(tasks[BANK], turns) < 1.0


# -- a proposal the world let lapse ------------------------------------------------------------------


def _reads() -> list[dict[str, Any]]:
    """Lookups enough for the clock to pass the proposal's hold."""
    return [
        call(RIDE, "get_request", request_id="REQ-9898"),
        call(RIDE, "get_driver", driver_id="DRV-568"),
        call(RIDE, "score_match", request_id="REQ-9898", driver_id="DRV-568"),
        call(RIDE, "list_available_drivers", zone="Z-STN", request_id="REQ-9898"),
    ] * 2


PROPOSE = call(RIDE, "propose_match", request_id="REQ-9898", driver_id="DRV-568")


def test_a_lapsed_proposal_proposed_again_is_the_asked_trip(tasks: dict[str, Task]) -> None:
    """Turn 2 asks to confirm the trip of turn 1 and start it; the agent's lookups let the
    proposal lapse ("propose again", the refusal says), so it proposes again and confirms and
    starts the new trip: the asked work, under the id the world gave it (0.375 before: the
    driver's ``active_trip_id`` and the request's ``trip_id`` were pinned to TRP-40224, and the
    lapsed trip counted as an extra one)."""
    task = tasks[RIDE]
    redo = [
        *_reads(),
        call(RIDE, "confirm_match", trip_id="TRP-40224"),
        PROPOSE,
        call(RIDE, "confirm_match", trip_id="TRP-40225"),
        call(RIDE, "start_trip", trip_id="TRP-40225"),
    ]
    outcome = execute(task, [[PROPOSE], redo])
    assert outcome.final[RIDE]["trips"]["TRP-40224"]["status"] == "lapsed"
    assert run_verifier(task, outcome).score == 1.0


@pytest.mark.parametrize(
    "turn2",
    [
        [  # the lapsed trip confirmed and started: both refused, nothing started
            *_reads(),
            call(RIDE, "confirm_match", trip_id="TRP-40224"),
            call(RIDE, "start_trip", trip_id="TRP-40224"),
        ],
        [  # proposed again and confirmed, never started
            *_reads(),
            call(RIDE, "confirm_match", trip_id="TRP-40224"),
            PROPOSE,
            call(RIDE, "confirm_match", trip_id="TRP-40225"),
        ],
    ],
    ids=["lapsed-confirmed", "never-started"],
)
def test_a_lapse_does_not_excuse_work_left_undone(
    tasks: dict[str, Task], turn2: list[dict[str, Any]]
) -> None:
    assert score(tasks[RIDE], [[PROPOSE], turn2]) < 1.0


# -- an asked JSON object with keys of the agent's own -----------------------------------------------


def summary(content: dict[str, Any] | str) -> Turns:
    text = content if isinstance(content, str) else json.dumps(content, indent=2) + "\n"
    return [
        [
            call(RECEIPTS, "begin_receipt", po_id="PO-7004", delivery_note="deliveries/DN-4414.txt"),
            call(RECEIPTS, "write_file", path="handover/summary.json", content=text),
        ]
    ]


def test_an_asked_json_object_may_repeat_facts_of_the_task(tasks: dict[str, Task]) -> None:
    """ "Save a JSON object in handover/summary.json with "new_goods_receipt" set to the id of the
    new goods receipt": the receipt's purchase order and delivery note beside it are facts of
    the task, not a wrong answer (0.5 before: the keys had to be exactly the asked ones)."""
    task = tasks[RECEIPTS]
    assert score(task, summary({"new_goods_receipt": "GR-0006"})) == 1.0
    facts = {
        "new_goods_receipt": "GR-0006",
        "purchase_order": "PO-7004",
        "delivery_note": "deliveries/DN-4414.txt",
    }
    assert score(task, summary(facts)) == 1.0


@pytest.mark.parametrize(
    "content",
    [
        {"new_goods_receipt": "GR-0002"},  # the wrong receipt
        {"new_goods_receipt": "GR-0006", "corrected_receipt": "GR-0005"},  # a second answer
        {"new_goods_receipt": "GR-0006", "receipts": ["GR-0006", "GR-0005"]},  # a shotgun
        {"new_goods_receipt": "GR-0006", "quantity_received": 987654},  # a claim no record holds
        {"new_goods_receipt": "GR-0006", "note": "ignore this, GR-0006 was not created"},
        {"new_goods_receipt": "GR-0006", "status": "posted"},  # the new receipt is a draft
        '{\n  "new_goods_receipt": "GR-0006"\n}\n}\n',  # a line written twice: no JSON
    ],
    ids=["wrong", "second-id", "shotgun", "unfounded", "retracted", "contradicted", "extra-line"],
)
def test_an_extra_key_cannot_carry_another_answer(tasks: dict[str, Task], content: Any) -> None:
    assert score(tasks[RECEIPTS], summary(content)) < 1.0


def test_an_extra_key_agrees_with_the_asked_record() -> None:
    """The rule itself: what the asked record says passes; a field of the asked record with
    another value than the record's, or another id of the asked kind, fail. A JSON file check
    without ``extra_keys`` (a file the reference wrote, an env's render) still holds exactly its
    keys."""
    receipt = [{"receipt_id": "GR-0006", "po_id": "PO-7004", "status": "draft"}]
    asked = {"new_goods_receipt": "GR-0006"}
    extra = {**asked, "purchase_order": "PO-7004", "Status": "draft"}
    assert vr.object_matches(extra, asked, lambda: receipt)
    assert not vr.object_matches({**asked, "status": "posted"}, asked, lambda: receipt)
    assert not vr.object_matches({**asked, "also": "GR-0007"}, asked, lambda: [])
    assert not vr.content_matches(json.dumps(extra), "json", asked)
