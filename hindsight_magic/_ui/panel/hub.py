"""The hub that keeps every open ``%hindsight panel`` of a session current.

- One ``PanelHub`` per session keeps the open panels (``panel_hub``, kept weakly by session).
  While at least one is open, a job on the session's worker thread (the *only* writer of the
  panels' widgets once shown; ``HindsightSession.in_background``) takes a cheap snapshot
  (``HindsightSession.status`` without a check) every ``PUSH_INTERVAL_S`` and, only when it
  differs from what a panel shows,
  pushes it to every such panel inside ``hold_sync`` — so updates are throttled (≤ 4/s), batched
  (one message per changed widget) and all panels of a notebook show the same snapshot.
- Clicks run on the kernel thread and never touch the network: they ask the worker to act
  (the session's ``send_now``, ``retry_failed``, ``reload_models``, the memory browser's
  search, document fetch, model refresh and curation — ``browser.py``; the Timeline and Map
  tabs' pictures — ``figures.py``) or flip a flag.
- Closing every panel (``widget.close()``) or unloading the extension stops the job: it re-submits
  itself only while a panel is open and the session is alive.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from ..._text import local_clock, plural
from .browser import MemoryBrowser
from .figures import PanelFigures
from .live import LiveSession
from .state import Snapshot, take_snapshot

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..._session import HindsightSession

log = logging.getLogger("hindsight_magic")

PUSH_INTERVAL_S = 0.25  # at most 4 pushes per second
HEALTH_EVERY_S = 30.0  # re-check the server (on the worker) this often while a panel is open


class PanelView(Protocol):
    """What the hub needs from a displayed panel (``widgets.HindsightPanel``)."""

    snapshot: Snapshot

    @property
    def is_open(self) -> bool: ...

    def show(self, snapshot: Snapshot) -> None: ...


class PanelHub:
    """The open panels of one session and the worker job that keeps them current."""

    def __init__(self, session: HindsightSession) -> None:
        self._session = LiveSession(session)  # weak: panels do not keep an unloaded session
        self._lock = threading.RLock()  # guards the views and every push to them
        self._sessions: list[PanelView] = []
        self._probed_at: float | None = None
        self._scheduled = False  # the next tick waits on the worker
        self._notice = ""
        self._last_push = float("-inf")
        self.pushes = 0
        self.push_times: deque[float] = deque(maxlen=1000)  # monotonic times, for tests
        self.browser = MemoryBrowser(self._session, self.note)
        self.figures = PanelFigures(self._session)

    # -- kernel thread ----------------------------------------------------------------------

    def snapshot(self, first: bool = False) -> Snapshot:
        """The current snapshot (cheap; no network). The ``first`` one, made when a panel is
        shown (a magic the user ran), waits at most 1.5 s for the first list of mental models
        so the models tab opens filled."""
        status = self._session().status(check_server=False, wait_models=first)
        return take_snapshot(status, self._notice, self.browser, self.figures)

    def know_server(self) -> None:
        """Before a panel is shown: the server's state as last read (a status cell, a
        panel's check), else read once now (a magic the user ran: the session's timeouts).
        The panel's text form is what an executed notebook saves: it must say what was known
        then, not ``checking…``."""
        session = self._session()
        if session.status(check_server=False, wait_models=False).server is None:
            session.check_server()
            self._probed_at = time.monotonic()

    def attach(self, view: PanelView) -> None:
        """Keep ``view`` current from now on (starts the worker job if needed)."""
        with self._lock:
            self._sessions.append(view)
        self.browser.load_document()
        self.browser.load_forgotten()
        self._schedule(0.0)

    def detach(self, view: PanelView) -> None:
        """Stop updating ``view`` (waits for a push in progress, never for the network)."""
        with self._lock:
            self._sessions = [v for v in self._sessions if v is not view]
            last = not any(v.is_open for v in self._sessions)
        if last:
            self.figures.closed()  # no timeline readings while no panel is open

    @property
    def views(self) -> list[PanelView]:
        """The panels still open."""
        with self._lock:
            return [v for v in self._sessions if v.is_open]

    def note(self, text: str) -> None:
        """Show ``text`` (with the time) in every panel at the next push."""
        self._notice = f"{local_clock()} {text}"
        self._schedule(0.0)

    def act(self, action: str, *args: Any) -> None:
        """A button was clicked: run hub method ``action`` (kernel thread, never the network)."""
        if self._session.closed:
            self._shutdown()  # the worker is gone, so this thread is the only writer left
            return
        try:
            getattr(self, action)(*args)
        except Exception as error:  # shown in the panel, never a traceback in a cell
            log.debug("Hindsight: panel button failed", exc_info=True)
            self.note(f"{action} failed: {type(error).__name__}: {error}")

    def flush_now(self) -> None:
        """Button: ask the worker to send the queue now (does not wait)."""
        self._session().send_now()
        self._probed_at = None  # re-check the server too
        self.note("Flush requested.")

    def retry_failed(self) -> None:
        """Button: move refused memories back to the queue and ask for a flush."""
        count = self._session().retry_failed()  # moves them back and requests a flush
        self.note(f"Re-sending {plural(count, 'failed memory', 'failed memories')}.")

    def refresh_models(self) -> None:
        """Button: reload the mental models on the worker (the old ones stay shown meanwhile)."""
        self._session().reload_models(wait=False)
        self.note("Reloading mental models.")

    def toggle_autoretain(self) -> None:
        """Button: pause or resume auto-retain (no effect while the setting is off)."""
        session = self._session()
        status = session.status(check_server=False, wait_models=False)
        if not status.auto_retain_setting:
            self.note("Auto-retain is off: turn it on with %hindsight autoretain on.")
            return
        paused = status.autoretain.enabled
        session.pause_autoretain(paused)
        self.note("Auto-retain paused." if paused else "Auto-retain resumed.")

    def search(self, boxes: Mapping[str, str]) -> None:
        """Search button: recall what the search boxes ask (their text by field: ``query``,
        ``as_of``) on the worker; the results table follows."""
        self.browser.search(boxes)
        self._schedule(0.0)

    def refresh_model(self, model_id: str) -> None:
        """A model's Refresh button: the server's refresh, on the worker."""
        self.browser.refresh_model(model_id)

    def toggle_document(self) -> None:
        """Show all of the session document, or only its beginning."""
        self.browser.toggle_document()
        self._schedule(0.0)

    def reload_document(self) -> None:
        """Fetch the session document again (on the worker)."""
        self.browser.load_document()

    def forget(self, key: str) -> None:
        """A row's Forget button (a memory id, or a Recent row's retain id): on the worker."""
        self.browser.forget(key)
        self._schedule(0.0)

    def restore(self, key: str) -> None:
        """A row's Restore button: bring the memory (or a retain's memories) back, on the worker."""
        self.browser.restore(key)
        self._schedule(0.0)

    def ask_delete(self, document_id: str) -> None:
        """A result's Delete… button: list what would go (on the worker), then ask to confirm."""
        self.browser.ask_delete(document_id)
        self._schedule(0.0)

    def confirm_delete(self, document_id: str) -> None:
        """Confirm delete: delete the previewed document for good, on the worker."""
        self.browser.confirm_delete(document_id)
        self._schedule(0.0)

    def cancel_delete(self) -> None:
        """Cancel: drop the delete preview."""
        self.browser.cancel_delete()
        self._schedule(0.0)

    def load_forgotten(self) -> None:
        """The Forgotten section was opened: list the forgotten memories again (on the worker)."""
        self.browser.load_forgotten()

    def tab_opened(self, tab: str) -> None:
        """A panel's tab was shown: the Timeline and Map tabs draw their picture the first
        time (on the worker); the Timeline then follows the memories that arrive."""
        self.figures.opened(tab)
        self._schedule(0.0)

    def refresh_map(self) -> None:
        """The Map tab's Refresh button: read the entity graph and draw it again (worker)."""
        self.figures.refresh_map()
        self._schedule(0.0)

    # -- worker thread ----------------------------------------------------------------------

    @property
    def scheduled(self) -> bool:
        """Whether the hub's next push is waiting on the worker."""
        return self._scheduled

    def _schedule(self, delay_s: float) -> None:
        if self._session.in_background(self._tick, delay_s):
            self._scheduled = True

    def _tick(self) -> None:
        """The worker job: probe the server now and then, push a changed snapshot, re-submit."""
        self._scheduled = False
        if self._session.closed:
            self._shutdown()
            return
        if not self.views:
            return  # nothing shown: stop (attach starts the job again)
        try:
            now = time.monotonic()
            if self._probed_at is None or now - self._probed_at >= HEALTH_EVERY_S:
                self._probed_at = now
                self._session().check_server()
            self.browser.poll()
            self.figures.poll()
            self.push()
        except Exception:  # never let one bad snapshot stop the updates
            log.debug("Hindsight: panel update failed", exc_info=True)
        finally:
            self._schedule(PUSH_INTERVAL_S)

    def push(self, snapshot: Snapshot | None = None) -> bool:
        """Show the snapshot in every open panel that shows something else (throttled)."""
        if time.monotonic() - self._last_push < PUSH_INTERVAL_S:
            return False
        snapshot = snapshot or self.snapshot()  # outside the lock: clicks never wait on it
        with self._lock:
            now = time.monotonic()
            if now - self._last_push < PUSH_INTERVAL_S:
                return False
            stale = [v for v in self.views if v.snapshot != snapshot]
            if not stale:
                return False
            for view in stale:
                view.show(snapshot)
            self._last_push = now
            self.pushes += 1
            self.push_times.append(now)
            return True

    def _shutdown(self) -> None:
        """The session closed: show that, disable the buttons, forget the panels."""
        with self._lock:
            views, self._sessions = self.views, []
            for view in views:
                view.show(replace(view.snapshot, closed=True, notice="Extension unloaded."))


HUBS: weakref.WeakKeyDictionary[HindsightSession, PanelHub] = weakref.WeakKeyDictionary()
_HUBS_LOCK = threading.Lock()


def panel_hub(session: HindsightSession) -> PanelHub:
    """The session's hub: made on first use, then shared by every panel of the session. Kept
    by the session, weakly (the hub holds its session weakly too), so it goes with it."""
    with _HUBS_LOCK:
        hub = HUBS.get(session)
        if hub is None:
            hub = HUBS[session] = PanelHub(session)
        return hub
