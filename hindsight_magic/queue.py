"""The retain queue and its worker thread.

``enqueue`` is O(1) and never touches the network. The single daemon worker forms batches when
16 items are pending, when the 5 s window since the first pending item closes (a fixed window,
not reset by later items) or when a flush is requested; it sends one batch per route with a
client-made ``operation_id``. Transient failures keep the batch and retry it with capped,
jittered exponential back-off (later batches of the same route wait behind it, so order holds);
permanent failures move the batch to a failed list that ``retry_failed`` can re-send.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .client import HindsightError
from .models import MemoryItem

log = logging.getLogger("hindsight_magic")

FLUSH_BATCH_SIZE = 16
FLUSH_WINDOW_S = 5.0
MAX_BATCH_ITEMS = 256
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0
RECENT_OPERATIONS = 64


class QueueClosedError(RuntimeError):
    """Raised by ``enqueue`` after the queue was closed."""

    def __init__(self) -> None:
        super().__init__("Hindsight retain queue is closed.")


@dataclass(frozen=True)
class Route:
    """Which bank and tags a queued item goes to, captured when it is queued.

    The connection (URL and key) is not part of the route: the session's current connection
    sends every batch, so pointing the session at a working server (or fixing the key)
    delivers what is already queued.
    """

    bank_id: str
    tags: tuple[str, ...] | None = None


@dataclass(eq=False)
class Batch:
    """Items of one route sent (and re-sent) as one request under one ``operation_id``."""

    route: Route
    items: list[MemoryItem]
    operation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    attempts: int = 0
    next_attempt_at: float = 0.0
    error: str | None = None

    @property
    def count(self) -> int:
        """How many queued memories the batch carries."""
        return sum(item.parts for item in self.items)


@dataclass(frozen=True)
class QueueStats:
    """A consistent snapshot of the queue, for status and the panel."""

    pending: int
    in_flight: int
    accepted: int
    failed: int
    retrying: int
    retry_at: float | None
    last_flush: float | None
    last_error: str | None
    requests: int


@dataclass(frozen=True)
class FlushOutcome:
    """What a flush left behind when it returned."""

    settled: bool
    pending: int
    retrying: int
    failed: int


Sender = Callable[[Batch], None]


class RetainQueue:
    """Batches memories and delivers them from one background thread."""

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
        on_failure: Callable[[Batch, str], None] | None = None,
    ) -> None:
        self._send = send
        self._clock = clock
        self._wall = wall
        self._batch_size = batch_size
        self._window_s = window_s
        self._max_batch_items = max_batch_items
        self._backoff_base_s = backoff_base_s
        self._backoff_cap_s = backoff_cap_s
        self._jitter = jitter
        self._on_failure = on_failure
        self._cond = threading.Condition()
        self._pending: deque[tuple[Route, MemoryItem]] = deque()
        self._first_pending_at: float | None = None
        self._outbox: list[Batch] = []
        self._in_flight: Batch | None = None
        self._failed: list[Batch] = []
        self._flush_requested = False
        self._closed = False
        self._stopping = False
        self._accepted = 0
        self._requests = 0
        self._last_flush: float | None = None
        self._last_error: str | None = None
        self._thread: threading.Thread | None = None
        self._recent: deque[tuple[Route, str]] = deque(maxlen=RECENT_OPERATIONS)
        self._jobs: list[tuple[float, Callable[[], object]]] = []  # (due, job)

    # -- kernel-thread API ------------------------------------------------------------------

    def enqueue(self, route: Route, item: MemoryItem) -> int:
        """Queue one item (O(1), no I/O); returns the number pending."""
        with self._cond:
            if self._closed:
                raise QueueClosedError
            self._pending.append((route, item))
            count = len(self._pending)
            if count == 1:
                self._first_pending_at = self._clock()
                self._cond.notify()
            elif count == self._batch_size:
                self._cond.notify()
            return count

    def submit(self, job: Callable[[], object], delay_s: float = 0.0) -> bool:
        """Run ``job`` on the worker thread after ``delay_s`` (unless it is already waiting)."""
        with self._cond:
            if self._stopping:
                return False
            if all(job != queued for _, queued in self._jobs):
                self._jobs.append((self._clock() + delay_s, job))
                self._cond.notify()
            return True

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
                if self._thread is None or not self._thread.is_alive():
                    break
                remaining = None if deadline is None else deadline - self._clock()
                if remaining is not None and remaining <= 0:
                    break
                self._cond.wait(remaining if remaining is None else min(remaining, 0.5))
            return FlushOutcome(
                self._settled(),
                len(self._pending) + (self._in_flight.count if self._in_flight else 0),
                sum(b.count for b in self._outbox),
                sum(b.count for b in self._failed),
            )

    def retry_failed(self) -> int:
        """Move failed batches back to the outbox (fresh operation ids); returns the item count."""
        with self._cond:
            batches, self._failed = self._failed, []
            for batch in batches:
                self._outbox.append(Batch(batch.route, batch.items))
            self._cond.notify_all()
            return sum(b.count for b in batches)

    def stats(self) -> QueueStats:
        """A snapshot of the counters."""
        with self._cond:
            waiting = [b.next_attempt_at for b in self._outbox if b.attempts]
            now_mono, now_wall = self._clock(), self._wall()
            retry_at = now_wall + max(0.0, min(waiting) - now_mono) if waiting else None
            return QueueStats(
                pending=len(self._pending),
                in_flight=self._in_flight.count if self._in_flight else 0,
                accepted=self._accepted,
                failed=sum(b.count for b in self._failed),
                retrying=sum(b.count for b in self._outbox if b.attempts),
                retry_at=retry_at,
                last_flush=self._last_flush,
                last_error=self._last_error,
                requests=self._requests,
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

    def start(self) -> None:
        """Start the worker thread (once)."""
        with self._cond:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name="hindsight-magic-worker", daemon=True
            )
            self._thread.start()

    def close(self, timeout_s: float = 5.0) -> int:
        """Flush (bounded), stop the worker; returns how many items were left undelivered."""
        with self._cond:
            self._closed = True
        self.flush(timeout_s)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(0.1, min(timeout_s, 2.0)))
        stats = self.stats()
        return stats.pending + stats.in_flight + stats.retrying + stats.failed

    # -- worker -----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and not self._has_work():
                    self._cond.wait(self._idle_delay())
                if self._stopping:
                    return
            self.pump()

    def pump(self) -> int:
        """Do all work that is due now (forming and sending batches); returns batches sent.

        The worker calls this; tests with a fake clock call it directly, without a thread.
        """
        self._run_jobs()
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

    def _run_jobs(self) -> None:
        while True:
            with self._cond:
                now = self._clock()
                due = next((entry for entry in self._jobs if entry[0] <= now), None)
                if due is None:
                    return
                self._jobs.remove(due)
            try:
                due[1]()
            except Exception:
                log.exception("Hindsight: background job failed")

    def _deliver(self, batch: Batch) -> None:
        try:
            self._send(batch)
        except HindsightError as error:
            self._record_failure(batch, str(error), error.transient)
        except Exception as error:  # a bug or an unexpected reply: keep the items, visibly
            log.exception("Hindsight retain queue: batch flush failed")
            self._record_failure(batch, f"{type(error).__name__}: {error}", transient=False)
        else:
            with self._cond:
                self._in_flight = None
                self._accepted += batch.count
                self._requests += 1
                self._last_flush = self._wall()
                self._recent.append((batch.route, batch.operation_id))
                self._cond.notify_all()
            log.debug("Hindsight retain queue: batch flushed (%d memories)", batch.count)

    def _record_failure(self, batch: Batch, message: str, transient: bool) -> None:
        with self._cond:
            self._in_flight = None
            self._requests += 1
            self._last_error = message
            batch.attempts += 1
            batch.error = message
            if transient:
                delay = min(self._backoff_cap_s, self._backoff_base_s * 2 ** (batch.attempts - 1))
                batch.next_attempt_at = self._clock() + delay * (0.5 + self._jitter() / 2)
                self._outbox.insert(0, batch)
            else:
                self._failed.append(batch)
            self._cond.notify_all()
        level = logging.INFO if transient else logging.WARNING
        log.log(level, "Hindsight retain queue: batch flush failed: %s", message)
        if not transient and self._on_failure is not None:
            self._on_failure(batch, message)

    # -- decisions (called with the lock held) ----------------------------------------------

    def _window_closed(self) -> bool:
        if not self._pending:
            return False
        if self._flush_requested or len(self._pending) >= self._batch_size:
            return True
        assert self._first_pending_at is not None
        return self._clock() >= self._first_pending_at + self._window_s

    def _form_batches_if_due(self) -> None:
        if not self._window_closed():
            self._flush_requested = False
            return
        self._flush_requested = False
        self._first_pending_at = None
        current: Batch | None = None
        documents: dict[str, MemoryItem] = {}
        while self._pending:
            route, item = self._pending.popleft()
            full = current is not None and len(current.items) >= self._max_batch_items
            same_doc = documents.get(item.document_id) if item.document_id else None
            mergeable = same_doc is not None and not full and current.route == route
            if mergeable and same_doc.merge_append(item):
                continue  # one item per document in a batch: the server refuses duplicates
            if current is None or full or current.route != route or same_doc is not None:
                current = Batch(route, [])
                self._outbox.append(current)
                documents = {}
            current.items.append(item)
            if item.document_id:
                documents[item.document_id] = item

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
        now = self._clock()
        job_due = any(due <= now for due, _ in self._jobs)
        return job_due or self._window_closed() or self._next_sendable() is not None

    def _settled(self) -> bool:
        return not self._pending and self._in_flight is None and self._next_sendable() is None

    def _idle_delay(self) -> float | None:
        now = self._clock()
        deadlines = [b.next_attempt_at for b in self._outbox] + [due for due, _ in self._jobs]
        if self._first_pending_at is not None:
            deadlines.append(self._first_pending_at + self._window_s)
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - now) + 0.001
