"""Domain rules of :class:`~.env.EventStream`: what its tools check, compute and render.

Event stream consumer (partitioned log, hourly sink, dead-letter queue, offsets). Functions over
the State of ``state.py`` and the reference data (policy, schemas): how a record is classified,
what processing records in the ledger and the dead-letter queue, and how the sink and queue
files render. The tools in ``env.py`` read and write the workspace and call these; the S0
generator shares them, so S0 is built by the same rules the tools enforce.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, iso, parse_time

from .state import Aggregated, DeadLetter, Deduped, OnInvalid, PartitionState, StreamState

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


# -- records, windows and the sink file ------------------------------------------------------
def location(topic: str, partition: int, offset: int) -> str:
    return f"{topic}/p{partition}@{offset}"


def window_start(moment: datetime, minutes: int) -> datetime:
    """Start of the tumbling window holding ``moment``."""
    seconds = int(moment.timestamp())
    return datetime.fromtimestamp(seconds - seconds % (minutes * 60), tz=moment.tzinfo)


def parse_event(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def classify(
    raw: str, schema: Any, watermark: datetime | None, lateness: timedelta, seen: dict[str, str]
) -> tuple[str, str, dict[str, Any] | None]:
    """The verdict on one record: validation first, then duplicates, then lateness."""
    event = parse_event(raw)
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


def offset_ranges(offsets: list[int]) -> list[list[int]]:
    """Consecutive offsets as inclusive [first, last] ranges."""
    found: list[list[int]] = []
    for offset in offsets:
        if found and found[-1][1] == offset - 1:
            found[-1][1] = offset
        else:
            found.append([offset, offset])
    return found


def render_sink(columns: Any, rows: Any, topic: str) -> str:
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


def render_dlq(state: StreamState, topic: str) -> str:
    """The dead-letter queue file of a topic (one JSON entry per line, by id)."""
    entries = sorted((e for e in state.dead_letters.values() if e.topic == topic), key=lambda e: e.dlq_id)
    return "".join(json.dumps(e.model_dump(), sort_keys=True) + "\n" for e in entries)


def sink_path(data: Repository, topic: str) -> str:
    return str(data.json("pipeline_policy.json")["sinks"][topic])


def sink_text(state: StreamState, data: Repository, topic: str) -> str:
    """What the topic's sink file must hold: the aggregate rendered from the ledger."""
    return render_sink(data.json("pipeline_policy.json")["sink_columns"], state.aggregated.values(), topic)


def partition_offsets(part: PartitionState) -> dict[str, int]:
    return {
        "position": part.position,
        "processed": part.processed,
        "committed": part.committed,
        "log_end": part.log_end,
    }


# -- classification over the ledger ------------------------------------------------------------------
def ledger(state: StreamState, topic: str, partition: int) -> list[Aggregated]:
    """The sink's events that came from one partition."""
    return [a for a in state.aggregated.values() if (a.topic, a.partition) == (topic, partition)]


def classify_run(
    state: StreamState,
    data: Repository,
    part: PartitionState,
    lines: list[str],
    start: int,
    end: int,
    dedupe: bool,
) -> list[Classified]:
    """Verdicts for offsets [start, end) of the partition's ``lines`` as processing would give
    them, one after the other (a duplicate stops the run unless ``dedupe``)."""
    policy = data.json("pipeline_policy.json")
    schema = data.json("schemas.json")[part.topic]
    lateness = timedelta(minutes=policy["allowed_lateness_minutes"])
    seen = {
        a.event_id: f"{a.topic}/p{a.partition}@{a.offset}"
        for a in state.aggregated.values()
        if a.topic == part.topic
    }
    marks = [(a.offset, parse_time(a.ts)) for a in ledger(state, part.topic, part.partition)]
    done = accounted(state, part)
    out = []
    for offset in range(start, end):
        if offset in done:
            out.append(Classified(offset, lines[offset], "already_processed", done[offset], None))
            continue
        earlier = [ts for o, ts in marks if o < offset]
        watermark = max(earlier) if earlier else None
        verdict, detail, event = classify(lines[offset], schema, watermark, lateness, seen)
        record = Classified(offset, lines[offset], verdict, detail, event)
        if verdict == "ok":
            seen[record.event_id] = location(part.topic, part.partition, offset)
            marks.append((offset, parse_time(str(event["ts"]))))  # type: ignore[index]
        out.append(record)
        if verdict == "duplicate" and not dedupe:
            break
    return out


def check_one(
    state: StreamState, data: Repository, part: PartitionState, offset: int, raw: str
) -> Classified:
    """Classify a hand-corrected record as if it sat at ``offset``."""
    policy = data.json("pipeline_policy.json")
    schema = data.json("schemas.json")[part.topic]
    seen = {
        a.event_id: f"{a.topic}/p{a.partition}@{a.offset}"
        for a in state.aggregated.values()
        if a.topic == part.topic
    }
    earlier = [parse_time(a.ts) for a in ledger(state, part.topic, part.partition) if a.offset < offset]
    lateness = timedelta(minutes=policy["allowed_lateness_minutes"])
    verdict, detail, event = classify(raw.strip(), schema, max(earlier) if earlier else None, lateness, seen)
    return Classified(offset, raw.strip(), verdict, detail, event)


def accounted(state: StreamState, part: PartitionState) -> dict[int, str]:
    """Every offset of the partition already disposed of, with how (aggregated, dead-lettered, deduped)."""
    key = (part.topic, part.partition)
    found = {
        a.offset: f"aggregated as {a.event_id}"
        for a in state.aggregated.values()
        if (a.topic, a.partition) == key
    }
    for entry in state.dead_letters.values():
        if (entry.topic, entry.partition) == key:
            found[entry.offset] = f"dead-lettered as {entry.dlq_id} ({entry.status})"
    for dup in state.deduped.values():
        if (dup.topic, dup.partition) == key:
            found[dup.offset] = f"deduped (duplicate of {dup.first_seen})"
    return found


# -- what processing records ---------------------------------------------------------------------------
def aggregate(state: StreamState, data: Repository, part: PartitionState, record: Classified) -> Aggregated:
    """Put a valid event into the sink's ledger, in its hourly window."""
    event = record.event or {}
    moment = parse_time(str(event["ts"]))
    start = window_start(moment, data.json("pipeline_policy.json")["window_minutes"])
    row = Aggregated(
        event_id=record.event_id,
        topic=part.topic,
        partition=part.partition,
        offset=record.offset,
        ts=iso(moment),
        window=iso(start),
        merchant_id=str(event["merchant_id"]),
        currency=str(event["currency"]),
        amount_cents=int(event["amount_cents"]),
    )
    state.aggregated[row.event_id] = row
    return row


def file_dead_letter(
    state: StreamState, part: PartitionState, record: Classified, note: str, now: datetime
) -> str:
    """Move a faulty record to the dead-letter queue; returns its new id."""
    dlq_id = f"DLQ-{state.next_dlq_number:04d}"
    state.next_dlq_number += 1
    state.dead_letters[dlq_id] = DeadLetter(
        dlq_id=dlq_id,
        topic=part.topic,
        partition=part.partition,
        offset=record.offset,
        reason=record.verdict,
        detail=record.detail,
        raw=record.raw,
        event_id=record.event_id,
        at=iso(now),
        note=note,
    )
    return dlq_id


# -- processing a batch ----------------------------------------------------------------------------------
def take_batch(
    checked: list[Classified], dedupe: bool, on_invalid: OnInvalid
) -> tuple[list[Classified], dict[str, Any] | None]:
    """The records a batch consumes, and where it halted (None when it did not): it stops before
    a duplicate unless ``dedupe``, before a faulty record when ``on_invalid`` is halt."""
    taken: list[Classified] = []
    for record in checked:
        stop = (record.verdict == "duplicate" and not dedupe) or (
            record.verdict in DEAD_REASONS and on_invalid == "halt"
        )
        if stop:
            return taken, {"offset": record.offset, "verdict": record.verdict, "detail": record.detail}
        taken.append(record)
    return taken, None


def record_batch(
    state: StreamState, data: Repository, part: PartitionState, taken: list[Classified], now: datetime
) -> tuple[list[str], list[int]]:
    """Dispose of every consumed record: valid events into the ledger, duplicates dropped (and
    logged), faulty records to the dead-letter queue. Returns the new DLQ ids and the deduped
    offsets."""
    dead_ids, deduped = [], []
    for record in taken:
        if record.verdict == "ok":
            aggregate(state, data, part, record)
        elif record.verdict == "duplicate":
            key = location(part.topic, part.partition, record.offset)
            state.deduped[key] = Deduped(
                topic=part.topic,
                partition=part.partition,
                offset=record.offset,
                event_id=record.event_id,
                first_seen=record.detail,
                at=iso(now),
            )
            deduped.append(record.offset)
        elif record.verdict in DEAD_REASONS:
            dead_ids.append(file_dead_letter(state, part, record, "auto: on_invalid=dead_letter", now))
    return dead_ids, deduped
