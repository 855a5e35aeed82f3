"""The retain queue: memories from ``enqueue`` until the server accepted them, and its decisions.

``enqueue`` is O(1) and never touches the network. Batches form when 16 items are pending,
when the fixed 5 s window since the first pending item closes, or on a flush; each route's
batch is one request with a client-made ``operation_id``. Transient failures are retried with
capped, jittered back-off (a route's later items wait behind, so order holds); a batch refused
for what it carries (400/413/422) is halved until only the bad memory fails; other refusals go
to a failed list that ``retry_failed`` re-sends. With a journal every item is on disk from
enqueue until accepted, and memory holds at most ``memory_cap`` of them (the rest wait on
disk only, *spilled*, and are loaded when there is room).

The queue decides and never touches the network: the worker (``worker.py``) asks it what is
due, sends, and reports each outcome back. The queue owns its journal (``journal.py``), which
writes what the queue notes and gives back what waits on disk (``recover``, ``refill``). One
lock (``lock``, a ``threading.Condition``) guards the queue's state, the journal's and the
worker's list of jobs, so one notify wakes the worker for any of them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from .items import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    JITTER,
    MAX_BATCH_ITEMS,
    SEND_AT_ITEMS,
    Backoff,
    Batch,
    FlushOutcome,
    MemoryItem,
    QueueClosedError,
    QueueFullError,
    QueueStats,
    Route,
    form_batches,
    halve,
    is_transcript,
)
from .journal import Journal, Notify, Recovered
from .journal_file import HeldRow, JournalError, JournalFile, RowState
from .recent import RecentFeed

log = logging.getLogger("hindsight_magic")

FLUSH_WINDOW_S = 5.0
MEMORY_CAP = 10_000
RECENT_OPERATIONS = 64


class SentOperation(NamedTuple):
    """A batch the server accepted asynchronously: it is searchable once the server's worker
    has indexed it. ``memories``: it carries a memory the user retained (a read waits for it);
    ``cells``: how many notebook cells its transcripts hold."""

    route: Route
    operation_id: str
    memories: bool
    cells: int


class Cancellation(NamedTuple):
    """What ``cancel`` did: memories taken out before they were sent (their retain ids), and
    ones the server may have or get (in flight, or sent before and being retried), as
    ``(bank_id, document_id)``: those are deleted on the server once it has them."""

    cancelled: tuple[str, ...]
    in_flight: tuple[tuple[str, str], ...]


class RetainQueue:
    """Batches memories for the worker to deliver; its state and its one lock."""

    def __init__(
        self,
        journal: JournalFile | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        batch_size: int = SEND_AT_ITEMS,
        window_s: float = FLUSH_WINDOW_S,
        max_batch_items: int = MAX_BATCH_ITEMS,
        backoff_base_s: float = BACKOFF_BASE_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        jitter: Callable[[], float] = JITTER.random,
        on_failure: Callable[[Batch, str], None] | None = None,  # quick: runs under the lock
        on_sent: Callable[[SentOperation], None] | None = None,  # likewise: a batch went async
        memory_cap: int = MEMORY_CAP,
        on_notice: Notify | None = None,  # a line for the user (journal down / back)
    ) -> None:
        self.lock = threading.Condition()
        # ``journal`` is its file (None: off); the queue's journal shares the queue's lock
        self.journal = Journal(journal, self.lock, clock=clock, on_notice=on_notice)
        self._clock = clock
        self._wall = wall
        self._batch_size = batch_size
        self._window_s = window_s
        self._max_batch_items = max_batch_items
        self._backoff = Backoff(backoff_base_s, backoff_cap_s, jitter)
        self._on_failure = on_failure
        self._on_sent = on_sent
        self._memory_cap = memory_cap
        self._pending: deque[tuple[Route, MemoryItem]] = deque()
        self._first_pending_at: float | None = None
        self._held_back = 0  # pending entries (at the front) waiting for their route's retry
        self._on_disk = 0  # memories on disk only (memory was full); loaded when there is room
        self._outbox: list[Batch] = []
        self._in_flight: Batch | None = None
        self._failed: list[Batch] = []
        self._flush_requested = False
        self._memories_requested = False  # a read wants the user's memories sent now
        self._closed = False
        self._accepted = 0
        self._requests = 0
        self._last_flush: float | None = None
        self._last_error: str | None = None
        self._recent: deque[SentOperation] = deque(maxlen=RECENT_OPERATIONS)
        self._waited_out: set[str] = set()  # of those, a read waited its whole bound for
        self._reading: list[str] = []  # banks a read waits on (one entry per waiting read)
        self.feed = RecentFeed(wall=wall)  # the panel's Recent list: each item's delivery state
        self._routes: dict[Route, Route] = {}

    # -- kernel thread ------------------------------------------------------------------------

    def enqueue(self, route: Route, item: MemoryItem) -> int:
        """Queue one item (O(1); with a journal, one line appended to this kernel's spool file,
        so it survives the process being killed once this returns); the number pending."""
        journal = self.journal
        line = journal.line(route, item)
        with self.lock:
            if self._closed:
                raise QueueClosedError
            route = self._routes.setdefault(route, route)  # one object per route: less for GC
            held = len(self._pending) + self._failed_count()
            spill = bool(self._on_disk) or held >= self._memory_cap
            if journal.spool(route, item, line, spill):
                if spill:
                    self._on_disk += 1  # waits on disk; the worker loads it when there is room
                    self.feed.queued(item)
                    return len(self._pending) + self._on_disk
            elif held >= self._memory_cap:
                why = "is off" if journal.off else "cannot be written"
                raise QueueFullError(
                    f"{held} memories are waiting in memory and the journal {why}; "
                    "check the server with %hindsight status."
                )
            self._pending.append((route, item))
            self.feed.queued(item)
            count = len(self._pending)
            if count == 1:
                self._first_pending_at = self._clock()
                self.lock.notify()
            elif count == self._batch_size:
                self.lock.notify()
            return count + self._on_disk

    def request_flush(self) -> None:
        """Ask the worker to send everything now (retrying batches included); do not wait."""
        with self.lock:
            self._flush_requested = True
            for batch in self._outbox:
                batch.next_attempt_at = 0.0
            self.lock.notify_all()

    def request_memories(self) -> None:
        """Ask the worker to send the user's memories now (a read waits for them), retrying ones
        included; auto-retain transcripts keep their window. Does not wait."""
        with self.lock:
            self._memories_requested = True
            for batch in self._outbox:
                if batch.carries_memories:
                    batch.next_attempt_at = 0.0
            self.lock.notify_all()

    def wait_settled(self, timeout_s: float | None, working: Callable[[], bool]) -> FlushOutcome:
        """Wait until each batch was tried once since the flush was requested, ``timeout_s``
        passed, or ``working`` (is a worker delivering?) turns false; what is left."""
        deadline = None if timeout_s is None else self._clock() + timeout_s
        with self.lock:
            while not self._settled():
                if not working():
                    break
                remaining = None if deadline is None else deadline - self._clock()
                if remaining is not None and remaining <= 0:
                    break
                self.lock.wait(remaining if remaining is None else min(remaining, 0.5))
            return FlushOutcome(
                self._settled(),
                len(self._pending)
                + self._on_disk
                + (self._in_flight.count if self._in_flight else 0),
                sum(b.count for b in self._outbox),
                self._failed_count(),
            )

    def retry_failed(self) -> int:
        """Move failed batches back to the outbox (fresh operation ids); returns the item count."""
        with self.lock:
            batches, self._failed = self._failed, []
            for old in batches:
                batch = Batch(old.route, old.items)
                self.journal.mark_batched(batch.items, batch.operation_id)
                self._outbox.append(batch)
                self.feed.requeued(batch)
            self.lock.notify_all()
            return sum(b.count for b in batches)

    def drop_failed(self) -> int:
        """Discard the failed batches for good; returns the item count."""
        with self.lock:
            batches, self._failed = self._failed, []
            self.journal.forget([item for b in batches for item in b.items])
            self.lock.notify_all()
            return sum(b.count for b in batches)

    def cancel(self, document_ids: Iterable[str]) -> Cancellation:
        """Take the memories with these retain (document) ids out of the queue, the journal
        and the spool, so they are never sent, a SIGKILL right after included. A memory whose
        batch was already tried may be on the server: it is reported as in flight."""
        wanted = set(document_ids)
        self.journal.ingest()  # spooled lines into the file, so deleting rows covers them
        removed: list[MemoryItem] = []
        in_flight: list[tuple[str, str]] = []
        with self.lock:
            kept: deque[tuple[Route, MemoryItem]] = deque()
            held_back = self._held_back
            for n, (route, item) in enumerate(self._pending):
                if item.document_id in wanted:
                    removed.append(item)
                    held_back -= n < self._held_back
                else:
                    kept.append((route, item))
            self._pending, self._held_back = kept, max(0, held_back)
            if not kept:
                self._first_pending_at = None
            for batch in [*self._outbox, *self._failed]:
                tried = batch.attempts or batch.error  # recovered batches may have been sent
                mine = [item for item in batch.items if item.document_id in wanted]
                if mine and tried and batch not in self._failed:
                    in_flight += [(batch.route.bank_id, str(i.document_id)) for i in mine]
                elif mine:
                    removed += mine
                    batch.items = [item for item in batch.items if item not in mine]
            self._outbox = [batch for batch in self._outbox if batch.items]
            self._failed = [batch for batch in self._failed if batch.items]
            if self._in_flight is not None:
                route = self._in_flight.route
                in_flight += [
                    (route.bank_id, str(item.document_id))
                    for item in self._in_flight.items
                    if item.document_id in wanted
                ]
            self.journal.unspool(wanted)
            cancelled = {str(item.document_id) for item in removed}
            self.feed.curated(cancelled, "cancelled")
            self.lock.notify_all()
        spilled = self.journal.erase(removed, wanted)
        if spilled:
            with self.lock:
                self._on_disk = max(0, self._on_disk - len(spilled))
            self.feed.curated(spilled, "cancelled")
        cancelled.update(spilled)
        return Cancellation(tuple(sorted(cancelled)), tuple(dict.fromkeys(in_flight)))

    def recover(self) -> int:
        """Adopt what dead kernels left in the journal (and our own rows); returns item count.

        A journal not open yet recovers them once it opens (the worker's ``restore``).
        """
        try:
            found = self.journal.recover()
        except JournalError as error:
            self.journal.down(error)
            return 0
        return 0 if found is None else self.adopt(found)

    def stats(self) -> QueueStats:
        """A snapshot of the counters."""
        with self.lock:
            waiting = [b.next_attempt_at for b in self._outbox if b.attempts]
            now_mono, now_wall = self._clock(), self._wall()
            retry_at = now_wall + max(0.0, min(waiting) - now_mono) if waiting else None
            return QueueStats(
                # batches formed but never tried yet (e.g. behind a retrying one) are pending too
                pending=len(self._pending)
                + self._on_disk
                + sum(b.count for b in self._outbox if not b.attempts),
                in_flight=self._in_flight.count if self._in_flight else 0,
                accepted=self._accepted,
                failed=self._failed_count(),
                retrying=sum(b.count for b in self._outbox if b.attempts),
                retry_at=retry_at,
                last_flush=self._last_flush,
                last_error=self._last_error,
                requests=self._requests,
                journal=self.journal.path,
                journal_problem=self.journal.problem,
            )

    def sent_transcripts(self, bank_id: str | None = None) -> list[SentOperation]:
        """The transcripts accepted (for ``bank_id``, or any bank) and not yet seen indexed."""
        with self.lock:
            return [
                op for op in self._recent if not op.memories and bank_id in (None, op.route.bank_id)
            ]

    def sent_memories(self, bank_id: str | None = None) -> list[tuple[Route, str]]:
        """(route, operation id) of batches with the user's memories the server accepted (for
        ``bank_id``, or any bank) and that are not yet seen indexed."""
        with self.lock:
            return [
                (op.route, op.operation_id)
                for op in self._recent
                if op.memories and bank_id in (None, op.route.bank_id)
            ]

    def memories_waiting(self, bank_id: str) -> bool:
        """Whether a memory the user queued for ``bank_id`` was not tried yet."""
        with self.lock:
            return self._memories_waiting(bank_id)

    def transcript_cells(self, bank_id: str) -> int:
        """Auto-retained cells of ``bank_id`` a recall cannot find yet: in transcripts not sent,
        and in transcripts sent but not seen indexed (a worker job follows those)."""
        sent = sum(op.cells for op in self.sent_transcripts(bank_id))
        return self.unsent_cells(bank_id) + sent

    def indexed(self, operation_ids: Iterable[str]) -> None:
        """The server has indexed these operations: forget them, mark them in the feed."""
        done = set(operation_ids)
        with self.lock:
            kept = [op for op in self._recent if op.operation_id not in done]
            self._recent.clear()
            self._recent.extend(kept)
            self._waited_out &= {op.operation_id for op in kept}
        self.feed.indexed(done)

    def waited_out(self, operation_ids: Iterable[str] = ()) -> set[str]:
        """Record that a read waited its whole bound for ``operation_ids`` (a later read looks
        at them once instead of waiting again); every operation so recorded and not indexed."""
        with self.lock:
            self._waited_out.update(operation_ids)
            return set(self._waited_out)

    def unsent_cells(self, bank_id: str) -> int:
        """How many notebook cells wait in ``bank_id``'s transcripts that are not sent yet."""
        with self.lock:
            pending = sum(
                Batch(route, [item]).cells
                for route, item in self._pending
                if route.bank_id == bank_id and is_transcript(item)
            )
            batches = [*self._outbox, *([self._in_flight] if self._in_flight else [])]
            return pending + sum(b.cells for b in batches if b.route.bank_id == bank_id)

    @contextmanager
    def reading(self, bank_id: str) -> Iterator[None]:
        """While in this block, ``bank_id``'s batches with the user's memories go first, marked
        ``for_read`` (the sender sends those synchronously)."""
        with self.lock:
            self._reading.append(bank_id)
        try:
            yield
        finally:
            with self.lock:
                self._reading.remove(bank_id)

    def wait_memories_tried(
        self, bank_id: str, timeout_s: float, working: Callable[[], bool]
    ) -> bool:
        """Wait until every memory the user queued for ``bank_id`` was tried once (accepted,
        refused, or waiting to retry), ``timeout_s`` passed or ``working`` turns false. A read
        waits for those only: auto-retain transcripts are sent meanwhile, not waited for."""
        deadline = self._clock() + timeout_s
        with self.lock:
            while self._memories_waiting(bank_id) and working():
                remaining = deadline - self._clock()
                if remaining <= 0:
                    break
                self.lock.wait(min(remaining, 0.5))
            return not self._memories_waiting(bank_id)

    def held(self) -> list[tuple[Route, MemoryItem]]:
        """Every (route, item) held in memory: failed, batched, in flight, then pending."""
        with self.lock:
            batches = [*self._failed, *self._outbox]
            if self._in_flight is not None:
                batches.append(self._in_flight)
            entries = [(batch.route, item) for batch in batches for item in batch.items]
            return entries + list(self._pending)

    def failed_batches(self) -> list[Batch]:
        """The batches that failed permanently (a copy)."""
        with self.lock:
            return list(self._failed)

    def close(self) -> None:
        """Take no more memories (``enqueue`` raises ``QueueClosedError``)."""
        with self.lock:
            self._closed = True

    # -- the worker's side --------------------------------------------------------------------

    def has_work(self) -> bool:
        """Whether a batch is due to form or to be sent now."""
        with self.lock:
            return self._window_closed() or self._next_sendable() is not None

    def idle_delay(self) -> float | None:
        """Seconds until a window closes or a retry is due; None: nothing waits."""
        with self.lock:
            deadlines = [b.next_attempt_at for b in self._outbox]
            if self._first_pending_at is not None:
                deadlines.append(self._first_pending_at + self._window_s)
            return max(0.0, min(deadlines) - self._clock()) if deadlines else None

    def next_batch(self) -> Batch | None:
        """Form the batches that are due, and take the next one to send (now in flight); None
        when nothing can be sent now (then whoever waits for the queue to settle is woken)."""
        with self.lock:
            self._form_batches_if_due()
            batch = self._next_sendable()
            if batch is None:
                self.lock.notify_all()
                return None
            self._outbox.remove(batch)
            self._in_flight = batch
            batch.for_read = batch.route.bank_id in self._reading
            return batch

    def accepted(self, batch: Batch, indexed: bool) -> None:
        """The server took ``batch`` (``indexed``: synchronously, so it is searchable now)."""
        with self.lock:
            self.journal.forget(batch.items)
            self._in_flight = None
            self._accepted += batch.count
            self._requests += 1
            self._last_flush = self._wall()
            self.feed.sent(batch)
            if indexed:
                self.feed.indexed([batch.operation_id])
            else:  # searchable once indexed: a read waits for it if it carries memories
                sent = SentOperation(
                    batch.route, batch.operation_id, batch.carries_memories, batch.cells
                )
                self._recent.append(sent)
                if self._on_sent is not None:
                    self._on_sent(sent)
            self.lock.notify_all()
        log.debug("Hindsight retain queue: batch flushed (%d memories)", batch.count)

    def refused(self, batch: Batch, message: str, transient: bool, split: bool = False) -> None:
        """Sending ``batch`` failed: retry it later (``transient``), halve it (``split``: the
        server refused what it carries, so one bad memory fails alone), or keep it as failed."""
        halved = split and len(batch.items) > 1
        with self.lock:
            self._in_flight = None
            self._requests += 1
            self._last_error = message
            batch.attempts += 1
            batch.error = message
            self.feed.failed(batch, message, retrying=transient or halved)
            if transient:
                batch.next_attempt_at = self._clock() + self._backoff.delay(batch.attempts)
                self._outbox.insert(0, batch)
            elif halved:
                # refused before it became an operation: the halves go under new operation ids
                halves = halve(batch)
                for half in halves:
                    self.journal.mark_batched(half.items, half.operation_id)
                self._outbox[0:0] = halves
            else:
                self._failed.append(batch)
                self.journal.mark_failed(batch.items, message)
                if self._on_failure is not None:  # before a waiting flush can return
                    self._on_failure(batch, message)
            self.lock.notify_all()
        level = logging.INFO if transient or halved else logging.WARNING
        log.log(level, "Hindsight retain queue: batch flush failed: %s", message)

    def refill(self) -> None:
        """Load memories waiting on disk only while memory has room (oldest first)."""
        with self.lock:
            room = self._memory_cap - len(self._pending) - self._failed_count()
            want = min(room, self._on_disk)
        if want <= 0:
            return
        try:
            loaded = self.journal.load_spilled(want)
            with self.lock:
                if not loaded:  # the count drifted (another process touched our rows)
                    self._on_disk = self.journal.count_spilled()
                self._on_disk = max(0, self._on_disk - len(loaded))
                self._pending.extend(loaded)
                if self._pending and self._first_pending_at is None:
                    self._first_pending_at = self._clock()
        except JournalError as error:
            self.journal.down(error)

    def adopt(self, found: Recovered) -> int:
        """Take in what the journal recovered: batches to re-send, failed ones, and how many
        wait on disk only; returns the memory count."""
        with self.lock:
            self._outbox.extend(found.batched)
            self._failed.extend(found.failed)
            self._on_disk = found.spilled
            self.lock.notify_all()
        return found.count

    def held_rows(self) -> list[HeldRow]:
        """What memory holds, as the journal writes it back after a while without it."""
        with self.lock:
            batches: list[tuple[Batch, RowState]] = [(b, "failed") for b in self._failed]
            batches += [(b, "batched") for b in self._outbox]
            if self._in_flight is not None:
                batches.append((self._in_flight, "batched"))
            kept = [
                HeldRow(b.route.bank_id, b.route.tags, item, state, b.operation_id, b.error)
                for b, state in batches
                for item in b.items
            ]
            return kept + [HeldRow(r.bank_id, r.tags, item) for r, item in self._pending]

    # -- decisions (lock held) ----------------------------------------------------------------

    def _failed_count(self) -> int:
        return sum(b.count for b in self._failed)

    def _window_closed(self) -> bool:
        if not self._pending:
            return False
        return self._full() or self._time_up() or self._flush_requested or self._memories_asked()

    def _full(self) -> bool:
        return len(self._pending) - self._held_back >= self._batch_size

    def _time_up(self) -> bool:
        first = self._first_pending_at
        return bool(self._pending) and first is not None and self._clock() >= first + self._window_s

    def _memories_asked(self) -> bool:
        """A read asked for the user's memories, and some are pending."""
        return self._memories_requested and any(
            not is_transcript(item) for _, item in self._pending
        )

    def _form_batches_if_due(self) -> None:
        if not self._pending or not self._window_closed():
            self._flush_requested = self._memories_requested = False
            return
        everything = self._flush_requested or self._full() or self._time_up()
        self._flush_requested = self._memories_requested = False
        before, self._first_pending_at = self._first_pending_at, None
        now = self._clock()
        waiting = {b.route for b in self._outbox if b.next_attempt_at > now}
        entries = list(self._pending)
        journaled = self._journaled_prefix()  # the rest is taken into the journal first

        def taken(entry: tuple[Route, MemoryItem]) -> bool:
            return entry[0] not in waiting and (everything or not is_transcript(entry[1]))

        ready = [entry for entry in entries[:journaled] if taken(entry)]
        held = [entry for entry in entries[:journaled] if not taken(entry)]
        self._pending = deque(held + entries[journaled:])  # a retrying route's wait, in order
        self._held_back = sum(1 for route, _ in held if route in waiting)
        if held:  # a retrying route waits a window again; transcripts keep theirs
            kept_window = not everything and before is not None
            self._first_pending_at = before if kept_window else now
        if journaled < len(entries):  # in the journal at the worker's next step: form then
            self._first_pending_at = now - self._window_s
        for batch in form_batches(ready, self._max_batch_items):
            self.journal.mark_batched(batch.items, batch.operation_id)
            self._outbox.append(batch)

    def _journaled_prefix(self) -> int:
        """How many pending entries, from the first, are in the journal (all while it is not
        written): a batch carries only those, so its operation id can be written for it."""
        if not self.journal.writable:
            return len(self._pending)
        for n, (_, item) in enumerate(self._pending):
            if not item.journal_ids:
                return n
        return len(self._pending)

    def _next_sendable(self) -> Batch | None:
        """The next batch to send: the first that is due, unless a read waits on a bank with a
        batch of the user's memories due (then that one: transcripts keep their own order)."""
        now = self._clock()
        blocked: set[Route] = set()
        first = None
        for batch in self._outbox:
            if batch.route in blocked:
                continue
            if batch.next_attempt_at > now:
                blocked.add(batch.route)
                continue
            if not self._reading or (
                batch.route.bank_id in self._reading and batch.carries_memories
            ):
                return batch
            first = first or batch
        return first

    def _memories_waiting(self, bank_id: str) -> bool:
        """Whether a memory the user queued for ``bank_id`` was not tried yet (lock held)."""
        now = self._clock()
        if self._on_disk:  # memories on disk only: of unknown banks, so wait for them
            return True
        due = [b for b in self._outbox if b.next_attempt_at <= now]  # not waiting to retry
        if self._in_flight is not None:
            due.append(self._in_flight)
        if any(b.route.bank_id == bank_id and b.carries_memories for b in due):
            return True
        waiting = {b.route for b in self._outbox if b.next_attempt_at > now}
        return any(
            route.bank_id == bank_id and route not in waiting and not is_transcript(item)
            for route, item in self._pending
        )

    def _settled(self) -> bool:
        now = self._clock()
        waiting = {b.route for b in self._outbox if b.next_attempt_at > now}
        stuck = all(route in waiting for route, _ in self._pending)
        return stuck and self._in_flight is None and self._next_sendable() is None
