"""``HindsightSession``: the kernel-scoped owner of settings, client, scope and retain queue."""

from __future__ import annotations

import atexit
import logging
import os
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .api.client import HindsightClient, HindsightError, Timeouts
from .bootstrap import configure_logging, kernel_id, open_journal
from .capture.transcript import redact, secret_values
from .delivery.items import MemoryItem, local_timestamp
from .delivery.queue import Batch, RetainQueue, Route
from .discovery import resolve_api_url
from .ipython.hook import AutoRetainer
from .memory.model_cache import MentalModelCache
from .memory.scope import ENSURED_BANKS, BankScope, compute_scope, project_label
from .settings import Settings
from .ui.display import RecallResult, ReflectResult, Report, plural
from .ui.errors import explain

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("hindsight_magic")
log.addHandler(logging.NullHandler())  # never print from the worker into a cell

FLUSH_BEFORE_READ_S = 5.0
INDEXING_WAIT_S = 10.0  # a cold or busy server can need seconds for its first items
INDEXING_POLL_S = 0.1
EXIT_FLUSH_S = 3.0
CONNECTION_FIELDS = (
    "api_url",
    "api_key",
    "request_timeout_ms",
    "retain_timeout_ms",
    "recall_timeout_ms",
    "reflect_timeout_ms",
)
SCOPE_FIELDS = ("bank_id", "bank_prefix", "scoping")
SECRETS_TTL_S = 2.0
STARTUP_DELAY_S = 0.3
# Lone surrogates (e.g. "\ud800" from a JSON front end) cannot be encoded as UTF-8: httpx would
# refuse the whole batch, so they become U+FFFD when a memory is queued.
_SURROGATES = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    return _SURROGATES.sub("\ufffd", text)


class HindsightSession:
    """Everything one kernel needs to remember: built once at load, rebuilt on config changes."""

    def __init__(
        self,
        settings: Settings,
        *,
        cwd: str | None = None,
        session_id: str | None = None,
        notebook: Callable[[], str | None] | None = None,
        transport: httpx.BaseTransport | None = None,
        start_worker: bool = True,
        queue_options: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        configure_logging(settings.debug)
        self.session_id = session_id or kernel_id() or str(uuid.uuid4())
        self.started_at = datetime.now(timezone.utc)
        self._notebook = notebook or (lambda: os.environ.get("JPY_SESSION_NAME") or None)
        self._transport = transport
        self._clients: list[HindsightClient] = []
        self._notices: deque[str] = deque(maxlen=50)
        self._lock = threading.RLock()
        self.label = project_label(cwd)
        self.api_url = resolve_api_url(settings)
        self.client = self._new_client()
        self.scope = self._compute_scope()
        self.last_recall: RecallResult | None = None
        journal, problem = open_journal(settings)
        if problem:
            self._notices.append(problem)
        self.queue = RetainQueue(
            self._send_batch,
            on_failure=self._note_failure,
            journal=journal,
            **(queue_options or {}),
        )
        self._secrets: tuple[float, list[str]] = (0.0, [])
        recovered = self.queue.recover()
        if recovered:
            count = plural(recovered, "memory", "memories")
            self._notices.append(f"Recovered {count} left by an earlier kernel; sending now.")
            self.queue.request_flush()
        self.autoretain = AutoRetainer(self)
        self.mental_models = MentalModelCache(self)  # mental models: first load on the worker
        self._closed = False
        atexit.register(self._at_exit)
        if start_worker:
            self.queue.start()
        # after %load_ext has returned: the first load imports httpx, which would compete
        # with the rest of the load for the interpreter
        self.mental_models.start(delay_s=STARTUP_DELAY_S if start_worker else 0.0)

    # -- construction -----------------------------------------------------------------------

    def _new_client(self) -> HindsightClient:
        s = self.settings
        timeouts = Timeouts(
            request=s.request_timeout_ms / 1000,
            retain=s.retain_timeout_ms / 1000,
            recall=s.recall_timeout_ms / 1000,
            reflect=s.reflect_timeout_ms / 1000,
        )
        client = HindsightClient(self.api_url, s.key(), timeouts, transport=self._transport)
        self._clients.append(client)
        return client

    def _compute_scope(self) -> BankScope:
        s = self.settings
        return compute_scope(s.scoping, s.bank_id, s.bank_prefix, self.label)

    def apply(self, settings: Settings, *, label: str | None = None) -> None:
        """Adopt new settings (and project label); a connection or scope change flushes first."""
        with self._lock:
            label = label or self.label
            url = resolve_api_url(settings)
            old = self.settings
            connection = url != self.api_url or any(
                getattr(old, f) != getattr(settings, f) for f in CONNECTION_FIELDS
            )
            scope = label != self.label or any(
                getattr(old, f) != getattr(settings, f) for f in SCOPE_FIELDS
            )
            if scope:  # cells that ran under the old scope are retained under it
                self.autoretain.process(force=True)
            if connection or scope:
                self.queue.flush(FLUSH_BEFORE_READ_S)
            self.settings, self.label, self.api_url = settings, label, url
            configure_logging(settings.debug)
            self.autoretain.configure(settings.auto_retain, settings.retain_every_n_cells)
            if connection:
                self.client = self._new_client()
            self.scope = self._compute_scope()
            # mental models: a new scope/connection or switching them on loads them again
            mm_fields = ("mental_models", "mental_model_auto_seed")
            mm_changed = any(getattr(old, f) != getattr(settings, f) for f in mm_fields)
            if connection or scope or mm_changed:
                self.mental_models.reload()

    # -- writing ----------------------------------------------------------------------------

    def metadata(self) -> dict[str, str]:
        """``session_id`` and, when known, ``notebook``."""
        meta = {"session_id": self.session_id}
        notebook = self._notebook()
        if notebook:
            meta["notebook"] = notebook
        return meta

    def retain(
        self,
        content: str,
        *,
        context: str | None = None,
        tags: Sequence[str] = (),
        document_id: str | None = None,
        update_mode: str | None = None,
        timestamp: str | None = None,
    ) -> int:
        """Queue one memory on the current route; returns the number pending. No I/O."""
        scope = self.scope
        tags = [_encodable(tag) for tag in tags]
        all_tags = tuple(dict.fromkeys((*(scope.retain_tags or ()), *tags))) or None
        item = MemoryItem(
            content=redact(_encodable(content), self._secret_values()),
            timestamp=timestamp or local_timestamp(),
            context=_encodable(context or self.settings.retain_context),
            metadata=self.metadata(),
            tags=all_tags,
            document_id=document_id,
            update_mode=update_mode,
        )
        return self.queue.enqueue(Route(scope.bank_id, all_tags), item)

    def _secret_values(self) -> list[str]:
        """Values to redact (cached briefly: the environment rarely changes)."""
        expires, values = self._secrets
        now = time.monotonic()
        if now >= expires:
            values = secret_values(self.settings.key())
            self._secrets = (now + SECRETS_TTL_S, values)
        return values

    def _ensure_bank(self, client: HindsightClient, bank_id: str) -> None:
        key = f"{client.base_url}#{bank_id}"
        if key in ENSURED_BANKS:
            return
        try:
            client.create_bank(bank_id, self.settings.bank_mission, self.settings.retain_mission)
        except HindsightError as error:
            log.debug("Hindsight: ensureBankExists failed: %s", error)
            return
        ENSURED_BANKS.add(key)
        log.debug("Hindsight: ensured bank %s", bank_id)

    def _send_batch(self, batch: Batch) -> None:
        client = self.client
        client.identity()
        self._ensure_bank(client, batch.route.bank_id)
        secrets = self._secret_values()
        items = []
        for item in batch.items:
            body = item.to_json()
            body["content"] = redact(body["content"], secrets)
            items.append(body)
        try:
            client.retain_batch(batch.route.bank_id, items, operation_id=batch.operation_id)
        except HindsightError as error:
            if error.status_code not in (401, 403):
                raise
            message = explain(error, self.api_url)  # says to check HINDSIGHT_API_KEY
            raise HindsightError(
                error.operation, message, error.status_code, error.details, error.kind
            ) from None

    def _note_failure(self, batch: Batch, message: str) -> None:
        count = plural(batch.count, "memory", "memories")
        self._notices.append(
            f"Memory retention failed for {count}: {message} "
            "(kept: %hindsight retry re-sends, %hindsight retry --drop discards)"
        )

    def take_notices(self) -> list[str]:
        """Background outcomes not yet shown to the user (each is shown once)."""
        notices = []
        while self._notices:
            notices.append(self._notices.popleft())
        return notices

    def flush(self, timeout_s: float | None = None) -> Any:
        """Queue due transcripts, send everything now, wait until each batch was tried."""
        timeout = self.settings.retain_timeout_ms / 1000 if timeout_s is None else timeout_s
        self.autoretain.process()
        return self.queue.flush(timeout)

    def retry_failed(self) -> int:
        """Re-send permanently failed memories through the current connection."""
        count = self.queue.retry_failed()
        self.queue.request_flush()
        return count

    # -- reading ----------------------------------------------------------------------------

    def _prepare_read(self, bank_id: str) -> None:
        """Send queued memories, then wait (≤ 10 s) until the server has indexed the new ones.

        A retain is accepted asynchronously and becomes searchable about half a second later;
        waiting here is what lets ``%retain X`` followed by ``%recall X`` find X.
        """
        self.flush(FLUSH_BEFORE_READ_S)
        waiting = self.queue.take_recent(bank_id)
        deadline = time.monotonic() + INDEXING_WAIT_S
        while waiting and time.monotonic() < deadline:
            still = []
            for route, operation_id in waiting:
                try:
                    reply = self.client.operation(route.bank_id, operation_id)
                except HindsightError:
                    continue
                if reply and reply.get("status") == "pending":
                    still.append((route, operation_id))
            waiting = still
            if waiting:
                time.sleep(INDEXING_POLL_S)

    def recall(
        self,
        query: str,
        *,
        budget: str | None = None,
        max_tokens: int | None = None,
        types: Sequence[str] | None = None,
    ) -> RecallResult:
        """Ranked memories for ``query`` in the current scope (queued memories sent first)."""
        s, scope = self.settings, self.scope
        self._prepare_read(scope.bank_id)
        reply = self.client.recall(
            scope.bank_id,
            query,
            budget=budget or s.recall_budget,
            max_tokens=max_tokens or s.recall_max_tokens,
            types=list(types) if types is not None else list(s.recall_types),
            tags=scope.recall_tags,
            tags_match=scope.tags_match,
        )
        from .api.responses import RecallResponse

        memories = RecallResponse.model_validate(reply).results if reply else []
        result = RecallResult(query, memories, scope.bank_id)
        self.last_recall = result
        return result

    def reflect(
        self, question: str, *, context: str | None = None, budget: str | None = None
    ) -> ReflectResult:
        """The server's synthesized answer to ``question`` over the current scope."""
        scope = self.scope
        self._prepare_read(scope.bank_id)
        self._ensure_bank(self.client, scope.bank_id)
        reply = self.client.reflect(
            scope.bank_id,
            question,
            budget=budget or self.settings.recall_budget,
            context=context,
            tags=scope.recall_tags,
            tags_match=scope.tags_match,
        )
        from .api.responses import ReflectResponse

        parsed = ReflectResponse.model_validate(reply)
        return ReflectResult(parsed.text or "", question, parsed.based_on)

    # -- status and lifecycle ---------------------------------------------------------------

    def status(self, check_server: bool = True) -> Report:
        """Server, scope, queue, auto-retain, mental models and session, as a report."""
        from .ui.status import status_report

        return status_report(self, check_server)

    @property
    def closed(self) -> bool:
        """Whether ``close`` ran (the extension was unloaded or the kernel exits)."""
        return self._closed

    def close(self, timeout_s: float = EXIT_FLUSH_S) -> int:
        """Flush (bounded), stop the worker, close connections; returns items left undelivered."""
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
        atexit.unregister(self._at_exit)
        try:
            self.autoretain.process(force=True)  # the cells not yet retained
        except Exception:
            log.debug("Hindsight: final auto-retain failed", exc_info=True)
        left = self.queue.close(timeout_s)
        if left:
            log.warning("Hindsight: %d memories were not delivered before unload", left)
        for client in self._clients:
            client.close()
        return left

    def _at_exit(self) -> None:
        try:
            self.close(EXIT_FLUSH_S)
        except Exception:  # never raise at interpreter exit
            log.debug("Hindsight: exit flush failed", exc_info=True)
