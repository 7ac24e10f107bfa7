"""Times in a document: parsed as ISO 8601 with an offset, within bounds."""

from __future__ import annotations

import datetime as dt


def parse_time(value: str) -> dt.datetime | None:
    """An ISO 8601 date-time, None if unparsable. Validation (time_problem)
    refuses one without a UTC offset; any other is read as UTC."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


#: The times a run may carry, in UTC. Outside them PostgreSQL or Python cannot
#: hold the value (0001-01-01T00:00:00+05:00 is 1 BC in UTC, 9999-12-31T23:00-05:00
#: is year 10000), and nothing was benchmarked then anyway.
EARLIEST_TIME = dt.datetime(1950, 1, 1, tzinfo=dt.UTC)
LATEST_TIME = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
#: Real UTC offsets run from -12:00 to +14:00; PostgreSQL refuses beyond ±15:59.
MAX_UTC_OFFSET = dt.timedelta(hours=14)


def time_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a run's time, or None."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not a date-time like 2026-11-20T10:00:00Z"
    if parsed.tzinfo is None:
        # Read as UTC, a local time would be stored hours away from when it ran.
        return (
            f"{value!r} has no UTC offset; add one, e.g. 2026-11-20T10:00:00Z (UTC) "
            "or 2026-11-20T11:00:00+01:00"
        )
    offset = parsed.utcoffset() or dt.timedelta()
    if abs(offset) > MAX_UTC_OFFSET:
        return f"{value!r} has a UTC offset beyond ±14:00"
    if offset % dt.timedelta(minutes=1):
        return f"{value!r} has a UTC offset that is not whole minutes"
    # Compared on the local clock: converting to UTC itself fails at year 1 and 9999.
    local, shift = parsed.replace(tzinfo=None), offset
    earliest, latest = (t.replace(tzinfo=None) + shift for t in (EARLIEST_TIME, LATEST_TIME))
    if not earliest <= local < latest:
        return (
            f"{value!r} is outside {EARLIEST_TIME.year}-01-01 to {LATEST_TIME.year - 1}-12-31 (UTC)"
        )
    return None
