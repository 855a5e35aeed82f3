"""What the server has indexed: a read's wait for the user's memories, and following sent work.

**Read-after-write** (``prepare_read``, before every ``%recall``/``%%reflect``): the queue is
flushed while the sender knows a read waits on the bank, and the read waits only for the
memories the user queued (``%retain``, ``hm.retain``): those batches go first and synchronously
where that is idempotent, so the server answers once they are indexed. What went async with
the user's memories (a big batch, or a server that refuses synchronous retains) is polled until
indexed. Everything together is bounded by ``READ_WAIT_S``.

Auto-retain transcripts are sent meanwhile but never waited for: the server takes seconds to
index one (1.8-5.8 s for three cells here, against a recall of 0.2-0.4 s), so even a 1 s wait
would almost always be spent in vain and double the read. Instead the read reports how many
cells are not searchable yet (sent and not seen indexed, or not sent), and the result says so.

The worker also follows what went out asynchronously: the transcripts until indexed
(``TranscriptWatch``), and, for the panel's Recent feed, the user's memories
(``follow_operations``, ``operation_state``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from .._api.vocabulary import RUNNING, OperationStatus
from .._enums import StrEnum
from .._errors import HindsightError
from .items import SYNC_MAX_ITEMS, Route, form_batches
from .journal_file import JournalError

if TYPE_CHECKING:
    from .._api.client import HindsightClient
    from .journal_file import JournalFile, Spooled
    from .queue import RetainQueue
    from .sender import BatchSender

log = logging.getLogger("hindsight_magic")
READ_WAIT_S = 15.0  # a cold or busy server can need seconds for its first items
WATCH_EVERY_S = 1.0  # how often accepted transcripts are asked about while being indexed
WATCH_FOR_S = 300.0  # after this long an unfinished transcript is not asked about again
INDEXING_POLL_S = 0.05


@dataclass(frozen=True)
class ReadReady:
    """What ``prepare_read`` achieved: what a read (the reader's ``Readiness``) says of the
    memories it may not find yet."""

    transcript_cells: int  # auto-retained cells the server cannot find yet (not waited for)
    indexed: bool  # every memory the user queued was found indexed within the wait


def prepare_read(
    bank_id: str,
    sender: BatchSender,
    queue: RetainQueue,
    working: Callable[[], bool],
    wait_s: float = READ_WAIT_S,
) -> ReadReady:
    """Send the memories the user queued and wait (at most ``wait_s``) until the server can
    find those of ``bank_id``. What the server is still indexing when the wait ends (a busy
    server indexes a memory sent asynchronously in its turn among everyone's work) is looked at
    once by each later read, without waiting again, until it is indexed: every read until then
    says it cannot find it yet."""
    deadline = time.monotonic() + wait_s
    with queue.reading(bank_id):
        queue.request_memories()
        queue.wait_memories_tried(bank_id, wait_s, working)
    operations = queue.sent_memories(bank_id)
    left = max(0.0, deadline - time.monotonic())
    given_up = queue.waited_out()
    fresh = [op for op in operations if op[1] not in given_up]
    waiting = still_indexing(sender.client, fresh, left)
    queue.waited_out(operation_id for _, operation_id in waiting)
    waiting += still_indexing(sender.client, [op for op in operations if op[1] in given_up], 0)
    queue.indexed(
        operation_id for route, operation_id in operations if (route, operation_id) not in waiting
    )
    return ReadReady(queue.transcript_cells(bank_id), not waiting)


class ReadPreparation:
    """Readies a read of a bank for every part that reads (``prepare_read``): the cells
    auto-retain holds go out with the rest (``cells_due`` queues them), and a session that
    ``reads_others`` first sends what other kernels on this machine queued for the bank and
    have not delivered (``send_queued_elsewhere``): an agent's read-after-write across
    processes. ``working``: whether the worker that sends the queue runs; ``in_worker_job``:
    whether the calling thread runs one of that worker's jobs, where a read does not wait (the
    worker sends between its jobs: the wait would only hold it) and says what it cannot find
    yet."""

    def __init__(
        self,
        *,
        sender: BatchSender,
        queue: RetainQueue,
        working: Callable[[], bool],
        in_worker_job: Callable[[], bool],
        cells_due: Callable[[], object],
        journal_file: JournalFile | None,
        reads_others: bool,
    ) -> None:
        self._sender = sender
        self._queue = queue
        self._working = working
        self._in_worker_job = in_worker_job
        self._cells_due = cells_due
        self._journal_file = journal_file
        self._reads_others = reads_others

    def __call__(self, bank_id: str, wait_s: float | None = None) -> ReadReady:
        """Ready a read of ``bank_id``, waiting at most ``wait_s`` (default ``READ_WAIT_S``,
        looked up per read: a test of a server that never indexes shortens it)."""
        wait_s = READ_WAIT_S if wait_s is None else wait_s
        if self._in_worker_job():
            wait_s = 0.0
        self._cells_due()
        if self._reads_others:
            self._send_queued_elsewhere(bank_id)
        return prepare_read(bank_id, self._sender, self._queue, self._working, wait_s)

    def indexing(self, bank_id: str, *, send: bool) -> bool:
        """Whether memories the user queued for ``bank_id`` cannot be found yet: not sent, or
        sent and still being indexed (the server is asked once about each sent memory, of any
        bank: the Recent feed follows). ``send`` first asks the worker to send them now, with
        the cells auto-retain holds. Never waits: a read that must not block asks again."""
        queue = self._queue
        if send:
            self._cells_due()
            queue.request_memories()
        if queue.memories_waiting(bank_id):
            return True
        follow_operations(self._sender.client, queue, queue.sent_memories(None))
        return bool(queue.sent_memories(bank_id))

    def _send_queued_elsewhere(self, bank_id: str) -> None:
        """A journal that cannot be read or a memory the server refuses leaves the read to
        answer with what it has: the kernel that queued them still delivers them."""
        file = self._journal_file
        if file is None or not file.available:
            return
        try:
            send_queued_elsewhere(bank_id, self._sender, file.queued_elsewhere(bank_id))
        except JournalError as error:
            log.info("Hindsight: other kernels' queue not readable: %s", error)
        except HindsightError as error:
            if not error.refuses_items:
                raise
            log.info("Hindsight: another kernel's memory was refused: %s", error)


def send_queued_elsewhere(
    bank_id: str,
    sender: BatchSender,
    queued: Iterable[Spooled],
    wait_s: float = READ_WAIT_S,
) -> int:
    """Send, before a read, the memories of ``bank_id`` that other processes queued and have not
    delivered (``JournalFile.queued_elsewhere``), synchronously, so the read finds them; returns
    how many were sent.

    Only memories with their own document id go (never a transcript's append, which would be
    appended twice): re-sending a document id replaces that document, so when their kernel
    sends them too, under the same ids, the server still keeps each memory once. Their journal
    rows are not touched: the kernel that queued a memory stays the one that delivers it.
    """
    seen: set[str] = set()
    entries = []
    for bank, tags, item in queued:
        own = bank == bank_id and item.document_id and not item.appends
        if own and item.document_id not in seen:
            seen.add(str(item.document_id))
            entries.append((Route(bank, tags), item))
    if not entries:
        return 0
    deadline = time.monotonic() + wait_s
    went_async = []
    for batch in form_batches(entries, SYNC_MAX_ITEMS):
        batch.for_read = True
        if not sender(batch):
            went_async.append((batch.route, batch.operation_id))
    wait_until_indexed(sender.client, went_async, max(0.0, deadline - time.monotonic()))
    return len(entries)


class TranscriptWatch:
    """Follows the transcripts the server accepted until it has indexed them (a worker job),
    so that a read can say how many cells are not searchable yet without asking the server.

    Started when a transcript is accepted asynchronously; asks about each one every
    ``WATCH_EVERY_S`` while any is pending, for at most ``WATCH_FOR_S`` after it was sent.
    """

    def __init__(
        self,
        sender: BatchSender,
        queue: RetainQueue,
        scheduler: Callable[[Callable[[], object], float], object],
    ) -> None:
        self._sender = sender
        self._queue = queue
        self._schedule = scheduler
        self._first_seen: dict[str, float] = {}  # operation id → when the watch first saw it

    def start(self) -> None:
        """Look again in ``WATCH_EVERY_S`` (nothing is scheduled twice)."""
        self._schedule(self.check, WATCH_EVERY_S)

    def check(self) -> None:
        """Ask the server about every transcript still being indexed; look again if any is."""
        now = time.monotonic()
        sent = self._queue.sent_transcripts()
        for op in sent:
            self._first_seen.setdefault(op.operation_id, now)
        follow_operations(
            self._sender.client, self._queue, [(op.route, op.operation_id) for op in sent]
        )
        left = {op.operation_id for op in self._queue.sent_transcripts()}
        self._first_seen = {op: t for op, t in self._first_seen.items() if op in left}
        waiting = any(now - t < WATCH_FOR_S for t in self._first_seen.values())
        if waiting:
            self.start()


class Indexing(StrEnum):
    """Where the server is with an accepted batch (or a mental model's refresh)."""

    INDEXING = "indexing"  # pending or processing
    DONE = "done"  # completed, or an operation it no longer reports
    FAILED = "failed"
    UNKNOWN = "unknown"  # it cannot be asked now


class OperationState(NamedTuple):
    """An operation's ``state`` and, when it failed, ``why``; shown as ``failed: <why>``."""

    state: Indexing
    why: str = ""

    def __str__(self) -> str:
        return f"{self.state}: {self.why}" if self.why else str(self.state)


def operation_ended(client: HindsightClient, bank_id: str, operation_id: str) -> str | None:
    """How an operation (a model's refresh) ended: '' done, or ``failed: …``; None while the
    server is still at it, or cannot be asked now."""
    state = operation_state(client, bank_id, operation_id)
    if state.state in (Indexing.INDEXING, Indexing.UNKNOWN):
        return None
    return "" if state.state == Indexing.DONE else str(state)


def operation_state(client: HindsightClient, bank_id: str, operation_id: str) -> OperationState:
    """Where the server is with an accepted batch."""
    try:
        reply = client.operation(bank_id, operation_id)
    except HindsightError:
        return OperationState(Indexing.UNKNOWN)
    status = reply.status if reply is not None else None
    if status in RUNNING:
        return OperationState(Indexing.INDEXING)
    if reply is not None and status in (OperationStatus.FAILED, OperationStatus.CANCELLED):
        why = reply.error_message or f"the server indexing {status}"
        return OperationState(Indexing.FAILED, why)
    return OperationState(Indexing.DONE)


def follow_operations(
    client: HindsightClient, queue: RetainQueue, operations: Iterable[tuple[Route, str]]
) -> bool:
    """Ask once about each accepted operation; mark those done in the queue (and its feed) or
    failed in the feed. True while some are still being indexed (or cannot be asked)."""
    done, still = [], False
    for route, operation_id in operations:
        state = operation_state(client, route.bank_id, operation_id)
        if state.state in (Indexing.INDEXING, Indexing.UNKNOWN):
            still = True
        elif state.state == Indexing.DONE:
            done.append(operation_id)
        else:
            queue.feed.index_failed(operation_id, f"indexing {state}")
            done.append(operation_id)
    queue.indexed(done)
    return still


def wait_until_indexed(
    client: HindsightClient,
    operations: Iterable[tuple[Route, str]],
    timeout_s: float = READ_WAIT_S,
    poll_s: float = INDEXING_POLL_S,
) -> bool:
    """Poll each (route, operation id) until none is being indexed, at most ``timeout_s``.

    True when none was seen still being indexed (one the server cannot report now counts as
    done: the read that follows will say what is wrong with the server).
    """
    return not still_indexing(client, operations, timeout_s, poll_s)


def still_indexing(
    client: HindsightClient,
    operations: Iterable[tuple[Route, str]],
    timeout_s: float = READ_WAIT_S,
    poll_s: float = INDEXING_POLL_S,
) -> list[tuple[Route, str]]:
    """``wait_until_indexed``: the operations still being indexed when it gave up."""
    waiting = list(operations)
    deadline = time.monotonic() + timeout_s
    while waiting:  # each is asked at least once, even with no time left
        waiting = [
            (route, operation_id)
            for route, operation_id in waiting
            if operation_state(client, route.bank_id, operation_id).state == Indexing.INDEXING
        ]
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(poll_s)
    return waiting
