"""What `envcraft run` says at the end (issue 23 item 13): the targets it missed, and what the
adversarial pass rate is a rate of."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from envcraft.cli.run import unmet_targets

ROOT = Path(__file__).resolve().parents[2]
ENVCRAFT = str(Path(sys.executable).parent / "envcraft")
COUNTER = str(ROOT / "tests" / "fixtures" / "counter")
SMALL = ["--n-per-env", "4", "--seed", "2", "--workers", "1"]


def test_the_summary_names_unmet_targets_and_what_passed_the_adversarial_policies(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [ENVCRAFT, "run", "--out", str(out), "--envs", f"returns_desk,{COUNTER}", *SMALL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # a small run is not a failure, but it says so
    said = " ".join(done.stdout.split())
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    adversarial = summary["corpus"]["adversarial"]
    assert (
        f"{adversarial['passed_every_policy']} of {adversarial['reached_validation']} validated candidates"
        in said
    )
    assert "pass every adversarial policy" in said
    missed = unmet_targets(summary["targets"])
    assert "tasks_at_least_1000" in missed  # 8 tasks
    assert f"targets unmet: {'; '.join(missed)}" in said
    coverage = summary["targets"]["edge_coverage_at_least_90pct"]
    failing = [env for env, ok in coverage.items() if not ok]
    assert any(m.startswith("edge_coverage_at_least_90pct") for m in missed) == bool(failing)


def test_every_target_met_is_said_too() -> None:
    assert unmet_targets({"a": True, "per_env": {"x": True}}) == []
    assert unmet_targets({"a": False, "per_env": {"x": True, "y": False}}) == ["a", "per_env (y)"]
