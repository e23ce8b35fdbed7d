"""The seeded S0: the catalog's books, members, and some loans already out."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from .rules import MAX_LOANS, due_date


def initial_state(seed: int, size: int, catalog: dict[str, Any], today: date) -> dict[str, Any]:
    """``3 * size`` members (one suspended, one with fines) and loans borrowed up to 20 days ago."""
    rng = random.Random(seed)
    books = {
        b["book_id"]: {
            "book_id": b["book_id"],
            "title": b["title"],
            "author": b["author"],
            "copies": b["copies"],
        }
        for b in catalog["books"]
    }
    names = list(catalog["names"])
    rng.shuffle(names)
    members: dict[str, Any] = {}
    for number in range(1, 3 * max(1, size) + 1):
        member_id = f"M-{number}"
        status = "suspended" if number == 3 else "active"
        fines = rng.choice((0, 0, 150, 700)) if number != 1 else 0
        members[member_id] = {
            "member_id": member_id,
            "name": names[(number - 1) % len(names)],
            "status": status,
            "fines_cents": fines,
        }
    loans: dict[str, Any] = {}
    out: dict[str, int] = {}
    for member_id in sorted(members):
        for _ in range(rng.randint(0, MAX_LOANS - 1)):
            book_id = rng.choice(sorted(books))
            if out.get(book_id, 0) >= books[book_id]["copies"]:
                continue
            out[book_id] = out.get(book_id, 0) + 1
            borrowed = today - timedelta(days=rng.randint(1, 20))
            loan_id = f"L-{len(loans) + 1}"
            loans[loan_id] = {
                "loan_id": loan_id,
                "book_id": book_id,
                "member_id": member_id,
                "borrowed_on": borrowed.isoformat(),
                "due_on": due_date(borrowed).isoformat(),
                "renewals": 0,
                "status": "active",
                "returned_on": None,
            }
    return {"books": books, "members": members, "loans": loans, "next_loan": len(loans) + 1}
