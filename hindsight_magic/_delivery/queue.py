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

from .batches import Batch, FlushOutcome, QueueClosedError, QueueFullError, QueueStats, Route
from .items import MemoryItem
from .keeping import JournalOp
from .pump import QueuePump
from .spool import encode
from .sqlite_file import JournalError

__all__ = ["Batch", "QueueClosedError", "QueueFullError", "RetainQueue", "Route"]


class RetainQueue(QueuePump):
    """Batches memories and delivers them from the background thread."""

    # -- kernel-thread API ------------------------------------------------------------------

    def enqueue(self, route: Route, item: MemoryItem) -> int:
        """Queue one item (O(1); with a journal, one line appended to this kernel's spool file,
        so it survives the process being killed once this returns); the number pending."""
        line = encode(route, item) if self._journal is not None else b""
        with self._cond:
            if self._closed:
                raise QueueClosedError
            route = self._routes.setdefault(route, route)  # one object per route: less for GC
            held = len(self._pending) + self._failed_count()
            spill = bool(self._spilled) or held >= self._memory_cap
            if self._spool_add(route, item, line, spill):
                if spill:
                    self._spilled += 1  # waits on disk; the worker loads it when there is room
                    self.feed.queued(item)
                    return len(self._pending) + self._spilled
            elif held >= self._memory_cap:
                why = "is off" if self._journal is None else "cannot be written"
                raise QueueFullError(
                    f"{held} memories are waiting in memory and the journal {why}; "
                    "check the server with %hindsight status."
                )
            self._pending.append((route, item))
            self.feed.queued(item)
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
                self._journal_op(JournalOp("batched", batch.items, batch.operation_id))
                self._outbox.append(batch)
                self.feed.requeued(batch)
            self._cond.notify_all()
            return sum(b.count for b in batches)

    def drop_failed(self) -> int:
        """Discard the failed batches for good; returns the item count."""
        with self._cond:
            batches, self._failed = self._failed, []
            self._journal_op(JournalOp("delete", [item for b in batches for item in b.items]))
            self._cond.notify_all()
            return sum(b.count for b in batches)

    def recover(self) -> int:
        """Adopt what dead kernels left in the journal (and our own rows); returns item count.

        Batches keep their ``operation_id``: re-sending one the server already accepted is the
        same operation to it, so nothing is stored twice.
        """
        if self._journal is None or not self._durable:
            return 0  # a journal not open yet: the worker adopts them once it opens
        try:
            return self._adopt_orphans()
        except JournalError as error:
            self._journal_down(error)
            return 0

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
                journal_problem=self.journal_problem,
            )

    def take_recent(self, bank_id: str) -> list[tuple[Route, str]]:
        """Remove and return (route, operation_id) of recently accepted batches for a bank."""
        with self._cond:
            taken = [entry for entry in self._recent if entry[0].bank_id == bank_id]
            kept = [entry for entry in self._recent if entry[0].bank_id != bank_id]
            self._recent.clear()
            self._recent.extend(kept)
            return taken

    def held(self) -> list[tuple[Route, MemoryItem]]:
        """Every (route, item) held in memory: failed, batched, in flight, then pending."""
        with self._cond:
            batches = [*self._failed, *self._outbox]
            if self._in_flight is not None:
                batches.append(self._in_flight)
            entries = [(batch.route, item) for batch in batches for item in batch.items]
            return entries + list(self._pending)

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
        self._close_journal()
        return stats.pending + stats.in_flight + stats.retrying + stats.failed
