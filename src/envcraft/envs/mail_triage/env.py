"""Mail triage: a mailbox of .eml files in the workspace, with colleagues and customers who answer.

The reference environment of the *human-agent interaction* archetype: the agent's messages
reach simulated people whose replies are a deterministic function of the state (what the sent
message said, who was asked, who is out of office) and arrive a few actions later on the
derived clock. Folders are directories (the file's location is the truth, so a move made with
the shell counts), received and sent messages are immutable server copies, drafts are files
the agent may also edit by hand, and action items live in todo.md.
"""

from __future__ import annotations

import random
import re
from datetime import timedelta
from email.utils import formataddr
from typing import Any

from envcraft import ClawEnvironment, Entity, Initial, Job, Repository, ToolFailure, iso, tool

from .generate import generate_mailbox
from .rules import (
    ADDRESS,
    MAIL_ROOT,
    MESSAGE_FILE,
    SUMMARY_FIELDS,
    TODO_FILE,
    bare_email,
    deliver,
    forward_of,
    impersonated,
    is_date,
    mail_date,
    mail_path,
    message_view,
    new_thread,
    next_message_id,
    open_todos,
    parse_message,
    react,
    render_message,
    render_todos,
    reply_to,
    with_original,
)
from .state import MailState, Message, PendingReply, Thread, Todo


class MailTriage(ClawEnvironment):
    """Email client over the workspace folder mail/ (one .eml file per message, one folder each).

    Triage the inbox (read, search, move, flag, label), write drafts (compose, reply, forward,
    edit, or edit the draft file by hand), send them, and record action items in todo.md.
    Colleagues and customers answer what you send: their replies arrive in the inbox a few
    actions later, when you call sync_mailbox. Sent and received messages are immutable.
    """

    State = MailState
    state: MailState
    entities = (
        Entity("contacts", "contact", ("{name} ({email})",), vary=("role",)),
        Entity("cases", "case", ("the case “{subject}” of {contact_id}",)),
        Entity(
            "messages",
            "message",
            (
                "the message “{subject}” from {sender:person}",
                "the message “{subject}” from {sender}",
                "the message “{subject}” from {sender} of {date:when}",
                "the {status} message “{subject}” to {to}",
            ),
        ),
        Entity("threads", "conversation", ("the conversation “{subject}”",)),
        Entity("pending", "reply on its way", (), log=True),
        Entity("todos", "to-do", ("the to-do {text}",)),
    )

    jobs = (
        Job(
            "answer a message",
            ("draft_reply", "send_draft"),
            "answer {message_id}{reply_all|true= (to everyone on it)|*=}, saying {body}",
        ),
        Job(
            "hand a message on to a colleague",
            ("draft_forward", "send_draft"),
            "pass {message_id} on to {to}[ with the note {body}]",
        ),
        Job(
            "delegate a message and keep track of it",
            ("draft_forward", "send_draft", "add_todo"),
            "pass {draft_forward.message_id} on to {to}[ with the note {body}], and put {text} on my to-do "
            "list[{add_todo.message_id|*=, linked to the forward}][, due {due_date:date}]",
        ),
        Job(
            "turn a message into an action item",
            ("flag_message", "add_todo"),
            "put {message_id} on my to-do list as {text}[, due {due_date:date}], and flag the message "
            "for follow-up",
        ),
        Job(
            "file a message away",
            ("create_folder", "move_message", "label_message"),
            "file {message_id} in a new folder {name}, labelled {label}",
        ),
        Job(
            "answer and file away",
            ("draft_reply", "send_draft", "move_message"),
            "answer {message_id}{reply_all|true= (to everyone on it)|*=}, saying {body}, and file the "
            "message in the {folder} folder",
        ),
        Job(
            "log a finished task",
            ("add_todo", "complete_todo"),
            "put {text} on my to-do list[ for {message_id}][, due {due_date:date}] and tick it off right "
            "away, it is already done",
        ),
        Job(
            "answer and log it as done",
            ("draft_reply", "send_draft", "add_todo", "complete_todo"),
            "answer {message_id}{reply_all|true= (to everyone on it)|*=}, saying {body}, and log {text} on "
            "my to-do list as done[, for {add_todo.message_id}]",
        ),
    )

    # -- reading -----------------------------------------------------------------------------
    @tool(read_only=True, produces=["message_id", "thread_id"])
    def list_messages(
        self, folder: str = "inbox", unread_only: bool = False, flagged_only: bool = False, label: str = ""
    ) -> dict[str, Any]:
        """List the messages of a folder, newest first, with the message count of every folder.

        Args:
            folder: The folder (inbox, drafts, sent, archive, spam, trash or one you created);
                empty for all folders.
            unread_only: Only messages not yet read.
            flagged_only: Only flagged messages.
            label: Only messages carrying this label; empty for any.

        Returns:
            Message summaries (id, folder, from, to, subject, date, thread, flags, labels, status)
            and the number of messages per folder.
        """
        index = self._index()
        if folder and folder not in self.state.folders:
            self.fail("not_found", f"no folder '{folder}'", folder=folder, folders=self.state.folders)
        rows = []
        for message_id, folders in index.items():
            message = self.state.messages[message_id]
            if folder and folder not in folders:
                continue
            if unread_only and "seen" in message.flags:
                continue
            if flagged_only and "flagged" not in message.flags:
                continue
            if label and label not in message.labels:
                continue
            rows.append(self._summary(message, folders[0]))
        rows.sort(key=lambda r: (r["date"], r["message_id"]), reverse=True)
        counts = {f: sum(1 for fs in index.values() if f in fs) for f in self.state.folders}
        return {"folder": folder or "all", "messages": rows, "count": len(rows), "folders": counts}

    @tool(read_only=True, produces=["message_id", "thread_id"])
    def search_messages(self, query: str, folder: str = "") -> dict[str, Any]:
        """Search sender, recipients, subject and body; every word of the query must appear.

        Args:
            query: Words to look for (case does not matter), e.g. "ORD-5521 tracking".
            folder: Only this folder; empty for all folders.

        Returns:
            Matching message summaries, newest first.
        """
        words = query.lower().split()
        if not words:
            self.fail("invalid_argument", "query must contain at least one word", field="query")
        rows = []
        for message_id, folders in self._index().items():
            if folder and folder not in folders:
                continue
            message = self.state.messages[message_id]
            view = self._view(message, folders[0])
            text = " ".join([view["from"], *view["to"], *view["cc"], view["subject"], view["body"]]).lower()
            if all(w in text for w in words):
                rows.append(self._summary(message, folders[0]))
        rows.sort(key=lambda r: (r["date"], r["message_id"]), reverse=True)
        return {"messages": rows, "count": len(rows)}

    @tool(read_only=True, consumes=["message_id"], produces=["thread_id", "contact_id"])
    def read_message(self, message_id: str) -> dict[str, Any]:
        """Open a message: full headers and body. Marks it as read.

        A received or sent message whose file was changed by hand is restored from the server copy.

        Args:
            message_id: The message id, e.g. MSG-0004.

        Returns:
            Folder, from, to, cc, subject, date, thread, in_reply_to, classification, flags, labels,
            body, and restored (true when the file had been altered and was restored).
        """
        message, folder = self._located(message_id)
        restored = False
        if message.status != "draft":
            path = mail_path(folder, message_id)
            canonical = render_message(message, message.body)
            if self.workspace.read_text(path) != canonical:
                self.workspace.write_text(path, canonical)
                restored = True
        if "seen" not in message.flags:
            message.flags = sorted({*message.flags, "seen"})
        return {**self._view(message, folder), "restored": restored}

    @tool(read_only=True, consumes=["thread_id"], produces=["message_id"])
    def read_thread(self, thread_id: str) -> dict[str, Any]:
        """Show a whole conversation in order: every message with its body.

        Args:
            thread_id: The thread id, e.g. THR-003.

        Returns:
            The thread subject and its messages, oldest first.
        """
        thread = self.lookup(self.state.threads, thread_id, "thread", thread_id=thread_id)
        index = self._index()
        messages = [self._view(self.state.messages[m], index[m][0]) for m in thread.message_ids if m in index]
        return {"thread_id": thread_id, "subject": thread.subject, "messages": messages}

    @tool(read_only=True, produces=["contact_id"])
    def lookup_contact(self, query: str) -> dict[str, Any]:
        """Find people in the address book by name, email or organisation.

        Args:
            query: Words that must all appear in the name, email, organisation or role.

        Returns:
            Matching contacts: id, name, email, organisation, role and kind (colleague, customer,
            vendor, external).
        """
        words = query.lower().split()
        if not words:
            self.fail("invalid_argument", "query must contain at least one word", field="query")
        found = [
            {k: getattr(c, k) for k in ("contact_id", "name", "email", "org", "role", "kind")}
            for c in sorted(self.state.contacts.values(), key=lambda c: c.contact_id)
            if all(w in f"{c.name} {c.email} {c.org} {c.role}".lower() for w in words)
        ]
        return {"contacts": found, "count": len(found)}

    # -- organising --------------------------------------------------------------------------
    @tool(
        goal="move {message_id} to the {folder} folder",
        consumes=["message_id"],
        examples={"folder": ("archive", "spam", "trash")},
    )
    def move_message(self, message_id: str, folder: str) -> dict[str, Any]:
        """Move a received message to another folder (e.g. archive, spam, trash, or your own folder).

        Args:
            message_id: The message to move.
            folder: Destination folder; drafts and sent cannot be chosen.

        Returns:
            The message id, the folder it left, the folder it is in now, and whether it moved.
        """
        message, current = self._located(message_id)
        if folder not in self.state.folders:
            self.fail("not_found", f"no folder '{folder}'; create_folder makes one", folder=folder)
        if folder in ("drafts", "sent"):
            self.fail(
                "invalid_argument",
                f"messages cannot be moved into {folder}; drafts are created by the draft tools "
                "and only send_draft puts a message in sent",
                field="folder",
            )
        if message.status != "received":
            self.fail(
                "invalid_transition",
                f"{message_id} is a {message.status} message; it stays in {current}",
                message_id=message_id,
                status=message.status,
            )
        if folder != current:
            self.workspace.delete(mail_path(current, message_id))
            self.workspace.write_text(mail_path(folder, message_id), render_message(message, message.body))
        return {
            "message_id": message_id,
            "from_folder": current,
            "folder": folder,
            "moved": folder != current,
        }

    @tool(
        goal="create a mail folder called {name}",
        produces=["folder"],
        examples={"name": ("vendors", "travel", "q1-invoices")},
    )
    def create_folder(self, name: str) -> dict[str, Any]:
        """Create a mail folder.

        Args:
            name: Folder name: lowercase letters, digits and hyphens (e.g. "vendors").

        Returns:
            The folder name and the list of all folders.
        """
        if not re.match(r"^[a-z][a-z0-9-]{1,29}$", name):
            self.fail(
                "invalid_argument", "folder names use lowercase letters, digits and hyphens", field="name"
            )
        if name in self.state.folders:
            self.fail("conflict", f"folder '{name}' already exists", folder=name)
        self.state.folders.append(name)
        return {"folder": name, "folders": self.state.folders}

    @tool(goal="{flagged|true=flag|false=remove the flag from|*=flag} {message_id}", consumes=["message_id"])
    def flag_message(self, message_id: str, flagged: bool = True) -> dict[str, Any]:
        """Flag a message for follow-up, or clear the flag.

        Args:
            message_id: The message.
            flagged: True to flag, false to clear.

        Returns:
            The message id and its flags.
        """
        message, _ = self._located(message_id)
        flags = set(message.flags) - {"flagged"}
        if flagged:
            flags.add("flagged")
        message.flags = sorted(flags)
        return {"message_id": message_id, "flags": message.flags}

    @tool(
        goal="{remove|true=take|*=put} the label {label} {remove|true=off|*=on} {message_id}",
        consumes=["message_id"],
        examples={"label": ("finance", "customer-escalation", "follow-up")},
    )
    def label_message(self, message_id: str, label: str, remove: bool = False) -> dict[str, Any]:
        """Add a label to a message (or remove one).

        Args:
            message_id: The message.
            label: Lowercase label, e.g. "finance" or "customer-escalation".
            remove: True to remove the label instead.

        Returns:
            The message id and its labels.
        """
        message, _ = self._located(message_id)
        if not re.match(self.data.json("policy.json")["label_pattern"], label):
            self.fail("invalid_argument", "labels use lowercase letters, digits and hyphens", field="label")
        if remove and label not in message.labels:
            self.fail("not_found", f"{message_id} has no label '{label}'", labels=message.labels)
        labels = set(message.labels) - {label} if remove else set(message.labels) | {label}
        message.labels = sorted(labels)
        return {"message_id": message_id, "labels": message.labels}

    # -- drafts --------------------------------------------------------------------------------
    @tool(
        goal="draft a new message to {to} with the subject {subject}, saying {body}[, with {cc} in copy]",
        produces=["draft_id", "thread_id"],
        examples={
            "body": (
                "Could you send me the latest figures by Friday?",
                "Following up on this: is there an update?",
                "Can we move our call to Thursday afternoon?",
            )
        },
    )
    def compose_draft(
        self, to: list[str], subject: str, body: str, cc: list[str] | None = None
    ) -> dict[str, Any]:
        """Write a new message as a draft in mail/drafts (it starts a new conversation).

        Args:
            to: Recipient addresses (e.g. ["tom.becker@northwind.example"]).
            subject: The subject line.
            body: The message text.
            cc: Addresses in copy.

        Returns:
            The draft id, its thread id and the path of the draft file (editable by hand).
        """
        recipients = self._addresses(to, "to", required=True)
        copies = self._addresses(cc or [], "cc")
        if not subject.strip():
            self.fail("invalid_argument", "subject must not be empty", field="subject")
        thread = new_thread(self.state, subject.strip())
        return self._new_draft(thread, recipients, copies, subject.strip(), body)

    @tool(
        goal="draft a reply{reply_all|true= to everyone|*=} to {message_id}, saying {body}",
        consumes=["message_id"],
        produces=["draft_id"],
        examples={
            "body": (
                "Thanks, I will look into this today.",
                "Thanks for the update, noted.",
                "Got it, I will get back to you by tomorrow.",
            )
        },
    )
    def draft_reply(self, message_id: str, body: str, reply_all: bool = False) -> dict[str, Any]:
        """Draft a reply in the message's conversation, quoting it.

        A message whose sender poses as a contact (the contact's name on an address the address
        book does not have: phishing) gets no reply; move it to spam instead.

        Args:
            message_id: A received or sent message.
            body: Your reply text (the original is quoted below it).
            reply_all: Also address everyone else on the original (minus yourself).

        Returns:
            The draft id, thread id, recipients and the path of the draft file.
        """
        original, _ = self._located(message_id)
        if original.status == "draft":
            self.fail(
                "invalid_transition",
                f"{message_id} is a draft; reply to a received or sent message",
                message_id=message_id,
                status=original.status,
            )
        posed = impersonated(self.state, original.sender) if original.status == "received" else None
        if posed is not None:
            self.fail(
                "permission_denied",
                f"{message_id} comes from {bare_email(original.sender)}, not {posed.name}'s address "
                f"{posed.email}: a lookalike (phishing) gets no reply; move it to spam",
                message_id=message_id,
                sender=bare_email(original.sender),
            )
        to, others, subject, text = reply_to(self.state.owner, original, body, reply_all)
        thread = self.state.threads[original.thread_id]
        return self._new_draft(thread, to, others, subject, text, in_reply_to=message_id)

    @tool(
        goal="draft a forward of {message_id} to {to}[, with the note {body}]",
        consumes=["message_id"],
        produces=["draft_id", "thread_id"],
        examples={
            "body": (
                "Can you take this one?",
                "Please handle this by Friday.",
                "Adding you so you can follow this thread.",
            )
        },
    )
    def draft_forward(self, message_id: str, to: list[str], body: str = "") -> dict[str, Any]:
        """Draft a forward of a message (a new conversation) with the original below your note.

        Confidential messages may only be forwarded inside the company domain.

        Args:
            message_id: A received or sent message.
            to: Recipient addresses.
            body: Your note above the forwarded message.

        Returns:
            The draft id, its new thread id and the path of the draft file.
        """
        original, _ = self._located(message_id)
        if original.status == "draft":
            self.fail(
                "invalid_transition",
                f"{message_id} is a draft; forward a received or sent message",
                message_id=message_id,
                status=original.status,
            )
        recipients = self._addresses(to, "to", required=True)
        subject, text = forward_of(original, body)
        thread = new_thread(self.state, subject)
        return self._new_draft(thread, recipients, [], subject, text, forward_of=message_id)

    @tool(
        goal="change {draft_id}[: the body becomes {body}][, the subject becomes {subject}][, the "
        "recipients become {to}][, the copies become {cc}]",
        consumes=["draft_id"],
        examples={
            "body": (
                "Could you send me the final figures by Monday?",
                "Updated: our call moves to Thursday at 10.",
                "Thanks, I will look into this tomorrow morning.",
            )
        },
    )
    def edit_draft(
        self,
        draft_id: str,
        body: str | None = None,
        subject: str | None = None,
        to: list[str] | None = None,
        cc: list[str] | None = None,
    ) -> dict[str, Any]:
        """Change a draft's body, subject or recipients (what is omitted stays as it is).

        Args:
            draft_id: A draft message id.
            body: The new text; a reply's quote or a forward's original stays below it (a body
                that already holds them replaces the whole).
            subject: The new subject (also of the conversation, when the draft started it).
            to: The new recipient list.
            cc: The new copy list.

        Returns:
            The draft id and its current recipients and subject.
        """
        message, folder = self._located(draft_id)
        if message.status != "draft":
            self.fail(
                "invalid_transition",
                f"{draft_id} is {message.status}; only drafts can be edited (a sent message never changes)",
                message_id=draft_id,
                status=message.status,
            )
        draft = parse_message(self.workspace.read_text(mail_path(folder, draft_id)))
        if to is not None:
            draft["to"] = self._addresses(to, "to", required=True)
        if cc is not None:
            draft["cc"] = self._addresses(cc, "cc")
        if subject is not None:
            if not subject.strip():
                self.fail("invalid_argument", "subject must not be empty", field="subject")
            draft["subject"] = subject.strip()
        if body is not None:
            draft["body"] = with_original(
                draft["body"], body, bool(message.forward_of or message.in_reply_to)
            )
        headers = message.model_copy(
            update={"to": draft["to"], "cc": draft["cc"], "subject": draft["subject"]}
        )
        self.workspace.write_text(mail_path(folder, draft_id), render_message(headers, draft["body"]))
        thread = self.state.threads.get(message.thread_id)
        if subject is not None and thread is not None and thread.message_ids == [draft_id]:
            thread.subject = draft["subject"]  # the conversation this draft started is named by it
        return {"draft_id": draft_id, "to": draft["to"], "cc": draft["cc"], "subject": draft["subject"]}

    @tool(
        goal="discard {draft_id}",
        undoes=["compose_draft", "draft_reply", "draft_forward"],
        consumes=["draft_id"],
    )
    def discard_draft(self, draft_id: str) -> dict[str, Any]:
        """Delete a draft for good.

        Args:
            draft_id: A draft message id.

        Returns:
            The discarded draft id.
        """
        message, folder = self._located(draft_id)
        if message.status != "draft":
            self.fail(
                "invalid_transition",
                f"{draft_id} is {message.status}; only drafts can be discarded",
                message_id=draft_id,
                status=message.status,
            )
        self.workspace.delete(mail_path(folder, draft_id))
        thread = self.state.threads[message.thread_id]
        thread.message_ids.remove(draft_id)
        if not thread.message_ids:
            del self.state.threads[thread.thread_id]
        del self.state.messages[draft_id]
        return {"draft_id": draft_id, "discarded": True}

    @tool(goal="send {draft_id}", consumes=["draft_id"], produces=["message_id"])
    def send_draft(self, draft_id: str) -> dict[str, Any]:
        """Send a draft as it is in its file now; it moves to sent and can never change again.

        Args:
            draft_id: A draft message id.

        Returns:
            The sent message id, its thread, recipients and send time.
        """
        message, folder = self._located(draft_id)
        if message.status != "draft":
            why = (
                "it was already sent and can never change" if message.status == "sent" else "it was received"
            )
            self.fail(
                "invalid_transition",
                f"{draft_id} is not a draft ({why}); only drafts can be sent",
                message_id=draft_id,
                status=message.status,
            )
        draft = parse_message(self.workspace.read_text(mail_path(folder, draft_id)))
        to = self._addresses(draft["to"], "to", required=True)
        cc = self._addresses(draft["cc"], "cc")
        if not draft["subject"]:
            self.fail("invalid_argument", f"draft {draft_id} has no subject", field="subject")
        if message.forward_of:
            self._check_forward(message.forward_of, [*to, *cc])
        owner = self.state.owner
        message.status = "sent"
        message.sender = formataddr((owner.name, owner.email))
        message.to, message.cc, message.subject, message.body = to, cc, draft["subject"], draft["body"]
        message.date = mail_date(self.now())
        message.flags = sorted({*message.flags, "seen"})  # a draft flagged stays flagged once sent
        self.workspace.delete(mail_path(folder, draft_id))
        self.workspace.write_text(mail_path("sent", draft_id), render_message(message, message.body))
        react(self.state, self.data, message, self.now().date().isoformat(), self.action_index)
        return {
            "message_id": draft_id,
            "status": "sent",
            "thread_id": message.thread_id,
            "to": to,
            "cc": cc,
            "sent_at": iso(self.now()),
        }

    @tool(goal="check for new mail", produces=["message_id"], fetches=True)
    def sync_mailbox(self) -> dict[str, Any]:
        """Send/receive: deliver the replies that have arrived by now into the inbox.

        Returns:
            The ids, senders and subjects of the newly delivered messages (possibly none).
        """
        due = sorted(
            (p for p in self.state.pending.values() if p.due_index <= self.action_index),
            key=lambda p: (p.due_index, p.reply_id),
        )
        delivered = []
        for reply in due:
            message = self._deliver(reply)
            delivered.append(
                {"message_id": message.message_id, "from": message.sender, "subject": message.subject}
            )
        return {"delivered": delivered, "count": len(delivered), "checked_at": iso(self.now())}

    # -- action items --------------------------------------------------------------------------
    @tool(
        goal="add the to-do {text}[ for {message_id}][, due {due_date:date}]",
        consumes=["message_id"],
        produces=["todo_id"],
        examples={
            "text": (
                "Check the invoice totals",
                "Call back about the order",
                "Book the meeting room for Thursday",
            )
        },
    )
    def add_todo(self, text: str, message_id: str = "", due_date: str = "") -> dict[str, Any]:
        """Add an action item to todo.md, optionally linked to the message it comes from.

        Args:
            text: What has to be done, e.g. "Send Q4 freight cost to Marta".
            message_id: The message the item comes from; empty for none.
            due_date: Due date as YYYY-MM-DD; empty for none.

        Returns:
            The todo id and the open items.
        """
        if not text.strip():
            self.fail("invalid_argument", "text must not be empty", field="text")
        if message_id and message_id not in self.state.messages:
            self.fail("not_found", f"no message '{message_id}'", message_id=message_id)
        if due_date and not is_date(due_date):
            self.fail("invalid_argument", "due_date must be a date written YYYY-MM-DD", field="due_date")
        same = [
            t.todo_id
            for t in self.state.todos.values()
            if not t.done and t.text.lower() == text.strip().lower() and t.source_message_id == message_id
        ]
        if same:
            self.fail("conflict", f"the same open item already exists: {same[0]}", todo_id=same[0])
        todo_id = f"TODO-{self.state.next_todo:02d}"
        self.state.next_todo += 1
        self.state.todos[todo_id] = Todo(
            todo_id=todo_id,
            text=text.strip(),
            source_message_id=message_id,
            due_date=due_date,
            created_at=iso(self.now()),
        )
        self.workspace.write_text(TODO_FILE, render_todos(self.state))
        return {"todo_id": todo_id, "open": open_todos(self.state)}

    @tool(goal="mark {todo_id} as done", consumes=["todo_id"])
    def complete_todo(self, todo_id: str) -> dict[str, Any]:
        """Tick off an action item in todo.md.

        Args:
            todo_id: The item id, e.g. TODO-02.

        Returns:
            The todo id and the items still open.
        """
        todo = self.lookup(self.state.todos, todo_id, "todo", todo_id=todo_id)
        if todo.done:
            self.fail("invalid_transition", f"{todo_id} is already done", todo_id=todo_id, status="done")
        todo.done = True
        self.workspace.write_text(TODO_FILE, render_todos(self.state))
        return {"todo_id": todo_id, "done": True, "open": open_todos(self.state)}

    # -- helpers -------------------------------------------------------------------------------
    def _deliver(self, reply: PendingReply) -> Message:
        """A reply whose time has come, as a received message in the inbox (and its case's effect)."""
        message = deliver(self.state, reply, self.now())
        self.workspace.write_text(
            mail_path("inbox", message.message_id), render_message(message, message.body)
        )
        return message

    def _index(self) -> dict[str, list[str]]:
        """message id -> the folders its file is in (the file's location is the truth)."""
        index: dict[str, list[str]] = {}
        try:
            paths = self.workspace.list(MAIL_ROOT)
        except ToolFailure:  # no mail/ folder at all: an empty mailbox
            paths = []
        for path in paths:
            match = MESSAGE_FILE.match(path)
            if match and match[2] in self.state.messages:
                index.setdefault(match[2], []).append(match[1])
        return {k: sorted(v) for k, v in sorted(index.items())}

    def _located(self, message_id: str) -> tuple[Message, str]:
        message = self.lookup(self.state.messages, message_id, "message", message_id=message_id)
        folders = self._index().get(message_id, [])
        if not folders:
            self.fail(
                "not_found",
                f"the file of {message_id} is missing from mail/ (deleted outside the mail client?)",
                message_id=message_id,
            )
        if len(folders) > 1:
            self.fail(
                "conflict",
                f"{message_id} is in several folders {folders}; a message lives in exactly one, "
                "so remove the extra copies",
                message_id=message_id,
                folders=folders,
            )
        return message, folders[0]

    def _view(self, message: Message, folder: str) -> dict[str, Any]:
        """Headers and body as the agent sees them (drafts read from their file)."""
        draft = (
            self.workspace.read_text(mail_path(folder, message.message_id))
            if message.status == "draft"
            else ""
        )
        return message_view(self.state, message, folder, draft)

    def _summary(self, message: Message, folder: str) -> dict[str, Any]:
        view = self._view(message, folder)
        return {k: view[k] for k in SUMMARY_FIELDS}

    def _addresses(self, values: list[str], field: str, required: bool = False) -> list[str]:
        cleaned = [v.strip() for v in values if v.strip()]
        if required and not cleaned:
            self.fail("invalid_argument", f"{field} needs at least one address", field=field)
        bad = [v for v in cleaned if not ADDRESS.match(bare_email(v))]
        if bad:
            self.fail(
                "invalid_argument", f"invalid email addresses in {field}: {bad}", field=field, invalid=bad
            )
        return cleaned

    def _check_forward(self, original_id: str, recipients: list[str]) -> None:
        original = self.state.messages.get(original_id)
        if original is None or original.classification != "confidential":
            return
        domain = self.data.json("policy.json")["internal_domain"]
        outside = [r for r in recipients if not bare_email(r).endswith(f"@{domain}")]
        if outside:
            self.fail(
                "permission_denied",
                f"{original_id} is confidential and may not be forwarded outside {domain}: {outside}",
                message_id=original_id,
                recipients=outside,
                missing_permission="share_confidential_externally",
            )

    def _new_draft(
        self,
        thread: Thread,
        to: list[str],
        cc: list[str],
        subject: str,
        body: str,
        in_reply_to: str = "",
        forward_of: str = "",
    ) -> dict[str, Any]:
        message = Message(
            message_id=next_message_id(self.state),
            thread_id=thread.thread_id,
            status="draft",
            date=mail_date(self.now()),
            in_reply_to=in_reply_to,
            forward_of=forward_of,
            flags=["seen"],
        )
        self.state.messages[message.message_id] = message
        thread.message_ids.append(message.message_id)
        headers = message.model_copy(update={"to": to, "cc": cc, "subject": subject})
        path = mail_path("drafts", message.message_id)
        self.workspace.write_text(path, render_message(headers, body))
        return {
            "draft_id": message.message_id,
            "thread_id": thread.thread_id,
            "to": to,
            "cc": cc,
            "path": path,
        }

    # -- initial states ------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A Monday-morning inbox: a manager's request that needs a figure from Finance, customers
        chasing late orders that only Logistics can answer (the usual contact is out of office),
        a vendor invoice and its phishing lookalike, a confidential HR note, newsletters, and a
        namesake of a customer. ``size`` adds customers and noise."""
        return generate_mailbox(random.Random(seed), max(1, size), cls.repository(data), cls.base_time())

    @classmethod
    def leave_note(cls, initial: Initial, subject: str, text: str, seed: int) -> tuple[str, str] | None:
        """An unread mail from a colleague, received early this morning (after every other
        message of S0, before the session starts), in its own thread; its .eml file is written."""
        state = initial.state
        assert isinstance(state, MailState)
        colleagues = sorted(c for c, contact in state.contacts.items() if contact.kind == "colleague")
        if not colleagues:
            return None
        author = state.contacts[random.Random(seed).choice(colleagues)]
        start = cls.base_time()
        latest = max((m.date for m in state.messages.values() if m.date), default="")
        moment = start - timedelta(minutes=random.Random(seed).randint(12, 50))
        if latest and iso(moment) <= latest:
            return None  # the inbox already runs up to now: no room for a note before the session
        thread = new_thread(state, subject)
        message = Message(
            message_id=next_message_id(state),
            thread_id=thread.thread_id,
            status="received",
            sender=formataddr((author.name, author.email)),
            to=[formataddr((state.owner.name, state.owner.email))],
            subject=subject,
            date=mail_date(moment),
            body=f"Hi {state.owner.name.split()[0]},\n\n{text}\n\nThanks,\n{author.name.split()[0]}",
        )
        state.messages[message.message_id] = message
        thread.message_ids.append(message.message_id)
        initial.files[mail_path("inbox", message.message_id)] = render_message(message, message.body)
        return "messages", message.message_id
