"""Time travel by timestamp: what ``Table.snapshot(timestamp=...)`` and ``Table.restore(timestamp=...)``
accept, as epoch milliseconds for the core (which owns the rule: the newest version committed at or
before the instant, in-commit timestamps where the table has them, commit-file times before that).

An instant is a ``datetime`` (a naive one is read as UTC, the zone the log's timestamps are in) or
an ISO 8601 text (``2026-11-28``, ``2026-11-28T03:00:00``, ``...+01:00`` or ``...Z``)."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Optional, Union

from .exceptions import InvalidArgumentError

Instant = Union[_dt.datetime, _dt.date, str]


def epoch_ms(timestamp: Instant) -> int:
    """``timestamp`` as milliseconds since the Unix epoch (InvalidArgumentError if it is not an
    instant)."""
    value = timestamp
    if isinstance(value, str):
        text = value.strip()
        try:
            value = _dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise InvalidArgumentError(f"timestamp {timestamp!r} is not an ISO 8601 date or date-time") from None
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        value = _dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, _dt.datetime):
        raise InvalidArgumentError(f"timestamp must be a datetime, a date or an ISO 8601 text, got {timestamp!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return delta // _dt.timedelta(milliseconds=1)


def utc_text(ms: int) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS`` in UTC (the CLI's and the timeline's clock)."""
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def version_from(handle: Any, timestamp: Instant) -> int:
    """The first version committed at or after ``timestamp`` (where a change feed from that instant
    starts): one after the version current just before it, 0 before the table existed. ``handle``
    is the table's core handle, whose ``version_at`` owns the rule for commit times."""
    ms = epoch_ms(timestamp)
    try:
        return int(handle.version_at(ms - 1)) + 1
    except InvalidArgumentError:  # (version_at's only one: the table did not exist yet)
        return 0


def one_of(version: Optional[int], timestamp: Optional[Instant], what: str) -> None:
    """Refuse ``version`` and ``timestamp`` given together."""
    if version is not None and timestamp is not None:
        raise InvalidArgumentError(f"{what}: give a version or a timestamp, not both")
