"""Domain rules of :class:`~.env.EventStream`: what its tools check, compute and render.

Event stream consumer (partitioned log, hourly sink, dead-letter queue, offsets). The tool
surface and the State live in ``env.py``; this module holds the logic tool bodies call (the S0
generator shares it, so S0 is built by the same rules the tools enforce).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from envcraft.core.clock import iso, parse_time

DEAD_REASONS: tuple[str, ...] = ("corrupt_json", "schema_violation", "poison_pill", "late_event")
EVENT_ID = re.compile(r'"event_id"\s*:\s*"(EVT-[0-9a-f]{8})"')


class Classified:
    """The verdict on one record, with what processing needs from it."""

    __slots__ = ("detail", "event", "event_id", "offset", "raw", "verdict")

    def __init__(
        self, offset: int, raw: str, verdict: str, detail: str, event: dict[str, Any] | None
    ) -> None:
        self.offset = offset
        self.raw = raw
        self.verdict = verdict
        self.detail = detail
        self.event = event
        found = EVENT_ID.search(raw)
        self.event_id = (
            str(event["event_id"]) if event and "event_id" in event else (found.group(1) if found else "")
        )


# -- pure rules shared by the tools and the generator ------------------------------------------
def _location(topic: str, partition: int, offset: int) -> str:
    return f"{topic}/p{partition}@{offset}"


def _window(moment: datetime, minutes: int) -> datetime:
    """Start of the tumbling window holding ``moment``."""
    seconds = int(moment.timestamp())
    return datetime.fromtimestamp(seconds - seconds % (minutes * 60), tz=moment.tzinfo)


def _parse(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _classify(
    raw: str, schema: Any, watermark: datetime | None, lateness: timedelta, seen: dict[str, str]
) -> tuple[str, str, dict[str, Any] | None]:
    """The verdict on one record: validation first, then duplicates, then lateness."""
    event = _parse(raw)
    if event is None:
        return "corrupt_json", "the line is not a JSON object (truncated or garbled)", None
    version = event.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return "schema_violation", "schema_version is missing or not an integer", event
    if version not in schema["supported_versions"]:
        supported = ", ".join(map(str, schema["supported_versions"]))
        return (
            "poison_pill",
            f"unsupported schema_version {version} (consumer reads {supported}); the deserializer "
            "crashes on it",
            event,
        )
    for name, rule in schema["fields"].items():
        problem = _field_problem(event.get(name), rule)
        if problem:
            return "schema_violation", f"{name}: {problem}", event
    event_id = str(event["event_id"])
    if event_id in seen:
        return "duplicate", seen[event_id], event
    moment = parse_time(str(event["ts"]))
    if watermark is not None and moment < watermark - lateness:
        late = int((watermark - moment).total_seconds() // 60)
        return (
            "late_event",
            f"event time {iso(moment)} is {late} min behind the watermark {iso(watermark)} "
            f"(allowed lateness {int(lateness.total_seconds() // 60)} min)",
            event,
        )
    return "ok", "valid", event


def _field_problem(value: Any, rule: Any) -> str:
    if value is None:
        return "missing"
    kind = rule["type"]
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            return f"expected an integer, got {json.dumps(value)}"
        return f"must be at least {rule['min']}" if "min" in rule and value < rule["min"] else ""
    if not isinstance(value, str):
        return f"expected a string, got {json.dumps(value)}"
    if kind == "enum":
        return "" if value in rule["choices"] else f"'{value}' is not one of {', '.join(rule['choices'])}"
    if kind == "time":
        try:
            parse_time(value)
        except ValueError:
            return f"'{value}' is not an ISO-8601 time"
        return ""
    return "" if re.fullmatch(rule["pattern"], value) else f"'{value}' does not match {rule['pattern']}"


def _ranges(offsets: list[int]) -> list[list[int]]:
    """Consecutive offsets as inclusive [first, last] ranges."""
    found: list[list[int]] = []
    for offset in offsets:
        if found and found[-1][1] == offset - 1:
            found[-1][1] = offset
        else:
            found.append([offset, offset])
    return found


def _render_sink(columns: Any, rows: Any, topic: str) -> str:
    """The hourly aggregate CSV of a topic, rebuilt from the ledger (deterministic order)."""
    totals: dict[tuple[str, str, str], list[int]] = {}
    for row in rows:
        if row.topic != topic:
            continue
        cell = totals.setdefault((row.window, row.merchant_id, row.currency), [0, 0])
        cell[0] += 1
        cell[1] += row.amount_cents
    lines = [",".join(columns)]
    for (window, merchant, currency), (events, amount) in sorted(totals.items()):
        lines.append(f"{window},{merchant},{currency},{events},{amount}")
    return "\n".join(lines) + "\n"
