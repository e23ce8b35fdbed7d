"""itinerary_rebooking: events fire from the derived clock, every tool's success path and error
categories, invariants under random call sequences, and determinism."""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envcraft import Session
from envcraft.core import is_error, load_package

ENV = "itinerary_rebooking"
PKG = load_package(ENV)
TT = {row["flight_no"]: row for row in PKG.data.csv("schedule.csv")}
MCT = {a["code"]: a["min_connection_minutes"] for a in PKG.data.json("airports.json")["airports"]}
BASE = datetime(2026, 3, 13, 5, 30, tzinfo=UTC)
TICK = timedelta(minutes=5)
D0, D2 = "20260313", "20260315"

# A BCN→AMS→VIE trip on KLM (connection at AMS, 65 minutes above the minimum), back VIE→AMS on
# day 3, a 2-night hotel in Vienna and a transfer after the VIE arrival; plus an AMS→FCO trip.
OUT1, OUT2, BACK = f"KL539-{D0}", f"KL1531-{D0}", f"KL689-{D2}"
FCO1 = f"KL395-{D0}"


def at(minutes: int) -> str:
    return (BASE + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def times(flight_id: str, delay: int = 0) -> tuple[datetime, datetime]:
    number, day = flight_id.rsplit("-", 1)
    row = TT[number]
    hours, minutes = row["departs"].split(":")
    departure = datetime(int(day[:4]), int(day[4:6]), int(day[6:]), int(hours), int(minutes), tzinfo=UTC)
    departure += timedelta(minutes=delay)
    return departure, departure + timedelta(minutes=int(row["duration_minutes"]))


def route(flight_id: str) -> tuple[str, str]:
    row = TT[flight_id.rsplit("-", 1)[0]]
    return row["origin"], row["destination"]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def event(eid: str, kind: str, fire_min: int, **fields: Any) -> dict[str, Any]:
    return {"event_id": eid, "kind": kind, "fire_at": at(fire_min), **fields}


def scenario(
    fare: str = "standard",
    rate: str = "flexible",
    events: tuple[dict[str, Any], ...] = (),
    fco_fare: str = "standard",
) -> dict[str, Any]:
    """The generated world (timetable, inventories) with two hand-made trips and given events."""
    state = copy.deepcopy(_WORLD)
    for flight in state["flights"].values():
        flight["seats_left"] = 5
    arrival = times(OUT2)[1]
    state.update(
        travelers={
            "TRV-1": {
                "traveler_id": "TRV-1",
                "name": "Ana Duarte",
                "email": "ana.duarte@example.com",
                "phone": "+351600000001",
                "sms_opt_in": True,
            },
            "TRV-2": {"traveler_id": "TRV-2", "name": "Ana Duarte", "email": "ana.d@example.org"},
        },
        itineraries={
            "ITN-1": {
                "itinerary_id": "ITN-1",
                "reference": "ABC123",
                "traveler_id": "TRV-1",
                "fare_class": fare,
                "leg_ids": ["LEG-1", "LEG-2", "LEG-3"],
            },
            "ITN-2": {
                "itinerary_id": "ITN-2",
                "reference": "XYZ789",
                "traveler_id": "TRV-2",
                "fare_class": fco_fare,
                "leg_ids": ["LEG-4"],
            },
        },
        legs={
            lid: {"leg_id": lid, "itinerary_id": itn, "flight_id": fid}
            for lid, itn, fid in (
                ("LEG-1", "ITN-1", OUT1),
                ("LEG-2", "ITN-1", OUT2),
                ("LEG-3", "ITN-1", BACK),
                ("LEG-4", "ITN-2", FCO1),
            )
        },
        stays={
            "STY-1": {
                "stay_id": "STY-1",
                "itinerary_id": "ITN-1",
                "hotel_id": "HTL-VIE-01",
                "check_in": "2026-03-13",
                "nights": 2,
                "rate": rate,
                "arrival_leg_id": "LEG-2",
                "departure_leg_id": "LEG-3",
            }
        },
        transfers={
            "TRF-1": {
                "transfer_id": "TRF-1",
                "itinerary_id": "ITN-1",
                "leg_id": "LEG-2",
                "provider": "Vienna Airport Cab",
                "pickup_at": iso(arrival + timedelta(minutes=30)),
            }
        },
        events={e["event_id"]: e for e in events},
        notifications={},
        messages={},
        claims={},
        next_notification=1,
        next_message=1,
        next_claim=1,
    )
    for hotel in state["hotels"].values():
        hotel["rooms_left"] = dict.fromkeys(hotel["rooms_left"], 3)
    return state


_WORLD = Session.memory(ENV, seed=0).state()


def open_session(state: dict[str, Any]) -> Session:
    return Session.memory(ENV, state=state)


def call(session: Session, tool: str, **args: Any) -> dict[str, Any]:
    result = session.call(tool, args)
    assert not is_error(result), result
    return result


def fails(session: Session, tool: str, category: str, **args: Any) -> dict[str, Any]:
    before = session.state()
    result = session.call(tool, args)
    assert is_error(result), result
    assert result["error"]["category"] == category, result
    after = session.state()
    assert after == before  # a failed call changes nothing, events it fired included
    return result["error"]


def tick(session: Session, calls: int) -> None:
    for _ in range(calls):
        call(session, "list_notifications")


CANCEL_OUT2 = event("EVT-1", "cancellation", 0, flight_id=OUT2, reason="crew_shortage")


# -- the generator ------------------------------------------------------------------------------------
def test_generated_world_is_consistent_before_any_event() -> None:
    state = Session.memory(ENV, seed=3).state()
    assert len(state["travelers"]) == 6 and len(state["events"]) >= 5
    names = Counter(t["name"] for t in state["travelers"].values())
    assert names.most_common(1)[0][1] >= 2  # near-duplicate travelers
    quiet = {**state, "events": {}}
    session = open_session(quiet)
    for itinerary_id, itinerary in state["itineraries"].items():
        view = call(session, "get_itinerary", itinerary_id=itinerary_id)
        assert view["issues"] == [], view["issues"]
        legs = [state["legs"][lid]["flight_id"] for lid in itinerary["leg_ids"]]
        for a, b in itertools.pairwise(legs):
            assert route(a)[1] == route(b)[0]


def test_size_scales_the_world() -> None:
    small, big = Session.memory(ENV, seed=1).state(), Session.memory(ENV, seed=1, size=3).state()
    assert len(big["travelers"]) > 2 * len(small["travelers"])
    assert len(big["events"]) > 2 * len(small["events"])


def test_same_seed_same_initial_state_and_same_calls_same_final_state() -> None:
    a, b = Session.memory(ENV, seed=5), Session.memory(ENV, seed=5)
    assert a.state_hash() == b.state_hash()
    assert Session.memory(ENV, seed=6).state_hash() != a.state_hash()
    for session in (a, b):
        feed = call(session, "list_notifications")
        for note in feed["notifications"][:3]:
            session.call("get_itinerary", {"itinerary_id": note["itinerary_id"]})
            session.call(
                "notify_traveler", {"itinerary_id": note["itinerary_id"], "channel": "email", "message": "x"}
            )
        tick(session, 10)
    assert a.state_hash() == b.state_hash()


# -- the clock ----------------------------------------------------------------------------------------
def test_events_fire_from_the_clock_not_before() -> None:
    session = open_session(
        scenario(events=(event("EVT-1", "gate_change", 10, flight_id=OUT1, new_gate="D4"),))
    )
    assert call(session, "list_notifications")["count"] == 0  # call 0 at 05:30
    assert call(session, "list_notifications")["count"] == 0  # call 1 at 05:35
    feed = call(session, "list_notifications")  # call 2 at 05:40 = fire_at
    assert [n["event_id"] for n in feed["notifications"]] == ["EVT-1"]
    state = session.state()
    assert state["events"]["EVT-1"]["fired_at"] == at(10)
    assert state["flights"][OUT1]["gate"] == "D4"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("list_itineraries", {}),
        ("get_itinerary", {"itinerary_id": "ITN-1"}),
        ("list_notifications", {}),
        ("search_flights", {"origin": "AMS", "destination": "VIE", "date": "2026-03-13"}),
        ("search_hotels", {"city": "VIE", "check_in": "2026-03-13", "nights": 2}),
        ("rebook_leg", {"leg_id": "LEG-4", "flight_id": f"KL341-{D0}"}),
        ("change_hotel_dates", {"stay_id": "STY-1", "check_in": "2026-03-13", "nights": 1}),
        (
            "reschedule_transfer",
            {"transfer_id": "TRF-1", "pickup_at": iso(times(OUT2)[1] + timedelta(minutes=60))},
        ),
        ("notify_traveler", {"itinerary_id": "ITN-1", "channel": "email", "message": "hello"}),
    ],
)
def test_every_tool_fires_due_events_first(tool: str, args: dict[str, Any]) -> None:
    session = open_session(
        scenario(events=(event("EVT-1", "gate_change", 0, flight_id=OUT1, new_gate="D4"),))
    )
    call(session, tool, **args)
    assert session.state()["events"]["EVT-1"]["fired_at"] == at(0)


def test_write_tools_that_need_a_fired_event_fire_it_in_the_same_call() -> None:
    walk = event("EVT-1", "hotel_overbooking", 0, stay_id="STY-1", hotel_id="HTL-VIE-01")
    session = open_session(scenario(events=(walk,)))
    moved = call(session, "relocate_hotel_stay", stay_id="STY-1", hotel_id="HTL-VIE-02")  # fires, then moves
    assert moved["stay"]["hotel_id"] == "HTL-VIE-02"
    claim = call(session, "file_compensation_claim", itinerary_id="ITN-1", event_id="EVT-1")
    assert claim["amount_eur"] == 120
    call(session, "notify_traveler", itinerary_id="ITN-1", channel="email", message="new hotel")
    acked = call(session, "acknowledge_notification", notification_id="NTF-0001")
    assert acked["acknowledged_at"] is not None


def test_failed_call_rolls_back_fired_events_and_next_call_fires_them() -> None:
    session = open_session(scenario(events=(CANCEL_OUT2,)))
    fails(session, "get_itinerary", "not_found", itinerary_id="ITN-404")
    assert session.state()["events"]["EVT-1"]["fired_at"] is None
    call(session, "list_itineraries")
    assert session.state()["flights"][OUT2]["status"] == "cancelled"


def test_flights_depart_on_their_own_and_a_broken_connection_is_missed() -> None:
    delay = event("EVT-1", "delay", 0, flight_id=OUT1, delay_minutes=120, reason="technical")
    session = open_session(scenario(events=(delay,)))
    departure = times(OUT2)[0]
    tick(session, int((departure - BASE) / TICK) + 1)
    legs = session.state()["legs"]
    assert legs["LEG-1"]["status"] == "flown"  # left at 10:25 after the delay
    assert legs["LEG-2"]["status"] == "missed"  # 12:25 departure, inbound landed 12:30
    issues = call(session, "get_itinerary", itinerary_id="ITN-1")["issues"]
    assert {"missed_flight", "traveler_not_notified"} <= {i["code"] for i in issues}
    error = fails(session, "rebook_leg", "invalid_transition", leg_id="LEG-1", flight_id=f"KL956-{D0}")
    assert "flown" in error["message"]
    moved = call(session, "rebook_leg", leg_id="LEG-2", flight_id=f"KL267-{D0}")
    assert moved["leg"]["leg_status"] == "confirmed" and moved["change_fee_eur"] == 0


# -- reads ----------------------------------------------------------------------------------------------
def test_list_itineraries_filters_by_name_email_and_flight() -> None:
    session = open_session(scenario())
    assert call(session, "list_itineraries", traveler_name="ana duarte")["count"] == 2
    assert [
        i["itinerary_id"] for i in call(session, "list_itineraries", email="ANA.D@example.org")["itineraries"]
    ] == ["ITN-2"]
    found = call(session, "list_itineraries", flight_id=OUT2)["itineraries"]
    assert [i["itinerary_id"] for i in found] == ["ITN-1"] and found[0]["route"] == "BCN→AMS→VIE→AMS"


def test_get_itinerary_and_its_not_found() -> None:
    session = open_session(scenario())
    view = call(session, "get_itinerary", itinerary_id="ITN-1")
    assert [leg["leg_id"] for leg in view["legs"]] == ["LEG-1", "LEG-2", "LEG-3"]
    assert view["issues"] == [] and view["transfers"][0]["dispatched"] is False
    fails(session, "get_itinerary", "not_found", itinerary_id="ITN-9")


def test_list_notifications_filters_and_errors() -> None:
    session = open_session(scenario(events=(CANCEL_OUT2,)))
    assert call(session, "list_notifications", itinerary_id="ITN-2")["count"] == 0
    assert call(session, "list_notifications", itinerary_id="ITN-1")["count"] == 1
    fails(session, "list_notifications", "not_found", itinerary_id="ITN-9")


def test_search_flights_sorts_by_estimated_departure_and_validates() -> None:
    delay = event("EVT-1", "delay", 0, flight_id=f"KL1726-{D0}", delay_minutes=400, reason="technical")
    session = open_session(scenario(events=(delay,)))
    found = call(session, "search_flights", origin="ams", destination="VIE", date="2026-03-13")["flights"]
    assert [f["flight_id"] for f in found] == [f"KL1531-{D0}", f"KL1726-{D0}", f"KL267-{D0}"]
    later = call(
        session,
        "search_flights",
        origin="AMS",
        destination="VIE",
        date="2026-03-13",
        earliest_departure=at(600),
    )
    assert [f["flight_id"] for f in later["flights"]] == [f"KL267-{D0}"]
    fails(session, "search_flights", "not_found", origin="XXX", destination="VIE", date="2026-03-13")
    fails(session, "search_flights", "invalid_argument", origin="AMS", destination="VIE", date="13/03/2026")
    fails(session, "search_flights", "invalid_argument", origin="AMS", destination="VIE", date="2026-04-01")
    fails(
        session,
        "search_flights",
        "invalid_argument",
        origin="AMS",
        destination="VIE",
        date="2026-03-13",
        earliest_departure="noon",
    )


def test_search_hotels_lists_hotels_with_every_night_free() -> None:
    state = scenario()
    state["hotels"]["HTL-VIE-02"]["rooms_left"]["2026-03-14"] = 0
    session = open_session(state)
    found = call(session, "search_hotels", city="VIE", check_in="2026-03-13", nights=2)
    assert [h["hotel_id"] for h in found["hotels"]] == ["HTL-VIE-01"] and found["hotels"][0][
        "total_eur"
    ] == 316
    fails(session, "search_hotels", "not_found", city="OSL", check_in="2026-03-13", nights=1)
    fails(session, "search_hotels", "invalid_argument", city="VIE", check_in="2026-03-13", nights=0)
    fails(session, "search_hotels", "invalid_argument", city="VIE", check_in="2026-03-14", nights=3)


# -- rebook_leg -------------------------------------------------------------------------------------------
def test_rebook_cancelled_connection_moves_the_seat_for_free() -> None:
    session = open_session(scenario(fare="saver", events=(CANCEL_OUT2,)))
    new = f"KL267-{D0}"
    result = call(session, "rebook_leg", leg_id="LEG-2", flight_id=new)
    assert result["change_fee_eur"] == 0 and result["released_flight_id"] == OUT2
    state = session.state()
    assert state["flights"][new]["seats_left"] == 4 and state["flights"][OUT2]["seats_left"] == 6
    assert state["legs"]["LEG-2"]["previous_flight_ids"] == [OUT2]
    codes = {i["code"] for i in result["issues"]}
    assert codes == {"transfer_time", "traveler_not_notified"}


def test_voluntary_change_follows_the_fare_class() -> None:
    later = f"KL267-{D0}"
    standard = open_session(scenario(fare="standard"))
    assert call(standard, "rebook_leg", leg_id="LEG-2", flight_id=later)["change_fee_eur"] == 75
    flex = open_session(scenario(fare="flex"))
    assert call(flex, "rebook_leg", leg_id="LEG-2", flight_id=later)["change_fee_eur"] == 0
    saver = open_session(scenario(fare="saver"))
    error = fails(saver, "rebook_leg", "permission_denied", leg_id="LEG-2", flight_id=later)
    assert error["missing_permission"] == "voluntary_change" and error["leg_id"] == "LEG-2"


def test_reroute_scope_carrier_alliance_any() -> None:
    partner = f"AF1531-{D0}"
    error = fails(
        open_session(scenario(fco_fare="standard")),
        "rebook_leg",
        "permission_denied",
        leg_id="LEG-4",
        flight_id=partner,
    )
    assert "KL" in error["message"]
    call(open_session(scenario(fco_fare="flex")), "rebook_leg", leg_id="LEG-4", flight_id=partner)
    # BCN→AMS: Vueling has no alliance. A long delay allows partners only, a cancellation any carrier.
    vueling = f"VY1026-{D0}"
    long_delay = event("EVT-1", "delay", 0, flight_id=OUT1, delay_minutes=130, reason="technical")
    fails(
        open_session(scenario(events=(long_delay,))),
        "rebook_leg",
        "permission_denied",
        leg_id="LEG-1",
        flight_id=vueling,
    )
    cancel = event("EVT-1", "cancellation", 0, flight_id=OUT1, reason="technical")
    session = open_session(scenario(events=(cancel,)))
    # VY1026 lands 12:00, too late for the 12:25 connection: the next leg must move first.
    error = fails(session, "rebook_leg", "conflict", leg_id="LEG-1", flight_id=vueling)
    assert error["next_leg_id"] == "LEG-2"
    call(session, "rebook_leg", leg_id="LEG-2", flight_id=f"KL267-{D0}")  # disrupted: inbound cancelled
    assert call(session, "rebook_leg", leg_id="LEG-1", flight_id=vueling)["change_fee_eur"] == 0


def test_rebook_refuses_bad_targets() -> None:
    state = scenario(
        fare="flex", events=(event("EVT-1", "cancellation", 0, flight_id=f"KL267-{D0}", reason="weather"),)
    )
    state["flights"][f"KL1726-{D0}"]["seats_left"] = 0
    session = open_session(state)
    fails(session, "rebook_leg", "not_found", leg_id="LEG-99", flight_id=OUT2)
    fails(session, "rebook_leg", "not_found", leg_id="LEG-2", flight_id="KL1531-20990101")
    fails(session, "rebook_leg", "invalid_argument", leg_id="LEG-2", flight_id=OUT2)
    fails(session, "rebook_leg", "invalid_argument", leg_id="LEG-2", flight_id=f"KL395-{D0}")
    fails(session, "rebook_leg", "conflict", leg_id="LEG-2", flight_id=f"KL267-{D0}")  # cancelled
    tick(session, 20)  # 07:15 departure is now within the 40-minute cutoff
    error = fails(session, "rebook_leg", "conflict", leg_id="LEG-4", flight_id=f"KL693-{D0}")
    assert "booking closed" in error["message"]


def test_rebook_refuses_sold_out_and_short_connections() -> None:
    state = scenario(fare="flex")
    state["flights"][f"KL267-{D0}"]["seats_left"] = 0
    session = open_session(state)
    assert (
        "sold out"
        in fails(session, "rebook_leg", "conflict", leg_id="LEG-2", flight_id=f"KL267-{D0}")["message"]
    )
    error = fails(
        session, "rebook_leg", "conflict", leg_id="LEG-2", flight_id=f"KL1726-{D0}"
    )  # before LEG-1 lands
    assert error["previous_leg_id"] == "LEG-1"
    error = fails(
        session, "rebook_leg", "conflict", leg_id="LEG-1", flight_id=f"KL276-{D0}"
    )  # lands too late
    assert error["next_leg_id"] == "LEG-2"


# -- hotels -----------------------------------------------------------------------------------------------
def test_change_hotel_dates_moves_rooms_and_rules() -> None:
    session = open_session(scenario(rate="flexible"))
    result = call(session, "change_hotel_dates", stay_id="STY-1", check_in="2026-03-14", nights=1)
    rooms = session.state()["hotels"]["HTL-VIE-01"]["rooms_left"]
    assert rooms == {"2026-03-13": 4, "2026-03-14": 3, "2026-03-15": 3}
    assert [i["code"] for i in result["issues"]] == ["hotel_dates"]
    fails(session, "change_hotel_dates", "invalid_argument", stay_id="STY-1", check_in="2026-03-14", nights=1)
    fails(session, "change_hotel_dates", "invalid_argument", stay_id="STY-1", check_in="2026-03-14", nights=9)
    fails(session, "change_hotel_dates", "not_found", stay_id="STY-9", check_in="2026-03-14", nights=1)
    full = scenario()
    full["hotels"]["HTL-VIE-01"]["rooms_left"]["2026-03-15"] = 0
    error = fails(
        open_session(full), "change_hotel_dates", "conflict", stay_id="STY-1", check_in="2026-03-14", nights=2
    )
    assert error["full_nights"] == ["2026-03-15"]


def test_non_refundable_stay_changes_only_after_a_disruption() -> None:
    blocked = open_session(scenario(rate="non_refundable"))
    error = fails(
        blocked, "change_hotel_dates", "permission_denied", stay_id="STY-1", check_in="2026-03-14", nights=1
    )
    assert error["missing_permission"] == "date_change" and error["stay_id"] == "STY-1"
    waived = open_session(scenario(rate="non_refundable", events=(CANCEL_OUT2,)))
    call(waived, "change_hotel_dates", stay_id="STY-1", check_in="2026-03-14", nights=1)


def test_walked_stay_must_be_relocated_in_the_same_city() -> None:
    walk = event("EVT-1", "hotel_overbooking", 0, stay_id="STY-1", hotel_id="HTL-VIE-01")
    state = scenario(events=(walk,))
    state["hotels"]["HTL-VIE-02"]["rooms_left"]["2026-03-14"] = 0
    session = open_session(state)
    issues = call(session, "get_itinerary", itinerary_id="ITN-1")["issues"]
    assert "hotel_walked" in {i["code"] for i in issues}
    fails(
        session, "change_hotel_dates", "invalid_transition", stay_id="STY-1", check_in="2026-03-13", nights=1
    )
    fails(session, "relocate_hotel_stay", "not_found", stay_id="STY-1", hotel_id="HTL-XXX")
    fails(session, "relocate_hotel_stay", "invalid_argument", stay_id="STY-1", hotel_id="HTL-FCO-01")
    fails(session, "relocate_hotel_stay", "invalid_argument", stay_id="STY-1", hotel_id="HTL-VIE-01")
    fails(session, "relocate_hotel_stay", "conflict", stay_id="STY-1", hotel_id="HTL-VIE-02")
    state2 = scenario(events=(walk,))
    session2 = open_session(state2)
    call(session2, "relocate_hotel_stay", stay_id="STY-1", hotel_id="HTL-VIE-02")
    assert session2.state()["hotels"]["HTL-VIE-02"]["rooms_left"]["2026-03-13"] == 2
    fails(session2, "relocate_hotel_stay", "invalid_transition", stay_id="STY-1", hotel_id="HTL-VIE-01")


# -- transfers, messages ------------------------------------------------------------------------------------
def test_reschedule_transfer_window_dispatch_and_cancelled_leg() -> None:
    delay = event("EVT-1", "delay", 0, flight_id=OUT2, delay_minutes=45, reason="technical")
    session = open_session(scenario(events=(delay,)))
    arrival = times(OUT2, delay=45)[1]
    issues = call(session, "get_itinerary", itinerary_id="ITN-1")["issues"]
    assert "transfer_time" in {i["code"] for i in issues}
    fails(
        session,
        "reschedule_transfer",
        "conflict",
        transfer_id="TRF-1",
        pickup_at=iso(arrival + timedelta(minutes=5)),
    )
    fails(session, "reschedule_transfer", "invalid_argument", transfer_id="TRF-1", pickup_at="soon")
    fails(session, "reschedule_transfer", "not_found", transfer_id="TRF-9", pickup_at=iso(arrival))
    result = call(
        session, "reschedule_transfer", transfer_id="TRF-1", pickup_at=iso(arrival + timedelta(minutes=25))
    )
    assert result["transfer"]["pickup_at"] == iso(arrival + timedelta(minutes=25))
    dispatched = scenario()
    dispatched["transfers"]["TRF-1"]["pickup_at"] = at(20)
    fails(
        open_session(dispatched),
        "reschedule_transfer",
        "invalid_transition",
        transfer_id="TRF-1",
        pickup_at=iso(arrival),
    )
    cancelled = open_session(scenario(events=(CANCEL_OUT2,)))
    fails(cancelled, "reschedule_transfer", "conflict", transfer_id="TRF-1", pickup_at=iso(arrival))


def test_notify_traveler_channels_and_limits() -> None:
    session = open_session(scenario())
    sms = call(session, "notify_traveler", itinerary_id="ITN-1", channel="sms", message="Rebooked on KL267.")
    assert sms["to"] == "+351600000001"
    assert (
        call(session, "notify_traveler", itinerary_id="ITN-2", channel="email", message="Hi")["to"]
        == "ana.d@example.org"
    )
    error = fails(
        session, "notify_traveler", "permission_denied", itinerary_id="ITN-2", channel="sms", message="Hi"
    )
    assert error["traveler_id"] == "TRV-2" and error["missing_permission"] == "sms_opt_in"
    fails(
        session, "notify_traveler", "invalid_argument", itinerary_id="ITN-1", channel="sms", message="x" * 321
    )
    fails(session, "notify_traveler", "invalid_argument", itinerary_id="ITN-1", channel="email", message="  ")
    fails(session, "notify_traveler", "invalid_argument", itinerary_id="ITN-1", channel="fax", message="Hi")
    fails(session, "notify_traveler", "missing_field", itinerary_id="ITN-1", channel="email")
    fails(session, "notify_traveler", "not_found", itinerary_id="ITN-9", channel="email", message="Hi")


# -- compensation and acknowledgement ------------------------------------------------------------------------
def test_cancellation_claim_needs_rebooking_and_is_paid_once() -> None:
    session = open_session(scenario(events=(CANCEL_OUT2,)))
    error = fails(
        session, "file_compensation_claim", "invalid_transition", itinerary_id="ITN-1", event_id="EVT-1"
    )
    assert error["leg_id"] == "LEG-2"
    call(session, "rebook_leg", leg_id="LEG-2", flight_id=f"KL267-{D0}")  # lands 355 min late: full amount
    claim = call(session, "file_compensation_claim", itinerary_id="ITN-1", event_id="EVT-1")
    assert (claim["kind"], claim["amount_eur"]) == ("cancellation", 250)
    error = fails(session, "file_compensation_claim", "conflict", itinerary_id="ITN-1", event_id="EVT-1")
    assert error["claim_id"] == claim["claim_id"]
    fails(session, "file_compensation_claim", "invalid_argument", itinerary_id="ITN-2", event_id="EVT-1")
    fails(session, "file_compensation_claim", "not_found", itinerary_id="ITN-1", event_id="EVT-7")
    fails(session, "file_compensation_claim", "not_found", itinerary_id="ITN-7", event_id="EVT-1")


def test_compensation_is_halved_when_the_reroute_arrives_soon() -> None:
    cancel = event("EVT-1", "cancellation", 0, flight_id=OUT1, reason="technical")
    session = open_session(scenario(fare="flex", events=(cancel,)))
    call(session, "rebook_leg", leg_id="LEG-2", flight_id=f"KL267-{D0}")
    call(session, "rebook_leg", leg_id="LEG-1", flight_id=f"VY1026-{D0}")  # lands 90 min after KL539 was due
    claim = call(session, "file_compensation_claim", itinerary_id="ITN-1", event_id="EVT-1")
    assert claim["amount_eur"] == 125


def test_delay_claims_depend_on_length_and_cause() -> None:
    long_delay = event("EVT-1", "delay", 0, flight_id=OUT2, delay_minutes=200, reason="technical")
    weather = event("EVT-2", "delay", 0, flight_id=FCO1, delay_minutes=240, reason="weather")
    short = event("EVT-3", "delay", 0, flight_id=OUT1, delay_minutes=30, reason="technical")
    gate = event("EVT-4", "gate_change", 0, flight_id=BACK, new_gate="C9")
    session = open_session(scenario(events=(long_delay, weather, short, gate)))
    claim = call(session, "file_compensation_claim", itinerary_id="ITN-1", event_id="EVT-1")
    assert (claim["kind"], claim["amount_eur"]) == ("long_delay", 250)
    assert (
        fails(session, "file_compensation_claim", "conflict", itinerary_id="ITN-2", event_id="EVT-2")[
            "eligible"
        ]
        is False
    )
    error = fails(session, "file_compensation_claim", "conflict", itinerary_id="ITN-1", event_id="EVT-3")
    assert error["arrival_delay_minutes"] == 30
    fails(session, "file_compensation_claim", "conflict", itinerary_id="ITN-1", event_id="EVT-4")


def test_acknowledge_is_gated_on_a_consistent_itinerary() -> None:
    session = open_session(scenario(events=(CANCEL_OUT2,)))
    error = fails(session, "acknowledge_notification", "conflict", notification_id="NTF-0001")
    assert {i["code"] for i in error["issues"]} == {"cancelled_flight", "traveler_not_notified"}
    new = call(session, "rebook_leg", leg_id="LEG-2", flight_id=f"KL267-{D0}")["leg"]
    window = call(session, "get_itinerary", itinerary_id="ITN-1")["transfers"][0]["allowed_pickup"]
    call(session, "reschedule_transfer", transfer_id="TRF-1", pickup_at=window[0])
    call(
        session,
        "notify_traveler",
        itinerary_id="ITN-1",
        channel="email",
        message=f"New flight {new['flight_id']}",
    )
    acked = call(session, "acknowledge_notification", notification_id="NTF-0001")
    assert acked["acknowledged_at"] == session.actions()[-1]["time"]
    fails(session, "acknowledge_notification", "invalid_transition", notification_id="NTF-0001")
    fails(session, "acknowledge_notification", "not_found", notification_id="NTF-0404")


def test_a_message_sent_before_a_disruption_does_not_count() -> None:
    late = event("EVT-1", "gate_change", 10, flight_id=OUT1, new_gate="B2")
    session = open_session(scenario(events=(late,)))
    call(session, "notify_traveler", itinerary_id="ITN-1", channel="email", message="Have a good trip")
    tick(session, 2)
    fails(session, "acknowledge_notification", "conflict", notification_id="NTF-0001")
    call(session, "notify_traveler", itinerary_id="ITN-1", channel="email", message="Gate is now B2")
    call(session, "acknowledge_notification", notification_id="NTF-0001")


# -- invariants under random call sequences ------------------------------------------------------------
def check_invariants(s0: dict[str, Any], state: dict[str, Any], now: datetime) -> None:
    booked = Counter(leg["flight_id"] for leg in state["legs"].values())
    booked0 = Counter(leg["flight_id"] for leg in s0["legs"].values())
    for fid, flight in state["flights"].items():
        assert flight["seats_left"] >= 0
        assert flight["seats_left"] + booked[fid] == s0["flights"][fid]["seats_left"] + booked0[fid], fid
    walked_hotels = {
        e["hotel_id"] for e in state["events"].values() if e["kind"] == "hotel_overbooking" and e["fired_at"]
    }
    for hid, hotel in state["hotels"].items():
        for night, left in hotel["rooms_left"].items():
            assert left >= 0
            if hid in walked_hotels:
                continue
            used = sum(1 for s in state["stays"].values() if s["hotel_id"] == hid and _covers(s, night))
            used0 = sum(1 for s in s0["stays"].values() if s["hotel_id"] == hid and _covers(s, night))
            assert left + used == s0["hotels"][hid]["rooms_left"][night] + used0
    for itinerary in state["itineraries"].values():
        legs = [state["legs"][lid] for lid in itinerary["leg_ids"]]
        for i, leg in enumerate(legs):
            assert route(leg["flight_id"]) == route(s0["legs"][leg["leg_id"]]["flight_id"])
            if leg["status"] == "flown":
                assert state["flights"][leg["flight_id"]]["status"] != "cancelled"
                assert i == 0 or legs[i - 1]["status"] == "flown"
    claims = Counter((c["traveler_id"], c["event_id"]) for c in state["claims"].values())
    assert all(n == 1 for n in claims.values())
    for ev in state["events"].values():
        if ev["fired_at"] is None:
            assert datetime.fromisoformat(ev["fire_at"]) > now, ev
        else:
            assert ev["fire_at"] <= ev["fired_at"] <= iso(now)


def _covers(stay: dict[str, Any], night: str) -> bool:
    start = datetime.fromisoformat(stay["check_in"])
    return start <= datetime.fromisoformat(night) < start + timedelta(days=stay["nights"])


def check_rebooking(state: dict[str, Any], leg_id: str) -> None:
    """A successful rebooking leaves its leg connectable to both neighbours."""
    itinerary = state["itineraries"][state["legs"][leg_id]["itinerary_id"]]
    ids = itinerary["leg_ids"]
    index = ids.index(leg_id)

    def live(lid: str) -> tuple[datetime, datetime]:
        flight = state["flights"][state["legs"][lid]["flight_id"]]
        return times(flight["flight_id"], flight["delay_minutes"])

    dep, arr = live(leg_id)
    origin, destination = route(state["legs"][leg_id]["flight_id"])
    if index > 0:
        prev = state["legs"][ids[index - 1]]
        if state["flights"][prev["flight_id"]]["status"] != "cancelled":
            assert dep >= live(prev["leg_id"])[1] + timedelta(minutes=MCT[origin])
    if index + 1 < len(ids):
        nxt = state["legs"][ids[index + 1]]
        if nxt["status"] == "confirmed" and state["flights"][nxt["flight_id"]]["status"] != "cancelled":
            assert arr + timedelta(minutes=MCT[destination]) <= live(nxt["leg_id"])[0]


def draw_call(data: st.DataObject, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A random call whose ids mostly come from the current state, so many calls succeed."""
    pick = lambda xs: data.draw(st.sampled_from(sorted(xs)))  # noqa: E731
    tool = data.draw(
        st.sampled_from(
            [
                "list_itineraries", "get_itinerary", "list_notifications", "search_flights",
                "search_hotels", "rebook_leg", "rebook_leg", "rebook_leg", "change_hotel_dates",
                "relocate_hotel_stay", "reschedule_transfer", "notify_traveler", "file_compensation_claim",
                "acknowledge_notification", "acknowledge_notification",
            ]
        )
    )  # fmt: skip
    itinerary_id = pick(state["itineraries"])
    if tool == "list_itineraries":
        return tool, {"flight_id": pick(state["flights"])} if data.draw(st.booleans()) else {}
    if tool in ("get_itinerary", "list_notifications"):
        return tool, {"itinerary_id": itinerary_id}
    if tool == "search_flights":
        origin, destination = route(pick(state["flights"]))
        return tool, {
            "origin": origin,
            "destination": destination,
            "date": pick(["2026-03-13", "2026-03-14"]),
        }
    if tool == "rebook_leg":
        leg = state["legs"][pick(state["legs"])]
        same_route = [f for f in state["flights"] if route(f) == route(leg["flight_id"])]
        return tool, {"leg_id": leg["leg_id"], "flight_id": pick(same_route)}
    stays = state["stays"]
    if tool in ("search_hotels", "change_hotel_dates"):
        stay = stays[pick(stays)]
        args = {"check_in": pick(["2026-03-13", "2026-03-14"]), "nights": pick([0, 1, 1, 2, 2, 3])}
        if tool == "search_hotels":
            return tool, {"city": pick({h.split("-")[1] for h in state["hotels"]}), **args}
        return tool, {"stay_id": stay["stay_id"], **args}
    if tool == "relocate_hotel_stay":
        stay = stays[pick(stays)]
        city = stay["hotel_id"].split("-")[1]
        return tool, {"stay_id": stay["stay_id"], "hotel_id": pick([h for h in state["hotels"] if city in h])}
    if tool == "reschedule_transfer":
        if not state["transfers"]:
            return "list_notifications", {}
        transfer = state["transfers"][pick(state["transfers"])]
        leg = state["legs"][transfer["leg_id"]]
        flight = state["flights"][leg["flight_id"]]
        arrival = times(flight["flight_id"], flight["delay_minutes"])[1]
        offset = data.draw(st.integers(0, 100))
        return tool, {
            "transfer_id": transfer["transfer_id"],
            "pickup_at": iso(arrival + timedelta(minutes=offset)),
        }
    if tool == "notify_traveler":
        return tool, {"itinerary_id": itinerary_id, "channel": pick(["email", "sms"]), "message": "Update"}
    if not state["notifications"]:
        return tool, {"notification_id": "NTF-0001"} if tool == "acknowledge_notification" else {
            "itinerary_id": itinerary_id,
            "event_id": "EVT-001",
        }
    note = state["notifications"][pick(state["notifications"])]
    if tool == "file_compensation_claim":
        return tool, {"itinerary_id": note["itinerary_id"], "event_id": note["event_id"]}
    return tool, {"notification_id": note["notification_id"]}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 5), data=st.data())
def test_random_call_sequences_never_raise_and_keep_invariants(seed: int, data: st.DataObject) -> None:
    session = Session.memory(ENV, seed=seed)
    s0 = session.state()
    calls: list[tuple[str, dict[str, Any]]] = []
    for index in range(data.draw(st.integers(10, 30))):
        state = session.state()
        now = BASE + TICK * index
        tool, args = draw_call(data, state)
        result = session.call(tool, args)
        calls.append((tool, args))
        assert isinstance(result, dict)
        if is_error(result):
            assert result["error"]["category"] != "internal_error", (tool, args, result)
            assert session.state() == state
            continue
        after = session.state()
        check_invariants(s0, after, now)
        if tool == "rebook_leg":
            check_rebooking(after, args["leg_id"])
        if tool == "acknowledge_notification":
            itinerary_id = after["notifications"][args["notification_id"]]["itinerary_id"]
            assert issues_at_rest(after, itinerary_id) == []
    replay = Session.memory(ENV, seed=seed)
    for tool, args in calls:
        replay.call(tool, args)
    assert replay.state_hash() == session.state_hash()


def issues_at_rest(state: dict[str, Any], itinerary_id: str) -> list[dict[str, Any]]:
    """An itinerary's issues in ``state`` itself: read in a fresh session without pending events
    (its clock is earlier, so nothing departs or fires; issues depend on the state alone)."""
    probe = copy.deepcopy(state)
    probe["events"] = {k: v for k, v in probe["events"].items() if v["fired_at"]}
    result: list[dict[str, Any]] = call(
        Session.memory(ENV, state=probe), "get_itinerary", itinerary_id=itinerary_id
    )["issues"]
    return result


# -- the skill, run as a policy ---------------------------------------------------------------------------
def rebook(s: Session, view: dict[str, Any], leg_id: str) -> None:
    """Step 3 of the skill: the first flight on the leg's route that takes the leg (moving a later
    leg out of the way when the new flight lands too late for it)."""
    legs = {leg["leg_id"]: leg for leg in view["legs"]}
    order = [leg["leg_id"] for leg in view["legs"]]
    leg = legs[leg_id]
    index = order.index(leg_id)
    prev = legs[order[index - 1]] if index else None
    args = {"origin": leg["origin"], "destination": leg["destination"]}
    if prev and prev["flight_status"] != "cancelled" and prev["leg_status"] != "missed":
        args["earliest_departure"] = iso(
            datetime.fromisoformat(prev["estimated_arrival"]) + timedelta(minutes=MCT[leg["origin"]])
        )
    for day in ("2026-03-13", "2026-03-14"):
        for flight in call(s, "search_flights", **args, date=day)["flights"]:
            if (
                flight["status"] == "cancelled"
                or flight["seats_left"] == 0
                or flight["flight_id"] == leg["flight_id"]
            ):
                continue
            result = s.call("rebook_leg", {"leg_id": leg_id, "flight_id": flight["flight_id"]})
            if is_error(result) and "next_leg_id" in result["error"]:
                rebook_after(s, legs[result["error"]["next_leg_id"]], flight)
                result = s.call("rebook_leg", {"leg_id": leg_id, "flight_id": flight["flight_id"]})
            if not is_error(result):
                return


def rebook_after(s: Session, following: dict[str, Any], flight: dict[str, Any]) -> None:
    ready = datetime.fromisoformat(flight["estimated_arrival"]) + timedelta(minutes=MCT[following["origin"]])
    search = {"origin": following["origin"], "destination": following["destination"], "date": iso(ready)[:10]}
    for later in call(s, "search_flights", **search, earliest_departure=iso(ready))["flights"]:
        if later["status"] == "cancelled" or later["seats_left"] == 0:
            continue
        if not is_error(
            s.call("rebook_leg", {"leg_id": following["leg_id"], "flight_id": later["flight_id"]})
        ):
            return


def fix(s: Session, itinerary_id: str) -> None:
    """Steps 2-5 of the skill: work the issue list until it is empty."""
    for _ in range(8):
        view = call(s, "get_itinerary", itinerary_id=itinerary_id)
        if not view["issues"]:
            return
        issue = view["issues"][0]
        code, entity = issue["code"], issue["entity_id"]
        if code in ("cancelled_flight", "missed_flight", "missed_connection"):
            rebook(s, view, entity)
        elif code == "hotel_walked":
            stay = next(x for x in view["stays"] if x["stay_id"] == entity)
            found = call(
                s, "search_hotels", city=stay["city"], check_in=stay["check_in"], nights=stay["nights"]
            )
            hotel = next(h["hotel_id"] for h in found["hotels"] if h["hotel_id"] != stay["hotel_id"])
            call(s, "relocate_hotel_stay", stay_id=entity, hotel_id=hotel)
        elif code == "hotel_dates":
            words = issue["detail"].split()  # "stay should be <date> for <n> night(s)"
            call(s, "change_hotel_dates", stay_id=entity, check_in=words[3], nights=int(words[5]))
        elif code == "transfer_time":
            transfer = next(x for x in view["transfers"] if x["transfer_id"] == entity)
            call(s, "reschedule_transfer", transfer_id=entity, pickup_at=transfer["allowed_pickup"][0])
        else:
            channel = "sms" if view["traveler"]["sms_opt_in"] else "email"
            flights = ", ".join(leg["flight_id"] for leg in view["legs"])
            call(
                s,
                "notify_traveler",
                itinerary_id=itinerary_id,
                channel=channel,
                message=f"New plan: {flights}",
            )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_skill_resolves_every_disruption_of_a_generated_world(seed: int) -> None:
    s = Session.memory(ENV, seed=seed)
    for _ in range(60):  # disruptions keep arriving while we work: keep reading the feed
        feed = call(s, "list_notifications")["notifications"]
        if not feed and all(e["fired_at"] for e in s.state()["events"].values()):
            break
        for note in feed:
            claim = None
            for _attempt in range(3):  # step 7: a new disruption may land just before acknowledging
                fix(s, note["itinerary_id"])
                claim = claim or s.call(
                    "file_compensation_claim",
                    {"itinerary_id": note["itinerary_id"], "event_id": note["event_id"]},
                )
                assert not is_error(claim) or claim["error"]["category"] == "conflict", claim
                if not is_error(
                    s.call("acknowledge_notification", {"notification_id": note["notification_id"]})
                ):
                    break
    state = s.state()
    assert len(state["notifications"]) >= 5
    assert all(n["acknowledged_at"] for n in state["notifications"].values())
