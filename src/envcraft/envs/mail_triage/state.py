"""Mail triage: the State models (contacts, cases, messages and threads, replies on their way,
to-dos) and the links between them, checked record by record."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envcraft import IsoTime, StateModel, dangling, invariant, misfiled

MessageStatus = Literal["received", "draft", "sent"]
ContactKind = Literal["colleague", "customer", "vendor", "external"]


class Fact(StateModel):
    """Something a colleague knows and tells whoever asks with one of the keywords."""

    topic: str
    keywords: list[str]
    answer: str


class Requirement(StateModel):
    """A piece of information a customer waits for; any accepted spelling counts."""

    label: str
    accepted: list[str]


class Contact(StateModel):
    contact_id: str
    name: str
    email: str
    org: str
    role: str
    kind: ContactKind
    reply_delay: int = 3  # actions between a message reaching them and their reply arriving
    out_of_office_until: str = ""  # ISO date; empty when in the office
    delegate_id: str = ""
    facts: list[Fact] = Field(default_factory=list)


class Case(StateModel):
    case_id: str
    contact_id: str
    subject: str
    requirements: list[Requirement]
    status: Literal["open", "resolved", "escalated"] = "open"
    unhelpful_replies: int = 0


class Message(StateModel):
    """Server-side record. For drafts only the metadata: the draft file holds the content."""

    message_id: str
    thread_id: str
    status: MessageStatus
    sender: str = ""
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    subject: str = ""
    date: IsoTime
    in_reply_to: str = ""
    forward_of: str = ""
    classification: str = ""
    body: str = ""
    flags: list[str] = Field(default_factory=list)  # seen, flagged
    labels: list[str] = Field(default_factory=list)


class Thread(StateModel):
    thread_id: str
    subject: str
    message_ids: list[str] = Field(default_factory=list)


class PendingReply(StateModel):
    """A reply decided when the agent's message was sent; it lands in the inbox at ``due_index``."""

    reply_id: str
    due_index: int
    contact_id: str
    thread_id: str
    in_reply_to: str
    subject: str
    cc: list[str] = Field(default_factory=list)
    body: str
    effect: str = Field(default="", pattern=r"^((resolve|escalate):.+)?$")  # "resolve:CASE-1", on delivery


class Todo(StateModel):
    todo_id: str
    text: str
    source_message_id: str = ""
    due_date: str = ""
    done: bool = False
    created_at: str


class Owner(StateModel):
    name: str = "Mailbox Owner"
    email: str = "owner@northwind.example"
    title: str = ""
    manager_id: str = ""


class MailState(StateModel):
    owner: Owner = Field(default_factory=Owner)
    folders: list[str] = Field(
        default_factory=lambda: ["inbox", "drafts", "sent", "archive", "spam", "trash"]
    )
    contacts: dict[str, Contact] = Field(default_factory=dict)
    cases: dict[str, Case] = Field(default_factory=dict)
    messages: dict[str, Message] = Field(default_factory=dict)
    threads: dict[str, Thread] = Field(default_factory=dict)
    pending: dict[str, PendingReply] = Field(default_factory=dict)
    todos: dict[str, Todo] = Field(default_factory=dict)
    auto_replied: list[str] = Field(default_factory=list)  # "CT-03:THR-004": out-of-office notices sent
    next_message: int = 1
    next_thread: int = 1
    next_reply: int = 1
    next_todo: int = 1

    # Each link is checked per record, so a call re-checks only the records it touched and those
    # whose links it changed (envcraft.core.invariants): delivery, replies and discards follow
    # these links without looking.
    @invariant("contacts")
    def _contact_filed(self, key: str, contact: Contact) -> None:
        _refuse(misfiled({key: contact}, "contact_id"))

    @invariant("cases")
    def _case_names_its_contact(self, key: str, case: Case) -> None:
        _refuse(
            [
                *misfiled({key: case}, "case_id"),
                *dangling(case.case_id, "contact", [case.contact_id], self.contacts),
            ]
        )

    @invariant("messages")
    def _message_listed_by_its_thread(self, key: str, message: Message) -> None:
        """A message is listed by its own thread (and, below, by no other)."""
        problems = misfiled({key: message}, "message_id")
        thread = self.threads.get(message.thread_id)
        if thread is None or message.message_id not in thread.message_ids:
            problems.append(f"{message.message_id} is not listed by its thread {message.thread_id!r}")
        _refuse(problems)

    @invariant("threads")
    def _thread_lists_its_messages(self, key: str, thread: Thread) -> None:
        problems = misfiled({key: thread}, "thread_id")
        for m in thread.message_ids:
            message = self.messages.get(m)
            if message is None or message.thread_id != thread.thread_id:
                problems.append(f"{thread.thread_id} lists {m}, which is not one of its messages")
        _refuse(problems)

    @invariant("pending")
    def _reply_names_contact_thread_and_case(self, key: str, reply: PendingReply) -> None:
        problems = [
            *misfiled({key: reply}, "reply_id"),
            *dangling(reply.reply_id, "contact", [reply.contact_id], self.contacts),
            *dangling(reply.reply_id, "thread", [reply.thread_id], self.threads),
        ]
        if reply.effect:
            problems += dangling(reply.reply_id, "case", [reply.effect.split(":", 1)[1]], self.cases)
        _refuse(problems)

    @invariant("todos")
    def _todo_filed(self, key: str, todo: Todo) -> None:
        _refuse(misfiled({key: todo}, "todo_id"))


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems[:5]))
