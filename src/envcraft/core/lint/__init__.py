"""The environment contract linter (paper Table 15 as static checks, plus package layout).

``lint_package(path_or_id)`` returns a :class:`LintReport`; the synthesis engine uses it
as its static audit and ``envcraft envs check`` prints it.
"""

from envcraft.core.lint.linter import builtin_package_dirs, lint_package, resolve_package_dir
from envcraft.core.lint.report import RULES, Finding, LintReport, Rule

__all__ = [
    "RULES",
    "Finding",
    "LintReport",
    "Rule",
    "builtin_package_dirs",
    "lint_package",
    "resolve_package_dir",
]
