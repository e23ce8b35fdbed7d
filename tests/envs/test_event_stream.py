"""event_stream: every domain tool's success path and error categories, stream invariants under
random call sequences (offsets, exactly-once sink, dead letters, commit log), an end-to-end
recovery checked against the segment files, and determinism."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from links_support import refile, refusal

from envcraft import Session
from envcraft.core import load_package
from envcraft.tasks.validation.exercised import _said_defaults

ENV = "event_stream"
PACKAGE = load_package(ENV)
FAULTY = {"corrupt_json", "schema_violation", "poison_pill", "late_event"}


@pytest.fixture
def s() -> Iterator[Session]:
    session = Session.memory(ENV, seed=0)
    yield session
    session.close()


def err(result: dict[str, Any]) -> str:
    assert "error" in result, result
    return str(result["error"]["category"])


def part(session: Session, partition: int, topic: str = "payments") -> dict[str, Any]:
    return dict(session.state()["partitions"][f"{topic}/p{partition}"])


def find(session: Session, verdict: str) -> tuple[int, int]:
    """(partition, offset) of the first payments record ahead with this verdict."""
    for p in sorted(session.state()["partitions"].values(), key=lambda p: (p["topic"], p["partition"])):
        if p["topic"] != "payments":
            continue
        ahead = session.call(
            "validate_batch", {"topic": "payments", "partition": p["partition"], "max_records": 100}
        )
        for row in ahead["records"]:
            if row["verdict"] == verdict:
                return p["partition"], row["offset"]
    raise AssertionError(f"no {verdict} record in the seed world")


def advance_to(session: Session, partition: int, offset: int) -> None:
    """Process (dropping duplicates, dead-lettering faults) until the position reaches ``offset``."""
    while part(session, partition)["position"] < offset:
        wanted = offset - part(session, partition)["position"]
        out = session.call(
            "process_batch",
            {
                "topic": "payments",
                "partition": partition,
                "max_records": wanted,
                "dedupe": True,
                "on_invalid": "dead_letter",
            },
        )
        if out.get("sink_write") == "failed":
            session.call(
                "seek",
                {"topic": "payments", "partition": partition, "offset": out["processed"], "reason": "sink"},
            )


def recover(session: Session, topic: str, partition: int) -> None:
    """The careful operator: audit, rewind lost records, process with explicit handling, commit."""
    audit = session.call("audit_partition", {"topic": topic, "partition": partition})
    if audit["unaccounted"]:
        session.call(
            "seek",
            {"topic": topic, "partition": partition, "offset": audit["unaccounted"][0][0], "reason": "lost"},
        )
    for _ in range(60):
        out = session.call("process_batch", {"topic": topic, "partition": partition, "max_records": 50})
        if out.get("sink_write") == "failed":
            assert err(session.call("commit_offsets", {"topic": topic, "partition": partition})) == "conflict"
            session.call(
                "seek", {"topic": topic, "partition": partition, "offset": out["processed"], "reason": "503"}
            )
            continue
        halted = out["halted_at"]
        if halted is None:
            break
        if halted["verdict"] == "duplicate":
            session.call(
                "process_batch", {"topic": topic, "partition": partition, "max_records": 1, "dedupe": True}
            )
        else:
            args = {
                "topic": topic,
                "partition": partition,
                "offset": halted["offset"],
                "note": halted["verdict"],
            }
            assert "dead_lettered" in session.call("dead_letter", args)
    session.call("commit_offsets", {"topic": topic, "partition": partition})


# -- invariants over state and workspace ---------------------------------------------------------
def sink_rows(text: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    rows = csv.DictReader(io.StringIO(text))
    return {
        (r["window_start"], r["merchant_id"], r["currency"]): (int(r["events"]), int(r["amount_cents"]))
        for r in rows
    }


def expected_sink(state: dict[str, Any], topic: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    totals: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in state["aggregated"].values():
        if row["topic"] == topic:
            cell = totals[(row["window"], row["merchant_id"], row["currency"])]
            cell[0] += 1
            cell[1] += row["amount_cents"]
    return {k: (v[0], v[1]) for k, v in totals.items()}


def check_invariants(state: dict[str, Any], files: dict[str, str], start: dict[str, int]) -> None:
    locations = Counter((a["topic"], a["partition"], a["offset"]) for a in state["aggregated"].values())
    assert all(n == 1 for n in locations.values())
    for event_id, row in state["aggregated"].items():
        assert row["event_id"] == event_id  # keyed by event id: never aggregated twice
    dead = {
        (e["topic"], e["partition"], e["offset"])
        for e in state["dead_letters"].values()
        if e["status"] == "dead"
    }
    assert not dead & set(locations)  # dead-lettered records never reach the sink
    for entry in state["dead_letters"].values():
        if entry["status"] == "replayed":
            assert state["aggregated"][entry["event_id"]]["offset"] == entry["offset"]
    deduped = {(d["topic"], d["partition"], d["offset"]) for d in state["deduped"].values()}
    for d in state["deduped"].values():
        assert d["event_id"] in state["aggregated"]
    for key, p in state["partitions"].items():
        assert 0 <= p["committed"] <= p["processed"] <= p["position"] <= p["log_end"], key
        assert bool(p["sink_error"]) == (p["position"] > p["processed"]), key
        for offset in range(start.get(key, p["processed"]), p["processed"]):  # offsets this session processed
            here = (p["topic"], p["partition"], offset)
            dead_here = any(
                (e["topic"], e["partition"], e["offset"]) == here and e["status"] == "dead"
                for e in state["dead_letters"].values()
            )
            assert (here in locations) + (here in deduped) + dead_here == 1, (key, offset)
    history: dict[str, int] = {}
    for record in state["commit_log"]:
        key = f"{record['topic']}/p{record['partition']}"
        if record["kind"] == "commit":
            assert record["offset"] >= history.get(key, 0), record  # monotonic unless rewound
        history[key] = record["offset"]
    for topic in ("payments", "refunds"):
        assert sink_rows(files[f"sink/{topic}_hourly.csv"]) == expected_sink(state, topic)


def starts(session: Session) -> dict[str, int]:
    return {k: p["processed"] for k, p in session.state()["partitions"].items()}


# -- reads ---------------------------------------------------------------------------------------
def test_list_partitions_and_acl(s: Session) -> None:
    listed = s.call("list_partitions", {})["partitions"]
    topics = Counter(p["topic"] for p in listed)
    assert topics == {"payments": 3, "refunds": 1, "audit": 1}
    audit = next(p for p in listed if p["topic"] == "audit")
    assert audit["readable"] is False
    assert all(p["lag"] == p["log_end"] - p["committed"] for p in listed)
    assert len(s.call("list_partitions", {"topic": "refunds"})["partitions"]) == 1
    assert err(s.call("list_partitions", {"topic": "orders"})) == "not_found"
    for tool in ("read_batch", "validate_batch", "process_batch", "audit_partition", "commit_offsets"):
        denied = s.call(tool, {"topic": "audit", "partition": 0})
        assert err(denied) == "permission_denied" and denied["error"]["permission"] in ("read", "commit")
    assert err(s.call("read_batch", {"topic": "payments", "partition": 7})) == "not_found"


PARTITION_TOOLS = {
    "read_batch": {},
    "validate_batch": {},
    "audit_partition": {},
    "process_batch": {},
    "commit_offsets": {},
    "seek": {"offset": 0, "reason": "x"},
    "dead_letter": {"offset": 0, "note": "x"},
    "set_partition_paused": {"paused": True, "reason": "x"},
}


@pytest.mark.parametrize("tool", sorted(PARTITION_TOOLS))
def test_partition_tools_check_topic_partition_and_acl(s: Session, tool: str) -> None:
    extra = PARTITION_TOOLS[tool]
    assert err(s.call(tool, {"topic": "orders", "partition": 0, **extra})) == "not_found"
    assert err(s.call(tool, {"topic": "payments", "partition": 9, **extra})) == "not_found"
    denied = s.call(tool, {"topic": "audit", "partition": 0, **extra})
    assert err(denied) == "permission_denied" and denied["error"]["topic"] == "audit"


def test_read_batch_offsets_follow_segment_names(s: Session) -> None:
    files = s.files()
    second = files["stream/payments/p0/00000025.jsonl"].splitlines()
    got = s.call("read_batch", {"topic": "payments", "partition": 0, "from_offset": 27, "max_records": 2})
    assert [r["offset"] for r in got["records"]] == [27, 28]
    assert [r["raw"] for r in got["records"]] == second[2:4]
    default = s.call("read_batch", {"topic": "payments", "partition": 0, "max_records": 1})
    assert default["records"][0]["offset"] == part(s, 0)["position"]
    assert (
        err(s.call("read_batch", {"topic": "payments", "partition": 0, "max_records": 0}))
        == "invalid_argument"
    )
    assert (
        err(s.call("read_batch", {"topic": "payments", "partition": 0, "from_offset": 999}))
        == "invalid_argument"
    )


def test_validate_batch_finds_every_seeded_fault(s: Session) -> None:
    counts: Counter[str] = Counter()
    for k in range(3):
        counts.update(
            s.call("validate_batch", {"topic": "payments", "partition": k, "max_records": 100})["counts"]
        )
    assert {"duplicate", "schema_violation", "late_event", "poison_pill", "corrupt_json"} <= set(counts)
    assert counts["poison_pill"] >= 3
    refunds = s.call("validate_batch", {"topic": "refunds", "partition": 0, "max_records": 100})["counts"]
    assert refunds["duplicate"] == 1 and refunds["schema_violation"] == 1
    replayed = s.call(
        "validate_batch", {"topic": "payments", "partition": 0, "from_offset": 0, "max_records": 3}
    )
    assert {r["verdict"] for r in replayed["records"]} == {"already_processed"}


def test_audit_finds_the_records_the_sink_lost(s: Session) -> None:
    audits = [s.call("audit_partition", {"topic": "payments", "partition": k}) for k in range(3)]
    gapped = [a for a in audits if a["unaccounted"]]
    assert len(gapped) == 1 and all(a["sink_file_matches"] for a in audits)
    last = gapped[0]["unaccounted"][0][1]
    assert last < gapped[0]["committed"]  # committed past records that never reached the sink
    assert err(s.call("audit_partition", {"topic": "payments", "partition": 3})) == "not_found"


def test_inspect_dead_letters_filters(s: Session) -> None:
    assert s.call("inspect_dead_letters", {})["count"] == 0
    k, offset = find(s, "schema_violation")
    advance_to(s, k, offset + 1)
    entries = s.call("inspect_dead_letters", {"reason": "schema_violation", "status": "dead"})["entries"]
    assert entries and all(e["reason"] == "schema_violation" for e in entries)
    assert err(s.call("inspect_dead_letters", {"reason": "typo"})) == "invalid_argument"
    assert err(s.call("inspect_dead_letters", {"status": "gone"})) == "invalid_argument"


# -- processing ----------------------------------------------------------------------------------
def test_process_batch_halts_and_handles_faults(s: Session) -> None:
    start = starts(s)
    k, dup = find(s, "duplicate")
    before = part(s, k)
    out = s.call(
        "process_batch",
        {"topic": "payments", "partition": k, "max_records": 100, "on_invalid": "dead_letter"},
    )
    if out.get("sink_write") == "failed":
        s.call("seek", {"topic": "payments", "partition": k, "offset": before["processed"], "reason": "503"})
        out = s.call(
            "process_batch",
            {"topic": "payments", "partition": k, "max_records": 100, "on_invalid": "dead_letter"},
        )
    assert out["halted_at"]["verdict"] == "duplicate" and out["halted_at"]["offset"] == dup
    assert part(s, k)["processed"] == dup
    dropped = s.call("process_batch", {"topic": "payments", "partition": k, "max_records": 1, "dedupe": True})
    assert dropped["deduped"] == [dup]
    assert (
        err(s.call("process_batch", {"topic": "payments", "partition": k, "max_records": 101}))
        == "invalid_argument"
    )
    check_invariants(s.state(), s.files(), start)


def test_the_goal_phrase_says_what_left_out_flags_do() -> None:
    """Left out, ``dedupe`` halts at the first duplicate (the test above). The goal phrase said
    "keeping duplicates", which an audit agent read as aggregating them: a task said the
    opposite of what its reference did."""
    spec = load_package("event_stream").env_class.tools["process_batch"]
    assert _said_defaults(spec) == {
        "dedupe": (False, "halting at the first duplicate"),
        "on_invalid": ("halt", "stopping at the first invalid record"),
    }


def test_failed_sink_write_must_be_replayed_before_commit(s: Session) -> None:
    start = starts(s)
    fault = s.state()["sink_fault"]
    k = fault["partition"]
    advance_to(s, k, fault["offset"])  # the fault may fire on the way
    p = part(s, k)
    if not p["sink_error"]:
        assert s.state()["sink_fault"]["fired"] is False
        batch = {"max_records": 5, "dedupe": True, "on_invalid": "dead_letter"}
        out = s.call("process_batch", {"topic": "payments", "partition": k, **batch})
        assert out["sink_write"] == "failed"
        p = part(s, k)
    assert p["position"] > p["processed"]
    assert err(s.call("commit_offsets", {"topic": "payments", "partition": k})) == "conflict"
    assert err(s.call("process_batch", {"topic": "payments", "partition": k})) == "invalid_transition"
    stuck = {"topic": "payments", "partition": k, "note": "x"}
    assert err(s.call("dead_letter", stuck)) == "invalid_transition"
    ahead = s.call(
        "seek", {"topic": "payments", "partition": k, "offset": p["position"], "reason": "skip it"}
    )
    assert err(ahead) == "conflict"
    back = s.call(
        "seek",
        {"topic": "payments", "partition": k, "reason": "replay after 503"},  # default: to processed
    )
    assert back["rewound"] is False and back["position"] == p["processed"]
    recover(s, "payments", k)
    assert part(s, k)["committed"] == part(s, k)["log_end"]
    check_invariants(s.state(), s.files(), start)


def test_rewind_replays_lost_records_without_double_counting(s: Session) -> None:
    start = starts(s)
    audits = {k: s.call("audit_partition", {"topic": "payments", "partition": k}) for k in range(3)}
    k = next(k for k, a in audits.items() if a["unaccounted"])
    lost = audits[k]["unaccounted_count"]
    before = len(s.state()["aggregated"])
    first = audits[k]["unaccounted"][0][0]
    out = s.call(
        "seek", {"topic": "payments", "partition": k, "offset": first, "reason": "sink outage at night"}
    )
    assert out["rewound"] and out["committed"] == first
    assert s.state()["commit_log"][-1]["kind"] == "rewind"
    replay = s.call(
        "process_batch", {"topic": "payments", "partition": k, "max_records": audits[k]["processed"] - first}
    )
    assert replay["aggregated"] == lost and replay["skipped"] == audits[k]["processed"] - first - lost
    assert len(s.state()["aggregated"]) == before + lost
    assert s.call("audit_partition", {"topic": "payments", "partition": k})["unaccounted"] == []
    s.call("commit_offsets", {"topic": "payments", "partition": k})
    start[f"payments/p{k}"] = first
    check_invariants(s.state(), s.files(), start)
    assert (
        err(s.call("seek", {"topic": "payments", "partition": k, "offset": 0, "reason": " "}))
        == "invalid_argument"
    )
    assert (
        err(s.call("seek", {"topic": "payments", "partition": k, "offset": -2, "reason": "x"}))
        == "invalid_argument"
    )


def test_dead_letter_preconditions(s: Session) -> None:
    k, offset = find(s, "poison_pill")
    advance_to(s, k, offset)
    args = {"topic": "payments", "partition": k, "note": "schema v3 producer"}
    assert err(s.call("dead_letter", {**args, "offset": offset + 1})) == "conflict"
    assert err(s.call("dead_letter", {**args, "offset": offset, "count": 0})) == "invalid_argument"
    assert err(s.call("dead_letter", {**args, "offset": offset, "note": ""})) == "invalid_argument"
    assert err(s.call("dead_letter", {**args, "offset": 10_000})) == "invalid_argument"
    run = 0
    ahead = s.call("validate_batch", {"topic": "payments", "partition": k, "max_records": 10})["records"]
    while ahead[run]["verdict"] == "poison_pill":
        run += 1
    if ahead[run]["verdict"] not in FAULTY:  # the stretch ends at a record that must not be dead-lettered
        assert err(s.call("dead_letter", {**args, "offset": offset, "count": run + 1})) == "conflict"
    made = s.call("dead_letter", {**args, "offset": offset, "count": run})
    assert [d["reason"] for d in made["dead_lettered"]] == ["poison_pill"] * run
    queue = [json.loads(line) for line in s.files()["dlq/payments.jsonl"].splitlines()]
    assert [q["offset"] for q in queue if q["reason"] == "poison_pill"] == list(range(offset, offset + run))
    valid = s.call("validate_batch", {"topic": "payments", "partition": k, "max_records": 1})["records"][0]
    if valid["verdict"] == "ok":
        assert err(s.call("dead_letter", {**args, "offset": valid["offset"]})) == "conflict"


def test_duplicates_cannot_be_dead_lettered(s: Session) -> None:
    k, offset = find(s, "duplicate")
    advance_to(s, k, offset)
    refused = s.call("dead_letter", {"topic": "payments", "partition": k, "offset": offset, "note": "dup"})
    assert err(refused) == "conflict" and refused["error"]["verdict"] == "duplicate"


def test_replay_dead_letter(s: Session) -> None:
    start = starts(s)
    k, offset = find(s, "poison_pill")
    advance_to(s, k, offset + 1)
    entry = s.call("inspect_dead_letters", {"reason": "poison_pill"})["entries"][0]
    event = json.loads(entry["raw"])
    amount = event.pop("amount")
    assert err(
        s.call("replay_dead_letter", {"dlq_id": entry["dlq_id"], "corrected_record": json.dumps(event)})
    ) == ("invalid_argument")
    fixed = {**event, "schema_version": 2, "amount_cents": amount["value"], "currency": amount["currency"]}
    other = {**fixed, "event_id": "EVT-00000000"}
    assert err(
        s.call("replay_dead_letter", {"dlq_id": entry["dlq_id"], "corrected_record": json.dumps(other)})
    ) == ("invalid_argument")
    assert err(s.call("replay_dead_letter", {"dlq_id": entry["dlq_id"], "corrected_record": "{oops"})) == (
        "invalid_argument"
    )
    done = s.call("replay_dead_letter", {"dlq_id": entry["dlq_id"], "corrected_record": json.dumps(fixed)})
    assert (
        done["status"] == "replayed"
        and s.state()["aggregated"][event["event_id"]]["amount_cents"] == amount["value"]
    )
    again = s.call("replay_dead_letter", {"dlq_id": entry["dlq_id"], "corrected_record": json.dumps(fixed)})
    assert err(again) == "invalid_transition"
    assert '"status": "replayed"' in s.files()["dlq/payments.jsonl"]
    assert err(s.call("replay_dead_letter", {"dlq_id": "DLQ-9999", "corrected_record": "{}"})) == "not_found"
    check_invariants(s.state(), s.files(), start)


def test_late_events_stay_dead(s: Session) -> None:
    k, offset = find(s, "late_event")
    advance_to(s, k, offset + 1)
    late = s.call("inspect_dead_letters", {"reason": "late_event"})["entries"][0]
    refused = s.call("replay_dead_letter", {"dlq_id": late["dlq_id"], "corrected_record": late["raw"]})
    assert err(refused) == "invalid_transition"


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_replaying_a_truncated_delivery_never_double_counts(seed: int) -> None:
    with Session.memory(ENV, seed=seed) as session:
        start = starts(session)
        try:
            k, offset = find(session, "corrupt_json")
        except AssertionError:
            pytest.skip("this seed has no corrupt line")
        advance_to(session, k, offset + 1)
        entry = session.call("inspect_dead_letters", {"reason": "corrupt_json"})["entries"][0]
        lines = [
            r["raw"]
            for r in session.call(
                "read_batch", {"topic": "payments", "partition": k, "from_offset": 0, "max_records": 100}
            )["records"]
        ]
        full = next(line for line in lines if line.startswith(entry["raw"]) and line != entry["raw"])
        already = entry["event_id"] in session.state()["aggregated"]
        result = session.call("replay_dead_letter", {"dlq_id": entry["dlq_id"], "corrected_record": full})
        if already:  # the complete delivery came first: the event is in the sink once already
            assert err(result) == "conflict"
        else:  # the complete delivery comes later and will be a duplicate
            assert result["status"] == "replayed"
            recover(session, "payments", k)
            assert any(d["event_id"] == entry["event_id"] for d in session.state()["deduped"].values())
        check_invariants(session.state(), session.files(), start)


def test_pause_and_resume(s: Session) -> None:
    args = {"topic": "payments", "partition": 1, "reason": "producer bug under investigation"}
    assert s.call("set_partition_paused", {**args, "paused": True})["paused"] is True
    assert err(s.call("set_partition_paused", {**args, "paused": True})) == "invalid_transition"
    assert err(s.call("process_batch", {"topic": "payments", "partition": 1})) == "invalid_transition"
    assert err(s.call("set_partition_paused", {**args, "paused": False, "reason": ""})) == "invalid_argument"
    resumed = s.call("set_partition_paused", {**args, "paused": False})
    assert resumed["paused"] is False and resumed["pause_reason"] == ""


def test_segments_are_immutable(s: Session) -> None:
    path = "stream/payments/p2/00000000.jsonl"
    text = s.files()[path]
    assert "error" not in s.call("write_file", {"path": path, "content": text.replace("card", "cash", 1)})
    tampered = s.call("read_batch", {"topic": "payments", "partition": 2})
    assert err(tampered) == "conflict" and tampered["error"]["path"] == path
    assert "error" not in s.call("write_file", {"path": path, "content": text})
    assert "records" in s.call("read_batch", {"topic": "payments", "partition": 2})


def test_commit_is_idempotent_and_monotonic(s: Session) -> None:
    assert s.call("commit_offsets", {"topic": "refunds", "partition": 0})["changed"] is False
    recover(s, "refunds", 0)
    p = part(s, 0, "refunds")
    assert p["committed"] == p["processed"] == p["log_end"]
    assert s.call("commit_offsets", {"topic": "refunds", "partition": 0})["changed"] is False


# -- end to end, generator, determinism ---------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_full_recovery_matches_the_segment_files(seed: int) -> None:
    with Session.memory(ENV, seed=seed) as session:
        start = starts(session)
        for p in session.state()["partitions"].values():
            if p["topic"] != "audit":
                recover(session, p["topic"], p["partition"])
        state, files = session.state(), session.files()
        for key, p in state["partitions"].items():
            if p["topic"] != "audit":
                assert p["committed"] == p["log_end"], key
                assert (
                    session.call("audit_partition", {"topic": p["topic"], "partition": p["partition"]})[
                        "unaccounted"
                    ]
                    == []
                )
        start.update({k: 0 for k in start})  # after the rewind every offset is accounted once
        check_invariants(state, files, start)
        lines: dict[tuple[str, int], list[str]] = defaultdict(list)
        for path in sorted(files):
            if path.startswith("stream/"):
                _, topic, name, _ = path.split("/")
                lines[(topic, int(name[1:]))].extend(files[path].splitlines())
        for row in state["aggregated"].values():  # every aggregated event is what the log says
            event = json.loads(lines[(row["topic"], row["partition"])][row["offset"]])
            assert (event["event_id"], event["amount_cents"]) == (row["event_id"], row["amount_cents"])


def test_generator_is_seeded_and_scales() -> None:
    with Session.memory(ENV, seed=4) as a, Session.memory(ENV, seed=4) as b, Session.memory(ENV, seed=5) as c:
        assert a.snapshot_hash() == b.snapshot_hash() != c.snapshot_hash()
    with Session.memory(ENV, seed=4, size=2) as big:
        state = big.state()
        assert Counter(p["topic"] for p in state["partitions"].values())["payments"] == 4
        assert max(p["log_end"] for p in state["partitions"].values()) > 80
        check_invariants(state, big.files(), starts(big))


def test_same_calls_reach_the_same_outcome() -> None:
    outcomes = []
    for _ in range(2):
        with Session.memory(ENV, seed=6) as session:
            recover(session, "payments", 0)
            outcomes.append((session.snapshot_hash(), [e["result"] for e in session.actions()]))
    assert outcomes[0] == outcomes[1]


DOMAIN_TOOLS = sorted(set(PACKAGE.env_class.tools) - {"shell", "write_file", "edit_file"})


def _args(data: st.DataObject, tool: str, state: dict[str, Any]) -> dict[str, Any]:
    topic = data.draw(st.sampled_from(["payments", "payments", "refunds", "audit", "orders"]))
    partition = data.draw(st.integers(-1, 3))
    known = state["partitions"].get(f"{topic}/p{partition}")
    position = known["position"] if known else 0
    offset = data.draw(st.sampled_from([position, position, max(0, position - 3), position + 2, 0]))
    dlq = data.draw(st.sampled_from([*sorted(state["dead_letters"]), "DLQ-0000"]))
    raw = state["dead_letters"][dlq]["raw"] if dlq in state["dead_letters"] else "{}"
    choices: dict[str, dict[str, Any]] = {
        "list_partitions": {"topic": data.draw(st.sampled_from(["", topic]))},
        "read_batch": {"topic": topic, "partition": partition, "max_records": data.draw(st.integers(0, 30))},
        "validate_batch": {"topic": topic, "partition": partition, "from_offset": offset},
        "inspect_dead_letters": {"reason": data.draw(st.sampled_from(["", "poison_pill", "bogus"]))},
        "audit_partition": {"topic": topic, "partition": partition},
        "process_batch": {
            "topic": topic,
            "partition": partition,
            "max_records": data.draw(st.integers(1, 40)),
            "dedupe": data.draw(st.booleans()),
            "on_invalid": data.draw(st.sampled_from(["halt", "dead_letter"])),
        },
        "commit_offsets": {"topic": topic, "partition": partition},
        "seek": {"topic": topic, "partition": partition, "offset": offset, "reason": "replay"},
        "dead_letter": {"topic": topic, "partition": partition, "offset": offset, "note": "bad", "count": 1},
        "replay_dead_letter": {"dlq_id": dlq, "corrected_record": raw},
        "set_partition_paused": {
            "topic": topic,
            "partition": partition,
            "paused": data.draw(st.booleans()),
            "reason": "ops",
        },
        "read_file": {
            "path": data.draw(st.sampled_from(["ops/handover.md", "sink/payments_hourly.csv", "nope"]))
        },
        "list_files": {"path": "."},
    }
    return choices[tool]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2), data=st.data())
def test_random_call_sequences_keep_the_invariants(seed: int, data: st.DataObject) -> None:
    with Session.memory(ENV, seed=seed) as session:
        start = starts(session)
        for _ in range(25):
            state = session.state()
            tool = data.draw(
                st.sampled_from([*DOMAIN_TOOLS, "process_batch", "process_batch", "dead_letter"])
            )
            before = session.snapshot_hash()
            result = session.call(tool, _args(data, tool, state))
            assert isinstance(result, dict)
            if "error" in result:
                assert result["error"]["category"] != "internal_error", result
                assert session.snapshot_hash() == before
            elif PACKAGE.env_class.tools[tool].annotations.read_only:
                assert session.snapshot_hash() == before
            after = session.state()
            for key, p in after["partitions"].items():  # a seek below may restart accounting there
                start[key] = min(start.get(key, p["processed"]), p["processed"])
            check_invariants(after, session.files(), start)


# -- the links of a hand-made S0 (per-record @invariant checks, the messages the whole-state
# validator gave before them) ------------------------------------------------------------------------
def test_a_partition_filed_under_another_key_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        refile(s["partitions"], "payments/p0", "payments/p9")

    assert "records filed under another key: payments/p9" in refusal(ENV, mutate)


def test_a_sink_row_filed_under_another_event_id_is_refused() -> None:
    def mutate(s: dict[str, Any]) -> None:
        refile(s["aggregated"], next(iter(s["aggregated"])), "EVT-00000000")

    assert "records filed under another key: EVT-00000000" in refusal(ENV, mutate)
