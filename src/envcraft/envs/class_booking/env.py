"""Fitness class booking: classes scheduled into rooms and coach availability, members booking
within their tier's window and weekly limit, waitlists promoted in order.

Archetype ``temporal_scheduling``: every resource (room, coach, member, seat) is a set of time
intervals, and every write keeps those sets consistent: no room or coach double-booked (with
turnover and travel gaps), no member in two classes at once, never more bookings than seats.
Time also gates actions: booking windows open ``booking_window_days`` before a class, a
cancellation after the tier's deadline is late (a fee), nothing changes once a class started.
All checks live in :class:`~.rules.Rules`, shared by the tools and the generator; the State
is in ``state.py``, the seeded week in ``generate.py``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from envcraft import Entity, Environment, Initial, Job, Repository, iso, parse_time, thaw, tool

from .generate import Generator
from .rules import WEEKDAYS, Rules, add_session, book, promote, resolve, schedule_violations, session_view
from .state import BookingState, Coach, Series, WaitlistEntry


class ClassBooking(Environment):
    """Front desk of a two-studio fitness club.

    Members book classes within their tier's booking window and weekly limit; full classes
    have waitlists that promote members in order when a seat frees up; cancellations after
    the tier's deadline are late and may cost a fee. Staff schedule classes and weekly series
    into rooms and coaches' availability, substitute coaches and cancel classes. Times are UTC;
    every call advances the clock by one minute.
    """

    State = BookingState
    state: BookingState
    entities = (
        Entity("coaches", "coach", ("coach {name}",)),
        Entity("members", "member", ("{name} ({email})",), vary=("tier",)),
        Entity(
            "sessions",
            "class",
            ("the {class_type:words} class on {start:when} (in room {room_id})",),
            vary=("start", "end"),
        ),
        # how a booking came about (a class, a series, the waitlist) is the agent's way, not the
        # member's place in the class: booking a series class by class is the same bookings
        Entity("bookings", "booking", ("the booking of {member_id} for {session_id}",), free=("source",)),
        Entity("waitlist", "waitlist place", ("the waitlist place of {member_id} for {session_id}",)),
        Entity(
            "series",
            "weekly series",
            ("the weekly {class_type:words} series on {weekday:weekday} at {start_time} in room {room_id}",),
        ),
    )

    jobs = (
        Job(
            "switch a member to another class",
            ("cancel_booking", "search_classes", "book_class"),
            "swap {booking_id} for a seat in {session_id}",
        ),
        Job(
            "trade a waitlist place for a free seat",
            ("leave_waitlist", "book_class"),
            "give up {entry_id} and book them into {session_id} instead",
        ),
        Job(
            "trade a waitlist place for a weekly series",
            ("leave_waitlist", "book_series"),
            "give up {entry_id} and sign them up for the classes of {series_id} they can book now instead",
        ),
        Job(
            "sign a member up for a series after a drop-in",
            ("book_class", "book_series"),
            "book {member_id} into {session_id} and into the classes of {series_id} they can book now"
            " as well",
        ),
        Job(
            "launch a weekly series with a first member",
            ("create_series", "book_series"),
            "start a weekly {class_type:words} class in room {room_id} with {coach_id}, first on "
            "{first_start:when}, for {weeks} week(s), and sign {member_id} up for the classes they can"
            " book now",
        ),
    )

    @classmethod
    def rule_violations(cls, state: BookingState, files: Mapping[str, str]) -> list[str]:
        """No room or coach holds two scheduled classes at once (turnover and travel gaps included),
        no class has more active bookings than seats, a series lists exactly its weeks' classes."""
        del files
        return schedule_violations(state, cls.repository())

    # -- reads ----------------------------------------------------------------------------------------
    @tool(read_only=True, produces=["session_id"])
    def search_classes(
        self,
        date: str = "",
        class_type: str = "",
        studio_id: str = "",
        coach_id: str = "",
        only_with_spots: bool = False,
        limit: int = 25,
    ) -> dict[str, Any]:
        """Find upcoming scheduled classes, earliest first.

        Args:
            date: Only classes on this day (YYYY-MM-DD); all upcoming classes when empty.
            class_type: Only this class type code, e.g. power-spin (see list_studios).
            studio_id: Only classes in this studio, e.g. STU-1.
            coach_id: Only classes taught by this coach, e.g. COA-104.
            only_with_spots: Leave out full classes.
            limit: Maximum number of classes to return (1 to 100).

        Returns:
            Classes with id, type and name, start and end, studio, room, coach, seats left and
            waitlist length, plus the total number of matches.
        """
        rules = self._rules()
        if not 1 <= limit <= 100:
            self.fail("invalid_argument", "limit must be between 1 and 100", field="limit")
        if class_type and class_type not in rules.types:
            self.fail("not_found", f"unknown class type '{class_type}'", class_types=sorted(rules.types))
        if studio_id and studio_id not in rules.studios:
            self.fail("not_found", f"no studio '{studio_id}'", studio_id=studio_id)
        if coach_id:
            self.lookup(self.state.coaches, coach_id, "coach", coach_id=coach_id)
        day = self._date(date) if date else None
        found = [
            session_view(self.state, s, rules)
            for s in sorted(self.state.sessions.values(), key=lambda s: (s.start, s.session_id))
            if s.status == "scheduled"
            and parse_time(s.start) > self.now()
            and (day is None or s.start[:10] == day)
            and (not class_type or s.class_type == class_type)
            and (not studio_id or rules.studio_of(s) == studio_id)
            and (not coach_id or s.coach_id == coach_id)
            and (not only_with_spots or rules.spots_left(s) > 0)
        ]
        return {"classes": found[:limit], "count": len(found), "now": iso(self.now())}

    @tool(read_only=True, consumes=["session_id"], produces=["booking_id", "entry_id", "member_id"])
    def get_class(self, session_id: str) -> dict[str, Any]:
        """Show one class with its roster and its waitlist in order.

        Args:
            session_id: The class, e.g. CLS-30042.

        Returns:
            The class (type, times, room, coach, status, capacity, seats left), the booked members
            with booking ids, and the waiting members with entry ids in promotion order.
        """
        rules = self._rules()
        session = self.lookup(self.state.sessions, session_id, "class", session_id=session_id)
        roster = [
            {
                "booking_id": b.booking_id,
                "member_id": b.member_id,
                "name": self.state.members[b.member_id].name,
            }
            for b in rules.active(session_id)
        ]
        waitlist = [
            {
                "position": i + 1,
                "entry_id": e.entry_id,
                "member_id": e.member_id,
                "name": self.state.members[e.member_id].name,
            }
            for i, e in enumerate(rules.waiting(session_id))
        ]
        view = session_view(self.state, session, rules)
        return {
            **view,
            "status": session.status,
            "roster": roster,
            "waitlist": waitlist,
            "now": iso(self.now()),
        }

    @tool(goal="the member[ is {name}][, reachable at {email}]", read_only=True, produces=["member_id"])
    def find_members(self, name: str = "", email: str = "") -> dict[str, Any]:
        """Find members by name words or exact email.

        Args:
            name: Words that must all appear in the member's name (case does not matter).
            email: The member's exact email address.

        Returns:
            Matching members with id, name, email, tier and status.
        """
        words = name.lower().split()
        found = [
            m.model_dump(exclude={"fees_due_eur"})
            for m in sorted(self.state.members.values(), key=lambda m: m.member_id)
            if all(w in m.name.lower() for w in words) and (not email or m.email == email.strip().lower())
        ]
        return {"members": found, "count": len(found)}

    @tool(read_only=True, consumes=["member_id"], produces=["booking_id", "entry_id", "session_id"])
    def get_member(self, member_id: str) -> dict[str, Any]:
        """Show a member: tier rules, upcoming bookings, waitlist entries, weekly usage and fees due.

        Args:
            member_id: The member, e.g. MEM-2007.

        Returns:
            The member, their tier's rules, upcoming bookings and waiting entries (with class ids
            and times), bookings used per week (Monday-Sunday) and fees due in euros.
        """
        rules = self._rules()
        member = self.lookup(self.state.members, member_id, "member", member_id=member_id)
        now = self.now()
        bookings = []
        for b in sorted(self.state.bookings.values(), key=lambda b: b.booking_id):
            session = self.state.sessions[b.session_id]
            if b.member_id == member_id and (b.status == "booked" or parse_time(session.start) > now):
                bookings.append({**b.model_dump(), "class_type": session.class_type, "start": session.start})
        entries = [
            {**e.model_dump(), "start": self.state.sessions[e.session_id].start}
            for e in sorted(self.state.waitlist.values(), key=lambda e: e.entry_id)
            if e.member_id == member_id and e.status == "waiting"
        ]
        weeks = {}
        for offset in range(3):
            monday = now.date() - timedelta(days=now.weekday()) + timedelta(weeks=offset)
            weeks[monday.isoformat()] = rules.week_usage(member_id, monday)
        return {
            **member.model_dump(),
            "tier_rules": thaw(rules.tiers[member.tier]),
            "bookings": bookings,
            "waitlist": entries,
            "bookings_per_week": weeks,
            "now": iso(now),
        }

    @tool(read_only=True, produces=["coach_id"])
    def list_coaches(self, qualification: str = "") -> dict[str, Any]:
        """List coaches with their qualifications, home studio and weekly availability.

        Args:
            qualification: Only coaches with this qualification (yoga, pilates, cycling, hiit, boxing,
                strength).

        Returns:
            Coaches with id, name, qualifications, home studio and availability windows per weekday.
        """
        coaches = [
            c.model_dump()
            for c in sorted(self.state.coaches.values(), key=lambda c: c.coach_id)
            if not qualification or qualification in c.qualifications
        ]
        return {"coaches": coaches, "count": len(coaches)}

    @tool(read_only=True, produces=["room_id", "studio_id"])
    def list_studios(self) -> dict[str, Any]:
        """List studios with opening hours and rooms, and the class types on offer.

        Returns:
            Studios (id, name, hours, rooms with capacity and equipment), class types (code, name,
            duration, capacity, equipment and coach qualification needed, premium flag) and the
            scheduling policy (grid, turnover and coach gaps, waitlist size).
        """
        rules = self._rules()
        return {
            "studios": thaw(list(rules.studios.values())),
            "class_types": thaw(rules.types),
            "scheduling": thaw(rules.policy),
        }

    # -- member writes --------------------------------------------------------------------------------
    @tool(
        goal="book {member_id} into {session_id}",
        consumes=["member_id", "session_id"],
        produces=["booking_id"],
    )
    def book_class(self, member_id: str, session_id: str) -> dict[str, Any]:
        """Book a member into a class with a free seat.

        Args:
            member_id: The member, e.g. MEM-2007.
            session_id: The class, e.g. CLS-30042.

        Returns:
            The new booking and the seats left in the class.
        """
        rules = self._rules()
        member = self.lookup(self.state.members, member_id, "member", member_id=member_id)
        session = self.lookup(self.state.sessions, session_id, "class", session_id=session_id)
        problem = rules.booking_problem(member, session)
        if problem is not None:
            self.fail(problem[0], problem[1], **problem[2])
        booking = book(self.state, member, session, "direct", self.now())
        for entry in rules.waiting(session_id):
            if entry.member_id == member_id:
                resolve(entry, "left", self.now())
        return {"booking": booking.model_dump(), "spots_left": rules.spots_left(session)}

    @tool(
        goal="cancel {booking_id}",
        undoes=["book_class", "book_series"],
        consumes=["booking_id"],
        produces=["booking_id"],
    )
    def cancel_booking(self, booking_id: str) -> dict[str, Any]:
        """Cancel a booking; after the tier's deadline it is a late cancellation with a fee.

        The freed seat goes to the first member on the waitlist who can take it (members who
        cannot, e.g. because of an overlapping booking or their weekly limit, keep their place).

        Args:
            booking_id: The booking, e.g. BKG-50012.

        Returns:
            The cancelled booking with its fee, and the waitlist promotion it caused (if any),
            including the entries that were skipped and why.
        """
        rules = self._rules()
        booking = self.lookup(self.state.bookings, booking_id, "booking", booking_id=booking_id)
        if booking.status != "booked":
            self.fail(
                "invalid_transition",
                f"booking {booking_id} is already {booking.status}",
                booking_id=booking_id,
                status=booking.status,
            )
        session = self.state.sessions[booking.session_id]
        start = parse_time(session.start)
        if self.now() >= start:
            self.fail(
                "invalid_transition",
                f"class {session.session_id} started at {session.start}; the booking can no longer change",
                booking_id=booking_id,
                status="started",
            )
        member = self.state.members[booking.member_id]
        tier = rules.tiers[member.tier]
        late = self.now() > start - timedelta(hours=tier["cancel_deadline_hours"])
        booking.status = "late_cancelled" if late else "cancelled"
        booking.cancelled_at = iso(self.now())
        booking.fee_eur = int(tier["late_cancel_fee_eur"]) if late else 0
        member.fees_due_eur += booking.fee_eur
        promoted, skipped = promote(self.state, session, rules, self.now())
        return {"booking": booking.model_dump(), "late": late, "promoted": promoted, "skipped": skipped}

    @tool(
        goal="put {member_id} on the waitlist of {session_id}",
        consumes=["member_id", "session_id"],
        produces=["entry_id"],
    )
    def join_waitlist(self, member_id: str, session_id: str) -> dict[str, Any]:
        """Put a member on the waitlist of a full class.

        Args:
            member_id: The member (plus or premium tier).
            session_id: The full class.

        Returns:
            The waitlist entry and the member's position.
        """
        rules = self._rules()
        member = self.lookup(self.state.members, member_id, "member", member_id=member_id)
        session = self.lookup(self.state.sessions, session_id, "class", session_id=session_id)
        tier = rules.tiers[member.tier]
        if not tier["waitlist"]:
            self.fail(
                "permission_denied",
                f"{member.tier} members cannot join waitlists",
                member_id=member_id,
                missing_permission="waitlist",
            )
        problem = rules.booking_problem(member, session)
        if problem is None:
            self.fail("conflict", f"{session_id} has free seats; book it directly", session_id=session_id)
        category, message, details = problem
        if details["reason"] != "full":  # whoever could not take a free seat cannot wait for one either
            self.fail(category, message, **details)
        waiting = rules.waiting(session_id)
        if any(e.member_id == member_id for e in waiting):
            self.fail("conflict", f"member {member_id} is already waiting for {session_id}")
        if len(waiting) >= rules.policy["waitlist_max"]:
            self.fail("conflict", f"the waitlist of {session_id} is full ({len(waiting)} waiting)")
        entry_id = f"WL-{self.state.next_entry}"
        self.state.next_entry += 1
        entry = WaitlistEntry(
            entry_id=entry_id, member_id=member_id, session_id=session_id, joined_at=iso(self.now())
        )
        self.state.waitlist[entry_id] = entry
        return {"entry": entry.model_dump(), "position": len(waiting) + 1}

    @tool(goal="cancel {entry_id}", undoes=["join_waitlist"], consumes=["entry_id"])
    def leave_waitlist(self, entry_id: str) -> dict[str, Any]:
        """Take a member off a waitlist.

        Args:
            entry_id: The waitlist entry, e.g. WL-7003.

        Returns:
            The entry, now "left".
        """
        entry = self.lookup(self.state.waitlist, entry_id, "waitlist entry", entry_id=entry_id)
        if entry.status != "waiting":
            self.fail(
                "invalid_transition",
                f"waitlist entry {entry_id} is {entry.status}, not waiting",
                entry_id=entry_id,
                status=entry.status,
            )
        resolve(entry, "left", self.now())
        return {"entry": entry.model_dump()}

    @tool(
        goal="book {member_id} into the classes of {series_id} they can book now",
        consumes=["member_id", "series_id"],
        produces=["booking_id"],
    )
    def book_series(self, member_id: str, series_id: str) -> dict[str, Any]:
        """Book a member into every upcoming class of a weekly series they can take now.

        Classes outside the member's booking window, full, overlapping or over the weekly
        limit are skipped and reported; book them later or join their waitlists.

        Args:
            member_id: The member.
            series_id: The series, e.g. SER-801.

        Returns:
            The bookings made and the classes skipped with the reason.
        """
        rules = self._rules()
        member = self.lookup(self.state.members, member_id, "member", member_id=member_id)
        series = self.lookup(self.state.series, series_id, "series", series_id=series_id)
        booked, skipped = [], []
        for session_id in series.session_ids:
            session = self.state.sessions[session_id]
            problem = rules.booking_problem(member, session)
            if problem is not None and problem[0] == "permission_denied":
                self.fail(problem[0], problem[1], **problem[2])
            if problem is None:
                booked.append(book(self.state, member, session, "series", self.now()).model_dump())
            else:
                skipped.append({"session_id": session_id, "start": session.start, "reason": problem[1]})
        if not booked:
            self.fail(
                "conflict", f"no class of {series_id} can be booked for {member_id} now", skipped=skipped
            )
        return {"series_id": series_id, "booked": booked, "skipped": skipped}

    # -- staff writes ---------------------------------------------------------------------------------
    @tool(
        goal="schedule a one-off {class_type:words} class in room {room_id} with {coach_id} on {start:when}",
        consumes=["room_id", "coach_id"],
        produces=["session_id"],
    )
    def schedule_class(self, class_type: str, room_id: str, coach_id: str, start: str) -> dict[str, Any]:
        """Schedule a one-off class in a room with a coach.

        Args:
            class_type: The class type code, e.g. power-spin (see list_studios).
            room_id: The room, e.g. RM-12; it must have the class's equipment.
            coach_id: The coach; qualified, available at that time and not teaching elsewhere.
            start: Start time (ISO 8601, UTC), on the 15-minute grid, e.g. 2026-01-07T18:45:00Z.

        Returns:
            The new class with its id, end time and capacity.
        """
        rules = self._rules()
        coach = self._check_fit(rules, class_type, room_id, coach_id)
        moment = self._time(start, "start")
        problems = rules.slot_problems(class_type, room_id, coach, moment)
        if problems:
            category, message, details = problems[0]
            self.fail(category, message, **details, problems=[p[1] for p in problems])
        session = add_session(self.state, rules, class_type, room_id, coach_id, moment, None)
        return {"class": session_view(self.state, session, rules)}

    @tool(
        goal="set up a weekly {class_type:words} class in room {room_id} with {coach_id}, first on "
        "{first_start:when}, for {weeks} week(s)",
        consumes=["room_id", "coach_id"],
        produces=["series_id", "session_id"],
        examples={
            "first_start": (
                "2026-01-07T15:15:00Z",
                "2026-01-08T15:00:00Z",
                "2026-01-09T15:30:00Z",
                "2026-01-10T11:00:00Z",
            )
        },
    )
    def create_series(
        self, class_type: str, room_id: str, coach_id: str, first_start: str, weeks: int
    ) -> dict[str, Any]:
        """Schedule a class every week at the same time, all weeks or none.

        Args:
            class_type: The class type code.
            room_id: The room.
            coach_id: The coach.
            first_start: Start of the first class (ISO 8601, UTC, on the 15-minute grid).
            weeks: Number of weekly classes (2 to 12).

        Returns:
            The series id and its class ids.
        """
        rules = self._rules()
        coach = self._check_fit(rules, class_type, room_id, coach_id)
        first = self._time(first_start, "first_start")
        if not 2 <= weeks <= rules.policy["series_max_weeks"]:
            self.fail("invalid_argument", "weeks must be between 2 and 12", field="weeks")
        problems = [
            f"{(first + timedelta(weeks=w)).date().isoformat()}: {message}"
            for w in range(weeks)
            for category, message, _ in rules.slot_problems(
                class_type, room_id, coach, first + timedelta(weeks=w)
            )
        ]
        if problems:
            self.fail("conflict", f"{len(problems)} problem(s); nothing was scheduled", problems=problems)
        series_id = f"SER-{self.state.next_series}"
        self.state.next_series += 1
        ids = [
            add_session(
                self.state, rules, class_type, room_id, coach_id, first + timedelta(weeks=w), series_id
            ).session_id
            for w in range(weeks)
        ]
        series = Series(
            series_id=series_id,
            class_type=class_type,
            room_id=room_id,
            coach_id=coach_id,
            weekday=WEEKDAYS[first.weekday()],
            start_time=first.strftime("%H:%M"),
            weeks=weeks,
            session_ids=ids,
        )
        self.state.series[series_id] = series
        return series.model_dump()

    @tool(goal="have {coach_id} teach {session_id} instead", consumes=["session_id", "coach_id"])
    def assign_coach(self, session_id: str, coach_id: str) -> dict[str, Any]:
        """Give a class to a substitute coach.

        Args:
            session_id: The class.
            coach_id: The substitute; qualified, available and free at that time.

        Returns:
            The class with its new coach.
        """
        rules = self._rules()
        session = self.lookup(self.state.sessions, session_id, "class", session_id=session_id)
        problem = rules.bookable(session)
        if problem is not None:
            self.fail(problem[0], problem[1], **problem[2])
        if session.coach_id == coach_id:
            self.fail("invalid_argument", f"{coach_id} already teaches {session_id}", field="coach_id")
        coach = self._check_fit(rules, session.class_type, session.room_id, coach_id)
        problems = [
            p
            for p in rules.slot_problems(
                session.class_type, session.room_id, coach, parse_time(session.start), session.session_id
            )
            if p[2]["reason"] in ("coach_unavailable", "coach_busy")
        ]
        if problems:
            self.fail(problems[0][0], problems[0][1], **problems[0][2])
        session.coach_id = coach_id
        return {"class": session_view(self.state, session, rules)}

    @tool(
        goal="cancel {session_id}; the reason is {reason}",
        undoes=["schedule_class"],
        consumes=["session_id"],
        examples={
            "reason": (
                "the instructor is out sick",
                "the studio is closed for repairs",
                "too few sign-ups this week",
            )
        },
    )
    def cancel_class(self, session_id: str, reason: str) -> dict[str, Any]:
        """Cancel a class: its bookings are cancelled free of charge and its waitlist is closed.

        Args:
            session_id: The class.
            reason: Why, in a few words (members are told).

        Returns:
            The cancelled class and the members whose bookings or waitlist entries were affected.
        """
        rules = self._rules()
        session = self.lookup(self.state.sessions, session_id, "class", session_id=session_id)
        problem = rules.bookable(session)
        if problem is not None:
            self.fail(problem[0], problem[1], **problem[2])
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        session.status = "cancelled"
        session.cancel_reason = reason.strip()
        affected = []
        for booking in rules.active(session_id):
            booking.status = "cancelled_by_studio"
            booking.cancelled_at = iso(self.now())
            affected.append(booking.member_id)
        for entry in rules.waiting(session_id):
            resolve(entry, "closed", self.now())
            affected.append(entry.member_id)
        return {"session_id": session_id, "status": session.status, "affected_members": affected}

    # -- helpers ----------------------------------------------------------------------------------------
    def _rules(self) -> Rules:
        return Rules(self.state, self.data, self.now())

    def _check_fit(self, rules: Rules, class_type: str, room_id: str, coach_id: str) -> Coach:
        if class_type not in rules.types:
            self.fail("not_found", f"unknown class type '{class_type}'", class_types=sorted(rules.types))
        if room_id not in rules.rooms:
            self.fail("not_found", f"no room '{room_id}'", room_id=room_id)
        coach = self.lookup(self.state.coaches, coach_id, "coach", coach_id=coach_id)
        problems = rules.fit_problems(class_type, room_id, coach)
        if problems:
            self.fail(problems[0][0], problems[0][1], **problems[0][2])
        return coach

    def _date(self, value: str) -> str:
        try:
            return date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            self.fail("invalid_argument", f"date must look like 2026-01-07, got '{value}'", field="date")

    def _time(self, value: str, field: str) -> datetime:
        try:
            return parse_time(value.strip())
        except ValueError:
            self.fail(
                "invalid_argument", f"{field} must be an ISO 8601 time like 2026-01-07T18:45:00Z", field=field
            )

    # -- initial states ---------------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """Eight days of classes in five rooms, a four-week series, ``4 + 2 * size`` coaches and
        ``20 * size`` members (two share a name, one is frozen) with bookings that fill a few
        popular classes, waitlists on them, and past cancellations with fees."""
        return Initial(
            state=Generator(random.Random(seed), cls.repository(data), cls.base_time()).build(max(1, size))
        )
