"""The seeded S0 generator behind :meth:`~.env.MailTriage.generate`.

Mail triage (mailbox in the workspace with simulated colleagues and customers). Runs once per
initial state (seed, size), never during a tool call; it builds the State models of ``state.py``
with the rules of ``rules.py``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from email.utils import formataddr

from envcraft import Initial, Repository

from .rules import TODO_FILE, mail_date, mail_path, new_thread, render_message, render_todos
from .state import Case, Contact, ContactKind, Fact, MailState, Message, Owner, Requirement


# -- generator ------------------------------------------------------------------------------------
def generate_mailbox(rng: random.Random, size: int, data: Repository, base: datetime) -> Initial:
    people = data.json("people.json")
    domain = data.json("policy.json")["internal_domain"]
    owner_info = people["owner"]
    state = MailState(
        owner=Owner(name=owner_info["name"], email=owner_info["email"], title=owner_info["title"])
    )

    def person(name: str, kind: ContactKind, org: str, role: str, email_domain: str = domain) -> Contact:
        contact_id = f"CT-{len(state.contacts) + 1:02d}"
        local = name.lower().replace(" ", ".")
        contact = Contact(
            contact_id=contact_id, name=name, email=f"{local}@{email_domain}", org=org, role=role, kind=kind
        )
        state.contacts[contact_id] = contact
        return contact

    manager = person(rng.choice(people["managers"]), "colleague", "Northwind", "Head of Operations")
    state.owner.manager_id = manager.contact_id
    finance = person(rng.choice(people["finance"]), "colleague", "Northwind", "Finance Controller")
    away_name, delegate_name = rng.sample(people["logistics"], 2)
    away = person(away_name, "colleague", "Northwind", "Logistics Coordinator")
    delegate = person(delegate_name, "colleague", "Northwind", "Logistics Coordinator")
    hr = person(rng.choice(people["hr"]), "colleague", "Northwind", "HR Business Partner")
    finance.reply_delay, delegate.reply_delay = 3, 2
    freight = rng.randrange(38, 61) * 1000 + rng.randrange(0, 999)
    budget = (freight // 5000) * 5000
    texts = data.json("mailbox.json")
    finance.facts = [
        Fact(
            topic=f["topic"],
            keywords=list(f["keywords"]),
            answer=f["answer"].format(freight=f"${freight:,}", budget=f"${budget:,}"),
        )
        for f in texts["finance_facts"]
    ]
    until = (base + timedelta(days=7)).date().isoformat()
    away.out_of_office_until, away.delegate_id = until, delegate.contact_id

    files: dict[str, str] = {}
    clock = _Clock(base - timedelta(days=4))

    def receive(
        sender: Contact | tuple[str, str],
        template: str,
        to: list[str] | None = None,
        classification: str = "",
        seen: bool = False,
        **values: str,
    ) -> Message:
        name, email = (sender.name, sender.email) if isinstance(sender, Contact) else sender
        subject = texts[template]["subject"].format(name=name, **values)
        body = texts[template]["body"].format(owner_first=state.owner.name.split()[0], name=name, **values)
        thread = new_thread(state, subject)
        message = Message(
            message_id=f"MSG-{state.next_message:04d}",
            thread_id=thread.thread_id,
            status="received",
            sender=formataddr((name, email)),
            to=to or [formataddr((state.owner.name, state.owner.email))],
            subject=subject,
            date=mail_date(clock.tick(rng)),
            classification=classification,
            body=body,
            flags=["seen"] if seen else [],
        )
        state.next_message += 1
        state.messages[message.message_id] = message
        thread.message_ids.append(message.message_id)
        files[mail_path("inbox", message.message_id)] = render_message(message, body)
        return message

    due = (base + timedelta(days=3)).date()
    receive(
        manager,
        "manager_request",
        finance_name=finance.name,
        due=f"{due.strftime('%A, %B')} {due.day}",
        manager_first=manager.name.split()[0],
    )
    receive(
        away, "escalation_contact", to=[formataddr(("Customer Operations", f"cs-team@{domain}"))], seen=True
    )
    customers = list(people["customers"])
    rng.shuffle(customers)
    for number, (name, org_domain, org) in enumerate(customers[:size], start=1):
        customer = person(name, "customer", org, "Purchasing", email_domain=org_domain)
        customer.reply_delay = 2
        order = f"ORD-{rng.randrange(4100, 9899)}"
        tracking = f"1Z{rng.randrange(16**6, 16**7):X}{rng.randrange(10**7, 10**8)}"
        eta = base + timedelta(days=rng.randint(3, 6))
        month, day = eta.strftime("%B"), eta.day
        answer = texts["order_fact"]["answer"].format(order=order, tracking=tracking, month=month, day=day)
        delegate.facts.append(Fact(topic=f"status of {order}", keywords=[order], answer=answer))
        state.cases[f"CASE-{number}"] = Case(
            case_id=f"CASE-{number}",
            contact_id=customer.contact_id,
            subject=f"Where is my order {order}?",
            requirements=[
                Requirement(label="the tracking number", accepted=[tracking]),
                Requirement(
                    label="the new delivery date",
                    accepted=[
                        f"{month} {day}",
                        f"{month[:3]} {day}",
                        f"{day} {month}",
                        eta.date().isoformat(),
                    ],
                ),
            ],
        )
        receive(customer, "customer_complaint", order=order, org=org)
    twin_domain, twin_org = rng.choice(people["namesake_orgs"])  # the first customer's namesake elsewhere
    twin = person(customers[0][0], "external", twin_org, "Consultant", email_domain=twin_domain)
    receive(twin, "namesake")
    vendor_name, vendor_domain = rng.choice(people["vendors"])
    vendor = person(
        f"{vendor_name} Billing", "vendor", vendor_name, "Accounts receivable", email_domain=vendor_domain
    )
    invoice = f"INV-{rng.randrange(4000, 4999)}"
    amount = f"${rng.randrange(2, 9) * 1000 + rng.randrange(0, 999):,}.00"
    receive(vendor, "invoice", invoice=invoice, amount=amount, vendor=vendor_name)
    fake = f"billing@{vendor_domain.split('.')[0]}-invoices.net"  # a lookalike domain
    receive((f"{vendor_name} Billing", fake), "phishing", invoice=invoice, vendor=vendor_name)
    for name, address in people["newsletters"][: 1 + size // 2]:
        receive((name, address), "newsletter", seen=True)
    receive(hr, "confidential", classification="confidential")
    receive(manager, "ops_sync", to=[formataddr(("Operations", f"ops@{domain}"))])
    files[TODO_FILE] = render_todos(state)
    return Initial(state=state, files=files)


class _Clock:
    """Increasing timestamps for the generated inbox (generation only, never in tools)."""

    def __init__(self, start: datetime) -> None:
        self.moment = start

    def tick(self, rng: random.Random) -> datetime:
        self.moment += timedelta(minutes=rng.randint(20, 180))
        return self.moment
