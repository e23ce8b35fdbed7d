"""rideshare_dispatch: every tool's success path and error categories, matching invariants under
random call sequences, and determinism of the generator and of replays."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from links_support import first, refile, refusal

from envcraft import Session
from envcraft.core import load_package

ENV = "rideshare_dispatch"
CLASS_ORDER = ["economy", "comfort", "premium"]
ACTIVE = {"proposed": "held", "dispatched": "en_route", "in_progress": "on_trip"}
REQUEST_FOR_TRIP = {"proposed": "proposed", "dispatched": "matched", "in_progress": "in_progress"}


# -- a hand-built world where every constraint and preference has a witness ----------------------
def _driver(
    driver_id: str,
    zone: str,
    *,
    vehicle_class: str = "economy",
    capacity: int = 4,
    features: list[str] | None = None,
    rating: float = 4.9,
    shift_end: str = "2026-01-05T19:30:00Z",
    permits: list[str] | None = None,
    prefs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "driver_id": driver_id,
        "name": f"Driver {driver_id[-1]}",
        "zone": zone,
        "vehicle": {
            "plate": f"7ABC{driver_id[-1]}00",
            "model": "Toyota Corolla",
            "vehicle_class": vehicle_class,
            "capacity": capacity,
            "features": features or [],
        },
        "rating": rating,
        "rating_count": 9,
        "shift_end": shift_end,
        "permits": permits or [],
        "prefs": {"max_pickup_minutes": 15, **(prefs or {})},
        "idle_since": "2026-01-05T17:00:00Z",
    }


def _request(request_id: str, rider_id: str, pickup: str, dropoff: str, **extra: Any) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "rider_id": rider_id,
        "pickup_zone": pickup,
        "dropoff_zone": dropoff,
        "party_size": extra.pop("party_size", 1),
        "vehicle_class": extra.pop("vehicle_class", "economy"),
        "max_wait_minutes": extra.pop("max_wait_minutes", 20),
        "requested_at": "2026-01-05T17:30:00Z",
        **extra,
    }


def world() -> dict[str, Any]:
    rider = {"rating_count": 10, "phone": "+1-555-000-0000"}
    drivers = [
        _driver("DRV-1", "Z-DTN"),
        _driver("DRV-2", "Z-DTN", rating=4.6, prefs={"min_rider_rating": 4.95}),
        _driver("DRV-3", "Z-STN", vehicle_class="comfort", rating=4.8, shift_end="2026-01-05T17:38:00Z"),
        _driver("DRV-4", "Z-AIR"),
        _driver("DRV-5", "Z-AIR", rating=4.7, permits=["airport"]),
        _driver("DRV-6", "Z-OLD", capacity=6, features=["wheelchair_ramp"], rating=4.8),
        _driver("DRV-7", "Z-AIR", rating=4.95, permits=["airport"]),
        _driver("DRV-8", "Z-NGT"),
        _driver("DRV-9", "Z-DTN", vehicle_class="premium", rating=5.0, shift_end="2026-01-05T17:00:00Z"),
        _driver("DRV-0", "Z-AIR", vehicle_class="comfort", permits=["airport"]),
        _driver("DRV-11", "Z-OLD"),
    ]
    return {
        "riders": {
            "RID-1": {"rider_id": "RID-1", "name": "Ana Ruiz", "rating": 4.9, **rider},
            "RID-2": {
                "rider_id": "RID-2",
                "name": "Ben Ode",
                "rating": 4.5,
                "min_driver_rating": 4.8,
                "blocked_drivers": ["DRV-7"],
                **rider,
            },
            "RID-3": {"rider_id": "RID-3", "name": "Ana Ruiz", "rating": 4.7, **rider},
        },
        "drivers": {d["driver_id"]: d for d in drivers},
        "requests": {
            "REQ-1": _request("REQ-1", "RID-1", "Z-DTN", "Z-MID", party_size=2),
            "REQ-2": _request("REQ-2", "RID-2", "Z-AIR", "Z-TEC", max_wait_minutes=30),
            "REQ-3": _request(
                "REQ-3", "RID-3", "Z-OLD", "Z-HBR", needs=["wheelchair_ramp"], max_fare_cents=800
            ),
            "REQ-4": _request(
                "REQ-4", "RID-3", "Z-DTN", "Z-NGT", party_size=5, vehicle_class="comfort", max_wait_minutes=15
            ),
        },
        "trips": {},
        "next_trip_number": 500,
    }


@pytest.fixture
def s() -> Session:
    return Session.memory(ENV, state=world())


def err(result: dict[str, Any]) -> str:
    assert "error" in result, result
    return str(result["error"]["category"])


def burn(session: Session, actions: int) -> None:
    """Let the clock run: each call is one 30-second tick."""
    for _ in range(actions):
        session.call("list_open_requests", {})


def dispatch(session: Session, request_id: str = "REQ-1", driver_id: str = "DRV-1") -> str:
    proposed = session.call("propose_match", {"request_id": request_id, "driver_id": driver_id})
    assert proposed["status"] == "proposed", proposed
    confirmed = session.call("confirm_match", {"trip_id": proposed["trip_id"]})
    assert confirmed["status"] == "dispatched", confirmed
    return str(proposed["trip_id"])


# -- invariants over the state dict --------------------------------------------------------------
def check_invariants(state: dict[str, Any]) -> None:
    drivers, requests, trips = state["drivers"], state["requests"], state["trips"]
    active_by_driver: Counter[str] = Counter()
    live_by_request: Counter[str] = Counter()
    for trip in trips.values():
        driver = drivers[trip["driver_id"]]
        req = requests[trip["request_id"]]
        if trip["status"] in ACTIVE:
            active_by_driver[trip["driver_id"]] += 1
            assert driver["active_trip_id"] == trip["trip_id"]
            assert driver["status"] == ACTIVE[trip["status"]]
            assert req["trip_id"] == trip["trip_id"]
            assert req["status"] == REQUEST_FOR_TRIP[trip["status"]]
        if trip["status"] in (*ACTIVE, "completed"):
            live_by_request[trip["request_id"]] += 1
        # hard constraints held when the pair was proposed
        assert driver["vehicle"]["capacity"] >= req["party_size"]
        assert set(req["needs"]) <= set(driver["vehicle"]["features"])
        assert CLASS_ORDER.index(driver["vehicle"]["vehicle_class"]) >= CLASS_ORDER.index(
            req["vehicle_class"]
        )
        assert trip["est_dropoff_at"] <= driver["shift_end"]
        if trip["status"] == "completed":
            fare = trip["fare"]
            parts = ("subtotal_cents", "surge_cents", "booking_fee_cents", "airport_surcharge_cents")
            extra = fare["waiting_cents"] + fare["tolls_cents"]
            assert fare["total_cents"] == sum(fare[p] for p in parts) + extra
            assert req["status"] == "completed"
        for stars in (trip["driver_stars"], trip["rider_stars"]):
            assert 0 <= stars <= 5
    assert all(n <= 1 for n in active_by_driver.values()), active_by_driver
    assert all(n <= 1 for n in live_by_request.values()), live_by_request
    for driver in drivers.values():
        busy = driver["status"] in ACTIVE.values()
        assert busy == bool(driver["active_trip_id"]), driver
        assert busy == (active_by_driver[driver["driver_id"]] == 1)
        assert 1.0 <= driver["rating"] <= 5.0
    for req in requests.values():
        if req["status"] in REQUEST_FOR_TRIP.values():
            assert trips[req["trip_id"]]["status"] in ACTIVE
        if req["status"] == "completed":
            assert live_by_request[req["request_id"]] == 1
    for rider in state["riders"].values():
        assert 1.0 <= rider["rating"] <= 5.0


# -- reads ---------------------------------------------------------------------------------------
def test_list_open_requests_filters_and_orders(s: Session) -> None:
    listed = s.call("list_open_requests", {})
    assert [r["request_id"] for r in listed["requests"]] == ["REQ-4", "REQ-1", "REQ-3", "REQ-2"]
    by_name = s.call("list_open_requests", {"rider_name": "ana ruiz"})
    assert {r["rider_id"] for r in by_name["requests"]} == {"RID-1", "RID-3"}
    assert s.call("list_open_requests", {"zone": "Z-AIR"})["count"] == 1
    assert err(s.call("list_open_requests", {"zone": "Z-MOON"})) == "not_found"


def test_get_request_shows_rider_preferences(s: Session) -> None:
    got = s.call("get_request", {"request_id": "REQ-2"})
    assert got["rider"]["blocked_drivers"] == ["DRV-7"]
    assert got["latest_pickup_at"] == "2026-01-05T18:00:00Z"
    assert err(s.call("get_request", {"request_id": "REQ-404"})) == "not_found"


def test_list_available_drivers_ranks_by_eta(s: Session) -> None:
    free = s.call("list_available_drivers", {})
    assert "DRV-9" not in {d["driver_id"] for d in free["drivers"]}  # shift over
    ranked = s.call("list_available_drivers", {"request_id": "REQ-1"})
    etas = [d["eta_minutes"] for d in ranked["drivers"]]
    assert etas == sorted(etas)
    eligible = {d["driver_id"] for d in ranked["drivers"] if d["eligible"]}
    assert {"DRV-1", "DRV-2"} <= eligible
    assert "DRV-8" not in eligible and "DRV-3" not in eligible
    assert err(s.call("list_available_drivers", {"request_id": "REQ-404"})) == "not_found"
    assert err(s.call("list_available_drivers", {"zone": "Z-404"})) == "not_found"
    dispatch(s)
    assert err(s.call("list_available_drivers", {"request_id": "REQ-1"})) == "invalid_transition"


def test_get_driver_and_trip_reads(s: Session) -> None:
    driver = s.call("get_driver", {"driver_id": "DRV-9"})
    assert driver["status"] == "offline" and driver["shift_minutes_left"] == 0
    assert s.call("get_driver", {"driver_id": "DRV-1"})["idle_minutes"] == 30
    assert err(s.call("get_driver", {"driver_id": "DRV-404"})) == "not_found"
    trip_id = dispatch(s)
    assert s.call("get_trip", {"trip_id": trip_id})["status"] == "dispatched"
    assert s.call("get_driver", {"driver_id": "DRV-1"})["active_trip_id"] == trip_id
    assert err(s.call("get_trip", {"trip_id": "TRP-1"})) == "not_found"
    mine = s.call("list_trips", {"driver_id": "DRV-1", "status": "dispatched"})
    assert [t["trip_id"] for t in mine["trips"]] == [trip_id]
    assert s.call("list_trips", {"rider_name": "Ben"})["count"] == 0
    assert err(s.call("list_trips", {"driver_id": "DRV-404"})) == "not_found"
    assert err(s.call("list_trips", {"status": "flying"})) == "invalid_argument"


def test_quote_fare_follows_the_rate_table(s: Session) -> None:
    quote = s.call(
        "quote_fare", {"pickup_zone": "Z-DTN", "dropoff_zone": "Z-MID", "vehicle_class": "economy"}
    )
    # 250 base + 110 * 2.5 km + 30 * 6 min = 705 > 700 minimum; + 175 booking fee
    assert (quote["route_minutes"], quote["route_km"]) == (6, 2.5)
    assert quote["fare"]["subtotal_cents"] == 705 and quote["fare"]["total_cents"] == 880
    surge = s.call(
        "quote_fare", {"pickup_zone": "Z-STD", "dropoff_zone": "Z-AIR", "vehicle_class": "premium"}
    )
    fare = surge["fare"]
    assert fare["surge_multiplier"] == 1.5 and fare["airport_surcharge_cents"] == 450
    assert fare["surge_cents"] == fare["subtotal_cents"] // 2
    assert err(
        s.call("quote_fare", {"pickup_zone": "Z-X", "dropoff_zone": "Z-MID", "vehicle_class": "economy"})
    ) == ("not_found")
    assert err(
        s.call("quote_fare", {"pickup_zone": "Z-DTN", "dropoff_zone": "Z-MID", "vehicle_class": "limo"})
    ) == ("invalid_argument")


def test_score_match_explains_criteria_and_decisions(s: Session) -> None:
    good = s.call("score_match", {"request_id": "REQ-1", "driver_id": "DRV-1"})
    assert good["eligible"] and good["driver_would_accept"] and good["rider_would_confirm"]
    assert abs(sum(c["contribution"] for c in good["criteria"]) - good["score"]) < 0.3
    picky = s.call("score_match", {"request_id": "REQ-1", "driver_id": "DRV-2"})
    assert picky["eligible"] and not picky["driver_would_accept"]
    assert "rider rating" in picky["driver_reasons"][0]
    capped = s.call("score_match", {"request_id": "REQ-3", "driver_id": "DRV-6"})
    assert capped["eligible"] and not capped["rider_would_confirm"]
    assert "cap" in capped["rider_reasons"][0]
    blocked = s.call("score_match", {"request_id": "REQ-2", "driver_id": "DRV-7"})
    assert not blocked["eligible"] and blocked["score"] == 0.0
    assert err(s.call("score_match", {"request_id": "REQ-1", "driver_id": "DRV-404"})) == "not_found"
    assert err(s.call("score_match", {"request_id": "REQ-404", "driver_id": "DRV-1"})) == "not_found"


# -- the whole lifecycle ------------------------------------------------------------------------
def test_happy_path_from_proposal_to_ratings(s: Session) -> None:
    trip_id = dispatch(s)
    state = s.state()
    assert state["drivers"]["DRV-1"]["status"] == "en_route"
    assert state["requests"]["REQ-1"]["status"] == "matched"
    started = s.call("start_trip", {"trip_id": trip_id})
    assert started["status"] == "in_progress"
    done = s.call("complete_trip", {"trip_id": trip_id, "waiting_minutes": 5, "tolls_cents": 250})
    # 705 subtotal + 175 fee + 2 billable waiting minutes * 40 + 250 tolls
    assert done["fare"]["total_cents"] == 1210
    assert done["fare"]["driver_payout_cents"] == 589 + 250  # 75 % of (705 + 80), plus tolls
    state = s.state()
    driver = state["drivers"]["DRV-1"]
    assert (driver["status"], driver["zone"], driver["earnings_cents"]) == ("available", "Z-MID", 839)
    assert state["requests"]["REQ-1"]["status"] == "completed"
    rated = s.call("rate_trip", {"trip_id": trip_id, "rated_by": "rider", "stars": 5})
    assert rated["new_rating"] == 4.91
    assert err(s.call("rate_trip", {"trip_id": trip_id, "rated_by": "rider", "stars": 4})) == "conflict"
    assert (
        err(s.call("rate_trip", {"trip_id": trip_id, "rated_by": "driver", "stars": 2})) == "invalid_argument"
    )
    low = s.call("rate_trip", {"trip_id": trip_id, "rated_by": "driver", "stars": 2, "comment": "rude"})
    assert low["rated"] == "RID-1" and low["new_rating"] == round((4.9 * 10 + 2) / 11, 3)
    check_invariants(s.state())


def test_driver_decline_is_recorded_and_excludes_the_driver(s: Session) -> None:
    declined = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-2"})
    assert declined["status"] == "driver_declined" and declined["driver_reasons"]
    state = s.state()
    assert state["requests"]["REQ-1"]["status"] == "open"
    assert state["requests"]["REQ-1"]["declined_by"] == ["DRV-2"]
    assert state["drivers"]["DRV-2"]["status"] == "available"
    again = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-2"})
    assert err(again) == "conflict" and again["error"]["constraint"] == "not_excluded"


@pytest.mark.parametrize(
    ("request_id", "driver_id", "category", "constraint"),
    [
        ("REQ-4", "DRV-1", "conflict", "capacity"),
        ("REQ-3", "DRV-1", "conflict", "accessibility"),
        ("REQ-4", "DRV-6", "conflict", "vehicle_class"),
        ("REQ-2", "DRV-4", "permission_denied", "airport_permit"),
        ("REQ-1", "DRV-8", "conflict", "wait_window"),
        ("REQ-1", "DRV-3", "conflict", "shift_end"),
        ("REQ-2", "DRV-7", "conflict", "not_excluded"),
        ("REQ-1", "DRV-9", "invalid_transition", "driver_available"),
    ],
)
def test_hard_constraints_refuse_the_proposal(
    s: Session, request_id: str, driver_id: str, category: str, constraint: str
) -> None:
    before = s.state_hash()
    refused = s.call("propose_match", {"request_id": request_id, "driver_id": driver_id})
    assert err(refused) == category and refused["error"]["constraint"] == constraint
    assert s.state_hash() == before


def test_a_driver_serves_one_trip_and_a_request_is_matched_once(s: Session) -> None:
    dispatch(s)
    busy = s.call("propose_match", {"request_id": "REQ-4", "driver_id": "DRV-1"})
    assert err(busy) == "conflict" and busy["error"]["constraint"] == "driver_available"
    taken = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-2"})
    assert err(taken) == "invalid_transition" and taken["error"]["constraint"] == "request_open"
    assert err(s.call("propose_match", {"request_id": "REQ-404", "driver_id": "DRV-1"})) == "not_found"
    assert err(s.call("propose_match", {"request_id": "REQ-1"})) == "missing_field"


def test_rider_declines_at_confirmation(s: Session) -> None:
    proposed = s.call("propose_match", {"request_id": "REQ-2", "driver_id": "DRV-5"})
    assert proposed["status"] == "proposed"
    assert s.state()["drivers"]["DRV-5"]["status"] == "held"
    declined = s.call("confirm_match", {"trip_id": proposed["trip_id"]})
    assert declined["status"] == "rider_declined" and "minimum" in declined["rider_reasons"][0]
    state = s.state()
    assert state["requests"]["REQ-2"]["status"] == "open"
    assert state["drivers"]["DRV-5"]["status"] == "available"
    assert "DRV-5" in state["requests"]["REQ-2"]["declined_by"]
    assert err(s.call("confirm_match", {"trip_id": proposed["trip_id"]})) == "invalid_transition"
    assert s.call("propose_match", {"request_id": "REQ-2", "driver_id": "DRV-0"})["status"] == "proposed"
    assert err(s.call("confirm_match", {"trip_id": "TRP-9"})) == "not_found"


def test_unconfirmed_proposal_lapses_and_frees_the_driver(s: Session) -> None:
    proposed = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-1"})
    burn(s, 7)  # the hold is 3 minutes = 6 ticks
    assert s.call("get_trip", {"trip_id": proposed["trip_id"]})["status"] == "lapsed"
    assert "REQ-1" in {r["request_id"] for r in s.call("list_open_requests", {})["requests"]}
    lapsed = s.call("confirm_match", {"trip_id": proposed["trip_id"]})
    assert err(lapsed) == "invalid_transition" and "lapsed" in lapsed["error"]["message"]
    again = dispatch(s)
    state = s.state()
    assert state["trips"][proposed["trip_id"]]["status"] == "lapsed"
    assert state["requests"]["REQ-1"]["trip_id"] == again
    check_invariants(state)


def test_requests_expire_after_the_max_wait(s: Session) -> None:
    burn(s, 41)  # REQ-1 waits 20 minutes
    assert "REQ-1" not in {r["request_id"] for r in s.call("list_open_requests", {})["requests"]}
    late = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-1"})
    assert err(late) == "invalid_transition" and "expired" in late["error"]["message"]
    s.call("propose_match", {"request_id": "REQ-2", "driver_id": "DRV-0"})
    assert s.state()["requests"]["REQ-1"]["status"] == "expired"


# -- trip lifecycle errors ----------------------------------------------------------------------
def test_start_and_complete_need_the_right_status(s: Session) -> None:
    proposed = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-1"})
    trip_id = proposed["trip_id"]
    assert err(s.call("start_trip", {"trip_id": trip_id})) == "invalid_transition"
    assert err(s.call("complete_trip", {"trip_id": trip_id})) == "invalid_transition"
    assert (
        err(s.call("rate_trip", {"trip_id": trip_id, "rated_by": "rider", "stars": 5}))
        == "invalid_transition"
    )
    s.call("confirm_match", {"trip_id": trip_id})
    assert err(s.call("confirm_match", {"trip_id": trip_id})) == "invalid_transition"
    s.call("start_trip", {"trip_id": trip_id})
    assert err(s.call("complete_trip", {"trip_id": trip_id, "waiting_minutes": 31})) == "invalid_argument"
    assert err(s.call("complete_trip", {"trip_id": trip_id, "tolls_cents": -1})) == "invalid_argument"
    assert (
        err(s.call("rate_trip", {"trip_id": trip_id, "rated_by": "rider", "stars": 6})) == "invalid_argument"
    )
    for tool in ("start_trip", "complete_trip", "cancel_trip", "rate_trip"):
        args = {"trip_id": "TRP-404", "cancelled_by": "rider", "reason": "x", "rated_by": "rider", "stars": 5}
        spec = load_package(ENV).env_class.tools[tool].parameters["properties"]
        assert err(s.call(tool, {k: v for k, v in args.items() if k in spec})) == "not_found"


def test_rider_cancellation_after_grace_costs_a_fee(s: Session) -> None:
    trip_id = dispatch(s)
    free = s.call("cancel_trip", {"trip_id": trip_id, "cancelled_by": "rider", "reason": "plans changed"})
    assert free["cancellation_fee_cents"] == 0 and free["request_status"] == "cancelled"
    trip_id = dispatch(s, "REQ-2", "DRV-0")
    burn(s, 5)
    late = s.call("cancel_trip", {"trip_id": trip_id, "cancelled_by": "rider", "reason": "found a bus"})
    assert late["cancellation_fee_cents"] == 500
    assert s.state()["drivers"]["DRV-0"]["earnings_cents"] == 375
    assert err(s.call("cancel_trip", {"trip_id": trip_id, "cancelled_by": "rider", "reason": "again"})) == (
        "invalid_transition"
    )


def test_driver_cancellation_reopens_the_request_for_rematch(s: Session) -> None:
    trip_id = dispatch(s)
    assert err(s.call("cancel_trip", {"trip_id": trip_id, "cancelled_by": "driver", "reason": " "})) == (
        "invalid_argument"
    )
    out = s.call("cancel_trip", {"trip_id": trip_id, "cancelled_by": "driver", "reason": "flat tyre"})
    assert out["request_status"] == "open"
    state = s.state()
    assert state["drivers"]["DRV-1"]["cancellations"] == 1
    assert state["drivers"]["DRV-1"]["status"] == "available"
    refused = s.call("propose_match", {"request_id": "REQ-1", "driver_id": "DRV-1"})
    assert err(refused) == "conflict" and refused["error"]["constraint"] == "not_excluded"
    rematched = dispatch(s, "REQ-1", "DRV-11")
    s.call("start_trip", {"trip_id": rematched})
    in_car = s.call("cancel_trip", {"trip_id": rematched, "cancelled_by": "rider", "reason": "no"})
    assert err(in_car) == "invalid_transition" and "on board" in in_car["error"]["message"]


# -- generator, determinism, random sequences -----------------------------------------------------
def test_generator_is_seeded_consistent_and_scales() -> None:
    first = Session.memory(ENV, seed=3)
    assert first.state_hash() == Session.memory(ENV, seed=3).state_hash()
    assert first.state_hash() != Session.memory(ENV, seed=4).state_hash()
    state = first.state()
    check_invariants(state)
    names = Counter(r["name"] for r in state["riders"].values())
    assert names.most_common(1)[0][1] >= 2  # a near-duplicate rider name
    statuses = Counter(t["status"] for t in state["trips"].values())
    assert statuses["completed"] >= 1 and statuses["dispatched"] + statuses["in_progress"] >= 1
    big = Session.memory(ENV, seed=3, size=2).state()
    assert len(big["drivers"]) == 2 * len(state["drivers"]) and len(big["requests"]) == 2 * len(
        state["requests"]
    )
    check_invariants(big)


@pytest.mark.parametrize("seed", range(4))
def test_generated_worlds_have_matchable_requests(seed: int) -> None:
    s = Session.memory(ENV, seed=seed)
    servable = 0
    for req in s.call("list_open_requests", {})["requests"]:
        ranked = s.call("list_available_drivers", {"request_id": req["request_id"]})
        for driver in ranked["drivers"]:
            if driver["eligible"]:
                scored = s.call(
                    "score_match", {"request_id": req["request_id"], "driver_id": driver["driver_id"]}
                )
                if scored["driver_would_accept"] and scored["rider_would_confirm"]:
                    servable += 1
                    break
    assert servable >= 2


def _script(session: Session) -> list[dict[str, Any]]:
    out = [session.call("list_open_requests", {})]
    req = out[0]["requests"][0]["request_id"]
    ranked = session.call("list_available_drivers", {"request_id": req})
    for driver in ranked["drivers"]:
        out.append(session.call("propose_match", {"request_id": req, "driver_id": driver["driver_id"]}))
        if out[-1].get("status") == "proposed":
            out.append(session.call("confirm_match", {"trip_id": out[-1]["trip_id"]}))
            break
    return out


def test_same_calls_reach_the_same_state() -> None:
    a, b = Session.memory(ENV, seed=11), Session.memory(ENV, seed=11)
    assert _script(a) == _script(b)
    assert a.state_hash() == b.state_hash()
    assert [e["state_hash"] for e in a.actions()] == [e["state_hash"] for e in b.actions()]


TOOLS = sorted(load_package(ENV).env_class.tools)


def _args(data: st.DataObject, tool: str, state: dict[str, Any]) -> dict[str, Any]:
    def pick(pool: list[str], bogus: str) -> str:
        return data.draw(st.sampled_from([*sorted(pool), bogus]) if pool else st.just(bogus))

    trips, requests, drivers = list(state["trips"]), list(state["requests"]), list(state["drivers"])

    def live(kind: str, status: str) -> list[str]:
        """Ids in a status that makes the next lifecycle step likely to succeed (else all ids)."""
        found = [k for k, v in state[kind].items() if v["status"] == status]
        return found or list(state[kind])

    zones = ["Z-DTN", "Z-AIR", "Z-STD", "Z-NGT", "Z-404"]
    choices: dict[str, dict[str, Any]] = {
        "list_open_requests": {"zone": data.draw(st.sampled_from(["", *zones]))},
        "get_request": {"request_id": pick(requests, "REQ-0")},
        "list_available_drivers": {"request_id": data.draw(st.sampled_from(["", *requests]))},
        "get_driver": {"driver_id": pick(drivers, "DRV-0")},
        "list_trips": {"driver_id": data.draw(st.sampled_from(["", *drivers]))},
        "get_trip": {"trip_id": pick(trips, "TRP-0")},
        "quote_fare": {
            "pickup_zone": data.draw(st.sampled_from(zones)),
            "dropoff_zone": data.draw(st.sampled_from(zones)),
            "vehicle_class": data.draw(st.sampled_from(CLASS_ORDER)),
        },
        "score_match": {"request_id": pick(requests, "REQ-0"), "driver_id": pick(drivers, "DRV-0")},
        "propose_match": {
            "request_id": pick(live("requests", "open"), "REQ-0"),
            "driver_id": pick(live("drivers", "available"), "DRV-0"),
        },
        "confirm_match": {"trip_id": pick(live("trips", "proposed"), "TRP-0")},
        "start_trip": {"trip_id": pick(live("trips", "dispatched"), "TRP-0")},
        "complete_trip": {
            "trip_id": pick(live("trips", "in_progress"), "TRP-0"),
            "waiting_minutes": data.draw(st.integers(-1, 32)),
            "tolls_cents": data.draw(st.sampled_from([0, 350, 5000])),
        },
        "cancel_trip": {
            "trip_id": pick(trips, "TRP-0"),
            "cancelled_by": data.draw(st.sampled_from(["rider", "driver", "dispatcher"])),
            "reason": data.draw(st.sampled_from(["", "running late"])),
        },
        "rate_trip": {
            "trip_id": pick(live("trips", "completed"), "TRP-0"),
            "rated_by": data.draw(st.sampled_from(["rider", "driver"])),
            "stars": data.draw(st.integers(0, 6)),
            "comment": data.draw(st.sampled_from(["", "ok"])),
        },
    }
    return choices[tool]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 3), data=st.data())
def test_random_call_sequences_keep_the_invariants(seed: int, data: st.DataObject) -> None:
    s = Session.memory(ENV, seed=seed)
    # Bias towards writes on live trips so sequences go deep into the lifecycle.
    for _ in range(30):
        state = s.state()
        tool = data.draw(st.sampled_from(TOOLS + ["propose_match", "confirm_match", "start_trip"] * 2))
        before = s.state_hash()
        result = s.call(tool, _args(data, tool, state))
        assert isinstance(result, dict)
        if "error" in result:
            assert result["error"]["category"] != "internal_error", result
            assert s.state_hash() == before
        elif load_package(ENV).env_class.tools[tool].annotations.read_only:
            assert s.state_hash() == before
        check_invariants(s.state())


# -- the links of a hand-made S0 (per-record @invariant checks, the messages the whole-state
# validator gave before them) ------------------------------------------------------------------------
def test_a_request_of_an_unknown_rider_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        first(s["requests"], status="open")["rider_id"] = "RID-0000"

    assert "refers to unknown rider 'RID-0000'" in refusal(ENV, mutate)


def test_a_trip_filed_under_another_id_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        refile(s["trips"], first(s["trips"], status="completed")["trip_id"], "TRP-1")

    assert "TRP-1 holds 'TRP-" in refusal(ENV, mutate)


def test_a_live_trip_its_driver_does_not_hold_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        trip = first(s["trips"], status="dispatched")
        s["drivers"][trip["driver_id"]]["active_trip_id"] = first(s["trips"], status="completed")["trip_id"]

    assert "is dispatched but not its request's and driver's trip" in refusal(ENV, mutate)
