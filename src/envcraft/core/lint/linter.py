"""``lint_package``: run every contract check over one environment package directory."""

from __future__ import annotations

from pathlib import Path

from envcraft.core.lint.code import analyze_source
from envcraft.core.lint.imports import check_module_cycles
from envcraft.core.lint.report import Finding, LintReport
from envcraft.core.lint.skills import check_skills
from envcraft.core.lint.structure import (
    check_data,
    check_env_class,
    check_loaded,
    check_manifest,
    check_modules,
    check_readme,
)
from envcraft.core.package import BUILTIN_ROOT, ENV_ID, PackageError, package_modules

UNSAFE_TO_IMPORT = frozenset({"file-io", "subprocess", "network", "dynamic-code"})


def resolve_package_dir(ref: str | Path) -> Path:
    """A package directory by path or built-in id; the directory need not be a valid package."""
    path = Path(ref)
    if path.is_dir():
        return path.resolve()
    if isinstance(ref, str) and ENV_ID.match(ref) and (BUILTIN_ROOT / ref).is_dir():
        return (BUILTIN_ROOT / ref).resolve()
    raise PackageError(f"no environment '{ref}' (not a built-in id nor a directory)")


def lint_package(ref: str | Path, *, load: bool = True) -> LintReport:
    """Check a package against the runtime contract (paper Table 15) and the package layout.

    Every module at the package root (``env.py``, ``rules.py``, ``generate.py``, ...) is
    checked, as one package. The static checks never run the code. ``env.py`` is then
    imported afresh for the tool checks, unless the static checks found code that touches
    files, processes or the network, or a module that does not parse (module-level code
    runs on import). The linter is not a sandbox: run it in a confined process for
    untrusted (synthesized) packages. ``load=False`` runs the static checks only, which
    never execute the package's code (safe on untrusted code anywhere).
    """
    root = resolve_package_dir(ref)
    manifest, findings = check_manifest(root)
    findings += check_readme(root)
    analyses = {
        f"{name}.py": analyze_source((root / f"{name}.py").read_text(encoding="utf-8"), f"{name}.py")
        for name in package_modules(root)
    }
    code = [f for analysis in analyses.values() for f in analysis.findings]
    env = analyses.get("env.py")
    findings += code + check_env_class(env) + check_modules(analyses) + check_module_cycles(analyses)
    imported = manifest is not None and env is not None and all(a.parsed for a in analyses.values())
    imported = load and imported and not any(f.rule in UNSAFE_TO_IMPORT for f in code)
    if imported and manifest is not None and env is not None:
        findings += check_loaded(root, manifest, analyses)
    findings += check_skills(root)
    findings += check_data(root)
    return LintReport(
        package=str(root),
        env_id=manifest.id if manifest else root.name,
        imported=imported,
        findings=sorted(findings, key=_order),
    )


def builtin_package_dirs() -> list[Path]:
    """Every folder under the built-in library that looks like a package (even a broken one)."""
    return sorted(
        p
        for p in BUILTIN_ROOT.iterdir()
        if p.is_dir() and ((p / "envcraft.toml").is_file() or (p / "env.py").is_file())
    )


def _order(item: Finding) -> tuple[str, int, str]:
    return item.file, item.line, item.rule
