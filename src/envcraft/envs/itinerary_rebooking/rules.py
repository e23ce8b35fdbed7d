"""Domain rules of :class:`~.env.ItineraryRebooking`: what its tools check, compute and render.

Functions over the State of ``state.py`` and the reference data: the disruption clock (events
that fire and flights that depart between two calls), fare rules and connections, compensation,
hotel rooms, what still needs action on a trip, and the views the tools return. The tools in
``env.py`` call them, and so does the S0 generator, so S0 is built by the same rules the tools
enforce.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from envcraft import Repository, ToolFailure, iso, parse_time

from .state import (
    ClaimKind,
    Event,
    Flight,
    Itinerary,
    ItineraryState,
    Leg,
    Notification,
    Stay,
    Transfer,
    hotel_catalog,
    timetable_rows,
)

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


def airport_info(data: Repository) -> dict[str, Any]:
    return {a["code"]: a for a in data.json("airports.json")["airports"]}


def carrier_alliances(data: Repository) -> dict[str, str]:
    return {c["code"]: c["alliance"] for c in data.json("carriers.json")["carriers"]}


def flight_times(timetable: Mapping[str, Mapping[str, str]], flight: Flight) -> FlightTimes:
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


def night_dates(check_in: str, nights: int) -> list[str]:
    start = date.fromisoformat(check_in)
    return [(start + timedelta(days=i)).isoformat() for i in range(nights)]


def whole_minutes(delta: timedelta) -> int:
    return int(delta.total_seconds() // 60)


def issue_of(code: str, entity_id: str, detail: str) -> dict[str, Any]:
    return {"code": code, "entity_id": entity_id, "detail": detail}


# -- the disruption clock: run first by every tool --------------------------------------------
def fire_due_events(state: ItineraryState, data: Repository, now: datetime) -> None:
    """Apply every pending event whose time has come, then let departed flights take off."""
    due = sorted(
        (e for e in state.events.values() if e.fired_at is None and parse_time(e.fire_at) <= now),
        key=lambda e: (e.fire_at, e.event_id),
    )
    for event in due:
        _apply_event(state, data, event, now)
        event.fired_at = iso(now)
    _depart_flights(state, data, now)


def _apply_event(state: ItineraryState, data: Repository, event: Event, now: datetime) -> None:
    if event.kind == "hotel_overbooking":
        stay = state.stays[event.stay_id or ""]
        if stay.status == "booked" and stay.hotel_id == event.hotel_id:
            stay.status = "walked"
            hotel = state.hotels[stay.hotel_id]
            for night in night_dates(stay.check_in, stay.nights):
                if night in hotel.rooms_left:
                    hotel.rooms_left[night] = 0
            name = hotel_catalog(data)[stay.hotel_id]["name"]
            _notify(
                state, event, stay.itinerary_id, f"{name} is overbooked and cannot honour {stay.stay_id}", now
            )
        return
    flight = state.flights[event.flight_id or ""]
    if flight.status == "cancelled":
        return
    times = flight_times(timetable_rows(data), flight)
    label = f"{flight.flight_no} {times.origin}→{times.destination} on {flight.date}"
    if event.kind == "delay":
        flight.delay_minutes += event.delay_minutes
        flight.delay_reason = event.reason
        flight.status = "delayed"
        new_departure = iso(times.scheduled_departure + timedelta(minutes=flight.delay_minutes))
        summary = (
            f"{label} delayed by {flight.delay_minutes} min ({event.reason}); new departure {new_departure}"
        )
    elif event.kind == "cancellation":
        flight.status = "cancelled"
        flight.delay_reason = event.reason
        summary = f"{label} cancelled ({event.reason})"
    else:
        old_gate, flight.gate = flight.gate, event.new_gate
        summary = f"{label} gate changed from {old_gate or 'TBA'} to {event.new_gate}"
    for leg in sorted(state.legs.values(), key=lambda g: g.leg_id):
        if leg.flight_id == flight.flight_id and leg.status == "confirmed":
            _notify(state, event, leg.itinerary_id, summary, now)


def _notify(state: ItineraryState, event: Event, itinerary_id: str, summary: str, now: datetime) -> None:
    nid = f"NTF-{state.next_notification:04d}"
    state.next_notification += 1
    state.notifications[nid] = Notification(
        notification_id=nid,
        event_id=event.event_id,
        itinerary_id=itinerary_id,
        kind=event.kind,
        summary=summary,
        created_at=iso(now),
    )


def _depart_flights(state: ItineraryState, data: Repository, now: datetime) -> None:
    """Legs whose flight has left become ``flown``, or ``missed`` when the connection broke."""
    tt = timetable_rows(data)
    waiting = [leg for leg in state.legs.values() if leg.status == "confirmed"]
    for leg in sorted(
        waiting, key=lambda g: (flight_times(tt, state.flights[g.flight_id]).departure, g.leg_id)
    ):
        flight = state.flights[leg.flight_id]
        if flight.status == "cancelled" or flight_times(tt, flight).departure > now:
            continue
        previous = previous_leg(state, leg)
        reached = previous is None or (
            previous.status == "flown" and connection_slack(state, data, previous, leg) is None
        )
        leg.status = "flown" if reached else "missed"


# -- fare rules, connections and compensation ------------------------------------------------
def check_bookable(data: Repository, flight: Flight, times: FlightTimes, now: datetime) -> None:
    if flight.status == "cancelled":
        raise ToolFailure("conflict", f"flight {flight.flight_id} is cancelled", flight_id=flight.flight_id)
    cutoff = timedelta(minutes=data.json("fare_rules.json")["booking_cutoff_minutes"])
    if times.departure - cutoff < now:
        raise ToolFailure(
            "conflict",
            f"flight {flight.flight_id} departs at {iso(times.departure)}; booking closed "
            f"{whole_minutes(cutoff)} minutes before departure",
            flight_id=flight.flight_id,
        )
    if flight.seats_left <= 0:
        raise ToolFailure("conflict", f"flight {flight.flight_id} is sold out", flight_id=flight.flight_id)


def change_fee(
    state: ItineraryState, data: Repository, leg: Leg, current: Flight, old: FlightTimes, new: FlightTimes
) -> int:
    """The fee of moving ``leg``; refuses a change the fare class does not permit."""
    rules = data.json("fare_rules.json")
    fare_class = state.itineraries[leg.itinerary_id].fare_class
    fare = rules["fare_classes"][fare_class]
    waiver = rules["disruption_waiver"]
    if _disrupted(state, data, leg, current, waiver["delay_minutes"]):
        scope = waiver["reroute_if_cancelled"] if current.status == "cancelled" else waiver["reroute"]
        fee = 0
    else:
        if not fare["voluntary_change"]:
            raise ToolFailure(
                "permission_denied",
                f"leg {leg.leg_id} is booked in fare class {fare_class}, which does not permit "
                "voluntary changes; only disrupted legs can move",
                leg_id=leg.leg_id,
                fare_class=fare_class,
                missing_permission="voluntary_change",
            )
        scope, fee = fare["reroute"], int(fare["change_fee_eur"])
    alliances = carrier_alliances(data)
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
        raise ToolFailure(
            "permission_denied",
            f"leg {leg.leg_id} may only move to flights of {old.carrier}"
            + (f" or its {alliances[old.carrier]} partners" if scope == "alliance" else "")
            + f" ({fare_class} fare); {new.flight_no} is operated by {new.carrier}",
            leg_id=leg.leg_id,
            missing_permission=f"reroute_{scope}_to_{new.carrier}",
        )
    return fee


def _disrupted(
    state: ItineraryState, data: Repository, leg: Leg, flight: Flight, waiver_minutes: int
) -> bool:
    if leg.status == "missed" or flight.status == "cancelled" or flight.delay_minutes >= waiver_minutes:
        return True
    previous = previous_leg(state, leg)
    if previous is None:
        return False
    stranded = previous.status == "missed" or state.flights[previous.flight_id].status == "cancelled"
    return stranded or connection_slack(state, data, previous, leg) is not None


def check_connections(state: ItineraryState, data: Repository, leg: Leg, new: FlightTimes) -> None:
    """The new flight must leave after the previous leg lands and land before the next leaves."""
    tt, airports = timetable_rows(data), airport_info(data)
    previous, following = previous_leg(state, leg), next_leg(state, leg)
    if previous is not None and state.flights[previous.flight_id].status != "cancelled":
        before = flight_times(tt, state.flights[previous.flight_id])
        mct = timedelta(minutes=airports[new.origin]["min_connection_minutes"])
        if new.departure < before.arrival + mct:
            raise ToolFailure(
                "conflict",
                f"{new.flight_no} departs {iso(new.departure)}, before the previous leg "
                f"{previous.leg_id} lands ({iso(before.arrival)}) plus the {whole_minutes(mct)}-minute "
                f"minimum connection at {new.origin}",
                earliest_departure=iso(before.arrival + mct),
                previous_leg_id=previous.leg_id,
            )
    if following is not None and following.status == "confirmed":
        after_flight = state.flights[following.flight_id]
        if after_flight.status == "cancelled":
            return
        after = flight_times(tt, after_flight)
        mct = timedelta(minutes=airports[new.destination]["min_connection_minutes"])
        if new.arrival + mct > after.departure:
            raise ToolFailure(
                "conflict",
                f"{new.flight_no} lands {iso(new.arrival)}, too late for the next leg "
                f"{following.leg_id} departing {iso(after.departure)} (minimum connection "
                f"{whole_minutes(mct)} minutes at {new.destination}); rebook that leg first",
                latest_arrival=iso(after.departure - mct),
                next_leg_id=following.leg_id,
            )


def connection_slack(state: ItineraryState, data: Repository, previous: Leg, leg: Leg) -> int | None:
    """Minutes missing to make the connection from ``previous`` into ``leg``; None when it holds."""
    tt = timetable_rows(data)
    before = flight_times(tt, state.flights[previous.flight_id])
    after = flight_times(tt, state.flights[leg.flight_id])
    mct = timedelta(minutes=airport_info(data)[after.origin]["min_connection_minutes"])
    short = before.arrival + mct - after.departure
    return whole_minutes(short) if short > timedelta(0) else None


def compensation(
    state: ItineraryState, data: Repository, itinerary: Itinerary, event: Event
) -> tuple[ClaimKind, int, str]:
    if event.kind == "gate_change":
        raise ToolFailure(
            "conflict", "gate changes are not compensated", event_id=event.event_id, eligible=False
        )
    if event.kind == "hotel_overbooking":
        hotel = hotel_catalog(data)[event.hotel_id or ""]
        return "hotel_walk", int(hotel["walk_compensation_eur"]), f"walk compensation of {hotel['name']}"
    policy = data.json("compensation_policy.json")["flight"]
    if event.reason in policy["extraordinary_reasons"]:
        raise ToolFailure(
            "conflict",
            f"{event.event_id} was caused by {event.reason}, an extraordinary circumstance: "
            "no compensation is due",
            event_id=event.event_id,
            eligible=False,
        )
    tt = timetable_rows(data)
    disrupted = state.flights[event.flight_id or ""]
    original = flight_times(tt, disrupted)
    leg = next(
        (
            state.legs[lid]
            for lid in itinerary.leg_ids
            if disrupted.flight_id in (state.legs[lid].flight_id, *state.legs[lid].previous_flight_ids)
        ),
        None,
    )
    if leg is None:
        raise ToolFailure(
            "invalid_argument",
            f"no leg of {itinerary.itinerary_id} was ever on {disrupted.flight_id}",
            field="event_id",
        )
    band = next(b for b in policy["bands"] if b["max_km"] is None or original.distance_km <= b["max_km"])
    if event.kind == "cancellation":
        if leg.flight_id == disrupted.flight_id:
            raise ToolFailure(
                "invalid_transition",
                f"leg {leg.leg_id} is still on the cancelled flight; rebook it before claiming "
                "(the amount depends on the new arrival time)",
                leg_id=leg.leg_id,
                status="not_rebooked",
            )
        late = whole_minutes(
            flight_times(tt, state.flights[leg.flight_id]).arrival - original.scheduled_arrival
        )
        amount = int(band["amount_eur"])
        if late <= band["reroute_reduction_minutes"]:
            amount = amount * (100 - policy["reroute_reduction_pct"]) // 100
        basis = f"cancellation, {original.distance_km} km, rebooked arriving {late} min late"
        return "cancellation", amount, basis
    late = whole_minutes(flight_times(tt, state.flights[leg.flight_id]).arrival - original.scheduled_arrival)
    if late < policy["delay_threshold_minutes"]:
        raise ToolFailure(
            "conflict",
            f"leg {leg.leg_id} arrives {late} min late; compensation starts at "
            f"{policy['delay_threshold_minutes']} min",
            event_id=event.event_id,
            eligible=False,
            arrival_delay_minutes=late,
        )
    return "long_delay", int(band["amount_eur"]), f"arrival {late} min late, {original.distance_km} km"


# -- what still needs action, hotel rooms ----------------------------------------------------
def itinerary_issues(state: ItineraryState, data: Repository, itinerary: Itinerary) -> list[dict[str, Any]]:
    """What still needs action on an itinerary; empty when it is fully consistent."""
    issues: list[dict[str, Any]] = []
    legs = [state.legs[lid] for lid in itinerary.leg_ids]
    for i, leg in enumerate(legs):
        flight = state.flights[leg.flight_id]
        if leg.status == "missed":
            issues.append(issue_of("missed_flight", leg.leg_id, f"{leg.flight_id} left without the traveler"))
        elif leg.status == "confirmed" and flight.status == "cancelled":
            issues.append(issue_of("cancelled_flight", leg.leg_id, f"{leg.flight_id} is cancelled"))
        elif leg.status == "confirmed" and i > 0:
            previous = legs[i - 1]
            usable = previous.status != "missed" and state.flights[previous.flight_id].status != "cancelled"
            short = connection_slack(state, data, previous, leg) if usable else None
            if short is not None:
                detail = f"connection from {previous.leg_id} is {short} min short of the minimum"
                issues.append(issue_of("missed_connection", leg.leg_id, detail))
    for stay in sorted(state.stays.values(), key=lambda s: s.stay_id):
        if stay.itinerary_id == itinerary.itinerary_id:
            issues.extend(_stay_issues(state, data, stay))
    for transfer in sorted(state.transfers.values(), key=lambda t: t.transfer_id):
        if transfer.itinerary_id != itinerary.itinerary_id:
            continue
        window = pickup_window(state, data, transfer)
        pickup = parse_time(transfer.pickup_at)
        if window is not None and not window[0] <= pickup <= window[1]:
            detail = f"pickup {transfer.pickup_at} is outside {iso(window[0])}–{iso(window[1])}"
            issues.append(issue_of("transfer_time", transfer.transfer_id, detail))
    latest = max(
        (n.created_at for n in state.notifications.values() if n.itinerary_id == itinerary.itinerary_id),
        default=None,
    )
    told = max(
        (m.sent_at for m in state.messages.values() if m.itinerary_id == itinerary.itinerary_id),
        default=None,
    )
    if latest is not None and (told is None or told <= latest):
        issues.append(
            issue_of("traveler_not_notified", itinerary.itinerary_id, f"last disruption at {latest}")
        )
    return issues


def _stay_issues(state: ItineraryState, data: Repository, stay: Stay) -> list[dict[str, Any]]:
    if stay.status == "walked":
        return [issue_of("hotel_walked", stay.stay_id, f"{stay.hotel_id} cannot honour the stay")]
    tt = timetable_rows(data)
    arrival_leg = state.legs[stay.arrival_leg_id]
    arrival_flight = state.flights[arrival_leg.flight_id]
    if arrival_leg.status == "missed" or arrival_flight.status == "cancelled":
        return []
    check_in = flight_times(tt, arrival_flight).arrival.date()
    check_out = date.fromisoformat(stay.check_in) + timedelta(days=stay.nights)
    if stay.departure_leg_id is not None:
        departure_flight = state.flights[state.legs[stay.departure_leg_id].flight_id]
        if departure_flight.status != "cancelled":
            check_out = flight_times(tt, departure_flight).departure.date()
    if (check_in.isoformat(), (check_out - check_in).days) != (stay.check_in, stay.nights):
        detail = f"stay should be {check_in.isoformat()} for {(check_out - check_in).days} night(s)"
        return [issue_of("hotel_dates", stay.stay_id, detail)]
    return []


def stay_waived(state: ItineraryState, stay: Stay) -> bool:
    for leg_id in (stay.arrival_leg_id, stay.departure_leg_id):
        if leg_id is None:
            continue
        leg = state.legs[leg_id]
        if leg.previous_flight_ids or leg.status == "missed":
            return True
        if state.flights[leg.flight_id].status != "scheduled":
            return True
    return False


def pickup_window(
    state: ItineraryState, data: Repository, transfer: Transfer
) -> tuple[datetime, datetime] | None:
    leg = state.legs[transfer.leg_id]
    flight = state.flights[leg.flight_id]
    if leg.status == "missed" or flight.status == "cancelled":
        return None
    arrival = flight_times(timetable_rows(data), flight).arrival
    window = data.json("transfers.json")["pickup_window"]
    return (
        arrival + timedelta(minutes=window["min_after_arrival_minutes"]),
        arrival + timedelta(minutes=window["max_after_arrival_minutes"]),
    )


def move_rooms(state: ItineraryState, stay: Stay, hotel_id: str, new_nights: list[str]) -> None:
    """Release the stay's current nights and take the new ones, all or nothing."""
    old_nights = set(night_dates(stay.check_in, stay.nights))
    take_rooms(state, hotel_id, [n for n in new_nights if n not in old_nights])
    rooms = state.hotels[hotel_id].rooms_left
    for night in old_nights - set(new_nights):
        if night in rooms:
            rooms[night] += 1


def take_rooms(state: ItineraryState, hotel_id: str, nights: list[str]) -> None:
    inventory = state.hotels.get(hotel_id)
    rooms = inventory.rooms_left if inventory is not None else {}
    full = [n for n in nights if rooms.get(n, 0) <= 0]
    if full:
        raise ToolFailure(
            "conflict",
            f"{hotel_id} has no room on {', '.join(full)}",
            hotel_id=hotel_id,
            full_nights=full,
        )
    for night in nights:
        rooms[night] -= 1


# -- the trip's legs and the views the tools return --------------------------------------------
def previous_leg(state: ItineraryState, leg: Leg) -> Leg | None:
    ids = state.itineraries[leg.itinerary_id].leg_ids
    index = ids.index(leg.leg_id)
    return state.legs[ids[index - 1]] if index > 0 else None


def next_leg(state: ItineraryState, leg: Leg) -> Leg | None:
    ids = state.itineraries[leg.itinerary_id].leg_ids
    index = ids.index(leg.leg_id)
    return state.legs[ids[index + 1]] if index + 1 < len(ids) else None


def route(state: ItineraryState, data: Repository, legs: list[Leg]) -> str:
    tt = timetable_rows(data)
    stops = [flight_times(tt, state.flights[leg.flight_id]) for leg in legs]
    return "→".join([stops[0].origin, *(s.destination for s in stops)]) if stops else ""


def flight_view(flight: Flight, times: FlightTimes, alliances: Mapping[str, str]) -> dict[str, Any]:
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


def leg_view(state: ItineraryState, data: Repository, leg: Leg) -> dict[str, Any]:
    flight = state.flights[leg.flight_id]
    view = flight_view(flight, flight_times(timetable_rows(data), flight), carrier_alliances(data))
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


def stay_view(data: Repository, stay: Stay) -> dict[str, Any]:
    info = hotel_catalog(data)[stay.hotel_id]
    return {**stay.model_dump(), "hotel_name": info["name"], "city": info["city"]}


def transfer_view(
    state: ItineraryState, data: Repository, transfer: Transfer, now: datetime
) -> dict[str, Any]:
    lead = timedelta(minutes=data.json("transfers.json")["dispatch_lead_minutes"])
    window = pickup_window(state, data, transfer)
    return {
        **transfer.model_dump(),
        "dispatched": now >= parse_time(transfer.pickup_at) - lead,
        "allowed_pickup": [iso(window[0]), iso(window[1])] if window else None,
    }
