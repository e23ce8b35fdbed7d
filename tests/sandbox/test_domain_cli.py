"""``envcraft-tool``: domain tools called from the sandboxed shell reach the session's door.

They mutate the session state, are logged in ``actions.jsonl`` like any call, and report
Table 16 errors (``missing_binding`` without a binding) as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envcraft.core import Session, errors
from envcraft.sandbox import domain_cli
from envcraft.sandbox.domain_server import DomainServer, coerce_options

from .conftest import requires_bwrap

ENVCRAFT_TOOL = Path(sys.executable).parent / "envcraft-tool"


def _logged(session: Session) -> list[str]:
    assert session.directory is not None
    lines = (session.directory / "actions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["tool"] for line in lines]


@requires_bwrap
def test_domain_call_from_the_shell_changes_state_and_is_logged(desk: Session) -> None:
    before = desk.state()["items"]
    command = (
        "envcraft-tool add_action_item --title 'Draft the Q3 plan' --owner chen --due 2026-03-20 && "
        'envcraft-tool export_action_items \'{"path": "exports/items.csv"}\''
    )
    result = desk.call("shell", {"command": command})
    assert result["exit_code"] == 0, result
    added = json.loads(result["stdout"].split("\n}\n")[0] + "\n}")
    assert added["owner"] == "chen" and added["status"] == "open"
    items = desk.state()["items"]
    assert set(items) - set(before) == {added["item_id"]}
    assert _logged(desk)[-3:] == ["add_action_item", "export_action_items", "shell"]
    assert f"{added['item_id']},Draft the Q3 plan,chen" in desk.files()["exports/items.csv"]


@requires_bwrap
def test_domain_errors_come_back_as_json_and_change_nothing(desk: Session) -> None:
    before = desk.state_hash()
    command = "envcraft-tool add_action_item --title x --owner nobody --due 2026-03-20; echo status=$?"
    result = desk.call("shell", {"command": command})
    body, status = result["stdout"].rsplit("status=", 1)
    assert status.strip() == "1"
    assert json.loads(body)["error"]["category"] == "not_found"
    assert desk.state_hash() == before
    assert _logged(desk)[-2:] == ["add_action_item", "shell"]  # the failed call is logged too


@requires_bwrap
def test_list_shows_only_domain_tools_and_system_tools_are_refused(desk: Session) -> None:
    listed = desk.call("shell", {"command": "envcraft-tool list"})
    names = {tool["name"] for tool in json.loads(listed["stdout"])["tools"]}
    assert "add_action_item" in names and not names & {"shell", "read_file", "write_file"}
    nested = desk.call("shell", {"command": "envcraft-tool shell --command 'echo nested'"})
    assert json.loads(nested["stdout"])["error"]["category"] == "permission_denied"
    assert "nested" not in nested["stdout"].splitlines()


@requires_bwrap
@requires_bwrap
def test_a_tools_help_shows_its_description_and_parameters(desk: Session) -> None:
    """``envcraft-tool TOOL --help`` is a question, not a call with an argument named help."""
    shown = desk.call("shell", {"command": "envcraft-tool add_action_item --help; echo status=$?"})
    out, status = shown["stdout"].rsplit("status=", 1)
    (tool,) = json.loads(out)["tools"]
    assert status.strip() == "0" and tool["name"] == "add_action_item" and "properties" in tool["parameters"]
    unknown = desk.call("shell", {"command": "envcraft-tool no_such_tool --help"})
    assert json.loads(unknown["stdout"])["error"]["category"] == "not_found"


def test_missing_binding_inside_the_sandbox(desk: Session) -> None:
    result = desk.call("shell", {"command": "env -u ENVCRAFT_SESSION envcraft-tool list; echo status=$?"})
    body, status = result["stdout"].rsplit("status=", 1)
    assert status.strip() == "1"
    assert json.loads(body) == {
        "error": {"category": "missing_binding", "message": errors.MISSING_BINDING_MESSAGE}
    }


def test_missing_binding_on_the_host_console_script() -> None:
    env = {k: v for k, v in os.environ.items() if k != domain_cli.BINDING_ENV}
    done = subprocess.run([str(ENVCRAFT_TOOL), "list"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"] == {
        "category": "missing_binding",
        "message": errors.MISSING_BINDING_MESSAGE,
    }


def test_the_client_copies_the_core_messages() -> None:
    assert domain_cli.MISSING_BINDING_MESSAGE == errors.MISSING_BINDING_MESSAGE
    assert domain_cli.SESSION_NOT_FOUND_MESSAGE == errors.SESSION_NOT_FOUND_MESSAGE
    for category, message in (
        ("missing_binding", errors.MISSING_BINDING_MESSAGE),
        ("session_not_found", errors.SESSION_NOT_FOUND_MESSAGE),
        ("internal_error", "the session sent an unreadable reply"),
    ):  # the client's hand-made JSON is what json.dumps prints
        expected = json.dumps({"error": {"category": category, "message": message}}, indent=2)
        assert domain_cli.error_text(category, message) == expected


def _client(path: Path, *argv: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    """The client as the sandbox runs it: the system python, isolated, no site directory."""
    flags = ["-IS", *(["-X", "importtime"] if importtime else [])]
    command = ["/usr/bin/python3", *flags, domain_cli.__file__, *argv]
    env = {domain_cli.BINDING_ENV: str(path), "PATH": "/usr/bin:/bin"}
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


def test_the_client_sends_its_command_line_and_imports_no_json(desk: Session, tmp_path: Path) -> None:
    """The host parses the arguments (strict JSON, newlines kept); the client imports no json or socket."""
    path = tmp_path / "desk.sock"
    item_id = next(i for i, item in desk.state()["items"].items() if item["status"] == "open")
    note = "line one\nline two, with ünïcode"
    args = json.dumps({"item_id": item_id, "note": note}, ensure_ascii=False)
    with DomainServer(desk.env, path, timeout=10):
        done = _client(path, "complete_action_item", args, importtime=True)
        nan = _client(path, "complete_action_item", '{"item_id": "x", "note": NaN}')
        bad = _client(path, "complete_action_item", "{not json")
        unknown = _client(path, "no_such_tool", "--x", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "done"
    assert desk.state()["items"][item_id]["status"] == "done"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "_socket" in imported and not imported & {"json", "socket", "json.decoder", "re", "typing"}
    assert nan.returncode == 2 and "NaN" in nan.stderr and not nan.stdout  # strict JSON, a usage error
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr
    assert unknown.returncode == 1 and json.loads(unknown.stdout)["error"]["category"] == "not_found"
    assert _logged(desk)[-1] == "complete_action_item"  # neither refusal reached the session


def test_host_client_through_a_served_socket(desk: Session, tmp_path: Path) -> None:
    path = tmp_path / "desk.sock"
    env = {**os.environ, domain_cli.BINDING_ENV: str(path)}
    item_id = next(i for i, item in desk.state()["items"].items() if item["status"] == "open")
    args = [str(ENVCRAFT_TOOL), "complete_action_item", "--item-id", item_id, "--note", "done on the host"]
    with DomainServer(desk.env, path, timeout=10):
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert desk.state()["items"][item_id]["status"] == "done"
    assert _logged(desk)[-1] == "complete_action_item"
    after = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert json.loads(after.stdout)["error"]["category"] == "session_not_found"


@pytest.mark.parametrize(
    "argv",
    [[], ["--title", "x"], ["add", "stray"], ["add", "[1, 2]"], ["add", "{not json"], ["list", "extra"]],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    assert domain_cli.main(argv) == 2


def test_requests_from_the_command_line() -> None:
    assert domain_cli.parse_request(["list"]) == {"op": "list"}
    assert domain_cli.parse_request(["t", "--help"]) == {"op": "list", "tool": "t"}
    assert domain_cli.parse_request(["t", '{"a": 1}']) == {"op": "call", "tool": "t", "args": {"a": 1}}
    assert domain_cli.parse_request(["t", "--item-id", "AI-1", "--all", "--n=3"]) == {
        "op": "call",
        "tool": "t",
        "cli": {"item_id": "AI-1", "all": "true", "n": "3"},
    }


def test_options_are_typed_by_the_schema(desk: Session) -> None:
    spec = type(desk.env).tools["shell"]
    assert coerce_options(spec, {"command": "42", "timeout": "5"}) == {"command": "42", "timeout": 5}
    assert coerce_options(spec, {"timeout": "soon"}) == {"timeout": "soon"}  # left for validation
