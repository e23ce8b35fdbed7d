"""Deterministic time: a session's clock is a pure function of ``base_time`` and the action index.

Wall-clock time would make replays diverge and rewards irreproducible (paper Table 15, rule 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator

DEFAULT_BASE_TIME = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DEFAULT_TICK = timedelta(minutes=1)


@dataclass(frozen=True)
class Clock:
    base_time: datetime = DEFAULT_BASE_TIME
    tick: timedelta = DEFAULT_TICK
    _iso: dict[int, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def at(self, action_index: int) -> datetime:
        """The time at which action number ``action_index`` (0-based) happens."""
        return self.base_time + self.tick * action_index

    def iso_at(self, action_index: int) -> str:
        """:func:`iso` of :meth:`at` (every logged call needs it; formatting is the slow part)."""
        found = self._iso.get(action_index)
        if found is None:
            if len(self._iso) > 8192:
                self._iso.clear()
            found = self._iso[action_index] = iso(self.at(action_index))
        return found


def parse_time(value: str | datetime) -> datetime:
    """Parse ISO-8601; naive times are taken as UTC so every clock is comparable."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def iso(moment: datetime) -> str:
    """Second-precision ISO-8601 in UTC with a ``Z`` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time_text(value: str) -> str:
    parse_time(value)
    return value


def _date_text(value: str) -> str:
    date.fromisoformat(value)
    return value


# State fields holding a moment or a day as text. Tools parse them on every call, so a state whose
# text does not parse must be refused when it is loaded, not crash the first tool that reads it.
IsoTime = Annotated[str, AfterValidator(_time_text)]
IsoDate = Annotated[str, AfterValidator(_date_text)]
