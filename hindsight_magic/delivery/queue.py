"""The retain queue and its worker thread.

``enqueue`` is O(1) and never touches the network. The worker forms batches when 16 items are
pending, when the fixed 5 s window since the first pending item closes, or on a flush; each
route's batch is one request with a client-made ``operation_id``. Transient failures are retried
with capped, jittered back-off (a route's later items wait behind, so order holds); a batch
refused for what it carries (400/413/422) is halved until only the bad memory fails; other
refusals go to a failed list that ``retry_failed`` re-sends. With a journal every item is on
disk from enqueue until accepted, and memory holds at most ``memory_cap`` of them.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..api.client import HindsightError
from .batches import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    MAX_BATCH_ITEMS,
    Backoff,
    Batch,
    FlushOutcome,
    QueueClosedError,
    QueueFullError,
    QueueStats,
    Route,
    batches_from_rows,
    form_batches,
    halve,
)
from .items import MemoryItem
from .worker import BackgroundWorker

if TYPE_CHECKING:
    from .journal import Journal

__all__ = ["Batch", "QueueClosedError", "QueueFullError", "RetainQueue", "Route"]
log = logging.getLogger("hindsight_magic")

FLUSH_BATCH_SIZE = 16
FLUSH_WINDOW_S = 5.0
MEMORY_CAP = 10_000
RECENT_OPERATIONS = 64


Sender = Callable[[Batch], None]


class RetainQueue(BackgroundWorker):
    """Batches memories and delivers them from the background thread."""

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
        self._journal = journal
        self._memory_cap = memory_cap
        self._spilled = 0  # pending items in the journal only (memory was full)
        self._loaded_through = 0  # highest journal row id held in memory

    # -- kernel-thread API ------------------------------------------------------------------

    def enqueue(self, route: Route, item: MemoryItem) -> int:
        """Queue one item (O(1); with a journal, one local insert); returns the number pending."""
        with self._cond:
            if self._closed:
                raise QueueClosedError
            held = len(self._pending) + self._failed_count()
            if self._journal is not None:
                row = self._journal.add(route.bank_id, route.tags, item)
                item.journal_ids = [row]
                if self._spilled or held >= self._memory_cap:
                    self._spilled += 1  # waits on disk; the worker loads it when there is room
                    return len(self._pending) + self._spilled
                self._loaded_through = row
            elif held >= self._memory_cap:
                raise QueueFullError(
                    f"{held} memories are waiting in memory and the journal is off; "
                    "check the server with %hindsight status."
                )
            self._pending.append((route, item))
            count = len(self._pending)
            if count == 1:
                self._first_pending_at = self._clock()
                self._cond.notify()
            elif count == self._batch_size:
                self._cond.notify()
            return count + self._spilled

    def request_flush(self) -> None:
        """Ask the worker to send everything now (retrying batches included); do not wait."""
        with self._cond:
            self._flush_requested = True
            for batch in self._outbox:
                batch.next_attempt_at = 0.0
            self._cond.notify_all()

    def flush(self, timeout_s: float | None = None) -> FlushOutcome:
        """Send everything now and wait until each batch was tried once (or ``timeout_s``)."""
        self.request_flush()
        deadline = None if timeout_s is None else self._clock() + timeout_s
        with self._cond:
            while not self._settled():
                if not self.running:
                    break
                remaining = None if deadline is None else deadline - self._clock()
                if remaining is not None and remaining <= 0:
                    break
                self._cond.wait(remaining if remaining is None else min(remaining, 0.5))
            return FlushOutcome(
                self._settled(),
                len(self._pending)
                + self._spilled
                + (self._in_flight.count if self._in_flight else 0),
                sum(b.count for b in self._outbox),
                self._failed_count(),
            )

    def retry_failed(self) -> int:
        """Move failed batches back to the outbox (fresh operation ids); returns the item count."""
        with self._cond:
            batches, self._failed = self._failed, []
            for old in batches:
                batch = Batch(old.route, old.items)
                if self._journal is not None:
                    self._journal.mark_batched(batch.operation_id, batch.journal_ids)
                self._outbox.append(batch)
            self._cond.notify_all()
            return sum(b.count for b in batches)

    def drop_failed(self) -> int:
        """Discard the failed batches for good; returns the item count."""
        with self._cond:
            batches, self._failed = self._failed, []
            if self._journal is not None:
                self._journal.delete(row for b in batches for row in b.journal_ids)
            return sum(b.count for b in batches)

    def recover(self) -> int:
        """Adopt what dead kernels left in the journal (and our own rows); returns item count.

        Batches keep their ``operation_id``: re-sending one the server already accepted is the
        same operation to it, so nothing is stored twice.
        """
        if self._journal is None:
            return 0
        self._journal.claim_orphans()
        with self._cond:
            found = 0
            for state, target in (("batched", self._outbox), ("failed", self._failed)):
                for batch in batches_from_rows(self._journal.rows(state)):
                    target.append(batch)
                    found += batch.count
            self._spilled = self._journal.count("pending")
            found += self._spilled
            self._refill()
            self._cond.notify_all()
            return found

    def stats(self) -> QueueStats:
        """A snapshot of the counters."""
        with self._cond:
            waiting = [b.next_attempt_at for b in self._outbox if b.attempts]
            now_mono, now_wall = self._clock(), self._wall()
            retry_at = now_wall + max(0.0, min(waiting) - now_mono) if waiting else None
            return QueueStats(
                # batches formed but never tried yet (e.g. behind a retrying one) are pending too
                pending=len(self._pending)
                + self._spilled
                + sum(b.count for b in self._outbox if not b.attempts),
                in_flight=self._in_flight.count if self._in_flight else 0,
                accepted=self._accepted,
                failed=self._failed_count(),
                retrying=sum(b.count for b in self._outbox if b.attempts),
                retry_at=retry_at,
                last_flush=self._last_flush,
                last_error=self._last_error,
                requests=self._requests,
                journal=str(self._journal.path) if self._journal is not None else None,
            )

    def take_recent(self, bank_id: str) -> list[tuple[Route, str]]:
        """Remove and return (route, operation_id) of recently accepted batches for a bank."""
        with self._cond:
            taken = [entry for entry in self._recent if entry[0].bank_id == bank_id]
            kept = [entry for entry in self._recent if entry[0].bank_id != bank_id]
            self._recent.clear()
            self._recent.extend(kept)
            return taken

    def failed_batches(self) -> list[Batch]:
        """The batches that failed permanently (a copy)."""
        with self._cond:
            return list(self._failed)

    # -- lifecycle --------------------------------------------------------------------------

    def close(self, timeout_s: float = 5.0) -> int:
        """Flush (bounded), stop the worker; returns how many items were left undelivered."""
        with self._cond:
            self._closed = True
        self.flush(timeout_s)
        self.stop(min(timeout_s, 2.0))
        stats = self.stats()
        if self._journal is not None:
            self._journal.close()
        return stats.pending + stats.in_flight + stats.retrying + stats.failed

    # -- worker -----------------------------------------------------------------------------

    def pump(self) -> int:
        """Do all work that is due now (forming and sending batches); returns batches sent.

        The worker calls this; tests with a fake clock call it directly, without a thread.
        """
        self.run_due_jobs()
        if self._journal is not None:
            self._journal.heartbeat()
        sent = 0
        while True:
            with self._cond:
                self._form_batches_if_due()
                batch = self._next_sendable()
                if batch is None:
                    self._cond.notify_all()
                    return sent
                self._outbox.remove(batch)
                self._in_flight = batch
            self._deliver(batch)
            sent += 1

    def _deliver(self, batch: Batch) -> None:
        try:
            self._send(batch)
        except HindsightError as error:
            # a batch refused for what it carries is halved, so one bad memory fails alone
            self._record_failure(batch, str(error), error.transient, split=error.refuses_items)
        except Exception as error:  # a bug or an unexpected reply: keep the items, visibly
            log.exception("Hindsight retain queue: batch flush failed")
            self._record_failure(batch, f"{type(error).__name__}: {error}", transient=False)
        else:
            if self._journal is not None:
                self._journal.delete(batch.journal_ids)
            with self._cond:
                self._in_flight = None
                self._accepted += batch.count
                self._requests += 1
                self._last_flush = self._wall()
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
            if transient:
                batch.next_attempt_at = self._clock() + self._backoff.delay(batch.attempts)
                self._outbox.insert(0, batch)
            elif split and len(batch.items) > 1:
                # refused before it became an operation: the halves go under new operation ids
                halves = halve(batch)
                for half in halves:
                    if self._journal is not None:
                        self._journal.mark_batched(half.operation_id, half.journal_ids)
                self._outbox[0:0] = halves
            else:
                self._failed.append(batch)
                if self._journal is not None:
                    self._journal.mark_failed(batch.journal_ids, message)
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
        if self._flush_requested or len(self._pending) >= self._batch_size:
            return True
        assert self._first_pending_at is not None
        return self._clock() >= self._first_pending_at + self._window_s

    def _failed_count(self) -> int:
        return sum(b.count for b in self._failed)

    def _refill(self) -> None:
        """Load spilled items from the journal while memory has room (oldest first)."""
        if not self._spilled or self._journal is None:
            return
        room = self._memory_cap - len(self._pending) - self._failed_count()
        if room <= 0:
            return
        rows = self._journal.pending_after(self._loaded_through, room)
        for row in rows:
            self._pending.append((Route(row.bank_id, row.tags), row.item))
            self._loaded_through = row.id
        self._spilled = max(0, self._spilled - len(rows)) if rows else 0
        if self._pending and self._first_pending_at is None:
            self._first_pending_at = self._clock()

    def _form_batches_if_due(self) -> None:
        self._refill()
        if not self._window_closed():
            self._flush_requested = False
            return
        self._flush_requested = False
        self._first_pending_at = None
        now = self._clock()
        waiting = {b.route for b in self._outbox if b.next_attempt_at > now}
        ready = [entry for entry in self._pending if entry[0] not in waiting]
        held = [entry for entry in self._pending if entry[0] in waiting]
        self._pending = deque(held)  # a retrying route's items wait here, in order
        if held:
            self._first_pending_at = now
        for batch in form_batches(ready, self._max_batch_items):
            if self._journal is not None:
                self._journal.mark_batched(batch.operation_id, batch.journal_ids)
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
        return self._job_due() or self._window_closed() or self._next_sendable() is not None

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
        if self._journal is not None:
            deadlines.append(now + 20.0)  # keep the journal heartbeat fresh
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now) + 0.001
