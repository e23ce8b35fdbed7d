"""AST checks on an environment's Python source: the code-level half of paper Table 15.

Nothing here imports the code under test, so these checks also run on synthesized code
that does not import at all. They are deliberately pragmatic: they flag what is clearly
against the runtime contract and stay quiet on anything they cannot decide.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from envcraft.core.errors import ErrorCategory
from envcraft.core.lint.names import (
    PATH_IO_METHODS,
    classify_call,
    forbidden_module,
    import_aliases,
    qualified_name,
)
from envcraft.core.lint.report import Finding, finding

ENV_BASES = frozenset({"Environment", "ClawEnvironment"})
_PYDANTIC_BASES = frozenset({"BaseModel", "StateModel", "RootModel"})
_EXEMPT_BASES = frozenset(
    {"Enum", "StrEnum", "IntEnum", "Flag", "IntFlag", "TypedDict", "NamedTuple", "Protocol", "Exception"}
)
_DOORS = frozenset({"workspace", "data"})
_CATEGORIES = frozenset(c.value for c in ErrorCategory)
_MUTABLE_BUILTINS = frozenset({"list", "dict", "set", "bytearray"})
_MUTABLE_CALLS = frozenset(
    {"collections.defaultdict", "collections.OrderedDict", "collections.Counter", "collections.deque",
     "collections.ChainMap", "builtins.open"}
)  # fmt: skip
_IMMUTABLE_BUILTINS = frozenset({"frozenset", "tuple", "str", "int", "float", "bool", "bytes", "range"})
_IMMUTABLE_CALL_PREFIXES = (
    "re.compile", "types.MappingProxyType", "logging.getLogger", "typing.", "collections.namedtuple",
    "datetime.", "decimal.Decimal", "fractions.Fraction", "pathlib.", "pydantic.", "dataclasses.field",
    "enum.",
)  # fmt: skip
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault",
     "popitem", "sort", "reverse"}
)  # fmt: skip
_NON_DICT_CALLS = frozenset({"list", "tuple", "set", "str", "int", "float", "bool", "len", "sorted", "repr"})
_CONSTANT_NAME = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
_TYPE_NAME = re.compile(r"^_?[A-Z][A-Za-z0-9]*$")


@dataclass(frozen=True)
class ImportRef:
    """One import statement's target: ``level`` 0 is absolute, 1 a sibling module (``from .x``)."""

    module: str  # "" for ``from . import name``
    level: int
    names: tuple[str, ...]
    line: int


@dataclass
class SourceAnalysis:
    """Findings for one file plus the facts the structure checks need."""

    findings: list[Finding] = field(default_factory=list)
    env_classes: list[tuple[str, int]] = field(default_factory=list)
    tool_lines: dict[str, int] = field(default_factory=dict)
    imports: list[ImportRef] = field(default_factory=list)
    uses_workspace: bool = False
    parsed: bool = True


def analyze_source(source: str, file: str) -> SourceAnalysis:
    """Run every code rule over one Python file (``file`` is its package-relative path)."""
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as exc:
        message = f"does not parse: {exc.msg}"
        return SourceAnalysis([finding("syntax", file, exc.lineno or 0, message)], parsed=False)
    return _Checker(tree, file).run()


class _Checker:
    def __init__(self, tree: ast.Module, file: str) -> None:
        self.tree = tree
        self.file = file
        self.aliases = import_aliases(tree)
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.door_aliases = self._door_aliases()
        self.result = SourceAnalysis()

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.result.findings.append(finding(rule, self.file, getattr(node, "lineno", 0), message))

    def run(self) -> SourceAnalysis:
        self._imports_and_calls()
        self._module_state()
        for cls in self.classes.values():
            self._class(cls)
        self.result.findings.sort(key=lambda f: (f.line, f.rule))
        return self.result

    # -- whole-module rules ------------------------------------------------------------------
    def _imports_and_calls(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.result.imports.append(ImportRef(alias.name, 0, (), node.lineno))
                    self._import(node, alias.name)
            elif isinstance(node, ast.ImportFrom):
                names = tuple(alias.name for alias in node.names)
                self.result.imports.append(ImportRef(node.module or "", node.level, names, node.lineno))
                if node.module and not node.level:
                    self._import(node, node.module)
                    for alias in node.names:
                        self._import(node, f"{node.module}.{alias.name}", submodule=True)
            elif isinstance(node, ast.Global):
                self.add("global-statement", node, f"global {', '.join(node.names)}: keep data in self.state")
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Attribute) and _is_self_attr(node, "workspace"):
                self.result.uses_workspace = True

    def _import(self, node: ast.AST, module: str, submodule: bool = False) -> None:
        rule = forbidden_module(module)
        parent_rule = forbidden_module(module.rsplit(".", 1)[0]) if submodule else None
        if rule and rule != parent_rule:
            self.add(rule, node, f"imports {module}: tool code must not reach processes or the network")

    def _call(self, node: ast.Call) -> None:
        name = qualified_name(node.func, self.aliases)
        if name is not None:
            verdict = classify_call(name, bool(node.args or node.keywords))
            if verdict:
                rule, advice = verdict
                self.add(rule, node, f"{name.removeprefix('builtins.')}(): {advice}")
                return
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in PATH_IO_METHODS and name is None and not self._through_door(func.value):
                self.add("file-io", node, f".{func.attr}(): use self.workspace / self.data for files")
            if func.attr == "fail" and isinstance(func.value, ast.Name) and func.value.id == "self":
                self._fail_category(node)

    def _fail_category(self, node: ast.Call) -> None:
        keyword = next((k.value for k in node.keywords if k.arg == "category"), None)
        arg = node.args[0] if node.args else keyword
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value not in _CATEGORIES:
            known = ", ".join(sorted(_CATEGORIES))
            self.add("fail-category", node, f"unknown error category {arg.value!r}; known: {known}")
        elif (
            isinstance(arg, ast.Attribute)
            and _last_name(arg.value) == "ErrorCategory"
            and arg.attr not in ErrorCategory.__members__
        ):
            self.add("fail-category", node, f"ErrorCategory has no member {arg.attr}")

    def _door_aliases(self) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and _self_root(node.value) in _DOORS:
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return names

    def _through_door(self, receiver: ast.expr) -> bool:
        if _self_root(receiver) in _DOORS:
            return True
        root = _root_name(receiver)
        return root is not None and root in self.door_aliases

    def _module_state(self) -> None:
        for node in _module_statements(self.tree.body):
            for target, value in _bindings(node):
                if target.startswith("__"):
                    continue
                if self._is_mutable(value):
                    self.add(
                        "module-state",
                        node,
                        f"module-level {target} holds a mutable value; use a tuple/frozenset/"
                        "MappingProxyType constant or keep it in self.state",
                    )
                elif (
                    isinstance(value, ast.Call)
                    and not _CONSTANT_NAME.match(target)
                    and not _TYPE_NAME.match(target)
                    and not self._is_immutable_call(value)
                ):
                    self.add(
                        "module-object",
                        node,
                        f"module-level {target} = {ast.unparse(value.func)}(...) may hold shared state; "
                        "name it as an UPPER_CASE constant if it is immutable",
                    )

    def _is_mutable(self, value: ast.expr | None) -> bool:
        if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
            return True
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and func.id in _MUTABLE_BUILTINS and func.id not in self.aliases:
                return True
            return qualified_name(func, self.aliases) in _MUTABLE_CALLS
        return False

    def _is_immutable_call(self, value: ast.Call) -> bool:
        func = value.func
        if isinstance(func, ast.Name) and func.id in _IMMUTABLE_BUILTINS:
            return True
        name = qualified_name(func, self.aliases) or ""
        return name.startswith(_IMMUTABLE_CALL_PREFIXES)

    # -- classes -----------------------------------------------------------------------------
    def _class(self, cls: ast.ClassDef) -> None:
        kind = self._class_kind(cls, set())
        if kind in ("pydantic", "exempt"):
            return
        dataclass_like = any(_decorator_name(d) == "dataclass" for d in cls.decorator_list)
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and dataclass_like:
                continue
            for target, value in _bindings(stmt):
                if self._is_mutable(value):
                    self.add(
                        "class-state",
                        stmt,
                        f"class attribute {cls.name}.{target} is mutable and shared by every session; "
                        "keep it in self.state or make it a tuple/frozenset",
                    )
        if kind == "env":
            self.result.env_classes.append((cls.name, cls.lineno))
            for stmt in cls.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    self._method(cls, stmt)

    def _class_kind(self, cls: ast.ClassDef, seen: set[str]) -> str:
        seen.add(cls.name)
        for base in cls.bases:
            name = _last_name(base)
            if name in ENV_BASES:
                return "env"
            if name in _PYDANTIC_BASES:
                return "pydantic"
            if name in _EXEMPT_BASES:
                return "exempt"
            if name in self.classes and name not in seen:
                kind = self._class_kind(self.classes[name], seen)
                if kind != "plain":
                    return kind
        return "plain"

    def _method(self, cls: ast.ClassDef, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if fn.name != "__init__":
            self._instance_state(cls, fn)
        if any(_decorator_name(d) == "tool" for d in fn.decorator_list):
            self.result.tool_lines[fn.name] = fn.lineno
            self._tool(fn)

    def _instance_state(self, cls: ast.ClassDef, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for node in ast.walk(fn):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
            ):
                targets = [node.func.value]
            for target in targets:
                attr = _self_root(target)
                if attr is not None and attr != "state":
                    self.add(
                        "instance-state",
                        node,
                        f"{cls.name}.{fn.name} changes self.{attr}; only self.state is persisted",
                    )

    # -- tools -------------------------------------------------------------------------------
    def _tool(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if isinstance(fn, ast.AsyncFunctionDef):
            self.add("tool-return", fn, f"tool {fn.name} is async; the runtime calls tools synchronously")
        if fn.returns is not None and not _is_dict_annotation(fn.returns):
            self.add("tool-return", fn, f"tool {fn.name} is annotated -> {ast.unparse(fn.returns)}, not dict")
        for node in _own_nodes(fn):
            if isinstance(node, ast.Yield | ast.YieldFrom):
                self.add("tool-return", node, f"tool {fn.name} yields; a tool returns one dict")
            elif isinstance(node, ast.Return):
                what = "nothing" if node.value is None else _non_dict(node.value)
                if what:
                    self.add("tool-return", node, f"tool {fn.name} returns {what}, not a dict")
            elif isinstance(node, ast.Raise):
                self.add(
                    "tool-raise",
                    node,
                    f"tool {fn.name} raises; report failures with self.fail(category, message, ...)",
                )
        if not _terminates(fn.body):
            self.add("tool-return", fn, f"tool {fn.name} can end without returning a dict")


# -- helpers over the tree --------------------------------------------------------------------
def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, descending into if/try/with blocks but not defs or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.With):
            yield from _module_statements(stmt.body)
            if isinstance(stmt, ast.If):
                yield from _module_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _module_statements(block)


def _bindings(stmt: ast.stmt) -> Iterator[tuple[str, ast.expr | None]]:
    """``(name, value)`` for each plain name a statement assigns."""
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        yield stmt.target.id, stmt.value
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                yield target.id, stmt.value
            elif (
                isinstance(target, ast.Tuple)
                and isinstance(stmt.value, ast.Tuple)
                and len(target.elts) == len(stmt.value.elts)
            ):
                for elt, value in zip(target.elts, stmt.value.elts, strict=True):
                    if isinstance(elt, ast.Name):
                        yield elt.id, value


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


def _terminates(body: list[ast.stmt]) -> bool:
    """True when control can never fall off the end of ``body``."""
    return any(_stmt_terminates(stmt) for stmt in body)


def _stmt_terminates(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Return | ast.Raise):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return isinstance(func, ast.Attribute) and func.attr == "fail" and _root_name(func.value) == "self"
    if isinstance(stmt, ast.If):
        return _terminates(stmt.body) and _terminates(stmt.orelse)
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return _terminates(stmt.body)
    if isinstance(stmt, ast.Try | ast.TryStar):
        handled = (_terminates(stmt.body) or _terminates(stmt.orelse)) and all(
            _terminates(h.body) for h in stmt.handlers
        )
        return handled or _terminates(stmt.finalbody)
    if isinstance(stmt, ast.While):
        forever = isinstance(stmt.test, ast.Constant) and bool(stmt.test.value)
        return forever and not any(isinstance(n, ast.Break) for n in _loop_nodes(stmt))
    if isinstance(stmt, ast.Match):
        last = stmt.cases[-1].pattern if stmt.cases else None
        wildcard = isinstance(last, ast.MatchAs) and last.pattern is None
        return wildcard and all(_terminates(case.body) for case in stmt.cases)
    return False


def _loop_nodes(loop: ast.While) -> Iterator[ast.AST]:
    """Nodes of a loop body that belong to this loop (a break in an inner loop is not ours)."""
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.For | ast.While | ast.AsyncFor | ast.FunctionDef | ast.AsyncFunctionDef):
            stack.extend(ast.iter_child_nodes(node))


def _non_dict(expr: ast.expr) -> str | None:
    """What an obviously-not-a-dict return expression is; None when it may be a dict."""
    if isinstance(expr, ast.Constant):
        return "None" if expr.value is None else f"a {type(expr.value).__name__} constant"
    kinds: dict[type, str] = {
        ast.List: "a list", ast.ListComp: "a list", ast.Tuple: "a tuple", ast.Set: "a set",
        ast.SetComp: "a set", ast.GeneratorExp: "a generator", ast.JoinedStr: "a string",
    }  # fmt: skip
    if type(expr) in kinds:
        return kinds[type(expr)]
    if isinstance(expr, ast.IfExp):
        return _non_dict(expr.body) or _non_dict(expr.orelse)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in _NON_DICT_CALLS:
        return f"{expr.func.id}(...)"
    return None


def _is_dict_annotation(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split("[", 1)[0].strip().rsplit(".", 1)[-1] in ("dict", "Dict")
    if isinstance(node, ast.Subscript):
        node = node.value
    return _last_name(node) in ("dict", "Dict")


def _decorator_name(node: ast.expr) -> str | None:
    return _last_name(node.func if isinstance(node, ast.Call) else node)


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _root_name(node: ast.expr) -> str | None:
    """The name at the bottom of an ``a.b[c].d(...)`` chain."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _self_root(node: ast.expr) -> str | None:
    """For a chain starting at ``self.X``, return ``X``; None otherwise."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        inner = node.func if isinstance(node, ast.Call) else node.value
        if isinstance(node, ast.Attribute) and isinstance(inner, ast.Name) and inner.id == "self":
            return node.attr
        node = inner
    return None


def _is_self_attr(node: ast.Attribute, attr: str) -> bool:
    return node.attr == attr and isinstance(node.value, ast.Name) and node.value.id == "self"
