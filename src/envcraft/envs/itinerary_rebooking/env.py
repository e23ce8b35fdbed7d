"""Itinerary rebooking: a travel-disruption desk where disruptions arrive on the clock.

Archetype ``async_event_trigger``: disruption events (delays, cancellations, gate changes,
hotel overbookings) are scheduled in the state with a ``fire_at`` time that the agent cannot
see. Every tool starts with :meth:`ItineraryRebooking._fire_due_events`, which applies each
pending event whose time has come (in ``fire_at`` order), posts notifications to the feed
and lets departed flights take off. The world therefore changes between two calls, and
the agent must react: rebook legs, realign hotel nights and transfers, notify, claim.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from functools import cache, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from envcraft.core import Entity, Environment, Initial, Repository, StateModel, dangling, misfiled, tool
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoDate, IsoTime, iso, parse_time

from .rules import (
    HORIZON_DAYS,
    MAX_NIGHTS,
    SMS_MAX_CHARS,
    FlightTimes,
    _airports,
    _alliances,
    _issue,
    _minutes,
    _nights,
    _times,
)

FareClass = Literal["flex", "standard", "saver"]
LegStatus = Literal["confirmed", "flown", "missed"]
FlightStatus = Literal["scheduled", "delayed", "cancelled"]
EventKind = Literal["delay", "cancellation", "gate_change", "hotel_overbooking"]
ClaimKind = Literal["cancellation", "long_delay", "hotel_walk"]
Channel = Literal["email", "sms"]


REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data
_STAMP = re.compile(r"\d{8}")


# -- state ------------------------------------------------------------------------------------
@cache
def _catalog_ids(kind: Literal["flights", "hotels"]) -> frozenset[str]:
    """Flight numbers of the timetable, or hotel ids of the catalog (reference data never changes)."""
    return frozenset(_timetable(REFERENCE) if kind == "flights" else _hotel_catalog(REFERENCE))


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

    @model_validator(mode="after")
    def _links_resolve(self, info: ValidationInfo) -> ItineraryState:
        """Every id one record gives for another names a record of that kind, and legs and their
        itinerary agree both ways: tools and the event clock follow these links without looking."""
        if info.field_name is not None:  # one assignment inside a tool: checked when the state loads
            return self
        problems = [
            *misfiled(self.travelers, "traveler_id"),
            *misfiled(self.itineraries, "itinerary_id"),
            *misfiled(self.legs, "leg_id"),
            *misfiled(self.flights, "flight_id"),
            *misfiled(self.stays, "stay_id"),
            *misfiled(self.transfers, "transfer_id"),
            *misfiled(self.hotels, "hotel_id"),
            *misfiled(self.events, "event_id"),
            *misfiled(self.notifications, "notification_id"),
            *misfiled(self.messages, "message_id"),
            *misfiled(self.claims, "claim_id"),
        ]
        for it in self.itineraries.values():
            problems += dangling(it.itinerary_id, "traveler", [it.traveler_id], self.travelers)
            problems += dangling(it.itinerary_id, "leg", it.leg_ids, self.legs)
            problems += [
                f"{lid} is listed by {it.itinerary_id} but belongs to {self.legs[lid].itinerary_id}"
                for lid in it.leg_ids
                if lid in self.legs and self.legs[lid].itinerary_id != it.itinerary_id
            ]
        for leg in self.legs.values():
            problems += dangling(
                leg.leg_id, "flight", [leg.flight_id, *leg.previous_flight_ids], self.flights
            )
            owner = self.itineraries.get(leg.itinerary_id)
            if owner is None or leg.leg_id not in owner.leg_ids:
                problems.append(f"{leg.leg_id} is not a leg of its itinerary {leg.itinerary_id}")
        for stay in self.stays.values():
            legs = [stay.arrival_leg_id, *([stay.departure_leg_id] if stay.departure_leg_id else [])]
            problems += dangling(stay.stay_id, "itinerary", [stay.itinerary_id], self.itineraries)
            problems += dangling(stay.stay_id, "leg", legs, self.legs)
            problems += dangling(stay.stay_id, "hotel inventory", [stay.hotel_id], self.hotels)
        for transfer in self.transfers.values():
            problems += dangling(transfer.transfer_id, "itinerary", [transfer.itinerary_id], self.itineraries)
            problems += dangling(transfer.transfer_id, "leg", [transfer.leg_id], self.legs)
        for event in self.events.values():
            if event.kind == "hotel_overbooking":
                problems += dangling(event.event_id, "stay", [event.stay_id or ""], self.stays)
                if event.hotel_id is None:
                    problems.append(f"{event.event_id} overbooks no hotel")
            else:
                problems += dangling(event.event_id, "flight", [event.flight_id or ""], self.flights)
        for n in self.notifications.values():
            problems += dangling(n.notification_id, "event", [n.event_id], self.events)
            problems += dangling(n.notification_id, "itinerary", [n.itinerary_id], self.itineraries)
        for m in self.messages.values():
            problems += dangling(m.message_id, "traveler", [m.traveler_id], self.travelers)
            problems += dangling(m.message_id, "itinerary", [m.itinerary_id], self.itineraries)
        for c in self.claims.values():
            problems += dangling(c.claim_id, "traveler", [c.traveler_id], self.travelers)
            problems += dangling(c.claim_id, "itinerary", [c.itinerary_id], self.itineraries)
            problems += dangling(c.claim_id, "event", [c.event_id], self.events)
        if problems:
            raise ValueError("; ".join(problems[:5]))
        return self


def _timetable(data: Repository) -> dict[str, Mapping[str, str]]:
    return {row["flight_no"]: row for row in data.csv("schedule.csv")}


def _hotel_catalog(data: Repository) -> dict[str, Any]:
    return {h["hotel_id"]: h for h in data.json("hotels.json")["hotels"]}


class ItineraryRebooking(Environment):
    """Travel-disruption desk of a corporate travel agency.

    You look after travelers whose trips combine flights (legs), a hotel stay and an airport
    transfer. Disruptions (delays, cancellations, gate changes, hotel overbookings) arrive
    while you work and appear in the notification feed. Rebook affected legs within fare
    rules, seat inventory and minimum connection times, realign hotel nights and transfer
    pickups, notify the traveler, file the compensation they are owed, then acknowledge.
    Every call advances the clock by five minutes; flights depart on their own.
    """

    State = ItineraryState
    state: ItineraryState
    entities = (
        Entity("travelers", "traveler", ("{name} ({email})",), vary=("phone",)),
        Entity("itineraries", "trip", ("the trip booked under reference {reference}",)),
        Entity("legs", "flight leg", ("the {flight_id} leg of {itinerary_id}",)),
        Entity("flights", "flight", ("flight {flight_id}",), id_known=True),
        Entity("stays", "hotel stay", ("the hotel stay on {itinerary_id}",)),
        Entity("transfers", "airport transfer", ("the airport transfer on {itinerary_id}",)),
        Entity("hotels", "hotel", ("hotel {hotel_id}",), id_known=True),
        Entity("events", "disruption", ("the {kind} of {flight_id}", "the {kind} at {hotel_id}"), log=True),
        Entity("notifications", "notification", ("the {kind} notification for {itinerary_id}",), log=True),
        Entity("messages", "message to the traveler", ()),
        Entity("claims", "compensation claim", ("the claim for {itinerary_id}",)),
    )

    # -- the clock-driven part: called first by every tool -------------------------------------
    def _fire_due_events(self) -> None:
        """Apply every pending event whose time has come, then let departed flights take off."""
        now = self.now()
        due = sorted(
            (e for e in self.state.events.values() if e.fired_at is None and parse_time(e.fire_at) <= now),
            key=lambda e: (e.fire_at, e.event_id),
        )
        for event in due:
            self._apply_event(event)
            event.fired_at = iso(now)
        self._depart_flights()

    def _apply_event(self, event: Event) -> None:
        if event.kind == "hotel_overbooking":
            stay = self.state.stays[event.stay_id or ""]
            if stay.status == "booked" and stay.hotel_id == event.hotel_id:
                stay.status = "walked"
                hotel = self.state.hotels[stay.hotel_id]
                for night in _nights(stay.check_in, stay.nights):
                    if night in hotel.rooms_left:
                        hotel.rooms_left[night] = 0
                name = _hotel_catalog(self.data)[stay.hotel_id]["name"]
                self._notify(
                    event, stay.itinerary_id, f"{name} is overbooked and cannot honour {stay.stay_id}"
                )
            return
        flight = self.state.flights[event.flight_id or ""]
        if flight.status == "cancelled":
            return
        times = _times(self._tt(), flight)
        label = f"{flight.flight_no} {times.origin}→{times.destination} on {flight.date}"
        if event.kind == "delay":
            flight.delay_minutes += event.delay_minutes
            flight.delay_reason = event.reason
            flight.status = "delayed"
            new_departure = iso(times.scheduled_departure + timedelta(minutes=flight.delay_minutes))
            summary = (
                f"{label} delayed by {flight.delay_minutes} min ({event.reason}); "
                f"new departure {new_departure}"
            )
        elif event.kind == "cancellation":
            flight.status = "cancelled"
            flight.delay_reason = event.reason
            summary = f"{label} cancelled ({event.reason})"
        else:
            old_gate, flight.gate = flight.gate, event.new_gate
            summary = f"{label} gate changed from {old_gate or 'TBA'} to {event.new_gate}"
        for leg in sorted(self.state.legs.values(), key=lambda g: g.leg_id):
            if leg.flight_id == flight.flight_id and leg.status == "confirmed":
                self._notify(event, leg.itinerary_id, summary)

    def _notify(self, event: Event, itinerary_id: str, summary: str) -> None:
        nid = f"NTF-{self.state.next_notification:04d}"
        self.state.next_notification += 1
        self.state.notifications[nid] = Notification(
            notification_id=nid,
            event_id=event.event_id,
            itinerary_id=itinerary_id,
            kind=event.kind,
            summary=summary,
            created_at=iso(self.now()),
        )

    def _depart_flights(self) -> None:
        """Legs whose flight has left become ``flown``, or ``missed`` when the connection broke."""
        now, tt = self.now(), self._tt()
        waiting = [leg for leg in self.state.legs.values() if leg.status == "confirmed"]
        for leg in sorted(
            waiting, key=lambda g: (_times(tt, self.state.flights[g.flight_id]).departure, g.leg_id)
        ):
            flight = self.state.flights[leg.flight_id]
            if flight.status == "cancelled" or _times(tt, flight).departure > now:
                continue
            previous = self._previous_leg(leg)
            reached = previous is None or (
                previous.status == "flown" and self._connection_slack(previous, leg) is None
            )
            leg.status = "flown" if reached else "missed"

    # -- reads -----------------------------------------------------------------------------------
    @tool(
        goal="the traveler[ is {traveler_name}][, reachable at {email}][, booked on flight {flight_id}]",
        read_only=True,
        produces=["itinerary_id", "traveler_id"],
    )
    def list_itineraries(
        self, traveler_name: str = "", email: str = "", flight_id: str = ""
    ) -> dict[str, Any]:
        """Find itineraries by traveler name, traveler email or a flight they are booked on.

        Args:
            traveler_name: Words that must all appear in the traveler's name (case does not matter).
            email: The traveler's exact email address.
            flight_id: Only itineraries with a leg on this flight, e.g. KL1293-20260313.

        Returns:
            Matching itineraries: id, booking reference, traveler, route and open notification count.
        """
        self._fire_due_events()
        words = traveler_name.lower().split()
        found = []
        for itinerary in sorted(self.state.itineraries.values(), key=lambda i: i.itinerary_id):
            traveler = self.state.travelers[itinerary.traveler_id]
            legs = [self.state.legs[lid] for lid in itinerary.leg_ids]
            if not all(w in traveler.name.lower() for w in words):
                continue
            if email and traveler.email != email.strip().lower():
                continue
            if flight_id and all(leg.flight_id != flight_id for leg in legs):
                continue
            found.append(
                {
                    "itinerary_id": itinerary.itinerary_id,
                    "reference": itinerary.reference,
                    "traveler_id": traveler.traveler_id,
                    "traveler_name": traveler.name,
                    "email": traveler.email,
                    "route": self._route(legs),
                    "open_notifications": sum(
                        1
                        for n in self.state.notifications.values()
                        if n.itinerary_id == itinerary.itinerary_id and n.acknowledged_at is None
                    ),
                }
            )
        return {"itineraries": found, "count": len(found), "now": iso(self.now())}

    @tool(
        read_only=True, consumes=["itinerary_id"], produces=["leg_id", "stay_id", "transfer_id", "flight_id"]
    )
    def get_itinerary(self, itinerary_id: str) -> dict[str, Any]:
        """Show an itinerary: traveler, legs with live flight status, hotel stay, transfer and open issues.

        Args:
            itinerary_id: The itinerary id, e.g. ITN-4003.

        Returns:
            The itinerary with its legs in travel order, stays, transfers, claims, unacknowledged
            notification ids and the list of issues that still need action.
        """
        self._fire_due_events()
        itinerary = self._itinerary(itinerary_id)
        traveler = self.state.travelers[itinerary.traveler_id]
        legs = [self._leg_view(self.state.legs[lid]) for lid in itinerary.leg_ids]
        stays = [self._stay_view(s) for s in self.state.stays.values() if s.itinerary_id == itinerary_id]
        transfers = [
            self._transfer_view(t) for t in self.state.transfers.values() if t.itinerary_id == itinerary_id
        ]
        return {
            "itinerary_id": itinerary_id,
            "reference": itinerary.reference,
            "fare_class": itinerary.fare_class,
            "traveler": traveler.model_dump(),
            "legs": legs,
            "stays": stays,
            "transfers": transfers,
            "claims": [c.model_dump() for c in self.state.claims.values() if c.itinerary_id == itinerary_id],
            "unacknowledged_notifications": sorted(
                n.notification_id
                for n in self.state.notifications.values()
                if n.itinerary_id == itinerary_id and n.acknowledged_at is None
            ),
            "issues": self._issues(itinerary),
            "now": iso(self.now()),
        }

    @tool(read_only=True, produces=["notification_id", "event_id", "itinerary_id"])
    def list_notifications(
        self, itinerary_id: str = "", include_acknowledged: bool = False
    ) -> dict[str, Any]:
        """Read the disruption feed: one notification per disruption and affected itinerary.

        Args:
            itinerary_id: Only notifications for this itinerary; all itineraries when empty.
            include_acknowledged: Also list notifications that were already acknowledged.

        Returns:
            Notifications, oldest first: id, disruption (event) id, kind, itinerary, summary, times.
        """
        self._fire_due_events()
        if itinerary_id:
            self._itinerary(itinerary_id)
        feed = [
            n.model_dump()
            for n in sorted(
                self.state.notifications.values(), key=lambda n: (n.created_at, n.notification_id)
            )
            if (not itinerary_id or n.itinerary_id == itinerary_id)
            and (include_acknowledged or n.acknowledged_at is None)
        ]
        return {"notifications": feed, "count": len(feed), "now": iso(self.now())}

    @tool(read_only=True, produces=["flight_id"])
    def search_flights(
        self, origin: str, destination: str, date: str, earliest_departure: str = ""
    ) -> dict[str, Any]:
        """Search operated flights between two airports on one day, with live status and seats left.

        Args:
            origin: IATA code of the departure airport, e.g. AMS.
            destination: IATA code of the arrival airport, e.g. BCN.
            date: Departure date (YYYY-MM-DD, UTC).
            earliest_departure: Only flights whose estimated departure is at or after this time
                (ISO 8601, UTC); no lower bound when empty.

        Returns:
            Flights sorted by estimated departure: id, carrier and alliance, scheduled and estimated
            times, status and seats left.
        """
        self._fire_due_events()
        airports = _airports(self.data)
        for field, code in (("origin", origin), ("destination", destination)):
            if code.upper() not in airports:
                self.fail("not_found", f"unknown airport '{code}'", field=field, airports=sorted(airports))
        day = self._parse_date(date, "date")
        after = self._parse_time(earliest_departure, "earliest_departure") if earliest_departure else None
        tt, alliances = self._tt(), _alliances(self.data)
        found = []
        for flight in self.state.flights.values():
            if flight.date != day:
                continue
            times = _times(tt, flight)
            if (times.origin, times.destination) != (origin.upper(), destination.upper()):
                continue
            if after is not None and times.departure < after:
                continue
            found.append((times.departure, flight.flight_id, self._flight_view(flight, times, alliances)))
        found.sort(key=lambda item: (item[0], item[1]))
        return {"flights": [view for _, _, view in found], "count": len(found), "now": iso(self.now())}

    @tool(read_only=True, produces=["hotel_id"])
    def search_hotels(self, city: str, check_in: str, nights: int) -> dict[str, Any]:
        """Find hotels in a city with a free room for every night of a stay.

        Args:
            city: IATA code of the city's airport, e.g. LIS.
            check_in: Check-in date (YYYY-MM-DD).
            nights: Number of nights (1 to 7).

        Returns:
            Hotels with rooms for all nights: id, name, nightly rate, total price, rooms left per night.
        """
        self._fire_due_events()
        if city.upper() not in _airports(self.data):
            self.fail("not_found", f"unknown city '{city}'", field="city")
        nights_list = self._stay_nights(check_in, nights)
        found = []
        for hotel_id, info in sorted(_hotel_catalog(self.data).items()):
            if info["city"] != city.upper():
                continue
            inventory = self.state.hotels.get(hotel_id)  # a hotel without one has no room to sell
            rooms = inventory.rooms_left if inventory is not None else {}
            if all(rooms.get(n, 0) > 0 for n in nights_list):
                found.append(
                    {
                        "hotel_id": hotel_id,
                        "name": info["name"],
                        "nightly_rate_eur": info["nightly_rate_eur"],
                        "total_eur": info["nightly_rate_eur"] * nights,
                        "rooms_left": {n: rooms[n] for n in nights_list},
                    }
                )
        return {"hotels": found, "count": len(found)}

    # -- writes ----------------------------------------------------------------------------------
    @tool(goal="rebook {leg_id} onto flight {flight_id}", consumes=["leg_id", "flight_id"])
    def rebook_leg(self, leg_id: str, flight_id: str) -> dict[str, Any]:
        """Move one leg to another flight on the same route, releasing its old seat.

        Changes are free when the leg is disrupted (its flight is cancelled, delayed by 120 min or
        more, its inbound connection is broken, or it was missed); otherwise the fare class
        decides whether a voluntary change is allowed and what it costs. The new flight must keep
        minimum connection times with the legs before and after it.

        Args:
            leg_id: The leg to move, e.g. LEG-0007.
            flight_id: The new flight, e.g. KL1293-20260313 (from search_flights).

        Returns:
            The updated leg with its new flight, the change fee charged and the itinerary's
            remaining issues.
        """
        self._fire_due_events()
        leg = self._leg(leg_id)
        if leg.status == "flown":
            self.fail(
                "invalid_transition",
                f"leg {leg_id} was already flown on {leg.flight_id}; it cannot be changed",
                leg_id=leg_id,
                status=leg.status,
            )
        new = self._flight(flight_id)
        if new.flight_id == leg.flight_id:
            self.fail("invalid_argument", f"leg {leg_id} is already on {flight_id}", field="flight_id")
        tt = self._tt()
        current = self.state.flights[leg.flight_id]
        old_times, new_times = _times(tt, current), _times(tt, new)
        if (new_times.origin, new_times.destination) != (old_times.origin, old_times.destination):
            self.fail(
                "invalid_argument",
                f"{flight_id} flies {new_times.origin}→{new_times.destination}, but leg {leg_id} "
                f"is {old_times.origin}→{old_times.destination}",
                field="flight_id",
            )
        self._check_bookable(new, new_times)
        fee = self._change_fee(leg, current, old_times, new_times)
        self._check_connections(leg, new_times)
        current.seats_left += 1
        new.seats_left -= 1
        leg.previous_flight_ids.append(leg.flight_id)
        leg.flight_id = new.flight_id
        leg.status = "confirmed"
        leg.change_fees_eur += fee
        itinerary = self.state.itineraries[leg.itinerary_id]
        return {
            "leg": self._leg_view(leg),
            "change_fee_eur": fee,
            "released_flight_id": current.flight_id,
            "issues": self._issues(itinerary),
        }

    @tool(goal="move {stay_id} to a check-in on {check_in:date} for {nights} night(s)", consumes=["stay_id"])
    def change_hotel_dates(self, stay_id: str, check_in: str, nights: int) -> dict[str, Any]:
        """Move a hotel stay to new dates in the same hotel.

        Non-refundable stays can only change when one of their linked legs was disrupted or
        rebooked (the disruption waiver).

        Args:
            stay_id: The stay, e.g. STY-0004.
            check_in: New check-in date (YYYY-MM-DD).
            nights: New number of nights (1 to 7).

        Returns:
            The updated stay and the itinerary's remaining issues.
        """
        self._fire_due_events()
        stay = self._stay(stay_id)
        if stay.status == "walked":
            self.fail(
                "invalid_transition",
                f"stay {stay_id} is walked (the hotel is overbooked); relocate it to another hotel first",
                stay_id=stay_id,
                status=stay.status,
            )
        new_nights = self._stay_nights(check_in, nights)
        if (check_in, nights) == (stay.check_in, stay.nights):
            self.fail("invalid_argument", f"stay {stay_id} already has these dates", field="check_in")
        if stay.rate == "non_refundable" and not self._stay_waived(stay):
            self.fail(
                "permission_denied",
                f"stay {stay_id} has a non-refundable rate and none of its legs was disrupted; "
                "date changes are not permitted",
                stay_id=stay_id,
                missing_permission="date_change",
                rate=stay.rate,
            )
        self._move_rooms(stay, stay.hotel_id, new_nights)
        stay.check_in, stay.nights = check_in, nights
        return {
            "stay": self._stay_view(stay),
            "issues": self._issues(self.state.itineraries[stay.itinerary_id]),
        }

    @tool(goal="move {stay_id} to {hotel_id}", consumes=["stay_id", "hotel_id"])
    def relocate_hotel_stay(self, stay_id: str, hotel_id: str) -> dict[str, Any]:
        """Move a walked stay (its hotel is overbooked) to another hotel in the same city, same dates.

        Args:
            stay_id: The walked stay, e.g. STY-0004.
            hotel_id: The new hotel, e.g. HTL-LIS-03 (from search_hotels).

        Returns:
            The stay, now booked at the new hotel, and the itinerary's remaining issues.
        """
        self._fire_due_events()
        stay = self._stay(stay_id)
        if stay.status != "walked":
            self.fail(
                "invalid_transition",
                f"stay {stay_id} is {stay.status}; only walked stays are relocated "
                "(use change_hotel_dates to change dates)",
                stay_id=stay_id,
                status=stay.status,
            )
        catalog = _hotel_catalog(self.data)
        if hotel_id not in catalog:
            self.fail("not_found", f"no hotel '{hotel_id}'", hotel_id=hotel_id)
        city = catalog[stay.hotel_id]["city"]
        if catalog[hotel_id]["city"] != city:
            self.fail(
                "invalid_argument",
                f"{hotel_id} is in {catalog[hotel_id]['city']}, the stay is in {city}",
                field="hotel_id",
            )
        if hotel_id == stay.hotel_id:
            self.fail("invalid_argument", f"{hotel_id} is the hotel that walked this stay", field="hotel_id")
        self._take_rooms(hotel_id, _nights(stay.check_in, stay.nights))
        stay.previous_hotel_ids.append(stay.hotel_id)
        stay.hotel_id = hotel_id
        stay.status = "booked"
        return {
            "stay": self._stay_view(stay),
            "issues": self._issues(self.state.itineraries[stay.itinerary_id]),
        }

    @tool(goal="move the pickup of {transfer_id} to {pickup_at:when}", consumes=["transfer_id"])
    def reschedule_transfer(self, transfer_id: str, pickup_at: str) -> dict[str, Any]:
        """Move an airport transfer's pickup time to fit its flight's estimated arrival.

        The pickup must be 20 to 90 minutes after the estimated arrival, and a transfer can no
        longer change once its driver is dispatched (30 minutes before the current pickup).

        Args:
            transfer_id: The transfer, e.g. TRF-0002.
            pickup_at: New pickup time (ISO 8601, UTC), e.g. 2026-03-13T14:45:00Z.

        Returns:
            The updated transfer with its allowed pickup window.
        """
        self._fire_due_events()
        transfer = self._transfer(transfer_id)
        new_pickup = self._parse_time(pickup_at, "pickup_at")
        rules = self.data.json("transfers.json")
        lead = timedelta(minutes=rules["dispatch_lead_minutes"])
        if self.now() >= parse_time(transfer.pickup_at) - lead:
            self.fail(
                "invalid_transition",
                f"transfer {transfer_id} is already dispatched (pickup {transfer.pickup_at})",
                transfer_id=transfer_id,
                status="dispatched",
            )
        window = self._pickup_window(transfer)
        if window is None:
            self.fail(
                "conflict",
                f"leg {transfer.leg_id} of transfer {transfer_id} has no flight to meet "
                "(cancelled or missed); rebook the leg first",
                leg_id=transfer.leg_id,
            )
        earliest, latest = window
        if not earliest <= new_pickup <= latest:
            self.fail(
                "conflict",
                f"pickup must be between {iso(earliest)} and {iso(latest)} for the flight's arrival",
                earliest=iso(earliest),
                latest=iso(latest),
            )
        if new_pickup - lead <= self.now():
            self.fail("conflict", "too short notice: the pickup must be more than 30 minutes from now")
        transfer.pickup_at = iso(new_pickup)
        return {"transfer": self._transfer_view(transfer)}

    @tool(
        goal="message the traveler of {itinerary_id} by {channel|email=email|sms=text message}, saying "
        "{message}",
        consumes=["itinerary_id"],
        produces=["message_id"],
    )
    def notify_traveler(self, itinerary_id: str, channel: Channel, message: str) -> dict[str, Any]:
        """Send the traveler a message about their itinerary.

        Args:
            itinerary_id: The itinerary the message is about.
            channel: "email", or "sms" (only for travelers with a phone who opted in; 320 characters
                at most).
            message: The text: what changed and what the traveler should do.

        Returns:
            The message id, where it was sent and when.
        """
        self._fire_due_events()
        itinerary = self._itinerary(itinerary_id)
        traveler = self.state.travelers[itinerary.traveler_id]
        text = message.strip()
        if not text:
            self.fail("invalid_argument", "message must not be empty", field="message")
        if channel == "sms":
            if traveler.phone is None or not traveler.sms_opt_in:
                self.fail(
                    "permission_denied",
                    f"traveler {traveler.traveler_id} has not opted in to SMS; use email",
                    traveler_id=traveler.traveler_id,
                    missing_permission="sms_opt_in",
                )
            if len(text) > SMS_MAX_CHARS:
                self.fail(
                    "invalid_argument", f"an SMS holds at most {SMS_MAX_CHARS} characters", field="message"
                )
        mid = f"MSG-{self.state.next_message:04d}"
        self.state.next_message += 1
        self.state.messages[mid] = Message(
            message_id=mid,
            itinerary_id=itinerary_id,
            traveler_id=traveler.traveler_id,
            channel=channel,
            text=text,
            sent_at=iso(self.now()),
        )
        to = traveler.email if channel == "email" else traveler.phone
        return {"message_id": mid, "channel": channel, "to": to, "sent_at": iso(self.now())}

    @tool(
        goal="file the compensation the traveler of {itinerary_id} is owed for {event_id}",
        consumes=["itinerary_id", "event_id"],
        produces=["claim_id"],
    )
    def file_compensation_claim(self, itinerary_id: str, event_id: str) -> dict[str, Any]:
        """File the compensation a traveler is owed for one disruption, at most once.

        The amount follows data/compensation_policy.json: cancellations and arrival delays of 180
        minutes or more pay by distance band unless the cause is extraordinary (weather, air
        traffic control, security); a cancellation claim needs the leg rebooked first, and is
        halved when the new flight arrived soon enough. A hotel overbooking pays the hotel's walk
        compensation. Gate changes pay nothing.

        Args:
            itinerary_id: The affected itinerary.
            event_id: The disruption id, as given in the notification (e.g. EVT-004).

        Returns:
            The claim: id, kind, amount in euros and how it was computed.
        """
        self._fire_due_events()
        itinerary = self._itinerary(itinerary_id)
        event = self.state.events.get(event_id)
        if event is None or event.fired_at is None:
            self.fail("not_found", f"no disruption '{event_id}'", event_id=event_id)
        if not any(
            n.event_id == event_id and n.itinerary_id == itinerary_id
            for n in self.state.notifications.values()
        ):
            self.fail(
                "invalid_argument",
                f"disruption {event_id} did not affect itinerary {itinerary_id}",
                field="event_id",
            )
        previous = next(
            (
                c
                for c in self.state.claims.values()
                if c.event_id == event_id and c.traveler_id == itinerary.traveler_id
            ),
            None,
        )
        if previous is not None:
            self.fail(
                "conflict",
                f"compensation for {event_id} was already claimed ({previous.claim_id})",
                claim_id=previous.claim_id,
            )
        kind, amount, basis = self._compensation(itinerary, event)
        cid = f"CLM-{self.state.next_claim:04d}"
        self.state.next_claim += 1
        claim = Claim(
            claim_id=cid,
            itinerary_id=itinerary_id,
            traveler_id=itinerary.traveler_id,
            event_id=event_id,
            kind=kind,
            amount_eur=amount,
            basis=basis,
            filed_at=iso(self.now()),
        )
        self.state.claims[cid] = claim
        return claim.model_dump()

    @tool(goal="close {notification_id}", consumes=["notification_id"])
    def acknowledge_notification(self, notification_id: str) -> dict[str, Any]:
        """Close a notification once its itinerary is fully handled.

        Acknowledging is refused while the itinerary still has issues (see get_itinerary): legs on
        cancelled or missed flights, broken connections, walked or misdated hotel stays, transfers
        that no longer fit, or a traveler not yet told about the latest disruption.

        Args:
            notification_id: The notification, e.g. NTF-0003.

        Returns:
            The acknowledged notification.
        """
        self._fire_due_events()
        notification = self.state.notifications.get(notification_id)
        if notification is None:
            self.fail("not_found", f"no notification '{notification_id}'", notification_id=notification_id)
        if notification.acknowledged_at is not None:
            self.fail(
                "invalid_transition",
                f"notification {notification_id} was already acknowledged at {notification.acknowledged_at}",
                notification_id=notification_id,
                status="acknowledged",
            )
        issues = self._issues(self.state.itineraries[notification.itinerary_id])
        if issues:
            self.fail(
                "conflict",
                f"itinerary {notification.itinerary_id} still has {len(issues)} open issue(s)",
                itinerary_id=notification.itinerary_id,
                issues=issues,
            )
        notification.acknowledged_at = iso(self.now())
        return notification.model_dump()

    # -- rules -------------------------------------------------------------------------------------
    def _check_bookable(self, flight: Flight, times: FlightTimes) -> None:
        if flight.status == "cancelled":
            self.fail("conflict", f"flight {flight.flight_id} is cancelled", flight_id=flight.flight_id)
        cutoff = timedelta(minutes=self.data.json("fare_rules.json")["booking_cutoff_minutes"])
        if times.departure - cutoff < self.now():
            self.fail(
                "conflict",
                f"flight {flight.flight_id} departs at {iso(times.departure)}; booking closed "
                f"{_minutes(cutoff)} minutes before departure",
                flight_id=flight.flight_id,
            )
        if flight.seats_left <= 0:
            self.fail("conflict", f"flight {flight.flight_id} is sold out", flight_id=flight.flight_id)

    def _change_fee(self, leg: Leg, current: Flight, old: FlightTimes, new: FlightTimes) -> int:
        """The fee of moving ``leg``; refuses a change the fare class does not permit."""
        rules = self.data.json("fare_rules.json")
        fare_class = self.state.itineraries[leg.itinerary_id].fare_class
        fare = rules["fare_classes"][fare_class]
        waiver = rules["disruption_waiver"]
        if self._disrupted(leg, current, waiver["delay_minutes"]):
            scope = waiver["reroute_if_cancelled"] if current.status == "cancelled" else waiver["reroute"]
            fee = 0
        else:
            if not fare["voluntary_change"]:
                self.fail(
                    "permission_denied",
                    f"leg {leg.leg_id} is booked in fare class {fare_class}, which does not permit "
                    "voluntary changes; only disrupted legs can move",
                    leg_id=leg.leg_id,
                    fare_class=fare_class,
                    missing_permission="voluntary_change",
                )
            scope, fee = fare["reroute"], int(fare["change_fee_eur"])
        alliances = _alliances(self.data)
        allowed = (
            scope == "any"
            or new.carrier == old.carrier
            or (
                scope == "alliance"
                and alliances[old.carrier] != "none"
                and alliances[new.carrier] == alliances[old.carrier]
            )
        )
        if not allowed:
            self.fail(
                "permission_denied",
                f"leg {leg.leg_id} may only move to flights of {old.carrier}"
                + (f" or its {alliances[old.carrier]} partners" if scope == "alliance" else "")
                + f" ({fare_class} fare); {new.flight_no} is operated by {new.carrier}",
                leg_id=leg.leg_id,
                missing_permission=f"reroute_{scope}_to_{new.carrier}",
            )
        return fee

    def _disrupted(self, leg: Leg, flight: Flight, waiver_minutes: int) -> bool:
        if leg.status == "missed" or flight.status == "cancelled" or flight.delay_minutes >= waiver_minutes:
            return True
        previous = self._previous_leg(leg)
        if previous is None:
            return False
        stranded = previous.status == "missed" or self.state.flights[previous.flight_id].status == "cancelled"
        return stranded or self._connection_slack(previous, leg) is not None

    def _check_connections(self, leg: Leg, new: FlightTimes) -> None:
        """The new flight must leave after the previous leg lands and land before the next leaves."""
        tt, airports = self._tt(), _airports(self.data)
        previous, following = self._previous_leg(leg), self._next_leg(leg)
        if previous is not None and self.state.flights[previous.flight_id].status != "cancelled":
            before = _times(tt, self.state.flights[previous.flight_id])
            mct = timedelta(minutes=airports[new.origin]["min_connection_minutes"])
            if new.departure < before.arrival + mct:
                self.fail(
                    "conflict",
                    f"{new.flight_no} departs {iso(new.departure)}, before the previous leg "
                    f"{previous.leg_id} lands ({iso(before.arrival)}) plus the {_minutes(mct)}-minute "
                    f"minimum connection at {new.origin}",
                    earliest_departure=iso(before.arrival + mct),
                    previous_leg_id=previous.leg_id,
                )
        if following is not None and following.status == "confirmed":
            after_flight = self.state.flights[following.flight_id]
            if after_flight.status == "cancelled":
                return
            after = _times(tt, after_flight)
            mct = timedelta(minutes=airports[new.destination]["min_connection_minutes"])
            if new.arrival + mct > after.departure:
                self.fail(
                    "conflict",
                    f"{new.flight_no} lands {iso(new.arrival)}, too late for the next leg "
                    f"{following.leg_id} departing {iso(after.departure)} (minimum connection "
                    f"{_minutes(mct)} minutes at {new.destination}); rebook that leg first",
                    latest_arrival=iso(after.departure - mct),
                    next_leg_id=following.leg_id,
                )

    def _connection_slack(self, previous: Leg, leg: Leg) -> int | None:
        """Minutes missing to make the connection from ``previous`` into ``leg``; None when it holds."""
        tt = self._tt()
        before = _times(tt, self.state.flights[previous.flight_id])
        after = _times(tt, self.state.flights[leg.flight_id])
        mct = timedelta(minutes=_airports(self.data)[after.origin]["min_connection_minutes"])
        short = before.arrival + mct - after.departure
        return _minutes(short) if short > timedelta(0) else None

    def _compensation(self, itinerary: Itinerary, event: Event) -> tuple[ClaimKind, int, str]:
        if event.kind == "gate_change":
            self.fail("conflict", "gate changes are not compensated", event_id=event.event_id, eligible=False)
        if event.kind == "hotel_overbooking":
            hotel = _hotel_catalog(self.data)[event.hotel_id or ""]
            return "hotel_walk", int(hotel["walk_compensation_eur"]), f"walk compensation of {hotel['name']}"
        policy = self.data.json("compensation_policy.json")["flight"]
        if event.reason in policy["extraordinary_reasons"]:
            self.fail(
                "conflict",
                f"{event.event_id} was caused by {event.reason}, an extraordinary circumstance: "
                "no compensation is due",
                event_id=event.event_id,
                eligible=False,
            )
        tt = self._tt()
        disrupted = self.state.flights[event.flight_id or ""]
        original = _times(tt, disrupted)
        leg = next(
            (
                self.state.legs[lid]
                for lid in itinerary.leg_ids
                if disrupted.flight_id
                in (self.state.legs[lid].flight_id, *self.state.legs[lid].previous_flight_ids)
            ),
            None,
        )
        if leg is None:
            self.fail(
                "invalid_argument",
                f"no leg of {itinerary.itinerary_id} was ever on {disrupted.flight_id}",
                field="event_id",
            )
        band = next(b for b in policy["bands"] if b["max_km"] is None or original.distance_km <= b["max_km"])
        if event.kind == "cancellation":
            if leg.flight_id == disrupted.flight_id:
                self.fail(
                    "invalid_transition",
                    f"leg {leg.leg_id} is still on the cancelled flight; rebook it before claiming "
                    "(the amount depends on the new arrival time)",
                    leg_id=leg.leg_id,
                    status="not_rebooked",
                )
            late = _minutes(
                _times(tt, self.state.flights[leg.flight_id]).arrival - original.scheduled_arrival
            )
            amount = int(band["amount_eur"])
            if late <= band["reroute_reduction_minutes"]:
                amount = amount * (100 - policy["reroute_reduction_pct"]) // 100
            basis = f"cancellation, {original.distance_km} km, rebooked arriving {late} min late"
            return "cancellation", amount, basis
        late = _minutes(_times(tt, self.state.flights[leg.flight_id]).arrival - original.scheduled_arrival)
        if late < policy["delay_threshold_minutes"]:
            self.fail(
                "conflict",
                f"leg {leg.leg_id} arrives {late} min late; compensation starts at "
                f"{policy['delay_threshold_minutes']} min",
                event_id=event.event_id,
                eligible=False,
                arrival_delay_minutes=late,
            )
        return "long_delay", int(band["amount_eur"]), f"arrival {late} min late, {original.distance_km} km"

    def _issues(self, itinerary: Itinerary) -> list[dict[str, Any]]:
        """What still needs action on an itinerary; empty when it is fully consistent."""
        issues: list[dict[str, Any]] = []
        legs = [self.state.legs[lid] for lid in itinerary.leg_ids]
        for i, leg in enumerate(legs):
            flight = self.state.flights[leg.flight_id]
            if leg.status == "missed":
                issues.append(
                    _issue("missed_flight", leg.leg_id, f"{leg.flight_id} left without the traveler")
                )
            elif leg.status == "confirmed" and flight.status == "cancelled":
                issues.append(_issue("cancelled_flight", leg.leg_id, f"{leg.flight_id} is cancelled"))
            elif leg.status == "confirmed" and i > 0:
                previous = legs[i - 1]
                usable = (
                    previous.status != "missed"
                    and self.state.flights[previous.flight_id].status != "cancelled"
                )
                short = self._connection_slack(previous, leg) if usable else None
                if short is not None:
                    detail = f"connection from {previous.leg_id} is {short} min short of the minimum"
                    issues.append(_issue("missed_connection", leg.leg_id, detail))
        for stay in sorted(self.state.stays.values(), key=lambda s: s.stay_id):
            if stay.itinerary_id == itinerary.itinerary_id:
                issues.extend(self._stay_issues(stay))
        for transfer in sorted(self.state.transfers.values(), key=lambda t: t.transfer_id):
            if transfer.itinerary_id != itinerary.itinerary_id:
                continue
            window = self._pickup_window(transfer)
            pickup = parse_time(transfer.pickup_at)
            if window is not None and not window[0] <= pickup <= window[1]:
                detail = f"pickup {transfer.pickup_at} is outside {iso(window[0])}–{iso(window[1])}"
                issues.append(_issue("transfer_time", transfer.transfer_id, detail))
        latest = max(
            (
                n.created_at
                for n in self.state.notifications.values()
                if n.itinerary_id == itinerary.itinerary_id
            ),
            default=None,
        )
        told = max(
            (m.sent_at for m in self.state.messages.values() if m.itinerary_id == itinerary.itinerary_id),
            default=None,
        )
        if latest is not None and (told is None or told <= latest):
            issues.append(
                _issue("traveler_not_notified", itinerary.itinerary_id, f"last disruption at {latest}")
            )
        return issues

    def _stay_issues(self, stay: Stay) -> list[dict[str, Any]]:
        if stay.status == "walked":
            return [_issue("hotel_walked", stay.stay_id, f"{stay.hotel_id} cannot honour the stay")]
        tt = self._tt()
        arrival_leg = self.state.legs[stay.arrival_leg_id]
        arrival_flight = self.state.flights[arrival_leg.flight_id]
        if arrival_leg.status == "missed" or arrival_flight.status == "cancelled":
            return []
        check_in = _times(tt, arrival_flight).arrival.date()
        check_out = date.fromisoformat(stay.check_in) + timedelta(days=stay.nights)
        if stay.departure_leg_id is not None:
            departure_flight = self.state.flights[self.state.legs[stay.departure_leg_id].flight_id]
            if departure_flight.status != "cancelled":
                check_out = _times(tt, departure_flight).departure.date()
        if (check_in.isoformat(), (check_out - check_in).days) != (stay.check_in, stay.nights):
            detail = f"stay should be {check_in.isoformat()} for {(check_out - check_in).days} night(s)"
            return [_issue("hotel_dates", stay.stay_id, detail)]
        return []

    def _stay_waived(self, stay: Stay) -> bool:
        for leg_id in (stay.arrival_leg_id, stay.departure_leg_id):
            if leg_id is None:
                continue
            leg = self.state.legs[leg_id]
            if leg.previous_flight_ids or leg.status == "missed":
                return True
            if self.state.flights[leg.flight_id].status != "scheduled":
                return True
        return False

    def _pickup_window(self, transfer: Transfer) -> tuple[datetime, datetime] | None:
        leg = self.state.legs[transfer.leg_id]
        flight = self.state.flights[leg.flight_id]
        if leg.status == "missed" or flight.status == "cancelled":
            return None
        arrival = _times(self._tt(), flight).arrival
        window = self.data.json("transfers.json")["pickup_window"]
        return (
            arrival + timedelta(minutes=window["min_after_arrival_minutes"]),
            arrival + timedelta(minutes=window["max_after_arrival_minutes"]),
        )

    def _move_rooms(self, stay: Stay, hotel_id: str, new_nights: list[str]) -> None:
        """Release the stay's current nights and take the new ones, all or nothing."""
        old_nights = set(_nights(stay.check_in, stay.nights))
        self._take_rooms(hotel_id, [n for n in new_nights if n not in old_nights])
        rooms = self.state.hotels[hotel_id].rooms_left
        for night in old_nights - set(new_nights):
            if night in rooms:
                rooms[night] += 1

    def _take_rooms(self, hotel_id: str, nights: list[str]) -> None:
        inventory = self.state.hotels.get(hotel_id)
        rooms = inventory.rooms_left if inventory is not None else {}
        full = [n for n in nights if rooms.get(n, 0) <= 0]
        if full:
            self.fail(
                "conflict",
                f"{hotel_id} has no room on {', '.join(full)}",
                hotel_id=hotel_id,
                full_nights=full,
            )
        for night in nights:
            rooms[night] -= 1

    # -- lookups and views -------------------------------------------------------------------------
    def _tt(self) -> dict[str, Mapping[str, str]]:
        return _timetable(self.data)

    def _itinerary(self, itinerary_id: str) -> Itinerary:
        itinerary = self.state.itineraries.get(itinerary_id)
        if itinerary is None:
            self.fail("not_found", f"no itinerary '{itinerary_id}'", itinerary_id=itinerary_id)
        return itinerary

    def _leg(self, leg_id: str) -> Leg:
        leg = self.state.legs.get(leg_id)
        if leg is None:
            self.fail("not_found", f"no leg '{leg_id}'", leg_id=leg_id)
        return leg

    def _flight(self, flight_id: str) -> Flight:
        flight = self.state.flights.get(flight_id)
        if flight is None:
            self.fail(
                "not_found",
                f"no operated flight '{flight_id}' (ids look like KL1293-20260313)",
                flight_id=flight_id,
            )
        return flight

    def _stay(self, stay_id: str) -> Stay:
        stay = self.state.stays.get(stay_id)
        if stay is None:
            self.fail("not_found", f"no hotel stay '{stay_id}'", stay_id=stay_id)
        return stay

    def _transfer(self, transfer_id: str) -> Transfer:
        transfer = self.state.transfers.get(transfer_id)
        if transfer is None:
            self.fail("not_found", f"no transfer '{transfer_id}'", transfer_id=transfer_id)
        return transfer

    def _previous_leg(self, leg: Leg) -> Leg | None:
        ids = self.state.itineraries[leg.itinerary_id].leg_ids
        index = ids.index(leg.leg_id)
        return self.state.legs[ids[index - 1]] if index > 0 else None

    def _next_leg(self, leg: Leg) -> Leg | None:
        ids = self.state.itineraries[leg.itinerary_id].leg_ids
        index = ids.index(leg.leg_id)
        return self.state.legs[ids[index + 1]] if index + 1 < len(ids) else None

    def _parse_date(self, value: str, field: str) -> str:
        try:
            day = date.fromisoformat(value.strip())
        except ValueError:
            self.fail(
                "invalid_argument", f"{field} must be a date like 2026-03-13, got '{value}'", field=field
            )
        first = self.clock.base_time.date()
        last = first + timedelta(days=HORIZON_DAYS - 1)
        if not first <= day <= last:
            self.fail(
                "invalid_argument",
                f"{field} must be between {first.isoformat()} and {last.isoformat()}",
                field=field,
            )
        return day.isoformat()

    def _parse_time(self, value: str, field: str) -> datetime:
        try:
            return parse_time(value.strip())
        except ValueError:
            self.fail(
                "invalid_argument", f"{field} must be an ISO 8601 time like 2026-03-13T14:45:00Z", field=field
            )

    def _stay_nights(self, check_in: str, nights: int) -> list[str]:
        day = self._parse_date(check_in, "check_in")
        if not 1 <= nights <= MAX_NIGHTS:
            self.fail("invalid_argument", f"nights must be between 1 and {MAX_NIGHTS}", field="nights")
        stay_nights = _nights(day, nights)
        last = (self.clock.base_time.date() + timedelta(days=HORIZON_DAYS - 1)).isoformat()
        if stay_nights[-1] > last:
            self.fail(
                "invalid_argument", f"hotel nights can be booked up to the night of {last}", field="nights"
            )
        return stay_nights

    def _route(self, legs: list[Leg]) -> str:
        tt = self._tt()
        stops = [_times(tt, self.state.flights[leg.flight_id]) for leg in legs]
        return "→".join([stops[0].origin, *(s.destination for s in stops)]) if stops else ""

    def _flight_view(
        self, flight: Flight, times: FlightTimes, alliances: Mapping[str, str]
    ) -> dict[str, Any]:
        return {
            "flight_id": flight.flight_id,
            "flight_no": flight.flight_no,
            "carrier": times.carrier,
            "alliance": alliances[times.carrier],
            "origin": times.origin,
            "destination": times.destination,
            "scheduled_departure": iso(times.scheduled_departure),
            "scheduled_arrival": iso(times.scheduled_arrival),
            "estimated_departure": iso(times.departure),
            "estimated_arrival": iso(times.arrival),
            "status": flight.status,
            "seats_left": flight.seats_left,
        }

    def _leg_view(self, leg: Leg) -> dict[str, Any]:
        flight = self.state.flights[leg.flight_id]
        view = self._flight_view(flight, _times(self._tt(), flight), _alliances(self.data))
        del view["seats_left"]
        flight_status = view.pop("status")
        return {
            "leg_id": leg.leg_id,
            "leg_status": leg.status,
            **view,
            "flight_status": flight_status,
            "gate": flight.gate or "TBA",
            "delay_minutes": flight.delay_minutes,
            "delay_reason": flight.delay_reason,
            "previous_flight_ids": list(leg.previous_flight_ids),
            "change_fees_eur": leg.change_fees_eur,
        }

    def _stay_view(self, stay: Stay) -> dict[str, Any]:
        info = _hotel_catalog(self.data)[stay.hotel_id]
        return {**stay.model_dump(), "hotel_name": info["name"], "city": info["city"]}

    def _transfer_view(self, transfer: Transfer) -> dict[str, Any]:
        lead = timedelta(minutes=self.data.json("transfers.json")["dispatch_lead_minutes"])
        window = self._pickup_window(transfer)
        return {
            **transfer.model_dump(),
            "dispatched": self.now() >= parse_time(transfer.pickup_at) - lead,
            "allowed_pickup": [iso(window[0]), iso(window[1])] if window else None,
        }

    # -- initial states ----------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """``5 * size`` travelers (two share a name, one travels with a colleague) on 1–2 leg trips
        with hotel stays and transfers, the full three-day timetable, and ``8 * size`` disruptions
        scheduled over the first three hours."""
        from .generate import _Generator

        repo = data if data is not None else (cls.package.data if cls.package else Repository(None))
        base = cls.package.clock.base_time if cls.package else DEFAULT_BASE_TIME
        return Initial(state=_Generator(random.Random(seed), repo, base).build(max(1, size)))
