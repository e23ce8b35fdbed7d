"""Event stream consumer: partitioned log segments in the workspace, an hourly sink, a dead-letter queue.

The tool surface: the State lives in ``state.py``, classification and what processing records in
``rules.py``, the seeded night in ``generate.py``; the tools here read the segments and write the
sink and queue files.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Literal

from envcraft import ClawEnvironment, Entity, Initial, Job, Repository, iso, tool

from .generate import Generator
from .rules import (
    DEAD_REASONS,
    aggregate,
    check_one,
    classify_run,
    file_dead_letter,
    ledger,
    offset_ranges,
    parse_event,
    partition_offsets,
    record_batch,
    render_dlq,
    sink_path,
    sink_text,
    take_batch,
)
from .state import CommitRecord, DeadReason, OnInvalid, PartitionState, StreamState


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
        Entity(
            "partitions",
            "partition",
            ("partition {partition} of the {topic} topic",),
            labels={
                "committed": "committed offset",
                "processed": "processed offset",
                "position": "read position",
                "log_end": "log end offset",
            },
        ),
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

    jobs = (
        Job(
            "catch a partition up and commit it",
            ("process_batch", "commit_offsets"),
            "catch partition {partition} of the {topic} topic up[ (at most {max_records} record(s))][, "
            "{dedupe|true=dropping duplicates|false=halting at the first duplicate}][, {on_invalid|halt="
            "stopping at the first invalid record|dead_letter=dead-lettering invalid records}], then commit "
            "what went through",
        ),
        Job(
            "replay a partition from an offset",
            ("seek", "process_batch", "commit_offsets"),
            "the sink needs partition {partition} of the {topic} topic again from offset {offset} "
            "({reason}): replay it[ (at most {max_records} record(s))][, {dedupe|true=dropping duplicates|"
            "false=halting at the first duplicate}][, {on_invalid|halt=stopping at the first invalid "
            "record|dead_letter=dead-lettering invalid records}], then commit the result",
        ),
    )

    @classmethod
    def recovery(
        cls, tool: str, args: dict[str, Any], result: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """After a failed sink write the README asks to seek back to ``processed`` and replay
        before anything else: the same batch again (its records were consumed, not written)."""
        if tool != "process_batch" or result.get("sink_write") != "failed":
            return []
        where = {"topic": args["topic"], "partition": args["partition"]}
        return [("seek", {**where, "reason": "replay the batch whose sink write failed"}), (tool, dict(args))]

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
            max_records: How many records (1 to 100; 20 when left out).

        Returns:
            The records with their offsets and raw text (the parsed event when it is JSON).
        """
        part = self._partition(topic, partition)
        start = self._start(part, from_offset, max_records)
        lines = self._lines(part)
        records = []
        for offset in range(start, min(start + max_records, part.log_end)):
            raw = lines[offset]
            records.append({"offset": offset, "raw": raw, "event": parse_event(raw)})
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
            max_records: How many records (1 to 100; 20 when left out).

        Returns:
            Per record: offset, event id, verdict and detail; plus counts by verdict.
        """
        part = self._partition(topic, partition)
        start = self._start(part, from_offset, max_records)
        checked = classify_run(
            self.state,
            self.data,
            part,
            self._lines(part),
            start,
            min(start + max_records, part.log_end),
            dedupe=True,
        )
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
        aggregated = {a.offset for a in ledger(self.state, topic, partition)}
        dead = {
            e.offset for e in self.state.dead_letters.values() if (e.topic, e.partition) == (topic, partition)
        }
        deduped = {
            d.offset for d in self.state.deduped.values() if (d.topic, d.partition) == (topic, partition)
        }
        missing = [o for o in range(part.processed) if o not in aggregated | dead | deduped]
        path = sink_path(self.data, topic)
        current = self.workspace.read_text(path) if self.workspace.exists(path) else ""
        return {
            "topic": topic,
            "partition": partition,
            "processed": part.processed,
            "committed": part.committed,
            "unaccounted": offset_ranges(missing),
            "unaccounted_count": len(missing),
            "aggregated": len(aggregated),
            "dead_lettered": len(dead),
            "deduped": len(deduped),
            "sink_file": path,
            "sink_file_matches": current == sink_text(self.state, self.data, topic),
        }

    # -- writes --------------------------------------------------------------------------
    @tool(
        goal="process[ up to {max_records} record(s) of] partition {partition} of the {topic} topic[, "
        "{dedupe|true=dropping duplicates|false=halting at the first duplicate}][, {on_invalid|halt=stopping "
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
            max_records: Records to consume at most (1 to 100; 20 when left out).
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
        checked = classify_run(
            self.state,
            self.data,
            part,
            self._lines(part),
            start,
            min(start + max_records, part.log_end),
            dedupe=dedupe,
        )
        taken, halted = take_batch(checked, dedupe, on_invalid)
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
                **partition_offsets(part),
            }
        dead_ids, deduped = record_batch(self.state, self.data, part, taken, self.now())
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
            **partition_offsets(part),
        }

    @tool(
        goal="commit the processed offset of partition {partition} of the {topic} topic",
        consumes=["topic", "partition"],
    )
    def commit_offsets(self, topic: str, partition: int) -> dict[str, Any]:
        """Commit the partition's processed offset for the consumer group (only when the
        requester asks: processing records is not committing them).

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
        # (no "to replay records": the move is the whole ask, and an agent that read it as asking
        # for the replay too processed the records again; round 60, R1: 0.469)
        goal="move partition {partition} of the {topic} topic back[ to offset {offset}]; "
        "the reason is {reason}",
        consumes=["topic", "partition", "offset"],
        examples={
            "reason": (
                "replay after the consumer fix",
                "reprocess the batch that failed",
                "backfill after the outage",
            )
        },
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
        return {"topic": topic, "partition": partition, "rewound": rewound, **partition_offsets(part)}

    @tool(
        goal="dead-letter[ {count}] faulty record(s)[ from offset {offset}] of partition {partition} of "
        "the {topic} topic, noting {note}",
        consumes=["topic", "partition", "offset"],
        produces=["dlq_id"],
        examples={
            "note": (
                "amount missing, needs a manual check",
                "malformed payload from upstream",
                "invalid currency code",
            )
        },
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
        checked = classify_run(
            self.state, self.data, part, self._lines(part), offset, offset + count, dedupe=True
        )
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
            {
                "dlq_id": file_dead_letter(self.state, part, r, note.strip(), self.now()),
                "offset": r.offset,
                "reason": r.verdict,
            }
            for r in checked
        ]
        part.position = part.processed = offset + count
        self._write_dlq(topic)
        return {"topic": topic, "partition": partition, "dead_lettered": created, **partition_offsets(part)}

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
        entry = self.lookup(self.state.dead_letters, dlq_id, "dead-letter entry", dlq_id=dlq_id)
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
        record = check_one(self.state, self.data, part, entry.offset, corrected_record)
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
        aggregated = aggregate(self.state, self.data, part, record)
        entry.status, entry.replayed_at = "replayed", iso(self.now())
        self._write_sink(entry.topic)
        self._write_dlq(entry.topic)
        return {
            "dlq_id": dlq_id,
            "status": entry.status,
            "event_id": aggregated.event_id,
            "window": aggregated.window,
            "sink_file": sink_path(self.data, entry.topic),
        }

    @tool(
        goal="{paused|true=pause|false=resume} partition {partition} of the {topic} topic; the reason "
        "is {reason}",
        consumes=["topic", "partition"],
        examples={
            "reason": (
                "ledger maintenance downstream",
                "investigating duplicate charges",
                "upstream schema change in progress",
            )
        },
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

    # -- the files processing writes ---------------------------------------------------------
    def _write_sink(self, topic: str) -> None:
        self.workspace.write_text(sink_path(self.data, topic), sink_text(self.state, self.data, topic))

    def _write_dlq(self, topic: str) -> None:
        self.workspace.write_text(f"dlq/{topic}.jsonl", render_dlq(self.state, topic))

    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """A night of payments: ``2 + size`` payment partitions, refunds, an unreadable audit topic."""
        generator = Generator(random.Random(seed), max(1, size), cls.repository(data), cls.base_time())
        state = generator.build()
        return Initial(state=state, files=generator.files)
