"""Sending one batch: the queue's only way to the server.

Holds the memories while the local server runs on after its data dir was deleted (it would
accept them into deleted files). Checks the server is Hindsight (once per client), ensures the
bank (once per process), redacts every item once more, then ``POST …/memories``. A refused
key is kept as one line that says to check ``HINDSIGHT_API_KEY`` (``refusal``); every failure
is the client's ``HindsightError``, which the queue sorts into retry, split or failed.

Two ways to send, both safe to repeat after a lost reply:

- **async** (the default) with the batch's client-made ``operation_id``: the server queues the
  batch and its worker indexes it a moment later; re-sending the same operation creates no
  new work.
- **sync**, for a batch a ``%recall``/``%%reflect`` is waiting on (``for_read``): the server
  answers once the memories are searchable, so the read need not wait for its worker. The
  server ignores ``operation_id`` here, so this is only done when every item carries its own
  ``document_id`` and none appends (``idempotent``): re-sending a document id replaces that
  document, so a re-send after a lost reply — sync or async, now or by the next kernel — stores
  each memory once. A server that refuses synchronous retains (``RETAIN_BATCH_ENABLED``) gets
  the async request at once, and no sync attempt again.

Every memory queued without a document id gets one of its own (``items.own_document_id``, kept
in the journal), and every send carries it: it is the memory's retain id (``RetainResult.ids``),
by which the user forgets or deletes it on the server, and a re-send of a batch that may have
gone out synchronously replaces it rather than doubling it. (Sent as one document, a batch
indexes about a third faster, but its memories could no longer be told apart.)

What a read waits for, and following the server until it has indexed what was sent, is
``indexing.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from .._api.banks import bank_settings, ensure_bank
from .._diagnosis import explain
from .._errors import HindsightError
from .._machine import DeletedDataWatch
from .items import SYNC_MAX_ITEMS, request_item

if TYPE_CHECKING:
    from .._api.client import Connection, HindsightClient
    from .._settings import HindsightSettings
    from .items import Batch, MemoryItem


class StoredDocuments(Protocol):
    """What the server is known to hold already (``_memory/versions.CellVersions``)."""

    def stored(self, bank_id: str, document_id: str | None) -> bool: ...

    def sent(self, bank_id: str, document_ids: Sequence[str | None]) -> None: ...


def idempotent(batch: Batch) -> bool:
    """Whether every item of ``batch`` has its own ``document_id`` and none appends."""
    return all(item.document_id and not item.appends for item in batch.items)


class BatchSender:
    """Delivers batches through the connection now in force (callable: ``sender(batch)``)."""

    def __init__(
        self,
        connection: Connection,
        settings: HindsightSettings,
        secrets: Callable[[], list[str]],
        stored: StoredDocuments | None = None,
        on_bank: Callable[[str], None] | None = None,
    ) -> None:
        """``on_bank``: told of each bank the first time this sender made sure it exists
        (reads never create one; the session seeds its mental models then)."""
        self._connection = connection
        self._on_bank = on_bank
        self._banks: set[str] = set()  # server#bank told to ``on_bank``
        self._stored = stored
        self._settings = settings
        self._secrets = secrets
        self._no_sync: set[str] = set()  # servers (base URLs) that refused a synchronous retain
        self._deleted_data = DeletedDataWatch()

    @property
    def client(self) -> HindsightClient:
        """The client of the connection now in force."""
        return self._connection.client

    def warm_up(self) -> None:
        """Import what the first send needs (httpx, this thread's connection pool); the worker
        runs it 0.3 s after a load, when the kernel is usually idle. A first send that did it
        during a busy cell took seconds: the worker gets the GIL back only every few
        milliseconds then, and an import reads hundreds of files, giving the GIL up at each.
        A local server is looked up now too (psutil, a process scan)."""
        self._connection.client.warm_up()
        self._deleted_data.deleted_data_dir(self._connection.client.base_url)

    def probe(self) -> None:
        """Ask the server who it is now (``GET /version``, which the first send asks anyway),
        so that a server not answering is known (``HindsightClient.unreachable_since``) before
        a memory waits for it, and the first ``%retain`` line can say so; a failure is only
        noted there."""
        with contextlib.suppress(HindsightError):
            self._connection.client.identity()

    def refusal(self, error: HindsightError) -> str:
        """Why the server refused a batch, as the one line the queue keeps with it (its
        notices, ``%hindsight status``): a refused key says to check ``HINDSIGHT_API_KEY``,
        anything else is the error's own message. A read that sends a batch itself gets the
        error as it is, and the magic explains it once."""
        if error.status_code in (401, 403):
            return explain(error, self._connection.client.base_url)
        return str(error)

    def __call__(self, batch: Batch) -> bool:
        """Send ``batch``; True when the server has already indexed it (a synchronous send)."""
        client = self._connection.client
        deleted = self._deleted_data.deleted_data_dir(client.base_url)
        if deleted is not None:  # it would accept them, into files already deleted
            raise HindsightError(
                "retain",
                f"the local server's data dir {deleted} was deleted while it ran, so what it "
                "stores now is lost when it stops: memories are kept here until it runs again",
                kind="connect",
            )
        client.identity()
        settings = self._settings
        bank_id = batch.route.bank_id
        if ensure_bank(client, bank_id, *bank_settings(settings)):
            self._bank_ensured(f"{client.base_url}#{bank_id}", bank_id)
        secrets = self._secrets()
        fresh = batch.items
        if self._stored is not None:  # a re-run cell's %retain: the server holds it already
            fresh = [i for i in batch.items if not self._stored.stored(bank_id, i.document_id)]
            if not fresh:
                return True  # nothing to send: all of it is stored and indexed
        sync = self._sync_wanted(client, batch)
        items = [request_item(item, secrets) for item in fresh]
        if sync:
            try:
                client.retain_batch(bank_id, items, async_=False)
                self._sent(bank_id, fresh)
                return True
            except HindsightError as error:
                if not error.refuses_items:
                    raise  # retried later, under the same document ids
                # refused before any work: the async request below has the final say
        client.retain_batch(bank_id, items, operation_id=batch.operation_id)
        self._sent(bank_id, fresh)
        if sync:  # async took what sync refused: this server does not do synchronous retains
            self._no_sync.add(client.base_url)
        return False

    def _bank_ensured(self, key: str, bank_id: str) -> None:
        if self._on_bank is not None and key not in self._banks:
            self._banks.add(key)
            self._on_bank(bank_id)

    def _sent(self, bank_id: str, items: Sequence[MemoryItem]) -> None:
        if self._stored is not None:
            self._stored.sent(bank_id, [item.document_id for item in items])

    def _sync_wanted(self, client: HindsightClient, batch: Batch) -> bool:
        return (
            batch.attempts == 0
            and batch.error is None  # never tried, in this kernel or an earlier one
            and batch.for_read
            and len(batch.items) <= SYNC_MAX_ITEMS
            and client.base_url not in self._no_sync
            and idempotent(batch)
        )
