"""The State of :class:`~.env.RideshareDispatch`: riders, drivers, requests, trips and fares.

The explicit state space S of the dispatch desk: the models, the zone ids they may name (checked
against ``data/zones.json``) and the links between records that the tools follow without looking.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from envcraft import IsoTime, Repository, StateModel, dangling, invariant, misfiled

VehicleClass = Literal["economy", "comfort", "premium"]
Feature = Literal["wheelchair_ramp", "child_seat", "pet_friendly"]
DriverStatus = Literal["available", "held", "en_route", "on_trip", "offline"]
RequestStatus = Literal["open", "proposed", "matched", "in_progress", "completed", "cancelled", "expired"]
TripStatus = Literal[
    "proposed",
    "driver_declined",
    "rider_declined",
    "lapsed",
    "dispatched",
    "in_progress",
    "completed",
    "cancelled",
]
Party = Literal["rider", "driver", "dispatcher"]


MaybeTime = IsoTime | Literal[""]  # "" until it happens
REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


@cache
def _zone_ids() -> tuple[str, ...]:
    return tuple(z["id"] for z in REFERENCE.json("zones.json")["zones"])


def _known_zone(zone_id: str) -> str:
    """Routes, surge and airport surcharges are looked up by zone: it must be in data/zones.json."""
    if zone_id not in _zone_ids():
        raise ValueError(f"unknown zone {zone_id!r}; zones: {', '.join(_zone_ids())}")
    return zone_id


ZoneId = Annotated[str, AfterValidator(_known_zone)]


class Vehicle(StateModel):
    plate: str
    model: str
    vehicle_class: VehicleClass
    capacity: int = Field(gt=0)
    features: list[Feature] = []


class DriverPrefs(StateModel):
    """What a driver accepts; proposals outside these are declined (deterministically)."""

    max_pickup_minutes: int
    min_fare_cents: int = 0
    avoid_dropoff_zones: list[str] = []
    min_rider_rating: float = 0.0


class Driver(StateModel):
    driver_id: str
    name: str
    zone: ZoneId
    vehicle: Vehicle
    rating: float
    rating_count: int = Field(ge=0)  # ratings are averaged in: rating * count / (count + 1)
    shift_end: IsoTime
    permits: list[str] = []
    prefs: DriverPrefs
    status: DriverStatus = "available"
    active_trip_id: str = ""
    idle_since: IsoTime
    trips_completed: int = 0
    earnings_cents: int = 0
    cancellations: int = 0


class Rider(StateModel):
    rider_id: str
    name: str
    phone: str
    rating: float
    rating_count: int = Field(ge=0)
    min_driver_rating: float = 0.0
    blocked_drivers: list[str] = []


class Request(StateModel):
    request_id: str
    rider_id: str
    pickup_zone: ZoneId
    dropoff_zone: ZoneId
    party_size: int
    needs: list[Feature] = []
    vehicle_class: VehicleClass
    max_wait_minutes: int = Field(gt=0)  # the pickup score divides by it
    max_fare_cents: int = 0  # 0: no cap
    requested_at: IsoTime
    status: RequestStatus = "open"
    trip_id: str = ""  # the trip currently serving the request
    declined_by: list[str] = []  # drivers excluded from this request (declined, cancelled, refused)


class Fare(StateModel):
    vehicle_class: VehicleClass
    distance_km: float
    duration_minutes: int
    base_cents: int
    distance_cents: int
    time_cents: int
    subtotal_cents: int
    surge_multiplier: float
    surge_cents: int
    booking_fee_cents: int
    airport_surcharge_cents: int
    waiting_cents: int = 0
    tolls_cents: int = 0
    total_cents: int
    driver_payout_cents: int


class Trip(StateModel):
    trip_id: str
    request_id: str
    driver_id: str
    status: TripStatus
    proposed_at: IsoTime
    hold_until: MaybeTime = ""
    pickup_eta_at: MaybeTime = ""
    est_dropoff_at: MaybeTime = ""
    score: float = 0.0
    quoted_fare_cents: int = 0
    decline_reason: str = ""
    confirmed_at: MaybeTime = ""
    started_at: MaybeTime = ""
    completed_at: MaybeTime = ""
    fare: Fare | None = None
    cancelled_by: str = ""
    cancel_reason: str = ""
    cancellation_fee_cents: int = 0
    driver_stars: int = 0  # given by the rider to the driver
    rider_stars: int = 0  # given by the driver to the rider
    rider_comment: str = ""
    driver_comment: str = ""


class DispatchState(StateModel):
    riders: dict[str, Rider] = {}
    drivers: dict[str, Driver] = {}
    requests: dict[str, Request] = {}
    trips: dict[str, Trip] = {}
    next_trip_number: int = 1

    # Each link is checked per record when a call touches it (envcraft.core.invariants): the
    # clock sweep and every view follow these links without looking.
    @invariant("riders")
    def _rider_filed(self, key: str, rider: Rider) -> None:
        _refuse(misfiled({key: rider}, "rider_id"))

    @invariant("requests")
    def _request_names_its_rider_and_trip(self, key: str, req: Request) -> None:
        """A request names its rider; one in a trip's hands (or naming a trip) names a known trip."""
        busy = req.status in ("proposed", "matched", "in_progress")
        _refuse(
            [
                *misfiled({key: req}, "request_id"),
                *dangling(req.request_id, "rider", [req.rider_id], self.riders),
                *dangling(req.request_id, "trip", [req.trip_id] if busy or req.trip_id else [], self.trips),
            ]
        )

    @invariant("drivers")
    def _driver_names_its_trip(self, key: str, driver: Driver) -> None:
        busy = driver.status in ("held", "en_route", "on_trip")
        trips = [driver.active_trip_id] if busy or driver.active_trip_id else []
        _refuse(
            [*misfiled({key: driver}, "driver_id"), *dangling(driver.driver_id, "trip", trips, self.trips)]
        )

    @invariant("trips")
    def _trip_is_its_request_and_drivers(self, key: str, trip: Trip) -> None:
        """A trip names its request and driver; a proposal has a hold time; a live trip is the
        one its request and driver name."""
        problems = [
            *misfiled({key: trip}, "trip_id"),
            *dangling(trip.trip_id, "request", [trip.request_id], self.requests),
            *dangling(trip.trip_id, "driver", [trip.driver_id], self.drivers),
        ]
        if trip.status == "proposed" and not trip.hold_until:
            problems.append(f"{trip.trip_id} is proposed with no hold time")
        holders = {  # what the trip's request and driver say their trip is (checked above when absent)
            getattr(self.requests.get(trip.request_id), "trip_id", trip.trip_id),
            getattr(self.drivers.get(trip.driver_id), "active_trip_id", trip.trip_id),
        }
        if trip.status in ("proposed", "dispatched", "in_progress") and holders != {trip.trip_id}:
            problems.append(f"{trip.trip_id} is {trip.status} but not its request's and driver's trip")
        _refuse(problems)


def _refuse(problems: list[str]) -> None:
    """Refuse the state with every problem one record has (the messages the desk always gave)."""
    if problems:
        raise ValueError("; ".join(problems))
