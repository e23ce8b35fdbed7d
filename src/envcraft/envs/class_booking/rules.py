"""Domain rules of :class:`~.env.ClassBooking`: what its tools check, compute and render.

Fitness class booking (studios, coaches, members, waitlists). :class:`Rules` holds every
scheduling and booking check over the State of ``state.py`` at one moment; the functions below
it make the records a booking, a promotion or a new class adds. The tools in ``env.py`` call
them and the S0 generator shares them, so S0 is built by the same rules the tools enforce.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any, Literal

from envcraft import Repository, iso, parse_time

from .state import Booking, BookingState, ClassSession, Coach, Member, Problem, WaitlistEntry, WaitStatus

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
COUNTED: frozenset[str] = frozenset({"booked", "late_cancelled"})  # what uses up the weekly limit


# -- the rules, shared by tools and generator ---------------------------------------------------------
def overlaps(a0: datetime, a1: datetime, b0: datetime, b1: datetime, gap: timedelta = timedelta(0)) -> bool:
    return a0 < b1 + gap and b0 < a1 + gap


class Rules:
    """Every scheduling and booking check, evaluated at one moment ``now``."""

    def __init__(self, state: BookingState, data: Repository, now: datetime) -> None:
        self.state, self.data, self.now = state, data, now
        self.types = data.json("class_types.json")["class_types"]
        self.tiers = data.json("tiers.json")["tiers"]
        studios = data.json("studios.json")
        self.policy = studios["scheduling"]
        self.studios = {s["studio_id"]: s for s in studios["studios"]}
        self.rooms = {r["room_id"]: (s, r) for s in studios["studios"] for r in s["rooms"]}

    # -- lookups ------------------------------------------------------------------------------------
    def studio_of(self, session: ClassSession) -> str:
        return str(self.rooms[session.room_id][0]["studio_id"])

    def active(self, session_id: str) -> list[Booking]:
        return sorted(
            (b for b in self.state.bookings.values() if b.session_id == session_id and b.status == "booked"),
            key=lambda b: b.booking_id,
        )

    def spots_left(self, session: ClassSession) -> int:
        return session.capacity - len(self.active(session.session_id))

    def waiting(self, session_id: str) -> list[WaitlistEntry]:
        entries = [
            e for e in self.state.waitlist.values() if e.session_id == session_id and e.status == "waiting"
        ]
        return sorted(entries, key=lambda e: (e.joined_at, e.entry_id))

    def week_usage(self, member_id: str, day: date) -> int:
        week = day.isocalendar()[:2]
        return sum(
            1
            for b in self.state.bookings.values()
            if b.member_id == member_id
            and b.status in COUNTED
            and parse_time(self.state.sessions[b.session_id].start).date().isocalendar()[:2] == week
        )

    # -- booking ------------------------------------------------------------------------------------
    def booking_problem(self, member: Member, session: ClassSession) -> Problem | None:
        """Why ``member`` cannot take a seat in ``session`` now; None when they can."""
        tier = self.tiers[member.tier]
        kind = self.types[session.class_type]
        sid, mid = session.session_id, member.member_id
        if member.status != "active":
            return (
                "permission_denied",
                f"member {mid} is {member.status}",
                {
                    "reason": "inactive",
                    "member_id": mid,
                    "missing_permission": "active_membership",
                },
            )
        if kind["premium"] and not tier["premium_classes"]:
            return (
                "permission_denied",
                f"{kind['name']} is a premium class; {member.tier} members cannot book it",
                {
                    "reason": "premium_only",
                    "member_id": mid,
                    "missing_permission": "premium_classes",
                },
            )
        problem = self.bookable(session)
        if problem is not None:
            return problem
        start = parse_time(session.start)
        opens = start - timedelta(days=tier["booking_window_days"])
        if self.now < opens:
            return (
                "conflict",
                f"booking for {sid} opens at {iso(opens)} for {member.tier} members",
                {
                    "reason": "window",
                    "session_id": sid,
                    "opens_at": iso(opens),
                },
            )
        mine = [b for b in self.state.bookings.values() if b.member_id == mid and b.status == "booked"]
        same = next((b for b in mine if b.session_id == sid), None)
        if same is not None:
            return (
                "conflict",
                f"member {mid} already holds {same.booking_id} for {sid}",
                {
                    "reason": "already_booked",
                    "booking_id": same.booking_id,
                },
            )
        end = parse_time(session.end)
        for booking in sorted(mine, key=lambda b: b.booking_id):
            other = self.state.sessions[booking.session_id]
            if overlaps(start, end, parse_time(other.start), parse_time(other.end)):
                return (
                    "conflict",
                    f"member {mid} is booked into {other.session_id} at the same time",
                    {
                        "reason": "overlap",
                        "booking_id": booking.booking_id,
                        "session_id": other.session_id,
                    },
                )
        used = self.week_usage(mid, start.date())
        if used >= tier["max_bookings_per_week"]:
            return (
                "conflict",
                f"member {mid} already has {used} bookings that week ({member.tier} limit)",
                {
                    "reason": "weekly_limit",
                    "limit": tier["max_bookings_per_week"],
                },
            )
        if self.spots_left(session) <= 0:
            return (
                "conflict",
                f"{sid} is full ({session.capacity} seats)",
                {
                    "reason": "full",
                    "session_id": sid,
                    "waitlist_length": len(self.waiting(sid)),
                },
            )
        return None

    def bookable(self, session: ClassSession) -> Problem | None:
        if session.status == "cancelled":
            return (
                "invalid_transition",
                f"class {session.session_id} is cancelled",
                {
                    "reason": "cancelled",
                    "session_id": session.session_id,
                    "status": session.status,
                },
            )
        if self.now >= parse_time(session.start):
            return (
                "invalid_transition",
                f"class {session.session_id} started at {session.start}",
                {
                    "reason": "started",
                    "session_id": session.session_id,
                    "status": "started",
                },
            )
        return None

    # -- scheduling ---------------------------------------------------------------------------------
    def fit_problems(self, class_type: str, room_id: str, coach: Coach) -> list[Problem]:
        """Problems that do not depend on the date: room features, coach qualification."""
        kind = self.types[class_type]
        room = self.rooms[room_id][1]
        problems: list[Problem] = []
        if kind["room_feature"] not in room["features"]:
            problems.append(
                (
                    "conflict",
                    f"{room['name']} ({room_id}) has no {kind['room_feature']} for {kind['name']}",
                    {"reason": "room_equipment"},
                )
            )
        if kind["qualification"] not in coach.qualifications:
            problems.append(
                (
                    "permission_denied",
                    f"coach {coach.coach_id} is not qualified to teach {kind['qualification']}",
                    {
                        "reason": "qualification",
                        "coach_id": coach.coach_id,
                        "missing_permission": f"qualification:{kind['qualification']}",
                    },
                )
            )
        return problems

    def slot_problems(
        self, class_type: str, room_id: str, coach: Coach, start: datetime, ignore: str | None = None
    ) -> list[Problem]:
        """Problems of one occurrence: past, grid, opening hours, coach availability, double bookings."""
        kind = self.types[class_type]
        studio = self.rooms[room_id][0]
        end = start + timedelta(minutes=kind["duration_minutes"])
        day, clock, until = WEEKDAYS[start.weekday()], start.strftime("%H:%M"), end.strftime("%H:%M")
        when = f"{start.date().isoformat()} {clock}"
        problems: list[Problem] = []
        if start <= self.now:
            problems.append(
                ("invalid_argument", f"{when} is not in the future", {"reason": "past", "field": "start"})
            )
        if start.minute % self.policy["slot_minutes"] or start.second:
            problems.append(
                (
                    "invalid_argument",
                    f"{when} is not on the 15-minute grid",
                    {"reason": "grid", "field": "start"},
                )
            )
        if clock < studio["opens"] or until > studio["closes"] or end.date() != start.date():
            problems.append(
                (
                    "conflict",
                    f"{studio['name']} is open {studio['opens']}-{studio['closes']}",
                    {"reason": "hours"},
                )
            )
        windows = coach.availability.get(day, [])
        if not any(w[:5] <= clock and until <= w[6:] for w in windows):
            problems.append(
                (
                    "conflict",
                    f"coach {coach.coach_id} is not available {day} {clock}-{until}",
                    {"reason": "coach_unavailable", "windows": windows},
                )
            )
        turnover = timedelta(minutes=self.policy["room_turnover_minutes"])
        for other in sorted(self.state.sessions.values(), key=lambda s: s.start):
            if other.status != "scheduled" or other.session_id == ignore:
                continue
            o0, o1 = parse_time(other.start), parse_time(other.end)
            if other.room_id == room_id and overlaps(start, end, o0, o1, turnover):
                problems.append(
                    (
                        "conflict",
                        f"{room_id} is taken by {other.session_id} at {other.start}",
                        {"reason": "room_taken"},
                    )
                )
            if other.coach_id == coach.coach_id:
                same = self.studio_of(other) == studio["studio_id"]
                key = "coach_gap_same_studio_minutes" if same else "coach_gap_other_studio_minutes"
                if overlaps(start, end, o0, o1, timedelta(minutes=self.policy[key])):
                    problems.append(
                        (
                            "conflict",
                            f"coach {coach.coach_id} teaches {other.session_id} at {other.start}",
                            {"reason": "coach_busy"},
                        )
                    )
        return problems


def schedule_violations(state: BookingState, data: Repository) -> list[str]:
    """No room or coach holds two scheduled classes at once (turnover and travel gaps included),
    no class has more active bookings than seats, a series lists exactly its weeks' classes."""
    policy = data.json("studios.json")["scheduling"]
    problems = []
    scheduled = sorted(
        (s for s in state.sessions.values() if s.status == "scheduled"), key=lambda s: s.session_id
    )
    turnover = timedelta(minutes=policy["room_turnover_minutes"])
    gap = timedelta(minutes=policy["coach_gap_same_studio_minutes"])
    for i, a in enumerate(scheduled):
        a0, a1 = parse_time(a.start), parse_time(a.end)
        for b in scheduled[i + 1 :]:
            b0, b1 = parse_time(b.start), parse_time(b.end)
            if a.room_id == b.room_id and overlaps(a0, a1, b0, b1, turnover):
                problems.append(f"{a.session_id} and {b.session_id} share {a.room_id} at the same time")
            if a.coach_id == b.coach_id and overlaps(a0, a1, b0, b1, gap):
                problems.append(f"coach {a.coach_id} teaches {a.session_id} and {b.session_id} at once")
    booked: dict[str, int] = {}
    for booking in state.bookings.values():
        if booking.status == "booked":
            booked[booking.session_id] = booked.get(booking.session_id, 0) + 1
    for session in state.sessions.values():
        if booked.get(session.session_id, 0) > session.capacity:
            problems.append(f"{session.session_id} has more bookings than seats")
    for series in state.series.values():
        if len(series.session_ids) != series.weeks or any(
            state.sessions[s].series_id != series.series_id for s in series.session_ids
        ):
            problems.append(f"{series.series_id} does not list exactly its weekly classes")
    return problems


# -- the records a call adds ----------------------------------------------------------------------------
def book(
    state: BookingState,
    member: Member,
    session: ClassSession,
    source: Literal["direct", "waitlist", "series"],
    now: datetime,
) -> Booking:
    """Seat ``member`` in ``session`` (the caller checked :meth:`Rules.booking_problem`)."""
    booking_id = f"BKG-{state.next_booking}"
    state.next_booking += 1
    booking = Booking(
        booking_id=booking_id,
        member_id=member.member_id,
        session_id=session.session_id,
        source=source,
        booked_at=iso(now),
    )
    state.bookings[booking_id] = booking
    return booking


def promote(
    state: BookingState, session: ClassSession, rules: Rules, now: datetime
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Give free seats to waiting members in order, skipping (but keeping) those who cannot."""
    promoted: dict[str, Any] | None = None
    skipped: list[dict[str, Any]] = []
    for entry in rules.waiting(session.session_id):
        if rules.spots_left(session) <= 0:
            break
        problem = rules.booking_problem(state.members[entry.member_id], session)
        if problem is not None:
            skipped.append({"entry_id": entry.entry_id, "member_id": entry.member_id, "reason": problem[1]})
            continue
        booking = book(state, state.members[entry.member_id], session, "waitlist", now)
        resolve(entry, "promoted", now)
        promoted = {
            "entry_id": entry.entry_id,
            "member_id": entry.member_id,
            "booking_id": booking.booking_id,
        }
    return promoted, skipped


def resolve(entry: WaitlistEntry, status: WaitStatus, now: datetime) -> None:
    """Take a waitlist place off the list (promoted, left or closed)."""
    entry.status = status
    entry.resolved_at = iso(now)


def add_session(
    state: BookingState,
    rules: Rules,
    class_type: str,
    room_id: str,
    coach_id: str,
    start: datetime,
    series_id: str | None,
) -> ClassSession:
    """Schedule a class (the caller checked the slot): its length and seats come from the class
    type and the room."""
    kind = rules.types[class_type]
    session_id = f"CLS-{state.next_session}"
    state.next_session += 1
    session = ClassSession(
        session_id=session_id,
        class_type=class_type,
        room_id=room_id,
        coach_id=coach_id,
        start=iso(start),
        end=iso(start + timedelta(minutes=kind["duration_minutes"])),
        capacity=min(kind["capacity"], rules.rooms[room_id][1]["capacity"]),
        series_id=series_id,
    )
    state.sessions[session_id] = session
    return session


def session_view(state: BookingState, session: ClassSession, rules: Rules) -> dict[str, Any]:
    """A class as the tools show it: times, room, coach, seats left and waitlist length."""
    studio, room = rules.rooms[session.room_id]
    return {
        "session_id": session.session_id,
        "class_type": session.class_type,
        "name": rules.types[session.class_type]["name"],
        "start": session.start,
        "end": session.end,
        "studio_id": studio["studio_id"],
        "room_id": session.room_id,
        "room": room["name"],
        "coach_id": session.coach_id,
        "coach": state.coaches[session.coach_id].name,
        "capacity": session.capacity,
        "spots_left": rules.spots_left(session),
        "waitlist_length": len(rules.waiting(session.session_id)),
        "series_id": session.series_id,
    }
