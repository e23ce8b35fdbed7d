"""Package-structure checks: manifest, README, the loaded Environment and its tools, data/.

These need the package on disk and, for the tool checks, an import of ``env.py`` through
:func:`envcraft.core.package.load_package` (fresh, so an edited package is re-read).
"""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import ValidationError

from envcraft.core.docstrings import parse_docstring
from envcraft.core.environment import Environment
from envcraft.core.lint.code import SourceAnalysis
from envcraft.core.lint.report import Finding, finding
from envcraft.core.package import Manifest, PackageError, load_package
from envcraft.core.phrasing import check_entity, check_goal, check_jobs
from envcraft.core.schema import SchemaError
from envcraft.core.tool import ToolSpec

MIN_README_WORDS = 10
_TOML_LINE = re.compile(r"at line (\d+)")


def check_manifest(root: Path) -> tuple[Manifest | None, list[Finding]]:
    """Parse ``envcraft.toml`` into a :class:`Manifest`, pointing each problem at its line."""
    path = root / "envcraft.toml"
    if not path.is_file():
        return None, [finding("manifest", "envcraft.toml", 0, "missing: a package needs id, title and kind")]
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.search(str(exc))
        return None, [finding("manifest", "envcraft.toml", int(match.group(1)) if match else 0, str(exc))]
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        return None, [
            finding(
                "manifest",
                "envcraft.toml",
                _key_line(text, str(err["loc"][0])) if err["loc"] else 0,
                f"{'.'.join(str(p) for p in err['loc']) or 'manifest'}: {err['msg']}",
            )
            for err in exc.errors(include_url=False)
        ]
    findings = []
    if manifest.id != root.name:
        message = (
            f"id {manifest.id!r} differs from the folder name {root.name!r}; built-in lookup uses the folder"
        )
        findings.append(finding("manifest-id", "envcraft.toml", _key_line(text, "id"), message))
    return manifest, findings


def _key_line(text: str, key: str) -> int:
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    return next((n for n, line in enumerate(text.splitlines(), start=1) if pattern.match(line)), 0)


def check_readme(root: Path) -> list[Finding]:
    """README.md is the agent-facing documentation (D_doc): present and saying something."""
    path = root / "README.md"
    if not path.is_file():
        return [finding("readme", "README.md", 0, "missing: README.md is what the agent reads first")]
    prose = [
        line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")
    ]
    words = len(" ".join(prose).split())
    if words == 0:
        return [finding("readme", "README.md", 0, "README.md has no text beyond headings")]
    if words < MIN_README_WORDS:
        return [finding("readme-short", "README.md", 0, f"README.md has only {words} words of text")]
    return []


def check_env_class(analysis: SourceAnalysis | None) -> list[Finding]:
    """env.py exists and defines exactly one Environment subclass (read from the AST)."""
    if analysis is None:
        return [finding("env-import", "env.py", 0, "missing: env.py holds the Environment class")]
    classes = analysis.env_classes
    if not analysis.parsed or len(classes) == 1:
        return []
    names = ", ".join(name for name, _ in classes) or "none"
    message = f"defines {len(classes)} Environment subclasses ({names}); a package has exactly one"
    return [finding("env-class", "env.py", classes[1][1] if len(classes) > 1 else 0, message)]


def check_modules(analyses: dict[str, SourceAnalysis]) -> list[Finding]:
    """The modules of a package reach each other by relative import (``from .rules import x``):
    each names a module at the package root; only env.py defines the Environment class."""
    modules = {file.removesuffix(".py") for file in analyses}
    findings: list[Finding] = []
    for file, analysis in analyses.items():
        if file != "env.py":
            findings += [
                finding("env-class", file, line, f"{name} is an Environment subclass; it belongs in env.py")
                for name, line in analysis.env_classes
            ]
        for ref in analysis.imports:
            if ref.level == 0:
                continue
            if ref.level > 1:
                message = f"{'.' * ref.level}{ref.module} reaches outside the package; its modules are flat"
                findings.append(finding("module-import", file, ref.line, message))
                continue
            wanted = [ref.module] if ref.module else list(ref.names)
            known = ", ".join(sorted(modules))
            for name in wanted:
                if name not in modules:
                    message = f"no module {name}.py at the package root (modules: {known})"
                    findings.append(finding("module-import", file, ref.line, message))
    return findings


def check_loaded(root: Path, manifest: Manifest, analyses: dict[str, SourceAnalysis]) -> list[Finding]:
    """Import env.py afresh: it loads, its kind fits, its tools are documented and their schemas build."""
    analysis = analyses["env.py"]
    class_line = analysis.env_classes[0][1] if analysis.env_classes else 0
    try:
        env_class = load_package(root, fresh=True).env_class
    except PackageError as exc:
        cause = exc.__cause__
        if isinstance(cause, SchemaError):
            return [finding("tool-schema", "env.py", class_line, f"tool schema does not build: {cause}")]
        if len(analysis.env_classes) != 1 and "Environment subclass" in str(exc):
            return []  # check_env_class already said so, with a line
        return [finding("env-import", "env.py", class_line, str(exc).split(": ", 1)[-1])]
    uses_workspace = any(a.uses_workspace for a in analyses.values())
    findings = _kind(env_class, manifest, uses_workspace, class_line)
    package_name = env_class.__module__.rpartition(".")[0]
    own = [s for s in env_class.tools.values() if s.function.__module__.startswith(package_name + ".")]
    if not own:
        findings.append(finding("no-tools", "env.py", class_line, f"{env_class.__name__} declares no @tool"))
    for spec in own:
        file = spec.function.__module__.rpartition(".")[2] + ".py"
        line = analyses[file].tool_lines.get(spec.name, 0) if file in analyses else 0
        findings.extend(_tool(spec, file, line or class_line))
    findings.extend(_entities(env_class, class_line))
    findings.extend(_jobs(env_class, class_line))
    return findings


def _jobs(env_class: type[Environment], line: int) -> list[Finding]:
    """Each job names the environment's tools, two of which change things, and its goal phrase
    only their parameters."""
    params = {name: set(spec.parameters.get("properties", {})) for name, spec in env_class.tools.items()}
    reads = frozenset(name for name, spec in env_class.tools.items() if spec.annotations.read_only)
    return [
        finding("job-decl", "env.py", line, problem) for problem in check_jobs(env_class.jobs, params, reads)
    ]


def _item_fields(record: Any) -> set[str]:
    """``LIST/*/FIELD`` for each field of the records a list field of ``record`` holds (a
    journal's ``lines/*/note``): what an entity may leave free in each item."""
    found: set[str] = set()
    for name, info in record.model_fields.items():
        args = get_args(info.annotation)
        item = args[0] if get_origin(info.annotation) is list and args else None
        if isinstance(item, type) and hasattr(item, "model_fields"):
            found |= {f"{name}/*/{field}" for field in item.model_fields}
    return found


def _entities(env_class: type[Environment], line: int) -> list[Finding]:
    """Each entity declaration names a ``dict[str, Record]`` field of the State model."""
    findings = []
    fields = getattr(env_class.State, "model_fields", {})
    for entity in env_class.entities:
        info = fields.get(entity.collection)
        record = _record_model(info.annotation) if info is not None else None
        if record is None:
            message = (
                f"entity {entity.collection!r} is not a dict-of-records field of {env_class.State.__name__}"
            )
            findings.append(finding("entity-decl", "env.py", line, message))
            continue
        for problem in check_entity(entity, set(record.model_fields) | _item_fields(record)):
            findings.append(
                finding("entity-decl", "env.py", line, f"entity {entity.collection!r}: {problem}")
            )
    return findings


def _record_model(annotation: object) -> Any:
    """The record model of a ``dict[str, Record]`` annotation, else None."""
    args: tuple[Any, ...] = tuple(getattr(annotation, "__args__", ()))
    if len(args) == 2 and hasattr(args[1], "model_fields"):
        return args[1]
    return None


def _kind(env_class: type[Environment], manifest: Manifest, uses_workspace: bool, line: int) -> list[Finding]:
    is_claw = any(klass.__name__ == "ClawEnvironment" for klass in env_class.__mro__)
    name = env_class.__name__
    if manifest.kind == "claw" and not is_claw:
        return [finding("manifest-kind", "env.py", line, f"kind = claw but {name} is not a ClawEnvironment")]
    if manifest.kind == "tool" and is_claw:
        return [finding("manifest-kind", "env.py", line, f"{name} is a ClawEnvironment but kind = tool")]
    if manifest.kind == "tool" and uses_workspace:
        message = "uses self.workspace but kind = tool (tool sessions have no workspace)"
        return [finding("manifest-kind", "env.py", line, message)]
    return []


def _tool(spec: ToolSpec, file: str, line: int) -> list[Finding]:
    doc = parse_docstring(spec.function.__doc__)
    params = list(spec.parameters["properties"])
    findings = []
    if not doc.summary:
        findings.append(finding("tool-docstring", file, line, f"tool {spec.name} has no docstring summary"))
    undocumented = [p for p in params if not doc.args.get(p)]
    if undocumented:
        message = f"tool {spec.name} does not document {', '.join(undocumented)} under Args:"
        findings.append(finding("tool-docstring", file, line, message))
    unknown = sorted(set(doc.args) - set(params))
    if unknown:
        message = f"tool {spec.name} documents unknown args {', '.join(unknown)}"
        findings.append(finding("tool-docstring-style", file, line, message))
    if doc.summary and not doc.returns:
        message = f"tool {spec.name} has no Returns: section describing its result"
        findings.append(finding("tool-docstring-style", file, line, message))
    goal = spec.annotations.goal
    if goal is not None:
        for problem in check_goal(goal, set(params)):
            findings.append(finding("goal-syntax", file, line, f"tool {spec.name}: {problem}"))
    elif spec.annotations.exclusive and spec.annotations.read_only is not True:
        message = f"tool {spec.name} changes state but declares no goal phrase (@tool(goal=...))"
        findings.append(finding("tool-goal", file, line, message))
    try:
        json.dumps(spec.openai_schema())
    except (TypeError, ValueError) as exc:
        findings.append(finding("tool-schema", file, line, f"tool {spec.name} schema is not JSON: {exc}"))
    return findings


def check_data(root: Path) -> list[Finding]:
    """Every json / jsonl / csv file under ``data/`` parses (tools read them through self.data)."""
    base = root / "data"
    if not base.is_dir():
        return []
    findings = []
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        try:
            problem = _parse_data(path.read_text(encoding="utf-8"), path.suffix.lower())
        except UnicodeDecodeError:
            problem = (0, "not UTF-8 text")
        if problem:
            findings.append(finding("data-parse", rel, *problem))
    return findings


def _parse_data(text: str, suffix: str) -> tuple[int, str] | None:
    """``(line, message)`` for the first parse problem, or None."""
    if suffix == ".json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            return exc.lineno, f"invalid JSON: {exc.msg}"
    elif suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                if line.strip():
                    json.loads(line)
            except json.JSONDecodeError as exc:
                return number, f"invalid JSON line: {exc.msg}"
    elif suffix == ".csv":
        reader = csv.reader(io.StringIO(text))
        try:
            header = next(reader, None)
            if not header or not any(cell.strip() for cell in header):
                return 1, "CSV has no header row"
            for row in reader:
                if row and len(row) != len(header):
                    return reader.line_num, f"row has {len(row)} fields, header has {len(header)}"
        except csv.Error as exc:
            return reader.line_num, f"invalid CSV: {exc}"
    return None
