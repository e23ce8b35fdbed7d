"""The real ``envcraft`` console script: JSON out, exit 0 ok / 1 tool error / 2 bad usage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import Session

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


def test_call_without_a_session_says_that_nothing_is_kept() -> None:
    order = next(
        o for o, v in Session.memory("returns_desk").state()["orders"].items() if v["status"] == "placed"
    )
    args = json.dumps({"order_id": order, "reason": "changed my mind"})
    first, second = (
        run("call", "returns_desk", "cancel_order", "--args", args),
        run("call", "returns_desk", "cancel_order", "--args", args),
    )
    assert first.returncode == second.returncode == 0  # each ran on its own fresh state...
    assert "nothing is kept" in first.stderr and "nothing is kept" in second.stderr  # ...and says so


def test_call_json_is_one_line_with_the_hash_and_whether_it_was_kept(
    counter_pkg: Path, tmp_path: Path
) -> None:
    ok_json(run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--json"))
    kept = run(
        "call", counter_pkg, "increment", "--args", '{"name": "a"}', "--session", tmp_path / "s", "--json"
    )
    assert kept.returncode == 0 and len(kept.stdout.strip().splitlines()) == 1
    record = json.loads(kept.stdout)
    assert record["result"] == {"name": "a", "value": 1} and record["kept"] is True
    shown = ok_json(run("session", "show", tmp_path / "s", "--json"))
    assert record["state_hash"] == shown["state_hash"]
    thrown = json.loads(run("call", counter_pkg, "increment", "--args", '{"name": "a"}', "--json").stdout)
    assert thrown["kept"] is False and thrown["session"] is None


def test_session_show_gives_the_state_and_the_log(counter_pkg: Path, tmp_path: Path) -> None:
    ok_json(run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--json"))
    for name in ("a", "b", "a"):
        run(
            "call",
            counter_pkg,
            "increment",
            "--args",
            json.dumps({"name": name}),
            "--session",
            tmp_path / "s",
        )
    shown = ok_json(run("session", "show", tmp_path / "s", "--json", "--last", "2"))
    assert shown["state"]["counters"] == {"a": 2, "b": 1} and shown["calls"] == 3
    assert [e["index"] for e in shown["log"]] == [1, 2]
    text = run("session", "show", tmp_path / "s")
    assert text.returncode == 0 and "increment" in text.stdout and '"a": 2' in text.stdout


def test_envs_show_lists_enum_values_and_an_example_state() -> None:
    info = ok_json(run("envs", "show", "returns_desk", "--json"))
    assert info["example_state"] == Session.memory("returns_desk", seed=0).state()
    text = subprocess.run(
        [str(ENVCRAFT), "envs", "show", "returns_desk"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    assert '"placed" | "shipped" | "delivered" | "cancelled"' in text
    assert "example S0 (seed 0" in text and "CUS-1001" in text
    assert "a task's world has its own records" in text  # helpers took the example's ids for a task's


HELP_PAGES = [
    [], ["envs"], ["envs", "list"], ["envs", "show"], ["envs", "check"], ["session"], ["session", "new"],
    ["session", "show"], ["call"], ["run"], ["export"], ["tasks"], ["tasks", "synth"], ["tasks", "check"],
    ["tasks", "replay"], ["tasks", "score"], ["scenarios", "list"], ["import", "bfcl"], ["library"],
    ["library", "add"], ["library", "check"], ["library", "readme"], ["library", "unpack"],
]  # fmt: skip


@pytest.mark.parametrize("page", HELP_PAGES, ids=lambda p: " ".join(p) or "envcraft")
def test_help_shows_no_python_type_labels(page: list[str]) -> None:
    shown = run(*page, "--help")
    assert shown.returncode == 0, shown.stderr
    assert "<bool>" not in shown.stdout and "<str>" not in shown.stdout


LOADED_BY_VERSION = """
import sys
sys.argv = ["envcraft", "--version"]
from envcraft.cli.launcher import main
main()
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"typer", "click", "pydantic", "orjson", "openai"})
print(heavy, sorted(m for m in sys.modules if m.startswith("envcraft")))
"""


def test_version_loads_no_command_and_every_command_is_still_reachable() -> None:
    """``--version`` answers before the command tree (and the library) is imported; every
    other invocation goes through the full CLI, including the commands other issues added."""
    proc = subprocess.run(
        [sys.executable, "-c", LOADED_BY_VERSION], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    version, loaded = proc.stdout.splitlines()
    assert version.startswith("envcraft ")
    assert loaded == "[] ['envcraft', 'envcraft.cli', 'envcraft.cli.launcher']"
    assert run("--version").stdout == version + "\n"
    for command in (
        ["eval"],
        ["synth"],
        ["llm", "serve"],
        ["serve-mcp"],
        ["tasks", "calibrate"],
        ["tasks", "play"],
    ):
        shown = run(*command, "--help")
        assert shown.returncode == 0 and "Usage" in shown.stdout, (command, shown.stderr)


def test_an_unknown_tool_is_a_structured_tool_error_as_the_readme_says() -> None:
    """An agent gets the tools it may call (exit 1, JSON), not a usage line (exit 2)."""
    proc = run("call", "returns_desk", "refund_everything")
    assert proc.returncode == 1, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["category"] == "not_found" and "issue_refund" in error["available"]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `envcraft call "))
    assert "an unknown tool" in row.split("; 2 ")[0]


def test_envs_show_breaks_no_line_and_shows_every_field_of_the_example_state() -> None:
    """Regression (issue 23 item 15): piped (80 columns), the README's tables and sentences were
    wrapped mid-line, the tool table wrapped its descriptions, and the first 40 lines of the
    example S0 showed part of one collection."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    text = subprocess.run(
        [str(ENVCRAFT), "envs", "show", "event_stream"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    ).stdout
    lines = set(text.splitlines())
    info = ok_json(run("envs", "show", "event_stream", "--json"))
    long = [line for line in info["readme"].splitlines() if len(line) > 80]
    assert long and all(line in lines for line in long)  # e.g. the workspace table's rows
    for tool in info["tools"]:
        summary = tool["function"]["description"].splitlines()[0]
        assert any(
            line.startswith(f"  {tool['function']['name']}(") and line.endswith(summary) for line in lines
        )
    for field in info["example_state"]:
        assert f'  "{field}": ' in text, field
    assert '"…": "' in text  # a collection cut to its first record says how many more
