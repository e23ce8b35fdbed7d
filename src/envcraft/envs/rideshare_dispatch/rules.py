"""Domain rules of :class:`~.env.RideshareDispatch`: what its tools check, compute and render.

Rideshare dispatch (rider requests, driver matching, trips and fares). The tool surface and the
State live in ``env.py``; this module holds the logic tool bodies call (the S0 generator shares
it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from envcraft.core.repository import thaw

if TYPE_CHECKING:
    from .env import Fare


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


# -- pure rules shared by the tools and the generator ------------------------------------------
def _minutes(start: datetime, end: datetime) -> int:
    """Whole minutes from ``start`` to ``end`` (negative when ``end`` is earlier)."""
    return int((end - start).total_seconds() // 60)


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def _round(value: float) -> int:
    """Half-up rounding to whole cents (Python's round() rounds halves to even)."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def _average(rating: float, count: int, stars: int) -> float:
    return round((rating * count + stars) / (count + 1), 3)


def _routes(zones: Any) -> dict[tuple[str, str], tuple[int, float]]:
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
