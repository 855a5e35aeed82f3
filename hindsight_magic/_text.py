"""How the extension writes for people: plurals, and every time it shows or sends.

Two clocks appear to the user: the *server's* times (ISO 8601 text, shown in UTC to the minute,
because memories and mental models are shared across machines and time zones) and the
*kernel's* own events (epoch seconds from ``time.time()``, shown in local time, because they
answer "when did this notebook last flush"). Memories are sent with a local ISO timestamp that
carries its UTC offset, so the server knows both. Stdlib only: imported by every layer."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone


def plural(count: int, one: str, many: str) -> str:
    """``1 memory`` / ``3 memories``."""
    return f"{count} {one if count == 1 else many}"


_OFFSET_PERIOD_S = 900  # UTC offsets change only at quarter hours (DST, zone changes)
_local_zone: tuple[int, timezone] = (-1, timezone.utc)  # (quarter hour, its local zone)


def parse_iso(stamp: str | None) -> datetime | None:
    """ISO 8601 text as an aware time (``Z`` accepted, no offset taken as UTC); None if not one."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def utc_minute(moment: datetime | None = None) -> str:
    """``YYYY-MM-DD HH:MM`` in UTC, of ``moment`` or now (a naive time is taken as UTC)."""
    if moment is None:
        moment = datetime.now(timezone.utc)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")


def utc_minute_text(stamp: str | None, suffix: str = "") -> str:
    """A server's ISO time as ``utc_minute`` + ``suffix``; '' when missing, unparsable as given."""
    if not stamp:
        return ""
    moment = parse_iso(stamp)
    return stamp if moment is None else utc_minute(moment) + suffix


def local_second(epoch: float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in the kernel's local time, of ``time.time()`` seconds."""
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def local_clock(epoch: float | None = None) -> str:
    """``HH:MM:SS`` in the kernel's local time, of ``time.time()`` seconds or now."""
    moment = datetime.now() if epoch is None else datetime.fromtimestamp(epoch)
    return moment.astimezone().strftime("%H:%M:%S")


def _local_zone_at(epoch: float) -> timezone:
    """The kernel's local UTC offset at ``epoch``, looked up once per quarter hour
    (``astimezone()`` asks the C library each time: most of a timestamp's cost)."""
    global _local_zone
    quarter = int(epoch // _OFFSET_PERIOD_S)
    if _local_zone[0] != quarter:
        offset = timedelta(seconds=time.localtime(epoch).tm_gmtoff)
        _local_zone = (quarter, timezone(offset))
    return _local_zone[1]


def local_timestamp(moment: datetime | float | None = None) -> str:
    """Local time with its UTC offset, ISO 8601, milliseconds dropped when zero.

    ``moment`` is a datetime, ``time.time()`` seconds, or None for now.
    """
    if isinstance(moment, datetime):
        moment = moment.astimezone()
    else:
        epoch = time.time() if moment is None else moment
        moment = datetime.fromtimestamp(epoch, _local_zone_at(epoch))
    spec = "seconds" if moment.microsecond < 1000 else "milliseconds"
    return moment.isoformat(timespec=spec)
