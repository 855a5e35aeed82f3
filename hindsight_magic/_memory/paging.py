"""A scope's memories read whole, page by page, newest first, and counted without being read.

Pages by offset (``…/memories/list?offset=``) make the server find, sort and count the whole
scope again for every page, so reading a bank of 50 000 memories by offset cost more per page
the larger the bank grew (11 s for 26 pages where the same pages by time take 4). Here each page
is a window of the ``mentioned_at`` axis that ends where the last page's oldest memory sits
(``end_date`` one microsecond past it, so memories sharing that moment are read again and
dropped by id; a whole page sharing one moment is read by offset inside that moment alone).
The server then reads only what it returns. A memory without a ``mentioned_at`` date is in no
window, as in the timeline; the server gives every retained memory one.

``count`` asks the server for how many memories a window holds (``limit=0``: the reply's
``total``, no memory sent), which is how the timeline of a large bank is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .._api.vocabulary import MemoryState
from .._timewindow import TIME_FIELD, server_time

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._api.replies import MemoryPage, MemoryUnit
    from .scope import BankScope

PAGE = 2000  # memories per request
TICK = timedelta(microseconds=1)  # the server's timestamps are to the microsecond


def utc_text(moment: datetime) -> str:
    """``moment`` as the list's ``start_date``/``end_date`` take it (ISO, with its offset)."""
    return moment.isoformat()


class ScopeReader:
    """Counts and reads one scope's memories in one state (``valid``, ``invalidated``)."""

    def __init__(
        self, connection: Connection, scope: BankScope, state: MemoryState = MemoryState.VALID
    ) -> None:
        self._connection = connection
        self._scope = scope
        self._state = state

    def _list(
        self,
        limit: int,
        fact_type: str | None,
        start: datetime | None,
        end: datetime | None,
        offset: int = 0,
    ) -> MemoryPage:
        window = {
            name: utc_text(moment)
            for name, moment in (("start_date", start), ("end_date", end))
            if moment is not None
        }
        return self._connection.client.list_memories(
            self._scope.bank_id,
            **self._scope.listing(self._state, limit),
            offset=offset,
            fact_type=fact_type,
            time_field=TIME_FIELD,
            **window,
        )

    def count(
        self,
        fact_type: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> int:
        """How many memories (of ``fact_type``) are dated in ``[start, end)``: one request,
        no memory sent."""
        return self._list(0, fact_type, start, end).total

    def slice(
        self,
        offset: int,
        limit: int,
        fact_type: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> tuple[list[MemoryUnit], int]:
        """``limit`` memories from the ``offset``-th newest in ``[start, end)``, and how many
        that window holds."""
        reply = self._list(limit, fact_type, start, end, offset)
        return reply.items, reply.total

    def pages(
        self,
        fact_type: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        page: int = PAGE,
        read: Callable[[int, int], object] = lambda done, total: None,
    ) -> Iterator[list[MemoryUnit]]:
        """The memories in ``[start, end)``, a page at a time, newest first, each once;
        ``read(done, total)`` after each page (``total``: what the window held when the first
        page was read)."""
        total: int | None = None
        done = 0
        boundary: set[str] = set()  # ids read at the oldest moment so far: read again next
        while True:
            items, held = self.slice(0, page, fact_type, start, end)
            total = held if total is None else total
            fresh = [item for item in items if item.id not in boundary]
            oldest = server_time(items[-1].mentioned_at) if items else None
            newest = server_time(items[0].mentioned_at) if items else None
            if len(items) == page and oldest is not None and oldest == newest:
                # a whole page shares one moment: that moment alone, by offset
                fresh = list(self._moment(oldest, fact_type, page, boundary))
                end, boundary = oldest, set()
            elif len(items) == page and oldest is not None:
                end = oldest + TICK
                boundary = {i.id for i in items if server_time(i.mentioned_at) == oldest}
            done += len(fresh)
            if fresh:
                yield fresh
            read(done, max(total, done))
            if len(items) < page or oldest is None:
                return

    def _moment(
        self, moment: datetime, fact_type: str | None, page: int, seen: set[str]
    ) -> Iterator[MemoryUnit]:
        offset = 0
        while True:
            items, _ = self.slice(offset, page, fact_type, moment, moment + TICK)
            yield from (item for item in items if item.id not in seen)
            offset += len(items)
            if len(items) < page:
                return
