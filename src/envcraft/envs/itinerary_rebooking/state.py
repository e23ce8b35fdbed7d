"""The State of :class:`~.env.ItineraryRebooking`: travelers, trips, flights, stays and disruptions.

The models, their status types, the reference-data checks of flight and hotel ids, and the link
invariants (every id one record gives for another names a record of that kind), checked record
by record when a call touches one. The rules over this State live in ``rules.py``, the tools in
``env.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from functools import cache, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from envcraft import IsoDate, IsoTime, Repository, StateModel, dangling, invariant, misfiled

FareClass = Literal["flex", "standard", "saver"]
LegStatus = Literal["confirmed", "flown", "missed"]
FlightStatus = Literal["scheduled", "delayed", "cancelled"]
EventKind = Literal["delay", "cancellation", "gate_change", "hotel_overbooking"]
ClaimKind = Literal["cancellation", "long_delay", "hotel_walk"]
Channel = Literal["email", "sms"]


REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data
_STAMP = re.compile(r"\d{8}")


def timetable_rows(data: Repository) -> dict[str, Mapping[str, str]]:
    """The timetable (``schedule.csv``) by flight number."""
    return {row["flight_no"]: row for row in data.csv("schedule.csv")}


def hotel_catalog(data: Repository) -> dict[str, Any]:
    """The hotels of ``hotels.json`` by hotel id."""
    return {h["hotel_id"]: h for h in data.json("hotels.json")["hotels"]}


@cache
def _catalog_ids(kind: Literal["flights", "hotels"]) -> frozenset[str]:
    """Flight numbers of the timetable, or hotel ids of the catalog (reference data never changes)."""
    return frozenset(timetable_rows(REFERENCE) if kind == "flights" else hotel_catalog(REFERENCE))


@lru_cache(maxsize=4096)  # a state holds hundreds of flights, from a few dozen timetable rows and days
def _flight_problem(flight_id: str) -> str:
    """Why ``flight_id`` is not ``<flight_no>-<YYYYMMDD>``, a timetable row on a real day ('' if it is)."""
    number, _, stamp = flight_id.rpartition("-")
    if number not in _catalog_ids("flights") or not _STAMP.fullmatch(stamp):
        return f"{flight_id!r} is not <timetable flight_no>-<YYYYMMDD>"
    try:
        date(int(stamp[:4]), int(stamp[4:6]), int(stamp[6:]))
    except ValueError:
        return f"{flight_id!r} is not on a real day"
    return ""


def _operated_flight(flight_id: str) -> str:
    """Times and route come from the timetable row and the day: both must exist."""
    if problem := _flight_problem(flight_id):
        raise ValueError(problem)
    return flight_id


def _catalog_hotel(hotel_id: str) -> str:
    if hotel_id not in _catalog_ids("hotels"):
        raise ValueError(f"{hotel_id!r} is not a hotel of data/hotels.json")
    return hotel_id


FlightId = Annotated[str, AfterValidator(_operated_flight)]
HotelId = Annotated[str, AfterValidator(_catalog_hotel)]


class Traveler(StateModel):
    traveler_id: str
    name: str
    email: str
    phone: str | None = None
    sms_opt_in: bool = False


class Flight(StateModel):
    """One operated flight, ``<flight_no>-<YYYYMMDD>``: a timetable row (``data/schedule.csv``) on
    one date, plus its live status. Times and route come from the timetable, never duplicated here."""

    flight_id: FlightId
    status: FlightStatus = "scheduled"
    delay_minutes: int = Field(default=0, ge=0)
    delay_reason: str | None = None
    gate: str = ""
    seats_left: int = Field(ge=0)

    @property
    def flight_no(self) -> str:
        return self.flight_id.rsplit("-", 1)[0]

    @property
    def date(self) -> str:
        stamp = self.flight_id.rsplit("-", 1)[1]
        return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:]}"


class Leg(StateModel):
    leg_id: str
    itinerary_id: str
    flight_id: str
    status: LegStatus = "confirmed"
    previous_flight_ids: list[str] = []
    change_fees_eur: int = 0


class Itinerary(StateModel):
    itinerary_id: str
    reference: str
    traveler_id: str
    fare_class: FareClass
    leg_ids: list[str]


class Stay(StateModel):
    stay_id: str
    itinerary_id: str
    hotel_id: HotelId
    check_in: IsoDate
    nights: int = Field(ge=1)
    rate: Literal["flexible", "non_refundable"]
    status: Literal["booked", "walked"] = "booked"
    arrival_leg_id: str
    departure_leg_id: str | None = None
    previous_hotel_ids: list[str] = []


class Transfer(StateModel):
    transfer_id: str
    itinerary_id: str
    leg_id: str
    provider: str
    pickup_at: IsoTime


class HotelInventory(StateModel):
    hotel_id: HotelId
    rooms_left: dict[IsoDate, int]  # by night, keyed by that night's check-in date


class Event(StateModel):
    """A disruption scheduled to happen at ``fire_at``; invisible to the agent until it fires."""

    event_id: str
    kind: EventKind
    fire_at: IsoTime
    flight_id: str | None = None
    stay_id: str | None = None
    hotel_id: HotelId | None = None
    delay_minutes: int = Field(default=0, ge=0)
    new_gate: str = ""
    reason: str = ""
    fired_at: IsoTime | None = None


class Notification(StateModel):
    notification_id: str
    event_id: str
    itinerary_id: str
    kind: EventKind
    summary: str
    created_at: IsoTime
    acknowledged_at: IsoTime | None = None


class Message(StateModel):
    message_id: str
    itinerary_id: str
    traveler_id: str
    channel: Channel
    text: str
    sent_at: IsoTime


class Claim(StateModel):
    claim_id: str
    itinerary_id: str
    traveler_id: str
    event_id: str
    kind: ClaimKind
    amount_eur: int
    basis: str
    filed_at: IsoTime


class ItineraryState(StateModel):
    travelers: dict[str, Traveler] = {}
    itineraries: dict[str, Itinerary] = {}
    legs: dict[str, Leg] = {}
    flights: dict[str, Flight] = {}
    stays: dict[str, Stay] = {}
    transfers: dict[str, Transfer] = {}
    hotels: dict[str, HotelInventory] = {}
    events: dict[str, Event] = {}
    notifications: dict[str, Notification] = {}
    messages: dict[str, Message] = {}
    claims: dict[str, Claim] = {}
    next_notification: int = 1
    next_message: int = 1
    next_claim: int = 1

    # Every id one record gives for another names a record of that kind, and legs and their
    # itinerary agree both ways: tools and the event clock follow these links without looking.
    # Each record is checked when a call touches it or a record it links to
    # (envcraft.core.invariants).
    @invariant("travelers")
    def _traveler_filed(self, key: str, traveler: Traveler) -> None:
        _refuse(misfiled({key: traveler}, "traveler_id"))

    @invariant("itineraries")
    def _itinerary_links_resolve(self, key: str, it: Itinerary) -> None:
        problems = misfiled({key: it}, "itinerary_id")
        problems += dangling(it.itinerary_id, "traveler", [it.traveler_id], self.travelers)
        problems += dangling(it.itinerary_id, "leg", it.leg_ids, self.legs)
        problems += [
            f"{lid} is listed by {it.itinerary_id} but belongs to {self.legs[lid].itinerary_id}"
            for lid in it.leg_ids
            if lid in self.legs and self.legs[lid].itinerary_id != it.itinerary_id
        ]
        _refuse(problems)

    @invariant("legs")
    def _leg_links_resolve(self, key: str, leg: Leg) -> None:
        problems = misfiled({key: leg}, "leg_id")
        problems += dangling(leg.leg_id, "flight", [leg.flight_id, *leg.previous_flight_ids], self.flights)
        owner = self.itineraries.get(leg.itinerary_id)
        if owner is None or leg.leg_id not in owner.leg_ids:
            problems.append(f"{leg.leg_id} is not a leg of its itinerary {leg.itinerary_id}")
        _refuse(problems)

    @invariant("flights")
    def _flight_filed(self, key: str, flight: Flight) -> None:
        _refuse(misfiled({key: flight}, "flight_id"))

    @invariant("stays")
    def _stay_links_resolve(self, key: str, stay: Stay) -> None:
        legs = [stay.arrival_leg_id, *([stay.departure_leg_id] if stay.departure_leg_id else [])]
        problems = misfiled({key: stay}, "stay_id")
        problems += dangling(stay.stay_id, "itinerary", [stay.itinerary_id], self.itineraries)
        problems += dangling(stay.stay_id, "leg", legs, self.legs)
        problems += dangling(stay.stay_id, "hotel inventory", [stay.hotel_id], self.hotels)
        _refuse(problems)

    @invariant("transfers")
    def _transfer_links_resolve(self, key: str, transfer: Transfer) -> None:
        problems = misfiled({key: transfer}, "transfer_id")
        problems += dangling(transfer.transfer_id, "itinerary", [transfer.itinerary_id], self.itineraries)
        problems += dangling(transfer.transfer_id, "leg", [transfer.leg_id], self.legs)
        _refuse(problems)

    @invariant("hotels")
    def _hotel_filed(self, key: str, hotel: HotelInventory) -> None:
        _refuse(misfiled({key: hotel}, "hotel_id"))

    @invariant("events")
    def _event_links_resolve(self, key: str, event: Event) -> None:
        problems = misfiled({key: event}, "event_id")
        if event.kind == "hotel_overbooking":
            problems += dangling(event.event_id, "stay", [event.stay_id or ""], self.stays)
            if event.hotel_id is None:
                problems.append(f"{event.event_id} overbooks no hotel")
        else:
            problems += dangling(event.event_id, "flight", [event.flight_id or ""], self.flights)
        _refuse(problems)

    @invariant("notifications")
    def _notification_links_resolve(self, key: str, n: Notification) -> None:
        problems = misfiled({key: n}, "notification_id")
        problems += dangling(n.notification_id, "event", [n.event_id], self.events)
        problems += dangling(n.notification_id, "itinerary", [n.itinerary_id], self.itineraries)
        _refuse(problems)

    @invariant("messages")
    def _message_links_resolve(self, key: str, m: Message) -> None:
        problems = misfiled({key: m}, "message_id")
        problems += dangling(m.message_id, "traveler", [m.traveler_id], self.travelers)
        problems += dangling(m.message_id, "itinerary", [m.itinerary_id], self.itineraries)
        _refuse(problems)

    @invariant("claims")
    def _claim_links_resolve(self, key: str, c: Claim) -> None:
        problems = misfiled({key: c}, "claim_id")
        problems += dangling(c.claim_id, "traveler", [c.traveler_id], self.travelers)
        problems += dangling(c.claim_id, "itinerary", [c.itinerary_id], self.itineraries)
        problems += dangling(c.claim_id, "event", [c.event_id], self.events)
        _refuse(problems)


def _refuse(problems: list[str]) -> None:
    if problems:
        raise ValueError("; ".join(problems[:5]))
