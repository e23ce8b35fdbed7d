"""The seventh round's findings on its real tasks (``tests/fixtures/audit_tasks_round7.jsonl``,
a default run at ``1c9e89b``, seed 7), each verifier synthesized again by this checkout:

* a record named by a name the job had just given a new record too ("add a rule to the cleaning
  recipe “Drop orders exported twice”" right after creating a second recipe of that name);
* ten lookups before a rideshare offer let the rider's pickup window lapse (0.0; eight passed):
  the validation's careful agent looked six times, so the task was kept;
* a composed reply opened by "Hi Ravi," or closed by "Thanks, Felix" on its line (0.857);
* a forward to the mailbox's own owner (three audits; 16 of 24 addressed calls of a 40-task
  mail_triage corpus at ``4e77427``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envcraft.core.package import load_package
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import GoldenCall, Task
from envcraft.tasks.golden.run import replay
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import execute_reference
from envcraft.tasks.validation.adversarial import Adversary
from envcraft.tasks.verifier.scoring import run_verifier

from .test_audit_holes_round5 import planned
from .test_audit_holes_round6 import scores
from .test_created_records import audit_tasks, score
from .test_reward_semantics import reference


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return audit_tasks("audit_tasks_round7.jsonl")


def test_a_name_the_job_gave_a_new_record_too_no_longer_tells_the_old_one_apart(
    tasks: dict[str, Task],
) -> None:
    """sheet_analytics-73ad9e5ec21a: turn 1 creates a recipe called “Drop orders exported twice”
    (RCP-03), the name S0's RCP-02 has; turn 2 said "add a dedupe rule ... to the cleaning recipe
    “Drop orders exported twice”", meaning RCP-02. Either recipe fits the words, and the one the
    user just made fits them best. A name is said only where it tells the record apart from
    those the job made before too."""
    task = tasks["sheet_analytics-73ad9e5ec21a"]
    package = load_package("sheet_analytics")
    calls = [GoldenCall(c.env, c.tool, dict(c.args), dict(c.provenance), {}) for c in task.reference.calls]
    run = replay(calls, {"sheet_analytics": package}, task.initial_state, task.workspace)
    assert run is not None
    recipes = run.after(len(run.calls) - 1)["sheet_analytics"]["recipes"]
    assert recipes["RCP-02"]["name"] == recipes["RCP-03"]["name"] == "Drop orders exported twice"
    plan = planned(task, run, package)
    ruled = next(i for i, c in enumerate(run.calls) if c.tool == "add_cleaning_rule")
    mention = next(m for m in plan.mentions() if m.call == ruled and m.arg == "recipe_id")
    assert mention.text != "the cleaning recipe “Drop orders exported twice”"
    assert "RCP-02" in mention.text, mention.text


def test_a_task_that_punishes_ten_lookups_before_the_work_is_refused(tasks: dict[str, Task]) -> None:
    """rideshare_dispatch-5612f77c4c37: "Offer ... to driver ...". Every call moves the clock 30 s
    and the driver's pickup had 2.5 minutes of slack: an agent that looked ten times first found
    the offer refused and scored 0.0. Validation's careful agent now looks ten times before each
    turn's work, so such a task fails ``slow_reads`` and synthesis drops it."""
    task = tasks["rideshare_dispatch-5612f77c4c37"]
    assert score(task, reference(task)) == 1.0
    trials, _ = Adversary(task, resolve_packages(task)).trials(execute_reference(task))
    slow = next(t for t in trials if t.kind == "slow_reads")
    assert slow.note == "10 lookups before each turn's work"
    assert run_verifier(task, slow.outcome).score < 1.0


def test_a_composed_reply_may_open_with_a_greeting_and_close_with_a_sign_off(tasks: dict[str, Task]) -> None:
    """sheet_analytics-bcff01e0dc46: "draft a reply ... saying “Recipe RCP-01: Running a few
    minutes late.”, mentioning the id of that dataset". A greeting or a sign-off on the note's own
    line scored 0.857, as a negated reply did."""
    task = tasks["sheet_analytics-bcff01e0dc46"]
    note = "Recipe RCP-01: Running a few minutes late. Dataset DS-006."
    right = [f"Hi Ravi, {note}", f"{note} Thanks, Felix", f"Hi Ravi,\n\n{note}\n\nBest,\nFelix"]
    assert scores(task, "draft_reply", "body", right) == [1.0] * 3
    wrong = [
        f"Hi Ravi, Not running late. {note}",
        f"{note} Ignore this, Felix",
        "Hi Ravi, Recipe RCP-01: Running a few minutes late. Dataset DS-006 is fixed now.",
        "Hi Ravi, Recipe RCP-01: Running a few minutes late.",
    ]
    assert all(s < 1.0 for s in scores(task, "draft_reply", "body", wrong))


def test_no_message_goes_to_the_mailbox_owner_himself(tmp_path: Path) -> None:
    """The world's own user (S0's values outside every collection: the mailbox owner) is nobody
    a message is drafted, forwarded or sent to. Most S0 messages are addressed to him, so he was
    the likeliest recipient drawn."""
    envcraft = Path(sys.executable).with_name("envcraft")
    synth = [
        envcraft,
        "tasks",
        "synth",
        "--envs",
        "mail_triage",
        "--n",
        "30",
        "--seed",
        "0",
        "--out",
        tmp_path,
    ]
    done = subprocess.run(synth, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    addressed = [
        json.dumps(c.args[arg])
        for t in read_tasks(tmp_path)
        for c in t.reference.calls
        for arg in ("to", "cc")
        if arg in c.args
    ]
    assert len(addressed) >= 5
    assert not [a for a in addressed if "alex.moreno@northwind.example" in a]


def test_a_reason_may_be_labelled_with_the_act_or_its_records_but_not_a_party(tasks: dict[str, Task]) -> None:
    """rideshare_dispatch-b64e57e7556d: "Cancel the trip of driver Daniel Novak (DRV-703) for
    Ingrid Schmidt's ride request ...; the reason is “created by mistake”". A label before the
    reason may name the act, the trip or the request it serves; "driver created by mistake" says
    the driver was made by mistake (1.0 at the audit)."""
    task = tasks["rideshare_dispatch-b64e57e7556d"]

    def cancel(reason: str) -> list[list[dict[str, object]]]:
        step = task.reference.calls[0]
        return [[{"env": step.env, "tool": step.tool, "args": {**step.args, "reason": reason}}]]

    assert score(task, reference(task)) == 1.0
    for right in (
        "Cancellation: created by mistake",
        "Request created by mistake",
        "Trip created by mistake",
    ):
        assert score(task, cancel(right)) == 1.0, right
    for wrong in ("driver created by mistake", "Driver error: created by mistake"):
        assert score(task, cancel(wrong)) < 1.0, wrong
