"""What the queue carries and how it groups it: a memory, its route, batches and their retries.

``MemoryItem`` is one memory (its time: ``_text.local_timestamp``), cheap to build on the kernel
thread; ``form_batches`` groups pending items into requests and ``halve`` splits a refused one.
The pydantic models of the server's replies live in ``_api/replies.py``, imported on first use
so that ``%load_ext`` stays cheap.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._capture.autoretain import AUTORETAIN
from .._capture.entities import entities_of
from .._capture.redact import redact
from .._capture.transcript import count_cells
from .._enums import StrEnum
from .._errors import PUBLIC, Error
from .._text import encodable

# How many memories go together, in one place: the queue sends once SEND_AT_ITEMS wait (or
# after its window), one request carries at most MAX_BATCH_ITEMS, and a batch a read waits
# on is sent synchronously (the server extracts before it replies) up to SYNC_MAX_ITEMS.
SEND_AT_ITEMS = 16
MAX_BATCH_ITEMS = 256
SYNC_MAX_ITEMS = 16
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0


class UpdateMode(StrEnum):
    """How a memory meets its document's earlier text (Hindsight's ``update_mode``): replace
    it (the server's default, sent as no mode) or append to it (a kernel's transcript)."""

    REPLACE = "replace"
    APPEND = "append"


@dataclass(slots=True)
class MemoryItem:
    """One memory to retain; cheap to build on the kernel thread (no validation here)."""

    content: str
    timestamp: str
    context: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] | None = None
    document_id: str | None = None
    update_mode: UpdateMode | None = None
    entities: tuple[str, ...] = ()  # what it is about (``_capture/entities.py``)
    parts: int = 1  # how many queued memories this item carries (appends get merged)
    journal_ids: tuple[int, ...] = ()  # its rows in the journal (a tuple: not tracked by the GC)

    def merge_append(self, other: MemoryItem) -> bool:
        """Fold a later append to the same document into this item; False if not possible."""
        if not (self.appends and other.appends):
            return False
        self.content = f"{self.content}\n\n{other.content}"
        self.metadata = {**self.metadata, **other.metadata}  # the later cells cover the earlier
        self.parts += other.parts
        self.journal_ids = (*self.journal_ids, *other.journal_ids)
        return True

    @property
    def appends(self) -> bool:
        """Whether it is appended to its document (so it has no document of its own)."""
        return self.update_mode == UpdateMode.APPEND

    def to_json(self) -> dict[str, Any]:
        """The wire form: only the fields that are set."""
        body: dict[str, Any] = {"content": self.content, "timestamp": self.timestamp}
        if self.context:
            body["context"] = self.context
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        if self.tags:
            body["tags"] = list(self.tags)
        if self.document_id:
            body["document_id"] = self.document_id
        if self.update_mode:
            body["update_mode"] = self.update_mode
        if self.entities:  # taken literally: a variable's name is not merged into a look-alike
            body["entities"] = [{"text": name} for name in self.entities]
            body["resolve_entities"] = False
        return body

    def stored(self) -> dict[str, Any]:
        """The form the spool and the journal keep: the wire form, and how many queued
        memories it carries when appends were merged into it."""
        data = self.to_json()
        if self.parts > 1:
            data["parts"] = self.parts
        return data

    @classmethod
    def from_stored(cls, data: dict[str, Any], journal_ids: tuple[int, ...] = ()) -> MemoryItem:
        """The item ``stored`` kept (``journal_ids``: its rows, when read from the journal)."""
        tags = data.get("tags")
        return cls(
            content=data["content"],
            timestamp=data["timestamp"],
            context=data.get("context"),
            metadata=dict(data.get("metadata") or {}),
            tags=tuple(tags) if tags else None,
            document_id=data.get("document_id"),
            update_mode=UpdateMode(data["update_mode"]) if data.get("update_mode") else None,
            entities=tuple(str(e["text"]) for e in data.get("entities") or ()),
            parts=int(data.get("parts") or 1),
            journal_ids=journal_ids,
        )


OWN_ID_PREFIX = "hm-"  # marks the document ids made here (a memory's retain id)


_id_stem: tuple[int, str, Iterator[int]] = (-1, "", itertools.count())  # (pid, stem, counter)


def own_document_id(update_mode: UpdateMode | None) -> str | None:
    """A new document id for a memory queued without one (none for an append: it needs its
    document's). Made when the memory is queued and kept in the journal with it.

    ``hm-<random>-<n>``: one random stem per process (a forked child makes its own) and a
    counter, because ``uuid4`` per memory asks the OS for randomness, a call that releases
    the GIL on the kernel thread and lets the worker keep it.
    """
    global _id_stem
    if update_mode == UpdateMode.APPEND:
        return None
    pid, stem, counter = _id_stem
    if pid != os.getpid():
        pid, stem, counter = os.getpid(), f"{OWN_ID_PREFIX}{uuid.uuid4().hex}-", itertools.count(1)
        _id_stem = (pid, stem, counter)
    return f"{stem}{next(counter)}"


@functools.lru_cache(maxsize=256)
def _safe_value(value: str, secrets: tuple[str, ...]) -> str:
    """A metadata value redacted and encodable; cached, because the same few values (the
    notebook, the kernel session, the source) come with every memory of a kernel."""
    return redact(encodable(value), secrets)


def new_item(
    content: str,
    *,
    timestamp: str,
    context: str,
    metadata: dict[str, str],
    tags: Sequence[str],
    secrets: Sequence[str],
    document_id: str | None = None,
    update_mode: UpdateMode | None = None,
    entities: Sequence[str] = (),
) -> MemoryItem:
    """A memory ready to queue: secrets redacted in every text it carries (content, context,
    tags, metadata, entities: all of them reach the journal and the server), every text safe
    to send as UTF-8."""
    hidden = tuple(secrets)
    return MemoryItem(
        content=redact(encodable(content), hidden),
        timestamp=timestamp,
        context=_safe_value(context, hidden),
        metadata={key: _safe_value(value, hidden) for key, value in metadata.items()},
        tags=tuple(_safe_value(tag, hidden) for tag in tags) or None,
        document_id=document_id,
        update_mode=update_mode,
        entities=tuple(_safe_value(name, hidden) for name in entities),
    )


def request_item(item: MemoryItem, secrets: Sequence[str]) -> dict[str, Any]:
    """``item`` as a retain request carries it: its text redacted once more (a secret set
    after it was queued), with the entities it is about (``_capture/entities.py``): what a
    cell names, found when it ran, or a ``%retain`` text's files and terms."""
    body = item.to_json()
    for name in ("content", "context"):
        if isinstance(body.get(name), str):
            body[name] = redact(body[name], secrets)
    if body.get("tags"):
        body["tags"] = [redact(tag, secrets) for tag in body["tags"]]
    texts = () if is_transcript(item) else (item.content,)
    names = entities_of(texts, known=item.entities)
    if names:
        body["entities"] = [{"text": redact(name, secrets)} for name in names]
        body["resolve_entities"] = False
    return body


class QueueClosedError(Error):
    """Raised by ``enqueue`` after the queue was closed."""

    __module__ = PUBLIC

    def __init__(self) -> None:
        super().__init__(
            "Hindsight retain queue is closed. Its session was closed: retain in a new one "
            "(in a notebook, %reload_ext hindsight_magic)."
        )


class QueueFullError(Error):
    """Too many memories waiting in memory while the journal is off or cannot be written."""

    __module__ = PUBLIC


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
    for_read: bool = False  # a read waits on its bank: sent synchronously when it can be

    @property
    def count(self) -> int:
        """How many queued memories the batch carries."""
        return sum(item.parts for item in self.items)

    @property
    def journal_ids(self) -> list[int]:
        """The journal rows behind this batch."""
        return [row for item in self.items for row in item.journal_ids]

    @property
    def carries_memories(self) -> bool:
        """Whether the batch carries a memory the user retained (not only transcripts): a read
        waits for those, never for transcripts."""
        return not all(is_transcript(item) for item in self.items)

    @property
    def cells(self) -> int:
        """How many notebook cells the batch's transcripts hold."""
        return count_cells(item.content for item in self.items if is_transcript(item))


def is_transcript(item: MemoryItem) -> bool:
    """Whether ``item`` is an auto-retained transcript rather than a memory the user retained."""
    return item.metadata.get("source") == AUTORETAIN


# the back-off's own random numbers: drawing from the module's shared generator would move the
# user's `random.seed(…)` sequence whenever the worker retries, so a seeded notebook would not
# give the same numbers twice
JITTER = random.Random()


@dataclass(frozen=True)
class Backoff:
    """Capped exponential back-off with jitter: try n waits min(cap, base·2ⁿ⁻¹) × [0.5, 1)."""

    base_s: float = BACKOFF_BASE_S
    cap_s: float = BACKOFF_CAP_S
    jitter: Callable[[], float] = JITTER.random

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
class NotAnswering:
    """The server stopped answering (no connection could be made), as the session last saw it:
    what a ``%retain`` line says about the memories it queued."""

    url: str
    first: bool  # the first line since it stopped answering: said in full, later ones short
    waiting: int  # memories held until it is back (the ones just queued included)
    journal: bool  # held in the journal (else in this kernel's memory only)
    journal_off: bool = False  # the setting turned the journal off (else it is down for now)


@dataclass(frozen=True)
class FlushOutcome:
    """What a flush left behind when it returned; ``already_stored``: memories it did not
    send because the server held them already (a re-run cell's ``%retain`` lines)."""

    settled: bool
    pending: int
    retrying: int
    failed: int
    already_stored: int = 0


def form_batches(
    entries: Iterable[tuple[Route, MemoryItem]], max_items: int = MAX_BATCH_ITEMS
) -> list[Batch]:
    """Runs of consecutive same-route items of one kind, at most ``max_items`` per batch.

    Transcripts and the user's own memories never share a batch: a read sends its bank's
    memories at once (synchronously, when it can) and does not wait for transcripts.

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
        kind_changes = current is not None and is_transcript(current.items[0]) != is_transcript(
            item
        )
        if (
            current is None
            or full
            or current.route != route
            or same_doc is not None
            or kind_changes
        ):
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
