"""The seeded S0 generator behind :meth:`~.env.ClassBooking.generate`.

Fitness class booking (studios, coaches, members, waitlists). Runs once per initial state (seed,
size), never during a tool call; it builds the State models of ``state.py`` with the rules of
``rules.py``.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from envcraft import Repository, iso, parse_time

from .rules import WEEKDAYS, Rules, add_session
from .state import Booking, BookingState, ClassSession, Coach, Member, Series, Tier, WaitlistEntry

# -- the generator -----------------------------------------------------------------------------------
FIRST = ("Sam", "Alex", "Priya", "Jordan", "Mei", "Lena", "Omar", "Chris", "Zara", "Tomás", "Ines", "Kofi",
         "Hana", "Luca", "Maya", "Ravi", "Elif", "Noor", "Felix", "Dana")  # fmt: skip
LAST = ("Taylor", "Romero", "Kim", "Okafor", "Nguyen", "Fischer", "Haddad", "Silva", "Brooks", "Novak",
        "Patel", "Larsen", "Moreau", "Adeyemi", "Rossi", "Chen")  # fmt: skip
QUALIFICATIONS = ("yoga", "pilates", "cycling", "hiit", "boxing", "strength")
WINDOWS = ("06:00-13:00", "06:30-12:00", "11:00-16:00", "16:00-21:30", "15:00-22:00", "06:00-21:30")
SLOTS = ("07:00", "09:30", "12:15", "17:30", "18:45", "20:00")
TIERS: tuple[Tier, ...] = ("basic", "basic", "plus", "plus", "plus", "premium")


class Generator:
    """Builds S0 through the same :class:`Rules` the tools enforce, so S0 is always valid."""

    def __init__(self, rng: random.Random, data: Repository, base: datetime) -> None:
        self.rng, self.data, self.base = rng, data, base
        self.state = BookingState()

    def rules(self, now: datetime) -> Rules:
        return Rules(self.state, self.data, now)

    def build(self, size: int) -> BookingState:
        self._coaches(4 + 2 * size)
        self._timetable()
        self._series()
        self._members(20 * size)
        self._bookings()
        return self.state

    def _coaches(self, count: int) -> None:
        for i in range(count):
            coach_id = f"COA-{101 + i}"
            quals = {
                QUALIFICATIONS[i % len(QUALIFICATIONS)],
                *self.rng.sample(QUALIFICATIONS, self.rng.randint(0, 2)),
            }
            first = "Alex" if i in (0, 3) else self.rng.choice(FIRST)  # two coaches called Alex
            availability = {
                day: sorted(self.rng.sample(WINDOWS[:5], self.rng.randint(1, 2)))
                if self.rng.random() < 0.8
                else []
                for day in WEEKDAYS
            }
            self.state.coaches[coach_id] = Coach(
                coach_id=coach_id,
                name=f"{first} {self.rng.choice(LAST)}",
                home_studio_id=self.rng.choice(("STU-1", "STU-2")),
                qualifications=sorted(quals),
                availability=availability,
            )

    def _timetable(self) -> None:
        rules = self.rules(self.base - timedelta(days=30))
        for offset in range(8):
            day = self.base.date() + timedelta(days=offset)
            for room_id in sorted(rules.rooms):
                slots = sorted(self.rng.sample(SLOTS, 2 if day.weekday() >= 5 else 3))
                for slot in slots:
                    start = datetime.fromisoformat(f"{day.isoformat()}T{slot}:00+00:00")
                    self._place(rules, room_id, start, None)

    def _place(
        self, rules: Rules, room_id: str, start: datetime, series_id: str | None
    ) -> ClassSession | None:
        features = rules.rooms[room_id][1]["features"]
        kinds = sorted(k for k, v in rules.types.items() if v["room_feature"] in features)
        self.rng.shuffle(kinds)
        for class_type in kinds:
            coaches = sorted(self.state.coaches.values(), key=lambda c: c.coach_id)
            self.rng.shuffle(coaches)
            for coach in coaches:
                fits = not rules.fit_problems(class_type, room_id, coach)
                if fits and not rules.slot_problems(class_type, room_id, coach, start):
                    return add_session(
                        self.state, rules, class_type, room_id, coach.coach_id, start, series_id
                    )
        return None

    def _series(self) -> None:
        rules = self.rules(self.base - timedelta(days=30))
        for _ in range(20):
            room_id = self.rng.choice(sorted(rules.rooms))
            first = datetime.fromisoformat(
                f"{(self.base.date() + timedelta(days=self.rng.randint(1, 6))).isoformat()}T"
                f"{self.rng.choice(('06:30', '08:15', '13:30', '19:15'))}:00+00:00"
            )
            kinds = [
                k for k, v in rules.types.items() if v["room_feature"] in rules.rooms[room_id][1]["features"]
            ]
            class_type = self.rng.choice(sorted(kinds))
            for coach in sorted(self.state.coaches.values(), key=lambda c: c.coach_id):
                if rules.fit_problems(class_type, room_id, coach):
                    continue
                if any(
                    rules.slot_problems(class_type, room_id, coach, first + timedelta(weeks=w))
                    for w in range(4)
                ):
                    continue
                series_id = f"SER-{self.state.next_series}"
                self.state.next_series += 1
                ids = [
                    add_session(
                        self.state,
                        rules,
                        class_type,
                        room_id,
                        coach.coach_id,
                        first + timedelta(weeks=w),
                        series_id,
                    ).session_id
                    for w in range(4)
                ]
                self.state.series[series_id] = Series(
                    series_id=series_id,
                    class_type=class_type,
                    room_id=room_id,
                    coach_id=coach.coach_id,
                    weekday=WEEKDAYS[first.weekday()],
                    start_time=first.strftime("%H:%M"),
                    weeks=4,
                    session_ids=ids,
                )
                return

    def _members(self, count: int) -> None:
        names = [f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}" for _ in range(count)]
        names[-1] = names[0]  # two members with the same name
        for i, name in enumerate(names):
            member_id = f"MEM-{2001 + i}"
            handle = name.lower().replace(" ", ".").replace("á", "a")
            suffix = f".{i}" if i == count - 1 else ""
            email = f"{handle}{suffix}@{self.rng.choice(('mail.example', 'corp.example'))}"
            self.state.members[member_id] = Member(
                member_id=member_id,
                name=name,
                email=email,
                tier=self.rng.choice(TIERS),
                status="frozen" if i == 5 else "active",
            )

    def _bookings(self) -> None:
        horizon = (self.base + timedelta(days=3)).date().isoformat()
        rules = self.rules(self.base)
        upcoming = sorted(
            (
                s
                for s in self.state.sessions.values()
                if s.start[:10] <= horizon and not rules.types[s.class_type]["premium"]
            ),
            key=lambda s: (s.capacity, s.start),
        )
        popular = [s for i, s in enumerate(upcoming) if s.room_id not in {u.room_id for u in upcoming[:i]}][
            :3
        ]
        members = sorted(self.state.members.values(), key=lambda m: m.member_id)
        for session in popular:  # fill to capacity, then a waitlist
            self.rng.shuffle(members)
            for member in members:
                self._try_book(member, session)
            for member in members:
                rules = self.rules(self.base - timedelta(hours=self.rng.randint(1, 20)))
                tier = rules.tiers[member.tier]
                problem = rules.booking_problem(member, session)
                full = problem is not None and problem[2]["reason"] == "full"
                if (
                    tier["waitlist"]
                    and full
                    and len(rules.waiting(session.session_id)) < self.rng.randint(1, 3)
                ):
                    entry_id = f"WL-{self.state.next_entry}"
                    self.state.next_entry += 1
                    self.state.waitlist[entry_id] = WaitlistEntry(
                        entry_id=entry_id,
                        member_id=member.member_id,
                        session_id=session.session_id,
                        joined_at=iso(rules.now),
                    )
        sessions = sorted(self.state.sessions.values(), key=lambda s: s.session_id)
        for member in sorted(members, key=lambda m: m.member_id):
            for session in self.rng.sample(sessions, 6):
                if self.rng.random() < 0.5:
                    self._try_book(member, session)
        self._history()

    def _try_book(self, member: Member, session: ClassSession) -> None:
        rules = self.rules(self.base - timedelta(hours=self.rng.randint(1, 48)))
        if rules.booking_problem(member, session) is None:
            booking_id = f"BKG-{self.state.next_booking}"
            self.state.next_booking += 1
            self.state.bookings[booking_id] = Booking(
                booking_id=booking_id, member_id=member.member_id, session_id=session.session_id,
                booked_at=iso(rules.now),
            )  # fmt: skip

    def _history(self) -> None:
        """Earlier cancellations of classes without a waitlist: in time, and late with a fee due."""
        rules = self.rules(self.base)
        candidates = sorted(
            b.booking_id
            for b in self.state.bookings.values()
            if b.status == "booked" and not rules.waiting(b.session_id)
        )
        for booking_id in self.rng.sample(candidates, min(3, len(candidates))):
            booking = self.state.bookings[booking_id]
            member = self.state.members[booking.member_id]
            tier = rules.tiers[member.tier]
            when = self.base - timedelta(minutes=self.rng.randint(10, 50))
            late = when > parse_time(self.state.sessions[booking.session_id].start) - timedelta(
                hours=tier["cancel_deadline_hours"]
            )
            booking.status = "late_cancelled" if late else "cancelled"
            booking.cancelled_at = iso(when)
            booking.fee_eur = int(tier["late_cancel_fee_eur"]) if late else 0
            member.fees_due_eur += booking.fee_eur
