"""The session's cache of mental models: loaded on the worker, read from the kernel thread.

Loaded at session start and re-listed every ``mental_model_refresh_s``; the kernel thread only
reads an immutable snapshot, swapped whole by the worker. A load lists the models right after
seeding them, so status and ``%hindsight models`` agree from the first load. After seeding,
and after any ``reload`` (a refresh, a seed, a delete, a new scope), the server writes content
in the background: the cache lists again soon, at growing intervals (``SETTLE_FIRST_S``
doubling up to ``SETTLE_MAX_S``) for ``SETTLE_FOR_S``, so new content shows within seconds
rather than at the next ``mental_model_refresh_s``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...api.banks import ensure_bank
from ...api.errors import HindsightError
from ...text import plural
from ...times import local_clock
from .model import MentalModel, sort_by_name, visible
from .render import render_block
from .seeds import SeedOutcome, ensure_seeds, resolve_seeds

if TYPE_CHECKING:
    from ...api.connection import Connection
    from ...delivery.worker import Scheduler
    from ...settings import HindsightSettings
    from ..scope import BankScope

log = logging.getLogger("hindsight_magic")

FIRST_LOAD_WAIT_S = 1.5  # the panel or %hindsight context waits at most this for a first load
SETTLE_FIRST_S = 2.0  # after seeding or a reload, list again this soon…
SETTLE_MAX_S = 30.0  # …then doubling the wait up to this…
SETTLE_FOR_S = 300.0  # …for this long (the default mental_model_refresh_s)


@dataclass(frozen=True)
class CacheState:
    """An immutable snapshot of the cache (swapped whole, so readers need no lock)."""

    bank_id: str | None = None
    models: tuple[MentalModel, ...] = ()  # visible in the scope, with content, in name order
    error: str | None = None
    loaded_at: float | None = None
    listed: tuple[MentalModel, ...] = ()  # every model visible in the scope, content or not


class MentalModelCache:
    """The session's mental models: loaded on the worker, read from the kernel thread."""

    def __init__(
        self,
        settings: HindsightSettings,
        connection: Connection,
        scope: Callable[[], BankScope],
        worker: Scheduler,
    ) -> None:
        self._settings = settings
        self._connection = connection
        self._scope = scope
        self._worker = worker
        self._lock = threading.Lock()
        self._state = CacheState()
        self._loaded = threading.Event()
        self._generation = 0
        self._prepared: set[str] = set()
        self._ticking = False
        self._settle_until = 0.0
        self._settle_delay = SETTLE_FIRST_S

    @property
    def enabled(self) -> bool:
        """The ``mental_models`` setting."""
        return bool(self._settings.mental_models)

    @property
    def state(self) -> CacheState:
        """The latest snapshot."""
        return self._state

    @property
    def models(self) -> tuple[MentalModel, ...]:
        """Models visible in the current scope that have content, in name order."""
        return self._state.models

    def names(self) -> dict[str, str]:
        """Model id → name, of every model listed in the scope."""
        return {m.id: m.name for m in self._state.listed}

    def start(self, delay_s: float = 0.0) -> None:
        """Load on the worker after ``delay_s``, then every ``mental_model_refresh_s``."""
        with self._lock:
            if self._ticking:
                return
            self._ticking = True
        self._worker.submit(self._tick, delay_s)

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
        self._settle_soon()

        def job() -> None:
            try:
                self.load()
            finally:
                done.set()

        if not self._worker.submit(job, 0.0):
            done.set()
        return done

    def wait_first_load(self, timeout: float = FIRST_LOAD_WAIT_S) -> bool:
        """Wait (at most ``timeout`` s) until a load finished; True when one has."""
        return not self.enabled or self._loaded.wait(timeout)

    def block(self) -> str:
        """The ``<mental_models>`` block for the current snapshot ('' when disabled or empty)."""
        if not self.enabled:
            return ""
        return render_block(self.models, self._settings.mental_model_max_render_chars)

    def _tick(self) -> None:
        try:
            self.load()
        finally:
            self._worker.submit(self._tick, self._settings.mental_model_refresh_s)

    def load(self) -> CacheState:
        """Ensure bank and seeds (first time per bank), list with content, publish (worker)."""
        with self._lock:
            generation = self._generation
        settings, scope, client = self._settings, self._scope(), self._connection.client
        if not settings.mental_models:
            return self._state
        bank, key = scope.bank_id, f"{client.base_url}#{scope.bank_id}"
        try:
            if key not in self._prepared:
                ensure_bank(client, bank, settings.bank_mission, settings.retain_mission)
                outcome = SeedOutcome()
                if settings.mental_model_auto_seed:
                    outcome = ensure_seeds(client, bank, resolve_seeds(scope))
                if not outcome.failed:
                    self._prepared.add(key)
                if outcome.created:
                    self._settle_soon()
            listed = [MentalModel.from_json(m) for m in client.list_mental_models(bank)]
        except HindsightError as error:
            log.debug("Hindsight: loadMentalModelsBlock list failed: %s", error)
            state = CacheState(bank, (), str(error), time.time())
        except Exception as error:  # an unexpected reply shape must not break the worker
            log.debug("Hindsight: mental-model load failed", exc_info=True)
            state = CacheState(bank, (), f"{type(error).__name__}: {error}", time.time())
        else:
            seen = sort_by_name(m for m in listed if visible(m, scope.recall_tags))
            shown = tuple(m for m in seen if (m.content or "").strip())
            state = CacheState(bank, shown, None, time.time(), tuple(seen))
        self._settle()
        with self._lock:
            if generation == self._generation:
                self._state = state
                self._loaded.set()
        return state

    def _settle_soon(self) -> None:
        """From now on, for ``SETTLE_FOR_S``, list again at growing intervals."""
        self._settle_until = time.time() + SETTLE_FOR_S
        self._settle_delay = SETTLE_FIRST_S

    def _settle(self) -> None:
        """While settling, list again (after a growing wait) to see what the server wrote."""
        if time.time() < self._settle_until:
            self._worker.submit(self.load, self._settle_delay)
            self._settle_delay = min(SETTLE_MAX_S, self._settle_delay * 2)

    def status_rows(self) -> list[tuple[str, str]]:
        """Rows for the "Mental models" section of ``%hindsight status``."""
        settings = self._settings
        if not self.enabled:
            return [("state", "disabled (mental_models = false)")]
        state = self._state
        if state.loaded_at is None:
            rows = [("state", "loading")]
        elif state.error:
            rows = [("state", f"unavailable: {state.error}")]
        else:
            listed = sorted(state.listed, key=lambda m: m.id)  # as %hindsight models lists them
            empty = len(listed) - len(state.models)
            names = ", ".join(
                m.id + ("" if (m.content or "").strip() else " (empty)") for m in listed
            )
            count, clock = plural(len(listed), "model", "models"), local_clock(state.loaded_at)
            ok = f"ok, {count} listed at {clock}"
            if empty:
                ok += f" ({empty} without content yet)"
            rows = [("state", ok), ("models", names or "(none)")]
        rows.append(("auto-seed", "on" if settings.mental_model_auto_seed else "off"))
        rows.append(("refresh", f"every {settings.mental_model_refresh_s:g} s"))
        return rows
