"""Circulation rules: pure functions over plain values (the tools hold the state)."""

from __future__ import annotations

from datetime import date, timedelta

LOAN_DAYS = 14
RENEWAL_DAYS = 7
MAX_RENEWALS = 2
MAX_LOANS = 3
FINE_CENTS_PER_DAY = 25
MAX_FINE_CENTS = 1000
BLOCKING_FINES_CENTS = 500


def due_date(borrowed: date) -> date:
    """When a loan made on ``borrowed`` is due back."""
    return borrowed + timedelta(days=LOAN_DAYS)


def renewed_due(due: date) -> date:
    return due + timedelta(days=RENEWAL_DAYS)


def late_fine_cents(due: date, returned: date) -> int:
    """25 cents per day late, capped at 10 euros; nothing when on time."""
    days_late = (returned - due).days
    return min(MAX_FINE_CENTS, max(0, days_late) * FINE_CENTS_PER_DAY)


def borrow_problem(status: str, active_loans: int, fines_cents: int, free_copies: int) -> str:
    """Why a member may not borrow a book now, or ``""``."""
    if status != "active":
        return f"the member is {status}"
    if active_loans >= MAX_LOANS:
        return f"the member already holds {active_loans} loans (at most {MAX_LOANS})"
    if fines_cents > BLOCKING_FINES_CENTS:
        return f"the member owes {fines_cents} cents; over {BLOCKING_FINES_CENTS} blocks borrowing"
    if free_copies <= 0:
        return "no copy is free"
    return ""
