"""The State of :class:`~.env.ClassBooking`: coaches, members, classes, bookings, waitlists, series.

The explicit state space S of the club's front desk. Class types and rooms are checked against
the reference data; the links between records (a booking's member and class, a class's coach
and series) are invariants, checked per record when a call touches it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from envcraft import IsoTime, Repository, StateModel, dangling, invariant, misfiled

Tier = Literal["basic", "plus", "premium"]
BookingStatus = Literal["booked", "cancelled", "late_cancelled", "cancelled_by_studio"]
WaitStatus = Literal["waiting", "promoted", "left", "closed"]


Problem = tuple[str, str, dict[str, Any]]  # (error category, message, details)
REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


def _class_type(code: str) -> str:
    """Durations, premium flags and the qualification a class needs live in the class type."""
    if code not in REFERENCE.json("class_types.json")["class_types"]:
        raise ValueError(f"{code!r} is not a class type of data/class_types.json")
    return code


@cache
def _room_ids() -> frozenset[str]:
    return frozenset(r["room_id"] for s in REFERENCE.json("studios.json")["studios"] for r in s["rooms"])


def _room(room_id: str) -> str:
    """Capacity, equipment and the studio's opening hours come with the room."""
    if room_id not in _room_ids():
        raise ValueError(f"{room_id!r} is not a room of data/studios.json")
    return room_id


ClassType = Annotated[str, AfterValidator(_class_type)]
RoomId = Annotated[str, AfterValidator(_room)]


class Coach(StateModel):
    coach_id: str
    name: str
    home_studio_id: str
    qualifications: list[str]
    availability: dict[str, list[str]]  # weekday ("mon") -> windows ("06:00-12:00")


class Member(StateModel):
    member_id: str
    name: str
    email: str
    tier: Tier
    status: Literal["active", "frozen"] = "active"
    fees_due_eur: int = 0


class ClassSession(StateModel):
    session_id: str
    class_type: ClassType
    room_id: RoomId
    coach_id: str
    start: IsoTime
    end: IsoTime
    capacity: int = Field(ge=0)
    status: Literal["scheduled", "cancelled"] = "scheduled"
    series_id: str | None = None
    cancel_reason: str | None = None


class Booking(StateModel):
    booking_id: str
    member_id: str
    session_id: str
    status: BookingStatus = "booked"
    source: Literal["direct", "waitlist", "series"] = "direct"
    booked_at: IsoTime
    cancelled_at: IsoTime | None = None
    fee_eur: int = 0


class WaitlistEntry(StateModel):
    entry_id: str
    member_id: str
    session_id: str
    joined_at: IsoTime
    status: WaitStatus = "waiting"
    resolved_at: IsoTime | None = None


class Series(StateModel):
    series_id: str
    class_type: ClassType
    room_id: RoomId
    coach_id: str
    weekday: str
    start_time: str
    weeks: int
    session_ids: list[str]


class BookingState(StateModel):
    coaches: dict[str, Coach] = {}
    members: dict[str, Member] = {}
    sessions: dict[str, ClassSession] = {}
    bookings: dict[str, Booking] = {}
    waitlist: dict[str, WaitlistEntry] = {}
    series: dict[str, Series] = {}
    next_session: int = 30001
    next_booking: int = 50001
    next_entry: int = 7001
    next_series: int = 801

    # Every id one record gives for another names a record of that kind: rosters, schedules and
    # weekly limits follow these links without looking.
    @invariant("coaches")
    def _coach_filed(self, key: str, coach: Coach) -> None:
        _refuse(misfiled({key: coach}, "coach_id"))

    @invariant("members")
    def _member_filed(self, key: str, member: Member) -> None:
        _refuse(misfiled({key: member}, "member_id"))

    @invariant("sessions")
    def _class_has_its_coach_and_series(self, key: str, session: ClassSession) -> None:
        _refuse(
            [
                *misfiled({key: session}, "session_id"),
                *dangling(session.session_id, "coach", [session.coach_id], self.coaches),
                *dangling(
                    session.session_id,
                    "series",
                    [session.series_id] if session.series_id else [],
                    self.series,
                ),
            ]
        )

    @invariant("bookings")
    def _booking_has_its_member_and_class(self, key: str, booking: Booking) -> None:
        _refuse(
            [
                *misfiled({key: booking}, "booking_id"),
                *dangling(booking.booking_id, "member", [booking.member_id], self.members),
                *dangling(booking.booking_id, "class", [booking.session_id], self.sessions),
            ]
        )

    @invariant("waitlist")
    def _waitlist_place_has_its_member_and_class(self, key: str, entry: WaitlistEntry) -> None:
        _refuse(
            [
                *misfiled({key: entry}, "entry_id"),
                *dangling(entry.entry_id, "member", [entry.member_id], self.members),
                *dangling(entry.entry_id, "class", [entry.session_id], self.sessions),
            ]
        )

    @invariant("series")
    def _series_has_its_coach_and_classes(self, key: str, series: Series) -> None:
        _refuse(
            [
                *misfiled({key: series}, "series_id"),
                *dangling(series.series_id, "coach", [series.coach_id], self.coaches),
                *dangling(series.series_id, "class", series.session_ids, self.sessions),
            ]
        )


def _refuse(problems: list[str]) -> None:
    """Refuse the state with every problem one record has (the messages the desk always gave)."""
    if problems:
        raise ValueError("; ".join(problems))
