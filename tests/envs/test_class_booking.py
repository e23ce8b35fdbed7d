"""class_booking: scheduling and booking rules on a hand-made club, every tool's success path and
error categories, waitlist promotion order, invariants under random call sequences, determinism."""

from __future__ import annotations

import copy
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from links_support import refile, refusal

from envcraft import Session
from envcraft.core import is_error, load_package

ENV = "class_booking"
PKG = load_package(ENV)
TYPES = PKG.data.json("class_types.json")["class_types"]
TIERS = PKG.data.json("tiers.json")["tiers"]
STUDIOS = PKG.data.json("studios.json")
POLICY = STUDIOS["scheduling"]
ROOMS = {r["room_id"]: (s, r) for s in STUDIOS["studios"] for r in s["rooms"]}
BASE = datetime(2026, 1, 5, 6, 30, tzinfo=UTC)
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
ALL_DAY = {day: ["06:00-21:30"] for day in WEEKDAYS}


def t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def cls(
    sid: str, kind: str, room: str, coach: str, start: str, capacity: int = 0, series: str | None = None
) -> dict:
    begin = t(start)
    end = begin + timedelta(minutes=TYPES[kind]["duration_minutes"])
    cap = capacity or min(TYPES[kind]["capacity"], ROOMS[room][1]["capacity"])
    return {
        "session_id": sid,
        "class_type": kind,
        "room_id": room,
        "coach_id": coach,
        "start": start,
        "end": stamp(end),
        "capacity": cap,
        "series_id": series,
    }


def member(mid: str, name: str, email: str, tier: str, status: str = "active") -> dict:
    return {"member_id": mid, "name": name, "email": email, "tier": tier, "status": status}


def booking(bid: str, mid: str, sid: str, status: str = "booked") -> dict:
    return {
        "booking_id": bid,
        "member_id": mid,
        "session_id": sid,
        "status": status,
        "booked_at": "2026-01-04T10:00:00Z",
    }


SESSIONS = [
    cls("CLS-0", "vinyasa-yoga", "RM-11", "COA-2", "2026-01-05T06:30:00Z"),  # started at the base time
    cls("CLS-1", "power-spin", "RM-12", "COA-1", "2026-01-05T07:00:00Z"),
    cls("CLS-2", "vinyasa-yoga", "RM-13", "COA-2", "2026-01-06T09:30:00Z", capacity=2),  # full, 2 waiting
    cls("CLS-3", "reformer-pilates", "RM-13", "COA-2", "2026-01-07T12:15:00Z"),
    cls("CLS-4", "hiit-circuit", "RM-21", "COA-3", "2026-01-05T17:30:00Z"),
    cls("CLS-5", "vinyasa-yoga", "RM-11", "COA-1", "2026-01-09T17:30:00Z"),
    cls("CLS-6", "yin-yoga", "RM-11", "COA-1", "2026-01-06T09:00:00Z"),
    cls("CLS-7", "power-spin", "RM-12", "COA-1", "2026-01-12T07:00:00Z"),
    *(
        cls(
            f"CLS-{8 + w}",
            "power-spin",
            "RM-12",
            "COA-1",
            f"2026-01-{8 + 7 * w:02d}T12:15:00Z",
            series="SER-1",
        )
        for w in range(3)
    ),
]
FIXTURE: dict[str, Any] = {
    "coaches": {
        c["coach_id"]: c
        for c in (
            {
                "coach_id": "COA-1",
                "name": "Alex Romero",
                "home_studio_id": "STU-1",
                "qualifications": ["cycling", "yoga"],
                "availability": ALL_DAY,
            },
            {
                "coach_id": "COA-2",
                "name": "Alex Kim",
                "home_studio_id": "STU-2",
                "qualifications": ["pilates", "yoga"],
                "availability": {**ALL_DAY, "mon": ["06:00-12:00"]},
            },
            {
                "coach_id": "COA-3",
                "name": "Dana Silva",
                "home_studio_id": "STU-2",
                "qualifications": ["boxing", "hiit", "strength"],
                "availability": {day: ["16:00-21:30"] for day in WEEKDAYS},
            },
            {
                "coach_id": "COA-4",
                "name": "Jordan Brooks",
                "home_studio_id": "STU-1",
                "qualifications": ["pilates"],
                "availability": ALL_DAY,
            },
        )
    },
    "members": {
        m["member_id"]: m
        for m in (
            member("MEM-1", "Sam Taylor", "sam.taylor@mail.example", "basic"),
            member("MEM-2", "Sam Taylor", "sam.t@corp.example", "plus"),
            member("MEM-3", "Priya Patel", "priya@mail.example", "premium"),
            member("MEM-4", "Omar Haddad", "omar@mail.example", "plus"),
            member("MEM-5", "Mei Chen", "mei@mail.example", "plus", status="frozen"),
            member("MEM-6", "Lena Fischer", "lena@mail.example", "plus"),
            member("MEM-7", "Felix Novak", "felix@mail.example", "plus"),
        )
    },
    "sessions": {s["session_id"]: s for s in SESSIONS},
    "bookings": {
        b["booking_id"]: b
        for b in (
            booking("BKG-1", "MEM-1", "CLS-1"),
            booking("BKG-2", "MEM-3", "CLS-2"),
            booking("BKG-3", "MEM-4", "CLS-2"),
            booking("BKG-4", "MEM-2", "CLS-4"),
            booking("BKG-5", "MEM-4", "CLS-0"),
        )
    },
    "waitlist": {
        "WL-1": {
            "entry_id": "WL-1",
            "member_id": "MEM-2",
            "session_id": "CLS-2",
            "joined_at": "2026-01-05T05:00:00Z",
        },
        "WL-2": {
            "entry_id": "WL-2",
            "member_id": "MEM-6",
            "session_id": "CLS-2",
            "joined_at": "2026-01-05T05:10:00Z",
        },
    },
    "series": {
        "SER-1": {
            "series_id": "SER-1",
            "class_type": "power-spin",
            "room_id": "RM-12",
            "coach_id": "COA-1",
            "weekday": "thu",
            "start_time": "12:15",
            "weeks": 3,
            "session_ids": ["CLS-8", "CLS-9", "CLS-10"],
        },
    },
    "next_session": 100,
    "next_booking": 100,
    "next_entry": 100,
    "next_series": 10,
}


def club(changes: dict[str, Any] | None = None) -> Session:
    """A session on the fixture, with ``{"table/id/field": value}`` changes applied."""
    state = copy.deepcopy(FIXTURE)
    for path, value in (changes or {}).items():
        table, key, field = path.split("/")
        state[table][key][field] = value
    return Session.memory(ENV, state=state)


@pytest.fixture
def session() -> Session:
    return club()


def call(s: Session, tool: str, **args: Any) -> dict[str, Any]:
    result = s.call(tool, args)
    assert not is_error(result), result
    return result


def fails(s: Session, tool: str, category: str, why: str = "", **args: Any) -> dict[str, Any]:
    before = s.state()
    result = s.call(tool, args)
    assert is_error(result), result
    assert result["error"]["category"] == category, result
    if why:  # the machine-readable reason code
        assert result["error"]["reason"] == why, result
    assert s.state() == before
    return result["error"]


# -- invariants ---------------------------------------------------------------------------------------
def check_invariants(state: dict[str, Any]) -> None:
    sessions = [s for s in state["sessions"].values() if s["status"] == "scheduled"]
    span = {s["session_id"]: (t(s["start"]), t(s["end"])) for s in state["sessions"].values()}
    by_room: dict[str, list[dict[str, Any]]] = {}
    by_coach: dict[str, list[dict[str, Any]]] = {}
    for a in sessions:
        a0 = span[a["session_id"]][0]
        studio = ROOMS[a["room_id"]][0]
        assert studio["opens"] <= a["start"][11:16] and a["end"][11:16] <= studio["closes"], a
        windows = state["coaches"][a["coach_id"]]["availability"][WEEKDAYS[a0.weekday()]]
        assert any(w[:5] <= a["start"][11:16] and a["end"][11:16] <= w[6:] for w in windows), a
        assert a["capacity"] <= ROOMS[a["room_id"]][1]["capacity"]
        by_room.setdefault(a["room_id"], []).append(a)
        by_coach.setdefault(a["coach_id"], []).append(a)
    turnover = timedelta(minutes=POLICY["room_turnover_minutes"])
    for group, is_room in [(g, True) for g in by_room.values()] + [(g, False) for g in by_coach.values()]:
        for i, a in enumerate(group):
            a0, a1 = span[a["session_id"]]
            for b in group[i + 1 :]:
                b0, b1 = span[b["session_id"]]
                gap = turnover
                if not is_room:
                    same = ROOMS[a["room_id"]][0] is ROOMS[b["room_id"]][0]
                    key = "coach_gap_same_studio_minutes" if same else "coach_gap_other_studio_minutes"
                    gap = timedelta(minutes=POLICY[key])
                assert not (a0 < b1 + gap and b0 < a1 + gap), (a, b)
    active = [b for b in state["bookings"].values() if b["status"] == "booked"]
    per_session = Counter(b["session_id"] for b in active)
    for sid, count in per_session.items():
        assert state["sessions"][sid]["status"] == "scheduled"
        assert count <= state["sessions"][sid]["capacity"], sid
    assert len({(b["member_id"], b["session_id"]) for b in active}) == len(active)
    by_member: dict[str, list[dict[str, Any]]] = {}
    for b in active:
        by_member.setdefault(b["member_id"], []).append(state["sessions"][b["session_id"]])
    for mine in by_member.values():
        for i, a in enumerate(mine):
            for b in mine[i + 1 :]:
                (a0, a1), (b0, b1) = span[a["session_id"]], span[b["session_id"]]
                assert not (a0 < b1 and b0 < a1), (a, b)
    weeks = Counter(
        (b["member_id"], span[b["session_id"]][0].isocalendar()[:2])
        for b in state["bookings"].values()
        if b["status"] in ("booked", "late_cancelled")
    )
    for (mid, _), used in weeks.items():
        assert used <= TIERS[state["members"][mid]["tier"]]["max_bookings_per_week"], (mid, used)
    waiting = {
        (e["member_id"], e["session_id"]) for e in state["waitlist"].values() if e["status"] == "waiting"
    }
    assert not waiting & {(b["member_id"], b["session_id"]) for b in active}
    for _, sid in waiting:
        assert state["sessions"][sid]["status"] == "scheduled"


def test_fixture_satisfies_the_invariants() -> None:
    check_invariants(club().state())


# -- the generator -------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_generated_worlds_satisfy_the_invariants(seed: int) -> None:
    state = Session.memory(ENV, seed=seed).state()
    check_invariants(state)
    assert len(state["members"]) == 20 and len(state["sessions"]) >= 40 and state["series"]
    full = [
        s
        for s in state["sessions"].values()
        if sum(
            b["session_id"] == s["session_id"] and b["status"] == "booked" for b in state["bookings"].values()
        )
        == s["capacity"]
    ]
    assert full and any(e["status"] == "waiting" for e in state["waitlist"].values())
    assert max(Counter(m["name"] for m in state["members"].values()).values()) >= 2
    assert any(m["status"] == "frozen" for m in state["members"].values())


def test_generator_is_deterministic_and_scales() -> None:
    assert Session.memory(ENV, seed=4).state_hash() == Session.memory(ENV, seed=4).state_hash()
    assert Session.memory(ENV, seed=4).state_hash() != Session.memory(ENV, seed=5).state_hash()
    big = Session.memory(ENV, seed=4, size=3).state()
    assert len(big["members"]) == 60 and len(big["coaches"]) == 10
    check_invariants(big)


# -- reads -----------------------------------------------------------------------------------------------
def test_search_classes_filters(session: Session) -> None:
    today = call(session, "search_classes", date="2026-01-05")["classes"]
    assert [c["session_id"] for c in today] == ["CLS-1", "CLS-4"]  # CLS-0 already started
    assert call(session, "search_classes", class_type="power-spin", limit=2)["count"] == 5
    assert len(call(session, "search_classes", class_type="power-spin", limit=2)["classes"]) == 2
    assert {c["studio_id"] for c in call(session, "search_classes", studio_id="STU-2")["classes"]} == {
        "STU-2"
    }
    spots = call(session, "search_classes", date="2026-01-06", only_with_spots=True)["classes"]
    assert [c["session_id"] for c in spots] == ["CLS-6"]
    assert all(c["coach_id"] == "COA-3" for c in call(session, "search_classes", coach_id="COA-3")["classes"])
    fails(session, "search_classes", "not_found", class_type="zumba")
    fails(session, "search_classes", "not_found", studio_id="STU-9")
    fails(session, "search_classes", "not_found", coach_id="COA-9")
    fails(session, "search_classes", "invalid_argument", date="05/01/2026")
    fails(session, "search_classes", "invalid_argument", limit=0)


def test_get_class_shows_roster_and_waitlist_in_order(session: Session) -> None:
    view = call(session, "get_class", session_id="CLS-2")
    assert [r["member_id"] for r in view["roster"]] == ["MEM-3", "MEM-4"] and view["spots_left"] == 0
    assert [(w["position"], w["entry_id"]) for w in view["waitlist"]] == [(1, "WL-1"), (2, "WL-2")]
    fails(session, "get_class", "not_found", session_id="CLS-99")


def test_member_reads(session: Session) -> None:
    sams = call(session, "find_members", name="sam taylor")["members"]
    assert [m["member_id"] for m in sams] == ["MEM-1", "MEM-2"]
    assert call(session, "find_members", email="SAM.T@corp.example")["members"][0]["member_id"] == "MEM-2"
    info = call(session, "get_member", member_id="MEM-2")
    assert info["tier_rules"]["booking_window_days"] == 7
    assert [b["booking_id"] for b in info["bookings"]] == ["BKG-4"]
    assert [e["entry_id"] for e in info["waitlist"]] == ["WL-1"]
    assert info["bookings_per_week"]["2026-01-05"] == 1
    fails(session, "get_member", "not_found", member_id="MEM-99")
    assert [c["coach_id"] for c in call(session, "list_coaches", qualification="pilates")["coaches"]] == [
        "COA-2",
        "COA-4",
    ]
    studios = call(session, "list_studios")
    assert len(studios["studios"]) == 2 and studios["class_types"]["power-spin"]["room_feature"] == "bikes"


# -- booking -----------------------------------------------------------------------------------------------
def test_book_class_success_and_every_refusal(session: Session) -> None:
    made = call(session, "book_class", member_id="MEM-6", session_id="CLS-4")
    assert (
        made["booking"]["source"] == "direct" and made["spots_left"] == TYPES["hiit-circuit"]["capacity"] - 2
    )
    fails(session, "book_class", "not_found", member_id="MEM-99", session_id="CLS-4")
    fails(session, "book_class", "not_found", member_id="MEM-6", session_id="CLS-99")
    error = fails(
        session, "book_class", "permission_denied", "inactive", member_id="MEM-5", session_id="CLS-4"
    )
    assert error["missing_permission"] == "active_membership" and error["member_id"] == "MEM-5"
    fails(session, "book_class", "permission_denied", "premium_only", member_id="MEM-4", session_id="CLS-3")
    fails(session, "book_class", "invalid_transition", "started", member_id="MEM-6", session_id="CLS-0")
    error = fails(session, "book_class", "conflict", "window", member_id="MEM-2", session_id="CLS-7")
    assert error["opens_at"] == "2026-01-05T07:00:00Z"  # plus: 7 days before
    fails(session, "book_class", "conflict", "window", member_id="MEM-1", session_id="CLS-5")  # basic: 3 days
    fails(session, "book_class", "conflict", "already_booked", member_id="MEM-1", session_id="CLS-1")
    fails(session, "book_class", "conflict", "overlap", member_id="MEM-3", session_id="CLS-6")
    error = fails(session, "book_class", "conflict", "full", member_id="MEM-7", session_id="CLS-2")
    assert error["waitlist_length"] == 2


def test_windows_open_with_the_clock() -> None:
    s = club({"sessions/CLS-7/start": "2026-01-12T06:35:00Z", "sessions/CLS-7/end": "2026-01-12T07:20:00Z"})
    fails(s, "book_class", "conflict", "window", member_id="MEM-2", session_id="CLS-7")  # 06:30
    call(s, "list_studios")
    call(s, "list_studios")
    call(s, "list_studios")
    call(s, "list_studios")  # 06:34
    call(s, "book_class", member_id="MEM-2", session_id="CLS-7")  # 06:35: the window opens


def test_weekly_limit_counts_late_cancellations() -> None:
    s = club({"bookings/BKG-5/member_id": "MEM-1", "bookings/BKG-5/status": "late_cancelled"})
    call(s, "book_class", member_id="MEM-1", session_id="CLS-6")  # 3rd this week (with the late one)
    error = fails(s, "book_class", "conflict", "weekly_limit", member_id="MEM-1", session_id="CLS-4")
    assert error["limit"] == 3


def test_cancelled_class_cannot_be_booked() -> None:
    s = club({"sessions/CLS-4/status": "cancelled"})
    fails(s, "book_class", "invalid_transition", "cancelled", member_id="MEM-6", session_id="CLS-4")
    fails(s, "join_waitlist", "invalid_transition", "cancelled", member_id="MEM-6", session_id="CLS-4")


def test_cancel_on_time_late_and_refusals(session: Session) -> None:
    on_time = call(session, "cancel_booking", booking_id="BKG-4")  # 11 h before, plus deadline 8 h
    assert (on_time["late"], on_time["booking"]["status"], on_time["booking"]["fee_eur"]) == (
        False,
        "cancelled",
        0,
    )
    late = call(session, "cancel_booking", booking_id="BKG-1")  # 30 min before, basic deadline 12 h
    assert (late["late"], late["booking"]["status"], late["booking"]["fee_eur"]) == (
        True,
        "late_cancelled",
        15,
    )
    assert session.state()["members"]["MEM-1"]["fees_due_eur"] == 15
    fails(session, "cancel_booking", "invalid_transition", booking_id="BKG-1")
    fails(session, "cancel_booking", "invalid_transition", booking_id="BKG-5")  # CLS-0 started
    fails(session, "cancel_booking", "not_found", booking_id="BKG-99")


def test_cancellation_promotes_the_first_waiting_member(session: Session) -> None:
    result = call(session, "cancel_booking", booking_id="BKG-2")
    assert result["promoted"]["entry_id"] == "WL-1" and result["skipped"] == []
    state = session.state()
    new = state["bookings"][result["promoted"]["booking_id"]]
    assert (new["member_id"], new["source"]) == ("MEM-2", "waitlist")
    assert (
        state["waitlist"]["WL-1"]["status"] == "promoted" and state["waitlist"]["WL-2"]["status"] == "waiting"
    )


def test_promotion_skips_but_keeps_members_who_cannot_take_the_seat(session: Session) -> None:
    call(session, "book_class", member_id="MEM-2", session_id="CLS-6")  # overlaps CLS-2
    result = call(session, "cancel_booking", booking_id="BKG-3")
    assert result["promoted"]["member_id"] == "MEM-6"
    assert [s["entry_id"] for s in result["skipped"]] == ["WL-1"] and "same time" in result["skipped"][0][
        "reason"
    ]
    assert session.state()["waitlist"]["WL-1"]["status"] == "waiting"


def test_booking_directly_takes_the_member_off_the_waitlist() -> None:
    s = club({"sessions/CLS-2/capacity": 3})
    call(s, "book_class", member_id="MEM-6", session_id="CLS-2")
    assert s.state()["waitlist"]["WL-2"]["status"] == "left"


def test_join_and_leave_the_waitlist(session: Session) -> None:
    joined = call(session, "join_waitlist", member_id="MEM-7", session_id="CLS-2")
    assert joined["position"] == 3
    error = fails(session, "join_waitlist", "permission_denied", member_id="MEM-1", session_id="CLS-2")
    assert error["missing_permission"] == "waitlist"
    fails(session, "join_waitlist", "conflict", member_id="MEM-6", session_id="CLS-4")  # seats free
    fails(session, "join_waitlist", "conflict", member_id="MEM-2", session_id="CLS-2")  # already waiting
    fails(session, "join_waitlist", "conflict", "already_booked", member_id="MEM-3", session_id="CLS-2")
    fails(session, "join_waitlist", "permission_denied", "inactive", member_id="MEM-5", session_id="CLS-2")
    fails(session, "join_waitlist", "not_found", member_id="MEM-7", session_id="CLS-99")
    left = call(session, "leave_waitlist", entry_id=joined["entry"]["entry_id"])
    assert left["entry"]["status"] == "left"
    fails(session, "leave_waitlist", "invalid_transition", entry_id=joined["entry"]["entry_id"])
    fails(session, "leave_waitlist", "not_found", entry_id="WL-99")


def test_waitlist_has_a_maximum_length() -> None:
    state = copy.deepcopy(FIXTURE)
    for i in range(POLICY["waitlist_max"]):
        mid = f"MEM-{20 + i}"
        state["members"][mid] = member(mid, f"Extra {i}", f"x{i}@mail.example", "plus")
        state["waitlist"][f"WL-{20 + i}"] = {
            "entry_id": f"WL-{20 + i}",
            "member_id": mid,
            "session_id": "CLS-3",
            "joined_at": "2026-01-05T05:00:00Z",
        }
    state["sessions"]["CLS-3"]["capacity"] = 1
    state["bookings"]["BKG-9"] = booking("BKG-9", "MEM-3", "CLS-3")
    state["members"]["MEM-7"]["tier"] = "premium"
    s = Session.memory(ENV, state=state)
    error = fails(s, "join_waitlist", "conflict", member_id="MEM-7", session_id="CLS-3")
    assert "waitlist" in error["message"]


def test_book_series_books_what_is_possible_now(session: Session) -> None:
    result = call(session, "book_series", member_id="MEM-3", series_id="SER-1")  # premium: 14 days
    assert [b["session_id"] for b in result["booked"]] == ["CLS-8", "CLS-9"]
    assert [s["session_id"] for s in result["skipped"]] == ["CLS-10"]
    assert {b["source"] for b in result["booked"]} == {"series"}
    error = fails(session, "book_series", "conflict", member_id="MEM-1", series_id="SER-1")  # basic: 3 days
    assert len(error["skipped"]) == 3
    fails(session, "book_series", "permission_denied", member_id="MEM-5", series_id="SER-1")
    fails(session, "book_series", "not_found", member_id="MEM-3", series_id="SER-9")


# -- scheduling ---------------------------------------------------------------------------------------------
def test_schedule_class_success_and_every_refusal(session: Session) -> None:
    made = call(session, "schedule_class", class_type="power-spin", room_id="RM-22", coach_id="COA-1",
                start="2026-01-07T18:00:00Z")["class"]  # fmt: skip
    assert (made["end"], made["capacity"], made["studio_id"]) == ("2026-01-07T18:45:00Z", 14, "STU-2")
    args = {"class_type": "power-spin", "room_id": "RM-22", "coach_id": "COA-1"}
    fails(
        session,
        "schedule_class",
        "not_found",
        **{**args, "class_type": "zumba"},
        start="2026-01-07T18:00:00Z",
    )
    fails(
        session, "schedule_class", "not_found", **{**args, "room_id": "RM-99"}, start="2026-01-07T18:00:00Z"
    )
    fails(
        session, "schedule_class", "not_found", **{**args, "coach_id": "COA-9"}, start="2026-01-07T18:00:00Z"
    )
    fails(
        session,
        "schedule_class",
        "conflict",
        "room_equipment",
        **{**args, "room_id": "RM-11"},
        start="2026-01-08T18:00:00Z",
    )
    other = {**args, "coach_id": "COA-3"}
    error = fails(
        session, "schedule_class", "permission_denied", "qualification", **other, start="2026-01-08T18:00:00Z"
    )
    assert error["missing_permission"] == "qualification:cycling"
    fails(session, "schedule_class", "invalid_argument", "grid", **args, start="2026-01-08T18:10:00Z")
    fails(session, "schedule_class", "invalid_argument", "past", **args, start="2026-01-05T06:00:00Z")
    fails(session, "schedule_class", "invalid_argument", **args, start="tomorrow at six")
    fails(session, "schedule_class", "conflict", "hours", **args, start="2026-01-08T06:00:00Z")
    hiit = {"class_type": "hiit-circuit", "room_id": "RM-21", "coach_id": "COA-3"}
    fails(session, "schedule_class", "conflict", "coach_unavailable", **hiit, start="2026-01-08T09:00:00Z")
    fails(
        session,
        "schedule_class",
        "conflict",
        "room_taken",
        **{**args, "room_id": "RM-12"},
        start="2026-01-05T07:45:00Z",
    )
    error = fails(session, "schedule_class", "conflict", "coach_busy", **args, start="2026-01-05T08:15:00Z")
    assert any("teaches CLS-1" in p for p in error["problems"])  # 45 minutes to change studio


def test_create_series_is_all_or_nothing(session: Session) -> None:
    args = {
        "class_type": "power-spin",
        "room_id": "RM-12",
        "coach_id": "COA-1",
        "first_start": "2026-01-07T12:15:00Z",
    }
    made = call(session, "create_series", **args, weeks=3)
    assert made["weekday"] == "wed" and len(made["session_ids"]) == 3
    fails(session, "create_series", "conflict", **args, weeks=3)
    s = club()
    call(s, "schedule_class", class_type="endurance-ride", room_id="RM-12", coach_id="COA-1",
         start="2026-01-14T12:00:00Z")  # fmt: skip
    error = fails(s, "create_series", "conflict", **args, weeks=3)
    assert [p[:10] for p in error["problems"]] == ["2026-01-14", "2026-01-14"]  # room and coach
    fails(s, "create_series", "invalid_argument", **args, weeks=1)
    fails(s, "create_series", "permission_denied", **{**args, "coach_id": "COA-2"}, weeks=2)


def test_assign_coach(session: Session) -> None:
    assert call(session, "assign_coach", session_id="CLS-3", coach_id="COA-4")["class"]["coach_id"] == "COA-4"
    fails(session, "assign_coach", "invalid_argument", session_id="CLS-3", coach_id="COA-4")
    fails(session, "assign_coach", "permission_denied", session_id="CLS-3", coach_id="COA-1")
    fails(
        session, "assign_coach", "conflict", "coach_busy", session_id="CLS-6", coach_id="COA-2"
    )  # teaches CLS-2
    fails(session, "assign_coach", "invalid_transition", "started", session_id="CLS-0", coach_id="COA-1")
    fails(session, "assign_coach", "not_found", session_id="CLS-99", coach_id="COA-1")
    fails(session, "assign_coach", "not_found", session_id="CLS-3", coach_id="COA-99")


def test_cancel_class_cascades(session: Session) -> None:
    result = call(session, "cancel_class", session_id="CLS-2", reason="coach ill")
    assert sorted(result["affected_members"]) == ["MEM-2", "MEM-3", "MEM-4", "MEM-6"]
    state = session.state()
    assert {state["bookings"][b]["status"] for b in ("BKG-2", "BKG-3")} == {"cancelled_by_studio"}
    assert {state["waitlist"][w]["status"] for w in ("WL-1", "WL-2")} == {"closed"}
    fails(session, "cancel_class", "invalid_transition", "cancelled", session_id="CLS-2", reason="again")
    fails(session, "cancel_class", "invalid_transition", "started", session_id="CLS-0", reason="late")
    fails(session, "cancel_class", "invalid_argument", session_id="CLS-4", reason=" ")
    fails(session, "cancel_class", "not_found", session_id="CLS-99", reason="x")


# -- random call sequences ---------------------------------------------------------------------------------
def draw_call(data: st.DataObject, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    pick = lambda xs: data.draw(st.sampled_from(sorted(xs)))  # noqa: E731
    upcoming = [s for s, v in state["sessions"].items() if v["status"] == "scheduled"] or sorted(
        state["sessions"]
    )
    tool = data.draw(
        st.sampled_from(
            [
                "search_classes", "get_class", "get_member", "book_class", "book_class", "book_class",
                "cancel_booking", "cancel_booking", "join_waitlist", "join_waitlist", "leave_waitlist",
                "book_series", "schedule_class", "create_series", "assign_coach", "cancel_class",
            ]
        )
    )  # fmt: skip
    member_id, session_id = pick(state["members"]), pick(upcoming)
    if tool == "search_classes":
        return tool, {"date": stamp(BASE + timedelta(days=data.draw(st.integers(0, 7))))[:10]}
    if tool == "get_class":
        return tool, {"session_id": session_id}
    if tool == "get_member":
        return tool, {"member_id": member_id}
    if tool == "join_waitlist":
        booked = Counter(b["session_id"] for b in state["bookings"].values() if b["status"] == "booked")
        full = [s for s in upcoming if booked[s] >= state["sessions"][s]["capacity"]]
        return tool, {
            "member_id": member_id,
            "session_id": pick(full) if full and data.draw(st.booleans()) else session_id,
        }
    if tool == "book_class":
        return tool, {"member_id": member_id, "session_id": session_id}
    if tool == "cancel_booking":
        live = [b for b, v in state["bookings"].items() if v["status"] == "booked"] or ["BKG-0"]
        return tool, {"booking_id": pick(live)}
    if tool == "leave_waitlist":
        return tool, {"entry_id": pick(state["waitlist"] or ["WL-0"])}
    if tool == "book_series":
        return tool, {"member_id": member_id, "series_id": pick(state["series"] or ["SER-0"])}
    if tool == "cancel_class":
        return tool, {"session_id": session_id, "reason": "staff shortage"}
    kind = state["sessions"][session_id]["class_type"] if tool == "assign_coach" else pick(TYPES)
    qualified = [
        c for c, v in state["coaches"].items() if TYPES[kind]["qualification"] in v["qualifications"]
    ]
    coach_id = pick(qualified) if qualified and data.draw(st.integers(0, 4)) else pick(state["coaches"])
    if tool == "assign_coach":
        return tool, {"session_id": session_id, "coach_id": coach_id}
    room = pick([r for r, (_, info) in ROOMS.items() if TYPES[kind]["room_feature"] in info["features"]])
    start = BASE.replace(hour=6, minute=0) + timedelta(days=data.draw(st.integers(0, 9)))
    start += timedelta(minutes=15 * data.draw(st.integers(0, 60)))
    if tool == "schedule_class":
        return tool, {"class_type": kind, "room_id": room, "coach_id": coach_id, "start": stamp(start)}
    return tool, {
        "class_type": kind,
        "room_id": room,
        "coach_id": coach_id,
        "first_start": stamp(start),
        "weeks": 2,
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 5), data=st.data())
def test_random_call_sequences_never_raise_and_keep_invariants(seed: int, data: st.DataObject) -> None:
    s = Session.memory(ENV, seed=seed)
    calls = []
    for index in range(data.draw(st.integers(10, 30))):
        before = s.state()
        tool, args = draw_call(data, before)
        result = s.call(tool, args)
        calls.append((tool, args))
        assert isinstance(result, dict)
        if is_error(result):
            assert result["error"]["category"] != "internal_error", (tool, args, result)
            assert s.state() == before
            continue
        after = s.state()
        check_invariants(after)
        now = BASE + timedelta(minutes=index)
        if tool == "book_class":
            start = t(after["sessions"][args["session_id"]]["start"])
            window = TIERS[after["members"][args["member_id"]]["tier"]]["booking_window_days"]
            assert now < start <= now + timedelta(days=window)
        if tool == "cancel_booking" and result["promoted"]:
            session_id = before["bookings"][args["booking_id"]]["session_id"]
            queue = sorted(
                (
                    e
                    for e in before["waitlist"].values()
                    if e["session_id"] == session_id and e["status"] == "waiting"
                ),
                key=lambda e: (e["joined_at"], e["entry_id"]),
            )
            skipped = {x["entry_id"] for x in result["skipped"]}
            first = next(e["entry_id"] for e in queue if e["entry_id"] not in skipped)
            assert result["promoted"]["entry_id"] == first
    replay = Session.memory(ENV, seed=seed)
    for tool, args in calls:
        replay.call(tool, args)
    assert replay.state_hash() == s.state_hash()


# -- the links of a hand-made S0 (per-record @invariant checks, the messages the whole-state
# validator gave before them) ------------------------------------------------------------------------
def test_a_booking_of_an_unknown_member_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        next(iter(s["bookings"].values()))["member_id"] = "MEM-0"

    assert "refers to unknown member 'MEM-0'" in refusal(ENV, mutate)


def test_a_series_listing_an_unknown_class_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        next(iter(s["series"].values()))["session_ids"].append("CLS-1")

    assert "refers to unknown class 'CLS-1'" in refusal(ENV, mutate)


def test_a_coach_filed_under_another_id_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        refile(s["coaches"], "COA-101", "COA-1")

    assert "COA-1 holds 'COA-101'" in refusal(ENV, mutate)
