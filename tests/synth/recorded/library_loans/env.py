"""Library loans: the State and the circulation tools; rules.py holds the policy, generate.py S0."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import model_validator

from envcraft import Environment, Initial, StateModel, tool
from envcraft.core import Repository, misfiled
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoDate

from . import rules
from .generate import initial_state


class Book(StateModel):
    book_id: str
    title: str
    author: str
    copies: int


class Member(StateModel):
    member_id: str
    name: str
    status: Literal["active", "suspended"] = "active"
    fines_cents: int = 0


class Loan(StateModel):
    loan_id: str
    book_id: str
    member_id: str
    borrowed_on: IsoDate
    due_on: IsoDate
    renewals: int = 0
    status: Literal["active", "returned"] = "active"
    returned_on: IsoDate | None = None


class LibraryState(StateModel):
    books: dict[str, Book] = {}
    members: dict[str, Member] = {}
    loans: dict[str, Loan] = {}
    next_loan: int = 1

    @model_validator(mode="after")
    def _consistent(self) -> LibraryState:
        problems = misfiled(self.books, "book_id") + misfiled(self.members, "member_id")
        problems += misfiled(self.loans, "loan_id")
        for loan in self.loans.values():
            if loan.book_id not in self.books or loan.member_id not in self.members:
                problems.append(f"loan {loan.loan_id} names an unknown book or member")
        for book in self.books.values():
            active = sum(
                1 for loan in self.loans.values() if loan.book_id == book.book_id and loan.status == "active"
            )
            if active > book.copies:
                problems.append(f"{book.book_id} has {active} active loans for {book.copies} copies")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class LibraryLoans(Environment):
    """The circulation desk of a branch library.

    Members (M-1, ...) borrow copies of books (B-101, ...) for 14 days, renew a loan up to twice
    while it is not overdue, and pay 25 cents a day for late returns. At most 3 active loans per
    member; suspended members and members owing over 5 euros cannot borrow. Dates are UTC.
    """

    State = LibraryState
    state: LibraryState

    @tool(read_only=True, produces=["book_id"])
    def search_books(self, query: str = "") -> dict[str, Any]:
        """Find books by words of the title or author, with the copies free now.

        Args:
            query: Words that must all appear in the title or author; every book when empty.

        Returns:
            The matching books (book_id, title, author, copies, free) and their number.
        """
        words = query.lower().split()
        found = []
        for book in sorted(self.state.books.values(), key=lambda b: b.book_id):
            text = f"{book.title} {book.author}".lower()
            if all(word in text for word in words):
                found.append({**book.model_dump(), "free": self._free(book.book_id)})
        return {"books": found, "count": len(found)}

    @tool(read_only=True, consumes=["member_id"], produces=["loan_id"])
    def get_member(self, member_id: str) -> dict[str, Any]:
        """Show a member with their active loans and fines.

        Args:
            member_id: The member, e.g. M-1.

        Returns:
            The member, their active loans (loan_id, book_id, due_on, renewals) and fines in cents.
        """
        member = self._member(member_id)
        loans = [loan.model_dump() for loan in self._active(member_id)]
        return {**member.model_dump(), "loans": loans}

    @tool(consumes=["member_id", "book_id"], produces=["loan_id"])
    def borrow_book(self, member_id: str, book_id: str) -> dict[str, Any]:
        """Lend a free copy of a book to a member for 14 days.

        Args:
            member_id: The borrowing member, e.g. M-1.
            book_id: The book, e.g. B-101.

        Returns:
            The new loan with its loan_id and due date.
        """
        member = self._member(member_id)
        book = self._book(book_id)
        problem = rules.borrow_problem(
            member.status, len(self._active(member_id)), member.fines_cents, self._free(book.book_id)
        )
        if problem:
            category = "permission_denied" if member.status != "active" else "conflict"
            self.fail(category, f"{member_id} cannot borrow {book_id}: {problem}", member_id=member_id)
        today = self.now().date()
        loan_id = f"L-{self.state.next_loan}"
        self.state.next_loan += 1
        loan = Loan(
            loan_id=loan_id,
            book_id=book_id,
            member_id=member_id,
            borrowed_on=today.isoformat(),
            due_on=rules.due_date(today).isoformat(),
        )
        self.state.loans[loan_id] = loan
        return loan.model_dump()

    @tool(consumes=["loan_id"])
    def renew_loan(self, loan_id: str) -> dict[str, Any]:
        """Extend an active loan by 7 days (twice at most, never once it is overdue).

        Args:
            loan_id: The loan, e.g. L-2.

        Returns:
            The loan with its new due date and renewal count.
        """
        loan = self._loan(loan_id)
        if loan.status != "active":
            self.fail("invalid_transition", f"{loan_id} is {loan.status}", current_state=loan.status)
        if loan.renewals >= rules.MAX_RENEWALS:
            self.fail(
                "conflict", f"{loan_id} was already renewed {loan.renewals} times", renewals=loan.renewals
            )
        if date.fromisoformat(loan.due_on) < self.now().date():
            self.fail(
                "conflict", f"{loan_id} is overdue since {loan.due_on}; return it instead", due_on=loan.due_on
            )
        loan.due_on = rules.renewed_due(date.fromisoformat(loan.due_on)).isoformat()
        loan.renewals += 1
        return loan.model_dump()

    @tool(consumes=["loan_id"])
    def return_book(self, loan_id: str) -> dict[str, Any]:
        """Take a book back; a late return adds its fine to the member's account.

        Args:
            loan_id: The loan, e.g. L-2.

        Returns:
            The closed loan and the fine charged in cents.
        """
        loan = self._loan(loan_id)
        if loan.status != "active":
            self.fail("invalid_transition", f"{loan_id} is already {loan.status}", current_state=loan.status)
        today = self.now().date()
        fine = rules.late_fine_cents(date.fromisoformat(loan.due_on), today)
        loan.status = "returned"
        loan.returned_on = today.isoformat()
        self.state.members[loan.member_id].fines_cents += fine
        return {**loan.model_dump(), "fine_cents": fine}

    @tool(consumes=["member_id"])
    def pay_fines(self, member_id: str, amount_cents: int) -> dict[str, Any]:
        """Take a payment towards a member's fines.

        Args:
            member_id: The member, e.g. M-2.
            amount_cents: The amount paid in cents, at most what they owe.

        Returns:
            What was paid and what the member still owes.
        """
        member = self._member(member_id)
        if amount_cents <= 0:
            self.fail("invalid_argument", "amount_cents must be positive", field="amount_cents")
        if amount_cents > member.fines_cents:
            self.fail(
                "invalid_argument", f"{member_id} owes only {member.fines_cents} cents", field="amount_cents"
            )
        member.fines_cents -= amount_cents
        return {"member_id": member_id, "paid_cents": amount_cents, "fines_cents": member.fines_cents}

    # -- helpers ------------------------------------------------------------------------------
    def _member(self, member_id: str) -> Member:
        member = self.state.members.get(member_id)
        if member is None:
            self.fail("not_found", f"no member {member_id!r}", member_id=member_id)
        return member

    def _book(self, book_id: str) -> Book:
        book = self.state.books.get(book_id)
        if book is None:
            self.fail("not_found", f"no book {book_id!r}; search_books lists them", book_id=book_id)
        return book

    def _loan(self, loan_id: str) -> Loan:
        loan = self.state.loans.get(loan_id)
        if loan is None:
            self.fail("not_found", f"no loan {loan_id!r}; get_member lists a member's loans", loan_id=loan_id)
        return loan

    def _active(self, member_id: str) -> list[Loan]:
        return [
            loan
            for loan in sorted(self.state.loans.values(), key=lambda item: item.loan_id)
            if loan.member_id == member_id and loan.status == "active"
        ]

    def _free(self, book_id: str) -> int:
        out = sum(
            1 for loan in self.state.loans.values() if loan.book_id == book_id and loan.status == "active"
        )
        return self.state.books[book_id].copies - out

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """Books from data/catalog.json, 3 members per size step, loans already out."""
        repo = data if data is not None else Repository(None)
        catalog = repo.json("catalog.json")
        today = (cls.package.clock.base_time if cls.package else DEFAULT_BASE_TIME).date()
        state = initial_state(
            seed, size, {"books": list(catalog["books"]), "names": list(catalog["names"])}, today
        )
        return Initial(state=LibraryState.model_validate(state))
