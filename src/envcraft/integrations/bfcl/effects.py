"""Which attributes each BFCL method reads and writes, read off BFCL's own source.

The data engine links tools whose writes meet other tools' reads (``@tool(reads=, writes=)``),
and only a tool that writes can be the point of a task. A wrapper's body is one call into
BFCL, so the generated annotations carry what this analysis finds in the wrapped method:

* reads: every ``self.<attribute>`` the method (or a private helper it calls) touches;
* writes: an attribute assigned, deleted or item-assigned, directly or through a local alias
  (``tweet = self.tweets[i]; tweet["mentions"].extend(...)``), or the receiver of a mutating
  call: a list/dict/set mutator, or a method of another class of the same BFCL module that
  assigns to its own ``self`` (``self._current_dir._add_file(...)``).

Drawing from a seeded ``random.Random`` counts as a read: it does change the generator's
state, but a tool like ``get_current_speed`` is a query, not something a task asks for.
The analysis is conservative about aliases: a call's result may alias its receiver, except
``copy()``.
"""

from __future__ import annotations

import ast
import inspect
import random
import sys
import textwrap
from dataclasses import dataclass, field
from functools import cache

from envcraft.integrations.bfcl import source, state

MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
     "popitem", "sort", "reverse"}
)  # fmt: skip


@dataclass
class Effects:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    returns: set[str] = field(default_factory=set)  # attributes the result may alias


@cache
def class_effects(class_name: str) -> dict[str, Effects]:
    """Effects of every documented method of one class."""
    analysis = _Analysis(source.bfcl_class(class_name))
    return {doc["name"]: analysis.method(doc["name"]) for doc in source.func_docs(class_name)}


class _Analysis:
    def __init__(self, cls: type) -> None:
        self.cls = cls
        sample = state.load_initial(cls.__name__, {}, long_context=False)
        self.attrs = set(vars(sample))
        self.randoms = {k for k, v in vars(sample).items() if isinstance(v, random.Random)}
        self.object_mutators = _object_mutators(cls)
        self.memo: dict[str, Effects] = {}

    def method(self, name: str) -> Effects:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = Effects()  # recursion guard: a cycle contributes nothing new
        node = ast.parse(textwrap.dedent(inspect.getsource(getattr(self.cls, name)))).body[0]
        found = _Method(self).run(node)
        self.memo[name] = found
        return found

    def is_method(self, name: str) -> bool:
        return callable(getattr(self.cls, name, None)) and name not in self.attrs


class _Method:
    def __init__(self, analysis: _Analysis) -> None:
        self.a = analysis
        self.effects = Effects()
        self.aliases: dict[str, set[str]] = {}

    def run(self, node: ast.AST) -> Effects:
        for _ in range(3):  # aliases flow forward through assignments; a few rounds settle them
            for child in ast.walk(node):
                self.visit(child)
        return self.effects

    def roots(self, expr: ast.expr | None) -> set[str]:
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self":
                return {expr.attr} if expr.attr in self.a.attrs else set()
            return self.roots(expr.value)
        if isinstance(expr, ast.Subscript | ast.Starred):
            return self.roots(expr.value)
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and _is_self(func.value) and self.a.is_method(func.attr):
                return set(self.a.method(func.attr).returns)
            if isinstance(func, ast.Attribute) and func.attr != "copy":  # a copy is a new container
                return self.roots(func.value)
            return set()
        if isinstance(expr, ast.Name):
            return set(self.aliases.get(expr.id, set()))
        if isinstance(expr, ast.IfExp):
            return self.roots(expr.body) | self.roots(expr.orelse)
        if isinstance(expr, ast.BoolOp):
            return set().union(*(self.roots(v) for v in expr.values))
        return set()

    def bind(self, target: ast.expr, roots: set[str]) -> None:
        if isinstance(target, ast.Name):
            self.aliases.setdefault(target.id, set()).update(roots)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self.bind(element, roots)
        elif isinstance(target, ast.Attribute) and _is_self(target.value):
            if target.attr in self.a.attrs or not self.a.is_method(target.attr):
                self.effects.writes.add(target.attr)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            self.effects.writes |= self.roots(target.value)

    def visit(self, node: ast.AST) -> None:
        e = self.effects
        if isinstance(node, ast.Attribute) and _is_self(node.value) and node.attr in self.a.attrs:
            e.reads.add(node.attr)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self.bind(target, self.roots(node.value))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            self.bind(node.target, self.roots(node.value))
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self.bind(target, set())
        elif isinstance(node, ast.For | ast.comprehension):
            self.bind(node.target, self.roots(node.iter))
        elif isinstance(node, ast.Return):
            e.returns |= self.roots(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            self._call(node.func)

    def _call(self, func: ast.Attribute) -> None:
        e = self.effects
        if _is_self(func.value) and self.a.is_method(func.attr):
            inner = self.a.method(func.attr)
            e.reads |= inner.reads
            e.writes |= inner.writes
            return
        receiver = self.roots(func.value)
        if receiver & self.a.randoms:
            return  # drawing from a generator: a read (see the module docstring)
        if func.attr in MUTATORS or func.attr in self.a.object_mutators:
            e.writes |= receiver


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"


def _object_mutators(cls: type) -> frozenset[str]:
    """Methods of the module's other classes that assign to their own ``self``."""
    module = sys.modules[cls.__module__]
    names: set[str] = set()
    for other in vars(module).values():
        if not isinstance(other, type) or other is cls or other.__module__ != module.__name__:
            continue
        for name, function in vars(other).items():
            if inspect.isfunction(function) and not name.startswith("__") and _assigns_self(function):
                names.add(name)
    return frozenset(names)


def _assigns_self(function: object) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))  # type: ignore[arg-type]
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
        ):
            targets = [node.func.value]
        for target in targets:
            while isinstance(target, ast.Attribute | ast.Subscript):
                if _is_self(target.value):
                    return True
                target = target.value
    return False
