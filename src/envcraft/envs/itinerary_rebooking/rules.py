"""Domain rules of :class:`~.env.ItineraryRebooking`: what its tools check, compute and render.

Itinerary rebooking (travel disruption desk). The tool surface and the State live in ``env.py``;
this module holds the logic tool bodies call (the S0 generator shares it, so S0 is built by the
same rules the tools enforce).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from envcraft.core import Repository
from envcraft.core.clock import parse_time

if TYPE_CHECKING:
    from .env import Flight


HORIZON_DAYS = 3  # flights and hotel nights exist for the base day and the two days after
SMS_MAX_CHARS = 320
MAX_NIGHTS = 7


# -- reference data views ---------------------------------------------------------------------
@dataclass(frozen=True)
class FlightTimes:
    """A flight's timetable facts and its live times (scheduled + delay)."""

    flight_no: str
    carrier: str
    origin: str
    destination: str
    distance_km: int
    scheduled_departure: datetime
    scheduled_arrival: datetime
    delay: timedelta

    @property
    def departure(self) -> datetime:
        return self.scheduled_departure + self.delay

    @property
    def arrival(self) -> datetime:
        return self.scheduled_arrival + self.delay


def _airports(data: Repository) -> dict[str, Any]:
    return {a["code"]: a for a in data.json("airports.json")["airports"]}


def _alliances(data: Repository) -> dict[str, str]:
    return {c["code"]: c["alliance"] for c in data.json("carriers.json")["carriers"]}


def _times(timetable: Mapping[str, Mapping[str, str]], flight: Flight) -> FlightTimes:
    row = timetable[flight.flight_no]
    departure = parse_time(f"{flight.date}T{row['departs']}:00+00:00")
    return FlightTimes(
        flight_no=flight.flight_no,
        carrier=row["carrier"],
        origin=row["origin"],
        destination=row["destination"],
        distance_km=int(row["distance_km"]),
        scheduled_departure=departure,
        scheduled_arrival=departure + timedelta(minutes=int(row["duration_minutes"])),
        delay=timedelta(minutes=flight.delay_minutes),
    )


def _nights(check_in: str, nights: int) -> list[str]:
    start = date.fromisoformat(check_in)
    return [(start + timedelta(days=i)).isoformat() for i in range(nights)]


def _minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


def _issue(code: str, entity_id: str, detail: str) -> dict[str, Any]:
    return {"code": code, "entity_id": entity_id, "detail": detail}
