"""Proof that a task is solvable and that its reward discriminates.

``validate``: the golden run scores exactly 1, a do-nothing run scores below 1, every
mutation of the golden outcome that changes something a check pins scores below 1 (one
change dropped, one changed value altered, a distractor touched, an unrequested field of an
edited record changed, an output file deleted or corrupted, one user turn skipped), and the
scripted agents of :mod:`envcraft.tasks.validation.adversarial` score as they must (wrong ones below 1,
right ones exactly 1). Mutations (:mod:`envcraft.tasks.validation.mutations`) only show that a
verifier sees changes of its own golden run; the agents play the task for real, which is what
catches a verifier that pays for wrong work or punishes harmless extra work.

``replay_task``: the golden calls, re-run in fresh sessions, reach the recorded final hash
and score 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from envcraft.tasks.format.model import Task
from envcraft.tasks.play.episode import resolve_packages
from envcraft.tasks.play.execute import (
    execute_reference,
    shifted_replay,
)
from envcraft.tasks.play.outcome import ExecutionError, Outcome, noop_outcome, outcome_hash
from envcraft.tasks.validation.adversarial import Adversary, Trial
from envcraft.tasks.validation.mutations import Ctx, Mutator
from envcraft.tasks.verifier.scoring import build_context, run_verifier, score_contexts

KILLED_BELOW = 1.0 - 1e-9


@dataclass
class MutationResult:
    kind: str
    name: str
    score: float

    @property
    def killed(self) -> bool:
        return self.score < KILLED_BELOW


@dataclass
class ValidationReport:
    """Everything validation learned about one task; :meth:`quality` goes into ``task.quality``."""

    task_id: str
    golden_score: float = 0.0
    noop_score: float = 1.0
    hash_ok: bool = False
    mutations: list[MutationResult] = field(default_factory=list)
    loose: int = 0
    errors: list[str] = field(default_factory=list)
    trials: list[tuple[Trial, float]] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)

    @property
    def killed(self) -> int:
        return sum(m.killed for m in self.mutations)

    @property
    def kill_rate(self) -> float:
        return self.killed / len(self.mutations) if self.mutations else 1.0

    @property
    def survivors(self) -> list[str]:
        return [m.name for m in self.mutations if not m.killed]

    @property
    def failed_policies(self) -> list[str]:
        """Adversarial policies whose agent did not score as it must (see :mod:`adversarial`)."""
        return sorted({trial.kind for trial, score in self.trials if not trial.passes(score)})

    @property
    def valid(self) -> bool:
        return (
            not self.errors
            and self.hash_ok
            and self.golden_score >= 1.0
            and self.noop_score < KILLED_BELOW
            and not self.survivors
            and not self.failed_policies
        )

    def adversarial(self) -> dict[str, Any]:
        """Per policy: what it must score, what its runs scored, and whether all came out right."""
        found: dict[str, Any] = {}
        for trial, score in self.trials:
            entry = found.setdefault(
                trial.kind, {"expect": trial.expect, "scores": [], "notes": [], "pass": True}
            )
            entry["scores"].append(round(score, 4))
            entry["notes"].append(trial.note)
            entry["pass"] = entry["pass"] and trial.passes(score)
        for kind in self.not_applicable:
            found.setdefault(kind, {"applicable": False})
        return found

    def quality(self) -> dict[str, Any]:
        by_kind: dict[str, list[int]] = {}
        for m in self.mutations:
            counts = by_kind.setdefault(m.kind, [0, 0])
            counts[0] += m.killed
            counts[1] += 1
        return {
            "valid": self.valid,
            "golden_score": self.golden_score,
            "noop_score": self.noop_score,
            "replay_hash_ok": self.hash_ok,
            "mutations_total": len(self.mutations),
            "mutations_killed": self.killed,
            "kill_rate": self.kill_rate,
            "mutations_by_kind": {k: {"killed": v[0], "total": v[1]} for k, v in sorted(by_kind.items())},
            "survivors": self.survivors,
            "loose_values": self.loose,
            "validation_errors": self.errors,
            "adversarial": self.adversarial(),
        }


def validate(
    task: Task, golden: Outcome | None = None, *, record: bool = True, adversarial: bool = True
) -> ValidationReport:
    """Validate ``task`` (golden outcome re-executed unless given): golden, do-nothing, mutations of
    the golden outcome and, with ``adversarial``, the scripted agents; results go into ``task.quality``."""
    report = ValidationReport(task.id)
    try:
        run = golden if golden is not None else execute_reference(task)
        packages = resolve_packages(task)
    except ExecutionError as exc:
        report.errors.append(str(exc))
        return _record(task, report, record)
    report.hash_ok = outcome_hash(run) == task.reference.final_hash
    if not report.hash_ok:
        report.errors.append("golden run does not reach the recorded final hash")
    mutations = Mutator(task, run, shifted_replay(run))
    generated = list(mutations.all())
    report.loose = mutations.loose
    trials: list[Trial] = []
    if adversarial:
        trials, report.not_applicable = Adversary(task, packages).trials(run)
    contexts = [
        build_context(run),
        build_context(noop_outcome(run)),
        *(ctx for _, _, ctx in generated),
        *(build_context(t.outcome) for t in trials),
    ]
    for ctx in contexts[1:]:  # every run starts from S0: send it once (the payload shares by identity)
        ctx["initial"], ctx["initial_files"] = contexts[0]["initial"], contexts[0]["initial_files"]
    _share_equal_snapshots(contexts)
    scores = score_contexts(task.verifier.source, contexts)
    report.golden_score, report.noop_score = scores[0].score, scores[1].score
    if scores[0].error:
        report.errors.append(f"golden run: {scores[0].error}")
    report.mutations = [
        MutationResult(kind, name, score.score)
        for (kind, name, _), score in zip(generated, scores[2 : 2 + len(generated)], strict=True)
    ]
    report.trials = [(t, s.score) for t, s in zip(trials, scores[2 + len(generated) :], strict=True)]
    return _record(task, report, record)


def _share_equal_snapshots(contexts: list[Ctx]) -> None:
    """Make equal states and workspaces in ``contexts`` one object, so the verifier payload
    (which sends a container shared by identity once) carries each distinct snapshot once: most
    runs end most environments, and most turns, exactly as the golden run does. Only the
    contexts' own dicts are replaced; the outcomes they were built from stay as they are."""
    known: dict[bytes, Any] = {}

    def one(value: Any) -> Any:
        try:
            key = orjson.dumps(value, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
        except (TypeError, orjson.JSONEncodeError):
            return value
        first = known.setdefault(key, value)
        return first if first is value or first == value else value  # NaN and null write alike

    def states(snapshot: dict[str, Any]) -> dict[str, Any]:
        return {env: one(state) for env, state in snapshot.items()}

    for ctx in contexts:
        ctx["final"], ctx["files"] = states(ctx["final"]), one(ctx["files"])
        ctx["turns"] = [{"final": states(t["final"]), "files": one(t["files"])} for t in ctx["turns"]]


def _record(task: Task, report: ValidationReport, record: bool) -> ValidationReport:
    if record:
        task.quality.update(report.quality())
    return report


@dataclass
class ReplayResult:
    """One task's golden replay: did it reproduce the hash, and did the verifier give 1?"""

    task_id: str
    ok: bool
    hash_ok: bool
    score: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "task_id": self.task_id,
            "ok": self.ok,
            "hash_ok": self.hash_ok,
            "score": self.score,
        }
        if self.error is not None:
            data["error"] = self.error
        return data


def replay_task(task: Task) -> ReplayResult:
    """Re-run the golden calls in fresh sessions and score the outcome."""
    try:
        outcome = execute_reference(task)
    except ExecutionError as exc:
        return ReplayResult(task.id, False, False, 0.0, str(exc))
    hash_ok = outcome_hash(outcome) == task.reference.final_hash
    score = run_verifier(task, outcome)
    error = score.error
    if error is None and not hash_ok:
        error = "final state differs from the recorded golden hash"
    if error is None and score.score < 1.0:
        error = f"golden run scores {score.score:.3f}, not 1"
    return ReplayResult(task.id, hash_ok and score.score >= 1.0, hash_ok, score.score, error)
