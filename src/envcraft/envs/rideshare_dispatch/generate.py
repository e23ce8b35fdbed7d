"""The seeded S0 generator behind :meth:`~.env.RideshareDispatch.generate`.

Rideshare dispatch (rider requests, driver matching, trips and fares). Runs once per initial
state (seed, size), never during a tool call; it builds the State models of ``state.py`` with the
rules of ``rules.py`` (routes and fares), so S0 is priced as the tools price.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from envcraft import Repository, iso, parse_time

from .rules import compute_fare, routes
from .state import DispatchState, Driver, DriverPrefs, Request, Rider, Trip, TripStatus, Vehicle


class Generator:
    """Builds a consistent evening-peak city; every random choice comes from one seeded rng."""

    def __init__(self, rng: random.Random, size: int, data: Repository, base: datetime) -> None:
        self.rng = rng
        self.size = size
        self.data = data
        self.base = base
        self.zones = [z["id"] for z in data.json("zones.json")["zones"]]
        self.routes = routes(data.json("zones.json"))
        self.names = data.json("names.json")
        self.state = DispatchState(next_trip_number=40100 + rng.randrange(0, 800))
        self.used: set[str] = set()

    def build(self) -> DispatchState:
        for index in range(14 * self.size):
            self._driver(index)
        for index in range(12 * self.size):
            self._rider(index)
        riders = list(self.state.riders.values())
        self.rng.shuffle(riders)
        in_flight = 2 * self.size
        history = 3 * self.size
        for rider in riders[: in_flight + history]:
            self._past_or_active_trip(rider, active=len(self.state.trips) < in_flight)
        for rider in riders[in_flight + history :]:
            self._open_request(rider)
        return self.state

    # -- entities --------------------------------------------------------------------------
    def _id(self, prefix: str, low: int, high: int) -> str:
        while True:
            candidate = f"{prefix}-{self.rng.randrange(low, high)}"
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate

    def _name(self, index: int, taken: list[str]) -> str:
        # A near-duplicate: the fourth person of each kind shares the first one's full name.
        if index == 3 and taken:
            return taken[0]
        while True:
            name = f"{self.rng.choice(self.names['first_names'])} {self.rng.choice(self.names['last_names'])}"
            if name not in taken:
                return name

    def _at(self, minutes: float) -> str:
        return iso(self.base + timedelta(minutes=minutes))

    def _driver(self, index: int) -> None:
        rng = self.rng
        kind = (
            ("van", "premium", "comfort", "comfort")[index]
            if index < 4
            else rng.choice(("economy", "economy", "economy", "comfort", "comfort", "premium", "van"))
        )
        vehicle_class = (
            "comfort" if kind == "van" and rng.random() < 0.3 else ("economy" if kind == "van" else kind)
        )
        capacity = 6 if kind == "van" else 4
        features: list[str] = []
        if kind == "van" and (index == 0 or rng.random() < 0.5):
            features.append("wheelchair_ramp")
        if rng.random() < 0.35:
            features.append("child_seat")
        if rng.random() < 0.4:
            features.append("pet_friendly")
        taken = [d.name for d in self.state.drivers.values()]
        driver_id = self._id("DRV", 100, 1000)
        avoid = rng.choice(([], [], [], ["Z-AIR"], ["Z-NGT"], ["Z-STD"]))
        self.state.drivers[driver_id] = Driver(
            driver_id=driver_id,
            name=self._name(index, taken),
            zone=rng.choice(self.zones),
            vehicle=Vehicle(
                plate=self._plate(),
                model=rng.choice(self.names["vehicle_models"][kind]),
                vehicle_class=vehicle_class,
                capacity=capacity,
                features=features,
            ),
            rating=round(rng.uniform(4.55, 5.0) if index % 7 else rng.uniform(4.2, 4.6), 2),
            rating_count=rng.randrange(20, 900),
            shift_end=self._at(rng.choice((25, 40, 60, 90, 120, 180, 240))),
            permits=["airport"] if rng.random() < 0.45 else [],
            prefs=DriverPrefs(
                max_pickup_minutes=rng.choice((10, 12, 15, 20, 25)),
                min_fare_cents=rng.choice((0, 0, 0, 0, 1500)),
                avoid_dropoff_zones=avoid,
                min_rider_rating=rng.choice((0.0, 0.0, 0.0, 4.6)),
            ),
            idle_since=self._at(-rng.randrange(0, 80)),
        )

    def _plate(self) -> str:
        letters = "".join(self.rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3))
        return f"{self.rng.randrange(1, 9)}{letters}{self.rng.randrange(100, 1000)}"

    def _rider(self, index: int) -> None:
        rng = self.rng
        taken = [r.name for r in self.state.riders.values()]
        rider_id = self._id("RID", 1000, 10000)
        drivers = sorted(self.state.drivers)
        self.state.riders[rider_id] = Rider(
            rider_id=rider_id,
            name=self._name(index, taken),
            phone=f"+1-555-{rng.randrange(100, 1000)}-{rng.randrange(1000, 10000)}",
            rating=round(rng.uniform(4.4, 5.0), 2),
            rating_count=rng.randrange(1, 300),
            min_driver_rating=rng.choice((0.0, 0.0, 0.0, 0.0, 4.7)),
            blocked_drivers=[rng.choice(drivers)] if rng.random() < 0.2 else [],
        )

    def _request(self, rider: Rider, requested_minutes: float) -> Request:
        rng = self.rng
        pickup = rng.choice(self.zones)
        dropoff = rng.choice([z for z in self.zones if z != pickup])
        party = rng.choice((1, 1, 1, 1, 2, 2, 3, 4, 5))
        needs: list[str] = []
        if rng.random() < 0.08:
            needs.append("wheelchair_ramp")
        if rng.random() < 0.1:
            needs.append("child_seat")
        if rng.random() < 0.08:
            needs.append("pet_friendly")
        vehicle_class = rng.choice(("economy",) * 5 + ("comfort", "comfort", "premium"))
        minutes, km = self.routes[(pickup, dropoff)]
        quote = compute_fare(self.data, pickup, dropoff, vehicle_class, minutes, km)
        cap = quote.total_cents + rng.choice((-300, 200, 600)) if rng.random() < 0.2 else 0
        return Request(
            request_id=self._id("REQ", 2000, 10000),
            rider_id=rider.rider_id,
            pickup_zone=pickup,
            dropoff_zone=dropoff,
            party_size=party,
            needs=needs,
            vehicle_class=vehicle_class,
            max_wait_minutes=rng.choice((15, 20, 25, 30, 35)),
            max_fare_cents=max(0, cap),
            requested_at=self._at(requested_minutes),
        )

    def _open_request(self, rider: Rider) -> None:
        req = self._request(rider, -self.rng.randrange(0, 5))
        self.state.requests[req.request_id] = req

    def _past_or_active_trip(self, rider: Rider, active: bool) -> None:
        """A trip already under way (dispatched or in progress) or finished earlier today."""
        rng = self.rng
        free = sorted(
            (d for d in self.state.drivers.values() if d.status == "available"), key=lambda d: d.driver_id
        )
        driver = rng.choice(free)
        req = self._request(rider, 0)
        req.needs, req.vehicle_class, req.max_fare_cents, req.max_wait_minutes = [], "economy", 0, 30
        req.party_size = min(req.party_size, 4)
        eta, _ = self.routes[(driver.zone, req.pickup_zone)]
        minutes, km = self.routes[(req.pickup_zone, req.dropoff_zone)]
        status: TripStatus = rng.choice(("dispatched", "in_progress")) if active else "completed"
        if status == "dispatched":
            confirmed = self.base - timedelta(minutes=1)
            pickup = confirmed + timedelta(minutes=eta)
        elif status == "in_progress":
            pickup = self.base - timedelta(minutes=rng.randrange(1, min(minutes, 6) + 1))
            confirmed = pickup - timedelta(minutes=eta)
        else:
            pickup = self.base - timedelta(minutes=rng.randrange(20, 150) + minutes)
            confirmed = pickup - timedelta(minutes=eta)
        dropoff = pickup + timedelta(minutes=minutes)
        proposed = confirmed - timedelta(minutes=1)
        req.requested_at = iso(proposed - timedelta(minutes=1))
        trip = Trip(
            trip_id=f"TRP-{self.state.next_trip_number}",
            request_id=req.request_id,
            driver_id=driver.driver_id,
            status=status,
            proposed_at=iso(proposed),
            hold_until=iso(proposed + timedelta(minutes=3)),
            confirmed_at=iso(confirmed),
            pickup_eta_at=iso(pickup),
            est_dropoff_at=iso(dropoff),
            quoted_fare_cents=compute_fare(
                self.data, req.pickup_zone, req.dropoff_zone, "economy", minutes, km
            ).total_cents,
        )
        self.state.next_trip_number += 1
        if active:
            trip.started_at = iso(pickup) if status == "in_progress" else ""
            req.status = "matched" if status == "dispatched" else "in_progress"
            req.trip_id = trip.trip_id
            driver.status = "en_route" if status == "dispatched" else "on_trip"
            driver.active_trip_id = trip.trip_id
            if parse_time(driver.shift_end) < dropoff:
                driver.shift_end = iso(dropoff + timedelta(minutes=30))
        else:
            trip.started_at, trip.completed_at = iso(pickup), iso(dropoff)
            trip.fare = compute_fare(
                self.data, req.pickup_zone, req.dropoff_zone, "economy", minutes, km, rng.choice((0, 0, 5))
            )
            trip.driver_stars = rng.choice((0, 4, 5, 5))
            req.status = "completed"
            driver.trips_completed += 1
            driver.earnings_cents += trip.fare.driver_payout_cents
            driver.idle_since = max(driver.idle_since, trip.completed_at)
        self.state.requests[req.request_id] = req
        self.state.trips[trip.trip_id] = trip
