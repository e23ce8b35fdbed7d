"""Do our verifiers and BFCL's own checker reach the same verdict?

For every imported task, trajectories are scored twice: by the task's verifier (in fresh
envcraft sessions, as ``envcraft tasks score`` does) and by BFCL's ``multi_turn_checker``
(on the same calls rendered as BFCL call strings). The trajectories are the ground truth and
mutations of it, ``per_kind`` of each kind at most, chosen by a seed per task:

* ``drop_call``: one ground-truth call removed;
* ``swap_calls``: two different calls of one turn exchanged;
* ``change_argument``: one argument of one call altered (text gets a suffix, numbers move,
  booleans flip, lists lose or gain an item);
* ``drop_turn``: every call of one judged turn removed;
* ``harmful_call``: a call added to a turn (a copy of a ground-truth call, as is or with an
  argument altered) that leaves that turn's public attributes unlike the ground truth's.

A verdict is ``valid`` (BFCL: ``{"valid": True}``; ours: score 1). The report is the agreement
matrix (category x kind) and every disagreement with both sides' reasons. ``fidelity``
compares the ground truth executed by BFCL (``execute_multi_turn_func_call``) with its
replay in envcraft, call by call (result text) and turn by turn (public attributes).
"""

from __future__ import annotations

import copy
import importlib
import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcraft.core.state import canonical_json
from envcraft.integrations.bfcl import checker, objgraph, shapes, source, state
from envcraft.integrations.bfcl.convert import spec_of
from envcraft.integrations.bfcl.source import Entry
from envcraft.tasks.format.io import read_tasks
from envcraft.tasks.format.model import Task
from envcraft.tasks.play.execute import execute, reference_turns
from envcraft.tasks.play.outcome import ExecutionError, Outcome
from envcraft.tasks.verifier.scoring import build_context, score_contexts

KINDS = ("ground_truth", "drop_call", "swap_calls", "change_argument", "drop_turn", "harmful_call")
_PREFIX = "envcraft_parity_"
_NAMES = itertools.count()

Turns = list[list[dict[str, Any]]]


@dataclass
class Variant:
    kind: str
    label: str
    turns: Turns


@dataclass
class Verdict:
    valid: bool
    reason: str = ""


@dataclass
class ParityReport:
    matrix: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    fidelity: dict[str, Any] = field(default_factory=lambda: {"tasks": 0, "calls": 0, "mismatches": []})

    def count(self, category: str, kind: str, ours: Verdict, bfcl: Verdict) -> None:
        cell = self.matrix.setdefault(category, {}).setdefault(
            kind, {"agree": 0, "disagree": 0, "both_valid": 0, "both_invalid": 0}
        )
        if ours.valid == bfcl.valid:
            cell["agree"] += 1
            cell["both_valid" if ours.valid else "both_invalid"] += 1
        else:
            cell["disagree"] += 1

    def totals(self) -> dict[str, int]:
        cells = [c for row in self.matrix.values() for c in row.values()]
        return {
            key: sum(c[key] for c in cells) for key in ("agree", "disagree", "both_valid", "both_invalid")
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "totals": self.totals(),
            "matrix": self.matrix,
            "disagreements": self.disagreements,
            "fidelity": self.fidelity,
        }


def run_parity(
    directory: Path,
    categories: Sequence[str] | None = None,
    *,
    per_kind: int = 3,
    limit: int | None = None,
    advance: Callable[[str], None] | None = None,
) -> ParityReport:
    """Parity over the task sets written by ``envcraft import bfcl --out directory``."""
    source.require()
    report = ParityReport()
    for category in categories or source.CATEGORIES:
        entries = {e.id: e for e in source.load_entries(category)}
        for task in read_tasks(directory / "tasks" / category)[:limit]:
            check_task(category, task, entries[task.id], report, per_kind)
            if advance is not None:
                advance(task.id)
    return report


def check_task(category: str, task: Task, entry: Entry, report: ParityReport, per_kind: int) -> None:
    golden = execute(task, reference_turns(task))
    fidelity(entry, task, golden, report)
    rng = random.Random(f"parity:{task.id}")
    found = list(variants(task, golden, rng, per_kind))
    contexts = []
    runnable = []
    for variant in found:
        try:
            contexts.append(build_context(execute(task, variant.turns)))
            runnable.append(variant)
        except ExecutionError as exc:
            report.disagreements.append(
                {"task": task.id, "category": category, "kind": variant.kind, "error": str(exc)}
            )
    scores = score_contexts(task.verifier.source, contexts)
    for variant, context, score in zip(runnable, contexts, scores, strict=True):
        ours = Verdict(score.score >= 1.0, score.error or "")
        bfcl = bfcl_verdict(entry, variant.turns)
        report.count(category, variant.kind, ours, bfcl)
        if ours.valid != bfcl.valid:
            ours.reason = ours.reason or explain(task, context)
            report.disagreements.append(
                {
                    "task": task.id,
                    "category": category,
                    "kind": variant.kind,
                    "variant": variant.label,
                    "ours": {"valid": ours.valid, "reason": ours.reason},
                    "bfcl": {"valid": bfcl.valid, "reason": bfcl.reason},
                    "calls": bfcl_calls(entry, variant.turns),
                }
            )


def explain(task: Task, context: dict[str, Any]) -> str:
    """Our verifier's reason for its verdict (the same checker, run here on the task's spec)."""
    return str(checker.verify_with(context, spec_of(task), objgraph.decode)["reason"])


# -- BFCL's side --------------------------------------------------------------------------------
def bfcl_calls(entry: Entry, turns: Turns) -> list[list[str]]:
    """Our calls as BFCL call strings, per turn."""
    out: list[list[str]] = []
    for calls in turns:
        rendered = []
        for call in calls:
            name = source.class_of_env(str(call["env"]))
            shape = shapes.shapes(name)[str(call["tool"])]
            rendered.append(
                shapes.render_call(shape.name, shapes.to_bfcl(shape, dict(call.get("args") or {})))
            )
        out.append(rendered)
    return out


def bfcl_verdict(entry: Entry, turns: Turns) -> Verdict:
    """BFCL's ``multi_turn_checker`` on our calls (one step per turn, as its runner decodes them)."""
    checker_module = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    decoded = [[calls] if calls else [] for calls in bfcl_calls(entry, turns)]
    try:
        with _fresh_instances() as name:
            result = checker_module.multi_turn_checker(
                decoded, entry.ground_truth, entry.to_bfcl(), entry.category, name
            )
    except Exception as exc:  # BFCL asserts on malformed input; that is a verdict too
        return Verdict(False, f"checker raised {type(exc).__name__}: {exc}")
    return Verdict(
        bool(result.get("valid")), f"{result.get('error_type', '')}: {result.get('error_message', '')}"
    )


@contextmanager
def _fresh_instances() -> Iterator[str]:
    """BFCL caches class instances in ``multi_turn_utils`` globals keyed by model name and entry
    id; each check gets a new name, and its instances are dropped afterwards."""
    try:
        yield f"{_PREFIX}{next(_NAMES)}"
    finally:
        namespace = vars(importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"))
        for key in [k for k in namespace if k.startswith(_PREFIX)]:
            del namespace[key]


def bfcl_execution(entry: Entry) -> list[tuple[list[str], dict[str, Any]]]:
    """The ground truth run by BFCL's executor: per turn, the result texts and the instances."""
    utils = importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
    turns = []
    with _fresh_instances() as name:
        for calls in entry.ground_truth:
            texts, instances = utils.execute_multi_turn_func_call(
                calls, entry.initial_config, entry.involved_classes, name, entry.id,
                long_context=entry.long_context, is_evaL_run=True,
            )  # fmt: skip
            turns.append(
                (list(texts), {c: state.instance_state(i)["attributes"] for c, i in instances.items()})
            )
    return turns


def fidelity(entry: Entry, task: Task, golden: Outcome, report: ParityReport) -> None:
    """Ground truth in BFCL vs in envcraft: every result text and every turn's public attributes."""
    report.fidelity["tasks"] += 1
    for turn, (texts, attributes) in enumerate(bfcl_execution(entry)):
        ours = [checker.rendered(a.result) for a in golden.actions if a.turn == turn]
        report.fidelity["calls"] += len(texts)
        if ours != texts:
            report.fidelity["mismatches"].append({"task": task.id, "turn": turn, "what": "results"})
        for name, attrs in attributes.items():
            mine = golden.turns[turn].final[source.env_id(name)]["attributes"]
            if canonical_json(mine) != canonical_json(attrs):
                report.fidelity["mismatches"].append({"task": task.id, "turn": turn, "what": f"state {name}"})


# -- mutations ------------------------------------------------------------------------------------
def variants(task: Task, golden: Outcome, rng: random.Random, per_kind: int) -> Iterator[Variant]:
    base = [
        [{"env": c["env"], "tool": c["tool"], "args": c["args"]} for c in turn]
        for turn in reference_turns(task)
    ]
    yield Variant("ground_truth", "ground truth", base)
    for make in (_drop_calls, _swaps, _argument_changes, _drop_turns):
        found = make(base)
        rng.shuffle(found)
        yield from found[:per_kind]
    yield from _harmful(task, golden, base, rng, per_kind)


def _drop_calls(base: Turns) -> list[Variant]:
    out = []
    for t, calls in enumerate(base):
        for i in range(len(calls)):
            turns = copy.deepcopy(base)
            del turns[t][i]
            out.append(Variant("drop_call", f"turn {t}: drop call {i} ({calls[i]['tool']})", turns))
    return out


def _swaps(base: Turns) -> list[Variant]:
    out = []
    for t, calls in enumerate(base):
        for i in range(len(calls)):
            for j in range(i + 1, len(calls)):
                if canonical_json(calls[i]) == canonical_json(calls[j]):
                    continue
                turns = copy.deepcopy(base)
                turns[t][i], turns[t][j] = turns[t][j], turns[t][i]
                label = f"turn {t}: swap calls {i} ({calls[i]['tool']}) and {j} ({calls[j]['tool']})"
                out.append(Variant("swap_calls", label, turns))
    return out


def _argument_changes(base: Turns) -> list[Variant]:
    out = []
    for t, calls in enumerate(base):
        for i, call in enumerate(calls):
            for name, value in sorted(call["args"].items()):
                changed = altered(value)
                if changed is None:
                    continue
                turns = copy.deepcopy(base)
                turns[t][i]["args"][name] = changed
                label = f"turn {t}: call {i} ({call['tool']}) {name}={value!r} -> {changed!r}"
                out.append(Variant("change_argument", label, turns))
    return out


def _public(outcome: Outcome, turn: int) -> str:
    return canonical_json({env: s["attributes"] for env, s in outcome.turns[turn].final.items()})


def altered(value: Any) -> Any:
    """A different value of the same JSON type, or None when there is none."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return f"{value}_x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return None


def _drop_turns(base: Turns) -> list[Variant]:
    out = []
    for t, calls in enumerate(base):
        if calls:
            turns = copy.deepcopy(base)
            turns[t] = []
            out.append(Variant("drop_turn", f"drop turn {t} ({len(calls)} calls)", turns))
    return out


def _harmful(
    task: Task, golden: Outcome, base: Turns, rng: random.Random, per_kind: int
) -> Iterator[Variant]:
    """Extra calls, tried in a seeded order, kept when they change that turn's state."""
    candidates = []
    for t, calls in enumerate(base):
        for call in calls:
            for name in [None, *sorted(call["args"])]:
                extra = copy.deepcopy(call)
                if name is not None:
                    changed = altered(extra["args"][name])
                    if changed is None:
                        continue
                    extra["args"][name] = changed
                candidates.append((t, extra, name))
    rng.shuffle(candidates)
    kept = 0
    for t, extra, name in candidates:
        if kept >= per_kind:
            return
        turns = copy.deepcopy(base)
        turns[t].append(extra)
        try:
            outcome = execute(task, turns)
        except ExecutionError:
            continue
        if _public(outcome, t) != _public(golden, t):
            kept += 1
            what = "a copy" if name is None else f"a copy with {name} altered"
            yield Variant("harmful_call", f"turn {t}: extra {extra['tool']} ({what})", turns)
