"""Reference environments as the prompt shows them: the contract in full, the code by budget.

A reference is one of the nine archetype packages. What a model must imitate is shown in
full: ``ARCHETYPE.md`` (the design contract), ``envcraft.toml``, ``README.md``, the State
(every pydantic model and type alias, with the helpers their validators call: ``state.py`` in
the four-module layout, else what ``env.py`` holds before its class), the tool
surface (the Environment class with each ``@tool``'s decorator, signature and docstring,
bodies elided) and one skill. The implementation follows only as far as ``budget`` tokens
allow, in the order a model learns most from: the Environment class's tool bodies and
helpers, then the domain logic (``rules.py`` and the functions ``env.py`` keeps beside
the State, or in a single-file package the classes and functions before the class), then
the S0 generator (``generate.py``, or in a single-file package what follows the class). Whole
functions or classes are included or named as omitted, never cut mid-way.

Everything is read from the source by AST; reference code is never imported here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from envcraft.synth.tokens import count_tokens

DEFAULT_BUDGET = 1900  # implementation tokens per reference (the authoring API says the rest)
_MODEL_BASES = frozenset({"StateModel", "BaseModel", "RootModel", "Enum", "StrEnum", "IntEnum"})
_ENV_BASES = frozenset({"Environment", "ClawEnvironment"})
_SMALL_CONSTANT = 240  # characters: a constant shown with the State (bigger ones are data)


@dataclass
class Section:
    """One titled part of a reference: a file or an extract of one."""

    title: str
    text: str
    language: str = ""

    def render(self) -> str:
        fence = "````" if "```" in self.text else "```"
        return f"#### {self.title}\n{fence}{self.language}\n{self.text.rstrip()}\n{fence}\n"


@dataclass
class Reference:
    """A reference package rendered for the prompt, with what the budget left out."""

    env_id: str
    archetype: str
    sections: list[Section] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)

    def render(self) -> str:
        head = f"### Reference `{self.env_id}` (archetype `{self.archetype}`)\n"
        body = "\n".join(section.render() for section in self.sections)
        if self.omitted:
            grouped: dict[str, list[str]] = {}
            for entry in self.omitted:
                name, _, title = entry.partition(" (")
                grouped.setdefault(title.rstrip(")"), []).append(name.rsplit(".", 1)[-1])
            lines = [f"- {title}: {', '.join(names)}" for title, names in grouped.items()]
            body += "\nLeft out for the prompt budget:\n" + "\n".join(lines) + "\n"
        return head + "\n" + body

    def tokens(self) -> int:
        return count_tokens(self.render())


def render_reference(root: Path, archetype: str, budget: int = DEFAULT_BUDGET) -> Reference:
    """The prompt's view of the package at ``root`` (see the module docstring)."""
    ref = Reference(env_id=root.name, archetype=archetype)
    for name, language in (
        ("ARCHETYPE.md", "markdown"),
        ("envcraft.toml", "toml"),
        ("README.md", "markdown"),
    ):
        text = _read(root / name)
        if text:
            ref.sections.append(Section(name, text, language))
    env = _Module(root / "env.py")
    state = _Module(root / "state.py")
    if state.source:  # state <- rules <- generate <- env: env.py's imports show how they connect
        ref.sections.append(Section("state.py: the State", state.state_source(), "python"))
        ref.sections.append(Section("env.py: imports", env.state_source(), "python"))
    else:
        ref.sections.append(Section("env.py: imports and State", env.state_source(), "python"))
    ref.sections.append(Section("env.py: tool surface (bodies elided)", env.surface_source(), "python"))
    skills = sorted((root / "skills").glob("*/SKILL.md"))
    if skills:
        rel = skills[0].relative_to(root).as_posix()
        ref.sections.append(Section(rel, _read(skills[0]), "markdown"))
    units = env.implementation_units(root)
    shown: dict[str, list[str]] = {}
    left = budget
    for title, name, source in units:
        cost = count_tokens(source)
        if cost <= left:
            shown.setdefault(title, []).append(source)
            left -= cost
        else:
            ref.omitted.append(f"{name} ({title})")
    for title, parts in shown.items():
        ref.sections.append(Section(title, "\n\n".join(parts), "python"))
    return ref


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


class _Module:
    """One module's source, split into the top-level units the prompt shows or omits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.source = _read(path)
        self.tree = ast.parse(self.source) if self.source else ast.Module(body=[], type_ignores=[])
        self.env_class = next(
            (n for n in self.tree.body if isinstance(n, ast.ClassDef) and _bases(n) & _ENV_BASES), None
        )
        self.models = self._models()

    def segment(self, node: ast.AST) -> str:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # type: ignore[attr-defined]
        lines = self.source.splitlines()[start - 1 : node.end_lineno]  # type: ignore[attr-defined]
        return "\n".join(lines)

    def _models(self) -> set[str]:
        names: set[str] = set()
        changed = True
        while changed:
            changed = False
            for node in self.tree.body:
                new = isinstance(node, ast.ClassDef) and node.name not in names
                if new and _bases(node) & (_MODEL_BASES | names):  # type: ignore[arg-type]
                    names.add(node.name)  # type: ignore[attr-defined]
                    changed = True
        return names

    def state_source(self) -> str:
        """Imports, type aliases, small constants, the models and the helpers they validate with."""
        return "\n\n".join(self.segment(node) for node in self.state_nodes())

    def state_nodes(self) -> list[ast.stmt]:
        """The top-level statements :meth:`state_source` shows, in source order."""
        keep: list[ast.stmt] = []
        before_env = [n for n in self.tree.body if self.env_class is None or n.lineno < self.env_class.lineno]
        for node in before_env:
            if self._state_part(node):
                keep.append(node)
        used = {n.id for node in keep for n in ast.walk(node) if isinstance(n, ast.Name)}
        for node in before_env:
            if isinstance(node, ast.FunctionDef) and node.name in used:
                keep.append(node)
        keep.sort(key=lambda n: n.lineno)
        return keep

    def _state_part(self, node: ast.stmt) -> bool:
        if isinstance(node, ast.Import | ast.ImportFrom):
            return True
        if isinstance(node, ast.ClassDef):
            return node.name in self.models
        return isinstance(node, ast.Assign | ast.AnnAssign) and len(self.segment(node)) <= _SMALL_CONSTANT

    def surface_source(self) -> str:
        """The Environment class: docstring, class attributes and each tool without its body."""
        cls = self.env_class
        if cls is None:
            return ""
        lines = [self.source.splitlines()[cls.lineno - 1]]
        for node in cls.body:
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            if docstring or isinstance(node, ast.Assign | ast.AnnAssign):
                lines.append(_indent(self.segment(node)))
            elif isinstance(node, ast.FunctionDef) and _is_tool(node):
                first = node.body[0]
                has_doc = ast.get_docstring(node, clean=False) is not None
                block = [_indent(self.segment(node).split("\n" + _line(self.source, first.lineno))[0])]
                if has_doc:
                    block.append(_indent(self.segment(first), "        "))
                block.append("        ...")
                lines.append("\n" + "\n".join(block))
        return "\n".join(lines)

    def implementation_units(self, root: Path) -> list[tuple[str, str, str]]:
        """``(section title, unit name, source)`` in the order the budget spends on them."""
        units: list[tuple[str, str, str]] = []
        cls = self.env_class
        if cls is not None:
            for node in cls.body:
                if isinstance(node, ast.FunctionDef):
                    units.append(
                        (
                            "env.py: tool and helper implementations",
                            f"{cls.name}.{node.name}",
                            _indent(self.segment(node), ""),
                        )
                    )
        rules = _Module(root / "rules.py")
        before = [n for n in self.tree.body if cls is not None and n.lineno < cls.lineno]
        after = [n for n in self.tree.body if cls is not None and n.lineno > cls.end_lineno]  # type: ignore[operator]
        units += _units(rules, rules.tree.body, "rules.py")
        units += _units(self, [n for n in before if not self._shown_with_state(n)], "env.py: domain logic")
        state = _Module(root / "state.py")
        shown = {id(node) for node in state.state_nodes()}
        units += _units(state, [n for n in state.tree.body if id(n) not in shown], "state.py: helpers")
        generate = _Module(root / "generate.py")
        if generate.source:  # split package: what follows the class in env.py is domain logic too
            units += _units(self, after, "env.py: domain logic")
            units += _units(generate, generate.tree.body, "generate.py")
        else:
            units += _units(self, after, "env.py: the S0 generator")
        return units

    def _shown_with_state(self, node: ast.stmt) -> bool:
        return (
            node.lineno <= 0
            or (isinstance(node, ast.ClassDef) and node.name in self.models)
            or (not isinstance(node, ast.ClassDef | ast.FunctionDef))
        )


def _units(module: _Module, nodes: list[ast.stmt], title: str) -> list[tuple[str, str, str]]:
    """Top-level functions and classes (module-level data and imports are not worth the budget)."""
    return [
        (title, node.name, module.segment(node))
        for node in nodes
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name not in module.models
    ]


def _bases(node: ast.ClassDef) -> set[str]:
    names = set()
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.add(base.id)
        elif isinstance(base, ast.Attribute):
            names.add(base.attr)
    return names


def _is_tool(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "tool") or (
            isinstance(target, ast.Attribute) and target.attr == "tool"
        ):
            return True
    return False


def _line(source: str, number: int) -> str:
    return source.splitlines()[number - 1]


def _indent(text: str, prefix: str = "    ") -> str:
    """Re-indent a class member to one level (its source keeps its own indentation)."""
    lines = text.splitlines()
    if not lines:
        return text
    first = lines[0]
    current = len(first) - len(first.lstrip())
    return "\n".join((prefix + line[current:]) if line.strip() else "" for line in lines)
