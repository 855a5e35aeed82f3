"""The session's cache of mental models: loaded on the worker, read from the kernel thread.

Loaded at session start and re-listed every ``mental_model_refresh_s``; the kernel thread only
reads an immutable snapshot, swapped whole by the worker.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..api.client import HindsightError
from .mental_models import (
    FIRST_LOAD_WAIT_S,
    MentalModel,
    SeedOutcome,
    ensure_seeds,
    render_block,
    resolve_seeds,
    sort_by_name,
    visible,
)

if TYPE_CHECKING:
    from ..session import HindsightSession

log = logging.getLogger("hindsight_magic")


@dataclass(frozen=True)
class CacheState:
    """An immutable snapshot of the cache (swapped whole, so readers need no lock)."""

    bank_id: str | None = None
    models: tuple[MentalModel, ...] = ()
    error: str | None = None
    loaded_at: float | None = None


class MentalModelCache:
    """The session's mental models: loaded on the worker, read from the kernel thread."""

    def __init__(self, session: HindsightSession) -> None:
        self._session = session
        self._lock = threading.Lock()
        self._state = CacheState()
        self._loaded = threading.Event()
        self._generation = 0
        self._prepared: set[str] = set()
        self._ticking = False

    @property
    def enabled(self) -> bool:
        """The ``mental_models`` setting."""
        return bool(self._session.settings.mental_models)

    @property
    def state(self) -> CacheState:
        """The latest snapshot."""
        return self._state

    @property
    def models(self) -> tuple[MentalModel, ...]:
        """Models visible in the current scope that have content, in name order."""
        return self._state.models

    def start(self, delay_s: float = 0.0) -> None:
        """Load on the worker after ``delay_s``, then every ``mental_model_refresh_s``."""
        with self._lock:
            if self._ticking:
                return
            self._ticking = True
        self._session.queue.submit(self._tick, delay_s)

    def reload(self, clear: bool = True) -> threading.Event:
        """Load again on the worker soon; ``clear`` forgets the old snapshot (scope change).

        Returns an event that is set once that load has finished (or could not be queued).
        """
        done = threading.Event()
        with self._lock:
            self._generation += 1
            if clear:
                self._state = CacheState()
                self._loaded.clear()

        def job() -> None:
            try:
                self.load()
            finally:
                done.set()

        if not self._session.queue.submit(job):
            done.set()
        return done

    def wait_first_load(self, timeout: float = FIRST_LOAD_WAIT_S) -> bool:
        """Wait (at most ``timeout`` s) until a load finished; True when one has."""
        return not self.enabled or self._loaded.wait(timeout)

    def block(self) -> str:
        """The ``<mental_models>`` block for the current snapshot ('' when disabled or empty)."""
        if not self.enabled:
            return ""
        return render_block(self.models, self._session.settings.mental_model_max_render_chars)

    def _tick(self) -> None:
        try:
            self.load()
        finally:
            self._session.queue.submit(
                self._tick, delay_s=self._session.settings.mental_model_refresh_s
            )

    def load(self) -> CacheState:
        """Ensure bank and seeds (first time per bank), list with content, publish (worker)."""
        session = self._session
        with self._lock:
            generation = self._generation
        settings, scope, client = session.settings, session.scope, session.client
        if not settings.mental_models:
            return self._state
        bank, key = scope.bank_id, f"{client.base_url}#{scope.bank_id}"
        try:
            if key not in self._prepared:
                session._ensure_bank(client, bank)
                outcome = SeedOutcome()
                if settings.mental_model_auto_seed:
                    outcome = ensure_seeds(client, bank, resolve_seeds(scope))
                if not outcome.failed:
                    self._prepared.add(key)
            listed = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        except HindsightError as error:
            log.debug("Hindsight: loadMentalModelsBlock list failed: %s", error)
            state = CacheState(bank, (), str(error), time.time())
        except Exception as error:  # an unexpected reply shape must not break the worker
            log.debug("Hindsight: mental-model load failed", exc_info=True)
            state = CacheState(bank, (), f"{type(error).__name__}: {error}", time.time())
        else:
            shown = [
                m for m in listed if visible(m, scope.recall_tags) and (m.content or "").strip()
            ]
            state = CacheState(bank, tuple(sort_by_name(shown)), None, time.time())
        with self._lock:
            if generation == self._generation:
                self._state = state
                self._loaded.set()
        return state

    def status_rows(self) -> list[tuple[str, str]]:
        """Rows for the "Mental models" section of ``%hindsight status``."""
        settings = self._session.settings
        if not self.enabled:
            return [("state", "disabled (mental_models = false)")]
        state = self._state
        if state.loaded_at is None:
            rows = [("state", "loading")]
        elif state.error:
            rows = [("state", f"unavailable: {state.error}")]
        else:
            names = ", ".join(m.id for m in state.models) or "(none with content yet)"
            loaded = datetime.fromtimestamp(state.loaded_at).astimezone().strftime("%H:%M:%S")
            rows = [("state", f"ok, {len(state.models)} loaded at {loaded}"), ("models", names)]
        rows.append(("auto-seed", "on" if settings.mental_model_auto_seed else "off"))
        rows.append(("refresh", f"every {settings.mental_model_refresh_s:g} s"))
        return rows
