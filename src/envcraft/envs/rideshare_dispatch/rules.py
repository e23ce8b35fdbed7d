"""Domain rules of :class:`~.env.RideshareDispatch`: what its tools check, compute and render.

Rideshare dispatch (rider requests, driver matching, trips and fares). Functions over the State
of ``state.py`` and the reference data (routes, the rate table, the scoring policy); the tools in
``env.py`` call them, and the S0 generator shares them, so S0 is built by the same rules the
tools enforce. Status is derived with the clock (``now``): reads never write, and only
:func:`sweep` materializes what the clock decided.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from envcraft import Repository, iso, parse_time, thaw

from .state import DispatchState, Driver, Fare, Request, Trip

CLASS_ORDER: tuple[str, ...] = ("economy", "comfort", "premium")


@dataclass
class Check:
    """One hard constraint of a (request, driver) pair and the error category if it fails."""

    name: str
    ok: bool
    detail: str
    category: str = "conflict"


@dataclass
class Assessment:
    """Everything dispatch knows about a pair: constraints, score, both sides' decisions."""

    checks: list[Check]
    eta_minutes: int
    route_minutes: int
    route_km: float
    quote: Fare
    pickup_eta_at: datetime
    est_dropoff_at: datetime
    criteria: list[dict[str, Any]] = field(default_factory=list)
    score: float = 0.0
    driver_reasons: list[str] = field(default_factory=list)
    rider_reasons: list[str] = field(default_factory=list)

    @property
    def eligible(self) -> bool:
        return all(c.ok for c in self.checks)


# -- arithmetic ---------------------------------------------------------------------------------
def minutes_between(start: datetime, end: datetime) -> int:
    """Whole minutes from ``start`` to ``end`` (negative when ``end`` is earlier)."""
    return int((end - start).total_seconds() // 60)


def clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def round_cents(value: float) -> int:
    """Half-up rounding to whole cents (Python's round() rounds halves to even)."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def average_rating(rating: float, count: int, stars: int) -> float:
    return round((rating * count + stars) / (count + 1), 3)


# -- routes and fares ---------------------------------------------------------------------------
def routes(zones: Any) -> dict[tuple[str, str], tuple[int, float]]:
    """All-pairs fastest routes (minutes, km) over the zone graph."""
    return _route_table(json.dumps(thaw(zones), sort_keys=True))


@cache
def _route_table(zones_json: str) -> dict[tuple[str, str], tuple[int, float]]:
    """Floyd-Warshall on minutes; memoized on the (immutable) zone graph's JSON text."""
    zones = json.loads(zones_json)
    ids = [z["id"] for z in zones["zones"]]
    inf = (10**9, 0.0)
    best: dict[tuple[str, str], tuple[int, float]] = {(a, b): inf for a in ids for b in ids}
    for zone_id in ids:
        best[(zone_id, zone_id)] = (zones["intra_zone"]["minutes"], zones["intra_zone"]["km"])
    for edge in zones["edges"]:
        best[(edge["a"], edge["b"])] = best[(edge["b"], edge["a"])] = (edge["minutes"], edge["km"])
    for via in ids:
        for a in ids:
            for b in ids:
                if a == b:
                    continue
                first, second = best[(a, via)], best[(via, b)]
                if a != via and b != via and first[0] + second[0] < best[(a, b)][0]:
                    best[(a, b)] = (first[0] + second[0], round(first[1] + second[1], 1))
    return best


def route(data: Repository, origin: str, destination: str) -> tuple[int, float]:
    """The fastest route (minutes, km) between two zones of ``data/zones.json``."""
    return routes(data.json("zones.json"))[(origin, destination)]


def find_zone(data: Repository, zone_id: str) -> dict[str, Any] | None:
    """The zone record of ``data/zones.json`` with this id (None when there is none)."""
    for zone in data.json("zones.json")["zones"]:
        if zone["id"] == zone_id:
            return dict(zone)
    return None


def zone_ids(data: Repository) -> list[str]:
    return [z["id"] for z in data.json("zones.json")["zones"]]


def compute_fare(
    data: Repository,
    pickup: str,
    dropoff: str,
    vehicle_class: str,
    minutes: int,
    km: float,
    waiting_minutes: int = 0,
    tolls_cents: int = 0,
) -> Fare:
    """The fare of a trip from the rate table: class tariff, minimum, surge, fees, waiting, tolls."""
    rates, zones = data.json("rate_table.json"), data.json("zones.json")
    tariff = rates["classes"][vehicle_class]
    distance = round_cents(tariff["per_km_cents"] * km)
    time = tariff["per_minute_cents"] * minutes
    subtotal = max(tariff["minimum_cents"], tariff["base_cents"] + distance + time)
    multiplier = float(rates["surge_by_pickup_zone"].get(pickup, 1.0))
    surge = round_cents(subtotal * (multiplier - 1))
    kinds = {z["id"]: z["kind"] for z in zones["zones"]}
    airport = rates["airport_surcharge_cents"] if "airport" in (kinds[pickup], kinds[dropoff]) else 0
    billable_wait = max(0, waiting_minutes - rates["waiting"]["free_minutes"])
    waiting = billable_wait * rates["waiting"]["per_minute_cents"]
    total = subtotal + surge + rates["booking_fee_cents"] + airport + waiting + tolls_cents
    payout = round_cents((subtotal + surge + waiting) * (1 - rates["driver_commission"])) + tolls_cents
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


# -- derived status (the clock moves; reads never write) ------------------------------------------
def deadline(req: Request) -> datetime:
    """The rider's latest acceptable pickup."""
    return parse_time(req.requested_at) + timedelta(minutes=req.max_wait_minutes)


def is_open(state: DispatchState, req: Request, now: datetime) -> bool:
    return request_status(state, req, now) == "open"


def request_status(state: DispatchState, req: Request, now: datetime) -> str:
    if req.status == "open" and now > deadline(req):
        return "expired"
    if req.status == "proposed" and lapsed(state.trips[req.trip_id], now):
        return "open" if now <= deadline(req) else "expired"
    return req.status


def lapsed(trip: Trip, now: datetime) -> bool:
    return trip.status == "proposed" and now > parse_time(trip.hold_until)


def trip_status(trip: Trip, now: datetime) -> str:
    return "lapsed" if lapsed(trip, now) else trip.status


def driver_status(state: DispatchState, driver: Driver, now: datetime) -> str:
    status = driver.status
    if status == "held" and lapsed(state.trips[driver.active_trip_id], now):
        status = "available"
    if status == "available" and now >= parse_time(driver.shift_end):
        return "offline"
    return status


def active_trip_id(state: DispatchState, driver: Driver, now: datetime) -> str:
    return (
        driver.active_trip_id if driver_status(state, driver, now) in ("held", "en_route", "on_trip") else ""
    )


def sweep(state: DispatchState, now: datetime) -> None:
    """Materialize what the clock decided: lapsed proposals, expired requests, ended shifts."""
    for trip in state.trips.values():
        if lapsed(trip, now):
            trip.status = "lapsed"
            release(state.drivers[trip.driver_id])
            req = state.requests[trip.request_id]
            if req.trip_id == trip.trip_id:
                req.status, req.trip_id = "open", ""
    for req in state.requests.values():
        if req.status == "open" and now > deadline(req):
            req.status = "expired"
    for driver in state.drivers.values():
        if driver.status == "available" and now >= parse_time(driver.shift_end):
            driver.status = "offline"


def release(driver: Driver) -> None:
    driver.status = "available"
    driver.active_trip_id = ""


def request_summary(state: DispatchState, req: Request, now: datetime) -> dict[str, Any]:
    latest = deadline(req)
    return {
        "request_id": req.request_id,
        "rider_id": req.rider_id,
        "status": request_status(state, req, now),
        "pickup_zone": req.pickup_zone,
        "dropoff_zone": req.dropoff_zone,
        "party_size": req.party_size,
        "needs": list(req.needs),
        "vehicle_class": req.vehicle_class,
        "max_wait_minutes": req.max_wait_minutes,
        "requested_at": req.requested_at,
        "latest_pickup_at": iso(latest),
        "minutes_left": max(0, minutes_between(now, latest)),
    }


def next_trip_id(state: DispatchState) -> str:
    trip_id = f"TRP-{state.next_trip_number}"
    state.next_trip_number += 1
    return trip_id


# -- matching ---------------------------------------------------------------------------------------
def assess(state: DispatchState, data: Repository, req: Request, driver: Driver, now: datetime) -> Assessment:
    """Hard constraints, weighted score and both sides' decisions for one pair, as of ``now``."""
    policy = data.json("scoring_policy.json")
    eta, _ = route(data, driver.zone, req.pickup_zone)
    minutes, km = route(data, req.pickup_zone, req.dropoff_zone)
    pickup_at = now + timedelta(minutes=eta)
    dropoff_at = pickup_at + timedelta(minutes=minutes)
    quote = compute_fare(data, req.pickup_zone, req.dropoff_zone, req.vehicle_class, minutes, km)
    found = Assessment(
        checks=checks(state, data, req, driver, now, pickup_at, dropoff_at),
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
    idle = max(0, minutes_between(parse_time(driver.idle_since), now))
    raw = {
        "pickup_eta": (
            clamp(1 - eta / req.max_wait_minutes),
            f"{eta} min to pickup, rider waits up to {req.max_wait_minutes} min",
        ),
        "driver_rating": (clamp((driver.rating - floor) / (5 - floor)), f"rating {driver.rating}"),
        "class_fit": (
            fits[min(steps, len(fits) - 1)],
            f"{driver.vehicle.vehicle_class} for a {req.vehicle_class} request ({steps} upgrade steps)",
        ),
        "seat_fit": (
            clamp(req.party_size / driver.vehicle.capacity),
            f"{req.party_size} riders in {driver.vehicle.capacity} seats",
        ),
        "idle_fairness": (
            clamp(min(idle, policy["idle_cap_minutes"]) / policy["idle_cap_minutes"]),
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
    found.driver_reasons = driver_reasons(state, req, driver, eta, quote.total_cents)
    found.rider_reasons = rider_reasons(state, req, driver, quote.total_cents)
    return found


def checks(
    state: DispatchState,
    data: Repository,
    req: Request,
    driver: Driver,
    now: datetime,
    pickup_at: datetime,
    dropoff_at: datetime,
) -> list[Check]:
    """The hard constraints of a (request, driver) pair, each with what it found."""
    rider = state.riders[req.rider_id]
    req_status = request_status(state, req, now)
    drv_status = driver_status(state, driver, now)
    zone = find_zone(data, req.pickup_zone) or {}  # the State admits only known zones
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
            pickup_at <= deadline(req),
            f"pickup ETA {iso(pickup_at)}, rider's latest acceptable pickup {iso(deadline(req))}",
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


def driver_reasons(
    state: DispatchState, req: Request, driver: Driver, eta: int, quote_cents: int
) -> list[str]:
    """Why the driver would decline the proposal, by their preferences (none: they accept)."""
    prefs = driver.prefs
    rider = state.riders[req.rider_id]
    reasons = []
    if eta > prefs.max_pickup_minutes:
        reasons.append(f"pickup is {eta} min away; driver accepts at most {prefs.max_pickup_minutes} min")
    if req.dropoff_zone in prefs.avoid_dropoff_zones:
        reasons.append(f"driver does not take drop-offs in {req.dropoff_zone}")
    if quote_cents < prefs.min_fare_cents:
        reasons.append(f"fare {quote_cents} cents is below the driver's minimum {prefs.min_fare_cents}")
    if rider.rating < prefs.min_rider_rating:
        reasons.append(f"rider rating {rider.rating} is below the driver's minimum {prefs.min_rider_rating}")
    return reasons


def rider_reasons(state: DispatchState, req: Request, driver: Driver, quote_cents: int) -> list[str]:
    """Why the rider would decline the accepted driver (none: they confirm)."""
    rider = state.riders[req.rider_id]
    reasons = []
    if driver.rating < rider.min_driver_rating:
        reasons.append(
            f"driver rating {driver.rating} is below the rider's minimum {rider.min_driver_rating}"
        )
    if req.max_fare_cents and quote_cents > req.max_fare_cents:
        reasons.append(f"quoted fare {quote_cents} cents exceeds the rider's cap {req.max_fare_cents}")
    return reasons
