"""Domain rules of :class:`~.env.MailTriage`: what its tools check, compute and render, and how
the simulated people answer.

Mail triage (mailbox in the workspace with simulated colleagues and customers). The State lives in
``state.py`` and the tool surface in ``env.py``; this module holds the logic tool bodies call (the
S0 generator shares it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from email.parser import HeaderParser
from email.utils import format_datetime, formataddr, getaddresses
from pathlib import PurePosixPath
from typing import Any

from envcraft import Repository, iso, parse_time

from .state import Contact, MailState, Message, Owner, PendingReply, Thread

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
def mail_path(folder: str, message_id: str) -> str:
    return str(PurePosixPath(MAIL_ROOT, folder, f"{message_id}.eml"))


def bare_email(address: str) -> str:
    parsed = getaddresses([address])
    return (parsed[0][1] if parsed and parsed[0][1] else address).strip().lower()


def is_date(text: str) -> bool:
    if not re.match(r"^\d{4}-\d{2}-\d{2}$", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def mail_date(moment: datetime) -> str:
    """Dates are kept as ISO-8601 UTC (sortable); files show them in RFC 5322 form."""
    return iso(moment)


def render_message(message: Message, body: str) -> str:
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


def parse_message(text: str) -> dict[str, Any]:
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


def open_todos(state: MailState) -> list[str]:
    return sorted(t.todo_id for t in state.todos.values() if not t.done)


def render_todos(state: MailState) -> str:
    lines = ["# To do", ""]
    for todo in sorted(state.todos.values(), key=lambda t: (t.done, t.due_date or "9999", t.todo_id)):
        extras = [f"from {todo.source_message_id}"] if todo.source_message_id else []
        extras += [f"due {todo.due_date}"] if todo.due_date else []
        suffix = f" ({', '.join(extras)})" if extras else ""
        lines.append(f"- [{'x' if todo.done else ' '}] {todo.todo_id} {todo.text}{suffix}")
    if not state.todos:
        lines.append("_Nothing to do yet._")
    return "\n".join(lines) + "\n"


# -- the address book and new records -------------------------------------------------------------
def contact_by_email(state: MailState, email: str) -> Contact | None:
    return next((c for c in state.contacts.values() if c.email.lower() == email), None)


def impersonated(state: MailState, sender: str) -> Contact | None:
    """The contact a sender poses as: a sender whose display name is a contact's name ("Apex
    Packaging Billing") on an address no contact has (a lookalike domain) is phishing."""
    parsed = getaddresses([sender])
    name = parsed[0][0].strip() if parsed else ""
    if not name or contact_by_email(state, bare_email(sender)) is not None:
        return None
    return next((c for c in state.contacts.values() if c.name == name), None)


def new_thread(state: MailState, subject: str) -> Thread:
    thread_id = f"THR-{state.next_thread:03d}"
    state.next_thread += 1
    thread = Thread(thread_id=thread_id, subject=subject)
    state.threads[thread_id] = thread
    return thread


def next_message_id(state: MailState) -> str:
    message_id = f"MSG-{state.next_message:04d}"
    state.next_message += 1
    return message_id


# -- counterparts ---------------------------------------------------------------------------------
def react(state: MailState, data: Repository, sent: Message, today: str, action_index: int) -> None:
    """Decide now, deterministically from the state, how each addressed person will answer
    (``today`` is the send date, ISO; replies are due some actions after ``action_index``)."""
    text = f"{sent.subject}\n{sent.body}".lower()
    for address in sent.to:
        contact = contact_by_email(state, bare_email(address))
        if contact is None:
            continue
        if contact.out_of_office_until and today < contact.out_of_office_until:
            _out_of_office(state, data, contact, sent, action_index)
        elif contact.kind == "colleague" and contact.facts:
            _colleague_reply(state, data, contact, sent, text, action_index)
        elif contact.kind == "customer":
            _customer_reply(state, data, contact, sent, text, action_index)


def _out_of_office(
    state: MailState, data: Repository, contact: Contact, sent: Message, action_index: int
) -> None:
    key = f"{contact.contact_id}:{sent.thread_id}"
    if key in state.auto_replied:
        return
    state.auto_replied.append(key)
    delegate = state.contacts.get(contact.delegate_id)
    body = _template(
        state,
        data,
        "out_of_office",
        contact,
        until=contact.out_of_office_until,
        delegate_name=delegate.name if delegate else "the team",
        delegate_email=delegate.email if delegate else state.owner.email,
    )
    _schedule(state, contact, sent, body, action_index + 1, subject=f"Automatic reply: {sent.subject}")


def _colleague_reply(
    state: MailState, data: Repository, contact: Contact, sent: Message, text: str, action_index: int
) -> None:
    asked = [f for f in contact.facts if any(k.lower() in text for k in f.keywords)]
    if asked:
        body = _template(state, data, "colleague_answer", contact, answers="\n".join(f.answer for f in asked))
    else:
        topics = ", ".join(f.topic for f in contact.facts)
        body = _template(state, data, "colleague_clarify", contact, topics=topics)
    _schedule(state, contact, sent, body, action_index + max(1, contact.reply_delay))


def _customer_reply(
    state: MailState, data: Repository, contact: Contact, sent: Message, text: str, action_index: int
) -> None:
    open_cases = [
        c for c in state.cases.values() if c.contact_id == contact.contact_id and c.status == "open"
    ]
    if not open_cases:
        return
    case = min(open_cases, key=lambda c: c.case_id)
    flat = " ".join(text.split())
    missing = [
        r.label for r in case.requirements if not any(" ".join(a.lower().split()) in flat for a in r.accepted)
    ]
    due = action_index + max(1, contact.reply_delay)
    if not missing:
        body = _template(state, data, "customer_resolved", contact)
        _schedule(state, contact, sent, body, due, effect=f"resolve:{case.case_id}")
        return
    case.unhelpful_replies += 1
    wanted = " and ".join(missing)
    if case.unhelpful_replies >= data.json("policy.json")["escalate_after_unhelpful_replies"]:
        manager = state.contacts.get(state.owner.manager_id)
        cc = [formataddr((manager.name, manager.email))] if manager else []
        body = _template(state, data, "customer_escalated", contact, missing=wanted)
        _schedule(state, contact, sent, body, due, cc=cc, effect=f"escalate:{case.case_id}")
    else:
        body = _template(state, data, "customer_missing", contact, missing=wanted)
        _schedule(state, contact, sent, body, due)


def _template(state: MailState, data: Repository, name: str, contact: Contact, **values: str) -> str:
    owner_first = state.owner.name.split()[0]
    return str(data.json("replies.json")[name]).format(name=contact.name, owner_first=owner_first, **values)


def _schedule(
    state: MailState,
    contact: Contact,
    sent: Message,
    body: str,
    due_index: int,
    subject: str = "",
    cc: list[str] | None = None,
    effect: str = "",
) -> None:
    """A reply to ``sent`` from ``contact`` that lands in the inbox at action ``due_index``."""
    reply_id = f"PR-{state.next_reply:03d}"
    state.next_reply += 1
    base = sent.subject if sent.subject.lower().startswith("re:") else f"Re: {sent.subject}"
    state.pending[reply_id] = PendingReply(
        reply_id=reply_id,
        due_index=due_index,
        contact_id=contact.contact_id,
        thread_id=sent.thread_id,
        in_reply_to=sent.message_id,
        subject=subject or base,
        cc=cc or [],
        body=body,
        effect=effect,
    )


# -- what the agent sees and writes ---------------------------------------------------------------
def message_view(state: MailState, message: Message, folder: str, draft: str) -> dict[str, Any]:
    """Headers and body as the agent sees them; a draft's come from its file's text ``draft``."""
    if message.status == "draft":
        parsed = parse_message(draft)
        sender = formataddr((state.owner.name, state.owner.email))
        to, cc, subject, body = parsed["to"], parsed["cc"], parsed["subject"], parsed["body"]
    else:
        sender, to, cc, subject, body = (
            message.sender,
            message.to,
            message.cc,
            message.subject,
            message.body,
        )
    return {
        "message_id": message.message_id,
        "folder": folder,
        "status": message.status,
        "from": sender,
        "to": to,
        "cc": cc,
        "subject": subject,
        "date": message.date,
        "thread_id": message.thread_id,
        "in_reply_to": message.in_reply_to,
        "forward_of": message.forward_of,
        "classification": message.classification,
        "flags": message.flags,
        "labels": message.labels,
        "body": body,
    }


def reply_to(
    owner: Owner, original: Message, body: str, reply_all: bool
) -> tuple[list[str], list[str], str, str]:
    """Recipients, copies, subject and text of a reply to ``original`` that quotes it."""
    if original.status == "received":
        to = [original.sender]
        others = (
            [a for a in [*original.to, *original.cc] if bare_email(a) != owner.email] if reply_all else []
        )
    else:
        to = list(original.to)
        others = list(original.cc) if reply_all else []
    subject = original.subject if original.subject.lower().startswith("re:") else f"Re: {original.subject}"
    quoted = "\n".join(f"> {line}" for line in original.body.splitlines())
    text = f"{body.rstrip()}\n\nOn {original.date}, {original.sender} wrote:\n{quoted}\n"
    return to, others, subject, text


def forward_of(original: Message, body: str) -> tuple[str, str]:
    """Subject and text of a forward of ``original`` below the note ``body``."""
    block = (
        f"{FORWARD_MARK}\nFrom: {original.sender}\nDate: {original.date}\n"
        f"Subject: {original.subject}\nTo: {', '.join(original.to)}\n\n{original.body}"
    )
    return f"Fwd: {original.subject}", (f"{body.rstrip()}\n\n{block}\n" if body.strip() else f"{block}\n")


FORWARD_MARK = "---------- Forwarded message ----------"
_QUOTE_HEAD = re.compile(r"^On .+ wrote:\n(?=> |>$)", re.MULTILINE)


def with_original(current: str, body: str, carries: bool) -> str:
    """A draft's new text ``body`` with the quote of a reply, or the original of a forward, that
    ``current`` ends with kept below it (``carries``: the draft is a reply or a forward). A body
    that already holds that part (the whole draft, edited) is the whole new text."""
    if not carries:
        return body
    forward = current.find(FORWARD_MARK)
    quotes = list(_QUOTE_HEAD.finditer(current))
    start = forward if forward >= 0 else (quotes[-1].start() if quotes else -1)
    if start < 0:
        return body
    original = current[start:]
    head = original.split("\n", 1)[0]
    if head in body:
        return body
    return f"{body.rstrip()}\n\n{original}" if body.strip() else original


def deliver(state: MailState, reply: PendingReply, now: datetime) -> Message:
    """A reply whose time has come becomes a received message of its thread; its effect on a case
    (resolve or escalate) happens now. The caller writes the message's file to the inbox."""
    contact = state.contacts[reply.contact_id]
    owner = state.owner
    message = Message(
        message_id=next_message_id(state),
        thread_id=reply.thread_id,
        status="received",
        sender=formataddr((contact.name, contact.email)),
        to=[formataddr((owner.name, owner.email))],
        cc=reply.cc,
        subject=reply.subject,
        date=mail_date(now),
        in_reply_to=reply.in_reply_to,
        body=reply.body,
    )
    state.messages[message.message_id] = message
    state.threads[reply.thread_id].message_ids.append(message.message_id)
    del state.pending[reply.reply_id]
    if reply.effect:
        action, case_id = reply.effect.split(":", 1)
        state.cases[case_id].status = "resolved" if action == "resolve" else "escalated"
    return message
