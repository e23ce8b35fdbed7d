"""The batch harness: appended to a verifier's source so one isolated call scores many runs.

Runs of one task share most of their data (S0, untouched environments, snapshots), so the
payload sends each shared value once (see :func:`envcraft.tasks.verifier.scoring.pack`) and the
runs get the very same objects back: the inputs are read-only, and a verifier that modifies them
fails every run of the batch. Each run's own failure stays its own (a crash in one context does
not lose the others).

:func:`batch` is written here as ordinary, linted and type-checked Python, but it runs in the
isolated worker inside the verifier's module, where envcraft is not importable: :func:`source`
is its text as the worker gets it, with the annotations dropped (the verifier's module has no
``typing``) and the module constants :data:`REF` and :data:`MAX_REASON` written in as literals
(the function sees only the verifier's globals, ``verify`` among them, and the builtins).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from functools import cache
from typing import Any

BATCH_FUNC = "__envcraft_batch__"  # the name the worker calls (the verifier's own names stay free)
REF = "\u0000ref"  # marks a shared value in the packed payload (data holding it is sent unshared)
MAX_REASON = 300  # characters of a failure's reason that are kept

# The verifier's entry point: defined by the verifier source the harness is appended to.
verify: Callable[[Any], Any]


def batch(payload: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Score every context of ``payload`` (``{"refs", "ctxs"}`` JSON texts) with ``verify``."""
    import json as _json

    refs: list[Any] = []

    def shared(node: dict[str, Any]) -> Any:
        if len(node) == 1 and REF in node:
            return refs[node[REF]]
        return node

    hook = shared if payload["refs"] else None  # no refs: no markers (data may hold the key)
    for text in payload["refs"]:
        refs.append(_json.loads(text, object_hook=hook))
    ctxs = [_json.loads(text, object_hook=hook) for text in payload["ctxs"]]

    def fingerprint() -> list[tuple[int, tuple[Any, ...], tuple[int, ...]]]:
        marks, seen, stack = [], set(), list(refs)
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            values = list(node.values()) if isinstance(node, dict) else node
            marks.append((id(node), tuple(node), tuple(map(id, values))))
            stack.extend(v for v in values if isinstance(v, (dict, list)))
        return marks

    before = fingerprint()
    out: list[dict[str, Any]] = []
    for ctx in ctxs:
        try:
            value = verify(ctx)  # noqa: F821 (the verifier's global, declared above for mypy)
            _json.dumps(value, allow_nan=True)
            out.append({"ok": True, "value": value})
        except BaseException as exc:
            out.append({"ok": False, "error": type(exc).__name__ + ": " + str(exc)[:MAX_REASON]})
    if fingerprint() != before:
        error = "the verifier modified its input ctx (inputs are read-only)"
        return [{"ok": False, "error": error} for _ in ctxs]
    return out


class _ForTheWorker(ast.NodeTransformer):
    """Drop annotations, write the constants in, and name the function :data:`BATCH_FUNC`."""

    CONSTANTS: dict[str, Any] = {"REF": REF, "MAX_REASON": MAX_REASON}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            arg.annotation = None
        if node.name == batch.__name__:
            node.name = BATCH_FUNC
            node.body = [s for s in node.body if not _is_docstring(s)]
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        assert node.value is not None, "the harness only annotates assignments"
        return ast.copy_location(ast.Assign(targets=[node.target], value=self.visit(node.value)), node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.CONSTANTS and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Constant(self.CONSTANTS[node.id]), node)
        return node


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


@cache
def source() -> str:
    """The text appended to a verifier's source: the ``__envcraft_batch__`` the worker calls."""
    tree = ast.parse(inspect.getsource(batch))
    tree = ast.fix_missing_locations(_ForTheWorker().visit(tree))
    return "\n\n" + ast.unparse(tree) + "\n"
