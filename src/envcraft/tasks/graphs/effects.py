"""Static read/write analysis of tool code: which state fields and workspace paths a tool touches.

The tool dependency graph needs to know that ``cancel_order`` writes ``orders`` and
``get_order`` reads it. We find out by abstract interpretation of the tool's AST (and of
every helper method or module function it calls, with its arguments bound, including
functions imported from the package's sibling modules: ``from .rules import refund`` or
``from . import rules`` then ``rules.refund(...)``): each
expression evaluates to a set of *tags* saying what it may alias, ``STATE`` (the state
object) or ``F:<field>`` (something inside one state field). Assigning to an attribute or
item of an ``F:`` alias, or calling a mutating method on it, writes that field, so
``order = self._order(oid); order.status = "x"`` is seen as a write of ``orders`` even
though ``self.state`` never appears on that line. Workspace calls
(``self.workspace.write_text(path, ...)``) are recorded with a path pattern (``*`` where the
path is computed at run time). The analysis is conservative and never executes tool code.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from envcraft.core.environment import Environment

Tags = frozenset[str]
EMPTY: Tags = frozenset()
SELF, STATE, WORKSPACE = "SELF", "STATE", "WS"

MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "popitem",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
    }
)
# Methods whose result still aliases (part of) the receiver.
ALIASING = frozenset({"get", "values", "items", "pop", "setdefault", "popitem", "__getitem__"})
# Environment methods whose result is a record of their first argument (``self.lookup(
# self.state.orders, oid, "order")`` returns an order, so writing to it writes ``orders``).
RECORD_OF_FIRST_ARGUMENT = frozenset({"lookup"})
# Builtins whose result holds elements of their arguments.
PASS_THROUGH = frozenset(
    {"sorted", "list", "reversed", "next", "iter", "max", "min", "filter", "tuple", "set"}
)
WS_READS = frozenset({"read_text", "read_bytes", "exists", "list", "snapshot"})
WS_WRITES = frozenset({"write_text", "write_bytes", "delete"})


@dataclass
class Effects:
    """What one tool (with everything it calls) may read and write."""

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    ws_reads: set[str] = field(default_factory=set)
    ws_writes: set[str] = field(default_factory=set)

    def merge(self, other: Effects) -> None:
        self.reads |= other.reads
        self.writes |= other.writes
        self.ws_reads |= other.ws_reads
        self.ws_writes |= other.ws_writes


@dataclass(frozen=True)
class _Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    module: _Module  # where the function's own calls are resolved
    kind: str  # "method" | "static" | "class" | "function"


class _Module:
    """The module-level functions one source file can call by name: its own, and those it
    imports from sibling modules of its package (``from .rules import f``, ``from . import
    rules``), resolved in the sibling's file so that its own calls are followed too."""

    def __init__(self, path: Path, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree
        self.own = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.imported: dict[str, tuple[str, str]] = {}  # local name -> (sibling module, its name)
        self.siblings: dict[str, str] = {}  # local name -> sibling module (``from . import rules``)
        for node in tree.body:
            if not (isinstance(node, ast.ImportFrom) and node.level == 1):
                continue
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module:
                    self.imported[local] = (node.module, alias.name)
                else:
                    self.siblings[local] = alias.name

    def function(self, name: str) -> _Function | None:
        """The module function ``name`` means here, if it is one (own or imported)."""
        return self._resolve(name, frozenset())

    def sibling(self, alias: str) -> _Module | None:
        """The sibling module bound to ``alias`` by ``from . import <module>``, if any."""
        module = self.siblings.get(alias)
        return _sibling_module(self.path, module) if module else None

    def _resolve(self, name: str, seen: frozenset[tuple[Path, str]]) -> _Function | None:
        if (self.path, name) in seen:
            return None
        node = self.own.get(name)
        if node is not None:
            return _Function(node, self, "function")
        if name not in self.imported:
            return None
        module_name, original = self.imported[name]
        sibling = _sibling_module(self.path, module_name)
        return sibling._resolve(original, seen | {(self.path, name)}) if sibling else None


class _Frame:
    def __init__(self, env: dict[str, Tags]) -> None:
        self.env = env
        self.returns: set[str] = set()
        self.paths: dict[str, str] = {}  # local name -> path pattern of the string it holds


_EFFECTS: dict[type, dict[str, Effects]] = {}


def tool_effects(env_class: type[Environment]) -> dict[str, Effects]:
    """Effects of every tool of ``env_class`` (static analysis plus ``@tool(reads=, writes=)``);
    computed once per class (do not modify the result)."""
    if env_class not in _EFFECTS:
        _EFFECTS[env_class] = _analyze(env_class)
    return _EFFECTS[env_class]


def _analyze(env_class: type[Environment]) -> dict[str, Effects]:
    analyzer = _Analyzer(env_class)
    fields = set(getattr(env_class.State, "model_fields", {}))
    found: dict[str, Effects] = {}
    for name, spec in env_class.tools.items():
        effects = analyzer.tool(name)
        effects.reads = {f for f in effects.reads if f in fields} | set(spec.annotations.reads)
        effects.writes = {f for f in effects.writes if f in fields} | set(spec.annotations.writes)
        found[name] = effects
    return found


class _Analyzer:
    def __init__(self, env_class: type[Environment]) -> None:
        self.methods: dict[str, _Function] = {}
        for klass in env_class.__mro__:
            if klass in (Environment, object) or not issubclass(klass, Environment):
                continue
            for name, function in _class_methods(klass).items():
                self.methods.setdefault(name, function)
        self.memo: dict[tuple[int, tuple[tuple[str, Tags], ...]], tuple[Tags, Effects]] = {}
        self.stack: set[int] = set()

    def tool(self, name: str) -> Effects:
        function = self.methods.get(name)
        if function is None:
            return Effects()
        _, effects = self.call(function, [frozenset({SELF})], {})
        return effects

    # -- interprocedural ------------------------------------------------------------------
    def call(self, function: _Function, args: list[Tags], kwargs: dict[str, Tags]) -> tuple[Tags, Effects]:
        params = [a.arg for a in (*function.node.args.posonlyargs, *function.node.args.args)]
        if function.kind == "class":
            params = params[1:]
        bound: dict[str, Tags] = {p: EMPTY for p in params}
        for param, tags in zip(params, args, strict=False):
            bound[param] = frozenset(tags)
        for name, tags in kwargs.items():
            if name in bound or any(a.arg == name for a in function.node.args.kwonlyargs):
                bound[name] = frozenset(tags)
        key = (id(function.node), tuple(sorted(bound.items())))
        if key in self.memo:
            return self.memo[key]
        if id(function.node) in self.stack:
            return EMPTY, Effects()
        self.stack.add(id(function.node))
        try:
            frame = _Frame(dict(bound))
            effects = Effects()
            _Body(self, function, frame, effects).block(function.node.body)
            result = (frozenset(frame.returns), effects)
        finally:
            self.stack.discard(id(function.node))
        self.memo[key] = result
        return result


class _Body:
    """Evaluates one function body under one binding of its parameters."""

    def __init__(self, analyzer: _Analyzer, function: _Function, frame: _Frame, effects: Effects) -> None:
        self.analyzer = analyzer
        self.function = function
        self.frame = frame
        self.effects = effects

    # -- statements -----------------------------------------------------------------------
    def block(self, statements: Iterable[ast.stmt]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign(target, value)
                if isinstance(target, ast.Name) and isinstance(
                    node.value, ast.Constant | ast.JoinedStr | ast.BinOp
                ):
                    self.frame.paths[target.id] = _path_pattern(node.value, self.frame.paths)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            self.expr(node.value)
            self.expr(node.target)
            self.assign(node.target, EMPTY)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self.assign(target, EMPTY)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self.assign(node.target, self.expr(node.iter))
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.While | ast.If):
            self.expr(node.test)
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                tags = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, tags)
            self.block(node.body)
        elif isinstance(node, ast.Try):
            self.block(node.body)
            for handler in node.handlers:
                self.block(handler.body)
            self.block(node.orelse)
            self.block(node.finalbody)
        elif isinstance(node, ast.Match):
            self.expr(node.subject)
            for case in node.cases:
                self.block(case.body)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.frame.returns |= self.expr(node.value)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def assign(self, target: ast.expr, tags: Tags) -> None:
        if isinstance(target, ast.Name):
            self.frame.env[target.id] = self.frame.env.get(target.id, EMPTY) | tags
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self.assign(element, tags)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, tags)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value, store=True)
            for tag in base:
                if tag == STATE:
                    self.effects.writes.add(target.attr)
                elif tag.startswith("F:"):
                    self.effects.writes.add(tag[2:])
        elif isinstance(target, ast.Subscript):
            self.expr(target.slice)
            self.write_fields(self.expr(target.value, store=True))

    def write_fields(self, tags: Tags) -> None:
        self.effects.writes.update(t[2:] for t in tags if t.startswith("F:"))

    # -- expressions ----------------------------------------------------------------------
    def expr(self, node: ast.expr, store: bool = False) -> Tags:
        if isinstance(node, ast.Name):
            return self.frame.env.get(node.id, EMPTY)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, store)
        if isinstance(node, ast.Subscript):
            self.expr(node.slice)
            return self.expr(node.value, store=store)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self.comprehension(node)
        if isinstance(node, ast.BoolOp):
            return frozenset().union(*(self.expr(v) for v in node.values))
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return self.expr(node.body) | self.expr(node.orelse)
        if isinstance(node, ast.NamedExpr):
            tags = self.expr(node.value)
            self.assign(node.target, tags)
            return tags
        if isinstance(node, ast.Starred):
            return self.expr(node.value)
        if isinstance(node, ast.Tuple | ast.List):
            return frozenset().union(*(self.expr(e) for e in node.elts)) if node.elts else EMPTY
        if isinstance(node, ast.Lambda):
            return EMPTY
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return EMPTY

    def attribute(self, node: ast.Attribute, store: bool) -> Tags:
        base = self.expr(node.value)
        found: set[str] = set()
        for tag in base:
            if tag == SELF:
                if node.attr == "state":
                    found.add(STATE)
                elif node.attr == "workspace":
                    found.add(WORKSPACE)
            elif tag == STATE:
                found.add(f"F:{node.attr}")
                if not store:
                    self.effects.reads.add(node.attr)
            elif tag.startswith("F:"):
                found.add(tag)
                self.effects.reads.add(tag[2:])
        return frozenset(found)

    def call(self, node: ast.Call) -> Tags:
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg is not None}
        for k in node.keywords:
            if k.arg is None:
                self.expr(k.value)
        func = node.func
        if isinstance(func, ast.Attribute):
            sibling = self.sibling_module(func.value)
            if sibling is not None:
                imported = sibling.function(func.attr)
                return self.invoke(imported, args, kwargs) if imported else EMPTY
            mutating = func.attr in MUTATORS
            receiver = self.expr(func.value, store=mutating)
            result: set[str] = set()
            if SELF in receiver and func.attr in self.analyzer.methods:
                result |= self.invoke(self.analyzer.methods[func.attr], [frozenset({SELF}), *args], kwargs)
            elif SELF in receiver and func.attr in RECORD_OF_FIRST_ARGUMENT and args:
                result |= {t for t in args[0] if t.startswith("F:")}
            if WORKSPACE in receiver:
                pattern = _path_pattern(node.args[0], self.frame.paths) if node.args else "*"
                if func.attr in WS_READS:
                    self.effects.ws_reads.add(pattern)
                elif func.attr in WS_WRITES:
                    self.effects.ws_writes.add(pattern)
            if mutating:
                self.write_fields(receiver)
            if func.attr in ALIASING:
                result |= {t for t in receiver if t.startswith("F:")}
            return frozenset(result)
        if isinstance(func, ast.Name):
            local = self.function.module.function(func.id)
            if local is not None and func.id not in self.frame.env:
                return self.invoke(local, args, kwargs)
            if func.id in PASS_THROUGH:
                return frozenset().union(*args) if args else EMPTY
            return EMPTY
        self.expr(func)
        return EMPTY

    def sibling_module(self, node: ast.expr) -> _Module | None:
        """The sibling module ``node`` names (``rules`` after ``from . import rules``), if any."""
        if isinstance(node, ast.Name) and node.id not in self.frame.env:
            return self.function.module.sibling(node.id)
        return None

    def invoke(self, function: _Function, args: list[Tags], kwargs: dict[str, Tags]) -> Tags:
        if function.kind in ("static", "class") and args and args[0] == frozenset({SELF}):
            args = args[1:]
        returned, effects = self.analyzer.call(function, args, kwargs)
        self.effects.merge(effects)
        return returned

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Tags:
        saved = dict(self.frame.env)
        for generator in node.generators:
            self.assign(generator.target, self.expr(generator.iter))
            for condition in generator.ifs:
                self.expr(condition)
        if isinstance(node, ast.DictComp):
            self.expr(node.key)
            result = self.expr(node.value)
        else:
            result = self.expr(node.elt)
        self.frame.env = saved
        return result


def _path_pattern(node: ast.expr, names: dict[str, str]) -> str:
    """A glob for a workspace path expression: literal parts kept, computed parts ``*``
    (``names`` holds the patterns of local variables assigned a string earlier)."""
    if isinstance(node, ast.Name):
        return names.get(node.id, "*")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "*" for v in node.values
        ]
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _path_pattern(node.left, names) + _path_pattern(node.right, names)
    return "*"


def _class_methods(klass: type) -> dict[str, _Function]:
    path = getattr(sys.modules.get(klass.__module__), "__file__", None)
    if path is None:
        return {}
    module = _parse_module(Path(path).resolve())
    for node in module.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
            methods: dict[str, _Function] = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    methods[item.name] = _Function(item, module, _method_kind(item))
            return methods
    return {}


def _sibling_module(path: Path, name: str) -> _Module | None:
    """``<name>.py`` next to ``path`` (a module of the same package), parsed, if it exists."""
    sibling = path.parent / f"{name}.py"
    return _parse_module(sibling) if name.isidentifier() and sibling.is_file() else None


@cache
def _parse_module(path: Path) -> _Module:
    return _Module(path, ast.parse(path.read_text(encoding="utf-8")))


def _method_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    names = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
    if "staticmethod" in names:
        return "static"
    if "classmethod" in names:
        return "class"
    return "method"
