"""The panel's memory browser: search, the Recent list's indexing, the session document, refreshes.

Kernel-thread entry points (``search``, ``refresh_model``, ``toggle_document``,
``load_document``) only set state and schedule a job on the session's worker (through its
``SessionView``, like everything here that touches the session); every request to the
server happens in those jobs or in ``poll``, which the panel hub's worker job calls while a
panel is open. What the panel shows of it are immutable views (``SearchView``,
``DocumentView``), swapped whole, so the hub's snapshot reads them without a lock.

- **Search** flushes the queue, waits (stepwise, never sleeping on the worker) until this
  kernel's sent memories for the bank are indexed or ``SEARCH_WAIT_S`` passed, then recalls.
- **Recent**: ``poll`` asks the server, at most every ``POLL_EVERY_S``, about operations the
  feed saw accepted, and marks them indexed or failed.
- **Session document**: what auto-retain sent, as the server stores it, fetched when a panel
  opens and again once a newer part of it is indexed.
- **Model refresh**: the server's refresh endpoint; the cache reloads when its operation ends.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..._api.errors import HindsightError
from ..._delivery.recent import INDEXED, SENT
from ..._memory.provenance import provenance_line
from ..._text import one_line

if TYPE_CHECKING:
    from ..._memory.results import RecallResult
    from ..._session import SessionView


MAX_RESULTS = 50


DOC_PREVIEW_CHARS = 1500


@dataclass(frozen=True)
class ResultRow:
    """One recalled memory as the results table shows it."""

    text: str
    type: str
    provenance: str
    tags: str
    score: str


@dataclass(frozen=True)
class SearchView:
    """The search box's outcome: a message line and the result rows."""

    query: str = ""
    busy: bool = False
    message: str = ""
    rows: tuple[ResultRow, ...] = ()


@dataclass(frozen=True)
class DocumentView:
    """This kernel's session document as the server stored it."""

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


def result_rows(result: RecallResult) -> tuple[ResultRow, ...]:
    """The table rows of a recall (best first, at most ``MAX_RESULTS``)."""
    rows = []
    for memory in list(result)[:MAX_RESULTS]:
        score = memory.scores.final if memory.scores else None
        rows.append(
            ResultRow(
                text=memory.text,
                type=memory.type or "",
                provenance=provenance_line(memory),
                tags=", ".join(memory.tags or []),
                score="" if score is None else f"{score:.3f}",
            )
        )
    return tuple(rows)


SEARCH_WAIT_S = 15.0  # the user's memories sent and indexed, as a %recall waits (transcripts: not)
STEP_S = 0.2  # a waiting search looks again this often
POLL_EVERY_S = 1.0  # operation status, while a panel is open
MAX_POLLS = 8  # operations asked about per poll
MODEL_WATCH_S = 120.0  # how long a model refresh is followed
DOC_MAX_CHARS = 100_000
NO_DOCUMENT = "Nothing auto-retained in this session yet."
SEARCHING = "Searching for “{}”…"
STILL_INDEXING = "still being indexed: search again in a moment"


class MemoryBrowser:
    """State and worker jobs of the panel's browser sections (one per session, in its hub)."""

    def __init__(self, session: SessionView, note: Callable[[str], None]) -> None:
        self._session = session
        self._note = note
        self._lock = threading.Lock()
        self._generation = 0
        self.search_view = SearchView()
        self.document_view = DocumentView()
        self._doc_marker: tuple[str, int, float] | None = None
        self._polled_at = float("-inf")
        self._model_ops: dict[str, tuple[str, str, float]] = {}  # op → bank, model, deadline

    def _submit(self, job: Callable[[], object], delay_s: float = 0.0) -> None:
        self._session.schedule(job, delay_s)

    # -- kernel thread ----------------------------------------------------------------------

    def search(self, query: str) -> None:
        """Search button: recall ``query`` on the worker (a newer search replaces this one)."""
        query = query.strip()
        with self._lock:
            self._generation += 1  # a search still running is forgotten
            generation = self._generation
            if not query:
                self.search_view = SearchView(message="Type what to search for, then Search.")
                return
            self.search_view = SearchView(query, True, SEARCHING.format(query))
        deadline = time.monotonic() + SEARCH_WAIT_S
        self._submit(functools.partial(self._search_step, generation, query, deadline, True))

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

    # -- worker thread ----------------------------------------------------------------------

    def _search_step(self, generation: int, query: str, deadline: float, first: bool) -> None:
        """One step of a search, on the worker: as ``%recall`` does, send the user's memories and
        wait (never sleeping on the worker: the step comes back) until the server has indexed
        them; auto-retain's transcripts are not waited for, and the message says how many
        cells are not searchable yet."""
        if generation != self._generation:
            return  # a newer search replaced this one
        session = self._session
        try:
            bank = session.scope.bank_id
            if first:
                session.process_autoretain()  # the cells not yet turned into a transcript
                session.request_memories()
            waiting = session.memories_waiting(bank) or session.follow_memories(bank)
            if waiting and time.monotonic() < deadline:
                self._show_search(generation, SearchView(query, True, SEARCHING.format(query)))
                step = functools.partial(self._search_step, generation, query, deadline, False)
                self._submit(step, STEP_S)
                return
            result = session.recall_now(query)  # the user's memories were sent and waited for
        except Exception as error:  # shown as one line in the panel
            view = SearchView(query, False, f"Search failed: {self._failure(error)}")
        else:
            message = f"“{query}”: {result.headline()}"
            if waiting:  # the server is slow: say so, rather than "nothing found"
                message += f" (memories {STILL_INDEXING})"
            view = SearchView(query, False, message, result_rows(result))
        self._show_search(generation, view)

    def _failure(self, error: Exception) -> str:
        """One line for ``error``: what failed and, for the server's errors, what it means."""
        if isinstance(error, HindsightError):
            return one_line(self._session.explain(error), 300)
        return one_line(f"{type(error).__name__}: {error}", 300)

    def _show_search(self, generation: int, view: SearchView) -> None:
        with self._lock:
            if generation == self._generation:
                self.search_view = view

    def check_operations(self) -> None:
        """Ask about this kernel's memories the server accepted and is still indexing (the Recent
        list follows); transcripts are followed by the session's own watch."""
        self._session.follow_memories()

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

    def document_id(self) -> str:
        """The id auto-retain sends this session's transcripts under (the latest one sent)."""
        session_id = self._session.session_id
        sent = [
            item.document_id
            for item in self._session.recent()
            if item.document_id
            and item.document_id.startswith(session_id)
            and item.state in (SENT, INDEXED)
        ]
        return sent[0] if sent else session_id

    def _document_marker(self) -> tuple[str, int, float]:
        document_id = self.document_id()
        parts = [
            item.changed_at
            for item in self._session.recent()
            if item.document_id == document_id and item.state == INDEXED
        ]
        return document_id, len(parts), max(parts, default=0.0)

    def fetch_document(self) -> None:
        """Fetch the session document now (the worker, or a terminal's text snapshot)."""
        session = self._session
        marker = self._document_marker()
        self._doc_marker = marker  # after a failure too: the next try is on news or Reload
        document_id, text = marker[0], ""
        try:
            reply = session.document(document_id)
        except Exception as error:
            message = f"Could not load the document: {self._failure(error)}"
        else:
            text = str((reply or {}).get("original_text") or "")[:DOC_MAX_CHARS]
            updated = str((reply or {}).get("updated_at") or "")[:16].replace("T", " ")
            when = f", updated {updated} UTC" if updated else ""
            message = f"{len(text):,} characters{when}" if text else NO_DOCUMENT
        with self._lock:  # keeps a "show all" clicked meanwhile
            full = self.document_view.full
            self.document_view = DocumentView(document_id, text, message, full)

    def _start_refresh(self, model_id: str) -> None:
        session = self._session
        bank = session.scope.bank_id
        try:
            operation_id = session.refresh_model(model_id)
        except Exception as error:
            self._note(f"Refresh of {model_id} failed: {self._failure(error)}")
            return
        if operation_id is None:
            self._note(f"Mental model not found: {model_id}")
        elif operation_id:
            self._model_ops[operation_id] = (bank, model_id, time.monotonic() + MODEL_WATCH_S)

    def _check_model_refreshes(self, now: float) -> None:
        session = self._session
        for operation_id, (bank, model_id, deadline) in list(self._model_ops.items()):
            state = session.operation_state(bank, operation_id)
            if state == "unknown":
                return  # the server is away: ask again at the next poll
            if state == "indexing" and now < deadline:
                continue
            del self._model_ops[operation_id]
            session.reload_models()
            if state.startswith("failed"):
                self._note(f"Refresh of mental model {model_id} {state}.")
            elif state == "indexing":
                self._note(f"Mental model {model_id} is still being refreshed on the server.")
            else:
                self._note(f"Mental model {model_id} refreshed.")
