"""The retain queue's worker side: forming batches when due, sending them, sorting failures.

``QueuePump`` holds the queue's state and everything the worker thread does with it; the
kernel-thread API (``enqueue``, ``flush``, ``stats`` …) is ``RetainQueue`` in ``queue.py``.
Methods whose names start with ``_`` run with the lock held, except ``_deliver``.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._api.errors import HindsightError
from .batches import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    MAX_BATCH_ITEMS,
    Backoff,
    Batch,
    Route,
    form_batches,
    halve,
)
from .items import MemoryItem
from .keeping import JournalOp, Notify
from .recent import RecentFeed
from .spooling import Spooling

if TYPE_CHECKING:
    from .journal import Journal

log = logging.getLogger("hindsight_magic")

FLUSH_BATCH_SIZE = 16
FLUSH_WINDOW_S = 5.0
MEMORY_CAP = 10_000
RECENT_OPERATIONS = 64

Sender = Callable[[Batch], bool | None]  # True: sent synchronously, already searchable


class QueuePump(Spooling):
    """The queue's state, and the worker's side of it."""

    def __init__(
        self,
        send: Sender,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        batch_size: int = FLUSH_BATCH_SIZE,
        window_s: float = FLUSH_WINDOW_S,
        max_batch_items: int = MAX_BATCH_ITEMS,
        backoff_base_s: float = BACKOFF_BASE_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        jitter: Callable[[], float] = random.random,
        on_failure: Callable[[Batch, str], None] | None = None,  # quick: runs under the lock
        journal: Journal | None = None,
        memory_cap: int = MEMORY_CAP,
        on_notice: Notify | None = None,  # a line for the user (journal down / back)
    ) -> None:
        super().__init__(clock)
        self._send = send
        self._wall = wall
        self._batch_size = batch_size
        self._window_s = window_s
        self._max_batch_items = max_batch_items
        self._backoff = Backoff(backoff_base_s, backoff_cap_s, jitter)
        self._on_failure = on_failure
        self._pending: deque[tuple[Route, MemoryItem]] = deque()
        self._first_pending_at: float | None = None
        self._held_back = 0  # pending entries (at the front) waiting for their route's retry
        self._outbox: list[Batch] = []
        self._in_flight: Batch | None = None
        self._failed: list[Batch] = []
        self._flush_requested = False
        self._closed = False
        self._accepted = 0
        self._requests = 0
        self._last_flush: float | None = None
        self._last_error: str | None = None
        self._recent: deque[tuple[Route, str]] = deque(maxlen=RECENT_OPERATIONS)
        self.feed = RecentFeed(wall=wall)  # the panel's Recent list: each item's delivery state
        self._routes: dict[Route, Route] = {}
        self._memory_cap = memory_cap
        self._init_keeping(journal, on_notice)

    # -- worker -----------------------------------------------------------------------------

    def pump(self) -> int:
        """Do all work that is due now (forming and sending batches); returns batches sent.

        The worker calls this; tests with a fake clock call it directly, without a thread.
        """
        self.run_due_jobs()
        self._keep_journal()
        sent = 0
        while True:
            self._ingest_if_behind()  # a read's flush finds its memories in one batch
            with self._cond:
                self._form_batches_if_due()
                batch = self._next_sendable()
                if batch is None:
                    self._cond.notify_all()
                    break
                self._outbox.remove(batch)
                self._in_flight = batch
            self._beat_if_due()
            self._drain_journal_ops()  # its operation id is on disk before it is sent
            self._deliver(batch)
            self._drain_journal_ops()
            sent += 1
        self._drain_journal_ops()
        return sent

    def _deliver(self, batch: Batch) -> None:
        try:
            indexed = self._send(batch)
        except HindsightError as error:
            # a batch refused for what it carries is halved, so one bad memory fails alone
            self._record_failure(batch, str(error), error.transient, split=error.refuses_items)
        except Exception as error:  # a bug or an unexpected reply: keep the items, visibly
            log.exception("Hindsight retain queue: batch flush failed")
            self._record_failure(batch, f"{type(error).__name__}: {error}", transient=False)
        else:
            with self._cond:
                self._journal_op(JournalOp("delete", batch.items))
                self._in_flight = None
                self._accepted += batch.count
                self._requests += 1
                self._last_flush = self._wall()
                self.feed.sent(batch)
                if indexed:  # sent synchronously: already searchable
                    self.feed.indexed([batch.operation_id])
                else:  # a read waits for this operation
                    self._recent.append((batch.route, batch.operation_id))
                self._cond.notify_all()
            log.debug("Hindsight retain queue: batch flushed (%d memories)", batch.count)

    def _record_failure(
        self, batch: Batch, message: str, transient: bool, split: bool = False
    ) -> None:
        with self._cond:
            self._in_flight = None
            self._requests += 1
            self._last_error = message
            batch.attempts += 1
            batch.error = message
            self.feed.failed(batch, message, retrying=transient or (split and len(batch.items) > 1))
            if transient:
                batch.next_attempt_at = self._clock() + self._backoff.delay(batch.attempts)
                self._outbox.insert(0, batch)
            elif split and len(batch.items) > 1:
                # refused before it became an operation: the halves go under new operation ids
                halves = halve(batch)
                for half in halves:
                    self._journal_op(JournalOp("batched", half.items, half.operation_id))
                self._outbox[0:0] = halves
            else:
                self._failed.append(batch)
                self._journal_op(JournalOp("failed", batch.items, error=message))
                if self._on_failure is not None:  # before a waiting flush can return
                    self._on_failure(batch, message)
            self._cond.notify_all()
        retried = transient or (split and len(batch.items) > 1)
        level = logging.INFO if retried else logging.WARNING
        log.log(level, "Hindsight retain queue: batch flush failed: %s", message)

    # -- decisions (called with the lock held) ----------------------------------------------

    def _window_closed(self) -> bool:
        if not self._pending:
            return False
        if self._flush_requested or len(self._pending) - self._held_back >= self._batch_size:
            return True
        assert self._first_pending_at is not None
        return self._clock() >= self._first_pending_at + self._window_s

    def _form_batches_if_due(self) -> None:
        if not self._window_closed():
            self._flush_requested = False
            return
        self._flush_requested = False
        self._first_pending_at = None
        now = self._clock()
        waiting = {b.route for b in self._outbox if b.next_attempt_at > now}
        entries = list(self._pending)
        journaled = self._journaled_prefix()  # the rest is taken into the journal first
        ready = [entry for entry in entries[:journaled] if entry[0] not in waiting]
        held = [entry for entry in entries[:journaled] if entry[0] in waiting]
        self._pending = deque(held + entries[journaled:])  # a retrying route's wait, in order
        self._held_back = len(held)
        if held:
            self._first_pending_at = now
        if journaled < len(entries):  # in the journal at the worker's next step: form then
            self._first_pending_at = now - self._window_s
        for batch in form_batches(ready, self._max_batch_items):
            self._journal_op(JournalOp("batched", batch.items, batch.operation_id))
            self._outbox.append(batch)

    def _next_sendable(self) -> Batch | None:
        now = self._clock()
        blocked: set[Route] = set()
        for batch in self._outbox:
            if batch.route in blocked:
                continue
            if batch.next_attempt_at > now:
                blocked.add(batch.route)
                continue
            return batch
        return None

    def _has_work(self) -> bool:
        return (
            self._job_due()
            or self._journal_due()
            or self._window_closed()
            or self._next_sendable() is not None
        )

    def _settled(self) -> bool:
        now = self._clock()
        waiting = {b.route for b in self._outbox if b.next_attempt_at > now}
        stuck = all(route in waiting for route, _ in self._pending)
        return stuck and self._in_flight is None and self._next_sendable() is None

    def _idle_delay(self) -> float | None:
        now = self._clock()
        deadlines = [b.next_attempt_at for b in self._outbox] + self._job_deadlines()
        if self._first_pending_at is not None:
            deadlines.append(self._first_pending_at + self._window_s)
        deadlines += self._journal_deadlines()
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now) + 0.001
