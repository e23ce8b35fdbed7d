"""Rideshare dispatch: match rider requests to drivers, then run each trip to its fare and ratings.

The tool surface: the State lives in ``state.py``, matching, pricing and the clock's effects in
``rules.py``, the S0 generator in ``generate.py``.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any, Literal

from envcraft import Entity, Environment, Initial, Job, Repository, iso, parse_time, tool

from .generate import Generator
from .rules import (
    active_trip_id,
    assess,
    average_rating,
    compute_fare,
    driver_status,
    find_zone,
    is_open,
    minutes_between,
    next_trip_id,
    release,
    request_status,
    request_summary,
    rider_reasons,
    round_cents,
    route,
    sweep,
    trip_status,
    zone_ids,
)
from .state import DispatchState, Party, Trip, TripStatus, VehicleClass


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
                "{rider_id}'s ride request (from {pickup_zone} to {dropoff_zone})",
                "{rider_id}'s ride request (from {pickup_zone} to {dropoff_zone} at {requested_at:time})",
            ),
        ),
        Entity("trips", "trip", ("the trip of {driver_id} for {request_id}",), free=("decline_reason",)),
    )

    jobs = (
        Job(
            "dispatch a ride",
            ("list_available_drivers", "propose_match", "confirm_match"),
            "get {request_id} on its way with {driver_id}: the driver takes it and the rider confirms",
            reaches={"status": "dispatched"},
        ),
        Job(
            "finish and rate a ride",
            ("complete_trip", "rate_trip"),
            "the rider of {trip_id} has arrived: settle the ride[ with {waiting_minutes} minute(s) of "
            "waiting][ and {tolls_cents:cents} in tolls] and record the {stars}-star rating "
            "{rated_by|rider=the rider gave the driver|driver=the driver gave the rider}[, with the "
            "comment {comment}]",
        ),
        Job(
            "run a dispatched ride to its rating",
            ("start_trip", "complete_trip", "rate_trip"),
            "the rider of {trip_id} was picked up and has now been dropped off: settle the ride[ with "
            "{waiting_minutes} minute(s) of waiting][ and {tolls_cents:cents} in tolls] and record the "
            "{stars}-star rating {rated_by|rider=the rider gave the driver|driver=the driver gave the "
            "rider}[, with the comment {comment}]",
        ),
    )

    def settle(self) -> None:
        """Reads leave lapsed proposals and expired requests as they were (writes sweep)."""
        sweep(self.state, self.now())

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
            if not is_open(self.state, req, now) or (zone and req.pickup_zone != zone):
                continue
            if wanted and wanted not in rider.name.lower():
                continue
            rows.append({**request_summary(self.state, req, self.now()), "rider_name": rider.name})
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
        req = self.lookup(self.state.requests, request_id, "request", request_id=request_id)
        rider = self.state.riders[req.rider_id]
        trips = [
            {"trip_id": t.trip_id, "driver_id": t.driver_id, "status": trip_status(t, self.now())}
            for t in self.state.trips.values()
            if t.request_id == request_id
        ]
        return {
            **request_summary(self.state, req, self.now()),
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
        req = (
            self.lookup(self.state.requests, request_id, "request", request_id=request_id)
            if request_id
            else None
        )
        if req is not None and not is_open(self.state, req, now):
            self.fail(
                "invalid_transition",
                f"request {request_id} is {request_status(self.state, req, now)}, not open; "
                "only open requests can be matched",
                request_id=request_id,
                status=request_status(self.state, req, now),
            )
        rows = []
        for driver in self.state.drivers.values():
            if driver_status(self.state, driver, now) != "available" or (zone and driver.zone != zone):
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
                found = assess(self.state, self.data, req, driver, self.now())
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
        driver = self.lookup(self.state.drivers, driver_id, "driver", driver_id=driver_id)
        now = self.now()
        return {
            **driver.model_dump(),
            "status": driver_status(self.state, driver, now),
            "active_trip_id": active_trip_id(self.state, driver, now),
            "shift_minutes_left": max(0, minutes_between(now, parse_time(driver.shift_end))),
            "idle_minutes": max(0, minutes_between(parse_time(driver.idle_since), now)),
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
            self.lookup(self.state.drivers, driver_id, "driver", driver_id=driver_id)
        now = self.now()
        wanted = rider_name.strip().lower()
        rows = []
        for trip in self.state.trips.values():
            req = self.state.requests[trip.request_id]
            rider = self.state.riders[req.rider_id]
            current = trip_status(trip, now)
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
        trip = self.lookup(self.state.trips, trip_id, "trip", trip_id=trip_id)
        return {**trip.model_dump(), "status": trip_status(trip, self.now())}

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
        minutes, km = route(self.data, pickup_zone, dropoff_zone)
        fare = compute_fare(self.data, pickup_zone, dropoff_zone, vehicle_class, minutes, km)
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
        req = self.lookup(self.state.requests, request_id, "request", request_id=request_id)
        driver = self.lookup(self.state.drivers, driver_id, "driver", driver_id=driver_id)
        found = assess(self.state, self.data, req, driver, self.now())
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
        sweep(self.state, self.now())
        req = self.lookup(self.state.requests, request_id, "request", request_id=request_id)
        driver = self.lookup(self.state.drivers, driver_id, "driver", driver_id=driver_id)
        found = assess(self.state, self.data, req, driver, self.now())
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
            trip_id=next_trip_id(self.state),
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
        sweep(self.state, self.now())
        trip = self.lookup(self.state.trips, trip_id, "trip", trip_id=trip_id)
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
        reasons = rider_reasons(self.state, req, driver, trip.quoted_fare_cents)
        now = self.now()
        if reasons:
            trip.status = "rider_declined"
            trip.decline_reason = "; ".join(reasons)
            release(driver)
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

    @tool(goal="record the rider pickup for {trip_id}", consumes=["trip_id"])
    def start_trip(self, trip_id: str) -> dict[str, Any]:
        """Record that the driver picked the rider up.

        Args:
            trip_id: A dispatched trip.

        Returns:
            trip_id, status in_progress, started_at and the estimated drop-off.
        """
        sweep(self.state, self.now())
        trip = self.lookup(self.state.trips, trip_id, "trip", trip_id=trip_id)
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
        sweep(self.state, self.now())
        trip = self.lookup(self.state.trips, trip_id, "trip", trip_id=trip_id)
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
        minutes, km = route(self.data, req.pickup_zone, req.dropoff_zone)
        fare = compute_fare(
            self.data,
            req.pickup_zone,
            req.dropoff_zone,
            req.vehicle_class,
            minutes,
            km,
            waiting_minutes,
            tolls_cents,
        )
        now = self.now()
        trip.status = "completed"
        trip.completed_at = iso(now)
        trip.fare = fare
        req.status = "completed"
        release(driver)
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
        goal="cancel {trip_id}{cancelled_by|rider= at the rider's request|driver= at the driver's request|"
        "dispatcher= from dispatch}; the reason is {reason}",
        undoes=["propose_match", "confirm_match"],
        consumes=["trip_id"],
        produces=["request_id"],
        examples={"reason": ("plans changed", "booked by mistake", "the pickup time was wrong")},
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
        sweep(self.state, self.now())
        trip = self.lookup(self.state.trips, trip_id, "trip", trip_id=trip_id)
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
            driver.earnings_cents += round_cents(fee * (1 - commission))
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
        release(driver)
        sweep(self.state, self.now())
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
        # facts of the ride, true whatever the stars ("Smooth pickup." beside 1 star read as a slip)
        examples={
            "comment": ("Pickup at the side entrance.", "Asked for a quiet ride.", "Had two large suitcases.")
        },
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
        trip = self.lookup(self.state.trips, trip_id, "trip", trip_id=trip_id)
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
            driver.rating = average_rating(driver.rating, driver.rating_count, stars)
            driver.rating_count += 1
            rated, new_rating = driver.driver_id, driver.rating
        else:
            rider = self.state.riders[req.rider_id]
            trip.rider_stars, trip.driver_comment = stars, comment.strip()
            rider.rating = average_rating(rider.rating, rider.rating_count, stars)
            rider.rating_count += 1
            rated, new_rating = rider.rider_id, rider.rating
        return {
            "trip_id": trip_id,
            "rated_by": rated_by,
            "stars": stars,
            "rated": rated,
            "new_rating": new_rating,
        }

    # -- failures the tools share -------------------------------------------------------
    def _zone(self, zone_id: str) -> dict[str, Any]:
        zone = find_zone(self.data, zone_id)
        if zone is None:
            self.fail(
                "not_found", f"no zone '{zone_id}'; zones: {', '.join(zone_ids(self.data))}", zone=zone_id
            )
        return zone

    def _require(self, trip: Trip, status: str, why: str) -> None:
        if trip.status != status:
            self.fail(
                "invalid_transition",
                f"trip {trip.trip_id} is {trip.status}: {why}",
                trip_id=trip.trip_id,
                status=trip.status,
            )

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A city at the evening peak: ``12 * size`` drivers, ``12 * size`` riders, trips in every status."""
        return Initial(
            state=Generator(random.Random(seed), max(1, size), cls.repository(data), cls.base_time()).build()
        )
