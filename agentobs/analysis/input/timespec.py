"""Times as the command line takes them: a duration back from now (``30m``, ``2h``, ``7d``, ``90s``, ``1.5h``) or
an ISO 8601 / RFC 3339 time (``2026-12-05``, ``2026-12-05T10:00``, ``2026-12-05T10:00:00Z``, ``...+01:00``; a time
without a zone is UTC). Shared by ``--since``/``--until`` and Jaeger URLs (``since=``, ``until=``), so both read a
time the same way.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from ...errors import InputError

DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([smhd])")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
HINT = "use a duration like 30m, 2h or 7d, or an ISO 8601 time like 2026-12-05T10:00Z"


def parse_time(value: str, now: datetime, *, what: str = "time") -> datetime:
    """``value`` as a UTC datetime: ``now`` less a duration, or an absolute time. A time a datetime cannot hold
    (``1000000d``, a timestamp in year 1 east of UTC) is an InputError, like any other unusable time."""
    text = value.strip()
    duration = DURATION.fullmatch(text)
    try:
        if duration:
            return now - timedelta(seconds=float(duration[1]) * UNITS[duration[2]])
        t = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)
    except ValueError:
        raise InputError(f"{what} {value!r}: {HINT}") from None
    except OverflowError:
        raise InputError(f"{what} {value!r} is out of range: {HINT}, between the years 1 and 9999") from None


def iso(t: datetime) -> str:
    """A UTC time as it is shown: ``2026-12-05T10:00:00Z`` (microseconds only when there are some)."""
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S" + (".%f" if t.microsecond else "") + "Z")


__all__ = ["DURATION", "HINT", "iso", "parse_time"]
