"""Archetype retrieval by keyword overlap (the paper: "the two most relevant archetypes").

Each of the nine interaction archetypes has a keyword list; a scenario spec scores one
point per keyword word it contains (a phrase scores its word count, so specific phrases
outweigh single words); each keyword counts once however often it occurs. Ties fall back
to the fixed order of ``ARCHETYPES``, so the result is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from envcraft.core.package import ARCHETYPES

ARCHETYPE_KEYWORDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "transactional_workspace": (
            "transaction", "atomic", "commit", "rollback", "ledger", "balance", "transfer", "account",
            "document", "note", "edit", "editing", "version", "file", "folder", "workspace", "record",
            "crud", "draft", "archive", "archiving", "backup", "restore", "storage", "cart", "profile",
            "repository", "vault", "playlist", "bookmark", "wallet",
        ),
        "cross_tool_pipeline": (
            "pipeline", "extract", "extraction", "transform", "aggregate", "aggregation", "import",
            "export", "convert", "parse", "parsing", "summarize", "summary", "summarization", "report",
            "merge", "multi-source", "cross-file", "data cleaning", "transcription", "retrieval",
            "search", "query", "chart", "pivot", "analysis", "statistics", "statistical", "citation",
            "translation", "consolidation", "compile", "spreadsheet", "csv", "comparison",
        ),
        "human_agent_interaction": (
            "user", "customer", "message", "messaging", "chat", "conversation", "reply", "confirm",
            "confirmation", "clarify", "feedback", "review", "support", "ticket", "escalation",
            "inbox", "email", "moderation", "comment", "appeal", "interaction", "communication",
            "human", "annotator", "negotiation",
        ),
        "async_event_trigger": (
            "event", "trigger", "webhook", "notification", "notify", "alert", "alerting", "reminder",
            "rule", "subscription", "callback", "delay", "timer", "monitoring", "automatic",
            "automation", "automated", "event-driven", "follow-up", "warning", "detection", "fault",
            "recovery", "trading bot", "incident",
        ),
        "constraint_state_machine": (
            "state", "status", "transition", "lifecycle", "order", "cancel", "cancellation", "refund",
            "return", "enrollment", "eligibility", "constraint", "policy", "permission",
            "access control", "tier", "membership", "validation", "approval", "state machine", "claim",
            "borrow", "renewal", "overdue", "registration", "compliance", "limit", "checklist",
            "authentication", "playback", "fare rule", "ban", "audit", "remediation", "purchase",
        ),
        "temporal_scheduling": (
            "schedule", "scheduling", "calendar", "appointment", "booking", "reservation", "slot",
            "availability", "capacity", "deadline", "recurrence", "recurring", "shift", "itinerary",
            "timetable", "room", "meeting", "time window", "duration", "conflict", "reschedule",
            "interview", "maintenance", "sprint", "milestone", "rebooking", "viewing", "hold", "seat",
        ),
        "bilateral_matching": (
            "match", "matching", "matchmaking", "pair", "driver", "rider", "ride hailing", "candidate",
            "recruiting", "applicant", "tenant", "listing", "buyer", "seller", "supplier", "vendor",
            "quote", "bid", "marketplace", "preference", "shortlist", "two-sided", "bilateral",
            "courier", "dispatch", "seating", "party size", "job posting", "assignment by",
        ),
        "workflow_orchestration": (
            "workflow", "orchestration", "orchestrate", "job", "dag", "dependency", "dependencies",
            "stage", "multi-stage", "retry", "deploy", "deployment", "build", "release", "ci/cd",
            "process definition", "batch", "queue", "worker", "distributed", "reproduction",
            "reproducibility", "coordination", "artifact", "routing", "etl", "defect",
        ),
        "stream_processing": (
            "stream", "streaming", "log", "logs", "metric", "metrics", "telemetry", "sensor",
            "real-time", "window", "checkpoint", "deduplicate", "throughput", "anomaly", "anomalous",
            "feed", "time series", "price", "market data", "reading", "series", "ingestion", "audio",
            "video", "performance",
        ),
    }
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_KEEP_S = ("ss", "is", "us")


def _words(text: str) -> list[str]:
    """Lower-case alphanumeric words; a plural ``-s`` is dropped so "alerts" matches "alert"."""
    return [_singular(w) for w in _WORD.findall(text.lower())]


def _singular(word: str) -> str:
    if len(word) <= 3 or not word.endswith("s") or word.endswith(_KEEP_S):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes")):
        return word[:-2]
    return word[:-1]


def _compiled() -> dict[str, list[tuple[str, ...]]]:
    return {name: [tuple(_words(k)) for k in words] for name, words in ARCHETYPE_KEYWORDS.items()}


_PHRASES = _compiled()


def score_archetypes(spec: str | Iterable[str]) -> dict[str, int]:
    """Keyword-overlap score of every archetype for a spec text or a list of keywords."""
    text = spec if isinstance(spec, str) else " . ".join(spec)
    words = _words(text)
    grams = {tuple(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}
    return {name: sum(len(p) for p in phrases if p in grams) for name, phrases in _PHRASES.items()}


def retrieve_archetypes(spec: str | Iterable[str], k: int = 2) -> list[str]:
    """Up to ``k`` archetypes whose keywords overlap the spec, best first (ties in ARCHETYPES order).

    Archetypes with no overlap are never returned, so a spec that matches nothing gets
    ``[]`` and the caller chooses its own default.
    """
    scores = score_archetypes(spec)
    ranked = sorted(ARCHETYPES, key=lambda name: (-scores[name], ARCHETYPES.index(name)))
    return [name for name in ranked if scores[name] > 0][:k]
