"""Time: one UTC clock, one text form, one parser of user-given times.

Stored times are ISO 8601 UTC text with microseconds and a ``Z`` (fixed width, so text
order is time order). A ``Clock`` is any zero-argument callable returning an aware
``datetime``; tests pass a fake one to make decay and TTL deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import overload

from .errors import InvalidInput

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def to_text(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC: the stored form, which sorts as time does."""
    utc = value.astimezone(UTC)
    if utc.year >= 1000:  # isoformat pads the year to four digits; strftime does not
        return utc.isoformat(timespec="microseconds")[:-6] + "Z"  # ~1.7x strftime's speed
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@overload
def from_text(value: str) -> datetime: ...
@overload
def from_text(value: None) -> None: ...
@overload
def from_text(value: str | None) -> datetime | None: ...
def from_text(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value)


def parse_time(value: object, field: str) -> datetime:
    """A user-given time as an aware UTC datetime.

    Accepts an aware or naive ``datetime`` (naive = UTC), a ``date`` (midnight UTC), an
    ISO 8601 string, or a relative age such as ``"7d"``, ``"12h"``, ``"30m"`` (that long
    before now). Anything else raises ``InvalidInput`` naming ``field``, and so does a
    time outside the years 1 to 9999 in UTC (``"99999999999999d"``, which overflowed).
    """
    try:
        return _parse_time(value, field)
    except (OverflowError, ValueError):
        raise InvalidInput(
            field, f"{_short(value)} is out of range (times run from year 1 to 9999)"
        ) from None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_time(value: object, field: str) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        relative = _relative(text)
        if relative is not None:
            return system_clock() - relative
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(
                field, f"cannot read {value!r} as a time (ISO 8601, or an age like '7d')"
            ) from None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    raise InvalidInput(field, f"expected a datetime or ISO 8601 string, got {type(value).__name__}")


_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _relative(text: str) -> timedelta | None:
    if len(text) < 2 or text[-1] not in _UNITS:
        return None
    number = text[:-1]
    if not number.replace(".", "", 1).isdigit():
        return None
    try:
        amount = float(number)
    except ValueError:  # "²d": a digit to isdigit(), not to float()
        return None
    return timedelta(**{_UNITS[text[-1]]: amount})
