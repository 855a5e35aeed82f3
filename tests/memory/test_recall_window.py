"""The client side of a windowed recall: what is kept of the server's wider reply."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hindsight_magic import RecalledMemory
from hindsight_magic._memory.reading import widened, within
from hindsight_magic._memory.timewindow import TimeWindow

ZONE = timezone(timedelta(hours=1))
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=ZONE)
WINDOW = TimeWindow.parse("2026-11-03", "2026-11-05", now=NOW)


def memory(text: str, when: str | None) -> RecalledMemory:
    return RecalledMemory(id=text[:8], text=text, mentioned_at=when)


def test_only_memories_dated_inside_the_window_are_kept_best_first() -> None:
    assert WINDOW is not None
    found = [
        memory("before the window", "2026-11-02T22:59:00+00:00"),  # 23:59 local, the day before
        memory("first day, local midnight", "2026-11-02T23:00:00+00:00"),
        memory("undated", None),
        memory("last day, late", "2026-11-05T22:30:00+00:00"),  # 23:30 local: the day is whole
        memory("after the window", "2026-11-05T23:00:00+00:00"),
    ]
    kept = [m.text for m in within(found, WINDOW, 1024)]
    assert kept == ["first day, local midnight", "last day, late"]


def test_the_kept_memories_fit_the_tokens_asked_for() -> None:
    assert WINDOW is not None
    inside = "2026-11-04T10:00:00+00:00"
    found = [memory("a" * 400, inside), memory("b" * 400, inside), memory("c" * 40, inside)]
    kept = [m.text[0] for m in within(found, WINDOW, 150)]  # ~100 tokens each, ~10 the last
    assert kept == ["a", "c"]  # as the server does: one that does not fit is skipped
    assert [m.text[0] for m in within(found[:1], WINDOW, 10)] == ["a"]  # the best, even so


def test_a_window_asks_for_more_within_reason() -> None:
    assert widened(1024) == 4096
    assert widened(8192) == 16384
    assert widened(32768) == 32768  # never less than the user asked for
