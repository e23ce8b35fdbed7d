"""Packages of several modules: ``env.py`` (tools, State) + ``rules.py`` + ``generate.py``.

The loader makes a package directory a private Python package, so its modules reach each other
by relative import; the linter checks every module as part of one package. Each case copies the
three-module fixture (``tests/fixtures/multimodule``) and changes one thing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from envcraft.core import Session, load_package
from envcraft.core.lint import lint_package
from envcraft.core.package import PackageError, package_modules

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "multimodule"


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    root = tmp_path / "multimodule"
    shutil.copytree(FIXTURE, root)
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_modules_load_together_and_tools_use_them(pkg: Path) -> None:
    package = load_package(pkg, fresh=True)
    assert package_modules(pkg) == ["env", "generate", "rules"]
    session = Session.memory(package, seed=3)
    tab = session.call("get_tab", {"tab_id": "TAB-1"})
    assert tab["lines"], "generate.py made no lines"
    subtotal = tab["subtotal_cents"]
    charged = session.call("settle_tab", {"tab_id": "TAB-1", "tip_percent": 10})
    assert charged == {"tab_id": "TAB-1", "charged_cents": subtotal + (subtotal * 10 + 50) // 100}
    assert not list(pkg.rglob("__pycache__")), "package modules are compiled from source, never cached"


def test_a_fresh_load_sees_an_edit_of_a_sibling_module(pkg: Path) -> None:
    load_package(pkg, fresh=True)
    stat = (pkg / "rules.py").stat()
    edit(pkg / "rules.py", "return menu[drink] * quantity", "return menu[drink] * quantity * 2")
    os.utime(pkg / "rules.py", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime, as a fast repair
    session = Session.memory(load_package(pkg, fresh=True), seed=3)
    line = session.call("add_drink", {"tab_id": "TAB-1", "drink": "soda", "quantity": 1})["line"]
    assert line["cents"] == 600


def test_two_packages_with_the_same_module_names_stay_apart(pkg: Path, tmp_path: Path) -> None:
    other = tmp_path / "other" / "multimodule"
    shutil.copytree(FIXTURE, other)
    edit(other / "rules.py", "MAX_TIP_PERCENT = 30", "MAX_TIP_PERCENT = 5")
    first, second = load_package(pkg, fresh=True), load_package(other, fresh=True)
    args = {"tab_id": "TAB-1", "tip_percent": 20}
    assert "charged_cents" in Session.memory(first).call("settle_tab", args)
    assert Session.memory(second).call("settle_tab", args)["error"]["category"] == "invalid_argument"


def test_python_files_under_data_are_never_imported(pkg: Path) -> None:
    package = load_package(pkg, fresh=True)
    assert not any("not_a_module" in name for name in sys.modules)
    assert package.data.text("not_a_module.py").startswith("raise")


def test_an_import_error_names_the_module_and_line(pkg: Path) -> None:
    edit(pkg / "rules.py", "MAX_TIP_PERCENT = 30", "MAX_TIP_PERCENT = 30\nBROKEN = undefined_name")
    with pytest.raises(PackageError, match=r"at rules\.py:8: NameError"):
        load_package(pkg, fresh=True)
    report = lint_package(pkg)
    assert [(f.rule, f.file) for f in report.errors] == [("env-import", "env.py")]
    assert "rules.py:8" in report.errors[0].message


def test_the_linter_passes_the_clean_package() -> None:
    report = lint_package(FIXTURE)
    assert report.ok and report.imported and report.findings == []


def test_contract_rules_apply_to_every_module(pkg: Path) -> None:
    edit(pkg / "rules.py", "MAX_TIP_PERCENT = 30", "MAX_TIP_PERCENT = 30\nSEEN = []")
    edit(pkg / "generate.py", "rng = random.Random(seed)", "rng = random.Random()")
    found = {(f.rule, f.file, f.line) for f in lint_package(pkg).errors}
    assert found == {("module-state", "rules.py", 8), ("unseeded-random", "generate.py", 13)}


def test_a_syntax_error_in_a_sibling_stops_the_import(pkg: Path) -> None:
    edit(pkg / "generate.py", "def initial_tabs(", "def initial_tabs((")
    report = lint_package(pkg)
    assert [(f.rule, f.file) for f in report.errors] == [("syntax", "generate.py")]
    assert not report.imported


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("from .pricing import line_total", "no module pricing.py"),
        ("from . import pricing", "no module pricing.py"),
        ("from .. import rules", "reaches outside the package"),
        ("from .rules.sub import x", "no module rules.sub.py"),
    ],
)
def test_relative_imports_must_name_root_modules(pkg: Path, statement: str, message: str) -> None:
    edit(pkg / "env.py", "from . import rules\n", f"from . import rules\n{statement}\n")
    report = lint_package(pkg)
    rules = [f for f in report.errors if f.rule == "module-import"]
    assert len(rules) == 1 and rules[0].file == "env.py" and rules[0].line == 11
    assert message in rules[0].message


def test_the_environment_class_lives_in_env_py(pkg: Path) -> None:
    (pkg / "rules.py").write_text(
        (pkg / "rules.py").read_text(encoding="utf-8")
        + "\n\nfrom envcraft import Environment\n\n\nclass Extra(Environment):\n    pass\n",
        encoding="utf-8",
    )
    found = [(f.rule, f.file) for f in lint_package(pkg).errors]
    assert found == [("env-class", "rules.py")]


def test_tool_documentation_checks_point_at_the_tool_module(pkg: Path) -> None:
    edit(pkg / "env.py", "            drink: A drink on the menu (lager, stout, cider, soda).\n", "")
    found = [(f.rule, f.file, f.message) for f in lint_package(pkg).errors]
    assert found == [("tool-docstring", "env.py", "tool add_drink does not document drink under Args:")]
