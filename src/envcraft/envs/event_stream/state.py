"""The State of :class:`~.env.EventStream`: partitions, the sink's ledger, the dead-letter queue.

The explicit state space S of the consumer group: per-partition offsets, every event the sink
holds (the exactly-once ledger the aggregate files are rendered from), dead letters, dropped
duplicates and the commit log. Topics are checked against the reference data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from envcraft import IsoTime, Repository, StateModel, invariant

Verdict = Literal["ok", "duplicate", "corrupt_json", "schema_violation", "poison_pill", "late_event"]
DeadReason = Literal["corrupt_json", "schema_violation", "poison_pill", "late_event"]
OnInvalid = Literal["halt", "dead_letter"]


REFERENCE = Repository(Path(__file__).resolve().parent / "data")  # the package's own reference data


def _known_topic(topic: str) -> str:
    """A topic's permissions and record schema live in the reference data: it must be there."""
    known = REFERENCE.json("pipeline_policy.json")["acl"]
    if topic not in known or topic not in REFERENCE.json("schemas.json"):
        raise ValueError(f"unknown topic {topic!r}; topics: {', '.join(known)}")
    return topic


Topic = Annotated[str, AfterValidator(_known_topic)]


class PartitionState(StateModel):
    """The consumer group's view of one partition.

    ``processed``: every offset below it is accounted for (aggregated into the sink,
    dead-lettered or deduped). ``position``: the next offset to consume; it runs ahead of
    ``processed`` only after a failed sink write. ``committed`` never exceeds ``processed``.
    """

    topic: Topic
    partition: int
    log_end: int = Field(ge=0)
    position: int = Field(default=0, ge=0)
    processed: int = Field(default=0, ge=0)
    committed: int = Field(default=0, ge=0)
    paused: bool = False
    pause_reason: str = ""
    sink_error: str = ""
    segments: dict[str, str] = {}  # segment path -> sha256 of its content (segments are immutable)


class Aggregated(StateModel):
    """One event in the sink (the exactly-once ledger behind the aggregate files)."""

    event_id: str
    topic: Topic
    partition: int
    offset: int
    ts: IsoTime
    window: IsoTime
    merchant_id: str
    currency: str
    amount_cents: int


class DeadLetter(StateModel):
    dlq_id: str
    topic: str
    partition: int
    offset: int
    reason: DeadReason
    detail: str
    raw: str
    event_id: str = ""
    at: IsoTime
    note: str = ""
    status: Literal["dead", "replayed"] = "dead"
    replayed_at: IsoTime | Literal[""] = ""


class Deduped(StateModel):
    topic: str
    partition: int
    offset: int
    event_id: str
    first_seen: str
    at: IsoTime


class CommitRecord(StateModel):
    topic: str
    partition: int
    offset: int
    at: IsoTime
    kind: Literal["commit", "rewind"]
    reason: str = ""


class SinkFault(StateModel):
    """Seeded fault: the first sink write covering this offset fails (HTTP 503)."""

    topic: str
    partition: int
    offset: int
    fired: bool = False


class StreamState(StateModel):
    group: str
    partitions: dict[str, PartitionState] = {}  # "payments/p0"
    aggregated: dict[str, Aggregated] = {}  # by event_id
    dead_letters: dict[str, DeadLetter] = {}
    deduped: dict[str, Deduped] = {}  # by location "payments/p1@40"
    commit_log: list[CommitRecord] = []
    sink_fault: SinkFault | None = None
    next_dlq_number: int = 1

    # Tools find a partition by ``<topic>/p<n>``, a sink row by its event id and a dead letter by
    # its id: each record is checked where it is filed when a call touches it.
    @invariant("partitions")
    def _partition_filed(self, key: str, part: PartitionState) -> None:
        _filed(key, f"{part.topic}/p{part.partition}")

    @invariant("aggregated")
    def _aggregated_filed(self, key: str, row: Aggregated) -> None:
        _filed(key, row.event_id)

    @invariant("dead_letters")
    def _dead_letter_filed(self, key: str, entry: DeadLetter) -> None:
        _filed(key, entry.dlq_id)


def _filed(key: str, expected: str) -> None:
    if key != expected:
        raise ValueError(f"records filed under another key: {key}")
