"""IsoTime / IsoDate state fields: text that tools will parse is refused at load when it does not."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from envcraft.core import StateModel
from envcraft.core.clock import IsoDate, IsoTime


class Booking(StateModel):
    at: IsoTime
    day: IsoDate
    until: IsoTime | None = None


def test_parseable_text_is_kept_as_given() -> None:
    booking = Booking.model_validate({"at": "2026-03-13T14:45:00Z", "day": "2026-03-13"})
    assert booking.model_dump(mode="json") == {
        "at": "2026-03-13T14:45:00Z",
        "day": "2026-03-13",
        "until": None,
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"at": "2026-03-13 (2)", "day": "2026-03-13"},
        {"at": "2026-03-13T14:45:00Z", "day": "2026-03-13 (2)"},
        {"at": "2026-03-13T14:45:00Z", "day": "2026-02-30"},
        {"at": "2026-03-13T14:45:00Z", "day": "2026-03-13", "until": "soon"},
    ],
)
def test_text_that_does_not_parse_is_refused(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        Booking.model_validate(fields)


def test_assignment_is_checked_too() -> None:
    booking = Booking(at="2026-03-13T14:45:00Z", day="2026-03-13")
    with pytest.raises(ValidationError):
        booking.at = "later"
