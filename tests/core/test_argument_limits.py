"""Text UTF-8 cannot hold and paths past the OS's limits are the agent's bad arguments.

Regression (issue 23 item 10): 67 of 20,000 random in-process calls ended in ``internal_error``:
a lone surrogate in a path or a text argument (``read_file``, ``create_recipe``, ``cancel_class``,
``notify_traveler``, ...) reached a file name, the log or the state serializer, and a huge path
reached the OS (``ENAMETOOLONG``) or pathlib's recursion.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from envcraft.core import Session

SURROGATE = json.loads('"\\ud800"')


@pytest.fixture(scope="module")
def notes() -> Iterator[Session]:
    session = Session.memory("notes_desk")
    yield session
    session.close()


@pytest.mark.parametrize(
    ("env", "tool", "args", "field"),
    [
        ("notes_desk", "read_file", {"path": "notes" + SURROGATE}, "path"),
        ("notes_desk", "write_file", {"path": "a.md", "content": "x" + SURROGATE}, "content"),
        ("sheet_analytics", "create_recipe", {"name": SURROGATE, "steps": []}, "name"),
        ("returns_desk", "get_customer", {"email": "a@b.c", SURROGATE: 1}, "\\ud800"),
        (
            "returns_desk",
            "search_catalog",
            {"query": "mug", "categories": ["home", SURROGATE]},
            "categories.1",
        ),
    ],
)
def test_unencodable_text_is_an_invalid_argument_naming_the_field(
    env: str, tool: str, args: dict[str, object], field: str
) -> None:
    with Session.memory(env) as session:
        before = session.state_hash()
        result = session.call(tool, args)
        assert result["error"]["category"] == "invalid_argument", result
        assert result["error"]["field"] == field
        json.dumps(result, ensure_ascii=False).encode("utf-8")  # the answer itself is UTF-8 text
        assert session.state_hash() == before


def test_a_surrogate_nested_in_a_list_is_named_by_its_place() -> None:
    from envcraft.core.jsonio import unencodable

    assert unencodable({"steps": [{"op": "sum"}, {"op": "x" + SURROGATE}]}) == ("steps", 1, "op")
    assert unencodable({"steps": [{"op": "sum"}], "name": "ß🙂"}) is None


@pytest.mark.parametrize(
    ("tool", "path", "says"),
    [
        ("list_files", "a" * 100_000, "too long"),
        ("read_file", ("x" * 203 + "/") * 20, "too long"),  # legal names, past PATH_MAX with the root
        ("write_file", "n" * 256, "file name in the path is too long"),
        ("list_files", "d/" * 300, "nested too deeply"),
    ],
)
def test_paths_past_the_os_limits_are_invalid_arguments(
    notes: Session, tool: str, path: str, says: str
) -> None:
    args = {"path": path, "content": "x"} if tool == "write_file" else {"path": path}
    result = notes.call(tool, args)
    assert result["error"]["category"] == "invalid_argument", result
    assert says in result["error"]["message"]
    assert len(json.dumps(result)) < 600  # the answer does not echo 100 KB back


def test_a_255_byte_file_name_can_be_written_and_read(notes: Session) -> None:
    """The temporary name beside it must stay a legal name too (it was '.' + name + 18 bytes)."""
    name = "n" * 255
    assert notes.call("write_file", {"path": name, "content": "ok"})["created"] is True
    assert notes.call("read_file", {"path": name})["content"] == "ok"
