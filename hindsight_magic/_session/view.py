"""``SessionView``: the one thing the UI knows of a session."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from .._delivery.indexing import (
    OperationState,
    ReadReady,
    follow_operations,
    operation_state,
)
from .._diagnosis import NOTEBOOK_COMMAND, server_state
from .._errors import Error
from .._memory.layers import Layer, layer_states, layers_of
from .._memory.reading import Reader
from .._settings import MINE

if TYPE_CHECKING:
    from .._api.replies import DocumentItem
    from .._capture.autoretain import AutoRetainStatus
    from .._delivery.items import QueueStats
    from .._delivery.recent import RecentItem
    from .._errors import HindsightError
    from .._memory.curation import Outcome
    from .._memory.mental_models import MentalModel
    from .._memory.overview import EntityMap, Period, TimelineCounts
    from .._memory.results import RecallResult
    from .._memory.scope import BankScope
    from .._operations import RecallRequest
    from .._settings import HindsightSettings
    from .parts import Parts

T = TypeVar("T")


class ViewedSession(Protocol):
    """What a view reads of its session (``HindsightSession`` has it all)."""

    session_id: str
    settings: HindsightSettings
    scope: BankScope

    @property
    def notebook(self) -> str | None: ...

    @property
    def api_url(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    def explain(self, error: HindsightError) -> str: ...

    def retry_failed(self) -> int: ...


class SessionView:
    """What the UI (status, the panel) may know of one session, and the few things it may ask.

    It exists so that ``_ui`` does not depend on the session's internals: the UI reads flat
    values here (the server, scope, queue counters, Recent feed, auto-retain and mental models)
    and makes requests here, instead of reaching through the queue, its feed and worker, the
    model cache or the connection. Those parts can change shape without touching the UI, and the
    layers stay real: ``_ui`` sits above ``_session``, this class is the only thing ``_ui`` knows
    of a session, and ``_session`` imports nothing from ``_ui``.

    Nothing here waits on the network on the kernel thread: the requests only set a flag or
    schedule a job on the worker (``schedule``). The few calls that ask the server
    (``server_state``, ``recall_now``, ``follow_memories``, ``document``, ``refresh_model``,
    ``operation_state``) run on the worker, or in a magic the user ran, with the session's
    timeouts; the panel and the status report never hold the HTTP client themselves. (The
    doctor, ``_ui/doctor.py``, makes a client of its own: it checks the settings as given,
    for ``hindsight-magic doctor`` too, where there is no session.)

    It holds the session weakly: a panel left open after ``%unload_ext`` keeps its view (and the
    hub in the ``panel_hub`` slot), not the unloaded session with its queue and journal. Once the
    session is gone, ``closed`` is True and every other call raises ``Error``.
    """

    def __init__(self, session: ViewedSession, parts: Parts) -> None:
        self._session = weakref.ref(session)
        self._parts = weakref.ref(parts)
        self._lock = threading.Lock()
        self._panel_hub: object | None = None
        self._last_state: tuple[str, str] | None = None  # (url, state) the last check read

    def _live(self) -> ViewedSession:
        session = self._session()
        if session is None:
            raise Error("the Hindsight session is gone")
        return session

    def _part(self) -> Parts:
        parts = self._parts()
        if parts is None or self._session() is None:
            raise Error("the Hindsight session is gone")
        return parts

    # -- reads --------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the session was closed (unloaded, kernel exit) or is gone."""
        session = self._session()
        return session is None or session.closed

    @property
    def session_id(self) -> str:
        """The session's id (the Jupyter kernel id when there is one)."""
        return self._live().session_id

    @property
    def notebook(self) -> str | None:
        """The notebook's path when the front end tells it, else None."""
        return self._live().notebook

    @property
    def server_url(self) -> str:
        """The server URL in use."""
        return self._live().api_url

    @property
    def has_key(self) -> bool:
        """Whether an API key is sent."""
        return self._part().connection.client.has_key

    @property
    def scope(self) -> BankScope:
        """The bank and tags in force."""
        return self._live().scope

    @property
    def auto_retain_setting(self) -> bool:
        """The ``auto_retain`` setting (on even while the panel's button paused it)."""
        return bool(self._live().settings.auto_retain)

    def queue_stats(self) -> QueueStats:
        """A consistent snapshot of the queue's counters."""
        return self._part().queue.stats()

    def recent(self) -> tuple[RecentItem, ...]:
        """The Recent feed: this kernel's last memories and their delivery state, newest first."""
        return self._part().queue.feed.items()

    def memories_waiting(self, bank_id: str) -> bool:
        """Whether a memory the user queued for ``bank_id`` was not tried yet."""
        return self._part().queue.memories_waiting(bank_id)

    def transcript_cells(self, bank_id: str) -> int:
        """Auto-retained cells of ``bank_id`` a search cannot find yet (not waited for)."""
        return self._part().queue.transcript_cells(bank_id)

    def autoretain_status(self, process: bool = False) -> AutoRetainStatus:
        """Auto-retain's counters; ``process`` first turns recorded cells into entries (CPU
        only: a user-run status may, the panel's background refresh does not)."""
        return self._part().autoretain.status(process=process)

    @property
    def already_stored(self) -> int:
        """Memories a re-run retained again and nothing was sent for: the server held them."""
        return self._part().versions.already_stored

    @property
    def models(self) -> tuple[MentalModel, ...]:
        """The mental models shown in the scope (with content, by name); () when turned off."""
        cache = self._part().mental_models
        return cache.models if cache.enabled else ()

    def model_rows(self) -> list[tuple[str, str]]:
        """The "Mental models" rows of the status report."""
        return self._part().mental_models.status_rows()

    def layer_rows(self, check_server: bool) -> list[tuple[str, str]]:
        """The "Layers" rows of the status report (none when the session reads no layer): each
        layer's bank, and with ``check_server`` its memory count now or why it cannot be read
        (asked at once, at most 5 s)."""
        session = self._live()
        layers = layers_of(session.settings.layers)
        if not layers:
            return []
        mine = Layer(MINE, session.scope.bank_id)
        if not check_server:
            return [(layer.name, f"bank {layer.bank_id}") for layer in (mine, *layers)]
        parts = self._part()
        states = layer_states(parts.connection.client, [mine, *layers], parts.layer_asking)
        return [(state.layer.name, state.line()) for state in states]

    def curated(self) -> str:
        """What this session curated: ``2 forgotten, 1 deleted`` ('' when nothing)."""
        return self._part().curator.summary()

    def wait_first_model_load(self) -> bool:
        """Wait (at most 1.5 s, on the worker's load) for the first model list; True if done."""
        return self._part().mental_models.wait_first_load()

    # -- requests -----------------------------------------------------------------------------

    def request_flush(self) -> None:
        """Ask the worker to send the queue now (does not wait)."""
        self._part().queue.request_flush()

    def request_memories(self) -> None:
        """Ask the worker to send the user's memories now, as a read does (does not wait)."""
        self._part().queue.request_memories()

    def retry_failed(self) -> int:
        """Move refused memories back to the queue and ask for a flush; returns their count."""
        return self._live().retry_failed()

    def reload_models(self) -> None:
        """Reload the mental models on the worker (the old ones stay shown meanwhile)."""
        self._part().mental_models.reload(clear=False)

    def pause_autoretain(self, paused: bool) -> None:
        """Pause (or resume) auto-retain without changing the setting."""
        self._part().autoretain.pause(paused)

    def process_autoretain(self) -> None:
        """Queue the transcripts that are due (CPU only; the panel's search, on the worker)."""
        self._part().autoretain.process()

    def schedule(self, job: Callable[[], object], delay_s: float = 0.0) -> bool:
        """Run ``job`` on the session's worker thread after ``delay_s`` (once, however often it
        is asked while waiting); False when the worker has stopped or the session is gone."""
        parts = self._parts()
        return (
            parts is not None and self._session() is not None and parts.worker.submit(job, delay_s)
        )

    def is_scheduled(self, job: Callable[[], object]) -> bool:
        """Whether ``job`` waits to run on the worker."""
        parts = self._parts()
        return parts is not None and job in parts.worker.scheduled()

    def recall_now(self, request: RecallRequest) -> RecallResult:
        """Recall what ``request`` asks in the current scope without
        sending the queue or waiting for indexing first (the panel's search does both itself,
        step by step, on the worker)."""
        session, parts = self._live(), self._part()
        still = parts.queue.transcript_cells(session.scope.bank_id)
        reader = Reader(
            session.settings,
            parts.connection,
            lambda: session.scope,
            lambda _: ReadReady(still, True),  # the search waited for the user's memories itself
            asking=parts.layer_asking,
        )
        return reader.recall(request)

    def follow_memories(self, bank_id: str | None = None) -> bool:
        """Ask the server once about the user's memories it accepted (of ``bank_id``, or any)
        and is still indexing; the Recent feed follows. True while some still are."""
        parts = self._part()
        return follow_operations(
            parts.connection.client, parts.queue, parts.queue.sent_memories(bank_id)
        )

    def operation_state(self, bank_id: str, operation_id: str) -> OperationState:
        """Where the server is with one of its operations (indexing, done, failed, unknown)."""
        return operation_state(self._part().connection.client, bank_id, operation_id)

    def server_state(self) -> str:
        """``ok (Hindsight 1.1.0)``, or what is wrong with the server and what to do (asks it);
        kept for ``known_server_state``."""
        client = self._part().connection.client
        state = server_state(client, NOTEBOOK_COMMAND)
        with self._lock:
            self._last_state = (client.base_url, state)
        return state

    def known_server_state(self) -> str | None:
        """What the last ``server_state`` read (a status, the panel's check), while the session
        still talks to that server; None when nothing was read yet. No request."""
        with self._lock:
            last = self._last_state
        if last is None or last[0].rstrip("/") != self.server_url.rstrip("/"):
            return None
        return last[1]

    def explain(self, error: HindsightError) -> str:
        """``error`` as one line saying what it means and what to do."""
        return self._live().explain(error)

    def document(self, document_id: str) -> DocumentItem | None:
        """The document ``document_id`` of the current bank as the server stores it."""
        return self._part().connection.client.document(self._live().scope.bank_id, document_id)

    def refresh_model(self, model_id: str) -> str | None:
        """Ask the server to refresh a mental model; its operation id ("" if none), or None
        when there is no such model."""
        return self._part().mental_models.refresh(model_id)

    def timeline(self, by: Period | None = None) -> TimelineCounts:
        """The whole bank's memories per period, read now without waiting for the queue:
        what the panel's Timeline tab draws (on the worker)."""
        return self._part().overview.timeline(by, settle=False)

    def entity_map(self, top: int = 20) -> EntityMap:
        """The bank's ``top`` entities and their co-occurrences (the panel's Map tab)."""
        return self._part().overview.entity_map(top=top)

    def forget(self, memory: str, reason: str = "") -> Outcome:
        """Forget a memory (an id or a retain id), as ``%hindsight forget`` does; asks the
        server, so the panel calls it on the worker. Raises ``InputError`` (one line) or
        ``HindsightError``."""
        return self._part().curator.forget(memory, reason)

    def restore(self, memory: str) -> Outcome:
        """Bring a forgotten memory back (``%hindsight restore``); on the worker."""
        return self._part().curator.restore(memory)

    def delete(self, document: str, yes: bool = False) -> Outcome:
        """Delete a document and its memories with ``yes``, else list them; on the worker."""
        return self._part().curator.delete(document, yes)

    def forgotten(self) -> Outcome:
        """The forgotten memories of the scope, newest first (``.memory_ids``); on the worker."""
        return self._part().curator.forgotten()

    def panel_hub(self, make: Callable[[SessionView], T]) -> T:
        """The UI's panel hub for this session: made by ``make`` on first use, then kept here.

        Every ``%hindsight panel`` of a kernel shares one hub (one worker job, one snapshot for
        all of them), and that hub goes with the session. So it lives in this slot, which has
        the session's lifetime, rather than in a registry keyed by session. The session never
        reads the slot and cannot name its type (``_session`` imports nothing from ``_ui``),
        hence the factory.
        """
        with self._lock:
            if self._panel_hub is None:
                self._panel_hub = make(self)
            return cast(T, self._panel_hub)
