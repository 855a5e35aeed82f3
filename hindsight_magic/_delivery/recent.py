"""The last memories this kernel queued and where each one is: queued → sent → indexed, or failed.

A small bounded feed (``RECENT_ITEMS``) for the panel's **Recent** list. The queue calls it at
each step with a few hook lines (enqueue, batch accepted, batch refused, failed ones re-sent);
``indexed``/``index_failed`` are called by whoever polls the server's operation status (the
panel's worker job, or a read that waited for indexing). ``queued`` is O(1) (it runs inside
``enqueue`` on the kernel thread), the others O(feed + batch); all take only the feed's own lock
and do no I/O, so hooks are safe under the queue's lock. Readers get immutable ``RecentItem``
snapshots, newest first.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from .._text import one_line
from .items import is_transcript

if TYPE_CHECKING:
    from .items import Batch, MemoryItem

RECENT_ITEMS = 50
TEXT_CHARS = 80
HEAD_CHARS = 4 * TEXT_CHARS  # what is kept of each text: enough for one short line

RecentState = Literal[
    "queued", "retrying", "sent", "indexed", "failed", "cancelled", "forgotten", "deleted"
]
QUEUED: Final = "queued"
RETRYING: Final = "retrying"
SENT: Final = "sent"
INDEXED: Final = "indexed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
FORGOTTEN: Final = "forgotten"
DELETED: Final = "deleted"


@dataclass(frozen=True)
class RecentItem:
    """One queued memory as the panel shows it."""

    text: str  # its text on one line, shortened
    queued_at: float  # time.time() of the enqueue
    state: RecentState = QUEUED
    error: str = ""  # why it failed or is retried (one line)
    bank_id: str = ""
    operation_id: str = ""  # the accepted batch's operation, once sent
    document_id: str | None = None
    changed_at: float = 0.0
    transcript: bool = False  # auto-retained (a notebook cell), not a memory the user retained


class _Slot:
    """A feed entry: the queued item (to recognise it in batches) and its state, mutable."""

    __slots__ = (
        "bank_id",
        "changed_at",
        "document_id",
        "error",
        "head",
        "item",
        "operation_id",
        "queued_at",
        "state",
        "text",
        "transcript",
    )

    def __init__(self, item: MemoryItem, now: float) -> None:
        self.item: MemoryItem | None = item  # dropped once sent: the feed keeps no transcripts
        self.document_id = item.document_id
        self.queued_at = self.changed_at = now
        self.state: RecentState = QUEUED
        self.error, self.bank_id, self.operation_id = "", "", ""
        self.head = item.content[:HEAD_CHARS]  # as queued: a later append merges into it
        self.transcript = is_transcript(item)
        self.text: str | None = None  # made on first read, not on the kernel thread

    def view(self) -> RecentItem:
        if self.text is None:
            self.text = one_line(self.head, TEXT_CHARS)
        return RecentItem(
            self.text,
            self.queued_at,
            self.state,
            self.error,
            self.bank_id,
            self.operation_id,
            self.document_id,
            self.changed_at,
            self.transcript,
        )


class RecentFeed:
    """The last ``size`` memories queued in this kernel, with their delivery state."""

    def __init__(self, size: int = RECENT_ITEMS, wall: Callable[[], float] = time.time) -> None:
        self._slots: deque[_Slot] = deque(maxlen=size)
        self._lock = threading.Lock()
        self._wall = wall

    # -- hooks (the queue) ------------------------------------------------------------------

    def queued(self, item: MemoryItem) -> None:
        """``item`` was queued (O(1): on the kernel thread, inside ``enqueue``)."""
        slot = _Slot(item, self._wall())
        with self._lock:
            self._slots.append(slot)

    def sent(self, batch: Batch) -> None:
        """The server accepted ``batch``: its items wait to be indexed."""
        self._set(batch, SENT, "", batch.route.bank_id, batch.operation_id)

    def failed(self, batch: Batch, message: str, retrying: bool) -> None:
        """``batch`` was refused: for good (``failed``), or it will be re-sent (``retrying``)."""
        self._set(batch, RETRYING if retrying else FAILED, _one_line(message))

    def requeued(self, batch: Batch) -> None:
        """Failed items are going out again (``%hindsight retry``)."""
        self._set(batch, QUEUED, "")

    def curated(self, document_ids: Iterable[str], state: RecentState) -> None:
        """The user cancelled, forgot or deleted these memories (by their retain ids)."""
        wanted = set(document_ids)
        now = self._wall()
        with self._lock:
            for slot in self._slots:
                if slot.document_id in wanted:
                    slot.state, slot.error, slot.changed_at, slot.item = state, "", now, None

    # -- the server's side (whoever polls operations) --------------------------------------

    def awaiting(self) -> list[tuple[str, str]]:
        """Distinct ``(bank_id, operation_id)`` of sent items not yet seen indexed."""
        with self._lock:
            found = [(s.bank_id, s.operation_id) for s in self._slots if s.state == SENT]
        return list(dict.fromkeys(found))

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
            return tuple(slot.view() for slot in reversed(self._slots))

    # -- internals --------------------------------------------------------------------------

    def _set(
        self, batch: Batch, state: RecentState, error: str, bank: str = "", op: str = ""
    ) -> None:
        objects = {id(item) for item in batch.items}
        rows = {row for item in batch.items for row in item.journal_ids}
        appends = [i for i in batch.items if i.appends and i.document_id]
        now = self._wall()
        with self._lock:
            for slot in self._slots:
                item = slot.item
                if item is None:
                    continue  # sent: its batch is done
                mine = id(item) in objects or not rows.isdisjoint(item.journal_ids)
                if not mine and item.appends and slot.state == QUEUED:
                    # folded into an earlier append to the same document (no journal rows)
                    mine = any(
                        a.document_id == item.document_id and item.content in a.content
                        for a in appends
                    )
                if mine:
                    slot.state, slot.error, slot.changed_at = state, error, now
                    slot.bank_id = bank or slot.bank_id
                    slot.operation_id = op or slot.operation_id
                    if state == SENT:
                        slot.item = None

    def _finish(self, operation_ids: set[str], state: RecentState, error: str) -> None:
        now = self._wall()
        with self._lock:
            for slot in self._slots:
                if slot.state == SENT and slot.operation_id in operation_ids:
                    slot.state, slot.error, slot.changed_at = state, error, now


def _one_line(message: str) -> str:
    return " ".join(message.split())
