"""Sending one batch: the queue's only way to the server.

Checks the server is Hindsight (once per client), ensures the bank (once per process),
redacts every item once more, then ``POST …/memories``. A refused key becomes one line that
says to check ``HINDSIGHT_API_KEY``; every other failure is the client's ``HindsightError``,
which the queue sorts into retry, split or failed.

Two ways to send, both safe to repeat after a lost reply:

- **async** (the default) with the batch's client-made ``operation_id``: the server queues the
  batch and its worker indexes it a moment later; re-sending the same operation creates no
  new work.
- **sync**, for a batch a ``%recall``/``%%reflect`` is waiting on (``reading``): the server
  answers once the memories are searchable, so the read need not wait for its worker. The
  server ignores ``operation_id`` here, so this is only done when every item carries its own
  ``document_id`` and none appends (``idempotent``): re-sending a document id replaces that
  document, so a re-send after a lost reply — sync or async, now or by the next kernel — stores
  each memory once. A server that refuses synchronous retains (``RETAIN_BATCH_ENABLED``) gets
  the async request at once, and no sync attempt again.

Every memory queued without a document id gets one of its own (``own_document_id``, kept in
the journal), and every send carries it: it is the memory's retain id (``RetainResult.ids``),
by which the user forgets or deletes it on the server, and a re-send of a batch that may have
gone out synchronously replaces it rather than doubling it. (Sent as one document, a batch
indexes about a third faster, but its memories could no longer be told apart.)

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
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple

from .._api.client import bank_settings, ensure_bank
from .._diagnosis import explain
from .._errors import HindsightError
from .items import Route, form_batches, request_item

if TYPE_CHECKING:
    from .._api.client import Connection, HindsightClient
    from .._settings import HindsightSettings
    from .items import Batch
    from .journal_file import Spooled
    from .queue import RetainQueue

SYNC_MAX_ITEMS = 16  # a bigger batch goes async: a synchronous retain waits for extraction
READ_WAIT_S = 15.0  # a cold or busy server can need seconds for its first items
WATCH_EVERY_S = 1.0  # how often accepted transcripts are asked about while being indexed
WATCH_FOR_S = 300.0  # after this long an unfinished transcript is not asked about again
INDEXING_POLL_S = 0.05

OWN_ID_PREFIX = "hm-"  # marks the document ids made here (a memory's retain id)


_id_stem: tuple[int, str, Iterator[int]] = (-1, "", itertools.count())  # (pid, stem, counter)


def own_document_id(update_mode: str | None) -> str | None:
    """A new document id for a memory queued without one (none for an append: it needs its
    document's). Made when the memory is queued and kept in the journal with it.

    ``hm-<random>-<n>``: one random stem per process (a forked child makes its own) and a
    counter, because ``uuid4`` per memory asks the OS for randomness, a call that releases
    the GIL on the kernel thread and lets the worker keep it.
    """
    global _id_stem
    if update_mode == "append":
        return None
    pid, stem, counter = _id_stem
    if pid != os.getpid():
        pid, stem, counter = os.getpid(), f"{OWN_ID_PREFIX}{uuid.uuid4().hex}-", itertools.count(1)
        _id_stem = (pid, stem, counter)
    return f"{stem}{next(counter)}"


def idempotent(batch: Batch) -> bool:
    """Whether every item of ``batch`` has its own ``document_id`` and none appends."""
    return all(item.document_id and item.update_mode != "append" for item in batch.items)


class BatchSender:
    """Delivers batches through the connection now in force (callable: ``sender(batch)``)."""

    def __init__(
        self,
        connection: Connection,
        settings: HindsightSettings,
        secrets: Callable[[], list[str]],
    ) -> None:
        self._connection = connection
        self._settings = settings
        self._secrets = secrets
        self._reading: list[str] = []  # banks a read waits on (one entry per waiting read)
        self._lock = threading.Lock()
        self._no_sync: set[str] = set()  # servers (base URLs) that refused a synchronous retain

    @property
    def client(self) -> HindsightClient:
        """The client of the connection now in force."""
        return self._connection.client

    @contextmanager
    def reading(self, bank_id: str) -> Iterator[None]:
        """While in this block, ``bank_id``'s new idempotent batches are sent synchronously."""
        with self._lock:
            self._reading.append(bank_id)
        try:
            yield
        finally:
            with self._lock:
                self._reading.remove(bank_id)

    def warm_up(self) -> None:
        """Import what the first send needs (httpx, this thread's connection pool); the worker
        runs it 0.3 s after a load, when the kernel is usually idle. A first send that did it
        during a busy cell took seconds: the worker gets the GIL back only every few
        milliseconds then, and an import reads hundreds of files, giving the GIL up at each."""
        self._connection.client.warm_up()

    def __call__(self, batch: Batch) -> bool:
        """Send ``batch``; True when the server has already indexed it (a synchronous send)."""
        client = self._connection.client
        try:
            return self._send(client, batch)
        except HindsightError as error:
            if error.status_code not in (401, 403):
                raise
            message = explain(error, client.base_url)  # says to check HINDSIGHT_API_KEY
            raise HindsightError(
                error.operation, message, error.status_code, error.details, error.kind
            ) from None

    def _send(self, client: HindsightClient, batch: Batch) -> bool:
        client.identity()
        settings = self._settings
        bank_id = batch.route.bank_id
        ensure_bank(client, bank_id, *bank_settings(settings))
        secrets = self._secrets()
        sync = self._sync_wanted(client, batch)
        items = [request_item(item, secrets) for item in batch.items]
        if sync:
            try:
                client.retain_batch(bank_id, items, async_=False)
                return True
            except HindsightError as error:
                if not error.refuses_items:
                    raise  # retried later, under the same document ids
                # refused before any work: the async request below has the final say
        client.retain_batch(bank_id, items, operation_id=batch.operation_id)
        if sync:  # async took what sync refused: this server does not do synchronous retains
            self._no_sync.add(client.base_url)
        return False

    def _sync_wanted(self, client: HindsightClient, batch: Batch) -> bool:
        return (
            batch.attempts == 0
            and batch.error is None  # never tried, in this kernel or an earlier one
            and batch.route.bank_id in self._reading
            and len(batch.items) <= SYNC_MAX_ITEMS
            and client.base_url not in self._no_sync
            and idempotent(batch)
        )


# -- read-after-write ----------------------------------------------------------------------------


class ReadReady(NamedTuple):
    """What ``prepare_read`` achieved."""

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
    find those of ``bank_id``."""
    deadline = time.monotonic() + wait_s
    with sender.reading(bank_id), queue.reading(bank_id):
        queue.request_memories()
        queue.wait_memories_tried(bank_id, wait_s, working)
    operations = queue.take_recent(bank_id)
    left = max(0.0, deadline - time.monotonic())
    indexed = wait_until_indexed(sender.client, operations, left)
    if indexed:
        queue.indexed(operation_id for _, operation_id in operations)
    return ReadReady(queue.transcript_cells(bank_id), indexed)


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
        own = bank == bank_id and item.document_id and item.update_mode != "append"
        if own and item.document_id not in seen:
            seen.add(str(item.document_id))
            entries.append((Route(bank, tags), item))
    if not entries:
        return 0
    deadline = time.monotonic() + wait_s
    went_async = []
    with sender.reading(bank_id):
        for batch in form_batches(entries, SYNC_MAX_ITEMS):
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


def operation_state(client: HindsightClient, bank_id: str, operation_id: str) -> str:
    """Where the server is with an accepted batch: ``indexing`` (pending or processing),
    ``done`` (completed, or an operation it no longer reports), ``failed: <why>``, or
    ``unknown`` when it cannot be asked now."""
    try:
        reply = client.operation(bank_id, operation_id)
    except HindsightError:
        return "unknown"
    status = (reply or {}).get("status")
    if status in ("pending", "processing"):
        return "indexing"
    if status in ("failed", "cancelled"):
        return f"failed: {(reply or {}).get('error_message') or f'the server indexing {status}'}"
    return "done"


def follow_operations(
    client: HindsightClient, queue: RetainQueue, operations: Iterable[tuple[Route, str]]
) -> bool:
    """Ask once about each accepted operation; mark those done in the queue (and its feed) or
    failed in the feed. True while some are still being indexed (or cannot be asked)."""
    done, still = [], False
    for route, operation_id in operations:
        state = operation_state(client, route.bank_id, operation_id)
        if state in ("indexing", "unknown"):
            still = True
        elif state == "done":
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
    waiting = list(operations)
    deadline = time.monotonic() + timeout_s
    while waiting and time.monotonic() < deadline:
        waiting = [
            (route, operation_id)
            for route, operation_id in waiting
            if operation_state(client, route.bank_id, operation_id) == "indexing"
        ]
        if waiting:
            time.sleep(poll_s)
    return not waiting
