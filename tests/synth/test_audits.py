"""The audits one by one: what each stage catches, and that untrusted code stays confined."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import threading
import zipfile
from pathlib import Path

import pytest

from envcraft.synth.audit import AuditConfig, audit_package
from envcraft.synth.audit.confined import run_confined
from envcraft.synth.audit.static import audit_static
from envcraft.synth.filemap import write_files

from .variants import good_files

FAST = AuditConfig(seeds=(0, 1), sizes=(1, 2), explore={"sequences": 1, "steps": 20}, yield_tasks=2)


def package(tmp_path: Path, files: dict[str, str], name: str = "library_loans") -> Path:
    root = tmp_path / name
    write_files(root, files)
    return root


def edited(path: str, old: str, new: str) -> dict[str, str]:
    files = good_files()
    assert old in files[path]
    files[path] = files[path].replace(old, new, 1)
    return files


# -- static ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "code", "message"),
    [
        ("import os", "import", "imports os: not among the standard-library modules allowed"),
        ("import requests", "import", "imports requests, which is neither allowed nor provided"),
        ("from envcraft.core.session import Session", "import", "only envcraft"),
        ("from envcraft.core import _private", "import", "private names _private"),
        (
            "import pydantic\npydantic.BaseModel.model_dump = None",
            "runtime-patch",
            "pydantic.BaseModel.model_dump",
        ),
        (
            "from envcraft import Environment\nsetattr(Environment, 'invoke', None)",
            "runtime-patch",
            "setattr()",
        ),
        ("LEAK = (lambda: 0).__globals__", "introspection", "__globals__"),
        ("import subprocess", "lint:subprocess", "subprocess"),
    ],
)
def test_the_static_audit_enforces_the_import_policy(
    tmp_path: Path, line: str, code: str, message: str
) -> None:
    files = good_files()
    files["rules.py"] += "\n" + line + "\n"
    result = audit_static(package(tmp_path, files))
    assert not result.ok
    hits = [f for f in result.errors if f.code == code]
    assert hits and message in hits[0].message and hits[0].file == "rules.py"


def test_the_static_audit_passes_the_recorded_package_and_every_reference() -> None:
    """The policy is not stricter than the hand-written environments it is meant to admit."""
    from envcraft.core.package import BUILTIN_ROOT

    assert audit_static(package_dir := Path(__file__).parent / "recorded" / "library_loans").ok, package_dir
    for root in sorted(BUILTIN_ROOT.glob("*/envcraft.toml")):
        result = audit_static(root.parent)
        errors = [f.message for f in result.errors]
        assert not errors, (root.parent.name, errors)


CIRCLE = {
    "envcraft.toml": 'id = "circle"\ntitle = "Circle"\nkind = "tool"\n',
    "README.md": "# Circle\n\nTwo modules that import each other.\n",
    "env.py": (
        "from envcraft import Environment, StateModel, tool\n\nfrom .rules import double\n\n\n"
        "class CircleState(StateModel):\n    n: int = 1\n\n\nclass Circle(Environment):\n"
        '    """A number."""\n\n    State = CircleState\n'
    ),
    "rules.py": (
        "def double(n: int) -> int:\n    from .env import Circle\n\n    return n * 2 if Circle else n\n"
    ),
}


def test_the_static_audit_reports_modules_that_import_in_a_circle(tmp_path: Path) -> None:
    """A synthesized package whose modules import each other fails the static stage, and the
    finding names the cycle (a deferred import inside a function counts)."""
    result = audit_static(package(tmp_path, CIRCLE, name="circle"))
    assert not result.ok
    (hit,) = [f for f in result.errors if f.code == "lint:module-cycle"]
    assert (hit.file, hit.line, hit.message) == ("env.py", 3, "import cycle: env.py -> rules.py -> env.py")


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ("https://example.com/x.whl", "registry name"),
        ("pydantic>=2", "provided by the runtime"),
        ("numpy; python_version > '3'", "registry name"),
    ],
)
def test_requirements_are_plain_registry_names(tmp_path: Path, requirement: str, message: str) -> None:
    files = good_files()
    files["envcraft.toml"] += f'requirements = ["{requirement}"]\n'
    result = audit_static(package(tmp_path, files))
    assert any(f.code == "requirements" and message in f.message for f in result.errors)


# -- s0 and load ------------------------------------------------------------------------------------
def test_a_generator_that_crashes_on_some_seeds_is_caught_with_its_line(tmp_path: Path) -> None:
    files = edited(
        "generate.py",
        "    rng = random.Random(seed)\n",
        "    rng = random.Random(seed)\n    assert seed < 3\n",
    )
    report = audit_package(
        package(tmp_path, files),
        AuditConfig(seeds=(0, 1, 2, 3), stages=("static", "dependencies", "load", "s0")),
    )
    assert report.failed_stage == "s0"
    (finding,) = report.stage("s0").errors  # type: ignore[union-attr]
    assert finding.code == "generate" and (finding.file, finding.line) == ("generate.py", 15)
    assert "generate(seed=3, size=1) failed: AssertionError" in finding.message and finding.count == 3


def test_a_generator_that_breaks_its_own_state_model_is_caught(tmp_path: Path) -> None:
    files = edited("generate.py", '"renewals": 0,', '"renewals": 0, "late": True,')
    report = audit_package(
        package(tmp_path, files), AuditConfig(stages=("static", "dependencies", "load", "s0"))
    )
    assert report.failed_stage == "s0"
    assert "Extra inputs are not permitted" in report.stage("s0").errors[0].message  # type: ignore[union-attr]


def test_an_import_error_in_a_sibling_module_fails_the_load_stage(tmp_path: Path) -> None:
    files = edited("rules.py", "LOAN_DAYS = 14", "LOAN_DAYS = 14 // ZERO")
    report = audit_package(package(tmp_path, files), AuditConfig(stages=("static", "dependencies", "load")))
    assert report.failed_stage == "load"
    assert "rules.py:7" in report.errors()[0].message and "NameError" in report.errors()[0].message


# -- skills -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "code", "message"),
    [
        (
            "`renew_loan(loan_id)` adds",
            "`renew_loan(loan_id, days=7)` adds",
            "skill-arguments",
            "no parameter days",
        ),
        (
            "`borrow_book(member_id, book_id)` creates",
            "`borrow_book(member_id)` creates",
            "skill-arguments",
            "requires book_id",
        ),
        (
            "envcraft-tool get_member --member-id M-1",
            "envcraft-tool get_member --member M-1",
            "skill-arguments",
            "no parameter member",
        ),
        ('"loan_id": "L-3"', '"loan_id": "L-9"', "skill-example", "no loan 'L-9'"),
        ("```worked-example", "```text", "skill-example-missing", "no worked example"),
    ],
)
def test_skills_name_real_tools_and_their_examples_run(
    tmp_path: Path, old: str, new: str, code: str, message: str
) -> None:
    files = edited("skills/borrow-and-return/SKILL.md", old, new)
    report = audit_package(
        package(tmp_path, files), AuditConfig(stages=("static", "dependencies", "load", "s0", "skills"))
    )
    assert report.failed_stage == "skills"
    hits = [f for f in report.errors() if f.code == code]
    assert hits and message in hits[0].message, [f.message for f in report.errors()]


# -- explore ------------------------------------------------------------------------------------------
def test_an_internal_error_is_shrunk_to_the_calls_that_cause_it(tmp_path: Path) -> None:
    """renew_loan divides by the loan's age in days: it raises only on a loan borrowed today, so
    only after a borrow_book in the same sequence (the worked example renews an older loan)."""
    files = edited(
        "env.py",
        "        loan.renewals += 1\n",
        "        loan.renewals += 1\n"
        "        pace = loan.renewals / (self.now().date() - date.fromisoformat(loan.borrowed_on)).days\n",
    )
    skill = "skills/borrow-and-return/SKILL.md"
    files[skill] = files[skill].replace(
        'renew_loan \'{"loan_id": "L-3"}\'', 'renew_loan \'{"loan_id": "L-2"}\''
    )
    report = audit_package(package(tmp_path, files))
    assert report.failed_stage == "explore", [f.message for f in report.errors()]
    finding = next(f for f in report.errors() if f.code == "internal_error")
    assert finding.tool == "renew_loan" and "ZeroDivisionError" in finding.message
    assert finding.file == "env.py" and finding.detail["traceback"]
    calls = finding.detail["calls"]
    # shrunk: ends with the borrow and the renewal of that loan, and keeps little else (a return
    # may be needed to free a copy or a loan slot)
    assert [c["tool"] for c in calls][-2:] == ["borrow_book", "renew_loan"] and len(calls) <= 4


def test_a_state_that_changes_on_reload_is_caught(tmp_path: Path) -> None:
    """A validator that rewrites values on load: the committed state is not what the next load sees."""
    files = edited(
        "env.py",
        "        if problems:\n            raise ValueError",
        "        for member in self.members.values():\n"
        "            object.__setattr__(member, 'name', member.name + '.')\n"
        "        if problems:\n            raise ValueError",
    )
    report = audit_package(package(tmp_path, files), FAST)
    assert report.failed_stage in ("s0", "explore")
    assert any(f.code == "reload" for f in report.errors())


def test_a_slow_tool_is_caught(tmp_path: Path) -> None:
    files = edited(
        "env.py",
        "        member = self._member(member_id)\n        loans = ",
        "        member = self._member(member_id)\n"
        "        sum(i * i for i in range(25_000_000))\n"  # ~1 s: five times the bound on any machine
        "        loans = ",
    )
    config = AuditConfig(seeds=(0,), sizes=(1,), explore={"sequences": 1, "steps": 6, "call_seconds": 0.2})
    report = audit_package(package(tmp_path, files), config)
    assert any(f.code == "slow_call" and f.tool == "get_member" for f in report.errors())


# -- dependencies -------------------------------------------------------------------------------------
def make_wheel(directory: Path) -> Path:
    """A real pure-Python wheel, built by hand (``tinyfmt 1.0``)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tinyfmt-1.0-py3-none-any.whl"
    contents = {
        "tinyfmt/__init__.py": "def shout(text):\n    return text.upper()\n",
        "tinyfmt-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinyfmt\nVersion: 1.0\n",
        "tinyfmt-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        "tinyfmt-1.0.dist-info/top_level.txt": "tinyfmt\n",
    }
    record = []
    for name, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append("tinyfmt-1.0.dist-info/RECORD,,")
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in contents.items():
            wheel.writestr(name, text)
        wheel.writestr("tinyfmt-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return directory


def test_declared_requirements_install_from_wheels_inside_the_sandbox(tmp_path: Path) -> None:
    index = make_wheel(tmp_path / "index")
    files = edited(
        "rules.py",
        "from datetime import date, timedelta\n",
        "from datetime import date, timedelta\n\nfrom tinyfmt import shout\n",
    )
    files["rules.py"] += "\n\ndef banner(text: str) -> str:\n    return shout(text)\n"
    files["envcraft.toml"] += 'requirements = ["tinyfmt==1.0"]\n'
    config = AuditConfig(
        seeds=(0,),
        sizes=(1,),
        stages=("static", "dependencies", "load", "s0"),
        pip_index_args=("--no-index", "--find-links", str(index)),
        wheel_cache=tmp_path / "wheels",
    )
    report = audit_package(package(tmp_path, files), config)
    assert report.passed, [f.message for f in report.errors()]
    assert "tinyfmt" in report.stage("dependencies").facts["installed"]  # type: ignore[union-attr]
    files["envcraft.toml"] = files["envcraft.toml"].replace("tinyfmt==1.0", "tinyfmt==2.0")
    missing = audit_package(package(tmp_path / "b", files), config)
    assert (
        missing.failed_stage == "dependencies" and "no wheels for tinyfmt==2.0" in missing.errors()[0].message
    )


def test_an_import_no_requirement_provides_is_refused(tmp_path: Path) -> None:
    files = edited(
        "rules.py",
        "from datetime import date, timedelta\n",
        "from datetime import date, timedelta\n\nimport dateutil\n",
    )
    assert any("dateutil" in f.message for f in audit_static(package(tmp_path, files)).errors)


# -- confinement ------------------------------------------------------------------------------------
SNOOP = """
import asyncio
import json
import os

# Written to slip past the contract linter (which is no sandbox): os.path.exists, asyncio's
# connections and os.mkfifo are not among the calls it knows.
found = {"env": sorted(os.environ), "visible": [], "net": "", "write": ""}
for path in PATHS:
    if os.path.exists(path):
        found["visible"].append(path)


async def _probe():
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 2)
    writer.close()


try:
    asyncio.run(_probe())
    found["net"] = "connected"
except OSError as exc:
    found["net"] = type(exc).__name__
try:
    os.mkfifo(os.path.join(os.path.dirname(__file__), "planted"))
    found["write"] = "written"
except OSError as exc:
    found["write"] = type(exc).__name__
raise RuntimeError("SNOOP" + json.dumps(found) + "END")
"""


def test_candidate_code_sees_nothing_of_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Import-time code of a candidate tries the host's variables, files, network and its own dir."""
    secret_file = tmp_path / "host-secret.txt"
    secret_file.write_text("s3cret", encoding="utf-8")
    other = package(tmp_path / "others", good_files(), "other_candidate")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    threading.Thread(target=lambda: listener.accept(), daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-key-must-not-leak")
    paths = [str(secret_file), str(other), str(Path.cwd()), "/work", "/root", os.path.expanduser("~")]
    files = good_files()
    snoop = SNOOP.replace("PATHS", repr(paths)).replace("PORT", str(port))
    head = "from __future__ import annotations\n"
    files["rules.py"] = files["rules.py"].replace(head, head + snoop, 1)
    root = package(tmp_path / "candidate", files)
    run = run_confined(root, ["load"], timeout=120)
    listener.close()
    message = run.stages[0].errors[0].message
    found = json.loads(message[message.index("SNOOP") + 5 : message.index("END")])
    assert "OPENAI_API_KEY" not in found["env"]
    assert set(found["env"]) <= {
        "LANG",
        "PATH",
        "HOME",
        "TMPDIR",
        "PYTHONHASHSEED",
        "PYTHONDONTWRITEBYTECODE",
        "ENVCRAFT_SANDBOX",
        "LD_LIBRARY_PATH",
        "PWD",
    }
    assert found["visible"] == []
    assert found["net"] in ("ConnectionRefusedError", "OSError", "TimeoutError")
    assert found["write"] in ("OSError", "PermissionError")
    assert not (root / "planted").exists() and run.sandbox == "bubblewrap"


def test_a_hand_written_builtin_environment_passes_the_audits() -> None:
    """A plausible right environment: the built-in returns desk (its skill has no worked example,
    so the skills stage is left out) passes every other stage, tool coverage included."""
    from envcraft.core.package import BUILTIN_ROOT

    stages = ("static", "dependencies", "load", "s0", "explore", "yield")
    report = audit_package(BUILTIN_ROOT / "returns_desk", AuditConfig(stages=stages))  # type: ignore[arg-type]
    assert report.passed, [f.message for f in report.errors()]
    assert report.stage("yield").facts["tasks"] >= 3  # type: ignore[union-attr]


def test_a_goal_phrase_that_repeats_its_records_noun_is_a_yield_finding_naming_turn_and_tools(
    tmp_path: Path,
) -> None:
    """The order's name template already says "the order ..."; a goal phrase that says it again
    ("cancel the order {order_id}") puts "the order the order" into every task about an order."""
    import shutil

    from envcraft.core.package import BUILTIN_ROOT

    root = tmp_path / "returns_desk"
    shutil.copytree(BUILTIN_ROOT / "returns_desk", root)
    env = root / "env.py"
    source = env.read_text(encoding="utf-8")
    assert source.count("{order_id}") >= 2
    env.write_text(source.replace(" {order_id}", " the order {order_id}"), encoding="utf-8")
    stages = ("static", "dependencies", "load", "s0", "explore", "yield")
    report = audit_package(root, AuditConfig(stages=stages))  # type: ignore[arg-type]
    found = [f for f in report.errors() if f.code == "text:doubled_words"]
    assert found, [f.message for f in report.errors()]
    assert all("the order the order" in f.message.casefold() and f.tool for f in found)
    assert {"task", "turn", "tools"} <= set(found[0].detail)


def test_a_yield_that_fails_on_the_worlds_rules_names_the_field_and_its_value(tmp_path: Path) -> None:
    """A generator that dates its orders after the clock start makes every task's world contradict
    itself (world:future_times); the finding says which field holds which time, not just the code."""
    import shutil

    from envcraft.core.package import BUILTIN_ROOT

    root = tmp_path / "returns_desk"
    shutil.copytree(BUILTIN_ROOT / "returns_desk", root)
    generate = root / "generate.py"
    old = "    placed = base - timedelta(days=age_days, hours=rng.randint(1, 20))"
    source = generate.read_text(encoding="utf-8")
    assert old in source
    generate.write_text(
        source.replace(old, "    placed = base + timedelta(days=400 + age_days)"), encoding="utf-8"
    )
    stages = ("static", "dependencies", "load", "s0", "explore", "yield")
    report = audit_package(root, AuditConfig(stages=stages))  # type: ignore[arg-type]
    found = [f for f in report.errors() if f.code == "yield"]
    assert found, [f.message for f in report.errors()]
    assert "e.g. world:future_times: returns_desk S0 /orders/" in found[0].message
    assert "/placed_at: " in found[0].message and "is after the clock start" in found[0].message
