"""The contract linter: each rule fires on a tiny bad package, at the right line, and only there.

Packages are real directories under ``tmp_path``; the linter imports them through the real
loader. A clean baseline package yields no findings at all, so every case below shows that
its one change is what the linter reports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envcraft.core import load_package
from envcraft.core.lint import RULES, LintReport, builtin_package_dirs, lint_package
from envcraft.core.lint.code import analyze_source
from envcraft.core.lint.skills import FrontMatterError, parse_front_matter
from envcraft.core.package import PackageError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ENVCRAFT = Path(sys.executable).parent / "envcraft"
MARK = "# <-"
SKILL_PATH = "skills/deposit-money/SKILL.md"

ENV_TEMPLATE = '''\
"""A tiny ledger used by the linter tests."""

import datetime
import os
import random
import time
import uuid
from pathlib import Path

from envcraft import Environment, StateModel, tool

#MODULE


class LedgerState(StateModel):
    balances: dict[str, int] = {}


class Ledger(Environment):
    """Accounts with balances in cents."""

    State = LedgerState
#CLASS

    @tool(goal="put {amount:cents} into {account}")
    def deposit(self, account: str, amount: int) -> dict:
        """Add money to an account.

        Args:
            account: Account name.
            amount: Amount in cents (positive).

        Returns:
            The account and its new balance.
        """
        if amount <= 0:
            self.fail("invalid_argument", "amount must be positive", field="amount")
#BODY
        balance = self.state.balances.get(account, 0) + amount
        self.state.balances[account] = balance
        return {"account": account, "balance": balance}
'''
MANIFEST = 'id = "ledger"\ntitle = "Ledger"\nkind = "tool"\narchetypes = ["transactional_workspace"]\n'
README = "# Ledger\n\nKeeps account balances in cents. Use `deposit` to add money to an account.\n"
SKILL = (
    "---\nname: deposit-money\ndescription: Deposit money into a ledger account. Use when asked to "
    "add funds.\n---\n\n# Deposit\n\nCall `deposit(account, amount)` with a positive amount in cents.\n"
)


def env_source(module: str = "", cls: str = "", body: str = "") -> str:
    """The template with snippets placed at module level, in the class body or in the tool."""
    return (
        ENV_TEMPLATE.replace("#MODULE", module)
        .replace("#CLASS", textwrap.indent(cls, "    "))
        .replace("#BODY", textwrap.indent(body, "        "))
    )


def make_package(base: Path, files: dict[str, str | None] | None = None, name: str = "ledger") -> Path:
    """A complete, clean package; ``files`` overrides (None deletes) paths inside it."""
    root = base / name
    layout: dict[str, str | None] = {
        "envcraft.toml": MANIFEST,
        "README.md": README,
        "env.py": env_source(),
        "skills/deposit-money/SKILL.md": SKILL,
        "data/rates.json": '{"fee_cents": 25}\n',
        **(files or {}),
    }
    for rel, text in layout.items():
        if text is not None:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
    return root


def marked_line(text: str, needle: str = MARK) -> int:
    (line,) = [n for n, row in enumerate(text.splitlines(), start=1) if needle in row]
    return line


def located(report: LintReport) -> set[tuple[str, str, int]]:
    return {(f.rule, f.file, f.line) for f in report.findings}


def test_clean_package_has_no_findings(tmp_path: Path) -> None:
    report = lint_package(make_package(tmp_path))
    assert report.findings == []
    assert report.ok and report.env_id == "ledger"


# -- code rules: (rule, where the snippet goes, snippet with the offending line marked) -------------
CODE_CASES = [
    ("wall-clock", "body", "stamp = datetime.datetime.now()  # <-"),
    ("wall-clock", "body", "started = time.time()  # <-"),
    ("wall-clock", "module", "from datetime import date as day\n\nTODAY = day.today()  # <-"),
    ("unseeded-random", "body", "bonus = random.randint(0, 5)  # <-"),
    ("unseeded-random", "body", "rng = random.Random()  # <-"),
    ("unseeded-random", "body", "ref = uuid.uuid4().hex  # <-"),
    ("unseeded-random", "body", "salt = os.urandom(4)  # <-"),
    ("unseeded-random", "module", "import secrets\n\nTOKEN = secrets.token_hex(8)  # <-"),
    ("file-io", "body", "open('data/log.txt', 'a').write(account)  # <-"),
    ("file-io", "body", "Path('data/rates.json').write_text(account)  # <-"),
    ("file-io", "body", "os.remove('data/rates.json')  # <-"),
    ("file-io", "body", "import shutil as sh\nsh.copy(account, 'data/copy.txt')  # <-"),
    ("subprocess", "module", "import subprocess  # <-"),
    ("subprocess", "body", "os.system('ls')  # <-"),
    ("subprocess", "body", "import asyncio\nasyncio.create_subprocess_shell('ls')  # <-"),
    ("network", "module", "import requests  # <-"),
    ("network", "module", "from urllib import request  # <-"),
    ("network", "module", "import http.client  # <-"),
    ("network", "body", "import socket  # <-"),
    ("dynamic-code", "body", "eval(account)  # <-"),
    ("dynamic-code", "body", "exec('x = 1')  # <-"),
    ("module-state", "module", "CACHE = {}  # <-"),
    ("module-state", "module", "seen: list[str] = []  # <-"),
    ("module-state", "module", "import collections\n\ncounts = collections.defaultdict(int)  # <-"),
    ("global-statement", "body", "global TOTAL  # <-"),
    ("class-state", "cls", "ledger_cache: dict = {}  # <-"),
    ("class-state", "module", "class Helper:\n    pending = []  # <-"),
    ("instance-state", "body", "self.last_account = account  # <-"),
    ("instance-state", "body", "self.recent.append(account)  # <-"),
    ("fail-category", "body", "if not account:\n    self.fail('missing', 'no account')  # <-"),
    ("tool-return", "body", "if amount > 10_000:\n    return  # <-"),
    ("tool-return", "body", "if amount > 10_000:\n    return 'too much'  # <-"),
    ("tool-return", "body", "if amount > 10_000:\n    return [amount]  # <-"),
    ("tool-return", "body", "if amount > 10_000:\n    yield amount  # <-"),
    (
        "tool-return",
        "cls",
        "\n@tool\ndef audit(self) -> dict:  # <-\n"
        '    """Check the ledger.\n\n    Returns:\n        Nothing, by mistake.\n    """\n'
        "    for name in self.state.balances:\n        return {'first': name}\n",
    ),
    (
        "tool-return",
        "cls",
        "\n@tool\ndef total(self) -> int:  # <-\n"
        '    """Sum all balances.\n\n    Returns:\n        The sum.\n    """\n'
        "    return {'total': sum(self.state.balances.values())}\n",
    ),
]
WARNING_CASES = [
    ("tool-raise", "body", "if amount > 10_000:\n    raise ValueError('too much')  # <-"),
    ("builtin-hash", "body", "bucket = hash(account) % 7  # <-"),
    ("module-object", "module", "import threading\n\nlock = threading.Lock()  # <-"),
]


@pytest.mark.parametrize(("rule", "where", "snippet"), CODE_CASES)
def test_code_rule_fires_at_its_line(tmp_path: Path, rule: str, where: str, snippet: str) -> None:
    source = env_source(**{where: snippet})
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert RULES[rule].severity == "error"
    assert {(f.rule, f.line) for f in report.errors} == {(rule, marked_line(source))}
    assert not report.ok


@pytest.mark.parametrize(("rule", "where", "snippet"), WARNING_CASES)
def test_warning_rule_fires_without_failing(tmp_path: Path, rule: str, where: str, snippet: str) -> None:
    source = env_source(**{where: snippet})
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert located(report) == {(rule, "env.py", marked_line(source))}
    assert report.ok


ALLOWED = '''\
"""Everything here is within the contract; the linter must stay quiet."""

import logging
import random
from types import MappingProxyType
from urllib.parse import quote

from envcraft import StateModel, tool
from envcraft.core.errors import ErrorCategory
from envcraft.sandbox.claw import ClawEnvironment

log = logging.getLogger(__name__)
STATUSES = ("open", "closed")
LIMITS = MappingProxyType({"open": 3})
Status = tuple[str, ...]
__all__ = ["Notes"]


class NotesState(StateModel):
    notes: dict[str, str] = {}
    order: list[str] = []


class Notes(ClawEnvironment):
    """Notes kept as files in the workspace."""

    State = NotesState

    @tool(goal="save the note {name} saying {text}")
    def save(self, name: str, text: str, mode: str = "plain") -> dict:
        """Save a note to the workspace.

        Args:
            name: Note name.
            text: Note text.
            mode: plain or quoted.

        Returns:
            Where the note went.
        """
        ws = self.workspace
        body = quote(text) if mode == "quoted" else text.replace("\\r", "")
        ws.write_text(f"notes/{name}.md", body)
        self.workspace.read_text(f"notes/{name}.md")
        self.state.notes[name] = self.now().isoformat()
        self.state.order.append(name)
        pick = self.rng.choice(STATUSES)
        try:
            size = len(self.data.text("sizes.txt"))
        except FileNotFoundError:
            self.fail(ErrorCategory.NOT_FOUND, "no sizes")
        match mode:
            case "plain":
                return {"name": name, "size": size, "pick": pick}
            case _:
                return dict(name=name, size=size) if size else {"name": name}

    @tool(goal="remove the note {name}")
    def drop(self, name: str) -> dict:
        """Remove a note.

        Args:
            name: Note name.

        Returns:
            The removed name.
        """
        while True:
            if name in self.state.notes:
                del self.state.notes[name]
                result = {"removed": name}
                return result
            self.fail("not_found", f"no note {name}")

    @classmethod
    def seeded(cls, seed: int) -> list[str]:
        rng = random.Random(seed)
        return sorted(rng.sample(STATUSES, 2))
'''


def test_contract_abiding_code_is_not_flagged(tmp_path: Path) -> None:
    manifest = MANIFEST.replace('"tool"', '"claw"')
    report = lint_package(make_package(tmp_path, {"env.py": ALLOWED, "envcraft.toml": manifest}))
    assert report.findings == []


@pytest.mark.parametrize(
    ("body", "ends"),
    [
        ("if x:\n    return {}\nelse:\n    return {}", True),
        ("if x:\n    return {}", False),
        ("try:\n    return {}\nexcept KeyError:\n    self.fail('not_found', 'x')", True),
        ("try:\n    return {}\nexcept KeyError:\n    pass", False),
        ("for i in x:\n    return {}", False),
        ("while True:\n    if x:\n        break\nreturn {}", True),
        ("while True:\n    if x:\n        break", False),
        ("with x:\n    raise KeyError(x)", True),
        ("match x:\n    case 1:\n        return {}", False),
        ("match x:\n    case 1:\n        return {}\n    case _:\n        return {}", True),
    ],
)
def test_missing_return_follows_control_flow(body: str, ends: bool) -> None:
    source = "class E(Environment):\n    @tool\n    def t(self, x: int) -> dict:\n"
    analysis = analyze_source(source + textwrap.indent(body, " " * 8) + "\n", "env.py")
    missing = [f for f in analysis.findings if "can end without" in f.message]
    assert (not missing) == ends


def test_syntax_error_is_reported_at_its_line(tmp_path: Path) -> None:
    source = env_source(body="x = (  # <-")
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert {f.rule for f in report.errors} == {"syntax"}
    assert report.errors[0].line >= marked_line(source)


# -- structure rules ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"envcraft.toml": None}, {("manifest", "envcraft.toml", 0)}),
        ({"envcraft.toml": MANIFEST + "kind = 'tool'\n"}, {("manifest", "envcraft.toml", 5)}),
        ({"envcraft.toml": MANIFEST.replace('"tool"', '"web"')}, {("manifest", "envcraft.toml", 3)}),
        (
            {"envcraft.toml": MANIFEST.replace("transactional_workspace", "chatbot")},
            {("manifest", "envcraft.toml", 4)},
        ),
        ({"README.md": None}, {("readme", "README.md", 0)}),
        ({"README.md": "# Ledger\n\n## Tools\n"}, {("readme", "README.md", 0)}),
        ({"README.md": "# Ledger\n\nA ledger.\n"}, {("readme-short", "README.md", 0)}),
        ({"env.py": None}, {("env-import", "env.py", 0)}),
        (
            {"env.py": "import not_a_module_anywhere\n"},
            {("env-import", "env.py", 0), ("env-class", "env.py", 0)},
        ),
        ({"skills/deposit-money/SKILL.md": None}, {("skill-frontmatter", SKILL_PATH, 0)}),
        ({"data/rates.json": '{\n  "fee": 25,\n}\n'}, {("data-parse", "data/rates.json", 3)}),
        ({"data/rows.csv": "a,b\n1,2\n3\n"}, {("data-parse", "data/rows.csv", 3)}),
        ({"data/rows.jsonl": '{"a": 1}\n{"a": \n'}, {("data-parse", "data/rows.jsonl", 2)}),
    ],
)
def test_structure_rules(
    tmp_path: Path, files: dict[str, str | None], expected: set[tuple[str, str, int]]
) -> None:
    if files.get(SKILL_PATH, "") is None:
        (tmp_path / "ledger/skills/deposit-money").mkdir(parents=True)
    report = lint_package(make_package(tmp_path, files))
    assert located(report) == expected


def test_no_skills_is_a_warning(tmp_path: Path) -> None:
    root = make_package(tmp_path, {"skills/deposit-money/SKILL.md": None})
    report = lint_package(root)
    assert located(report) == {("skill-missing", "skills", 0)} and report.ok


def test_manifest_id_must_match_folder(tmp_path: Path) -> None:
    report = lint_package(make_package(tmp_path, name="ledger_v2"))
    assert located(report) == {("manifest-id", "envcraft.toml", 1)} and report.ok


CYCLE_RULES = '''"""Fees of the ledger."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .env import LedgerState


def fee(state: "LedgerState") -> int:
    return 25
'''
CYCLE_GENERATE = '''"""S0 of the ledger."""


def build() -> dict:
    from .env import LedgerState

    return {"state": LedgerState()}
'''


def test_modules_that_import_each_other_are_a_cycle(tmp_path: Path) -> None:
    """A cycle hidden under TYPE_CHECKING or in a function is still a cycle: reported at the
    import that opens it, with its path."""
    source = env_source(module="from .rules import fee  # <-")
    report = lint_package(make_package(tmp_path, {"env.py": source, "rules.py": CYCLE_RULES}))
    assert located(report) == {("module-cycle", "env.py", marked_line(source))} and not report.ok
    assert [f.message for f in report.errors] == ["import cycle: env.py -> rules.py -> env.py"]
    assert RULES["module-cycle"].severity == "error"
    source = env_source(module="from . import generate, rules  # <-")
    files = {"env.py": source, "rules.py": CYCLE_RULES, "generate.py": CYCLE_GENERATE}
    report = lint_package(make_package(tmp_path / "three", files))
    assert [(f.rule, f.line, f.message) for f in report.errors] == [
        (
            "module-cycle",
            marked_line(source),
            "import cycle: env.py -> generate.py -> env.py (also entangled: rules.py)",
        )
    ]


def test_modules_importing_in_one_direction_are_no_cycle(tmp_path: Path) -> None:
    rules = '''"""Fees of the ledger."""\n\nfrom .state import FEE\n\n\ndef fee() -> int:\n    return FEE\n'''
    files = {
        "env.py": env_source(module="from .rules import fee"),
        "rules.py": rules,
        "state.py": "FEE = 25\n",
    }
    assert "module-cycle" not in lint_package(make_package(tmp_path, files)).rules()


def test_two_environment_classes(tmp_path: Path) -> None:
    source = env_source(cls="") + "\n\nclass Second(Environment):  # <-\n    pass\n"
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert located(report) == {("env-class", "env.py", marked_line(source))}


def test_tool_documentation_and_schema(tmp_path: Path) -> None:
    source = env_source(
        cls='\n@tool(goal="rename {old} to {new}")\ndef rename(self, old: str, new: str) -> dict:  # <-\n'
        '    """Rename an account.\n\n'
        '    Args:\n        old: Current name.\n        other: Not a parameter.\n    """\n'
        "    return {'old': old, 'new': new}\n"
    )
    line = marked_line(source)
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert located(report) == {("tool-docstring", "env.py", line), ("tool-docstring-style", "env.py", line)}
    messages = " ".join(f.message for f in report.findings)
    assert "does not document new" in messages and "unknown args other" in messages
    assert "no Returns" in messages


def test_tool_without_docstring(tmp_path: Path) -> None:
    source = env_source(
        cls="\n@tool(read_only=True)\ndef ping(self) -> dict:  # <-\n    return {'pong': True}\n"
    )
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert located(report) == {("tool-docstring", "env.py", marked_line(source))}


def test_goal_phrases_and_entity_declarations_are_checked(tmp_path: Path) -> None:
    source = env_source(
        cls='\nentities = (Entity("balances", "account"), Entity("nowhere", "thing", ("{nope}",)))\n'
        '\n@tool(goal="move {amount} to {acount}")\n'
        "def move(self, account: str, amount: int) -> dict:  # <-\n"
        '    """Move money.\n\n    Args:\n        account: Account.\n        amount: Cents.\n\n'
        '    Returns:\n        Nothing.\n    """\n    return {}\n'
        '\n@tool\ndef reset_all(self) -> dict:\n    """Zero every account.\n\n'
        '    Returns:\n        Nothing.\n    """\n'
        "    return {}\n"
    ).replace("from envcraft import Environment,", "from envcraft import Entity, Environment,")
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    rules = {f.rule: f.message for f in report.findings}
    assert "unknown parameters acount" in rules["goal-syntax"]
    assert "'balances' is not a dict-of-records" in rules["entity-decl"] or "nowhere" in rules["entity-decl"]
    assert "reset_all changes state but declares no goal phrase" in rules["tool-goal"]
    assert not report.ok


def test_unflat_tool_schema(tmp_path: Path) -> None:
    source = env_source(
        cls='\n@tool\ndef tag(self, tags: dict[str, str]) -> dict:\n    """Tag.\n\n    Args:\n'
        '        tags: Tags.\n    """\n    return {}\n'
    )
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    (item,) = report.findings
    assert (item.rule, item.line) == ("tool-schema", marked_line(source, "class Ledger("))
    assert "not flat" in item.message


def test_kind_must_match_the_code(tmp_path: Path) -> None:
    claw_manifest = MANIFEST.replace('"tool"', '"claw"')
    report = lint_package(make_package(tmp_path / "a", {"envcraft.toml": claw_manifest}))
    assert {f.rule for f in report.findings} == {"manifest-kind"}
    uses_workspace = env_source(body="self.workspace.write_text('x.txt', account)")
    report = lint_package(make_package(tmp_path / "b", {"env.py": uses_workspace}))
    assert {f.rule for f in report.findings} == {"manifest-kind"}


def test_environment_without_tools(tmp_path: Path) -> None:
    source = '"""No tools."""\nfrom envcraft import Environment\n\n\n'
    source += 'class Empty(Environment):\n    """Nothing to call."""\n'
    report = lint_package(make_package(tmp_path, {"env.py": source}))
    assert located(report) == {("no-tools", "env.py", 5)} and report.ok


@pytest.mark.parametrize(
    ("skill", "line", "fragment"),
    [
        ("# Deposit\n\nNo front matter.\n", 1, "must start with '---'"),
        ("---\nname: deposit-money\ndescription: x\n", 1, "not closed"),
        ("---\nname: deposit-cash\ndescription: Deposit.\n---\nBody.\n", 2, "must equal its folder"),
        ("---\nname: Deposit_Money\ndescription: Deposit.\n---\nBody.\n", 2, "a-z, 0-9"),
        ("---\nname: deposit-money\n---\nBody.\n", 1, "non-empty 'description'"),
        ("---\nname: deposit-money\ndescription: " + "x" * 1025 + "\n---\nBody.\n", 3, "at most 1024"),
        ("---\nname: deposit-money\ndescription: D.\nversion: 2\n---\nBody.\n", 4, "unknown front matter"),
        ("---\nname: deposit-money\ndescription: D.\nthis is not yaml\n---\nBody.\n", 4, "key: value"),
    ],
)
def test_skill_front_matter_errors(tmp_path: Path, skill: str, line: int, fragment: str) -> None:
    report = lint_package(make_package(tmp_path, {SKILL_PATH: skill}))
    (item,) = report.findings
    assert (item.rule, item.file, item.line) == ("skill-frontmatter", SKILL_PATH, line)
    assert fragment in item.message


@pytest.mark.parametrize(
    ("front", "fragment"),
    [
        ("name: deposit-money\ndescription: [deposit, money]\n", "skills-ref: Invalid YAML"),
        ("name: deposit-money\ndescription: 'Deposit.'\ncompatibility: {a: b}\n", "skills-ref: Invalid YAML"),
    ],
)
def test_the_reference_validator_has_the_final_word(tmp_path: Path, front: str, fragment: str) -> None:
    """Front matter the line checks accept but strict YAML (skills-ref) refuses."""
    report = lint_package(make_package(tmp_path, {SKILL_PATH: f"---\n{front}---\nBody.\n"}))
    (item,) = report.findings
    assert (item.rule, item.file, item.severity) == ("skill-spec", SKILL_PATH, "error")
    assert item.message.startswith(fragment) and not report.ok


def test_every_shipped_skill_passes_the_reference_validator() -> None:
    from envcraft.core.package import builtin_ids, load_package
    from envcraft.core.skills import validate_skill

    checked = 0
    for env in builtin_ids():
        for skill_md in load_package(env).skills.values():
            assert validate_skill(skill_md.parent) == [], skill_md
            checked += 1
    assert checked >= 14


def test_skill_body_length(tmp_path: Path) -> None:
    front = "---\nname: deposit-money\ndescription: Deposit.\n---\n"
    for body, expected in (("", {"skill-body"}), ("step\n" * 501, {"skill-body"}), ("step\n" * 499, set())):
        root = make_package(tmp_path / str(len(body)), {"skills/deposit-money/SKILL.md": front + body})
        assert {f.rule for f in lint_package(root).findings} == expected


def test_front_matter_parser_handles_quotes_and_blocks() -> None:
    text = (
        "---\n# comment\nname: 'deposit-money'\ndescription: >\n  Deposit money.\n  Use when asked.\n"
        'license: "Apache-2.0"\nmetadata:\n  author: ledger-team\n---\n\n# Body\n'
    )
    front = parse_front_matter(text)
    assert front.fields["name"] == "deposit-money"
    assert front.fields["description"] == "Deposit money. Use when asked."
    assert front.fields["license"] == "Apache-2.0"
    assert front.lines == {"name": 3, "description": 4, "license": 7, "metadata": 8}
    assert front.body == ["", "# Body"]
    with pytest.raises(FrontMatterError):
        parse_front_matter("---\nname: a\nname: b\n---\n")


def test_relint_sees_edited_code(tmp_path: Path) -> None:
    """The linter re-imports env.py, so a repair loop sees its fix (load_package(fresh=True))."""
    root = make_package(tmp_path)
    assert lint_package(root).ok
    cached = load_package(root)
    bad = env_source(cls='\n@tool\ndef ping(self, n: int) -> dict:\n    """Ping."""\n    return {}\n')
    (root / "env.py").write_text(bad, encoding="utf-8")
    assert "tool-docstring" in lint_package(root).rules()
    assert load_package(root) is not cached
    assert "ping" in load_package(root).env_class.tools
    (root / "env.py").write_text(env_source(), encoding="utf-8")
    assert lint_package(root).ok
    assert load_package(root) is load_package(root)


def test_fresh_load_ignores_bytecode_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A same-size edit with the same mtime (seconds) must not be served from a stale .pyc."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    root = make_package(tmp_path)
    assert lint_package(root).ok
    path = root / "env.py"
    before = path.stat()
    edited = env_source().replace("amount: int) -> dict", "amount: str) -> dict")
    path.write_text(edited, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    amount = load_package(root, fresh=True).env_class.tools["deposit"].parameters["properties"]["amount"]
    assert amount["type"] == "string"
    assert not (root / "__pycache__").exists()


def test_unknown_reference_is_a_package_error(tmp_path: Path) -> None:
    with pytest.raises(PackageError):
        lint_package("no_such_environment_anywhere")
    with pytest.raises(PackageError):
        lint_package(tmp_path / "missing")


def test_counter_fixture_has_no_errors() -> None:
    report = lint_package(FIXTURES / "counter")
    assert report.ok, [f.model_dump() for f in report.errors]
    assert "tool-raise" in report.rules()  # explode raises on purpose: reported, not fatal


@pytest.mark.parametrize("root", builtin_package_dirs(), ids=lambda p: p.name)
def test_builtin_environments_pass(root: Path) -> None:
    report = lint_package(root)
    errors = report.errors
    assert not errors, "\n".join(f"{f.location}: {f.rule} {f.message}" for f in errors)


# -- the command line, through the installed console script ---------------------------------
def envcraft(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENVCRAFT), *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def test_cli_check(tmp_path: Path) -> None:
    good = make_package(tmp_path / "good")
    source = env_source(body="started = time.time()  # <-")
    bad = make_package(tmp_path / "bad", {"env.py": source})

    ok = envcraft("envs", "check", str(good))
    assert ok.returncode == 0 and "ledger: ok" in ok.stdout
    failed = envcraft("envs", "check", "ledger", cwd=tmp_path / "bad")  # a folder name is a path too
    assert failed.returncode == 1
    assert f"ledger/env.py:{marked_line(source)}: error wall-clock" in failed.stdout
    as_json = envcraft("envs", "check", str(bad), "--json")
    data = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and data["ok"] is False
    assert [(f["rule"], f["line"]) for f in data["findings"]] == [("wall-clock", marked_line(source))]


def test_cli_check_usage_errors(tmp_path: Path) -> None:
    assert envcraft("envs", "check").returncode == 2
    assert envcraft("envs", "check", str(tmp_path), "--all").returncode == 2
    missing = envcraft("envs", "check", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no environment" in missing.stderr


def test_cli_check_all_json() -> None:
    result = envcraft("envs", "check", "--all", "--json")
    reports = json.loads(result.stdout)
    assert [Path(r["package"]).name for r in reports] == [p.name for p in builtin_package_dirs()]
    assert result.returncode == (0 if all(r["ok"] for r in reports) else 1)
