"""The panel's memory browser: search, the Recent list's indexing, the last retained cells,
refreshes,
and the curation buttons (forget, restore, delete with a confirmation, the Forgotten list).

Kernel-thread entry points (``search``, ``refresh_model``, ``toggle_document``,
``load_document``, ``forget``, ``restore``, ``ask_delete``, ``confirm_delete``,
``cancel_delete``, ``load_forgotten``) only set state and schedule a job on the session's
worker (``HindsightSession.in_background``; everything here calls the session's public methods,
the ones the ``hm`` functions call); every
request to the server happens in those jobs or in ``poll``, which the panel hub's worker job
calls while a panel is open. What the panel shows of it are immutable views (``SearchView``,
``DocumentView``, ``CurationView``), swapped whole, so the hub's snapshot reads them without a
lock.

- **Search** flushes the queue, waits (stepwise, never sleeping on the worker) until this
  kernel's sent memories for the bank are indexed or ``SEARCH_WAIT_S`` passed, then recalls.
- **Recent**: ``poll`` asks the server, at most every ``POLL_EVERY_S``, about operations the
  feed saw accepted, and marks them indexed or failed.
- **Last retained cells**: what auto-retain sent last (each cell is a document of its own), as
  the server stores it, fetched when a panel opens and again once newer cells are indexed.
- **Model refresh**: the server's refresh endpoint; the cache reloads when its operation ends.
- **Curation**: a click marks its row at once (``forgetting…``), the worker asks the server
  (``HindsightSession.forget``/``restore_memory``/``delete``/``forgotten``, what ``hm.forget``
  and the magics call), then marks the row with what happened (``forgotten``, ``restored``,
  ``deleted``, ``cancelled``) and lists the forgotten memories again; a failure puts the row
  back as it was and becomes the panel's one-line note. Marks are keyed by memory id (search
  results, the Forgotten list), retain id (Recent rows) or document id (a delete), so every list
  showing the same memory agrees. A delete first shows what would go (``DeleteView``); only its
  Confirm deletes.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from ..._delivery.recent import (
    CANCELLED,
    DELETED,
    FAILED,
    FORGOTTEN,
    INDEXED,
    QUEUED,
    RETRYING,
    SENT,
    RecentItem,
)
from ..._errors import HindsightError, InputError
from ..._memory.curation import CURATED_TYPES, OWN_ID
from ..._memory.provenance import SEPARATOR, provenance_line, relevance_text
from ..._operations import MAX_RESULTS, PANEL_SEARCH, RecallRequest
from ..._settings import MINE
from ..._text import one_line, plural

if TYPE_CHECKING:
    from ..._memory.curation import Outcome
    from ..._memory.results import RecallResult
    from .live import LiveSession


DOC_PREVIEW_CHARS = 1500


@dataclass(frozen=True)
class ResultRow:
    """One recalled memory as the results table shows it, with the ids its buttons act on."""

    text: str
    type: str
    provenance: str
    tags: str
    relevance: str  # what the rows are ordered by (``RecalledMemory.relevance``)
    memory_id: str = ""
    document_id: str = ""
    layer: str = MINE

    @property
    def curable(self) -> bool:
        """Whether the server curates this memory: a fact with an id (an observation is derived
        from facts, so the server refuses to forget it: its sources are forgotten instead) of
        the session's own bank (a layer is only read)."""
        return bool(self.memory_id) and self.type in ("", *CURATED_TYPES) and self.layer == MINE


@dataclass(frozen=True)
class SearchView:
    """The search box's outcome: a message line and the result rows; ``failed`` when the
    search could not be made (the line says why), so the panel never reads its own words."""

    query: str = ""
    busy: bool = False
    message: str = ""
    rows: tuple[ResultRow, ...] = ()
    failed: bool = False


@dataclass(frozen=True)
class DocumentView:
    """The cells auto-retain sent last, as the server stored them."""

    document_id: str = ""
    text: str = ""
    message: str = "Loading…"
    full: bool = False  # "show all" instead of the first DOC_PREVIEW_CHARS

    @property
    def shown(self) -> str:
        """The text to show: all of it, or its beginning with ``…``."""
        if self.full or len(self.text) <= DOC_PREVIEW_CHARS:
            return self.text
        return self.text[:DOC_PREVIEW_CHARS].rstrip() + " …"

    @property
    def truncated(self) -> bool:
        """Whether there is more than the preview."""
        return len(self.text) > DOC_PREVIEW_CHARS


# What the panel marks a row with after a click (keyed by memory, retain or document id); the
# delivery states of ``_delivery.recent`` (forgotten, cancelled, deleted) end a curation.
FORGETTING, RESTORING, DELETING, RESTORED = "forgetting…", "restoring…", "deleting…", "restored"
BUSY = (FORGETTING, RESTORING, DELETING)
MAX_MARKS = 1000  # the oldest marks are dropped beyond this (rows that old are long gone)
MAX_FORGOTTEN = 50  # rows of the Forgotten list (the server's newest first)
LISTING = "Listing forgotten memories…"


@dataclass(frozen=True)
class ForgottenView:
    """The scope's forgotten memories as the server last listed them (the Forgotten section)."""

    message: str = LISTING
    rows: tuple[tuple[str, str], ...] = ()  # (memory id, its line), newest first
    loaded: bool = False
    failed: bool = False  # the server could not list them (the message says why)


@dataclass(frozen=True)
class DeleteView:
    """A delete waiting for its confirmation: what deleting the document would remove.

    ``ready`` once the server listed it: only then does Confirm delete anything, and only the
    document this preview names (``document_id``)."""

    document_id: str = ""  # '' when no delete is pending
    message: str = ""
    items: tuple[str, ...] = ()
    ready: bool = False
    deleting: bool = False  # confirmed: no Cancel, no other delete until it ends


@dataclass(frozen=True)
class CurationView:
    """What the curation buttons did: each row's mark, the Forgotten list, a pending delete."""

    marks: tuple[tuple[str, str], ...] = ()  # (memory, retain or document id, mark), oldest first
    forgotten: ForgottenView = field(default_factory=ForgottenView)
    delete: DeleteView = field(default_factory=DeleteView)

    @cached_property
    def _by_key(self) -> dict[str, str]:
        return dict(self.marks)

    def mark(self, key: str | None) -> str:
        """The mark of ``key`` ('' when none was clicked)."""
        return self._by_key.get(key or "", "")

    def result_mark(self, row: ResultRow) -> str:
        """A search result's mark: its document's delete wins over the memory's own mark."""
        document = self.mark(row.document_id)
        return document if document in (DELETING, DELETED) else self.mark(row.memory_id)

    def recent_state(self, item: RecentItem) -> str:
        """A Recent row's state: what the queue knows of a cancel or a delete, else the mark
        of its retain id, else its delivery state."""
        if item.state in (CANCELLED, DELETED):
            return item.state
        return self.mark(item.document_id) or item.state


def recent_curable(item: RecentItem) -> bool:
    """Whether a Recent row gets a Forget button: a memory under a retain id of its own
    (``hm-…``: one the user retained, or one auto-retained cell), which the curation can
    cancel while queued."""
    return bool(item.document_id and OWN_ID.fullmatch(item.document_id))


def result_rows(result: RecallResult) -> tuple[ResultRow, ...]:
    """The table rows of a recall (best first, at most ``MAX_RESULTS``)."""
    rows = []
    for memory in list(result)[:MAX_RESULTS]:
        where = provenance_line(memory)
        if result.layers:  # the session reads layers: say which one each memory is from
            where = SEPARATOR.join(part for part in (f"layer: {memory.layer}", where) if part)
        rows.append(
            ResultRow(
                text=memory.text,
                type=memory.type or "",
                provenance=where,
                tags=", ".join(memory.tags or []),
                relevance=relevance_text(memory),
                memory_id=memory.id or "",
                document_id=memory.document_id or "",
                layer=memory.layer,
            )
        )
    return tuple(rows)


SEARCH_WAIT_S = 15.0  # the user's memories sent and indexed, as a %recall waits (transcripts: not)
STEP_S = 0.2  # a waiting search looks again this often
POLL_EVERY_S = 1.0  # operation status, while a panel is open
MAX_POLLS = 8  # operations asked about per poll
MODEL_WATCH_S = 120.0  # how long a model refresh is followed
DOC_MAX_CHARS = 100_000
LAST_CELLS = 8  # documents shown as the last retained cells
NO_DOCUMENT = "Nothing auto-retained in this session yet."
SEARCHING = "Searching for “{}”…"
STILL_INDEXING = "still being indexed: search again in a moment"


class MemoryBrowser:
    """State and worker jobs of the panel's browser sections (one per session, in its hub)."""

    def __init__(self, session: LiveSession, note: Callable[[str], None]) -> None:
        self._session = session
        self._note = note
        self._lock = threading.Lock()
        self._generation = 0
        self.search_view = SearchView()
        self.document_view = DocumentView()
        self._doc_marker: tuple[str, int, float] | None = None
        self._polled_at = float("-inf")
        self._model_ops: dict[str, tuple[str, str, float]] = {}  # op → bank, model, deadline
        self._marks: dict[str, str] = {}  # the rows' marks (under the lock), oldest first
        self.curation_view = CurationView()

    def _recent(self) -> tuple[RecentItem, ...]:
        """The Recent feed, newest first (none once the session is gone)."""
        if self._session.closed:
            return ()
        return self._session().status(check_server=False, wait_models=False).recent

    def _submit(self, job: Callable[[], object], delay_s: float = 0.0) -> None:
        self._session.in_background(job, delay_s)

    # -- kernel thread ----------------------------------------------------------------------

    def search(self, boxes: Mapping[str, str]) -> None:
        """Search button: recall on the worker what the search boxes ask (their text by field:
        ``query``, ``as_of``; read as ``RecallRequest.parsed`` reads them, ``tags:a,b``
        words leading the query for the fields ``PANEL_SEARCH`` names); a newer search
        replaces this one. Bad input (a WHEN ``%recall --as-of`` would refuse) is said in the
        search's line."""
        with self._lock:
            self._generation += 1  # a search still running is forgotten
            generation = self._generation
            others = dict(boxes)
            text = others.pop("query", "")
            if not text.strip():
                self.search_view = SearchView(message="Type what to search for, then Search.")
                return
            try:
                # made, it is checked: a bad WHEN is said now, not after the wait for indexing
                request = RecallRequest.parsed(text, PANEL_SEARCH, **others)
            except InputError as error:
                self.search_view = SearchView(text.strip(), False, one_line(str(error), 300))
                return
            self.search_view = SearchView(request.query, True, SEARCHING.format(request.query))
        deadline = time.monotonic() + SEARCH_WAIT_S
        step = functools.partial(self._search_step, generation, request, deadline, True)
        self._submit(step)

    def toggle_document(self) -> None:
        """Show all of the session document, or its beginning again."""
        with self._lock:
            self.document_view = replace(self.document_view, full=not self.document_view.full)

    def load_document(self) -> None:
        """Fetch the session document on the worker (a panel opened)."""
        self._doc_marker = None
        self._submit(self.fetch_document)

    def refresh_model(self, model_id: str) -> None:
        """A model's Refresh button: ask the server to refresh it (on the worker)."""
        self._note(f"Refreshing mental model {model_id}…")
        self._submit(functools.partial(self._start_refresh, model_id))

    def forget(self, key: str) -> None:
        """A row's Forget button: forget the memory ``key`` (a memory id, or a Recent row's retain
        id: cancelled if still queued) on the worker; the row shows ``forgetting…`` meanwhile."""
        previous = self._begin(key, FORGETTING)
        if previous is None:
            return
        # a Recent row no longer in the queue: its memories are sent and indexed first, step by
        # step, so the curation's own wait for them never holds the worker (nor a push)
        wait = any(
            item.document_id == key and item.state not in (QUEUED, RETRYING, FAILED)
            for item in self._recent()
        )
        deadline = time.monotonic() + SEARCH_WAIT_S
        self._submit(functools.partial(self._forget_step, key, previous, deadline, wait))

    def restore(self, key: str) -> None:
        """A Restore button: bring the forgotten memory ``key`` back, on the worker."""
        previous = self._begin(key, RESTORING)
        if previous is not None:
            self._submit(functools.partial(self._restore_now, key, previous))

    def ask_delete(self, document_id: str) -> None:
        """A result's Delete… button: list on the worker what deleting its document would
        remove; nothing is deleted before Confirm."""
        if not document_id:
            return
        with self._lock:
            if self.curation_view.delete.deleting:
                return  # one delete at a time (a preview still loading is replaced)
            message = f"Listing what deleting document {document_id} would remove…"
            self._publish(delete=DeleteView(document_id, message))
        self._submit(functools.partial(self._preview_delete, document_id))

    def confirm_delete(self, document_id: str) -> None:
        """Confirm delete: delete ``document_id`` for good, if it is the one the shown preview
        names (a click on a stale or half-loaded preview deletes nothing)."""
        with self._lock:
            pending = self.curation_view.delete
            if not (pending.ready and pending.document_id == document_id):
                return
            previous = self._marks.get(document_id, "")
            self._set_marks({document_id: DELETING})
            self._publish(delete=replace(pending, ready=False, deleting=True, message="Deleting…"))
        self._submit(functools.partial(self._delete_now, document_id, previous))

    def cancel_delete(self) -> None:
        """Cancel: drop the delete preview (a delete already confirmed goes on)."""
        with self._lock:
            if not self.curation_view.delete.deleting:
                self._publish(delete=DeleteView())

    def load_forgotten(self) -> None:
        """List the scope's forgotten memories on the worker (a panel opened, the section was
        opened, or a curation ended)."""
        self._submit(self.fetch_forgotten)

    def _begin(self, key: str, busy: str) -> str | None:
        """Mark ``key`` busy; its mark before (to put back on a failure), or None when it is
        already busy (a double click) or there is nothing to act on."""
        with self._lock:
            previous = self._marks.get(key, "")
            if not key or previous in BUSY:
                return None
            self._set_marks({key: busy})
            return previous

    # -- worker thread ----------------------------------------------------------------------

    def _search_step(
        self, generation: int, request: RecallRequest, deadline: float, first: bool
    ) -> None:
        """One step of a search, on the worker: as ``%recall`` does, send the user's memories and
        wait (never sleeping on the worker: the step comes back) until the server has indexed
        them; auto-retain's transcripts are not waited for, and the message says how many
        cells are not searchable yet."""
        if generation != self._generation:
            return  # a newer search replaced this one
        query = request.query
        try:
            session = self._session()
            # sent (with the cells not yet in a transcript) and indexed, or still not?
            waiting = session.memories_indexing(send=first)
            if waiting and time.monotonic() < deadline:
                self._show_search(generation, SearchView(query, True, SEARCHING.format(query)))
                step = functools.partial(self._search_step, generation, request, deadline, False)
                self._submit(step, STEP_S)
                return
            result = session.recall(request)  # on the worker: it does not wait again
        except Exception as error:  # shown as one line in the panel
            view = SearchView(query, False, f"Search failed: {self._failure(error)}", failed=True)
        else:
            message = f"“{query}”: {result.headline()}"
            if waiting:  # the server is slow: say so, rather than "nothing found"
                message += f" (memories {STILL_INDEXING})"
            view = SearchView(query, False, message, result_rows(result))
            found = [key for row in view.rows for key in (row.memory_id, row.document_id)]
            self._server_says(dict.fromkeys(found, ""))
        self._show_search(generation, view)

    def _failure(self, error: Exception) -> str:
        """One line for ``error``: what failed and, for the server's errors, what it means."""
        if isinstance(error, HindsightError):
            return one_line(self._session().explain(error), 300)
        if isinstance(error, InputError):  # its message already says what to do
            return one_line(str(error), 300)
        return one_line(f"{type(error).__name__}: {error}", 300)

    def _show_search(self, generation: int, view: SearchView) -> None:
        with self._lock:
            if generation == self._generation:
                self.search_view = view

    def check_operations(self) -> None:
        """Ask about this kernel's memories the server accepted and is still indexing (the Recent
        list follows); transcripts are followed by the session's own watch."""
        self._session().memories_indexing(send=False)

    def poll(self) -> None:
        """The hub's tick (a panel is open): operations, model refreshes, a newer document."""
        now = time.monotonic()
        if now - self._polled_at < POLL_EVERY_S:
            return
        self._polled_at = now
        self.check_operations()
        self._check_model_refreshes(now)
        if self._document_marker() != self._doc_marker:
            self.fetch_document()

    def document_ids(self) -> list[str]:
        """The documents auto-retain sent last (each cell, or part of a cell, is a document of
        its own): the newest ``LAST_CELLS`` of them, oldest first."""
        sent = [
            str(item.document_id)
            for item in self._recent()  # newest first
            if item.transcript and item.document_id and item.state in (SENT, INDEXED)
        ]
        return list(reversed(sent[:LAST_CELLS]))

    def document_id(self) -> str:
        """What the session document view names: the last cells' documents (or none yet)."""
        ids = self.document_ids()
        return ids[0] if len(ids) == 1 else (f"{ids[0]} … ({len(ids)} documents)" if ids else "")

    def _document_marker(self) -> tuple[str, int, float]:
        ids = self.document_ids()
        parts = [
            item.changed_at
            for item in self._recent()
            if item.document_id in ids and item.state == INDEXED
        ]
        return ",".join(ids), len(parts), max(parts, default=0.0)

    def fetch_document(self) -> None:
        """Fetch the last retained cells now (the worker, or a terminal's text snapshot)."""
        marker = self._document_marker()
        self._doc_marker = marker  # after a failure too: the next try is on news or Reload
        ids, texts = self.document_ids(), []
        try:
            session = self._session()
            texts = [session.document(document_id) or "" for document_id in ids]
        except Exception as error:
            message = f"Could not load the last cells: {self._failure(error)}"
        else:
            text = "\n\n".join(t for t in texts if t)[:DOC_MAX_CHARS]
            count = plural(len([t for t in texts if t]), "document", "documents")
            message = f"{len(text):,} characters in {count}" if text else NO_DOCUMENT
        text = "\n\n".join(t for t in texts if t)[:DOC_MAX_CHARS]
        with self._lock:  # keeps a "show all" clicked meanwhile
            full = self.document_view.full
            self.document_view = DocumentView(self.document_id(), text, message, full)

    def _start_refresh(self, model_id: str) -> None:
        try:
            session = self._session()
            bank = session.scope.bank_id
            operation_id = session.refresh_model(model_id)
        except Exception as error:
            self._note(f"Refresh of {model_id} failed: {self._failure(error)}")
            return
        if operation_id is None:
            self._note(f"Mental model not found: {model_id}")
        elif operation_id:
            self._model_ops[operation_id] = (bank, model_id, time.monotonic() + MODEL_WATCH_S)

    def _check_model_refreshes(self, now: float) -> None:
        session = self._session()
        for operation_id, (bank, model_id, deadline) in list(self._model_ops.items()):
            ended = session.operation_ended(bank, operation_id)
            if ended is None and now < deadline:
                continue  # still at it, or the server is away: ask again at the next poll
            del self._model_ops[operation_id]
            session.reload_models(wait=False)
            if ended:
                self._note(f"Refresh of mental model {model_id} {ended}.")
            elif ended is None:
                self._note(f"Mental model {model_id} is still being refreshed on the server.")
            else:
                self._note(f"Mental model {model_id} refreshed.")

    # -- curation (worker thread) -------------------------------------------------------------

    def _forget_step(self, key: str, previous: str, deadline: float, wait: bool) -> None:
        try:
            session = self._session()
            if wait and time.monotonic() < deadline and session.memories_indexing(send=True):
                step = functools.partial(self._forget_step, key, previous, deadline, True)
                self._submit(step, STEP_S)
                return
            outcome = session.forget(key)
        except Exception as error:  # the row as it was, and one line saying why
            self._undo(key, previous, f"Forget failed: {self._failure(error)}")
            return
        # a retain id still queued was cancelled there: no memory of it reached the server
        self._curated(key, FORGOTTEN if outcome.memory_ids else CANCELLED, outcome)

    def _restore_now(self, key: str, previous: str) -> None:
        try:
            outcome = self._session().restore_memory(key)
        except Exception as error:
            self._undo(key, previous, f"Restore failed: {self._failure(error)}")
            return
        self._curated(key, RESTORED, outcome)

    def _preview_delete(self, document_id: str) -> None:
        try:
            outcome = self._session().delete(document_id, yes=False)
        except Exception as error:
            with self._lock:
                if self.curation_view.delete.document_id == document_id:
                    self._publish(delete=DeleteView())
            self._note(f"Delete failed: {self._failure(error)}")
            return
        items = tuple(one_line(item, 160) for item in outcome.items)
        more = len(outcome.memory_ids) - len(items)
        if more > 0:
            items += (f"… and {plural(more, 'more memory', 'more memories')}",)
        view = DeleteView(document_id, one_line(outcome.headline, 300), items, ready=True)
        with self._lock:
            if self.curation_view.delete.document_id == document_id:  # not cancelled meanwhile
                self._publish(delete=view)

    def _delete_now(self, document_id: str, previous: str) -> None:
        try:
            outcome = self._session().delete(document_id, yes=True)
        except Exception as error:
            with self._lock:
                self._publish(delete=DeleteView())
            self._undo(document_id, previous, f"Delete failed: {self._failure(error)}")
            return
        with self._lock:
            self._publish(delete=DeleteView())
        self._curated(document_id, DELETED, outcome)

    def _curated(self, key: str, mark: str, outcome: Outcome) -> None:
        """A curation ended: mark ``key`` and every memory and document it named, say so, and
        list the forgotten memories again (the restored ones leave the list at once)."""
        ids = (key, *outcome.memory_ids, *outcome.document_ids)
        with self._lock:
            self._set_marks(dict.fromkeys(ids, mark))
            forgotten = self.curation_view.forgotten
            if mark == RESTORED:
                rows = tuple(row for row in forgotten.rows if row[0] not in ids)
                self._publish(forgotten=replace(forgotten, rows=rows))
        self._note(one_line(outcome.headline, 300))
        self._submit(self.fetch_forgotten)

    def _server_says(self, marks: dict[str, str]) -> None:
        """The server just listed these memories (or documents) as they are now, which the
        marks a click left may no longer be: a search finds no forgotten memory (``''``), the
        Forgotten list holds only forgotten ones, and a ``%hindsight`` command may have changed
        either since. A curation still running keeps its mark."""
        with self._lock:
            news = {
                key: mark
                for key, mark in marks.items()
                if key and self._marks.get(key, "") not in BUSY and self._marks.get(key, "") != mark
            }
            if news:
                self._set_marks(news)

    def _undo(self, key: str, previous: str, message: str) -> None:
        with self._lock:
            self._set_marks({key: previous})
        self._note(message)

    def _set_marks(self, marks: dict[str, str]) -> None:
        """Set (or, with '', clear) marks and publish them; the caller holds the lock."""
        for key, mark in marks.items():
            self._marks.pop(key, None)  # re-inserted last: the newest survive the cap
            if mark:
                self._marks[key] = mark
        while len(self._marks) > MAX_MARKS:
            del self._marks[next(iter(self._marks))]
        self._publish(marks=tuple(self._marks.items()))

    def _publish(
        self,
        *,
        marks: tuple[tuple[str, str], ...] | None = None,
        forgotten: ForgottenView | None = None,
        delete: DeleteView | None = None,
    ) -> None:
        """Swap in a new ``CurationView`` with these parts changed (the caller holds the lock)."""
        view = self.curation_view
        self.curation_view = CurationView(
            view.marks if marks is None else marks,
            view.forgotten if forgotten is None else forgotten,
            view.delete if delete is None else delete,
        )

    def fetch_forgotten(self) -> None:
        """List the scope's forgotten memories now (the worker, or a terminal's snapshot)."""
        try:
            outcome = self._session().forgotten()
        except Exception as error:
            why = self._failure(error)
            view = ForgottenView(f"Could not list forgotten memories: {why}", failed=True)
        else:
            rows = tuple(zip(outcome.memory_ids, outcome.items, strict=False))[:MAX_FORGOTTEN]
            message = one_line(outcome.headline, 300).rstrip(":")
            if rows and (outcome.footer or len(outcome.memory_ids) > len(rows)):
                message += f"; the newest {len(rows)} are listed here"
            view = ForgottenView(message if message.endswith(".") else message + ".", rows, True)
            self._server_says({memory_id: FORGOTTEN for memory_id, _ in rows})
        with self._lock:
            self._publish(forgotten=view)
