"""The seeded S0 generator behind :meth:`~.env.ItineraryRebooking.generate`.

Itinerary rebooking (travel disruption desk). Runs once per initial state (seed, size), never
during a tool call; it builds the State models of ``state.py`` with the rules of ``rules.py``.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Literal

from envcraft import Repository, iso

from .rules import HORIZON_DAYS, airport_info, flight_times, night_dates, whole_minutes
from .state import (
    Event,
    EventKind,
    FareClass,
    Flight,
    HotelInventory,
    Itinerary,
    ItineraryState,
    Leg,
    Stay,
    Transfer,
    Traveler,
    hotel_catalog,
    timetable_rows,
)

# -- the generator ------------------------------------------------------------------------------------
FIRST_NAMES = (
    "Sofia", "Liam", "Amelie", "Noah", "Ines", "Mateo", "Freya", "Jonas", "Aisha", "Lucas",
    "Mila", "Oskar", "Leila", "Tomas", "Hanna", "Rafael", "Nora", "Emil", "Chiara", "Daniel",
)  # fmt: skip
LAST_NAMES = (
    "Marquez", "van Dijk", "Kowalczyk", "Brennan", "Lindholm", "Rossi", "Oyelaran", "Schneider",
    "Haddad", "Costa", "Nakamura", "Dubois", "Fischer", "Moreau", "Jensen", "Novak",
)  # fmt: skip
DELAY_REASONS = ("technical", "late_inbound_aircraft", "crew_shortage", "air_traffic_control", "weather")
CANCEL_REASONS = ("technical", "crew_shortage", "weather")
SEAT_CHOICES = (0, 0, 1, 1, 2, 3, 4, 5, 7, 9, 12)
FARE_CLASSES: tuple[FareClass, ...] = ("flex", "standard", "saver", "saver")
RATES: tuple[Literal["flexible", "non_refundable"], ...] = ("flexible", "non_refundable")


FIRST_MESSAGE = 501


class Generator:
    """Builds a consistent S0: every trip connects, every stay and transfer fits its flights."""

    def __init__(self, rng: random.Random, data: Repository, base: datetime) -> None:
        self.rng, self.data, self.base = rng, data, base
        self.tt = timetable_rows(data)
        self.airports = airport_info(data)
        self.days = [base.date() + timedelta(days=i) for i in range(HORIZON_DAYS)]
        # messages to travelers are numbered from MSG-0501: a task that also opens a mailbox
        # (mail_triage numbers its messages MSG-0001 on) never holds two records of one id
        self.state = ItineraryState(next_message=FIRST_MESSAGE)

    def build(self, size: int) -> ItineraryState:
        self._flights()
        self._hotels()
        names = self._names(5 * size)
        for i, name in enumerate(names):
            self._trip(f"TRV-{101 + i}", name)
        self._companion(f"TRV-{101 + len(names)}")
        self._disruptions(size)
        self._spare_rooms()
        return self.state

    def _flights(self) -> None:
        first = self.days[0]
        for row in sorted(self.tt.values(), key=lambda r: r["flight_no"]):
            for day in self.days:
                fid = f"{row['flight_no']}-{day:%Y%m%d}"
                gate = f"{self.rng.choice('ABCDEFG')}{self.rng.randint(1, 40)}" if day == first else ""
                self.state.flights[fid] = Flight(
                    flight_id=fid,
                    gate=gate,
                    seats_left=self.rng.choice(SEAT_CHOICES),
                )

    def _hotels(self) -> None:
        for hotel_id in sorted(hotel_catalog(self.data)):
            rooms = {day.isoformat(): self.rng.randint(0, 4) for day in self.days}
            self.state.hotels[hotel_id] = HotelInventory(hotel_id=hotel_id, rooms_left=rooms)

    def _names(self, count: int) -> list[str]:
        names = [f"{self.rng.choice(FIRST_NAMES)} {self.rng.choice(LAST_NAMES)}" for _ in range(count)]
        if count >= 2:
            names[-1] = names[0]  # two different travelers with the same name
        return names

    def _traveler(self, traveler_id: str, name: str) -> Traveler:
        handle = name.lower().replace(" ", ".")
        email = f"{handle}@{self.rng.choice(('northwind.example', 'contoso.example', 'fabrikam.example'))}"
        if any(t.email == email for t in self.state.travelers.values()):
            email = f"{handle}{traveler_id[-2:]}@{email.split('@')[1]}"
        has_phone = self.rng.random() < 0.8
        traveler = Traveler(
            traveler_id=traveler_id,
            name=name,
            email=email,
            phone=f"+{self.rng.choice((31, 33, 34, 44, 49, 351))}{self.rng.randint(600000000, 699999999)}"
            if has_phone
            else None,
            sms_opt_in=has_phone and self.rng.random() < 0.6,
        )
        self.state.travelers[traveler_id] = traveler
        return traveler

    def _trip(self, traveler_id: str, name: str) -> None:
        for _ in range(50):
            home, away = self.rng.sample(sorted(self.airports), 2)
            nights = self.rng.choice((1, 2, 2))
            outbound = self._route(home, away, self.days[0], "08:00", "12:00")
            back = self._route(away, home, self.days[nights], "09:00", "17:30")
            if outbound and back:
                break
        else:  # pragma: no cover - the timetable always has routes
            raise RuntimeError("no trip found")
        self._traveler(traveler_id, name)
        self._book(traveler_id, outbound, back, nights, self.rng.choice(FARE_CLASSES))

    def _companion(self, traveler_id: str) -> None:
        """A colleague on exactly the same flights as the first traveler: one event, two notifications."""
        first = self.state.itineraries["ITN-4001"]
        flights = [self.state.legs[lid].flight_id for lid in first.leg_ids]
        stay = next(s for s in self.state.stays.values() if s.itinerary_id == first.itinerary_id)
        taken = {t.name for t in self.state.travelers.values()}
        name = next(
            n
            for n in (f"{self.rng.choice(FIRST_NAMES)} {self.rng.choice(LAST_NAMES)}" for _ in range(100))
            if n not in taken
        )
        self._traveler(traveler_id, name)
        split = first.leg_ids.index(stay.departure_leg_id) if stay.departure_leg_id else len(flights)
        self._book(traveler_id, flights[:split], flights[split:], stay.nights, first.fare_class)

    def _route(
        self, origin: str, destination: str, day: date, earliest: str, latest: str
    ) -> list[str] | None:
        """Flight ids of a direct flight or a one-stop connection via a hub, leaving in the window.

        Connections are the tightest onward flight, at most 150 minutes beyond the minimum
        connection time; when both kinds exist a connection is preferred (more to disrupt).
        """
        rows = sorted(self.tt.values(), key=lambda r: (r["departs"], r["flight_no"]))
        stamp = f"{day:%Y%m%d}"

        def leaving(a: str, b: str, lo: str, hi: str) -> list[Mapping[str, str]]:
            return [
                r for r in rows if r["origin"] == a and r["destination"] == b and lo <= r["departs"] <= hi
            ]

        direct = [[r] for r in leaving(origin, destination, earliest, latest)]
        connecting: list[list[Mapping[str, str]]] = []
        for hub, info in sorted(self.airports.items()):
            if not info["hub"] or hub in (origin, destination):
                continue
            for first in leaving(origin, hub, earliest, latest):
                ready = (
                    _clock(first["departs"]) + int(first["duration_minutes"]) + info["min_connection_minutes"]
                )
                onward = [
                    r
                    for r in leaving(hub, destination, "00:00", "23:59")
                    if ready <= _clock(r["departs"]) <= ready + 150
                ]
                if onward:
                    connecting.append([first, onward[0]])
        options = connecting if connecting and (not direct or self.rng.random() < 0.6) else direct
        if not options:
            return None
        return [f"{r['flight_no']}-{stamp}" for r in self.rng.choice(options)]

    def _book(
        self, traveler_id: str, outbound: list[str], back: list[str], nights: int, fare: FareClass
    ) -> None:
        number = 4001 + len(self.state.itineraries)
        itinerary_id = f"ITN-{number}"
        leg_ids = []
        for flight_id in outbound + back:
            leg_id = f"LEG-{len(self.state.legs) + 1:04d}"
            self.state.legs[leg_id] = Leg(leg_id=leg_id, itinerary_id=itinerary_id, flight_id=flight_id)
            leg_ids.append(leg_id)
        reference = "".join(self.rng.choice(string.ascii_uppercase + "23456789") for _ in range(6))
        self.state.itineraries[itinerary_id] = Itinerary(
            itinerary_id=itinerary_id,
            reference=reference,
            traveler_id=traveler_id,
            fare_class=fare,
            leg_ids=leg_ids,
        )
        arrival_leg = leg_ids[len(outbound) - 1]
        arrival = flight_times(self.tt, self.state.flights[outbound[-1]])
        city = arrival.destination
        hotels = [h for h, info in sorted(hotel_catalog(self.data).items()) if info["city"] == city]
        stay_id = f"STY-{len(self.state.stays) + 1:04d}"
        self.state.stays[stay_id] = Stay(
            stay_id=stay_id,
            itinerary_id=itinerary_id,
            hotel_id=self.rng.choice(hotels),
            check_in=arrival.arrival.date().isoformat(),
            nights=nights,
            rate=self.rng.choice(RATES),
            arrival_leg_id=arrival_leg,
            departure_leg_id=leg_ids[len(outbound)] if back else None,
        )
        if self.rng.random() < 0.75:
            provider = next(p for p in self.data.json("transfers.json")["providers"] if p["airport"] == city)
            transfer_id = f"TRF-{len(self.state.transfers) + 1:04d}"
            pickup = arrival.arrival + timedelta(minutes=self.rng.choice((30, 35, 40, 45)))
            self.state.transfers[transfer_id] = Transfer(
                transfer_id=transfer_id,
                itinerary_id=itinerary_id,
                leg_id=arrival_leg,
                provider=provider["name"],
                pickup_at=iso(pickup),
            )

    def _spare_rooms(self) -> None:
        """Keep every disruption fixable: a stay's hotel has a room on each night it could move to,
        and an overbooked stay has another hotel in its city with rooms for all its nights."""
        catalog = hotel_catalog(self.data)
        for stay in sorted(self.state.stays.values(), key=lambda s: s.stay_id):
            rooms = self.state.hotels[stay.hotel_id].rooms_left
            for night in rooms:
                rooms[night] = max(1, rooms[night])
        for event in sorted(self.state.events.values(), key=lambda e: e.event_id):
            if event.kind != "hotel_overbooking":
                continue
            stay = self.state.stays[event.stay_id or ""]
            city = catalog[stay.hotel_id]["city"]
            other = self.rng.choice(
                sorted(h for h, i in catalog.items() if i["city"] == city and h != stay.hotel_id)
            )
            rooms = self.state.hotels[other].rooms_left
            for night in night_dates(stay.check_in, stay.nights):
                rooms[night] = max(1, rooms[night])

    def _disruptions(self, size: int) -> None:
        kinds = ["misconnect", "cancellation", "long_delay", "arrival_delay", "gate_change", "overbooking"]
        itineraries = sorted(self.state.itineraries)
        self.rng.shuffle(itineraries)
        for kind, itinerary_id in zip(kinds * size, itineraries, strict=False):
            self._disrupt(kind, self.state.itineraries[itinerary_id])
        booked = {leg.flight_id for leg in self.state.legs.values()}
        quiet = sorted(
            f.flight_id
            for f in self.state.flights.values()
            if f.date == self.days[0].isoformat() and f.flight_id not in booked
        )
        for flight_id in self.rng.sample(quiet, 2 * size):
            if self.rng.random() < 0.5:
                self._event(
                    "delay", flight_id, delay=self.rng.randint(25, 90), reason=self.rng.choice(DELAY_REASONS)
                )
            else:
                self._event(
                    "gate_change", flight_id, gate=f"{self.rng.choice('ABCDEFG')}{self.rng.randint(41, 60)}"
                )

    def _disrupt(self, kind: str, itinerary: Itinerary) -> None:
        """One disruption of ``kind`` on a flight of this trip that no other event targets yet."""
        if kind == "overbooking":
            stay = next(s for s in self.state.stays.values() if s.itinerary_id == itinerary.itinerary_id)
            self._event("hotel_overbooking", None, stay_id=stay.stay_id, hotel_id=stay.hotel_id)
            return
        targeted = {e.flight_id for e in self.state.events.values()}
        legs = [self.state.legs[lid] for lid in itinerary.leg_ids]
        first_day = self.days[0].isoformat()
        today = [
            g
            for g in legs
            if self.state.flights[g.flight_id].date == first_day and g.flight_id not in targeted
        ]
        if not today:
            return
        connects = today[0] is legs[0] and len(today) >= 2 and today[1] is legs[1]
        if kind == "misconnect" and connects:
            first, second = legs[0], legs[1]
            a = flight_times(self.tt, self.state.flights[first.flight_id])
            b = flight_times(self.tt, self.state.flights[second.flight_id])
            mct = self.airports[b.origin]["min_connection_minutes"]
            slack = whole_minutes(b.departure - a.arrival) - mct
            delay = slack + self.rng.randint(10, 50)
            self._event("delay", first.flight_id, delay=delay, reason=self.rng.choice(DELAY_REASONS))
        elif kind == "cancellation":
            self._event(
                "cancellation", self.rng.choice(today).flight_id, reason=self.rng.choice(CANCEL_REASONS)
            )
        elif kind == "long_delay":
            reason = self.rng.choice(("technical", "late_inbound_aircraft", "weather"))
            self._event("delay", today[-1].flight_id, delay=self.rng.randint(185, 260), reason=reason)
        elif kind == "gate_change":
            gate = f"{self.rng.choice('ABCDEFG')}{self.rng.randint(41, 60)}"
            self._event("gate_change", self.rng.choice(today).flight_id, gate=gate)
        else:  # arrival_delay, and misconnect on a trip without a same-day connection
            reason = self.rng.choice(DELAY_REASONS)
            self._event("delay", today[-1].flight_id, delay=self.rng.randint(25, 55), reason=reason)

    def _event(
        self,
        kind: EventKind,
        flight_id: str | None,
        *,
        delay: int = 0,
        reason: str = "",
        gate: str = "",
        stay_id: str | None = None,
        hotel_id: str | None = None,
    ) -> None:
        fire = self.base + timedelta(minutes=self.rng.choice((-20, 0, 10, 25, 40, 60, 85, 110, 140)))
        if flight_id is not None:
            departure = flight_times(self.tt, self.state.flights[flight_id]).scheduled_departure
            fire = min(fire, departure - timedelta(minutes=75))
        event_id = f"EVT-{len(self.state.events) + 1:03d}"
        self.state.events[event_id] = Event(
            event_id=event_id,
            kind=kind,
            fire_at=iso(fire),
            flight_id=flight_id,
            stay_id=stay_id,
            hotel_id=hotel_id,
            delay_minutes=delay,
            new_gate=gate,
            reason=reason,
        )


def _clock(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)
