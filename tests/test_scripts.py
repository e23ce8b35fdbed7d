"""scripts/_pip.sh: pip's resolver complaint about bfcl-eval's left-out SDKs is hidden, nothing else.

Regression (issue 23 item 14): every install after bfcl-eval (installed with --no-deps on
purpose) printed pip's "ERROR: pip's dependency resolver ..." and a line per SDK, alarming a
reader of `scripts/test.sh`. Real pip in a throwaway virtualenv, on wheels made here (offline).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PIP_SH = Path(__file__).resolve().parents[1] / "scripts" / "_pip.sh"


def wheel(directory: Path, name: str, version: str, requires: list[str]) -> Path:
    """A minimal pure-Python wheel (one module) that declares ``requires``."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    path = directory / f"{module}-{version}-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    files = {
        f"{module}.py": "",
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(member, text)
    return path


@pytest.fixture(scope="module")
def venv_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pip")
    subprocess.run([sys.executable, "-m", "venv", str(root / ".venv")], check=True, timeout=300)
    return root


def pip_install(root: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    script = f'source "{PIP_SH}"; pip_install --no-index --disable-pip-version-check "$@"'
    return subprocess.run(
        ["bash", "-c", script, "pip_install", *map(str, args)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_only_the_bfcl_eval_complaint_is_hidden(venv_dir: Path) -> None:
    # pip reports a package's unmet requirements when an install touches one of its requirements
    bfcl = wheel(venv_dir, "bfcl-eval", "2026.3.23", ["anthropic==0.49.0", "openai>=1.0", "plain-pkg>=1"])
    assert pip_install(venv_dir, "--no-deps", bfcl).returncode == 0
    quiet = pip_install(venv_dir, wheel(venv_dir, "plain-pkg", "1.0", []))
    assert quiet.returncode == 0, quiet.stderr
    assert "ERROR" not in quiet.stderr and "anthropic" not in quiet.stderr
    assert "installed without its model SDKs on purpose" in quiet.stderr

    needy = wheel(venv_dir, "needy-pkg", "1.0", ["not-there>=1", "plain-two>=1"])
    assert pip_install(venv_dir, "--no-deps", needy).returncode == 0
    both = [wheel(venv_dir, "plain-pkg", "1.0", []), wheel(venv_dir, "plain-two", "1.0", [])]
    other = pip_install(venv_dir, "--force-reinstall", *both)
    assert "ERROR: pip's dependency resolver" in other.stderr  # another conflict is shown in full
    assert "needy-pkg 1.0 requires not-there" in other.stderr
    assert "bfcl-eval 2026.3.23 requires" not in other.stderr


def test_pip_failures_still_fail(venv_dir: Path) -> None:
    failed = pip_install(venv_dir, venv_dir / "no-such-wheel-1.0-py3-none-any.whl")
    assert failed.returncode != 0 and failed.stderr.strip()
