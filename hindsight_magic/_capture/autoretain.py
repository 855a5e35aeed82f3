"""Auto-retain: executed cells → memories every N counted cells.

``post_run_cell`` runs on the kernel thread (it is the IPython hook) and does O(1) work: it
appends the cell's ``ExecutionResult`` to a deque and, when enough cells may have accumulated,
schedules ``process`` on the worker. Everything else — skip rules, output capture, redaction,
cutting cells into pieces, finding their entities — runs on the worker, once the kernel has
been idle for ``IDLE_S``.

**What is retained is shaped to be found.** Every N cells, each new cell becomes its own
memory (``full-session``, the default), or the window of the last N + overlap cells is packed
into memories (``last-cells``); a cell longer than the embedding model reads whole is cut at
line boundaries into parts (``transcript.cell_pieces``). Each memory is its own document, with
its cell number, and the entities the cell names (``entities.py``). Measured (turn 4, issue 33):
one growing document per kernel, which the server cut into 3 000-character chunks, let recall
find 1 of 8 plain questions; one document per cell, 8 of 8. Each memory is sent once, so what
one retain sends grows with the new cells only, never with the session.

The auto-retainer knows nothing of IPython or of the session: it is handed the settings, a
``retain`` function that queues one memory, the worker to schedule its jobs on, the secrets to
redact and a function that reads a cell's outputs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from .._enums import StrEnum
from .._settings import RetainMode
from .entities import entities_of
from .evidence import MAX_FILES, Evidence, recorded
from .identity import CellPlan
from .transcript import (
    MIN_TRANSCRIPT_CHARS,
    CellText,
    cell_pieces,
    clean_cell,
    is_own_result,
    is_skipped,
    pack_pieces,
)

if TYPE_CHECKING:
    from .._settings import HindsightSettings

log = logging.getLogger("hindsight_magic")


class Source(StrEnum):
    """Where a memory came from: its provenance ``source`` (``_memory/provenance.py`` writes
    and reads it). Here, below ``_memory``, because the delivery layer asks whether a memory
    is an auto-retained transcript."""

    RETAIN_MAGIC = "%retain"
    AUTORETAIN = "autoretain"
    PYTHON_API = "python api"
    AGENT = "agent"  # an AI agent wrote it (through the MCP server, or ``retain(agent=…)``)


AUTORETAIN = Source.AUTORETAIN  # the ``source`` of the memories it writes
MAX_UNPROCESSED = 10_000
IDLE_S = 0.25  # transcripts are built once the kernel has been idle this long…
MAX_DEFERRED = 500  # …or once this many cells are waiting

# One executed cell as the hook keeps it: (number, source, ran_at, ExecutionResult).
CellRun = tuple[int, str, float, Any]
# One memory to queue: (ran_at, cells, text, document id, when the version it replaces ran).
Piece = tuple[float, tuple[int, ...], str, str | None, str | None]
# (result text, error text, stdout) of an executed cell.
Outputs = tuple[str | None, str | None, str | None]


class Scheduler(Protocol):
    """Runs a job on the background thread later (the session's worker)."""

    def submit(self, job: Callable[[], object], delay_s: float = 0.0) -> bool: ...


class Retain(Protocol):
    """Queues one memory (the session's ``retain``)."""

    def __call__(
        self,
        content: str,
        *,
        context: str | None = ...,
        ran_at: float | None = ...,
        source: Source = ...,
        cells: Sequence[int] = ...,
        entities: Sequence[str] = ...,
        document_id: str | None = ...,
        replaces: str | None = ...,
        evidence: tuple[Sequence[Evidence], str] = ...,
    ) -> object: ...


class PlanCell(Protocol):
    """Decides what a cell that ran becomes (the session's, over ``_memory.versions``): None
    when nothing is to be sent — its version is the cell's current one — else the plan of a
    new version (its identity names each piece's document)."""

    def __call__(self, entry: Entry) -> CellPlan | None: ...


@dataclass(frozen=True)
class Entry:
    """One counted cell, ready to retain: when it ran, its cleaned (redacted, capped) parts and
    the pieces it becomes."""

    ran_at: float
    cell: CellText
    pieces: list[str]
    cell_id: str | None = None  # Jupyter's id of the cell, when the front end sent one
    evidence: tuple[tuple[Evidence, ...], str] = ((), "")  # the data files it read, its project

    def pieces_as_shown(self) -> list[str] | None:
        """The pieces of the cell with its outputs as it showed them, when the texts the
        extension showed were cut out of them (``CellText.as_shown``), else None."""
        as_shown = self.cell.as_shown
        return cell_pieces(as_shown) if as_shown is not None else None

    def entities(self, piece: str | None = None) -> tuple[str, ...]:
        """What the cell names (or, for one ``piece`` of a cut cell, what that piece names)."""
        outputs = (self.cell.result or "", self.cell.error or "", self.cell.stdout or "")
        return entities_of(outputs, code=self.cell.source, within=piece)


@dataclass(frozen=True)
class AutoRetainStatus:
    """Auto-retain counters for status and the panel."""

    enabled: bool
    mode: str
    every: int
    counted: int
    until_next: int
    retained: int  # cells queued as memories (a window's cells each time in ``last-cells``)
    last_error: str | None
    unchanged: int = 0  # cells re-run unchanged: nothing was sent for them


def _worth_sending(piece: str) -> bool:
    """Whether a piece says enough to be asked about (``x = 1`` does not)."""
    return len(piece.split("\n", 1)[-1].strip()) >= MIN_TRANSCRIPT_CHARS


def error_text(result: Any) -> str | None:
    """``Type: message`` of the error an ``ExecutionResult`` carries (no traceback), or None."""
    error = result.error_in_exec or result.error_before_exec
    return f"{type(error).__name__}: {error}" if error is not None else None


def plain_outputs(result: Any) -> Outputs:
    """(result repr, error, None) from an ``ExecutionResult`` alone (no recorded outputs)."""
    result_text = None
    if result.result is not None and not is_own_result(result.result):
        try:
            result_text = repr(result.result)
        except Exception:
            result_text = None
    return result_text, error_text(result), None


class AutoRetainer:
    """Counts cells and queues a transcript every N counted cells (worker thread)."""

    def __init__(
        self,
        settings: HindsightSettings,
        *,
        session_id: str,
        retain: Retain,
        worker: Scheduler,
        secrets: Callable[[], list[str]],
        outputs_of: Callable[[Any], Outputs] = plain_outputs,
        plan: PlanCell | None = None,
    ) -> None:
        """``plan``: what keeps re-runs from multiplying memories (each cell a document per
        version, an unchanged re-run sending nothing); without it every run is new."""
        self._settings = settings
        self._session_id = session_id
        self._queue_memory = retain
        self._worker = worker
        self._secrets = secrets
        self.outputs_of = outputs_of
        self._plan = plan
        self._unchanged = 0
        self._raw: deque[CellRun] = deque(maxlen=MAX_UNPROCESSED)
        self._lock = threading.Lock()
        self._since_last: list[Entry] = []  # the counted cells not retained yet
        self._recent: deque[Entry] = deque()  # the last N + overlap cells (``last-cells``)
        self._counted = 0
        self._retained = 0
        self._last_error: str | None = None
        self._needed = settings.retain_every_n_cells
        self._paused = False
        self._enabled = settings.auto_retain
        self._scheduled = False
        self._last_cell = 0.0

    # -- kernel thread ----------------------------------------------------------------------

    def post_run_cell(self, result: Any) -> None:
        """Keep one executed cell (O(1)); wake the worker when N cells may be due.

        The ``post_run_cell`` callback itself (``_ipython.extension.CellHook`` registers it):
        ``result`` has the shape of IPython's ``ExecutionResult``. Silent, and never raises.
        """
        try:
            info = result.info
            if not (self._enabled and info.store_history):
                return
            now = time.time()
            raw = self._raw
            raw.append((result.execution_count, info.raw_cell, now, result))
            self._last_cell = now
            if len(raw) >= self._needed and not self._scheduled:
                self._scheduled = self._worker.submit(self._process_when_idle, IDLE_S)
        except Exception:  # a hook must never disturb the user's cell
            log.debug("Hindsight: auto-retain hook failed", exc_info=True)

    def configure(self) -> None:
        """Follow the settings (the session calls this when ``auto_retain`` or N change)."""
        self._enabled = self._settings.auto_retain and not self._paused
        self._needed = min(self._needed, self._settings.retain_every_n_cells)

    def pause(self, paused: bool = True) -> None:
        """Stop (or resume) counting cells without changing settings."""
        self._paused = paused
        self._enabled = self._settings.auto_retain and not paused

    # -- worker thread ----------------------------------------------------------------------

    def _process_when_idle(self) -> None:
        """Build transcripts when the kernel is idle, so the work never slows a running cell."""
        busy = time.time() - self._last_cell < IDLE_S
        if busy and len(self._raw) < MAX_DEFERRED:
            self._scheduled = self._worker.submit(self._process_when_idle, IDLE_S)
            return
        self._scheduled = False
        self.process()

    def process(self, force: bool = False) -> bool:
        """Turn recorded cells into entries; queue their memories when due (or ``force``)."""
        with self._lock:
            settings = self._settings
            every = settings.retain_every_n_cells
            window = every + settings.retain_overlap_cells
            secrets = self._secrets() if self._raw else []
            queued = False
            while self._raw:
                number, source, ran_at, result = self._raw.popleft()
                if is_skipped(source):
                    continue
                cell = CellText(number, source, *self.outputs_of(result))
                cleaned = clean_cell(cell, settings.retain_outputs, secrets)
                if cleaned is None:
                    continue
                self._counted += 1
                cell_id = getattr(getattr(result, "info", None), "cell_id", None) or None
                entry = Entry(ran_at, cleaned, cell_pieces(cleaned), cell_id)
                self._since_last.append(entry)
                self._recent.append(entry)
                while len(self._recent) > window:
                    self._recent.popleft()
                if len(self._since_last) >= every:  # every N cells, however late we look
                    queued = self._retain(settings.retain_mode) or queued
            if force and self._since_last:
                queued = self._retain(settings.retain_mode) or queued
            self._needed = max(1, every - len(self._since_last))
            return queued

    def _retain(self, mode: RetainMode) -> bool:
        """Queue the memories of the cells since the last retain (``last-cells``: of the
        window), each with its cells and entities."""
        memories: list[Piece] = []
        if mode == RetainMode.LAST_CELLS:
            entries = [self._with_evidence(entry) for entry in self._recent]
            packed = pack_pieces((entry.cell.number, entry.pieces) for entry in entries)
            by_cell = {entry.cell.number: entry for entry in entries}
            memories = [
                (by_cell[cells[0]].ran_at, cells, text, None, None) for cells, text in packed
            ]
        else:
            by_cell = {entry.cell.number: entry for entry in self._since_last}
            for entry in self._since_last:
                if not any(_worth_sending(piece) for piece in entry.pieces):
                    continue  # never sent, so never a version to replace either
                entry = by_cell[entry.cell.number] = self._with_evidence(entry)
                send, plan = self._planned(entry)
                if not send:
                    continue
                for n, piece in enumerate(entry.pieces, 1):
                    document_id = plan.identity.document_id(n) if plan else None
                    replaces = plan.replaces if plan else None
                    memories.append(
                        (entry.ran_at, (entry.cell.number,), piece, document_id, replaces)
                    )
        self._since_last = []
        self._needed = self._settings.retain_every_n_cells
        queued, retained = 0, set[int]()
        read = self._evidence(by_cell, {cells for _, cells, *_ in memories})
        for ran_at, cells, text, document_id, replaces in memories:
            if not _worth_sending(text):
                continue
            found = [
                name
                for number in cells
                for name in by_cell[number].entities(None if len(cells) > 1 else text)
            ]
            try:
                self._queue_memory(
                    text,
                    context=self._settings.retain_context,
                    ran_at=ran_at,
                    source=AUTORETAIN,
                    cells=cells,
                    entities=found,
                    document_id=document_id,
                    replaces=replaces,
                    evidence=read.get(cells, ((), "")),
                )
            except Exception as error:  # the queue is closed: nothing to retain into
                self._last_error = str(error)
                log.warning("Hindsight: auto-retain failed: %s", error)
                return False
            queued += 1
            retained.update(cells)
        if not queued:
            return False
        self._retained += len(retained)
        log.debug("Hindsight: auto-retain queued %d memories", queued)
        return True

    def _with_evidence(self, entry: Entry) -> Entry:
        """``entry`` with the data files its cell read, fingerprinted here on the worker
        (``evidence.py``), when the ``evidence`` setting is on; a failure records none. Before
        its version is planned: a re-run on changed data is a new version (the session's
        ``_plan_cell``), which replaces the memory that rests on the old data."""
        settings = self._settings
        if not settings.evidence or entry.evidence[0]:
            return entry
        limit = settings.evidence_hash_limit_mb * 1024 * 1024
        try:
            found, root = recorded(
                entry.cell.source, ran_at=entry.ran_at, whole_limit=limit, secrets=self._secrets()
            )
        except Exception:
            log.debug("Hindsight: could not record a cell's data files", exc_info=True)
            return entry
        return replace(entry, evidence=(tuple(found), root)) if found else entry

    @staticmethod
    def _evidence(
        by_cell: dict[int, Entry], groups: set[tuple[int, ...]]
    ) -> dict[tuple[int, ...], tuple[Sequence[Evidence], str]]:
        """The data files each memory's cells read (a window's: all its cells')."""
        read: dict[tuple[int, ...], tuple[Sequence[Evidence], str]] = {}
        for cells in groups:
            files: list[Evidence] = []
            root = ""
            for number in cells:
                found, found_root = by_cell[number].evidence
                root = root or found_root
                files += [e for e in found if all(e.path != f.path for f in files)]
            if files:
                read[cells] = (files[:MAX_FILES], root)
        return read

    def _planned(self, entry: Entry) -> tuple[bool, CellPlan | None]:
        """(whether to send the cell, its plan): nothing is sent for an unchanged re-run; with
        no planner, or when it failed, the cell is sent as new, without a plan (nothing lost).
        """
        if self._plan is None:
            return True, None
        try:
            plan = self._plan(entry)
        except Exception:
            log.warning("Hindsight: could not tell a cell's earlier versions", exc_info=True)
            return True, None
        if plan is None:
            self._unchanged += 1
            return False, None
        return True, plan

    def status(self, process: bool = True) -> AutoRetainStatus:
        """Counters for status and the panel.

        With ``process`` (a user-run ``%hindsight status``), cells not yet looked at are
        processed first; the panel's background refresh passes False, so that transcript work
        still waits for an idle kernel.
        """
        if process and self._raw:
            self.process()
        settings = self._settings
        return AutoRetainStatus(
            enabled=settings.auto_retain and not self._paused,
            mode=settings.retain_mode,
            every=settings.retain_every_n_cells,
            counted=self._counted,
            until_next=max(0, settings.retain_every_n_cells - len(self._since_last)),
            retained=self._retained,
            last_error=self._last_error,
            unchanged=self._unchanged,
        )
