"""The seeded S0 generator behind :meth:`~.env.EventStream.generate`.

Event stream consumer (partitioned log, hourly sink, dead-letter queue, offsets). Runs once per
initial state (seed, size), never during a tool call; it builds the State models of ``state.py``
with the rules of ``rules.py`` (hourly windows, the sink file).
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timedelta
from typing import Any

from envcraft import Repository, iso, parse_time

from .rules import render_sink, window_start
from .state import Aggregated, CommitRecord, PartitionState, SinkFault, StreamState


def _plain(item: Any) -> bool:
    """A generated event (injected faulty records are kept as raw lines)."""
    return isinstance(item, dict)


class Generator:
    """Writes the segments, the sink and the handover note for one seeded night."""

    def __init__(self, rng: random.Random, size: int, data: Repository, base: datetime) -> None:
        self.rng = rng
        self.size = size
        self.data = data
        self.base = base
        self.policy = data.json("pipeline_policy.json")
        self.merchants = list(data.json("merchants.json")["merchants"])
        self.files: dict[str, str] = {}
        self.state = StreamState(group=self.policy["group"])
        self.used: set[str] = set()
        self.notes: dict[str, str] = {}

    def build(self) -> StreamState:
        count = 2 + self.size
        poisoned, failing = self.rng.randrange(count), self.rng.randrange(count)
        gapped = self.rng.randrange(count)
        payments = [
            self._events("payments", 40 * self.size + self.rng.randrange(0, 10)) for _ in range(count)
        ]
        processed = [self.rng.randrange(18, 30) for _ in range(count)]
        lost = [range(0)] * count  # offsets the old consumer committed without writing the sink
        lost[gapped] = range(
            processed[gapped] - self.rng.randrange(6, 11), processed[gapped] - self.rng.randrange(1, 4)
        )
        for k, events in enumerate(payments):
            self._faults(events, processed[k], poison=k == poisoned, avoid=lost[k])
        refunds = self._events("refunds", 20 * self.size + self.rng.randrange(0, 6))
        refunds_done = self.rng.randrange(6, 10)
        self._refund_faults(refunds, refunds_done)
        for k, events in enumerate(payments):
            self._partition("payments", k, events, processed[k], lost[k])
        self._partition("refunds", 0, refunds, refunds_done, range(0))
        self._partition("audit", 0, self._events("audit", 12), 0, range(0))
        offset = self.rng.randrange(
            processed[failing] + 4, self.state.partitions[f"payments/p{failing}"].log_end
        )
        self.state.sink_fault = SinkFault(topic="payments", partition=failing, offset=offset)
        for topic, path in self.policy["sinks"].items():
            self.files[path] = render_sink(self.policy["sink_columns"], self.state.aggregated.values(), topic)
            self.files[f"dlq/{topic}.jsonl"] = ""
        self.files["ops/handover.md"] = self._handover()
        return self.state

    # -- events ------------------------------------------------------------------------------
    def _event_id(self) -> str:
        while True:
            candidate = f"EVT-{self.rng.getrandbits(32):08x}"
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate

    def _events(self, topic: str, count: int) -> list[dict[str, Any]]:
        """Valid events in roughly increasing event time (small jitter, within the lateness)."""
        start = self.base - timedelta(hours=3)
        span = (timedelta(hours=3) - timedelta(minutes=15)) / count
        events = []
        for index in range(count):
            merchant = self.rng.choice(self.merchants)
            moment = start + span * index + timedelta(seconds=self.rng.randrange(-120, 120))
            event: dict[str, Any] = {
                "event_id": self._event_id(),
                "schema_version": self.rng.choice((1, 2, 2)),
                "ts": iso(moment),
            }
            if topic == "payments":
                event["account_id"] = f"ACC-{self.rng.randrange(1000, 10000)}"
            elif topic == "refunds":
                event["refund_of"] = f"EVT-{self.rng.getrandbits(32):08x}"
            if topic != "audit":
                event["merchant_id"] = merchant["merchant_id"]
                event["amount_cents"] = self.rng.choice(
                    (199, 450, 999, 1299, 2500, 4999, 12000)
                ) + self.rng.randrange(0, 99)
                event["currency"] = merchant["currency"]
            if topic == "payments":
                event["method"] = self.rng.choice(("card", "card", "wallet", "bank_transfer"))
            elif topic == "refunds":
                event["reason"] = self.rng.choice(
                    ("customer_request", "fraud", "duplicate_charge", "damaged")
                )
            else:
                event["action"] = self.rng.choice(("login", "export", "role_change"))
            events.append(event)
        return events

    def _insert(self, events: list[Any], after: int, item: Any) -> None:
        events.insert(self.rng.randrange(after, len(events) + 1), item)

    def _valid_index(self, events: list[Any], lo: int, hi: int) -> int:
        """A random index in [lo, hi) holding a valid event (not an injected raw line or v3 record)."""
        choices = [i for i in range(max(0, lo), min(hi, len(events))) if _plain(events[i])]
        return self.rng.choice(choices)

    def _duplicate(self, events: list[Any], lo: int, source_lo: int, avoid: range) -> None:
        """A producer retry: an event delivered again a little later (never inside the committed part)."""
        source = self._valid_index(events, source_lo, len(events) - 4)
        while source in avoid:
            source = self._valid_index(events, source_lo, len(events) - 4)
        at = max(lo, source + self.rng.randrange(2, 6))
        events.insert(min(at, len(events)), dict(events[source]))

    def _faults(self, events: list[Any], processed: int, poison: bool, avoid: range) -> None:
        """Faulty records, all after the committed offset."""
        rng = self.rng
        lo = processed + 2
        if rng.random() < 0.7:
            victim = json.dumps(events[self._valid_index(events, lo, len(events))])
            self._insert(events, lo, victim[: len(victim) // 2])  # truncated: corrupt JSON
        bad = dict(events[self._valid_index(events, lo, len(events))], event_id=self._event_id())
        kind = rng.choice(("amount", "currency", "missing"))
        if kind == "amount":
            bad["amount_cents"] = f"{bad['amount_cents'] / 100:.2f}"
        elif kind == "currency":
            bad["currency"] = {"EUR": "EURO", "USD": "US$", "GBP": "GBR"}[bad["currency"]]
        else:
            del bad["currency"]
        self._insert(events, lo, json.dumps(bad))
        self._duplicate(events, lo, processed - 10, avoid)
        index = self._valid_index(events, lo + 5, len(events))
        before = self._valid_index(events, index - 3, index)
        late = dict(events[index], event_id=self._event_id())
        late["ts"] = iso(parse_time(str(events[before]["ts"])) - timedelta(minutes=rng.randrange(45, 90)))
        events.insert(index, late)
        if poison:
            at = self._valid_index(events, lo + 3, len(events) - 4)
            source = events[at]
            for step in range(rng.randrange(3, 6)):
                payload = {k: v for k, v in source.items() if k not in ("amount_cents", "currency")}
                payload.update(
                    event_id=self._event_id(),
                    schema_version=3,
                    amount={"value": rng.randrange(200, 9000), "currency": source["currency"]},
                )
                events.insert(at + step, json.dumps(payload))
            self.notes["poison"] = str(source["ts"])

    def _refund_faults(self, events: list[Any], processed: int) -> None:
        lo = processed + 2
        bad = dict(events[self._valid_index(events, lo, len(events))], event_id=self._event_id())
        del bad["refund_of"]
        self._insert(events, lo, json.dumps(bad))
        self._duplicate(events, lo, lo, range(0))

    # -- files and state ----------------------------------------------------------------------
    def _partition(self, topic: str, partition: int, events: list[Any], processed: int, lost: range) -> None:
        lines = [e if isinstance(e, str) else json.dumps(e) for e in events]
        per = self.policy["segment_records"]
        part = PartitionState(
            topic=topic,
            partition=partition,
            log_end=len(lines),
            position=processed,
            processed=processed,
            committed=processed,
        )
        for base in range(0, len(lines), per):
            path = f"stream/{topic}/p{partition}/{base:08d}.jsonl"
            text = "\n".join(lines[base : base + per]) + "\n"
            self.files[path] = text
            part.segments[path] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.state.partitions[f"{topic}/p{partition}"] = part
        for offset in range(processed):
            event = events[offset]
            if offset in lost:
                self.notes.setdefault("gap", str(event["ts"]))
                continue
            moment = parse_time(str(event["ts"]))
            self.state.aggregated[event["event_id"]] = Aggregated(
                event_id=event["event_id"],
                topic=topic,
                partition=partition,
                offset=offset,
                ts=iso(moment),
                window=iso(window_start(moment, self.policy["window_minutes"])),
                merchant_id=event["merchant_id"],
                currency=event["currency"],
                amount_cents=event["amount_cents"],
            )
        if processed:
            self.state.commit_log.append(
                CommitRecord(
                    topic=topic,
                    partition=partition,
                    offset=processed,
                    at=iso(self.base - timedelta(minutes=20)),
                    kind="commit",
                )
            )

    def _handover(self) -> str:
        outage = parse_time(self.notes.get("gap", iso(self.base - timedelta(hours=2, minutes=50))))
        poison = parse_time(self.notes.get("poison", iso(self.base - timedelta(hours=1))))
        return self.data.text("handover_template.md").format(
            group=self.state.group, outage=f"{outage:%H:%M}", poison=f"{poison:%H:%M}"
        )
