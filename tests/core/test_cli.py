"""The real ``envcraft`` console script: JSON out, exit 0 ok / 1 tool error / 2 bad usage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ENVCRAFT = Path(sys.executable).parent / "envcraft"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert ENVCRAFT.is_file(), f"console script missing: {ENVCRAFT} (pip install -e .)"
    return subprocess.run(
        [str(ENVCRAFT), *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def usage_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert fragment in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_envs_list_and_show_json() -> None:
    rows = ok_json(run("envs", "list", "--json"))
    desk = next(r for r in rows if r["id"] == "returns_desk")
    assert desk["kind"] == "tool" and desk["tool_count"] == 8
    assert "transactional_workspace" in desk["archetypes"]

    info = ok_json(run("envs", "show", "returns_desk", "--json"))
    names = [t["function"]["name"] for t in info["tools"]]
    assert {"get_customer", "open_return", "issue_refund"} <= set(names)
    assert info["skills"] == ["process-return"]
    assert info["readme"].startswith("# Returns desk")
    assert "orders" in info["state_schema"]["properties"]


def test_unknown_env_is_bad_usage() -> None:
    usage_error(run("envs", "show", "no_such_env", "--json"), "no_such_env")


def test_session_lifecycle_and_exit_codes(counter_pkg: Path, tmp_path: Path) -> None:
    initial = tmp_path / "s0.json"
    initial.write_text(json.dumps({"counters": {"a": 41}, "history": []}), encoding="utf-8")
    session = tmp_path / "sess"
    created = ok_json(run("session", "new", counter_pkg, "--dir", session, "--state", initial, "--json"))
    assert Path(created["session"]) == session.resolve()
    assert json.loads((session / "state.json").read_text(encoding="utf-8"))["counters"] == {"a": 41}

    args = json.dumps({"name": "a"})
    assert ok_json(run("call", counter_pkg, "increment", "--args", args, "--session", session)) == {
        "name": "a",
        "value": 42,
    }
    # A second process sees the first one's commit.
    assert ok_json(run("call", counter_pkg, "get", "--args", args, "--session", session))["value"] == 42

    missing = run("call", counter_pkg, "get", "--args", '{"name": "zzz"}', "--session", session)
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["category"] == "not_found"

    usage_error(
        run("call", counter_pkg, "get", "--args", "{name: a}", "--session", session), "not valid JSON"
    )
    usage_error(run("call", counter_pkg, "get", "--args", '["a"]', "--session", session), "JSON object")
    usage_error(run("session", "new", counter_pkg, "--dir", session), "already holds a session")
    lines = (session / "actions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["index"] for line in lines] == [0, 1, 2], "bad usage must not reach the session"


def test_call_without_session_uses_a_fresh_generated_state() -> None:
    found = ok_json(run("call", "returns_desk", "search_catalog", "--args", '{"query": "kettle"}'))
    assert [p["sku"] for p in found["products"]] == ["HM-3004"]
    refused = run("call", "returns_desk", "issue_refund", "--args", '{"return_id": "RMA-99999"}')
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["category"] == "not_found"


def test_missing_session_is_a_tool_error(counter_pkg: Path, tmp_path: Path) -> None:
    proc = run("call", counter_pkg, "get", "--args", "{}", "--session", tmp_path / "nowhere")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["category"] == "session_not_found"


@pytest.mark.parametrize("bad_state", ["{not json", '{"counters": "many"}'])
def test_session_new_with_a_bad_state_file(counter_pkg: Path, tmp_path: Path, bad_state: str) -> None:
    state = tmp_path / "bad.json"
    state.write_text(bad_state, encoding="utf-8")
    proc = run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--state", state)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "s" / "state.json").exists()


def test_session_of_another_env_is_refused(counter_pkg: Path, tmp_path: Path) -> None:
    ok_json(run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--json"))
    usage_error(
        run("call", "returns_desk", "get_order", "--args", "{}", "--session", tmp_path / "s"), "belongs to"
    )
