"""``HindsightSession``: builds one kernel's parts and hands each what it needs — nothing else.

The parts, and who gets what:

- ``connection`` (api): the client for the URL, key and timeouts in force;
- ``queue`` (delivery): batches, retries, and its journal on disk; it reports refusals to
  ``notices``;
- ``worker`` (delivery): the one background thread; it sends the queue's batches through a
  ``BatchSender`` (ensure-bank, identity, the refused-key message) and runs every other part's
  background jobs (``submit``);
- ``autoretain`` (capture): cells → transcripts, queued through ``retain``;
- ``mental_models`` (memory): the bank's mental models, loaded on the worker;
- ``reader`` (memory): recall and reflect, after ``before_read`` sent and indexed the queue.

The session also follows the settings: when one changes, the part its ``affects`` tag names is
rebuilt (a new connection or scope flushes the queue first, so queued memories keep their route).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import sys
import threading
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ._api.client import Connection, Timeouts
from ._capture.autoretain import AutoRetainer
from ._capture.redact import SecretValues
from ._delivery.items import Batch, FlushOutcome, Route, new_item
from ._delivery.journal import open_journal
from ._delivery.queue import RetainQueue
from ._delivery.sender import BatchSender, own_document_id, prepare_read
from ._delivery.worker import Worker
from ._machine import resolve_api_url
from ._memory.mental_models import MentalModelCache
from ._memory.provenance import PYTHON_API, provenance_metadata
from ._memory.reading import Reader
from ._memory.scope import BankScope, compute_scope, project_label
from ._text import local_timestamp, plural

if TYPE_CHECKING:
    import httpx

    from ._api.client import HindsightClient
    from ._settings import HindsightSettings
    from ._ui.display import Report


log = logging.getLogger("hindsight_magic")
FLUSH_BEFORE_READ_S = 5.0
EXIT_FLUSH_S = 3.0
STARTUP_DELAY_S = 0.3


def notebook_from_env() -> str | None:
    """The notebook's path as Jupyter Server tells the kernel (``JPY_SESSION_NAME``), or None."""
    return os.environ.get("JPY_SESSION_NAME") or None


class HindsightSession:
    """Everything one kernel (or one script) needs to remember."""

    def __init__(
        self,
        settings: HindsightSettings,
        *,
        cwd: str | None = None,
        session_id: str | None = None,
        notebook: Callable[[], str | None] = notebook_from_env,
        transport: httpx.BaseTransport | None = None,
        start_worker: bool = True,
        queue_options: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        configure_logging(settings.debug)
        self.session_id = session_id or kernel_id() or str(uuid.uuid4())
        self.started_at = datetime.now(timezone.utc)
        self._notebook = notebook
        self._lock = threading.RLock()
        self.label = project_label(cwd)
        self.scope = self._compute_scope()
        self.connection = Connection(transport)
        self._connect()
        self.notices = Notices()
        self.secrets = SecretValues(settings.key)
        journal, problem = open_journal(settings.journal_path)
        if problem:
            self.notices.add(problem)
        self.sender = BatchSender(self.connection, settings, self.secrets)
        self.queue = RetainQueue(
            journal,
            on_failure=self.notices.retention_failed,
            on_notice=self.notices.add,
            **(queue_options or {}),
        )
        self.worker = Worker(self.queue, self.sender)
        recovered = self.queue.recover()
        if recovered:
            count = plural(recovered, "memory", "memories")
            self.notices.add(f"Recovered {count} left by an earlier kernel; sending now.")
            self.queue.request_flush()
        self.autoretain = AutoRetainer(
            settings,
            session_id=self.session_id,
            retain=self.retain,
            worker=self.worker,
            secrets=self.secrets,
        )
        self.mental_models = MentalModelCache(
            settings, self.connection, lambda: self.scope, self.worker
        )
        self.reader = Reader(settings, self.connection, lambda: self.scope, self._before_read)
        self.reader.model_names = self.mental_models.names
        self._closed = False
        settings.observe(self._setting_changed, names=list(settings.setting_names()))
        atexit.register(self._at_exit)
        if start_worker:
            self.worker.start()
            self.worker.submit(self._warm_up, STARTUP_DELAY_S)
        # after %load_ext has returned: the warm-up and the first model load import httpx,
        # which would compete with the rest of the load for the interpreter
        self.mental_models.start(delay_s=STARTUP_DELAY_S if start_worker else 0.0)

    # -- the parts ----------------------------------------------------------------------------

    @property
    def client(self) -> HindsightClient:
        """The current client (settable: tests inject one with a fault transport)."""
        return self.connection.client

    @client.setter
    def client(self, client: HindsightClient) -> None:
        self.connection.use(client)

    @property
    def api_url(self) -> str:
        """The server URL in use (the setting, a running local server, or the fallback)."""
        return self.connection.url

    @property
    def notebook(self) -> str | None:
        """The notebook's path when the front end tells it, else None."""
        return self._notebook()

    def _connect(self) -> None:
        s = self.settings
        timeouts = Timeouts(
            request=s.request_timeout_ms / 1000,
            retain=s.retain_timeout_ms / 1000,
            recall=s.recall_timeout_ms / 1000,
            reflect=s.reflect_timeout_ms / 1000,
        )
        self.connection.open(resolve_api_url(s), s.key(), timeouts)

    def _compute_scope(self) -> BankScope:
        s = self.settings
        return compute_scope(s.scoping, s.bank_id, s.bank_prefix, self.label)

    def _setting_changed(self, change: Any) -> None:
        name = change["name"]
        affects = type(self.settings).class_traits()[name].metadata.get("affects")
        with self._lock:
            if affects in ("connection", "scope"):
                self._reroute(connection=affects == "connection")
            elif affects == "autoretain":
                self.autoretain.configure()
            elif affects == "mental_models":
                self.mental_models.reload()
            elif affects == "logging":
                configure_logging(self.settings.debug)

    def set_project(self, label: str) -> None:
        """Use ``label`` as the project (``%hindsight scope --project``, or a new folder)."""
        with self._lock:
            if label != self.label:
                self.label = label
                self._reroute(connection=False)

    def _reroute(self, *, connection: bool) -> None:
        """A new connection or scope: what was queued goes first, under its own route."""
        scope = self._compute_scope()
        if scope != self.scope:  # cells that ran under the old scope are retained under it
            self.autoretain.process(force=True)
        self.worker.flush(FLUSH_BEFORE_READ_S)
        if connection:
            self._connect()
        self.scope = scope
        self.mental_models.reload()

    def _warm_up(self) -> None:
        """The worker's first job: import what sending and reading need (httpx, the reply
        models) while the kernel is idle, not in a busy cell or the first ``%recall``."""
        self.sender.warm_up()
        self.reader.warm_up()

    # -- writing ----------------------------------------------------------------------------

    def retain(
        self,
        content: str,
        *,
        context: str | None = None,
        tags: Sequence[str] = (),
        document_id: str | None = None,
        update_mode: str | None = None,
        ran_at: datetime | float | None = None,
        timestamp: str | None = None,
        source: str = PYTHON_API,
        cells: Sequence[int] = (),
    ) -> int:
        """Queue one memory on the current route; returns the number pending. No I/O.

        Its time is ``timestamp`` (ISO 8601) if given, else when it ran (``ran_at``), else now;
        its metadata say where it came from (``memory/provenance.py``: ``source``, ``cells``).
        """
        scope = self.scope
        item = new_item(
            content,
            timestamp=timestamp or local_timestamp(ran_at),
            context=context or self.settings.retain_context,
            metadata=provenance_metadata(source, self.session_id, self._notebook(), cells),
            tags=tuple(dict.fromkeys((*(scope.retain_tags or ()), *tags))),
            secrets=self.secrets(),
            document_id=document_id or own_document_id(update_mode),  # re-sends replace it
            update_mode=update_mode,
        )
        return self.queue.enqueue(Route(scope.bank_id, item.tags), item)

    def take_notices(self) -> list[str]:
        """Background outcomes not yet shown to the user (each is shown once)."""
        return self.notices.take()

    def flush(self, timeout_s: float | None = None) -> FlushOutcome:
        """Queue due transcripts, send everything now, wait until each batch was tried."""
        timeout = self.settings.retain_timeout_ms / 1000 if timeout_s is None else timeout_s
        self.autoretain.process()
        return self.worker.flush(timeout)

    def retry_failed(self) -> int:
        """Re-send permanently failed memories through the current connection."""
        count = self.queue.retry_failed()
        self.queue.request_flush()
        return count

    # -- reading ----------------------------------------------------------------------------

    def _before_read(self, bank_id: str) -> None:
        """Send queued memories, then wait (≤ 15 s) until the server can find them."""
        queue = self.queue
        prepare_read(bank_id, self.sender, self.flush, queue.take_recent, queue.feed.indexed)

    # -- status and lifecycle ---------------------------------------------------------------

    def status(self, check_server: bool = True) -> Report:
        """Server, scope, queue, auto-retain, mental models and session, as a report."""
        from ._ui.status import status_report

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
        self.settings.unobserve(self._setting_changed, names=list(self.settings.setting_names()))
        try:
            self.autoretain.process(force=True)  # the cells not yet retained
        except Exception:
            log.debug("Hindsight: final auto-retain failed", exc_info=True)
        left = self.worker.close(timeout_s)
        if left:
            log.warning("Hindsight: %d memories were not delivered before unload", left)
        self.connection.close()
        return left

    def _at_exit(self) -> None:
        try:
            self.close(EXIT_FLUSH_S)
        except Exception:  # never raise at interpreter exit
            log.debug("Hindsight: exit flush failed", exc_info=True)


log.addHandler(logging.NullHandler())  # never print from the worker into a cell


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (kernels and test runners replace it;
    a stream captured at import may be closed by then)."""

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


_DEBUG_HANDLER = _CurrentStderr()


_DEBUG_HANDLER.setFormatter(logging.Formatter("hindsight_magic %(levelname)s: %(message)s"))


def configure_logging(debug: bool) -> None:
    """With ``debug`` on, show the ``hindsight_magic`` logger's debug records on stderr."""
    if debug:
        log.setLevel(logging.DEBUG)
        if _DEBUG_HANDLER not in log.handlers:
            log.addHandler(_DEBUG_HANDLER)
    else:
        log.setLevel(logging.NOTSET)
        log.removeHandler(_DEBUG_HANDLER)


def kernel_id() -> str | None:
    """The Jupyter kernel id from the connection file, when running in a kernel."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.connect import get_connection_file

        name = os.path.basename(get_connection_file())
    except Exception:
        return None
    match = re.fullmatch(r"kernel-(.+)\.json", name)
    return match.group(1) if match else None


MAX_NOTICES = 50


class Notices:
    """A bounded queue of one-line notices (thread-safe: ``deque`` appends and pops are)."""

    def __init__(self) -> None:
        self._notices: deque[str] = deque(maxlen=MAX_NOTICES)

    def add(self, text: str) -> None:
        """Leave one line for the user."""
        self._notices.append(text)

    def retention_failed(self, batch: Batch, message: str) -> None:
        """The queue's ``on_failure``: the server refused a batch for good."""
        count = plural(batch.count, "memory", "memories")
        self.add(
            f"Memory retention failed for {count}: {message} "
            "(kept: %hindsight retry re-sends, %hindsight retry --drop discards)"
        )

    def pending(self) -> tuple[str, ...]:
        """The notices not yet shown, without taking them."""
        return tuple(self._notices)

    def take(self) -> list[str]:
        """The notices not yet shown, oldest first (each is returned once)."""
        taken = []
        while self._notices:
            taken.append(self._notices.popleft())
        return taken
