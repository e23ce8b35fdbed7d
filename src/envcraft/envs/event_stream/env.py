"""Event stream consumer: partitioned log segments in the workspace, an hourly sink, a dead-letter queue."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from envcraft.core import Entity, Initial, Repository, StateModel, tool
from envcraft.core.clock import DEFAULT_BASE_TIME, IsoTime, iso, parse_time
from envcraft.sandbox import ClawEnvironment

from .rules import DEAD_REASONS, Classified, _classify, _location, _parse, _ranges, _render_sink, _window

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

    @model_validator(mode="after")
    def _filed_by_their_ids(self, info: ValidationInfo) -> StreamState:
        """Tools find a partition by ``<topic>/p<n>`` and a sink row by its event id."""
        if info.field_name is not None:  # one assignment inside a tool: checked when the state loads
            return self
        misfiled = [k for k, p in self.partitions.items() if k != f"{p.topic}/p{p.partition}"]
        misfiled += [k for k, a in self.aggregated.items() if k != a.event_id]
        misfiled += [k for k, d in self.dead_letters.items() if k != d.dlq_id]
        if misfiled:
            raise ValueError(f"records filed under another key: {', '.join(misfiled[:5])}")
        return self


class EventStream(ClawEnvironment):
    """Operate the payments-aggregator consumer group over a partitioned event stream.

    The stream's log segments are files in the workspace (stream/<topic>/p<k>/<offset>.jsonl,
    one JSON event per line, offset = segment base + line index). Processing a batch validates
    each record, aggregates valid events into hourly windows written to sink/<topic>_hourly.csv,
    and moves the partition's processed offset; commit it afterwards. Faulty records (corrupt
    JSON, schema violations, unsupported schema versions, late events) go to the dead-letter
    queue (dlq/<topic>.jsonl); duplicate deliveries are dropped by event id. Sink writes can fail:
    then seek back and replay before committing. Every action advances the clock 30 seconds.
    """

    State = StreamState
    state: StreamState
    entities = (
        Entity("partitions", "partition", ("partition {partition} of the {topic} topic",)),
        Entity("aggregated", "aggregated event", ()),
        Entity(
            "dead_letters",
            "dead letter",
            ("the dead letter from offset {offset} of partition {partition} of the {topic} topic",),
            id_known=True,
            free=("note",),
        ),
        Entity("deduped", "dropped duplicate", (), log=True),
    )

    # -- reads ---------------------------------------------------------------------------
    @tool(read_only=True, produces=["topic", "partition"])
    def list_partitions(self, topic: str = "") -> dict[str, Any]:
        """List partitions with their offsets, lag and health.

        Args:
            topic: Only this topic (payments, refunds, audit); all topics when empty.

        Returns:
            Per partition: topic, partition number, whether the group may read it, log end,
            position, processed and committed offsets, lag (log end - committed), paused,
            sink error and segment files.
        """
        acl = self.data.json("pipeline_policy.json")["acl"]
        if topic and topic not in acl:
            self.fail("not_found", f"no topic '{topic}'; topics: {', '.join(sorted(acl))}", topic=topic)
        rows = []
        for part in self.state.partitions.values():
            if topic and part.topic != topic:
                continue
            rows.append(
                {
                    "topic": part.topic,
                    "partition": part.partition,
                    "readable": "read" in acl[part.topic],
                    "log_end": part.log_end,
                    "position": part.position,
                    "processed": part.processed,
                    "committed": part.committed,
                    "lag": part.log_end - part.committed,
                    "paused": part.paused,
                    "pause_reason": part.pause_reason,
                    "sink_error": part.sink_error,
                    "segments": sorted(part.segments),
                }
            )
        rows.sort(key=lambda r: (r["topic"], r["partition"]))
        return {"group": self.state.group, "partitions": rows}

    @tool(read_only=True, consumes=["topic", "partition"], produces=["offset", "event_id"])
    def read_batch(
        self, topic: str, partition: int, from_offset: int = -1, max_records: int = 20
    ) -> dict[str, Any]:
        """Read raw records from a partition without consuming them.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 1.
            from_offset: First offset to read; -1 reads from the partition's position.
            max_records: How many records (1 to 100).

        Returns:
            The records with their offsets and raw text (the parsed event when it is JSON).
        """
        part = self._partition(topic, partition)
        start = self._start(part, from_offset, max_records)
        lines = self._lines(part)
        records = []
        for offset in range(start, min(start + max_records, part.log_end)):
            raw = lines[offset]
            records.append({"offset": offset, "raw": raw, "event": _parse(raw)})
        return {"topic": topic, "partition": partition, "records": records, "log_end": part.log_end}

    @tool(read_only=True, consumes=["topic", "partition"], produces=["offset", "event_id"])
    def validate_batch(
        self, topic: str, partition: int, from_offset: int = -1, max_records: int = 20
    ) -> dict[str, Any]:
        """Dry-run processing: the verdict processing would give each record, in order.

        Verdicts: ok, duplicate (event id already aggregated or earlier in the batch),
        corrupt_json, schema_violation, poison_pill (unsupported schema_version), late_event
        (older than the watermark minus the allowed lateness), already_processed (accounted for
        earlier: aggregated, dead-lettered or deduped).

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 1.
            from_offset: First offset to check; -1 starts at the partition's position.
            max_records: How many records (1 to 100).

        Returns:
            Per record: offset, event id, verdict and detail; plus counts by verdict.
        """
        part = self._partition(topic, partition)
        start = self._start(part, from_offset, max_records)
        checked = self._classify_run(part, start, min(start + max_records, part.log_end), dedupe=True)
        rows = [
            {"offset": c.offset, "event_id": c.event_id, "verdict": c.verdict, "detail": c.detail}
            for c in checked
        ]
        counts: dict[str, int] = {}
        for record in checked:
            counts[record.verdict] = counts.get(record.verdict, 0) + 1
        return {"topic": topic, "partition": partition, "records": rows, "counts": counts}

    @tool(read_only=True, produces=["dlq_id"])
    def inspect_dead_letters(
        self,
        topic: str = "",
        reason: DeadReason | None = None,
        status: Literal["dead", "replayed"] | None = None,
    ) -> dict[str, Any]:
        """List dead-letter queue entries.

        Args:
            topic: Only this topic; all when empty.
            reason: Only entries with this reason; all reasons when omitted.
            status: Only entries in this status; both when omitted.

        Returns:
            Entries with id, location (topic, partition, offset), reason, detail, event id, raw
            record, note and status; plus counts by reason.
        """
        entries = [
            e.model_dump()
            for e in self.state.dead_letters.values()
            if (not topic or e.topic == topic)
            and (not reason or e.reason == reason)
            and (not status or e.status == status)
        ]
        counts: dict[str, int] = {}
        for entry in entries:
            counts[entry["reason"]] = counts.get(entry["reason"], 0) + 1
        return {"entries": entries, "count": len(entries), "by_reason": counts}

    @tool(read_only=True, consumes=["topic", "partition"], produces=["offset"])
    def audit_partition(self, topic: str, partition: int) -> dict[str, Any]:
        """Check that every offset below the processed offset is accounted for, and the sink file.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 2.

        Returns:
            Offset ranges below `processed` that were neither aggregated, dead-lettered nor deduped
            (data the sink lost), counts per disposition, and whether the sink file still matches
            the aggregated events.
        """
        part = self._partition(topic, partition)
        aggregated = {a.offset for a in self._ledger(topic, partition)}
        dead = {
            e.offset for e in self.state.dead_letters.values() if (e.topic, e.partition) == (topic, partition)
        }
        deduped = {
            d.offset for d in self.state.deduped.values() if (d.topic, d.partition) == (topic, partition)
        }
        missing = [o for o in range(part.processed) if o not in aggregated | dead | deduped]
        path = self._sink_path(topic)
        current = self.workspace.read_text(path) if self.workspace.exists(path) else ""
        return {
            "topic": topic,
            "partition": partition,
            "processed": part.processed,
            "committed": part.committed,
            "unaccounted": _ranges(missing),
            "unaccounted_count": len(missing),
            "aggregated": len(aggregated),
            "dead_lettered": len(dead),
            "deduped": len(deduped),
            "sink_file": path,
            "sink_file_matches": current == self._render_sink(topic),
        }

    # -- writes --------------------------------------------------------------------------
    @tool(
        goal="process[ up to {max_records} record(s) of] partition {partition} of the {topic} topic[, "
        "{dedupe|true=dropping duplicates|false=keeping duplicates}][, {on_invalid|halt=stopping "
        "at the first invalid record|dead_letter=dead-lettering invalid records}]",
        consumes=["topic", "partition"],
        produces=["dlq_id", "offset"],
    )
    def process_batch(
        self,
        topic: str,
        partition: int,
        max_records: int = 20,
        dedupe: bool = False,
        on_invalid: OnInvalid = "halt",
    ) -> dict[str, Any]:
        """Consume records from the partition's position, aggregate valid events and write the sink.

        Processing stops before the first record it may not handle: a duplicate unless dedupe is
        set, a faulty record unless on_invalid is dead_letter. Records accounted for earlier are
        skipped (replay is idempotent). If the sink write fails, the batch is consumed but not
        written: position moves ahead of processed and the partition needs a seek before anything
        else.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 0.
            max_records: Records to consume at most (1 to 100).
            dedupe: Drop duplicate deliveries (same event id) instead of halting on them.
            on_invalid: halt (stop at a faulty record) or dead_letter (move it to the DLQ and go on).

        Returns:
            consumed, aggregated, dead-lettered DLQ ids, deduped offsets, skipped (already processed),
            halted_at (offset, verdict, detail) if processing stopped early, the sink write result,
            and the partition's position, processed and committed offsets.
        """
        part = self._partition(topic, partition)
        self._require_consumable(part)
        limit = self.data.json("pipeline_policy.json")["max_batch"]
        if not 1 <= max_records <= limit:
            self.fail("invalid_argument", f"max_records must be between 1 and {limit}", field="max_records")
        start = part.position
        checked = self._classify_run(part, start, min(start + max_records, part.log_end), dedupe=dedupe)
        taken: list[Classified] = []
        halted = None
        for record in checked:
            stop = (record.verdict == "duplicate" and not dedupe) or (
                record.verdict in DEAD_REASONS and on_invalid == "halt"
            )
            if stop:
                halted = {"offset": record.offset, "verdict": record.verdict, "detail": record.detail}
                break
            taken.append(record)
        end = start + len(taken)
        summary: dict[str, Any] = {
            "topic": topic,
            "partition": partition,
            "consumed": len(taken),
            "halted_at": halted,
        }
        fresh = [r for r in taken if r.verdict == "ok"]
        fault = self.state.sink_fault
        hit = (
            fault is not None
            and (fault.topic, fault.partition) == (topic, partition)
            and start <= fault.offset < end
        )
        if fault is not None and hit and not fault.fired and fresh:
            fault.fired = True
            part.position = end
            part.sink_error = (
                f"sink write for offsets {start}-{end - 1} failed: HTTP 503 from the warehouse loader; "
                "nothing of this batch reached the sink"
            )
            return {
                **summary,
                "aggregated": 0,
                "sink_write": "failed",
                "sink_error": part.sink_error,
                **self._offsets(part),
            }
        now = iso(self.now())
        dead_ids, deduped = [], []
        for record in taken:
            if record.verdict == "ok":
                self._aggregate(part, record)
            elif record.verdict == "duplicate":
                key = _location(topic, partition, record.offset)
                self.state.deduped[key] = Deduped(
                    topic=topic,
                    partition=partition,
                    offset=record.offset,
                    event_id=record.event_id,
                    first_seen=record.detail,
                    at=now,
                )
                deduped.append(record.offset)
            elif record.verdict in DEAD_REASONS:
                dead_ids.append(self._dead_letter(part, record, "auto: on_invalid=dead_letter"))
        part.position = part.processed = end
        if fresh:
            self._write_sink(topic)
        if dead_ids:
            self._write_dlq(topic)
        return {
            **summary,
            "aggregated": len(fresh),
            "dead_lettered": dead_ids,
            "deduped": deduped,
            "skipped": sum(1 for r in taken if r.verdict == "already_processed"),
            "sink_write": "ok" if fresh else "nothing to write",
            **self._offsets(part),
        }

    @tool(
        goal="commit the processed offset of partition {partition} of the {topic} topic",
        consumes=["topic", "partition"],
    )
    def commit_offsets(self, topic: str, partition: int) -> dict[str, Any]:
        """Commit the partition's processed offset for the consumer group.

        Refused while a failed sink write is unreplayed: committing then would lose those events.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 0.

        Returns:
            The committed offset before and after, and whether it changed.
        """
        part = self._partition(topic, partition, need="commit")
        if part.sink_error:
            self.fail(
                "conflict",
                f"{topic}/p{partition}: offsets {part.processed}-{part.position - 1} were consumed but never "
                f"written to the sink; seek to {part.processed} and replay them before committing",
                topic=topic,
                partition=partition,
                processed=part.processed,
                position=part.position,
            )
        before = part.committed
        if part.processed != before:
            part.committed = part.processed
            self.state.commit_log.append(
                CommitRecord(
                    topic=topic, partition=partition, offset=part.committed, at=iso(self.now()), kind="commit"
                )
            )
        return {
            "topic": topic,
            "partition": partition,
            "committed_before": before,
            "committed": part.committed,
            "changed": part.committed != before,
        }

    @tool(
        goal="move partition {partition} of the {topic} topic back[ to offset {offset}] to replay "
        "records; the reason is {reason}",
        consumes=["topic", "partition", "offset"],
    )
    def seek(self, topic: str, partition: int, reason: str, offset: int = -1) -> dict[str, Any]:
        """Move the partition's position back to replay records; below the committed offset it is a rewind.

        Seeking forward past unprocessed records is refused (they would be lost). A rewind below
        the committed offset also moves the committed offset back and is recorded in the commit log.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 1.
            reason: Why (recorded with a rewind).
            offset: The new position, at most the processed offset; -1 seeks to the processed offset
                (replays whatever a failed sink write left unwritten).

        Returns:
            The new position, processed and committed offsets, and whether the commit was rewound.
        """
        part = self._partition(topic, partition)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        offset = part.processed if offset == -1 else offset
        if not 0 <= offset <= part.log_end:
            self.fail(
                "invalid_argument", f"offset must be between 0 and the log end {part.log_end}", field="offset"
            )
        if offset > part.processed:
            self.fail(
                "conflict",
                f"seeking to {offset} would skip offsets {part.processed}-{offset - 1} that were never "
                "processed; process or dead-letter them instead",
                topic=topic,
                partition=partition,
                processed=part.processed,
            )
        rewound = offset < part.committed
        if rewound:
            self.state.commit_log.append(
                CommitRecord(
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    at=iso(self.now()),
                    kind="rewind",
                    reason=reason.strip(),
                )
            )
            part.committed = offset
        part.position = part.processed = offset
        part.sink_error = ""
        return {"topic": topic, "partition": partition, "rewound": rewound, **self._offsets(part)}

    @tool(
        goal="dead-letter[ {count}] faulty records[ from offset {offset}] of partition {partition} of "
        "the {topic} topic, noting {note}",
        consumes=["topic", "partition", "offset"],
        produces=["dlq_id"],
    )
    def dead_letter(
        self, topic: str, partition: int, note: str, offset: int = -1, count: int = 1
    ) -> dict[str, Any]:
        """Move faulty records at the partition's position to the dead-letter queue and step past them.

        Only records that fail validation (corrupt_json, schema_violation, poison_pill, late_event)
        can be dead-lettered; duplicates are dropped with process_batch(dedupe=true) and valid
        records must be processed.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 2.
            note: Why, for whoever reviews the queue.
            offset: The first record; it must be the partition's current position (-1: the position).
            count: How many consecutive records (1 to 50).

        Returns:
            The DLQ ids created with their reasons, and the partition's new offsets.
        """
        part = self._partition(topic, partition)
        self._require_consumable(part, allow_paused=True)
        if not note.strip():
            self.fail("invalid_argument", "note must not be empty", field="note")
        if not 1 <= count <= 50:
            self.fail("invalid_argument", "count must be between 1 and 50", field="count")
        offset = part.position if offset == -1 else offset
        if not 0 <= offset < part.log_end or offset + count > part.log_end:
            self.fail(
                "invalid_argument",
                f"offsets {offset}-{offset + count - 1} are outside the log (0-{part.log_end - 1})",
                field="offset",
            )
        if offset != part.position:
            self.fail(
                "conflict",
                f"records are handled in order: the next record of {topic}/p{partition} is at "
                f"offset {part.position}, not {offset}",
                topic=topic,
                partition=partition,
                position=part.position,
            )
        checked = self._classify_run(part, offset, offset + count, dedupe=True)
        for record in checked:
            if record.verdict not in DEAD_REASONS:
                self.fail(
                    "conflict",
                    f"record {topic}/p{partition}@{record.offset} is {record.verdict} ({record.detail}); "
                    "only records that fail validation go to the dead-letter queue",
                    offset=record.offset,
                    verdict=record.verdict,
                )
        created = [
            {"dlq_id": self._dead_letter(part, r, note.strip()), "offset": r.offset, "reason": r.verdict}
            for r in checked
        ]
        part.position = part.processed = offset + count
        self._write_dlq(topic)
        return {"topic": topic, "partition": partition, "dead_lettered": created, **self._offsets(part)}

    @tool(
        goal="replay {dlq_id} with the corrected record {corrected_record}",
        consumes=["dlq_id"],
        produces=["event_id"],
    )
    def replay_dead_letter(self, dlq_id: str, corrected_record: str) -> dict[str, Any]:
        """Replay a dead-lettered record into the sink after correcting it by hand.

        Possible for corrupt_json, schema_violation and poison_pill entries (rewrite a schema 3
        record in the schema 2 format); the corrected record must keep the event id and pass
        validation. Late events cannot be replayed into the live aggregate.

        Args:
            dlq_id: The entry, e.g. DLQ-0002.
            corrected_record: The corrected event as one JSON object.

        Returns:
            dlq_id, status replayed, the event id and the hourly window it was aggregated into.
        """
        entry = self.state.dead_letters.get(dlq_id)
        if entry is None:
            self.fail("not_found", f"no dead-letter entry '{dlq_id}'", dlq_id=dlq_id)
        part = self._partition(entry.topic, entry.partition)
        if entry.status != "dead":
            self.fail(
                "invalid_transition",
                f"{dlq_id} was already replayed at {entry.replayed_at}",
                dlq_id=dlq_id,
                status=entry.status,
            )
        if entry.reason not in self.data.json("pipeline_policy.json")["replayable_reasons"]:
            self.fail(
                "invalid_transition",
                f"{dlq_id} is a {entry.reason}: its window is closed, so it cannot be "
                "replayed into the live aggregate",
                dlq_id=dlq_id,
                reason=entry.reason,
            )
        record = self._check_one(part, entry.offset, corrected_record)
        if record.verdict not in ("ok", "duplicate"):
            self.fail(
                "invalid_argument",
                f"the corrected record is still {record.verdict}: {record.detail}",
                field="corrected_record",
                verdict=record.verdict,
            )
        if entry.event_id and record.event_id != entry.event_id:
            self.fail(
                "invalid_argument",
                f"the corrected record must keep event_id {entry.event_id}",
                field="corrected_record",
            )
        if record.verdict == "duplicate":
            self.fail(
                "conflict",
                f"event {record.event_id} is already aggregated ({record.detail}); replaying it "
                "would count it twice",
                dlq_id=dlq_id,
                event_id=record.event_id,
            )
        aggregated = self._aggregate(part, record)
        entry.status, entry.replayed_at = "replayed", iso(self.now())
        self._write_sink(entry.topic)
        self._write_dlq(entry.topic)
        return {
            "dlq_id": dlq_id,
            "status": entry.status,
            "event_id": aggregated.event_id,
            "window": aggregated.window,
            "sink_file": self._sink_path(entry.topic),
        }

    @tool(
        goal="{paused|true=pause|false=resume} partition {partition} of the {topic} topic; the reason "
        "is {reason}",
        consumes=["topic", "partition"],
    )
    def set_partition_paused(self, topic: str, partition: int, paused: bool, reason: str) -> dict[str, Any]:
        """Pause (quarantine) or resume consumption of a partition.

        Args:
            topic: Topic name, e.g. payments.
            partition: Partition number, e.g. 2.
            paused: true to pause, false to resume.
            reason: Why (shown in list_partitions while paused).

        Returns:
            The partition and its paused flag and reason.
        """
        part = self._partition(topic, partition)
        if not reason.strip():
            self.fail("invalid_argument", "reason must not be empty", field="reason")
        if part.paused == paused:
            self.fail(
                "invalid_transition",
                f"{topic}/p{partition} is already {'paused' if paused else 'running'}",
                topic=topic,
                partition=partition,
                paused=part.paused,
            )
        part.paused, part.pause_reason = paused, reason.strip() if paused else ""
        return {
            "topic": topic,
            "partition": partition,
            "paused": part.paused,
            "pause_reason": part.pause_reason,
        }

    # -- lookups and guards -------------------------------------------------------------
    def _partition(self, topic: str, partition: int, need: str = "read") -> PartitionState:
        policy = self.data.json("pipeline_policy.json")
        if topic not in policy["acl"]:
            self.fail(
                "not_found", f"no topic '{topic}'; topics: {', '.join(sorted(policy['acl']))}", topic=topic
            )
        if need not in policy["acl"][topic]:
            self.fail(
                "permission_denied",
                f"consumer group {self.state.group} lacks '{need}' on topic {topic}",
                topic=topic,
                permission=need,
            )
        part = self.state.partitions.get(f"{topic}/p{partition}")
        if part is None:
            known = sorted(p.partition for p in self.state.partitions.values() if p.topic == topic)
            self.fail(
                "not_found",
                f"topic {topic} has partitions {known}, not {partition}",
                topic=topic,
                partition=partition,
            )
        return part

    def _require_consumable(self, part: PartitionState, allow_paused: bool = False) -> None:
        name = f"{part.topic}/p{part.partition}"
        if part.sink_error:
            self.fail(
                "invalid_transition",
                f"{name} has offsets {part.processed}-{part.position - 1} consumed but "
                f"not in the sink ({part.sink_error}); seek to {part.processed} and replay first",
                topic=part.topic,
                partition=part.partition,
                position=part.position,
                processed=part.processed,
            )
        if part.paused and not allow_paused:
            self.fail(
                "invalid_transition",
                f"{name} is paused ({part.pause_reason}); resume it first",
                topic=part.topic,
                partition=part.partition,
            )

    def _start(self, part: PartitionState, from_offset: int, max_records: int) -> int:
        limit = self.data.json("pipeline_policy.json")["max_batch"]
        if not 1 <= max_records <= limit:
            self.fail("invalid_argument", f"max_records must be between 1 and {limit}", field="max_records")
        start = part.position if from_offset == -1 else from_offset
        if not 0 <= start <= part.log_end:
            self.fail(
                "invalid_argument",
                f"from_offset must be -1 or between 0 and {part.log_end}",
                field="from_offset",
            )
        return start

    def _lines(self, part: PartitionState) -> list[str]:
        """Every record of the partition in offset order; refuses tampered segments."""
        lines: list[str] = []
        for path in sorted(part.segments):
            if not self.workspace.exists(path):
                self.fail(
                    "conflict",
                    f"log segment {path} is missing; segments are immutable and must not be moved or deleted",
                    path=path,
                )
            text = self.workspace.read_text(path)
            if hashlib.sha256(text.encode("utf-8")).hexdigest() != part.segments[path]:
                self.fail(
                    "conflict",
                    f"log segment {path} was modified; segments are immutable — fix records "
                    "through the dead-letter queue instead",
                    path=path,
                )
            lines.extend(text.splitlines())
        if len(lines) < part.log_end:
            self.fail(
                "conflict",
                f"the segments of {part.topic}/p{part.partition} hold {len(lines)} records but its log "
                f"ends at offset {part.log_end}",
                topic=part.topic,
                partition=part.partition,
            )
        return lines

    # -- classification ------------------------------------------------------------------
    def _ledger(self, topic: str, partition: int) -> list[Aggregated]:
        return [a for a in self.state.aggregated.values() if (a.topic, a.partition) == (topic, partition)]

    def _classify_run(self, part: PartitionState, start: int, end: int, dedupe: bool) -> list[Classified]:
        """Verdicts for offsets [start, end) as processing would give them, one after the other."""
        lines = self._lines(part)
        policy = self.data.json("pipeline_policy.json")
        schema = self.data.json("schemas.json")[part.topic]
        lateness = timedelta(minutes=policy["allowed_lateness_minutes"])
        seen = {
            a.event_id: f"{a.topic}/p{a.partition}@{a.offset}"
            for a in self.state.aggregated.values()
            if a.topic == part.topic
        }
        marks = [(a.offset, parse_time(a.ts)) for a in self._ledger(part.topic, part.partition)]
        accounted = self._accounted(part)
        out = []
        for offset in range(start, end):
            if offset in accounted:
                out.append(Classified(offset, lines[offset], "already_processed", accounted[offset], None))
                continue
            earlier = [ts for o, ts in marks if o < offset]
            watermark = max(earlier) if earlier else None
            verdict, detail, event = _classify(lines[offset], schema, watermark, lateness, seen)
            record = Classified(offset, lines[offset], verdict, detail, event)
            if verdict == "ok":
                seen[record.event_id] = _location(part.topic, part.partition, offset)
                marks.append((offset, parse_time(str(event["ts"]))))  # type: ignore[index]
            out.append(record)
            if verdict == "duplicate" and not dedupe:
                break
        return out

    def _check_one(self, part: PartitionState, offset: int, raw: str) -> Classified:
        """Classify a hand-corrected record as if it sat at ``offset``."""
        policy = self.data.json("pipeline_policy.json")
        schema = self.data.json("schemas.json")[part.topic]
        seen = {
            a.event_id: f"{a.topic}/p{a.partition}@{a.offset}"
            for a in self.state.aggregated.values()
            if a.topic == part.topic
        }
        earlier = [parse_time(a.ts) for a in self._ledger(part.topic, part.partition) if a.offset < offset]
        lateness = timedelta(minutes=policy["allowed_lateness_minutes"])
        verdict, detail, event = _classify(
            raw.strip(), schema, max(earlier) if earlier else None, lateness, seen
        )
        return Classified(offset, raw.strip(), verdict, detail, event)

    def _accounted(self, part: PartitionState) -> dict[int, str]:
        key = (part.topic, part.partition)
        found = {
            a.offset: f"aggregated as {a.event_id}"
            for a in self.state.aggregated.values()
            if (a.topic, a.partition) == key
        }
        for entry in self.state.dead_letters.values():
            if (entry.topic, entry.partition) == key:
                found[entry.offset] = f"dead-lettered as {entry.dlq_id} ({entry.status})"
        for dup in self.state.deduped.values():
            if (dup.topic, dup.partition) == key:
                found[dup.offset] = f"deduped (duplicate of {dup.first_seen})"
        return found

    # -- effects ---------------------------------------------------------------------------
    def _aggregate(self, part: PartitionState, record: Classified) -> Aggregated:
        event = record.event or {}
        moment = parse_time(str(event["ts"]))
        start = _window(moment, self.data.json("pipeline_policy.json")["window_minutes"])
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
        self.state.aggregated[row.event_id] = row
        return row

    def _dead_letter(self, part: PartitionState, record: Classified, note: str) -> str:
        dlq_id = f"DLQ-{self.state.next_dlq_number:04d}"
        self.state.next_dlq_number += 1
        self.state.dead_letters[dlq_id] = DeadLetter(
            dlq_id=dlq_id,
            topic=part.topic,
            partition=part.partition,
            offset=record.offset,
            reason=record.verdict,
            detail=record.detail,
            raw=record.raw,
            event_id=record.event_id,
            at=iso(self.now()),
            note=note,
        )
        return dlq_id

    def _sink_path(self, topic: str) -> str:
        return str(self.data.json("pipeline_policy.json")["sinks"][topic])

    def _render_sink(self, topic: str) -> str:
        return _render_sink(
            self.data.json("pipeline_policy.json")["sink_columns"], self.state.aggregated.values(), topic
        )

    def _write_sink(self, topic: str) -> None:
        self.workspace.write_text(self._sink_path(topic), self._render_sink(topic))

    def _write_dlq(self, topic: str) -> None:
        entries = sorted(
            (e for e in self.state.dead_letters.values() if e.topic == topic), key=lambda e: e.dlq_id
        )
        text = "".join(json.dumps(e.model_dump(), sort_keys=True) + "\n" for e in entries)
        self.workspace.write_text(f"dlq/{topic}.jsonl", text)

    def _offsets(self, part: PartitionState) -> dict[str, int]:
        return {
            "position": part.position,
            "processed": part.processed,
            "committed": part.committed,
            "log_end": part.log_end,
        }

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A night of payments: ``2 + size`` payment partitions, refunds, an unreadable audit topic."""
        from .generate import _Generator

        repo = data if data is not None else (cls.package.data if cls.package else Repository(None))
        base = cls.package.clock.base_time if cls.package else DEFAULT_BASE_TIME
        generator = _Generator(random.Random(seed), max(1, size), repo, base)
        state = generator.build()
        return Initial(state=state, files=generator.files)
