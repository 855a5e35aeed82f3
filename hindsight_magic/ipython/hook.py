"""Auto-retain: the ``post_run_cell`` hook and the every-N-cells tracker.

The hook runs on the kernel thread and does O(1) work: it appends a reference to the cell's
``ExecutionResult`` to a deque and, when enough cells may have accumulated, wakes the worker.
Everything else — skip rules, output capture, redaction, transcript building — runs on the
worker in ``AutoRetainer.process``. The hook never prints and never raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..capture.transcript import (
    CellText,
    format_cell,
    is_skipped,
    join_transcript,
    redact,
    secret_values,
)
from ..delivery.items import local_timestamp

if TYPE_CHECKING:
    from ..session import HindsightSession

log = logging.getLogger("hindsight_magic")

MAX_UNPROCESSED = 10_000
IDLE_S = 0.25  # transcripts are built once the kernel has been idle this long…
MAX_DEFERRED = 500  # …or once this many cells are waiting


# One executed cell as the hook keeps it: (number, source, ran_at, ExecutionResult).
CellRun = tuple[int, str, float, Any]


@dataclass(frozen=True)
class AutoRetainStatus:
    """Auto-retain counters for status and the panel."""

    enabled: bool
    mode: str
    every: int
    counted: int
    until_next: int
    retained: int
    last_error: str | None


def _outputs_of(result: Any, shell: Any) -> tuple[str | None, str | None, str | None]:
    """(result text, error text, stdout) of an executed cell, from what IPython kept."""
    error = result.error_in_exec or result.error_before_exec
    error_text = f"{type(error).__name__}: {error}" if error is not None else None
    result_text = stdout = None
    outputs = getattr(getattr(shell, "history_manager", None), "outputs", None)
    kept = outputs.get(result.execution_count) if outputs is not None else None
    if kept:  # IPython >= 9.1 records what the cell displayed
        streams = []
        for output in kept:
            if output.output_type == "execute_result":
                result_text = str(output.bundle.get("text/plain", "")) or None
            elif output.output_type == "out_stream" and error is None:
                streams.append("".join(output.bundle.get("stream", [])))
        stdout = "".join(streams) or None
    elif result.result is not None:
        try:
            result_text = repr(result.result)
        except Exception:
            result_text = None
    return result_text, error_text, stdout


class AutoRetainer:
    """Counts cells and queues a transcript every N counted cells (worker thread)."""

    def __init__(self, session: HindsightSession, shell: Any = None) -> None:
        self._session = session
        self._shell = shell
        self._raw: deque[CellRun] = deque(maxlen=MAX_UNPROCESSED)
        self._lock = threading.Lock()
        self._since_last: list[tuple[float, str]] = []
        self._recent: deque[str] = deque()
        self._counted = 0
        self._retained = 0
        self._last_error: str | None = None
        self._needed = session.settings.retain_every_n_cells
        self._paused = False
        self._enabled = session.settings.auto_retain
        self._scheduled = False
        self._last_cell = 0.0
        self._last_stamp = 0

    # -- kernel thread ----------------------------------------------------------------------

    def post_run_cell(self, result: Any) -> None:
        """IPython ``post_run_cell`` callback: O(1), silent, never raises."""
        try:
            info = result.info
            if not (self._enabled and info.store_history):
                return
            now = time.time()
            raw = self._raw
            raw.append((result.execution_count, info.raw_cell, now, result))
            self._last_cell = now
            if len(raw) >= self._needed and not self._scheduled:
                self._scheduled = self._session.queue.submit(self._process_when_idle, IDLE_S)
        except Exception:  # a hook must never disturb the user's cell
            log.debug("Hindsight: auto-retain hook failed", exc_info=True)

    def configure(self, enabled: bool, every: int) -> None:
        """Follow the settings (called by the session when they change)."""
        self._enabled = enabled and not self._paused
        self._needed = min(self._needed, every)

    def register(self, shell: Any) -> None:
        """Attach to ``shell`` (once)."""
        self._shell = shell
        if self.post_run_cell not in shell.events.callbacks["post_run_cell"]:
            shell.events.register("post_run_cell", self.post_run_cell)

    def unregister(self, shell: Any) -> None:
        """Detach from ``shell``."""
        if self.post_run_cell in shell.events.callbacks["post_run_cell"]:
            shell.events.unregister("post_run_cell", self.post_run_cell)

    def pause(self, paused: bool = True) -> None:
        """Stop (or resume) counting cells without changing settings."""
        self._paused = paused
        self._enabled = self._session.settings.auto_retain and not paused

    # -- worker thread ----------------------------------------------------------------------

    def _process_when_idle(self) -> None:
        """Build transcripts when the kernel is idle, so the work never slows a running cell."""
        busy = time.time() - self._last_cell < IDLE_S
        if busy and len(self._raw) < MAX_DEFERRED:
            self._scheduled = self._session.queue.submit(self._process_when_idle, IDLE_S)
            return
        self._scheduled = False
        self.process()

    def process(self, force: bool = False) -> bool:
        """Turn recorded cells into entries; queue a transcript when due (or ``force``)."""
        with self._lock:
            settings = self._session.settings
            every = settings.retain_every_n_cells
            window = every + settings.retain_overlap_cells
            secrets = secret_values(settings.key()) if self._raw else []
            queued = False
            while self._raw:
                number, source, ran_at, result = self._raw.popleft()
                if is_skipped(source):
                    continue
                result_text, error_text, stdout = _outputs_of(result, self._shell)
                cell = CellText(number, source, result_text, error_text, stdout)
                entry = format_cell(cell, settings.retain_outputs, secrets)
                if not entry:
                    continue
                self._counted += 1
                self._since_last.append((ran_at, entry))
                self._recent.append(entry)
                while len(self._recent) > window:
                    self._recent.popleft()
                if len(self._since_last) >= every:  # every N cells, however late we look
                    queued = self._retain(settings.retain_mode) or queued
            if force and self._since_last:
                queued = self._retain(settings.retain_mode) or queued
            self._needed = max(1, every - len(self._since_last))
            return queued

    def _retain(self, mode: str) -> bool:
        session = self._session
        first_ran = datetime.fromtimestamp(self._since_last[0][0], timezone.utc)
        if mode == "last-cells":
            entries = list(self._recent)
            stamp = max(int(self._since_last[-1][0] * 1000), self._last_stamp + 1)
            self._last_stamp = stamp  # unique even for windows closed in one millisecond
            document_id = f"{session.session_id}-{stamp}"
            update_mode = None
        else:
            entries = [entry for _, entry in self._since_last]
            document_id, update_mode = session.session_id, "append"
        self._since_last = []
        self._needed = session.settings.retain_every_n_cells
        transcript = join_transcript(entries)
        if transcript is None:
            return False
        transcript = redact(transcript, secret_values(session.settings.key()))
        try:
            session.retain(
                transcript,
                context=session.settings.retain_context,
                document_id=document_id,
                update_mode=update_mode,
                timestamp=local_timestamp(first_ran),
            )
        except Exception as error:  # the queue is closed: nothing to retain into
            self._last_error = str(error)
            log.warning("Hindsight: auto-retain failed: %s", error)
            return False
        self._retained += 1
        log.debug("Hindsight: auto-retain queued %d cells", len(entries))
        return True

    def status(self, process: bool = True) -> AutoRetainStatus:
        """Counters for status and the panel.

        With ``process`` (a user-run ``%hindsight status``), cells not yet looked at are
        processed first; the panel's background refresh passes False, so that transcript work
        still waits for an idle kernel.
        """
        if process and self._raw:
            self.process()
        settings = self._session.settings
        return AutoRetainStatus(
            enabled=settings.auto_retain and not self._paused,
            mode=settings.retain_mode,
            every=settings.retain_every_n_cells,
            counted=self._counted,
            until_next=max(0, settings.retain_every_n_cells - len(self._since_last)),
            retained=self._retained,
            last_error=self._last_error,
        )
