"""The static audit: syntax, the contract linter's static rules, and what the code may import.

It runs on the host, because nothing here executes the candidate: files are parsed, never
imported (``lint_package(load=False)``). Beyond the linter it enforces the synthesis
policy for untrusted code:

* **imports from an allow-list**: a small set of standard-library modules, pydantic, the
  authoring API of envcraft, the package's own modules (relative imports) and the
  distributions the manifest declares under ``requirements``;
* **no reaching into the runtime**: no assignment to (or ``setattr`` on) an imported module
  or class, and no introspection attributes (``__globals__``, ``__subclasses__``, frames),
  the ways module code could patch the runtime that audits and runs it;
* **requirements are plain registry names with versions** (no URLs, no paths, no markers),
  and none is a distribution the runtime itself provides.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from envcraft.core.lint import lint_package
from envcraft.core.lint.code import ImportRef, analyze_source
from envcraft.core.lint.report import Finding as LintFinding
from envcraft.core.package import package_modules
from envcraft.synth.audit.findings import Finding, StageResult, stage_result

STDLIB_ALLOWED = frozenset(
    {
        "__future__",
        "abc",
        "base64",
        "bisect",
        "calendar",
        "collections",
        "collections.abc",
        "contextlib",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "email",
        "email.message",
        "email.parser",
        "email.policy",
        "email.utils",
        "enum",
        "fnmatch",
        "fractions",
        "functools",
        "hashlib",
        "heapq",
        "html",
        "io",
        "ipaddress",
        "itertools",
        "json",
        "math",
        "numbers",
        "operator",
        "pathlib",
        "random",
        "re",
        "statistics",
        "string",
        "textwrap",
        "types",
        "typing",
        "unicodedata",
        "urllib.parse",
        "uuid",
        "zoneinfo",
    }
)
THIRD_PARTY_ALLOWED = frozenset({"pydantic", "typing_extensions", "annotated_types"})
ENVCRAFT_ALLOWED = frozenset(
    {
        "envcraft",
        "envcraft.core",
        "envcraft.core.clock",
        "envcraft.core.errors",
        "envcraft.core.repository",
        "envcraft.sandbox",
    }
)
PROVIDED = frozenset({"envcraft", "pydantic", "pydantic-core", "typing-extensions", "annotated-types"})
INTROSPECTION = frozenset(
    {
        "__globals__",
        "__subclasses__",
        "__builtins__",
        "__code__",
        "__closure__",
        "__bases__",
        "__mro__",
        "__import__",
        "__loader__",
        "__spec__",
        "__dict__",
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "gi_frame",
        "cr_frame",
        "tb_frame",
        "tb_next",
    }
)
_REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[[A-Za-z0-9._,-]+\])?"
    r"(?P<spec>\s*(?:==|>=|<=|~=|!=|<|>)\s*[0-9][0-9A-Za-z.*+!-]*"
    r"(?:\s*,\s*(?:==|>=|<=|~=|!=|<|>)\s*[0-9][0-9A-Za-z.*+!-]*)*)?$"
)


@dataclass(frozen=True)
class Requirement:
    """One declared requirement: its distribution name (normalized) and the line as written."""

    name: str
    line: str

    @property
    def module_guess(self) -> str:
        """The import name most distributions use (``python-dateutil`` is the usual exception)."""
        return self.name.replace("-", "_")


def normalize(name: str) -> str:
    """PEP 503 normalization: ``Foo_Bar.baz`` -> ``foo-bar-baz``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_requirements(root: Path) -> tuple[list[Requirement], list[Finding]]:
    """The manifest's ``requirements``, each checked for form; problems as static findings."""
    path = root / "envcraft.toml"
    try:
        lines = tomllib.loads(path.read_text(encoding="utf-8")).get("requirements", [])
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return [], []  # the linter's manifest rule reports it
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        return [], [_finding("requirements", "requirements must be a list of strings", "envcraft.toml")]
    found, findings = [], []
    for line in lines:
        match = _REQUIREMENT.match(line.strip())
        if match is None:
            message = (
                f"requirement {line!r} must be a registry name with optional versions (no URL/path/marker)"
            )
            findings.append(_finding("requirements", message, "envcraft.toml"))
            continue
        name = normalize(match.group("name"))
        if name in PROVIDED:
            message = f"requirement {line!r} is provided by the runtime; do not declare it"
            findings.append(_finding("requirements", message, "envcraft.toml"))
            continue
        found.append(Requirement(name, line.strip()))
    return found, findings


# CPython 3.11's AST validator keeps its recursion depth in per-interpreter state, so two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch". The
# engine audits candidates in threads (--workers): every parse in the host process takes this lock.
AST_LOCK = threading.Lock()


def audit_static(root: Path) -> StageResult:
    """Run the static stage over the package at ``root`` (never executes its code)."""
    with AST_LOCK:
        return _audit_static(root)


def _audit_static(root: Path) -> StageResult:
    start = time.monotonic()
    report = lint_package(root, load=False)
    findings = [_from_lint(f) for f in report.findings]
    requirements, problems = read_requirements(root)
    findings += problems
    modules = package_modules(root)
    declared = {r.module_guess for r in requirements}
    third_party: set[str] = set()
    for name in modules:
        file = f"{name}.py"
        source = (root / file).read_text(encoding="utf-8")
        analysis = analyze_source(source, file)
        if not analysis.parsed:
            continue
        for ref in analysis.imports:
            verdict = _import_verdict(ref, declared)
            if verdict == "third-party":
                third_party.add(ref.module.split(".")[0])
            elif verdict:
                findings.append(_finding("import", verdict, file, ref.line))
        findings += _runtime_reach(ast.parse(source), file)
    facts = {
        "modules": modules,
        "requirements": [r.line for r in requirements],
        "third_party_imports": sorted(third_party),
    }
    return stage_result("static", findings, time.monotonic() - start, facts)


def _import_verdict(ref: ImportRef, declared: set[str]) -> str:
    """``""`` if allowed, ``"third-party"`` if a declared requirement must provide it, else why not."""
    if ref.level:
        return ""  # the linter's module-import rule checks relative imports
    module = ref.module
    top = module.split(".")[0]
    if module in STDLIB_ALLOWED or top in THIRD_PARTY_ALLOWED:
        return ""
    if top == "envcraft":
        if module not in ENVCRAFT_ALLOWED:
            return f"imports {module}: only {', '.join(sorted(ENVCRAFT_ALLOWED))} are the authoring API"
        private = [n for n in ref.names if n.startswith("_")]
        return f"imports private names {', '.join(private)} from {module}" if private else ""
    if top in declared:
        return "third-party"
    if top in _STDLIB_MODULES:
        return f"imports {module}: not among the standard-library modules allowed (see the prompt)"
    return f"imports {module}, which is neither allowed nor provided by a declared requirement"


def _runtime_reach(tree: ast.Module, file: str) -> list[Finding]:
    """Patching imported modules or classes, and introspection that escapes the contract."""
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(alias.asname or alias.name for alias in node.names)
    findings = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            root = _chain_root(target) if isinstance(target, ast.Attribute | ast.Subscript) else None
            if root in imported:
                message = f"changes {ast.unparse(target)}, part of an imported module or class"
                findings.append(_finding("runtime-patch", message, file, getattr(node, "lineno", 0)))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
            and _chain_root(node.args[0]) in imported
        ):
            message = f"{node.func.id}() on {ast.unparse(node.args[0])}, an imported module or class"
            findings.append(_finding("runtime-patch", message, file, node.lineno))
        if isinstance(node, ast.Attribute) and node.attr in INTROSPECTION:
            message = f"uses .{node.attr}: introspection is not part of the authoring API"
            findings.append(_finding("introspection", message, file, node.lineno))
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "globals", "vars", "locals"):
            message = f"uses {node.id}: environments keep data in self.state, not in namespaces"
            findings.append(_finding("introspection", message, file, node.lineno))
    return findings


def _chain_root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _from_lint(item: LintFinding) -> Finding:
    return Finding(
        stage="static",
        code=f"lint:{item.rule}",
        message=item.message,
        severity=item.severity,
        file=item.file,
        line=item.line,
    )


def _finding(code: str, message: str, file: str, line: int = 0) -> Finding:
    return Finding(stage="static", code=code, message=message, file=file, line=line)


_STDLIB_MODULES = frozenset(sys.stdlib_module_names)
