"""The recorded environment (``recorded/library_loans``, hand-written) and broken versions of it.

Each break is one realistic mistake of a code model, made by replacing one snippet of one file
(the snippet must be there, so a change to the recorded package cannot silently void a case).
"""

from __future__ import annotations

from pathlib import Path

from envcraft.synth.filemap import read_files, render_file_map

RECORDED = Path(__file__).resolve().parent / "recorded" / "library_loans"
SPEC_TOML = """\
title = "Library loans"
id = "library_loans"
kind = "tool"
description = "The circulation desk of a branch library: members borrow, renew and return books."
entities = ["book: a title with some copies", "member: a card holder, active or suspended", "loan"]
operations = ["search books", "borrow a copy", "renew a loan", "return a book", "pay fines"]
rules = ["at most 3 active loans", "14-day loans, two 7-day renewals, none once overdue",
         "25 cents a day late, at most 10 euros", "over 5 euros of fines blocks borrowing"]
"""

# name -> (file, snippet, replacement, the stage it fails, the finding code it gets)
BREAKS: dict[str, tuple[str, str, str, str, str]] = {
    "syntax_error": (
        "env.py",
        "    def _consistent(self) -> LibraryState:",
        "    def _consistent(self) -> LibraryState",
        "static",
        "lint:syntax",
    ),
    "tool_raises": (
        "env.py",
        '                found.append({**book.model_dump(), "free": self._free(book.book_id)})',
        '                due = min(l.due_on for l in self.state.loans.values() if l.book_id == book.book_id and l.status == "active")\n'  # noqa: E501
        '                found.append({**book.model_dump(), "free": self._free(book.book_id), "next_due": due})',  # noqa: E501
        "explore",
        "internal_error",
    ),
    "nondeterministic": (
        "env.py",
        "        loans = [loan.model_dump() for loan in self._active(member_id)]",
        "        loans = [self.state.loans[i].model_dump() for i in {loan.loan_id for loan in self._active(member_id)}]",  # noqa: E501
        "explore",
        "nondeterministic",
    ),
    "skill_names_missing_tool": (
        "skills/borrow-and-return/SKILL.md",
        "4. `renew_loan(loan_id)` adds a week",
        "4. `extend_loan(loan_id)` adds a week",
        "skills",
        "skill-unknown-tool",
    ),
}


def good_files() -> dict[str, str]:
    return read_files(RECORDED)


def broken_files(name: str) -> dict[str, str]:
    path, old, new, _, _ = BREAKS[name]
    files = good_files()
    assert old in files[path], f"{name}: the snippet is not in {path}"
    files[path] = files[path].replace(old, new, 1)
    return files


def answer(files: dict[str, str]) -> str:
    """A model answer: the files as a file map."""
    return render_file_map(files)
