"""Rideshare dispatch: match rider requests to drivers, then run each trip to its fare and ratings."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from envcraft.core import Entity, Environment, Initial, Repository, StateModel, dangling, misfiled, tool
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoTime, iso, parse_time

from .rules import CLASS_ORDER, Assessment, Check, _average, _clamp, _minutes, _round, _routes

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

    @model_validator(mode="after")
    def _links_resolve(self, info: ValidationInfo) -> DispatchState:
        """Requests name their rider, trips their request and driver, a driver or request in a
        trip's hands names that trip and a live trip is the one its request and driver name (a
        proposal also needs its hold time): the clock sweep and every view follow these links."""
        if info.field_name is not None:  # one assignment inside a tool: checked when the state loads
            return self
        problems = [
            *misfiled(self.riders, "rider_id"),
            *misfiled(self.drivers, "driver_id"),
            *misfiled(self.requests, "request_id"),
            *misfiled(self.trips, "trip_id"),
        ]
        for req in self.requests.values():
            problems += dangling(req.request_id, "rider", [req.rider_id], self.riders)
            busy = req.status in ("proposed", "matched", "in_progress")
            problems += dangling(
                req.request_id, "trip", [req.trip_id] if busy or req.trip_id else [], self.trips
            )
        for driver in self.drivers.values():
            busy = driver.status in ("held", "en_route", "on_trip")
            trips = [driver.active_trip_id] if busy or driver.active_trip_id else []
            problems += dangling(driver.driver_id, "trip", trips, self.trips)
        for trip in self.trips.values():
            problems += dangling(trip.trip_id, "request", [trip.request_id], self.requests)
            problems += dangling(trip.trip_id, "driver", [trip.driver_id], self.drivers)
            if trip.status == "proposed" and not trip.hold_until:
                problems.append(f"{trip.trip_id} is proposed with no hold time")
            holders = {  # what the trip's request and driver say their trip is (checked above when absent)
                getattr(self.requests.get(trip.request_id), "trip_id", trip.trip_id),
                getattr(self.drivers.get(trip.driver_id), "active_trip_id", trip.trip_id),
            }
            if trip.status in ("proposed", "dispatched", "in_progress") and holders != {trip.trip_id}:
                problems.append(f"{trip.trip_id} is {trip.status} but not its request's and driver's trip")
        if problems:
            raise ValueError("; ".join(problems[:5]))
        return self


class RideshareDispatch(Environment):
    """Dispatch desk of a ride-hailing service in the city of Port Calder.

    Riders post requests (pickup and drop-off zone, party size, accessibility needs, vehicle
    class, how long they will wait); drivers are on shift in a zone with one vehicle. Match each
    request to one driver under hard constraints, using the scoring policy to pick the best
    eligible driver. A proposal goes to the driver, who accepts or declines by their own
    preferences; the rider then confirms (or declines) the accepted driver. Run the trip:
    start at pickup, complete at drop-off (the fare comes from the rate table), and record
    ratings. Amounts are integer cents; times are UTC; every action advances the clock 30 s.
    """

    State = DispatchState
    state: DispatchState
    entities = (
        Entity("riders", "rider", ("{name} ({phone})",), vary=("rating",)),
        Entity("drivers", "driver", ("driver {name} ({driver_id})", "driver {name}"), id_known=True),
        Entity(
            "requests",
            "ride request",
            (
                "{rider_id}'s ride request from {pickup_zone} to {dropoff_zone}",
                "{rider_id}'s ride request from {pickup_zone} to {dropoff_zone} at {requested_at:time}",
            ),
        ),
        Entity("trips", "trip", ("the trip of {driver_id} for {request_id}",), free=("decline_reason",)),
    )

    # -- reads ---------------------------------------------------------------------------
    @tool(
        goal="the request[ is from the {zone} zone][, for rider {rider_name}]",
        read_only=True,
        produces=["request_id", "rider_id"],
    )
    def list_open_requests(self, zone: str = "", rider_name: str = "") -> dict[str, Any]:
        """List requests still waiting for a driver, most urgent first.

        Args:
            zone: Only requests picking up in this zone id (e.g. Z-DTN); all zones when empty.
            rider_name: Only requests of riders whose name contains this text (case does not matter).

        Returns:
            Open requests with rider, pickup/drop-off zones, party size, needs, vehicle class,
            latest acceptable pickup time and minutes left before the request expires.
        """
        if zone:
            self._zone(zone)
        now = self.now()
        wanted = rider_name.strip().lower()
        rows = []
        for req in self.state.requests.values():
            rider = self.state.riders[req.rider_id]
            if not self._is_open(req, now) or (zone and req.pickup_zone != zone):
                continue
            if wanted and wanted not in rider.name.lower():
                continue
            rows.append({**self._request_summary(req), "rider_name": rider.name})
        rows.sort(key=lambda r: (r["latest_pickup_at"], r["request_id"]))
        return {"requests": rows, "count": len(rows), "now": iso(now)}

    @tool(read_only=True, consumes=["request_id"], produces=["rider_id", "trip_id", "driver_id"])
    def get_request(self, request_id: str) -> dict[str, Any]:
        """Show one request with its rider's preferences and every trip proposed for it.

        Args:
            request_id: The request id, e.g. REQ-2041.

        Returns:
            The request (status as of now), the rider (rating, minimum driver rating, blocked
            drivers), the drivers excluded from it and its trips with their statuses.
        """
        req = self._request(request_id)
        rider = self.state.riders[req.rider_id]
        trips = [
            {"trip_id": t.trip_id, "driver_id": t.driver_id, "status": self._trip_status(t, self.now())}
            for t in self.state.trips.values()
            if t.request_id == request_id
        ]
        return {
            **self._request_summary(req),
            "rider": rider.model_dump(),
            "max_fare_cents": req.max_fare_cents,
            "declined_by": list(req.declined_by),
            "current_trip_id": req.trip_id,
            "trips": trips,
        }

    @tool(read_only=True, consumes=["request_id"], produces=["driver_id"])
    def list_available_drivers(self, zone: str = "", request_id: str = "") -> dict[str, Any]:
        """List drivers free to take a trip now; with a request, rank them by pickup ETA.

        Args:
            zone: Only drivers currently in this zone id; all zones when empty.
            request_id: Rank drivers for this open request: adds pickup ETA and whether the pair
                passes every hard constraint (see score_match for the full explanation).

        Returns:
            Available drivers with zone, vehicle (class, capacity, features), rating and shift end;
            with request_id also eta_minutes and eligible, sorted by ETA.
        """
        if zone:
            self._zone(zone)
        now = self.now()
        req = self._request(request_id) if request_id else None
        if req is not None and not self._is_open(req, now):
            self.fail(
                "invalid_transition",
                f"request {request_id} is {self._request_status(req, now)}, not open; "
                "only open requests can be matched",
                request_id=request_id,
                status=self._request_status(req, now),
            )
        rows = []
        for driver in self.state.drivers.values():
            if self._driver_status(driver, now) != "available" or (zone and driver.zone != zone):
                continue
            row: dict[str, Any] = {
                "driver_id": driver.driver_id,
                "name": driver.name,
                "zone": driver.zone,
                "vehicle_class": driver.vehicle.vehicle_class,
                "capacity": driver.vehicle.capacity,
                "features": list(driver.vehicle.features),
                "rating": driver.rating,
                "shift_end": driver.shift_end,
            }
            if req is not None:
                found = self._assess(req, driver)
                row["eta_minutes"] = found.eta_minutes
                row["eligible"] = found.eligible
            rows.append(row)
        if req is not None:
            rows.sort(key=lambda r: (r["eta_minutes"], r["driver_id"]))
        else:
            rows.sort(key=lambda r: r["driver_id"])
        return {"drivers": rows, "count": len(rows), "now": iso(now)}

    @tool(read_only=True, consumes=["driver_id"], produces=["trip_id"])
    def get_driver(self, driver_id: str) -> dict[str, Any]:
        """Show a driver: vehicle, permits, preferences, status, shift and earnings.

        Args:
            driver_id: The driver id, e.g. DRV-318.

        Returns:
            The driver with their status as of now, active trip id (if any), minutes left in the
            shift and idle minutes since their last trip.
        """
        driver = self._driver(driver_id)
        now = self.now()
        return {
            **driver.model_dump(),
            "status": self._driver_status(driver, now),
            "active_trip_id": self._active_trip_id(driver, now),
            "shift_minutes_left": max(0, _minutes(now, parse_time(driver.shift_end))),
            "idle_minutes": max(0, _minutes(parse_time(driver.idle_since), now)),
        }

    @tool(read_only=True, produces=["trip_id"], consumes=["driver_id", "request_id"])
    def list_trips(
        self, status: TripStatus | None = None, driver_id: str = "", rider_name: str = ""
    ) -> dict[str, Any]:
        """List trips, newest first, optionally filtered.

        Args:
            status: Only trips in this status (as of now); all statuses when omitted.
            driver_id: Only this driver's trips.
            rider_name: Only trips of riders whose name contains this text (case does not matter).

        Returns:
            Trip summaries: trip id, request id, driver, rider, status, fare total and ratings.
        """
        if driver_id:
            self._driver(driver_id)
        now = self.now()
        wanted = rider_name.strip().lower()
        rows = []
        for trip in self.state.trips.values():
            req = self.state.requests[trip.request_id]
            rider = self.state.riders[req.rider_id]
            current = self._trip_status(trip, now)
            if (status and current != status) or (driver_id and trip.driver_id != driver_id):
                continue
            if wanted and wanted not in rider.name.lower():
                continue
            rows.append(
                {
                    "trip_id": trip.trip_id,
                    "request_id": trip.request_id,
                    "driver_id": trip.driver_id,
                    "rider_id": rider.rider_id,
                    "rider_name": rider.name,
                    "status": current,
                    "proposed_at": trip.proposed_at,
                    "fare_total_cents": trip.fare.total_cents if trip.fare else None,
                    "driver_stars": trip.driver_stars,
                    "rider_stars": trip.rider_stars,
                }
            )
        rows.sort(key=lambda r: (r["proposed_at"], r["trip_id"]), reverse=True)
        return {"trips": rows, "count": len(rows)}

    @tool(read_only=True, consumes=["trip_id"], produces=["request_id", "driver_id"])
    def get_trip(self, trip_id: str) -> dict[str, Any]:
        """Show a trip: its status as of now, timings, quoted and final fare, cancellation, ratings.

        Args:
            trip_id: The trip id, e.g. TRP-40107.

        Returns:
            The full trip record; status is derived with the clock (an unconfirmed proposal past
            hold_until shows as lapsed).
        """
        trip = self._trip(trip_id)
        return {**trip.model_dump(), "status": self._trip_status(trip, self.now())}

    @tool(read_only=True)
    def quote_fare(self, pickup_zone: str, dropoff_zone: str, vehicle_class: VehicleClass) -> dict[str, Any]:
        """Estimate the fare of a trip from the rate table (no waiting time, no tolls).

        Args:
            pickup_zone: Pickup zone id, e.g. Z-STN.
            dropoff_zone: Drop-off zone id, e.g. Z-AIR.
            vehicle_class: The class the rider requested (riders never pay for an upgrade).

        Returns:
            The fastest route (minutes, km) and the fare breakdown in cents.
        """
        self._zone(pickup_zone)
        self._zone(dropoff_zone)
        minutes, km = self._route(pickup_zone, dropoff_zone)
        fare = self._fare(pickup_zone, dropoff_zone, vehicle_class, minutes, km)
        return {"route_minutes": minutes, "route_km": km, "fare": fare.model_dump()}

    @tool(read_only=True, consumes=["request_id", "driver_id"])
    def score_match(self, request_id: str, driver_id: str) -> dict[str, Any]:
        """Score a (request, driver) pair under the scoring policy and explain every criterion.

        Args:
            request_id: An open request, e.g. REQ-2041.
            driver_id: A driver, e.g. DRV-318.

        Returns:
            eligible (every hard constraint passes), the constraints with details, the weighted
            criteria and total score (0-100), pickup ETA, estimated drop-off, quoted fare, and
            whether the driver would accept and the rider would confirm (with reasons).
        """
        req = self._request(request_id)
        driver = self._driver(driver_id)
        found = self._assess(req, driver)
        return {
            "request_id": request_id,
            "driver_id": driver_id,
            "eligible": found.eligible,
            "constraints": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in found.checks],
            "criteria": found.criteria,
            "score": found.score if found.eligible else 0.0,
            "eta_minutes": found.eta_minutes,
            "pickup_eta_at": iso(found.pickup_eta_at),
            "est_dropoff_at": iso(found.est_dropoff_at),
            "quoted_fare_cents": found.quote.total_cents,
            "driver_would_accept": not found.driver_reasons,
            "driver_reasons": found.driver_reasons,
            "rider_would_confirm": not found.rider_reasons,
            "rider_reasons": found.rider_reasons,
        }

    # -- writes --------------------------------------------------------------------------
    @tool(
        goal="offer {request_id} to {driver_id}", consumes=["request_id", "driver_id"], produces=["trip_id"]
    )
    def propose_match(self, request_id: str, driver_id: str) -> dict[str, Any]:
        """Offer an open request to a driver; the driver accepts or declines by their preferences.

        An accepted proposal holds the driver for proposal_hold_minutes while the rider confirms.
        A declined proposal is recorded and excludes that driver from this request.

        Args:
            request_id: The open request to match, e.g. REQ-2041.
            driver_id: The available driver to offer it to, e.g. DRV-318.

        Returns:
            trip_id, status ("proposed" or "driver_declined"), the driver's reasons when declined,
            hold_until, pickup ETA, estimated drop-off and the quoted fare.
        """
        self._sweep()
        req = self._request(request_id)
        driver = self._driver(driver_id)
        found = self._assess(req, driver)
        for check in found.checks:
            if not check.ok:
                self.fail(
                    check.category,
                    f"cannot propose {request_id} to {driver_id}: {check.detail}",
                    constraint=check.name,
                    request_id=request_id,
                    driver_id=driver_id,
                )
        now = self.now()
        trip = Trip(
            trip_id=self._next_trip_id(),
            request_id=request_id,
            driver_id=driver_id,
            status="proposed",
            proposed_at=iso(now),
            pickup_eta_at=iso(found.pickup_eta_at),
            est_dropoff_at=iso(found.est_dropoff_at),
            score=found.score,
            quoted_fare_cents=found.quote.total_cents,
        )
        if found.driver_reasons:
            trip.status = "driver_declined"
            trip.decline_reason = "; ".join(found.driver_reasons)
            req.declined_by.append(driver_id)
        else:
            hold = self.data.json("scoring_policy.json")["proposal_hold_minutes"]
            trip.hold_until = iso(now + timedelta(minutes=hold))
            driver.status = "held"
            driver.active_trip_id = trip.trip_id
            req.status = "proposed"
            req.trip_id = trip.trip_id
        self.state.trips[trip.trip_id] = trip
        return {
            "trip_id": trip.trip_id,
            "status": trip.status,
            "driver_reasons": found.driver_reasons,
            "hold_until": trip.hold_until,
            "pickup_eta_at": trip.pickup_eta_at,
            "est_dropoff_at": trip.est_dropoff_at,
            "quoted_fare_cents": trip.quoted_fare_cents,
            "score": trip.score,
        }

    @tool(goal="have the rider confirm {trip_id}", consumes=["trip_id"], produces=["trip_id"])
    def confirm_match(self, trip_id: str) -> dict[str, Any]:
        """Ask the rider to confirm a driver-accepted proposal; on confirmation the driver is dispatched.

        The rider declines a driver rated below their minimum, a driver they blocked, or a quote
        above their fare cap; a declined driver is excluded and the request reopens.

        Args:
            trip_id: A trip in status proposed, confirmed before its hold_until.

        Returns:
            trip_id, status ("dispatched" or "rider_declined"), the rider's reasons when declined,
            pickup ETA and request status.
        """
        self._sweep()
        trip = self._trip(trip_id)
        if trip.status != "proposed":
            why = (
                f"the proposal lapsed at {trip.hold_until} without confirmation; propose again"
                if trip.status == "lapsed"
                else "only a proposed trip can be confirmed"
            )
            self.fail(
                "invalid_transition",
                f"trip {trip_id} is {trip.status}: {why}",
                trip_id=trip_id,
                status=trip.status,
            )
        req = self.state.requests[trip.request_id]
        driver = self.state.drivers[trip.driver_id]
        reasons = self._rider_reasons(req, driver, trip.quoted_fare_cents)
        now = self.now()
        if reasons:
            trip.status = "rider_declined"
            trip.decline_reason = "; ".join(reasons)
            self._release(driver)
            req.status, req.trip_id = "open", ""
            req.declined_by.append(driver.driver_id)
        else:
            trip.status = "dispatched"
            trip.confirmed_at = iso(now)
            driver.status = "en_route"
            req.status = "matched"
        return {
            "trip_id": trip_id,
            "status": trip.status,
            "rider_reasons": reasons,
            "pickup_eta_at": trip.pickup_eta_at,
            "request_status": req.status,
        }

    @tool(goal="record that {trip_id} has picked the rider up", consumes=["trip_id"])
    def start_trip(self, trip_id: str) -> dict[str, Any]:
        """Record that the driver picked the rider up.

        Args:
            trip_id: A dispatched trip.

        Returns:
            trip_id, status in_progress, started_at and the estimated drop-off.
        """
        self._sweep()
        trip = self._trip(trip_id)
        self._require(trip, "dispatched", "only a dispatched trip (driver en route) can start")
        now = self.now()
        trip.status = "in_progress"
        trip.started_at = iso(now)
        self.state.drivers[trip.driver_id].status = "on_trip"
        self.state.requests[trip.request_id].status = "in_progress"
        return {
            "trip_id": trip_id,
            "status": trip.status,
            "started_at": trip.started_at,
            "est_dropoff_at": trip.est_dropoff_at,
        }

    @tool(
        goal="complete {trip_id}[ with {waiting_minutes} minute(s) of waiting][ and {tolls_cents:cents} "
        "in tolls]",
        consumes=["trip_id"],
    )
    def complete_trip(self, trip_id: str, waiting_minutes: int = 0, tolls_cents: int = 0) -> dict[str, Any]:
        """Drop the rider off: compute the final fare from the rate table and free the driver.

        Args:
            trip_id: A trip in progress.
            waiting_minutes: Minutes the driver waited at pickup (the first minutes are free).
            tolls_cents: Tolls paid on the route, passed through to the rider and the driver.

        Returns:
            trip_id, status completed, the fare breakdown (total_cents, driver_payout_cents) and
            the driver's new zone.
        """
        self._sweep()
        trip = self._trip(trip_id)
        rates = self.data.json("rate_table.json")
        if not 0 <= waiting_minutes <= rates["waiting"]["max_minutes"]:
            self.fail(
                "invalid_argument",
                f"waiting_minutes must be between 0 and {rates['waiting']['max_minutes']}",
                field="waiting_minutes",
            )
        if not 0 <= tolls_cents <= rates["max_tolls_cents"]:
            self.fail(
                "invalid_argument",
                f"tolls_cents must be between 0 and {rates['max_tolls_cents']}",
                field="tolls_cents",
            )
        self._require(trip, "in_progress", "only a trip in progress (rider on board) can be completed")
        req = self.state.requests[trip.request_id]
        driver = self.state.drivers[trip.driver_id]
        minutes, km = self._route(req.pickup_zone, req.dropoff_zone)
        fare = self._fare(
            req.pickup_zone, req.dropoff_zone, req.vehicle_class, minutes, km, waiting_minutes, tolls_cents
        )
        now = self.now()
        trip.status = "completed"
        trip.completed_at = iso(now)
        trip.fare = fare
        req.status = "completed"
        self._release(driver)
        driver.zone = req.dropoff_zone
        driver.idle_since = iso(now)
        driver.trips_completed += 1
        driver.earnings_cents += fare.driver_payout_cents
        return {
            "trip_id": trip_id,
            "status": trip.status,
            "fare": fare.model_dump(),
            "driver_zone": driver.zone,
        }

    @tool(
        goal="cancel {trip_id} on behalf of the {cancelled_by}; the reason is {reason}",
        undoes=["propose_match", "confirm_match"],
        consumes=["trip_id"],
        produces=["request_id"],
    )
    def cancel_trip(self, trip_id: str, cancelled_by: Party, reason: str) -> dict[str, Any]:
        """Cancel a trip before pickup.

        A rider cancellation closes the request (with a fee once the free minutes after
        confirmation have passed). A driver or dispatcher cancellation reopens the request for
        rematching and excludes the driver from it.

        Args:
            trip_id: A proposed or dispatched trip.
            cancelled_by: Who cancels: rider, driver or dispatcher.
            reason: Why, in a few words (recorded on the trip).

        Returns:
            trip_id, status cancelled, the cancellation fee in cents and the request's new status.
        """
        self._sweep()
        trip = self._trip(trip_id)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        if trip.status not in ("proposed", "dispatched"):
            why = (
                "the rider is on board; complete the trip instead"
                if trip.status == "in_progress"
                else "only proposed or dispatched trips can be cancelled"
            )
            self.fail(
                "invalid_transition",
                f"trip {trip_id} is {trip.status}: {why}",
                trip_id=trip_id,
                status=trip.status,
            )
        now = self.now()
        req = self.state.requests[trip.request_id]
        driver = self.state.drivers[trip.driver_id]
        fee = 0
        if cancelled_by == "rider":
            rule = self.data.json("rate_table.json")["rider_cancellation"]
            late = trip.confirmed_at and now > parse_time(trip.confirmed_at) + timedelta(
                minutes=rule["free_minutes_after_confirm"]
            )
            fee = rule["fee_cents"] if late else 0
            req.status = "cancelled"
            commission = self.data.json("rate_table.json")["driver_commission"]
            driver.earnings_cents += _round(fee * (1 - commission))
        else:
            req.status = "open"
            req.declined_by.append(driver.driver_id)
            if cancelled_by == "driver":
                driver.cancellations += 1
        req.trip_id = ""
        trip.status = "cancelled"
        trip.cancelled_by = cancelled_by
        trip.cancel_reason = reason.strip()
        trip.cancellation_fee_cents = fee
        self._release(driver)
        self._sweep()
        return {
            "trip_id": trip_id,
            "status": trip.status,
            "cancellation_fee_cents": fee,
            "request_id": req.request_id,
            "request_status": req.status,
        }

    @tool(
        goal="record the {rated_by}'s rating of {stars} star(s) for {trip_id}[ with the comment {comment}]",
        consumes=["trip_id"],
    )
    def rate_trip(
        self, trip_id: str, rated_by: Literal["rider", "driver"], stars: int, comment: str = ""
    ) -> dict[str, Any]:
        """Record one side's rating of a completed trip (each side rates once).

        The rider's stars update the driver's rating; the driver's stars update the rider's.

        Args:
            trip_id: A completed trip.
            rated_by: Who gives the rating: rider (rates the driver) or driver (rates the rider).
            stars: 1 to 5; ratings of 1 or 2 stars need a comment.
            comment: Free text; required for low ratings.

        Returns:
            trip_id, the stars recorded and the rated person's new average rating.
        """
        trip = self._trip(trip_id)
        if not 1 <= stars <= 5:
            self.fail("invalid_argument", f"stars must be between 1 and 5, got {stars}", field="stars")
        if stars <= 2 and not comment.strip():
            self.fail("invalid_argument", "a rating of 1 or 2 stars needs a comment", field="comment")
        self._require(trip, "completed", "only completed trips can be rated")
        given = trip.driver_stars if rated_by == "rider" else trip.rider_stars
        if given:
            self.fail(
                "conflict",
                f"the {rated_by} already rated trip {trip_id} ({given} stars); ratings cannot be changed",
                trip_id=trip_id,
                stars=given,
            )
        req = self.state.requests[trip.request_id]
        if rated_by == "rider":
            driver = self.state.drivers[trip.driver_id]
            trip.driver_stars, trip.rider_comment = stars, comment.strip()
            driver.rating = _average(driver.rating, driver.rating_count, stars)
            driver.rating_count += 1
            rated, new_rating = driver.driver_id, driver.rating
        else:
            rider = self.state.riders[req.rider_id]
            trip.rider_stars, trip.driver_comment = stars, comment.strip()
            rider.rating = _average(rider.rating, rider.rating_count, stars)
            rider.rating_count += 1
            rated, new_rating = rider.rider_id, rider.rating
        return {
            "trip_id": trip_id,
            "rated_by": rated_by,
            "stars": stars,
            "rated": rated,
            "new_rating": new_rating,
        }

    # -- lookups -------------------------------------------------------------------------
    def _request(self, request_id: str) -> Request:
        req = self.state.requests.get(request_id)
        if req is None:
            self.fail("not_found", f"no request '{request_id}'", request_id=request_id)
        return req

    def _driver(self, driver_id: str) -> Driver:
        driver = self.state.drivers.get(driver_id)
        if driver is None:
            self.fail("not_found", f"no driver '{driver_id}'", driver_id=driver_id)
        return driver

    def _trip(self, trip_id: str) -> Trip:
        trip = self.state.trips.get(trip_id)
        if trip is None:
            self.fail("not_found", f"no trip '{trip_id}'", trip_id=trip_id)
        return trip

    def _zone(self, zone_id: str) -> dict[str, Any]:
        for zone in self.data.json("zones.json")["zones"]:
            if zone["id"] == zone_id:
                return dict(zone)
        known = [z["id"] for z in self.data.json("zones.json")["zones"]]
        self.fail("not_found", f"no zone '{zone_id}'; zones: {', '.join(known)}", zone=zone_id)

    def _require(self, trip: Trip, status: str, why: str) -> None:
        if trip.status != status:
            self.fail(
                "invalid_transition",
                f"trip {trip.trip_id} is {trip.status}: {why}",
                trip_id=trip.trip_id,
                status=trip.status,
            )

    # -- derived status (the clock moves; reads never write) ----------------------------
    def _deadline(self, req: Request) -> datetime:
        return parse_time(req.requested_at) + timedelta(minutes=req.max_wait_minutes)

    def _is_open(self, req: Request, now: datetime) -> bool:
        return self._request_status(req, now) == "open"

    def _request_status(self, req: Request, now: datetime) -> str:
        if req.status == "open" and now > self._deadline(req):
            return "expired"
        if req.status == "proposed" and self._lapsed(self.state.trips[req.trip_id], now):
            return "open" if now <= self._deadline(req) else "expired"
        return req.status

    def _lapsed(self, trip: Trip, now: datetime) -> bool:
        return trip.status == "proposed" and now > parse_time(trip.hold_until)

    def _trip_status(self, trip: Trip, now: datetime) -> str:
        return "lapsed" if self._lapsed(trip, now) else trip.status

    def _driver_status(self, driver: Driver, now: datetime) -> str:
        status = driver.status
        if status == "held" and self._lapsed(self.state.trips[driver.active_trip_id], now):
            status = "available"
        if status == "available" and now >= parse_time(driver.shift_end):
            return "offline"
        return status

    def _active_trip_id(self, driver: Driver, now: datetime) -> str:
        return (
            driver.active_trip_id
            if self._driver_status(driver, now) in ("held", "en_route", "on_trip")
            else ""
        )

    def _sweep(self) -> None:
        """Materialize what the clock decided: lapsed proposals, expired requests, ended shifts."""
        now = self.now()
        for trip in self.state.trips.values():
            if self._lapsed(trip, now):
                trip.status = "lapsed"
                self._release(self.state.drivers[trip.driver_id])
                req = self.state.requests[trip.request_id]
                if req.trip_id == trip.trip_id:
                    req.status, req.trip_id = "open", ""
        for req in self.state.requests.values():
            if req.status == "open" and now > self._deadline(req):
                req.status = "expired"
        for driver in self.state.drivers.values():
            if driver.status == "available" and now >= parse_time(driver.shift_end):
                driver.status = "offline"

    def _release(self, driver: Driver) -> None:
        driver.status = "available"
        driver.active_trip_id = ""

    def _request_summary(self, req: Request) -> dict[str, Any]:
        now = self.now()
        deadline = self._deadline(req)
        return {
            "request_id": req.request_id,
            "rider_id": req.rider_id,
            "status": self._request_status(req, now),
            "pickup_zone": req.pickup_zone,
            "dropoff_zone": req.dropoff_zone,
            "party_size": req.party_size,
            "needs": list(req.needs),
            "vehicle_class": req.vehicle_class,
            "max_wait_minutes": req.max_wait_minutes,
            "requested_at": req.requested_at,
            "latest_pickup_at": iso(deadline),
            "minutes_left": max(0, _minutes(now, deadline)),
        }

    def _next_trip_id(self) -> str:
        trip_id = f"TRP-{self.state.next_trip_number}"
        self.state.next_trip_number += 1
        return trip_id

    # -- matching rules ------------------------------------------------------------------
    def _route(self, origin: str, destination: str) -> tuple[int, float]:
        return _routes(self.data.json("zones.json"))[(origin, destination)]

    def _fare(
        self,
        pickup: str,
        dropoff: str,
        vehicle_class: str,
        minutes: int,
        km: float,
        waiting_minutes: int = 0,
        tolls_cents: int = 0,
    ) -> Fare:
        return _fare(
            self.data.json("rate_table.json"),
            self.data.json("zones.json"),
            pickup,
            dropoff,
            vehicle_class,
            minutes,
            km,
            waiting_minutes,
            tolls_cents,
        )

    def _assess(self, req: Request, driver: Driver) -> Assessment:
        """Hard constraints, weighted score and both sides' decisions for one pair, as of now."""
        now = self.now()
        policy = self.data.json("scoring_policy.json")
        eta, _ = self._route(driver.zone, req.pickup_zone)
        minutes, km = self._route(req.pickup_zone, req.dropoff_zone)
        pickup_at = now + timedelta(minutes=eta)
        dropoff_at = pickup_at + timedelta(minutes=minutes)
        quote = self._fare(req.pickup_zone, req.dropoff_zone, req.vehicle_class, minutes, km)
        found = Assessment(
            checks=self._checks(req, driver, now, pickup_at, dropoff_at),
            eta_minutes=eta,
            route_minutes=minutes,
            route_km=km,
            quote=quote,
            pickup_eta_at=pickup_at,
            est_dropoff_at=dropoff_at,
        )
        weights = policy["weights"]
        steps = max(0, CLASS_ORDER.index(driver.vehicle.vehicle_class) - CLASS_ORDER.index(req.vehicle_class))
        fits = policy["class_fit_by_upgrade_steps"]
        floor = policy["rating_floor"]
        idle = max(0, _minutes(parse_time(driver.idle_since), now))
        raw = {
            "pickup_eta": (
                _clamp(1 - eta / req.max_wait_minutes),
                f"{eta} min to pickup, rider waits up to {req.max_wait_minutes} min",
            ),
            "driver_rating": (_clamp((driver.rating - floor) / (5 - floor)), f"rating {driver.rating}"),
            "class_fit": (
                fits[min(steps, len(fits) - 1)],
                f"{driver.vehicle.vehicle_class} for a {req.vehicle_class} request ({steps} upgrade steps)",
            ),
            "seat_fit": (
                _clamp(req.party_size / driver.vehicle.capacity),
                f"{req.party_size} riders in {driver.vehicle.capacity} seats",
            ),
            "idle_fairness": (
                _clamp(min(idle, policy["idle_cap_minutes"]) / policy["idle_cap_minutes"]),
                f"idle {idle} min",
            ),
        }
        total = 0.0
        for name, (value, why) in raw.items():
            contribution = weights[name] * value
            total += contribution
            found.criteria.append(
                {
                    "criterion": name,
                    "value": round(value, 3),
                    "weight": weights[name],
                    "contribution": round(100 * contribution, 1),
                    "why": why,
                }
            )
        found.score = round(100 * total, 1)
        found.driver_reasons = self._driver_reasons(req, driver, eta, quote.total_cents)
        found.rider_reasons = self._rider_reasons(req, driver, quote.total_cents)
        return found

    def _checks(
        self, req: Request, driver: Driver, now: datetime, pickup_at: datetime, dropoff_at: datetime
    ) -> list[Check]:
        rider = self.state.riders[req.rider_id]
        req_status = self._request_status(req, now)
        drv_status = self._driver_status(driver, now)
        zone = self._zone(req.pickup_zone)
        missing = sorted(set(req.needs) - set(driver.vehicle.features))
        vehicle_rank = CLASS_ORDER.index(driver.vehicle.vehicle_class)
        airport = zone["kind"] == "airport"
        busy = drv_status in ("held", "en_route", "on_trip")
        return [
            Check(
                "request_open",
                req_status == "open",
                f"request {req.request_id} is {req_status}",
                "invalid_transition",
            ),
            Check(
                "driver_available",
                drv_status == "available",
                f"driver {driver.driver_id} is {drv_status}"
                + (f" with active trip {driver.active_trip_id}" if busy else "")
                + (f" (shift ended {driver.shift_end})" if drv_status == "offline" else ""),
                "conflict" if busy else "invalid_transition",
            ),
            Check(
                "capacity",
                driver.vehicle.capacity >= req.party_size,
                f"party of {req.party_size}, vehicle seats {driver.vehicle.capacity}",
            ),
            Check(
                "accessibility",
                not missing,
                f"vehicle lacks {', '.join(missing)}" if missing else "vehicle has every needed feature",
            ),
            Check(
                "vehicle_class",
                vehicle_rank >= CLASS_ORDER.index(req.vehicle_class),
                f"{driver.vehicle.vehicle_class} vehicle for a {req.vehicle_class} request",
            ),
            Check(
                "airport_permit",
                not airport or "airport" in driver.permits,
                f"driver {driver.driver_id} lacks the 'airport' permit required for pickups at {zone['name']}"
                if airport and "airport" not in driver.permits
                else "no permit needed"
                if not airport
                else "driver holds the airport permit",
                "permission_denied",
            ),
            Check(
                "wait_window",
                pickup_at <= self._deadline(req),
                f"pickup ETA {iso(pickup_at)}, rider's latest acceptable pickup {iso(self._deadline(req))}",
            ),
            Check(
                "shift_end",
                dropoff_at <= parse_time(driver.shift_end),
                f"estimated drop-off {iso(dropoff_at)}, driver's shift ends {driver.shift_end}",
            ),
            Check(
                "not_excluded",
                driver.driver_id not in req.declined_by and driver.driver_id not in rider.blocked_drivers,
                f"driver {driver.driver_id} already declined or cancelled this request"
                if driver.driver_id in req.declined_by
                else f"rider {rider.rider_id} blocked driver {driver.driver_id}"
                if driver.driver_id in rider.blocked_drivers
                else "driver not excluded",
            ),
        ]

    def _driver_reasons(self, req: Request, driver: Driver, eta: int, quote_cents: int) -> list[str]:
        prefs = driver.prefs
        rider = self.state.riders[req.rider_id]
        reasons = []
        if eta > prefs.max_pickup_minutes:
            reasons.append(f"pickup is {eta} min away; driver accepts at most {prefs.max_pickup_minutes} min")
        if req.dropoff_zone in prefs.avoid_dropoff_zones:
            reasons.append(f"driver does not take drop-offs in {req.dropoff_zone}")
        if quote_cents < prefs.min_fare_cents:
            reasons.append(f"fare {quote_cents} cents is below the driver's minimum {prefs.min_fare_cents}")
        if rider.rating < prefs.min_rider_rating:
            reasons.append(
                f"rider rating {rider.rating} is below the driver's minimum {prefs.min_rider_rating}"
            )
        return reasons

    def _rider_reasons(self, req: Request, driver: Driver, quote_cents: int) -> list[str]:
        rider = self.state.riders[req.rider_id]
        reasons = []
        if driver.rating < rider.min_driver_rating:
            reasons.append(
                f"driver rating {driver.rating} is below the rider's minimum {rider.min_driver_rating}"
            )
        if req.max_fare_cents and quote_cents > req.max_fare_cents:
            reasons.append(f"quoted fare {quote_cents} cents exceeds the rider's cap {req.max_fare_cents}")
        return reasons

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A city at the evening peak: ``12 * size`` drivers, ``12 * size`` riders, trips in every status."""
        from .generate import _Generator

        repo = data if data is not None else (cls.package.data if cls.package else Repository(None))
        base = cls.package.clock.base_time if cls.package else DEFAULT_BASE_TIME
        return Initial(state=_Generator(random.Random(seed), max(1, size), repo, base).build())


def _fare(
    rates: Any,
    zones: Any,
    pickup: str,
    dropoff: str,
    vehicle_class: str,
    minutes: int,
    km: float,
    waiting_minutes: int = 0,
    tolls_cents: int = 0,
) -> Fare:
    """The fare of a trip from the rate table: class tariff, minimum, surge, fees, waiting, tolls."""
    tariff = rates["classes"][vehicle_class]
    distance = _round(tariff["per_km_cents"] * km)
    time = tariff["per_minute_cents"] * minutes
    subtotal = max(tariff["minimum_cents"], tariff["base_cents"] + distance + time)
    multiplier = float(rates["surge_by_pickup_zone"].get(pickup, 1.0))
    surge = _round(subtotal * (multiplier - 1))
    kinds = {z["id"]: z["kind"] for z in zones["zones"]}
    airport = rates["airport_surcharge_cents"] if "airport" in (kinds[pickup], kinds[dropoff]) else 0
    billable_wait = max(0, waiting_minutes - rates["waiting"]["free_minutes"])
    waiting = billable_wait * rates["waiting"]["per_minute_cents"]
    total = subtotal + surge + rates["booking_fee_cents"] + airport + waiting + tolls_cents
    payout = _round((subtotal + surge + waiting) * (1 - rates["driver_commission"])) + tolls_cents
    return Fare(
        vehicle_class=vehicle_class,
        distance_km=km,
        duration_minutes=minutes,
        base_cents=tariff["base_cents"],
        distance_cents=distance,
        time_cents=time,
        subtotal_cents=subtotal,
        surge_multiplier=multiplier,
        surge_cents=surge,
        booking_fee_cents=rates["booking_fee_cents"],
        airport_surcharge_cents=airport,
        waiting_cents=waiting,
        tolls_cents=tolls_cents,
        total_cents=total,
        driver_payout_cents=payout,
    )
