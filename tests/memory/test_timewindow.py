"""WHEN as ``--since``/``--until`` read it, and the headline the window gives back."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from hindsight_magic._timewindow import (
    TimeWindow,
    WhenError,
    dated,
    parse_when,
    server_time,
)

ZONE = timezone(timedelta(hours=-5))  # a user five hours behind UTC
NOW = datetime(2026, 12, 2, 15, 40, tzinfo=ZONE)


def window(since: object = None, until: object = None) -> TimeWindow:
    made = TimeWindow.parse(since, until, now=NOW)  # type: ignore[arg-type]
    assert made is not None
    return made


def test_spans_reach_back_from_now() -> None:
    assert parse_when("3d", now=NOW).at == NOW - timedelta(days=3)
    assert parse_when("2w", now=NOW).at == NOW - timedelta(weeks=2)
    assert parse_when("12h", now=NOW).at == NOW - timedelta(hours=12)
    assert parse_when("90m", now=NOW).at == NOW - timedelta(minutes=90)


def test_days_are_the_users_local_days() -> None:
    assert parse_when("yesterday", now=NOW).at == datetime(2026, 12, 1, tzinfo=ZONE)
    assert parse_when("2026-11-03", now=NOW).at == datetime(2026, 11, 3, tzinfo=ZONE)
    assert parse_when("3 Nov", now=NOW).at == datetime(2026, 11, 3, tzinfo=ZONE)
    assert parse_when(date(2026, 11, 3), now=NOW).whole_day


def test_an_explicit_zone_is_kept() -> None:
    assert parse_when("2026-11-03T10:00Z", now=NOW).at == datetime(
        2026, 11, 3, 10, tzinfo=timezone.utc
    )


def test_a_day_as_until_includes_the_whole_day() -> None:
    w = window("2026-11-03", "2026-11-05")
    assert w.start == datetime(2026, 11, 3, tzinfo=ZONE)
    assert w.end == datetime(2026, 11, 6, tzinfo=ZONE)
    assert w.contains(datetime(2026, 11, 5, 23, 59, tzinfo=ZONE))
    assert not w.contains(datetime(2026, 11, 6, 0, 0, tzinfo=ZONE))
    assert not w.contains(datetime(2026, 11, 2, 23, 59, tzinfo=ZONE))
    assert not w.contains(None)


def test_the_headline_says_the_window_back() -> None:
    assert window("2026-11-03", "today").label == "between 3 Nov and today"
    assert window("yesterday").label == "since yesterday"
    assert window(until="2025-06-01").label == "until 1 Jun 2025"
    assert window("3d").label == "since 29 Nov 15:40"


def test_server_range_is_what_the_list_endpoint_takes() -> None:
    w = window("2026-11-03", "2026-11-03")
    assert w.server_range() == {
        "start_date": "2026-11-03T05:00:00+00:00",  # the user's midnight, in UTC
        "end_date": "2026-11-04T05:00:00+00:00",
    }
    assert TimeWindow.parse(None, None) is None


@pytest.mark.parametrize("text", ["garbage", "Nov", "", "3 fortnights", "999999w", "2026-13-45"])
def test_an_unreadable_when_is_one_line(text: str) -> None:
    with pytest.raises(WhenError) as caught:
        parse_when(text, now=NOW)
    message = str(caught.value)
    assert "\n" not in message
    assert "3d" in message or "shorter span" in message


def test_since_after_until_is_one_line() -> None:
    with pytest.raises(WhenError, match=r"--since \(today\) is not before --until \(1 Nov\)"):
        window("today", "2026-11-01")


def test_server_times_read_back() -> None:
    assert server_time("2026-12-02T15:36:58.989759+00:00") == datetime(
        2026, 12, 2, 15, 36, 58, 989759, tzinfo=timezone.utc
    )
    assert server_time(None) is None
    assert server_time("soon") is None


def test_a_message_names_the_bound_that_could_not_be_read() -> None:
    with pytest.raises(WhenError, match=r"Cannot read 'soonish' as a time for --until"):
        TimeWindow.parse("3d", "soonish", now=NOW)


@pytest.mark.parametrize("text", ["3", "12", "2026"])
def test_a_bare_number_is_not_read_as_a_day_of_this_month(text: str) -> None:
    # "%recall --since 3 Nov flux" unquoted leaves "3": dateutil would read this month's 3rd
    with pytest.raises(WhenError, match="is a number, not a time"):
        parse_when(text, now=NOW, name="--since")


def test_a_weekday_name_does_not_make_a_day_a_moment() -> None:
    assert parse_when("Tue 3 Nov 2026", now=NOW).whole_day
    assert not parse_when("2026-11-03T00:00", now=NOW).whole_day


def test_the_recall_hint_is_utc_with_both_ends() -> None:
    both = window("2026-11-03", "2026-11-05")
    assert both.temporal_window() == ("2026-11-03T05:00:00+00:00", "2026-11-06T05:00:00+00:00")
    assert both.query_timestamp() == "2026-11-06T05:00:00+00:00"
    since = window("2026-11-03")
    assert since.temporal_window(NOW) == ("2026-11-03T05:00:00+00:00", "2026-12-02T20:40:00+00:00")
    assert since.query_timestamp() is None  # recency from now
    until = window(until="2026-11-05")
    assert until.temporal_window()[0].startswith("1900-01-01")
    future = window("2030-01-01")  # a start after now: the end is never before it
    assert future.temporal_window(NOW)[1] == future.temporal_window(NOW)[0]


TOKYO = timezone(timedelta(hours=9))  # a zone east of UTC: its year 1 starts in UTC's year 0


@pytest.mark.parametrize(
    ("since", "until", "now"),
    [
        ("2026-11-03T14:30+25:00", None, NOW),  # an offset no clock has
        (None, "9999-12-31", NOW),  # the day after it is past the last date
        ("0001-01-01", None, datetime(2026, 12, 2, 9, 0, tzinfo=TOKYO)),
        (datetime(1, 1, 1, tzinfo=TOKYO), None, NOW),
        (date(9999, 12, 31), None, NOW),
    ],
)
def test_a_time_no_memory_can_have_is_one_line_with_the_range(
    since: object, until: object, now: datetime
) -> None:
    with pytest.raises(WhenError) as caught:  # before any conversion could overflow
        TimeWindow.parse(since, until, now=now)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    assert "1900 to 9998" in message
    assert ("--since" if since is not None else "--until") in message


def test_a_memory_is_dated_as_since_reads_its_when() -> None:
    # the same WHEN dates a memory and opens the window that finds it
    assert dated("2025-03-14", now=NOW) == window("2025-03-14").start
    assert dated("14 Mar 2025 09:30", now=NOW) == datetime(2025, 3, 14, 9, 30, tzinfo=ZONE)
    assert dated("3d", now=NOW) == NOW - timedelta(days=3)
    assert dated(datetime(2025, 3, 14, 9, 30), now=NOW).tzinfo == ZONE  # naive: the user's
    assert dated("2025-03-14T09:30Z", now=NOW) == datetime(2025, 3, 14, 9, 30, tzinfo=timezone.utc)
    assert dated("today", now=NOW) == datetime(2026, 12, 2, tzinfo=ZONE)


@pytest.mark.parametrize(
    ("when", "said"),
    [
        ("2026-12-03", "--at (3 Dec) is in the future"),
        ("16:00", "--at (today 16:00) is in the future"),
        ("someday", "Cannot read 'someday' as a time for --at"),
        ("1899-12-31", "1900 to 9998"),
    ],
)
def test_a_date_a_memory_cannot_have_is_one_line(when: str, said: str) -> None:
    with pytest.raises(WhenError) as caught:
        dated(when, now=NOW)
    assert said in str(caught.value)
    assert "\n" not in str(caught.value)
