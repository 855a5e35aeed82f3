"""The retain queue's data: routes, batches, counters, and how pending items become batches."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .items import MemoryItem

if TYPE_CHECKING:
    from .stored import JournalRow

MAX_BATCH_ITEMS = 256
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0


class QueueClosedError(RuntimeError):
    """Raised by ``enqueue`` after the queue was closed."""

    def __init__(self) -> None:
        super().__init__("Hindsight retain queue is closed.")


class QueueFullError(RuntimeError):
    """Too many memories waiting in memory (only without a journal)."""


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

    @property
    def journal_ids(self) -> list[int]:
        """The journal rows behind this batch."""
        return [row for item in self.items for row in item.journal_ids]


@dataclass(frozen=True)
class Backoff:
    """Capped exponential back-off with jitter: try n waits min(cap, base·2ⁿ⁻¹) × [0.5, 1)."""

    base_s: float = BACKOFF_BASE_S
    cap_s: float = BACKOFF_CAP_S
    jitter: Callable[[], float] = random.random

    def delay(self, attempts: int) -> float:
        """Seconds to wait after the ``attempts``-th failed try."""
        growth: float = 2.0 ** (attempts - 1)
        return min(self.cap_s, self.base_s * growth) * (0.5 + self.jitter() / 2)


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
    journal: str | None = None
    journal_problem: str | None = None  # why memories are held in memory only, for now


@dataclass(frozen=True)
class FlushOutcome:
    """What a flush left behind when it returned."""

    settled: bool
    pending: int
    retrying: int
    failed: int


def form_batches(
    entries: Iterable[tuple[Route, MemoryItem]], max_items: int = MAX_BATCH_ITEMS
) -> list[Batch]:
    """Runs of consecutive same-route items, at most ``max_items`` per batch.

    The server refuses two items with one ``document_id`` in an async batch, so a later append
    to a document already in the batch is folded into that item; any other repeat of a
    document starts a new batch.
    """
    batches: list[Batch] = []
    current: Batch | None = None
    documents: dict[str, MemoryItem] = {}
    for route, item in entries:
        full = current is not None and len(current.items) >= max_items
        same_doc = documents.get(item.document_id) if item.document_id else None
        if (
            same_doc is not None
            and current is not None
            and not full
            and current.route == route
            and same_doc.merge_append(item)
        ):
            continue
        if current is None or full or current.route != route or same_doc is not None:
            current = Batch(route, [])
            batches.append(current)
            documents = {}
        current.items.append(item)
        if item.document_id:
            documents[item.document_id] = item
    return batches


def halve(batch: Batch) -> list[Batch]:
    """The two halves of a refused batch, each a new operation (so one bad item is found)."""
    middle = len(batch.items) // 2
    return [Batch(batch.route, batch.items[:middle]), Batch(batch.route, batch.items[middle:])]


def batches_from_rows(rows: Iterable[JournalRow]) -> list[Batch]:
    """Journal rows regrouped into their batches, each under its stored ``operation_id``.

    Appends to one document are merged again (as when the batch was first formed), and a
    refused batch keeps the server's reason.
    """
    groups: dict[str, list[tuple[Route, MemoryItem]]] = {}
    reasons: dict[str, str | None] = {}
    for row in rows:
        key = row.operation_id or f"row-{row.id}"
        groups.setdefault(key, []).append((Route(row.bank_id, row.tags), row.item))
        reasons.setdefault(key, row.error)
    batches = []
    for operation_id, entries in groups.items():
        for batch in form_batches(entries, len(entries)):
            batch.operation_id = operation_id
            batch.error = reasons[operation_id] or "left by an earlier kernel"
            batches.append(batch)
    return batches
