"""The model's one response format: a file map, parsed strictly, every problem with its line."""

from __future__ import annotations

import pytest

from envcraft.synth.filemap import FileMapError, missing_required, parse_file_map, render_file_map

GOOD = """<file path="env.py">
x = 1
</file>

<file path="skills/do-it/SKILL.md">
---
name: do-it
---
</file>
<delete path="data/old.json"/>
"""


def test_a_file_map_round_trips() -> None:
    parsed = parse_file_map(GOOD)
    assert parsed.files == {"env.py": "x = 1\n", "skills/do-it/SKILL.md": "---\nname: do-it\n---\n"}
    assert parsed.deleted == ["data/old.json"]
    again = parse_file_map(render_file_map(parsed.files))
    assert again.files == parsed.files


def test_a_repair_applies_on_top_of_the_previous_files() -> None:
    previous = {"env.py": "old\n", "data/old.json": "{}", "README.md": "r\n"}
    merged = parse_file_map(GOOD).applied_to(previous)
    assert merged == {
        "README.md": "r\n",
        "env.py": "x = 1\n",
        "skills/do-it/SKILL.md": "---\nname: do-it\n---\n",
    }


def test_content_is_verbatim_even_when_it_looks_like_markup() -> None:
    text = '<file path="README.md">\n  <b>bold</b>\n\n```python\ncode\n```\ntail\n</file>\n'
    assert parse_file_map(text).files["README.md"] == "  <b>bold</b>\n\n```python\ncode\n```\ntail\n"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("Sure! Here it is:\n" + GOOD, 1, "text outside a <file> block: 'Sure! Here it is:'"),
        ("```\n" + GOOD + "```\n", 1, "text outside a <file> block: '```'"),
        ('<file path="env.py">\nx = 1\n', 1, "is not closed"),
        ('<file path="env.py">\n```python\nx = 1\n```\n</file>\n', 1, "wrapped in a Markdown code fence"),
        ('<file path="../etc/passwd">\nx\n</file>\n', 1, "unusual segment"),
        ('<file path="/abs.py">\nx\n</file>\n', 1, "must be relative"),
        ('<file path="notes.txt">\nx\n</file>\n', 1, "cannot be at the package root"),
        ('<file path="data/blob.bin">\nx\n</file>\n', 1, "data files are"),
        ('<file path="lib/x.py">\nx\n</file>\n', 1, "files live at the root or under"),
        ('<file path="env.py">\na\n</file>\n<file path="env.py">\nb\n</file>\n', 4, "given twice"),
        ("", 1, "no <file"),
        ('<file path="env.py">\na\n<file path="rules.py">\nb\n</file>\n', 1, "is not closed"),
    ],
)
def test_malformed_answers_say_what_is_wrong_and_where(text: str, line: int, message: str) -> None:
    with pytest.raises(FileMapError) as caught:
        parse_file_map(text)
    assert any(n == line and message in m for n, m in caught.value.problems), caught.value.problems


def test_every_problem_is_listed() -> None:
    text = 'hello\n<file path="x/y.py">\na\n</file>\nbye\n'
    with pytest.raises(FileMapError) as caught:
        parse_file_map(text)
    assert [n for n, _ in caught.value.problems] == [1, 2, 5]
    assert "and 2 more problems" in str(caught.value)


def test_required_files() -> None:
    assert missing_required({"env.py": ""}) == ["envcraft.toml", "README.md", "skills/<name>/SKILL.md"]
    complete = {"env.py": "", "envcraft.toml": "", "README.md": "", "skills/a/SKILL.md": ""}
    assert missing_required(complete) == []
