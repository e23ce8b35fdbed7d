"""Malformed input gets one line naming what is wrong, the documented exit code, and loses nothing.

Exit codes: 0 ok, 1 tool error, 2 bad usage or a bad input file. Each test is a defect that
was seen (a traceback, a wrong exit code, a log line lost, a half-written directory).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envcraft.core import Session

ENVCRAFT = Path(sys.executable).parent / "envcraft"
LONE_SURROGATE = json.loads('"\\ud800"')
DEEP = "[" * 2000 + "]" * 2000


def run(*args: str | Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(ENVCRAFT), *map(str, args)], capture_output=True, input=stdin, timeout=120)


def bad_input(proc: subprocess.CompletedProcess[bytes], *fragments: str) -> str:
    """Exit 2 with one line on stderr that names the problem, and no traceback anywhere."""
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, proc.stdout, err)
    assert "Traceback" not in err + proc.stdout.decode("utf-8", "replace")
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def session(counter_pkg: Path, tmp_path: Path) -> Path:
    root = tmp_path / "s"
    Session.create(counter_pkg, root, state={"counters": {"a": 1}, "history": []})
    assert run("call", counter_pkg, "increment", "--args", '{"name": "a"}', "--session", root).returncode == 0
    return root


@pytest.mark.parametrize(
    "content", ['{"counters": ', '{"customers": {}, "orders": {}}', '{"counters": {"a": "many"}}']
)
def test_a_damaged_state_file_is_reported_and_the_log_keeps_every_line(
    counter_pkg: Path, session: Path, content: str
) -> None:
    (session / "state.json").write_text(content, encoding="utf-8")
    log = (session / "actions.jsonl").read_bytes()
    bad_input(run("call", counter_pkg, "get", "--args", '{"name": "a"}', "--session", session), "state.json")
    assert (session / "actions.jsonl").read_bytes() == log  # log repair never ran on it
    assert (session / "state.json").read_text(encoding="utf-8") == content


@pytest.mark.parametrize(
    "content", ["not json", "[1, 2]", '{"env": "counter"}', '{"env": "counter", "package": "x", "seed": "7"}']
)
def test_a_garbage_session_json_is_reported(counter_pkg: Path, session: Path, content: str) -> None:
    (session / "session.json").write_text(content, encoding="utf-8")
    bad_input(
        run("call", counter_pkg, "get", "--args", '{"name": "a"}', "--session", session), "session.json"
    )
    bad_input(run("session", "show", session), "session.json")


def test_deep_json_is_bad_input_everywhere(counter_pkg: Path, tmp_path: Path) -> None:
    bad_input(run("call", counter_pkg, "get", "--args", '{"name": ' + DEEP + "}"), "--args", "nested")
    state = tmp_path / "deep.json"
    state.write_text('{"counters": ' + DEEP + "}", encoding="utf-8")
    bad_input(run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--state", state), "nested")
    assert not (tmp_path / "s").exists()


def test_a_lone_surrogate_argument_prints_and_saves(counter_pkg: Path, session: Path, tmp_path: Path) -> None:
    proc = run("call", counter_pkg, "get", "--args", '{"name": "\\ud800"}', "--session", session)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["error"]["category"] == "invalid_argument"  # refused, and logged
    memory = Session.memory(counter_pkg)
    memory.call("get", {"name": LONE_SURROGATE})
    saved = Session.open(memory.save(tmp_path / "saved"))
    assert saved.actions()[-1]["args"] == {"name": LONE_SURROGATE}


def test_non_utf8_input_files_are_bad_input(counter_pkg: Path, tmp_path: Path) -> None:
    state = tmp_path / "latin1.json"
    state.write_bytes(b'{"counters": {"caf\xe9": 1}, "history": []}')
    bad_input(run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--state", state), "UTF-8")
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "tasks.jsonl").write_bytes(b'{"id": "caf\xe9"}\n')
    bad_input(run("tasks", "check", tasks), "line 1", "UTF-8")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_are_refused_at_every_door(
    counter_pkg: Path, session: Path, tmp_path: Path, literal: str
) -> None:
    bad_input(run("call", counter_pkg, "increment", "--args", f'{{"name": "a", "by": {literal}}}'), "--args")
    memory = Session.memory(counter_pkg)
    value = json.loads(literal) if literal != "1e400" else float("inf")
    assert memory.call("increment", {"name": "a", "by": value})["error"]["category"] == "invalid_argument"
    saved = memory.save(tmp_path / f"saved-{literal}")
    for line in (saved / "actions.jsonl").read_text(encoding="utf-8").splitlines():
        json.loads(line, parse_constant=_refuse)  # strict JSON: no NaN or Infinity written


def _refuse(name: str) -> Any:
    raise AssertionError(f"{name} in the log")


NAN_TOOL = '''
from envcraft import Environment, StateModel, tool


class Empty(StateModel):
    pass


class Odd(Environment):
    """A tool whose result JSON cannot hold."""

    State = Empty

    @tool
    def ratio(self) -> dict:
        """Divide by nothing."""
        return {"ratio": float("nan")}
'''


def test_a_result_holding_nan_is_an_internal_error_printed_as_json(make_env: Any) -> None:
    package = make_env(NAN_TOOL, env_id="odd")
    proc = run("call", package, "ratio")
    assert proc.returncode == 1
    assert json.loads(proc.stdout, parse_constant=_refuse)["error"]["category"] == "internal_error"


def test_output_paths_that_are_files_or_unwritable_are_bad_input(tmp_path: Path) -> None:
    file = tmp_path / "a_file"
    file.write_text("x", encoding="utf-8")
    bad_input(run("run", "--out", file, "--envs", "returns_desk"), "--out", "not a directory")
    bad_input(run("tasks", "synth", "--out", file, "--envs", "returns_desk"), "--out")
    bad_input(run("tasks", "synth", "--out", file / "below", "--envs", "returns_desk"), "--out")
    unwritable = "/proc/envcraft-unwritable"  # no one may create it there, not even root
    bad_input(run("run", "--out", unwritable, "--envs", "returns_desk"), "--out")
    bad_input(run("tasks", "synth", "--out", unwritable, "--envs", "returns_desk"), "--out")


def test_a_state_that_breaks_the_model_names_the_field(counter_pkg: Path, tmp_path: Path) -> None:
    state = tmp_path / "bad.json"
    state.write_text('{"counters": {"a": "many"}, "history": []}', encoding="utf-8")
    line = bad_input(run("session", "new", counter_pkg, "--dir", tmp_path / "s", "--state", state))
    assert "counters.a" in line and "integer" in line


def test_a_moved_package_and_odd_env_ids_are_bad_input(make_env: Any, tmp_path: Path) -> None:
    package = make_env(NAN_TOOL, env_id="odd")
    root = tmp_path / "moved"
    Session.create(package, root)
    package.rename(tmp_path / "elsewhere")
    bad_input(run("call", tmp_path / "elsewhere", "ratio", "--session", root), "odd")
    bad_input(run("call", "x" * 300, "ratio"), "no environment")


def test_a_missing_log_is_not_a_missing_session(counter_pkg: Path, session: Path) -> None:
    (session / "actions.jsonl").unlink()
    bad_input(
        run("call", counter_pkg, "get", "--args", '{"name": "a"}', "--session", session), "actions.jsonl"
    )
    assert not (session / "actions.jsonl").exists()


def test_large_arguments_come_from_a_file_or_stdin(tmp_path: Path) -> None:
    content = "line of text\n" * 30_000  # ~390 KB: more than the kernel takes as one argument
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"path": "big.txt", "content": content}), encoding="utf-8")
    root = tmp_path / "notes"
    assert run("session", "new", "notes_desk", "--dir", root).returncode == 0
    written = run("call", "notes_desk", "write_file", "--args", f"@{args}", "--session", root)
    assert written.returncode == 0, written.stderr
    assert (root / "workspace" / "big.txt").read_text(encoding="utf-8") == content
    again = run(
        "call", "notes_desk", "edit_file", "--args", "-", "--session", root,
        stdin=json.dumps({"path": "big.txt", "old": "line of text\n" * 30_000, "new": "short"}).encode(),
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (root / "workspace" / "big.txt").read_text(encoding="utf-8") == "short"
    bad_input(run("call", "notes_desk", "read_file", "--args", f"@{tmp_path / 'nope.json'}"), "nope.json")
