"""How a verifier matches what a run creates: records by what was asked, files by what was asked.

Each case is a real task of a blind play audit (``tests/fixtures/audit_tasks.jsonl``: two tasks
of library environments, one of a built-in one), its verifier synthesized again by this
checkout, and scored on runs a player wrote: right work that scored below 1 before, and the
wrong work next to it that must stay below 1.

* an optional argument nobody asked for (a transfer's ``memo``) is free on the created record.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envcraft.synth.library.store import REPO_LIBRARY, unpacked
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute, execute_reference
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


def verified(task: Task) -> Task:
    """The task with its verifier synthesized from its reference as the data engine does."""
    golden = execute_reference(task)
    asked = task.provenance.get("file_request")
    requests = []
    if asked:
        sources = tuple((item["env"], item["state_path"]) for item in asked["items"])
        requests = [FileRequest(asked["path"], asked["format"], asked["expected"], sources)]
    verifier = synthesize_verifier(
        task.initial_state, task.workspace, golden, task.provenance["distractors"], True, requests
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
