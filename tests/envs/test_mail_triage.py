"""mail_triage: mailbox tools on real .eml files, the simulated colleagues and customers on the
derived clock, every error category, invariants under random call sequences, and determinism."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from email.parser import HeaderParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from envcraft import Session
from envcraft.core import is_error, load_package

ENV = "mail_triage"
MESSAGE_FILE = re.compile(r"^mail/([^/]+)/(MSG-\d{4})\.eml$")


@pytest.fixture
def s() -> Iterator[Session]:
    with Session.memory(ENV, seed=0) as session:
        yield session


def ok(session: Session, tool: str, **args: Any) -> dict[str, Any]:
    result = session.call(tool, args)
    assert not is_error(result), result
    check_invariants(session.state(), session.files())
    return result


def shell_write(session: Session, path: str, content: str) -> None:
    """Change a workspace file the way the agent's shell would (no invariant check: it may break them)."""
    assert not is_error(session.call("write_file", {"path": path, "content": content}))


def err(session: Session, tool: str, category: str, **args: Any) -> dict[str, Any]:
    before = (session.state_hash(), session.files())
    result = session.call(tool, args)
    assert is_error(result), result
    assert result["error"]["category"] == category, result
    assert (session.state_hash(), session.files()) == before
    return dict(result["error"])


# -- who is who in a generated mailbox -----------------------------------------------------------
class Cast:
    """The people and messages of a generated mailbox, found by their role rather than by id."""

    def __init__(self, session: Session) -> None:
        state = session.state()
        contacts = state["contacts"].values()
        self.owner = state["owner"]
        self.manager = state["contacts"][self.owner["manager_id"]]
        self.finance = next(c for c in contacts if any(f["topic"] == "Q4 freight cost" for f in c["facts"]))
        self.away = next(c for c in contacts if c["out_of_office_until"])
        self.delegate = state["contacts"][self.away["delegate_id"]]
        self.case = state["cases"]["CASE-1"]
        self.customer = state["contacts"][self.case["contact_id"]]
        self.order = self.case["subject"].split()[-1].rstrip("?")
        self.tracking = self.case["requirements"][0]["accepted"][0]
        self.eta = self.case["requirements"][1]["accepted"][0]
        by_subject = {m["subject"]: k for k, m in state["messages"].items()}
        self.request = by_subject["Q4 freight cost for the board deck"]
        self.complaint = by_subject[self.case["subject"]]
        self.confidential = next(
            k for k, m in state["messages"].items() if m["classification"] == "confidential"
        )
        self.phishing = next(k for k, m in state["messages"].items() if "-invoices.net" in m["sender"])


def send(session: Session, to: list[str], subject: str, body: str) -> dict[str, Any]:
    draft = ok(session, "compose_draft", to=to, subject=subject, body=body)
    return ok(session, "send_draft", draft_id=draft["draft_id"])


def sync_until(session: Session, wanted: int = 1, limit: int = 6) -> list[dict[str, Any]]:
    """Call sync_mailbox until ``wanted`` messages have arrived (each call is one action)."""
    arrived: list[dict[str, Any]] = []
    for _ in range(limit):
        arrived += ok(session, "sync_mailbox")["delivered"]
        if len(arrived) >= wanted:
            break
    return arrived


def body_of(session: Session, message_id: str) -> str:
    return str(session.state()["messages"][message_id]["body"])


def where(files: dict[str, str], message_id: str) -> list[str]:
    return sorted(m[1] for p in files if (m := MESSAGE_FILE.match(p)) and m[2] == message_id)


# -- invariants ----------------------------------------------------------------------------------
def check_invariants(state: dict[str, Any], files: dict[str, str]) -> None:
    messages = state["messages"]
    for message_id, message in messages.items():
        folders = where(files, message_id)
        assert len(folders) == 1, (message_id, folders)
        folder = folders[0]
        if message["status"] == "sent":
            assert folder == "sent", message_id
        elif message["status"] == "draft":
            assert folder == "drafts", message_id
        else:
            assert folder not in ("drafts", "sent"), message_id
        text = files[f"mail/{folder}/{message_id}.eml"]
        head, _, body = text.partition("\n\n")
        if message["status"] != "draft":  # drafts may be edited by hand; the rest never change
            headers = HeaderParser().parsestr(head + "\n")
            assert headers["X-Thread-ID"] == message["thread_id"] and headers["X-Status"] == message["status"]
            assert headers["Subject"] == message["subject"] and body.rstrip("\n") == message["body"].rstrip()
        thread = state["threads"][message["thread_id"]]
        assert message_id in thread["message_ids"]
        if message["in_reply_to"]:
            assert message["in_reply_to"] in thread["message_ids"], message_id
    for thread_id, thread in state["threads"].items():
        assert thread["message_ids"], thread_id
        assert all(messages[m]["thread_id"] == thread_id for m in thread["message_ids"])
    for reply in state["pending"].values():
        replied = messages[reply["in_reply_to"]]
        assert replied["status"] == "sent" and replied["thread_id"] == reply["thread_id"]
    for case in state["cases"].values():
        contact = state["contacts"][case["contact_id"]]
        answers = [m for m in messages.values() if contact["email"] in m["sender"] and m["in_reply_to"]]
        assert case["status"] == "open" or answers, case
    todo_lines = files["todo.md"].splitlines()
    for todo in state["todos"].values():
        box = "x" if todo["done"] else " "
        assert any(line.startswith(f"- [{box}] {todo['todo_id']} {todo['text']}") for line in todo_lines), (
            todo
        )
    for message in messages.values():
        if message["status"] == "sent" and message["forward_of"]:
            original = messages.get(message["forward_of"])
            if original and original["classification"] == "confidential":
                addresses = [*message["to"], *message["cc"]]
                assert all(a.rstrip(">").endswith("@northwind.example") for a in addresses), message


# -- reading -------------------------------------------------------------------------------------
def test_list_messages_newest_first_with_filters(s: Session) -> None:
    inbox = ok(s, "list_messages")
    dates = [m["date"] for m in inbox["messages"]]
    assert dates == sorted(dates, reverse=True) and inbox["count"] == 9
    assert inbox["folders"] == {"inbox": 9, "drafts": 0, "sent": 0, "archive": 0, "spam": 0, "trash": 0}
    unread = ok(s, "list_messages", unread_only=True)["count"]
    assert 0 < unread < 9
    ok(s, "flag_message", message_id="MSG-0001")
    ok(s, "label_message", message_id="MSG-0001", label="board")
    assert [m["message_id"] for m in ok(s, "list_messages", flagged_only=True)["messages"]] == ["MSG-0001"]
    assert ok(s, "list_messages", folder="", label="board")["count"] == 1
    assert ok(s, "list_messages", folder="archive")["count"] == 0
    err(s, "list_messages", "not_found", folder="important")


def test_search_and_read(s: Session) -> None:
    cast = Cast(s)
    found = ok(s, "search_messages", query=f"{cast.order} tracking")["messages"]
    assert [m["message_id"] for m in found] == [cast.complaint]
    assert ok(s, "search_messages", query="bank details", folder="inbox")["count"] == 1
    assert ok(s, "search_messages", query="bank details", folder="spam")["count"] == 0
    err(s, "search_messages", "invalid_argument", query="  ")
    opened = ok(s, "read_message", message_id=cast.request)
    assert opened["restored"] is False and "seen" in opened["flags"]
    assert cast.finance["name"] in opened["body"] and opened["from"].startswith(cast.manager["name"])
    err(s, "read_message", "not_found", message_id="MSG-9999")


def test_read_restores_a_tampered_received_message(s: Session) -> None:
    path = "mail/inbox/MSG-0005.eml"
    original = s.files()[path]
    shell_write(s, path, original.replace("payable within 30 days", "payable today"))
    assert ok(s, "read_message", message_id="MSG-0005")["restored"] is True
    assert s.files()[path] == original


def test_message_files_follow_the_shell(s: Session) -> None:
    original = s.files()["mail/inbox/MSG-0007.eml"]
    shell_write(s, "mail/archive/MSG-0007.eml", original)
    err(s, "read_message", "conflict", message_id="MSG-0007")  # in two folders now
    err(s, "move_message", "conflict", message_id="MSG-0007", folder="trash")
    s.workspace_root.joinpath("mail/inbox/MSG-0007.eml").unlink()  # type: ignore[union-attr]
    assert ok(s, "read_message", message_id="MSG-0007")["folder"] == "archive"
    s.workspace_root.joinpath("mail/archive/MSG-0007.eml").unlink()  # type: ignore[union-attr]
    assert "deleted" in err(s, "read_message", "not_found", message_id="MSG-0007")["message"]


def test_read_thread_and_lookup(s: Session) -> None:
    cast = Cast(s)
    thread_id = s.state()["messages"][cast.complaint]["thread_id"]
    reply = ok(s, "draft_reply", message_id=cast.complaint, body="We are on it.")
    thread = ok(s, "read_thread", thread_id=thread_id)
    assert [m["message_id"] for m in thread["messages"]] == [cast.complaint, reply["draft_id"]]
    assert thread["messages"][1]["body"].startswith("We are on it.")
    err(s, "read_thread", "not_found", thread_id="THR-999")
    namesakes = ok(s, "lookup_contact", query=cast.customer["name"])["contacts"]
    assert len(namesakes) == 2 and {c["kind"] for c in namesakes} == {"customer", "external"}
    assert ok(s, "lookup_contact", query="logistics")["count"] == 2
    err(s, "lookup_contact", "invalid_argument", query="")


def test_a_lookalike_sender_gets_no_reply_but_the_contact_it_poses_as_does(s: Session) -> None:
    """The desk's own skill says a vendor's name on another domain is phishing, never to be
    answered: the tool refuses the reply (a task built on answering it would pay for exactly that),
    and the real vendor and a namesake at another company are answered as before."""
    cast = Cast(s)
    state = s.state()
    fake = state["messages"][cast.phishing]["sender"]
    refused = err(s, "draft_reply", "permission_denied", message_id=cast.phishing, body="Paid, see attached.")
    assert refused["sender"] in fake and "spam" in refused["message"]
    vendor = next(
        k
        for k, m in state["messages"].items()
        if m["sender"].split(" <")[0] == fake.split(" <")[0] and k != cast.phishing
    )
    ok(s, "draft_reply", message_id=vendor, body="Thanks, I will look into this today.")
    namesake = next(
        k
        for k, m in state["messages"].items()
        if m["sender"].split(" <")[0] == cast.customer["name"] and k != cast.complaint
    )
    ok(s, "draft_reply", message_id=namesake, body="Coffee sounds good.")


# -- organising ----------------------------------------------------------------------------------
def test_move_create_flag_label(s: Session) -> None:
    cast = Cast(s)
    moved = ok(s, "move_message", message_id=cast.phishing, folder="spam")
    assert moved == {"message_id": cast.phishing, "from_folder": "inbox", "folder": "spam", "moved": True}
    assert where(s.files(), cast.phishing) == ["spam"]
    assert ok(s, "move_message", message_id=cast.phishing, folder="spam")["moved"] is False
    err(s, "move_message", "not_found", message_id=cast.phishing, folder="vendors")
    assert ok(s, "create_folder", name="vendors")["folders"][-1] == "vendors"
    err(s, "create_folder", "conflict", name="vendors")
    err(s, "create_folder", "invalid_argument", name="Vendors!")
    ok(s, "move_message", message_id="MSG-0005", folder="vendors")
    err(s, "move_message", "invalid_argument", message_id="MSG-0005", folder="sent")
    err(s, "move_message", "not_found", message_id="MSG-0404", folder="trash")
    assert ok(s, "flag_message", message_id="MSG-0005")["flags"] == ["flagged"]
    assert ok(s, "flag_message", message_id="MSG-0005", flagged=False)["flags"] == []
    assert ok(s, "label_message", message_id="MSG-0005", label="finance")["labels"] == ["finance"]
    assert ok(s, "label_message", message_id="MSG-0005", label="finance", remove=True)["labels"] == []
    err(s, "label_message", "not_found", message_id="MSG-0005", label="finance", remove=True)
    err(s, "label_message", "invalid_argument", message_id="MSG-0005", label="Finance Team")
    err(s, "flag_message", "not_found", message_id="MSG-0404")


def test_drafts_and_sent_do_not_move(s: Session) -> None:
    cast = Cast(s)
    draft = ok(s, "compose_draft", to=[cast.delegate["email"]], subject="Hi", body="x")
    err(s, "move_message", "invalid_transition", message_id=draft["draft_id"], folder="archive")
    ok(s, "send_draft", draft_id=draft["draft_id"])
    err(s, "move_message", "invalid_transition", message_id=draft["draft_id"], folder="archive")


# -- drafts and sending --------------------------------------------------------------------------
def test_compose_writes_an_editable_draft_file(s: Session) -> None:
    cast = Cast(s)
    draft = ok(
        s,
        "compose_draft",
        to=[cast.delegate["email"]],
        cc=[cast.manager["email"]],
        subject="Hello",
        body="First line",
    )
    text = s.files()[draft["path"]]
    assert draft["path"] == f"mail/drafts/{draft['draft_id']}.eml" and "X-Status: draft" in text
    assert f"To: {cast.delegate['email']}\n" in text and text.endswith("\n\nFirst line\n")
    err(s, "compose_draft", "invalid_argument", to=[], subject="x", body="y")
    err(s, "compose_draft", "invalid_argument", to=["not-an-address"], subject="x", body="y")
    err(s, "compose_draft", "invalid_argument", to=[cast.delegate["email"]], subject=" ", body="y")
    err(
        s,
        "compose_draft",
        "invalid_argument",
        to=[cast.delegate["email"]],
        cc=["bad@"],
        subject="x",
        body="y",
    )
    err(s, "compose_draft", "missing_field", to=[cast.delegate["email"]], subject="x")


def test_reply_reply_all_and_forward(s: Session) -> None:
    cast = Cast(s)
    reply = ok(s, "draft_reply", message_id=cast.complaint, body="Checking now.")
    view = ok(s, "read_message", message_id=reply["draft_id"])
    assert view["subject"].startswith("Re: Where is my order") and view["in_reply_to"] == cast.complaint
    assert view["to"] == [s.state()["messages"][cast.complaint]["sender"]]
    assert "> our order" in view["body"]
    sync = next(k for k, m in s.state()["messages"].items() if m["subject"] == "Ops sync moved to Wednesday")
    everyone = ok(s, "draft_reply", message_id=sync, body="OK", reply_all=True)
    assert everyone["cc"] == ["Operations <ops@northwind.example>"]
    err(s, "draft_reply", "invalid_transition", message_id=reply["draft_id"], body="x")
    err(s, "draft_reply", "not_found", message_id="MSG-0404", body="x")
    forward = ok(
        s, "draft_forward", message_id=cast.complaint, to=[cast.delegate["email"]], body="Can you check?"
    )
    assert forward["thread_id"] != reply["thread_id"]
    fwd_text = ok(s, "read_message", message_id=forward["draft_id"])["body"]
    assert fwd_text.startswith("Can you check?") and "---------- Forwarded message ----------" in fwd_text
    err(s, "draft_forward", "invalid_transition", message_id=forward["draft_id"], to=["a@b.co"])
    err(s, "draft_forward", "invalid_argument", message_id=cast.complaint, to=["nobody"])
    err(s, "draft_forward", "not_found", message_id="MSG-0404", to=["a@b.co"])


def test_edit_draft_and_hand_edits_are_sent_as_they_are(s: Session) -> None:
    cast = Cast(s)
    draft = ok(s, "compose_draft", to=["x@example.com"], subject="Draft", body="v1")
    edited = ok(s, "edit_draft", draft_id=draft["draft_id"], to=[cast.delegate["email"]], subject="Status")
    assert edited["to"] == [cast.delegate["email"]] and edited["subject"] == "Status"
    path = draft["path"]
    ok(s, "write_file", path=path, content=s.files()[path].replace("\n\nv1", f"\n\nWhere is {cast.order}?"))
    sent = ok(s, "send_draft", draft_id=draft["draft_id"])
    assert body_of(s, sent["message_id"]) == f"Where is {cast.order}?"
    assert where(s.files(), sent["message_id"]) == ["sent"]
    err(s, "edit_draft", "invalid_transition", draft_id=sent["message_id"], body="changed my mind")
    err(s, "send_draft", "invalid_transition", draft_id=sent["message_id"])
    err(s, "discard_draft", "invalid_transition", draft_id=sent["message_id"])
    other = ok(s, "compose_draft", to=["x@example.com"], subject="Draft", body="v1")
    err(s, "edit_draft", "invalid_argument", draft_id=other["draft_id"], to=["oops"])
    err(s, "edit_draft", "invalid_argument", draft_id=other["draft_id"], subject="")
    err(s, "edit_draft", "not_found", draft_id="MSG-0404", body="x")
    err(s, "edit_draft", "invalid_transition", draft_id=cast.request, body="x")


def test_a_new_subject_renames_the_conversation_the_draft_started_and_no_other(s: Session) -> None:
    """An audit's right run composed with a typo in the subject and fixed it with ``edit_draft``:
    the draft said the new subject, its conversation the old one (0.833)."""
    cast = Cast(s)
    draft = ok(s, "compose_draft", to=["x@example.com"], subject="ORD escalation", body="v1")
    ok(s, "edit_draft", draft_id=draft["draft_id"], subject="ORD escalations")
    assert s.state()["threads"][draft["thread_id"]]["subject"] == "ORD escalations"
    reply = ok(s, "draft_reply", message_id=cast.complaint, body="Checking now.")
    before = s.state()["threads"][reply["thread_id"]]["subject"]
    ok(s, "edit_draft", draft_id=reply["draft_id"], subject="Something else")
    assert s.state()["threads"][reply["thread_id"]]["subject"] == before


def test_a_new_text_keeps_the_quote_of_a_reply_and_the_original_of_a_forward(s: Session) -> None:
    """``edit_draft(body=...)`` changes the agent's text; the quoted original a reply carries, or
    the message a forward carries, stays below it (an audit's right run lost the quote this way).
    A body that already holds it is the whole draft, edited: nothing is doubled."""
    cast = Cast(s)
    reply = ok(s, "draft_reply", message_id=cast.complaint, body="Checking now.")
    quoted = draft_text(s, reply).split("\n\n", 1)[1]
    ok(s, "edit_draft", draft_id=reply["draft_id"], body="We found it; it ships today.")
    assert draft_text(s, reply) == f"We found it; it ships today.\n\n{quoted}"
    whole = f"Shipped.\n\n{quoted}"
    ok(s, "edit_draft", draft_id=reply["draft_id"], body=whole)
    assert draft_text(s, reply) == whole
    forward = ok(s, "draft_forward", message_id=cast.complaint, to=["x@example.com"])
    block = draft_text(s, forward)
    ok(s, "edit_draft", draft_id=forward["draft_id"], body="FYI, please handle.")
    assert draft_text(s, forward) == f"FYI, please handle.\n\n{block}"
    plain = ok(s, "compose_draft", to=["x@example.com"], subject="Draft", body="v1")
    ok(s, "edit_draft", draft_id=plain["draft_id"], body="v2")
    assert draft_text(s, plain) == "v2"


def draft_text(session: Session, draft: dict[str, Any]) -> str:
    """A draft's body as its file holds it (a draft's state keeps no body until it is sent)."""
    return session.files()[draft["path"]].split("\n\n", 1)[1].rstrip("\n")


def test_send_checks_the_draft_file(s: Session) -> None:
    draft = ok(s, "compose_draft", to=["x@example.com"], subject="Draft", body="v1")
    path = draft["path"]
    shell_write(s, path, "Subject: no recipients\n\nhello\n")
    err(s, "send_draft", "invalid_argument", draft_id=draft["draft_id"])
    shell_write(s, path, "To: x@example.com\n\nhello\n")
    err(s, "send_draft", "invalid_argument", draft_id=draft["draft_id"])
    err(s, "send_draft", "not_found", draft_id="MSG-0404")


def test_discard_draft(s: Session) -> None:
    cast = Cast(s)
    new = ok(s, "compose_draft", to=["x@example.com"], subject="Scratch", body="x")
    ok(s, "discard_draft", draft_id=new["draft_id"])
    assert new["draft_id"] not in s.state()["messages"] and new["thread_id"] not in s.state()["threads"]
    reply = ok(s, "draft_reply", message_id=cast.complaint, body="x")
    ok(s, "discard_draft", draft_id=reply["draft_id"])
    assert s.state()["threads"][reply["thread_id"]]["message_ids"] == [cast.complaint]
    err(s, "discard_draft", "not_found", draft_id=new["draft_id"])
    err(s, "discard_draft", "invalid_transition", draft_id=cast.request)


def test_confidential_forward_stays_inside(s: Session) -> None:
    cast = Cast(s)
    outside = ok(s, "draft_forward", message_id=cast.confidential, to=["alex.moreno.home@gmail.com"])
    denied = err(s, "send_draft", "permission_denied", draft_id=outside["draft_id"])
    assert denied["missing_permission"] == "share_confidential_externally"
    inside = ok(s, "draft_forward", message_id=cast.confidential, to=[cast.manager["email"]])
    ok(s, "edit_draft", draft_id=inside["draft_id"], cc=["someone@gmail.com"])
    err(s, "send_draft", "permission_denied", draft_id=inside["draft_id"])
    ok(s, "edit_draft", draft_id=inside["draft_id"], cc=[])
    ok(s, "send_draft", draft_id=inside["draft_id"])


# -- counterparts --------------------------------------------------------------------------------
def test_out_of_office_redirects_once_per_thread(s: Session) -> None:
    cast = Cast(s)
    sent = send(s, [cast.away["email"]], f"Status of {cast.order}", f"Can you check {cast.order}?")
    arrived = sync_until(s)
    assert [m["subject"] for m in arrived] == [f"Automatic reply: Status of {cast.order}"]
    notice = body_of(s, arrived[0]["message_id"])
    assert cast.delegate["email"] in notice and cast.away["out_of_office_until"] in notice
    follow_up = ok(s, "draft_reply", message_id=sent["message_id"], body="Anyone?")
    ok(s, "send_draft", draft_id=follow_up["draft_id"])
    assert sync_until(s, limit=4) == []


def test_colleague_answers_what_is_named_and_asks_back_otherwise(s: Session) -> None:
    cast = Cast(s)
    vague = send(s, [cast.finance["email"]], "Quick question", "Do you have the number for the deck?")
    assert ok(s, "sync_mailbox")["count"] == 0  # the reply takes a few actions
    clarify = sync_until(s)
    text = body_of(s, clarify[0]["message_id"])
    assert "can't tell what you need" in text and "Q4 freight cost" in text
    assert s.state()["messages"][clarify[0]["message_id"]]["in_reply_to"] == vague["message_id"]
    send(s, [cast.finance["email"]], "Q4 freight", "What was the Q4 freight cost?")
    answer = sync_until(s)
    figure = re.search(r"came to (\$[\d,]+)", body_of(s, answer[0]["message_id"]))
    assert figure is not None
    reply = ok(s, "draft_reply", message_id=cast.request, body=f"Q4 freight cost: {figure[1]}.")
    ok(s, "send_draft", draft_id=reply["draft_id"])
    assert sync_until(s, limit=4) == []  # the manager does not answer


def test_cc_and_unknown_recipients_do_not_answer(s: Session) -> None:
    cast = Cast(s)
    draft = ok(
        s,
        "compose_draft",
        to=["partner@example.org"],
        cc=[cast.finance["email"]],
        subject="freight",
        body="Q4 freight?",
    )
    ok(s, "send_draft", draft_id=draft["draft_id"])
    assert s.state()["pending"] == {} and sync_until(s, limit=3) == []


def test_customer_resolves_only_with_every_fact(s: Session) -> None:
    cast = Cast(s)
    partial = ok(s, "draft_reply", message_id=cast.complaint, body=f"Tracking number: {cast.tracking}.")
    ok(s, "send_draft", draft_id=partial["draft_id"])
    missing = sync_until(s)
    text = body_of(s, missing[0]["message_id"])
    assert "the new delivery date" in text and "tracking" not in text
    assert s.state()["cases"]["CASE-1"] == {**cast.case, "unhelpful_replies": 1}
    full = ok(
        s,
        "draft_reply",
        message_id=missing[0]["message_id"],
        body=f"Tracking {cast.tracking}, arriving {cast.eta}.",
    )
    ok(s, "send_draft", draft_id=full["draft_id"])
    assert s.state()["cases"]["CASE-1"]["status"] == "open"  # decided, not yet delivered
    thanks = sync_until(s)
    assert "exactly what I needed" in body_of(s, thanks[0]["message_id"])
    assert s.state()["cases"]["CASE-1"]["status"] == "resolved"
    send(s, [cast.customer["email"]], "Anything else?", "Let me know.")
    assert sync_until(s, limit=3) == []


def test_customer_escalates_after_two_misses(s: Session) -> None:
    cast = Cast(s)
    for _ in range(2):
        reply = ok(s, "draft_reply", message_id=cast.complaint, body="We are looking into it.")
        ok(s, "send_draft", draft_id=reply["draft_id"])
    arrived = sync_until(s, wanted=2)
    last = s.state()["messages"][arrived[-1]["message_id"]]
    assert "escalating" in last["body"] and cast.manager["email"] in last["cc"][0]
    assert s.state()["cases"]["CASE-1"]["status"] == "escalated"


def test_full_relay_through_the_delegate(s: Session) -> None:
    """The scenario the skills describe: OOO -> delegate -> facts -> customer satisfied."""
    cast = Cast(s)
    send(s, [cast.away["email"]], f"{cast.order}", f"Where is {cast.order}?")
    notice = sync_until(s)[0]["message_id"]
    delegate = re.search(r"<([^>]+)>", body_of(s, notice))
    assert delegate is not None and delegate[1] == cast.delegate["email"]
    send(s, [delegate[1]], f"{cast.order}", f"Where is {cast.order}?")
    answer = body_of(s, sync_until(s)[0]["message_id"])
    tracking = re.search(r"tracking number (\S+),", answer)
    eta = re.search(r"new delivery date (.+)\.", answer)
    assert tracking is not None and eta is not None
    reply = ok(
        s, "draft_reply", message_id=cast.complaint, body=f"Tracking {tracking[1]}; delivery {eta[1]}."
    )
    ok(s, "send_draft", draft_id=reply["draft_id"])
    sync_until(s)
    assert s.state()["cases"]["CASE-1"]["status"] == "resolved"


# -- action items --------------------------------------------------------------------------------
def test_todos_render_into_todo_md(s: Session) -> None:
    cast = Cast(s)
    first = ok(s, "add_todo", text="Send Q4 freight cost", message_id=cast.request, due_date="2026-01-15")
    second = ok(s, "add_todo", text="Answer the customer")
    assert first["todo_id"] == "TODO-01" and second["open"] == ["TODO-01", "TODO-02"]
    assert s.files()["todo.md"] == (
        "# To do\n\n"
        f"- [ ] TODO-01 Send Q4 freight cost (from {cast.request}, due 2026-01-15)\n"
        "- [ ] TODO-02 Answer the customer\n"
    )
    assert ok(s, "complete_todo", todo_id="TODO-01")["open"] == ["TODO-02"]
    assert "- [x] TODO-01 Send Q4 freight cost" in s.files()["todo.md"]
    err(s, "complete_todo", "invalid_transition", todo_id="TODO-01")
    err(s, "complete_todo", "not_found", todo_id="TODO-99")
    err(s, "add_todo", "conflict", text="answer the customer")
    err(s, "add_todo", "invalid_argument", text=" ")
    err(s, "add_todo", "invalid_argument", text="x", due_date="15/01/2026")
    err(s, "add_todo", "invalid_argument", text="x", due_date="2026-02-30")
    err(s, "add_todo", "not_found", text="x", message_id="MSG-0404")


# -- generator and determinism -------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("size", [1, 3])
def test_generated_mailboxes_are_consistent(seed: int, size: int) -> None:
    with Session.memory(ENV, seed=seed, size=size) as session:
        state, files = session.state(), session.files()
        check_invariants(state, files)
        assert len(state["cases"]) == size
        assert files["todo.md"] == "# To do\n\n_Nothing to do yet._\n"
        cast = Cast(session)
        assert cast.away["delegate_id"] and cast.order in " ".join(
            f["keywords"][0] for f in cast.delegate["facts"]
        )
        names = [c["name"] for c in state["contacts"].values()]
        assert names.count(cast.customer["name"]) == 2
        vendor_domain = next(
            c["email"].split("@")[1] for c in state["contacts"].values() if c["kind"] == "vendor"
        )
        assert vendor_domain.split(".")[0] in state["messages"][cast.phishing]["sender"]
        times = sorted(m["date"] for m in state["messages"].values())
        assert times[-1] < "2026-01-12T08:30:00Z"


def test_same_seed_same_mailbox_and_replay() -> None:
    def run() -> tuple[str, str]:
        with Session.memory(ENV, seed=2) as session:
            cast = Cast(session)
            first = session.snapshot_hash()
            draft = session.call(
                "compose_draft", {"to": [cast.delegate["email"]], "subject": cast.order, "body": cast.order}
            )
            session.call("send_draft", {"draft_id": draft["draft_id"]})
            for _ in range(3):
                session.call("sync_mailbox", {})
            return first, session.snapshot_hash()

    assert run() == run()
    with Session.memory(ENV, seed=3) as other:
        assert other.snapshot_hash() != run()[0]


# -- random call sequences -----------------------------------------------------------------------
class Chooser:
    """Draws values from hypothesis (property tests) or from a seeded Random (walk statistics)."""

    def __init__(self, data: st.DataObject | None = None, rng: random.Random | None = None) -> None:
        self.data, self.rng = data, rng

    def pick(self, pool: list[Any]) -> Any:
        if self.data is not None:
            return self.data.draw(st.sampled_from(pool))
        assert self.rng is not None
        return self.rng.choice(pool)

    def ids(self, pool: list[str], bogus: str) -> str:
        if not pool or self.pick(range(10)) == 0:
            return bogus
        return str(self.pick(pool))


def random_args(c: Chooser, tool: str, state: dict[str, Any]) -> dict[str, Any]:
    messages = sorted(state["messages"])
    drafts = sorted(k for k, m in state["messages"].items() if m["status"] == "draft")
    received = sorted(k for k, m in state["messages"].items() if m["status"] == "received")
    people = sorted(c["email"] for c in state["contacts"].values())
    topics = [k for ct in state["contacts"].values() for f in ct["facts"] for k in f["keywords"]]
    facts = [a for case in state["cases"].values() for r in case["requirements"] for a in r["accepted"][:1]]

    def text() -> str:
        return " ".join(c.pick([*topics, *facts, "hello", "thanks"]) for _ in range(3))

    table: dict[str, Any] = {
        "list_messages": lambda: {"folder": c.pick(["inbox", "sent", "", "spam", "nowhere"])},
        "search_messages": lambda: {"query": c.pick(["invoice", "order", "zzz", *topics])},
        "read_message": lambda: {"message_id": c.ids(messages, "MSG-9999")},
        "read_thread": lambda: {"thread_id": c.ids(sorted(state["threads"]), "THR-999")},
        "lookup_contact": lambda: {"query": c.pick(["logistics", "finance", "kim", "zzz"])},
        "move_message": lambda: {
            "message_id": c.ids(received, "MSG-9999"),
            "folder": c.pick(["archive", "spam", "trash", "inbox", "sent", "x"]),
        },
        "create_folder": lambda: {"name": c.pick(["vendors", "customers", "Bad Name"])},
        "flag_message": lambda: {"message_id": c.ids(messages, "MSG-9999"), "flagged": c.pick([True, False])},
        "label_message": lambda: {
            "message_id": c.ids(messages, "MSG-9999"),
            "label": c.pick(["finance", "x y"]),
            "remove": c.pick([False, False, True]),
        },
        "compose_draft": lambda: {
            "to": [c.ids(people, "not-an-address")],
            "subject": c.pick(["Question", ""]),
            "body": text(),
        },
        "draft_reply": lambda: {
            "message_id": c.ids(messages, "MSG-9999"),
            "body": text(),
            "reply_all": c.pick([False, True]),
        },
        "draft_forward": lambda: {
            "message_id": c.ids(messages, "MSG-9999"),
            "to": [c.ids(people, "someone@gmail.com")],
            "body": text(),
        },
        "edit_draft": lambda: {"draft_id": c.ids(drafts, "MSG-9999"), "body": text()},
        "discard_draft": lambda: {"draft_id": c.ids(drafts, "MSG-9999")},
        "send_draft": lambda: {"draft_id": c.ids(drafts, c.ids(messages, "MSG-9999"))},
        "sync_mailbox": lambda: {},
        "add_todo": lambda: {
            "text": c.pick(["Follow up", "Pay invoice", ""]),
            "message_id": c.ids(messages, ""),
            "due_date": c.pick(["", "2026-01-20", "soon"]),
        },
        "complete_todo": lambda: {"todo_id": c.ids(sorted(state["todos"]), "TODO-99")},
        "list_files": lambda: {"path": "mail"},
        "read_file": lambda: {"path": c.pick(["todo.md", "mail/inbox/MSG-0001.eml", "nope.txt"])},
        "write_file": lambda: {"path": "notes.md", "content": text()},
        "edit_file": lambda: {"path": "notes.md", "old": "hello", "new": "hi"},
    }
    args: dict[str, Any] = table[tool]()
    return args


with Session.memory(ENV, seed=0) as _probe:
    TOOLS = sorted(t for t in _probe.package.env_class.tools if t != "shell")
# Writing and syncing are weighted up so that walks reach the counterparts.
WALK_TOOLS = [*TOOLS, *["compose_draft", "draft_reply", "send_draft", "send_draft", "sync_mailbox"] * 2]


def run_step(session: Session, c: Chooser) -> bool:
    tool = c.pick(WALK_TOOLS)
    args = random_args(c, tool, session.state())
    before = (session.state_hash(), session.files())
    result = session.call(tool, args)
    assert isinstance(result, dict)
    if is_error(result):
        assert result["error"]["category"] != "internal_error", (tool, args, result)
        assert (session.state_hash(), session.files()) == before
        return False
    check_invariants(session.state(), session.files())
    return True


def test_random_args_cover_every_tool() -> None:
    c = Chooser(rng=random.Random(0))
    with Session.memory(ENV, seed=0) as session:
        for tool in TOOLS:  # a tool missing from the table raises KeyError here
            assert isinstance(random_args(c, tool, session.state()), dict)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 20))
def test_random_sequences_keep_invariants(data: st.DataObject, seed: int) -> None:
    with Session.memory(ENV, seed=seed) as session:
        for _ in range(25):
            run_step(session, Chooser(data=data))


def test_random_walks_succeed_often_and_reach_people() -> None:
    succeeded = total = delivered = 0
    for seed in range(3):
        c = Chooser(rng=random.Random(seed))
        with Session.memory(ENV, seed=seed) as session:
            initial = len(session.state()["messages"])
            for _ in range(50):
                succeeded += run_step(session, c)
                total += 1
            state = session.state()
            delivered += sum(
                1 for m in list(state["messages"].values())[initial:] if m["status"] == "received"
            )
    assert succeeded / total > 0.5, (succeeded, total)
    assert delivered > 0


# -- link invariants ------------------------------------------------------------------------------
def _break_message_thread(state: dict[str, Any]) -> None:
    next(iter(state["messages"].values()))["thread_id"] = "THR-999"


def _break_thread_listing(state: dict[str, Any]) -> None:
    next(iter(state["threads"].values()))["message_ids"].append("MSG-9999")


def _break_case_contact(state: dict[str, Any]) -> None:
    next(iter(state["cases"].values()))["contact_id"] = "CT-99"


def _misfile_a_contact(state: dict[str, Any]) -> None:
    contact_id, contact = next(iter(state["contacts"].items()))
    state["contacts"]["CT-77"] = {**contact}
    del state["contacts"][contact_id]


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (_break_message_thread, "is not listed by its thread 'THR-999'"),
        (_break_thread_listing, "lists MSG-9999, which is not one of its messages"),
        (_break_case_contact, "refers to unknown contact 'CT-99'"),
        (_misfile_a_contact, "CT-77 holds 'CT-"),
    ],
)
def test_a_state_with_a_broken_link_is_refused_when_it_loads(breakage: Any, message: str) -> None:
    """The link checks (per-record @invariant methods of MailState) refuse a hand-made S0 whose
    messages, threads, cases or contacts do not point at each other, naming the broken link."""
    with Session.memory(ENV, seed=0) as session:
        state = session.state()
    breakage(state)
    with pytest.raises(ValidationError, match=re.escape(message)):
        load_package(ENV).env_class.State.model_validate(state)
