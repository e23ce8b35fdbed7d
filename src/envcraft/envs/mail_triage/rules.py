"""Domain rules of :class:`~.env.MailTriage`: what its tools check, compute and render.

Mail triage (mailbox in the workspace with simulated colleagues and customers). The tool surface
and the State live in ``env.py``; this module holds the logic tool bodies call (the S0 generator
shares it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from email.parser import HeaderParser
from email.utils import format_datetime, formataddr, getaddresses
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from envcraft.core.clock import iso, parse_time

if TYPE_CHECKING:
    from .env import MailState, Message


MAIL_ROOT = "mail"
TODO_FILE = "todo.md"
MESSAGE_FILE = re.compile(r"^mail/([^/]+)/(MSG-\d{4})\.eml$")
ADDRESS = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
MAIL_HOST = "mail.northwind.example"
SUMMARY_FIELDS = (
    "message_id",
    "folder",
    "status",
    "from",
    "to",
    "subject",
    "date",
    "thread_id",
    "flags",
    "labels",
)


# -- files ----------------------------------------------------------------------------------------
def _path(folder: str, message_id: str) -> str:
    return str(PurePosixPath(MAIL_ROOT, folder, f"{message_id}.eml"))


def _email(address: str) -> str:
    parsed = getaddresses([address])
    return (parsed[0][1] if parsed and parsed[0][1] else address).strip().lower()


def _is_date(text: str) -> bool:
    if not re.match(r"^\d{4}-\d{2}-\d{2}$", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _mail_date(moment: datetime) -> str:
    """Dates are kept as ISO-8601 UTC (sortable); files show them in RFC 5322 form."""
    return iso(moment)


def _render(message: Message, body: str) -> str:
    """The .eml text of a message: RFC 5322 headers, a blank line, the body."""
    headers = [
        ("Message-ID", f"<{message.message_id}@{MAIL_HOST}>"),
        ("Date", format_datetime(parse_time(message.date))),
        ("From", message.sender),
        ("To", ", ".join(message.to)),
        ("Cc", ", ".join(message.cc)),
        ("Subject", message.subject),
        ("In-Reply-To", f"<{message.in_reply_to}@{MAIL_HOST}>" if message.in_reply_to else ""),
        ("X-Thread-ID", message.thread_id),
        ("X-Classification", message.classification),
        ("X-Status", message.status),
    ]
    head = "".join(f"{name}: {value}\n" for name, value in headers if value)
    return f"{head}\n{body.rstrip()}\n"


def _parse(text: str) -> dict[str, Any]:
    """To, Cc, Subject and body of a (possibly hand-edited) message file."""
    head, _, body = text.replace("\r\n", "\n").partition("\n\n")
    headers = HeaderParser().parsestr(head + "\n")

    def addresses(name: str) -> list[str]:
        values = headers.get_all(name) or []
        return [formataddr((n, a)) if n else a for n, a in getaddresses([str(v) for v in values]) if a]

    return {
        "to": addresses("To"),
        "cc": addresses("Cc"),
        "subject": " ".join(str(headers.get("Subject", "")).split()),
        "body": body.rstrip("\n"),
    }


def _open_todos(state: MailState) -> list[str]:
    return sorted(t.todo_id for t in state.todos.values() if not t.done)


def _render_todos(state: MailState) -> str:
    lines = ["# To do", ""]
    for todo in sorted(state.todos.values(), key=lambda t: (t.done, t.due_date or "9999", t.todo_id)):
        extras = [f"from {todo.source_message_id}"] if todo.source_message_id else []
        extras += [f"due {todo.due_date}"] if todo.due_date else []
        suffix = f" ({', '.join(extras)})" if extras else ""
        lines.append(f"- [{'x' if todo.done else ' '}] {todo.todo_id} {todo.text}{suffix}")
    if not state.todos:
        lines.append("_Nothing to do yet._")
    return "\n".join(lines) + "\n"
