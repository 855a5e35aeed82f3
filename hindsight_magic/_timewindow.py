"""WHEN, as ``--since``/``--until`` and ``since=``/``until=`` take it, and the window it makes.

A WHEN is an ISO date or date-time (``2026-11-03``, ``2026-11-03 14:30``), a written date
python-dateutil reads (``3 Nov``, ``November 3 2026``), a relative span back from now (``90m``,
``12h``, ``3d``, ``2w``), a word (``now``, ``today``, ``yesterday``), or a ``datetime``/``date``.
A WHEN without a time zone is the user's local time: "since yesterday" means the user's
yesterday, not UTC's. A day as ``--until`` includes that whole day (``--until 2026-11-03``
keeps what was recorded on 3 November); every other bound is exact.

The axis is each memory's ``mentioned_at``: when it was recorded, which is when it was
retained unless the retain item carried its own ``timestamp`` (a restored snapshot keeps the
original dates, where the server's ``created_at`` would be the day of the import).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import TypeAlias

from ._errors import PUBLIC, InputError
from ._text import one_line, parse_iso

When: TypeAlias = "str | datetime | date"

TIME_FIELD = "mentioned_at"  # the server's name for the axis above

_SPAN = re.compile(r"^\s*(\d{1,6})\s*(m|min|mins|minutes?|h|hours?|d|days?|w|weeks?)\s*$", re.I)
_UNIT = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_ISO_T = re.compile(r"\dT\d", re.I)  # 2026-11-03T00 names a time; "Tue 3 Nov" a whole day
EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)  # an open start, where one is needed
# past the last bound a WHEN may name: a whole day's end, and any zone's, stay in datetime's
LATEST = datetime(9999, 1, 1, tzinfo=timezone.utc)
RANGE = "1900 to 9998"
EXAMPLES = "an ISO date like 2026-11-03, '3 Nov', 3d, 2w, 12h, today or yesterday"


class WhenError(InputError):
    """A WHEN that cannot be read, or bounds the wrong way round; the message is one line."""

    __module__ = PUBLIC


def local_zone() -> tzinfo:
    """The user's time zone now (the kernel's ``TZ`` or the system's)."""
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None  # astimezone() always sets one
    return zone


def _aware(now: datetime | None) -> datetime:
    """``now`` (default: this instant) with a zone: the user's when it has none."""
    if now is None:
        return datetime.now(local_zone())
    return now if now.tzinfo else now.astimezone()


def _day_start(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone)


@dataclass(frozen=True)
class Bound:
    """One end of a window: the instant, and whether the user named a whole day."""

    at: datetime  # aware
    whole_day: bool = False


def parse_when(value: When, *, now: datetime | None = None, name: str = "") -> Bound:
    """``value`` as a bound; ``WhenError`` with what to write instead when it is not a WHEN
    (``name``, ``--since`` say, tells the user which of two WHENs it was), or names a time
    outside 1900–9998 or an offset no clock has (``+25:00``): either would overflow once
    turned into UTC or the user's zone, or made the end of a whole day."""
    now = _aware(now)
    bound = _bound(value, now, name)
    try:
        utc = bound.at.astimezone(timezone.utc)
        bound.at.astimezone(now.tzinfo)  # as the headline shows it
    except (ValueError, OverflowError):
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST - timedelta(days=1):
        shown = one_line(value if isinstance(value, str) else str(value), 40)
        raise WhenError(
            f"{name or 'A WHEN'} {shown!r} is not a time a memory can have: use one from "
            f"{RANGE}, with an offset under 24 hours."
        )
    return bound


def dated(when: When, *, now: datetime | None = None, name: str = "--at") -> datetime:
    """The moment a memory retained at ``when`` is dated (the retain item's ``timestamp``):
    WHEN read as ``--since`` reads it, so a day is its start in the user's zone and a span is
    that long ago. ``WhenError`` (one line; ``name`` says which option or keyword) when it is
    not a WHEN, or lies in the future: a memory is dated when its fact was written or true,
    and one dated later would be missing from every window and as-of read until then."""
    now = _aware(now)
    at = parse_when(when, now=now, name=name).at
    if at > now:
        raise WhenError(
            f"{name} ({_shown(at, now)}) is in the future: date a memory when its fact was "
            f"written or true, up to now, or leave {name} out to date it now."
        )
    return at


def _bound(value: object, now: datetime, name: str) -> Bound:  # a caller may pass anything
    zone = now.tzinfo
    assert zone is not None
    if isinstance(value, datetime):
        return Bound(value if value.tzinfo else value.replace(tzinfo=zone))
    if isinstance(value, date):
        return Bound(_day_start(value, zone), whole_day=True)
    if not isinstance(value, str):
        what = name or "A WHEN"
        raise WhenError(f"{what} is text or a datetime, not {type(value).__name__}: {EXAMPLES}.")
    text = value.strip()
    word = text.lower()
    if word == "now":
        return Bound(now)
    if word in ("today", "yesterday"):
        day = now.date() - timedelta(days=1 if word == "yesterday" else 0)
        return Bound(_day_start(day, zone), whole_day=True)
    if text.isdigit() and len(text) <= 4:
        # "--since 3 Nov" unquoted leaves "3", which dateutil reads as this month's 3rd
        raise WhenError(
            f"{name or 'A WHEN'} {text!r} is a number, not a time: write a span (3d) or a date"
            " (2026-11-03, or '3 Nov' in quotes)."
        )
    span = _SPAN.match(text)
    if span:
        unit = _UNIT[span.group(2)[0].lower()]
        try:
            return Bound(now - timedelta(**{unit: int(span.group(1))}))
        except OverflowError:
            raise WhenError(f"{text!r} reaches back before the year 1: use a shorter span.") from (
                None
            )
    return _written(text, now, name)


def _written(text: str, now: datetime, name: str = "") -> Bound:
    """A written date or date-time, through python-dateutil (ISO forms and ``3 Nov 2026``)."""
    from dateutil import parser

    unreadable = WhenError(
        f"Cannot read {one_line(text, 40)!r} as a time{' for ' + name if name else ''}:"
        f" use {EXAMPLES}."
    )
    if not text or not any(ch.isdigit() for ch in text):
        # dateutil reads "Nov" alone as this month's today: a WHEN names a day or a span
        raise unreadable
    midnight = datetime.combine(now.date(), time(0))
    try:
        parsed = parser.parse(text, default=midnight)
    except (ValueError, OverflowError):
        raise unreadable from None
    timed = parsed.time() != time(0) or ":" in text or _ISO_T.search(text) is not None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=now.tzinfo)
    return Bound(parsed, whole_day=not timed)


def _shown(at: datetime, now: datetime) -> str:
    """``at`` as the headline says it: ``today``, ``3 Nov``, ``3 Nov 2025``, ``3 Nov 14:30``."""
    local = at.astimezone(now.tzinfo)
    day = local.date()
    if day == now.date():
        name = "today"
    elif day == now.date() - timedelta(days=1):
        name = "yesterday"
    else:
        name = f"{day.day} {day:%b}" + (f" {day.year}" if day.year != now.year else "")
    if local.time().replace(second=0, microsecond=0) != time(0):
        name += f" {local:%H:%M}"
    return name


@dataclass(frozen=True)
class TimeWindow:
    """``[start, end)`` on the ``mentioned_at`` axis; either end may be open."""

    start: datetime | None = None
    end: datetime | None = None
    label: str = ""  # "since 3 Nov", "between 3 Nov and today", "before 1 Dec"

    @classmethod
    def parse(
        cls, since: When | None = None, until: When | None = None, *, now: datetime | None = None
    ) -> TimeWindow | None:
        """The window ``since``…``until`` names, or ``None`` when neither is given."""
        if since is None and until is None:
            return None
        now = _aware(now)
        start = parse_when(since, now=now, name="--since") if since is not None else None
        end = parse_when(until, now=now, name="--until") if until is not None else None
        end_at = end.at + timedelta(days=1) if end and end.whole_day else (end.at if end else None)
        if start and end and end_at is not None and start.at >= end_at:
            raise WhenError(
                f"--since ({_shown(start.at, now)}) is not before --until ({_shown(end.at, now)}):"
                " swap them, or widen the window."
            )
        if start and end:
            label = f"between {_shown(start.at, now)} and {_shown(end.at, now)}"
        elif start:
            label = f"since {_shown(start.at, now)}"
        else:
            assert end is not None
            label = f"until {_shown(end.at, now)}"
        return cls(start.at if start else None, end_at, label)

    def contains(self, moment: datetime | None) -> bool:
        """Whether ``moment`` (aware) lies in the window; an undated memory lies in none."""
        if moment is None:
            return False
        return (self.start is None or moment >= self.start) and (
            self.end is None or moment < self.end
        )

    def server_range(self) -> dict[str, str]:
        """``start_date``/``end_date`` for ``GET …/memories/list`` (UTC ISO, end exclusive)."""
        out = {}
        if self.start is not None:
            out["start_date"] = _utc(self.start)
        if self.end is not None:
            out["end_date"] = _utc(self.end)
        return out

    def temporal_window(self, now: datetime | None = None) -> tuple[str, str]:
        """Recall's ``temporal_window`` (start, end; UTC ISO) for this window.

        The server's temporal arm ranks memories dated in it higher but does not leave the
        others out, so ``Reader.recall`` also filters with ``contains``. The server wants both
        ends: an open start is 1900, an open end is now (or the start, when that is later).
        """
        start = self.start or EARLIEST
        end = self.end or max(_aware(now), start)
        return _utc(start), _utc(end)

    def query_timestamp(self) -> str | None:
        """Recall's ``query_timestamp``: the end, when there is one, so that recency is
        measured from it ("what did we believe until 3 Nov" favours late October)."""
        return _utc(self.end) if self.end is not None else None


def _utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()


def server_time(value: object) -> datetime | None:
    """A timestamp from the server (ISO text, UTC when it has no offset), or ``None``."""
    return parse_iso(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class AsOf:
    """A moment to read memory as it was: the versions valid then, nothing recorded after.

    WHEN is read as ``--until`` reads it: a day means the end of that day."""

    at: datetime  # aware
    label: str  # "on 3 Nov", "yesterday", "today 14:30": the moment, as the headline says it

    @classmethod
    def parse(cls, when: When, *, now: datetime | None = None) -> AsOf:
        """``when`` as an ``AsOf``; ``WhenError`` (one line) when it is not a WHEN, or lies in
        the future (memory cannot be read as it will be)."""
        now = _aware(now)
        bound = parse_when(when, now=now, name="--as-of")
        at = bound.at + timedelta(days=1) if bound.whole_day else bound.at
        if bound.at > now:
            raise WhenError(
                f"--as-of ({_shown(bound.at, now)}) is in the future: memory can be read as it "
                "was, not as it will be; leave --as-of out for now."
            )
        shown = _shown(bound.at, now)
        on = "" if shown.startswith(("today", "yesterday")) else "on "
        return cls(min(at, now), on + shown)

    def holds(self, recorded: datetime | None, invalidated: datetime | None) -> bool:
        """Whether a memory recorded at ``recorded`` and invalidated at ``invalidated`` (None:
        still valid) was in memory at this moment."""
        if recorded is None or recorded >= self.at:
            return False
        return invalidated is None or invalidated >= self.at

    def window(self, window: TimeWindow | None) -> TimeWindow:
        """``window`` (or none) closed at this moment: nothing recorded after it."""
        if window is None:
            return TimeWindow(None, self.at, f"as it was {self.label}")
        end = self.at if window.end is None else min(window.end, self.at)
        return TimeWindow(window.start, end, f"{window.label}, as it was {self.label}")


def read_when(
    since: When | None, until: When | None, as_of: When | None
) -> tuple[TimeWindow | None, AsOf | None]:
    """The window ``since``/``until`` make and the moment ``as_of`` names (None when not
    given), read now; a ``WhenError`` saying what to write when one is not a WHEN or they do
    not fit (``since`` not before ``until``, ``as_of`` in the future). A recall's request
    reads them when made, so that bad input is said before a session is made or a search
    waits; the reader reads them again, against the moment it reads."""
    window = TimeWindow.parse(since, until)
    return window, AsOf.parse(as_of) if as_of is not None else None
