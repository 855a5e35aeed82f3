"""Time-bounded recall against the real server: a window is a filter, not a ranking hint.

Memories are retained with explicit timestamps (the retain item's ``timestamp``) across several
days; the one dated before the window is the best match for the query, so a recall that only
ranked by the window would return it. Through ``%recall --since/--until`` in a real shell, and
``hm.recall(since=, until=)``: what the user sees (the headline and the memories' text).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import Any

import pytest
from helpers import RunningServer, render_markdown, visible_text

import hindsight_magic as hm
from hindsight_magic._api.client import HindsightClient
from hindsight_magic._api.transfers import BankTransfers

pytestmark = pytest.mark.integration

WORD = f"w{uuid.uuid4().hex[:6]}"  # in every memory here and nowhere else on the server
OLD = f"The {WORD} flux calibration constant is 3.1 jansky per count."  # 20 days ago
MIDDLE = f"The {WORD} flux was re-measured as 2.7 jansky after the detector swap."  # 8 days ago
RECENT = f"The {WORD} flux settled at 2.4 jansky after the re-run."  # an hour ago
QUERY = f"{WORD} flux calibration constant 3.1 jansky per count"  # OLD's own words


def local_noon(days_ago: int) -> datetime:
    """Noon of the user's day ``days_ago`` (far from either end of the day)."""
    day = date.today() - timedelta(days=days_ago)
    return datetime.combine(day, time(12)).astimezone()


def day(days_ago: int) -> date:
    return date.today() - timedelta(days=days_ago)


def shown(when: date) -> str:
    """A day as the headline names it (``3 Nov``; the year only when it is not this one)."""
    return f"{when.day} {when:%b}" + (f" {when.year}" if when.year != date.today().year else "")


@pytest.fixture(scope="module")
def bank(hindsight_server: RunningServer) -> Iterator[str]:
    """A bank holding the three dated memories (retained synchronously: indexed on return)."""
    name = f"test-window-{uuid.uuid4().hex[:10]}"
    client = HindsightClient(hindsight_server.url)
    now = datetime.now().astimezone()
    items = [
        {"content": OLD, "timestamp": local_noon(20).isoformat(), "document_id": "old"},
        {"content": MIDDLE, "timestamp": local_noon(8).isoformat(), "document_id": "middle"},
        {
            "content": RECENT,
            "timestamp": (now - timedelta(hours=1)).isoformat(),
            "document_id": "recent",
        },
    ]
    client.retain_batch(name, items, async_=False)
    try:
        yield name
    finally:
        BankTransfers(client).delete_bank(name)
        client.close()


@pytest.fixture
def shell(notebook: Any, hindsight_server: RunningServer, bank: str) -> Any:
    notebook.connect(hindsight_server.url, bank, journal_path="off")
    return notebook


def recall(shell: Any, line: str) -> tuple[str, Any]:
    """``%recall line`` in the shell: what the user sees as text, and the result."""
    cell = shell.run(f"%recall {line}")
    assert cell.error is None, cell.text
    return repr(cell.result), cell.result


def test_without_a_window_the_old_memory_is_the_best_match(shell: Any) -> None:
    text, _ = recall(shell, QUERY)
    assert OLD in text  # so the windows below leave it out by filtering, not by ranking


def test_between_two_days_only_the_memories_inside_come_back(shell: Any) -> None:
    text, result = recall(
        shell, f"--since {day(12).isoformat()} --until {day(4).isoformat()} {QUERY}"
    )
    headline = text.splitlines()[0]
    assert re.match(r"\d+ memor(?:y|ies) shown; ", headline), text
    assert f"between {shown(day(12))} and {shown(day(4))}" in headline
    assert MIDDLE in text
    assert OLD not in text
    assert RECENT not in text
    for memory in result:  # the server's noise facts too: each was recorded in the window
        assert result.window.contains(datetime.fromisoformat(memory.mentioned_at))
    for page in (result._repr_html_(), render_markdown(result._repr_markdown_())):
        seen = visible_text(page)
        assert f"between {shown(day(12))}" in seen
        assert "2.7 jansky" in seen
        assert "3.1 jansky" not in seen


def test_until_alone_keeps_what_came_before(shell: Any) -> None:
    text, _ = recall(shell, f"--until {day(15).isoformat()} {QUERY}")
    assert f"until {shown(day(15))}" in text.splitlines()[0]
    assert OLD in text
    assert MIDDLE not in text
    assert RECENT not in text


def test_since_alone_keeps_what_came_after(shell: Any) -> None:
    text, _ = recall(shell, f"--since 3d {QUERY}")
    assert "since " in text.splitlines()[0]
    assert RECENT in text
    assert OLD not in text
    assert MIDDLE not in text


def test_a_window_with_nothing_in_it_says_so(shell: Any) -> None:
    text, result = recall(
        shell, f'--since "{day(30):%d %b %Y}" --until {day(25).isoformat()} {QUERY}'
    )
    assert text == f"No relevant memories found between {shown(day(30))} and {shown(day(25))}."
    assert len(result) == 0


def test_the_python_api_takes_the_same_window(hindsight_server: RunningServer, bank: str) -> None:
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    settings = HindsightSettings(
        api_url=hindsight_server.url, bank_id=bank, scoping="global", journal_path="off"
    )
    session = HindsightSession(settings, start_worker=False)
    try:
        found = hm.recall(QUERY, since=day(12), until=local_noon(4), session=session)
    finally:
        session.close()
    assert MIDDLE in found.texts
    assert OLD not in found.texts
    assert RECENT not in found.texts
    assert f"between {shown(day(12))} and {shown(day(4))} 12:00" in found.headline()
