"""The batch harness as the isolated worker gets it: self-contained text over the verifier's globals.

``harness.batch`` is ordinary typed Python in envcraft; what is appended to a verifier's source is
its text without annotations and with its constants written in. These tests run that text the way
the worker does (the verifier's module namespace, nothing of envcraft importable) and through the
real isolated worker.
"""

from __future__ import annotations

import ast
from typing import Any

from envcraft.tasks.verifier import harness
from envcraft.tasks.verifier.scoring import pack, score_contexts

VERIFIER = "def verify(ctx):\n    return {'score': ctx['x'] / 10, 'components': {}}\n"


def run_text(verifier: str, contexts: list[Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(verifier + harness.source(), "<verifier>", "exec"), namespace)
    return namespace[harness.BATCH_FUNC](pack(contexts))


def test_the_worker_text_names_only_the_verifiers_globals_and_builtins() -> None:
    tree = ast.parse(harness.source())
    (function,) = tree.body
    assert isinstance(function, ast.FunctionDef) and function.name == harness.BATCH_FUNC
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert "REF" not in loaded and "MAX_REASON" not in loaded
    assert not any(isinstance(n, ast.AnnAssign) or getattr(n, "annotation", None) for n in ast.walk(tree))


def test_shared_values_come_back_shared_and_a_crash_stays_its_own() -> None:
    shared = {"x": 5}
    out = run_text(VERIFIER, [shared, {"y": 1}, shared])
    assert out[0] == {"ok": True, "value": {"score": 0.5, "components": {}}}
    assert out[1]["ok"] is False and out[1]["error"].startswith("KeyError")
    assert out[2] == out[0]


def test_a_verifier_that_modifies_a_shared_input_fails_every_run() -> None:
    mutating = "def verify(ctx):\n    ctx['s']['x'] = 1\n    return {'score': 1.0}\n"
    state = {"x": 0}
    out = run_text(mutating, [{"s": state}, {"s": state}])
    assert [o["ok"] for o in out] == [False, False]
    assert "read-only" in out[0]["error"]


def test_the_isolated_worker_scores_with_it() -> None:
    scores = score_contexts(VERIFIER, [{"x": 3}, {"x": 20}])
    assert [s.score for s in scores] == [0.3, 1.0]
