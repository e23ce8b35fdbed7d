"""Domain rules of :class:`~.env.ClassBooking`: what its tools check, compute and render.

Fitness class booking (studios, coaches, members, waitlists). The tool surface and the State
live in ``env.py``; this module holds the logic tool bodies call (the S0 generator shares it, so
S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from envcraft.core import Repository
from envcraft.core.clock import iso, parse_time

if TYPE_CHECKING:
    from .env import Booking, BookingState, ClassSession, Coach, Member, Problem, WaitlistEntry


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
COUNTED: frozenset[str] = frozenset({"booked", "late_cancelled"})  # what uses up the weekly limit


# -- the rules, shared by tools and generator ---------------------------------------------------------
def _overlaps(a0: datetime, a1: datetime, b0: datetime, b1: datetime, gap: timedelta = timedelta(0)) -> bool:
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
            if _overlaps(start, end, parse_time(other.start), parse_time(other.end)):
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
            if other.room_id == room_id and _overlaps(start, end, o0, o1, turnover):
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
                if _overlaps(start, end, o0, o1, timedelta(minutes=self.policy[key])):
                    problems.append(
                        (
                            "conflict",
                            f"coach {coach.coach_id} teaches {other.session_id} at {other.start}",
                            {"reason": "coach_busy"},
                        )
                    )
        return problems
