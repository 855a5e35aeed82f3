"""The last memories this kernel queued and where each one is: queued → sent → indexed, or failed.

A small bounded feed (``RECENT_ITEMS``) for the panel's **Recent** list. The queue calls it at
each step with a few hook lines (enqueue, batch accepted, batch refused, failed ones re-sent);
``indexed``/``index_failed`` are called by whoever polls the server's operation status (the
panel's worker job, or a read that waited for indexing). Every method is O(feed size), takes
only the feed's own lock and does no I/O, so hooks are safe under the queue's lock and on the
kernel thread. Readers get immutable ``RecentItem`` snapshots, newest first.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .batches import Batch
    from .items import MemoryItem

RECENT_ITEMS = 50
TEXT_CHARS = 80

QUEUED, RETRYING, SENT, INDEXED, FAILED = "queued", "retrying", "sent", "indexed", "failed"


def short_text(content: str, limit: int = TEXT_CHARS) -> str:
    """``content`` on one line, cut to ``limit`` characters with ``…``."""
    line = " ".join(content[: 4 * limit].split())  # O(1) however long the transcript
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class RecentItem:
    """One queued memory as the panel shows it."""

    text: str  # the first line, shortened
    queued_at: float  # time.time() of the enqueue
    state: str = QUEUED  # queued, retrying, sent, indexed or failed
    error: str = ""  # why it failed or is retried (one line)
    bank_id: str = ""
    operation_id: str = ""  # the accepted batch's operation, once sent
    document_id: str | None = None
    changed_at: float = 0.0


class _Slot:
    """A feed entry: the queued item (to recognise it in batches) and what is shown of it."""

    __slots__ = ("item", "view")

    def __init__(self, item: MemoryItem, view: RecentItem) -> None:
        self.item = item
        self.view = view


class RecentFeed:
    """The last ``size`` memories queued in this kernel, with their delivery state."""

    def __init__(self, size: int = RECENT_ITEMS, wall: Callable[[], float] = time.time) -> None:
        self._slots: deque[_Slot] = deque(maxlen=size)
        self._lock = threading.Lock()
        self._wall = wall
        self.version = 0  # bumped on every change: cheap "did anything move?" for pollers

    # -- hooks (the queue) ------------------------------------------------------------------

    def queued(self, item: MemoryItem) -> None:
        """``item`` was queued (call after its journal rows are known)."""
        now = self._wall()
        view = RecentItem(short_text(item.content), now, document_id=item.document_id)
        with self._lock:
            self._slots.append(_Slot(item, replace(view, changed_at=now)))
            self.version += 1

    def sent(self, batch: Batch) -> None:
        """The server accepted ``batch``: its items wait to be indexed."""
        self._set(batch, SENT, "", batch.route.bank_id, batch.operation_id)

    def failed(self, batch: Batch, message: str, retrying: bool) -> None:
        """``batch`` was refused: for good (``failed``), or it will be re-sent (``retrying``)."""
        self._set(batch, RETRYING if retrying else FAILED, _one_line(message))

    def requeued(self, batch: Batch) -> None:
        """Failed items are going out again (``%hindsight retry``)."""
        self._set(batch, QUEUED, "")

    # -- the server's side (whoever polls operations) --------------------------------------

    def awaiting(self) -> list[tuple[str, str]]:
        """Distinct ``(bank_id, operation_id)`` of sent items not yet seen indexed."""
        with self._lock:
            views = [slot.view for slot in self._slots]
        return list(dict.fromkeys((v.bank_id, v.operation_id) for v in views if v.state == SENT))

    def indexed(self, operation_ids: Iterable[str]) -> None:
        """The server finished these operations: their items are searchable."""
        self._finish(set(operation_ids), INDEXED, "")

    def index_failed(self, operation_id: str, message: str) -> None:
        """The server accepted the operation but could not index it."""
        self._finish({operation_id}, FAILED, _one_line(message))

    # -- readers ----------------------------------------------------------------------------

    def items(self) -> tuple[RecentItem, ...]:
        """The feed, newest first."""
        with self._lock:
            return tuple(slot.view for slot in reversed(self._slots))

    # -- internals --------------------------------------------------------------------------

    def _set(self, batch: Batch, state: str, error: str, bank: str = "", op: str = "") -> None:
        objects = {id(item) for item in batch.items}
        rows = {row for item in batch.items for row in item.journal_ids}
        appends = [i for i in batch.items if i.update_mode == "append" and i.document_id]
        now = self._wall()
        with self._lock:
            for slot in self._slots:
                item = slot.item
                mine = id(item) in objects or not rows.isdisjoint(item.journal_ids)
                if not mine and item.update_mode == "append" and slot.view.state == QUEUED:
                    # folded into an earlier append to the same document (no journal rows)
                    mine = any(
                        a.document_id == item.document_id and item.content in a.content
                        for a in appends
                    )
                if mine:
                    slot.view = replace(
                        slot.view,
                        state=state,
                        error=error,
                        bank_id=bank or slot.view.bank_id,
                        operation_id=op or slot.view.operation_id,
                        changed_at=now,
                    )
                    self.version += 1

    def _finish(self, operation_ids: set[str], state: str, error: str) -> None:
        now = self._wall()
        with self._lock:
            for slot in self._slots:
                view = slot.view
                if view.state == SENT and view.operation_id in operation_ids:
                    slot.view = replace(view, state=state, error=error, changed_at=now)
                    self.version += 1


def _one_line(message: str) -> str:
    return " ".join(message.split())
