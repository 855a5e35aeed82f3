"""Keeping the journal in step with the queue — and carrying on while it cannot be written.

What happens to batches (operation ids, refusals, acceptance) is queued as *journal ops* under
the queue's lock and written by the worker outside it, before the batch is sent. When the
journal cannot be written (disk full, read-only, permissions, a damaged file), the queue keeps
every memory in memory and delivers as before, says so once, and retries from the worker every
``RETRY_S``: it reopens the file (a damaged one is moved aside), rewrites this kernel's rows
from what it holds, and says once that the memories are on disk again. Nothing is lost or sent
twice by the switch; only a kernel killed while the journal is down loses what it held in
memory (the user was told), and rows of memories delivered meanwhile may be sent again.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .batches import Batch, Route, batches_from_rows
from .items import MemoryItem
from .journal import Journal
from .sqlite_file import JournalError
from .stored import Kept
from .worker import BackgroundWorker

log = logging.getLogger("hindsight_magic")

RETRY_S = 5.0
QUICK_RETRY_S = 0.2
# retried at once, no line: transient, or (corrupt) the reopen moves the file aside and says so
QUIET_KINDS = {"locked", "replaced", "corrupt"}
Notify = Callable[[str], None]


@dataclass(frozen=True)
class JournalOp:
    """One change to write: ``batched`` (with ``operation_id``), ``failed`` or ``delete``.

    Row ids are read from the items when written (a rewrite may have renumbered them).
    """

    kind: str
    items: list[MemoryItem]
    operation_id: str | None = None
    error: str | None = None

    def apply(self, journal: Journal) -> None:
        ids = [row for item in self.items for row in item.journal_ids]
        if self.kind == "batched":
            journal.mark_batched(self.operation_id or "", ids)
        elif self.kind == "failed":
            journal.mark_failed(ids, self.error or "")
        else:
            journal.delete(ids)


class JournalKeeping(BackgroundWorker):
    """The queue's journal side (``QueuePump`` holds the queue state it reads)."""

    _pending: deque[tuple[Route, MemoryItem]]
    _outbox: list[Batch]
    _failed: list[Batch]
    _in_flight: Batch | None
    _first_pending_at: float | None
    _memory_cap: int

    def _init_keeping(self, journal: Journal | None, on_notice: Notify | None) -> None:
        self._journal = journal
        self._on_notice: Notify = on_notice or (lambda line: None)
        self._journal_ops: list[JournalOp] = []
        self._spilled = 0  # rows of ours in the journal only (memory was full)
        self._adopted = False
        self._durable = journal is not None and journal.available  # written to the journal
        self._journal_problem = None if journal is None else journal.problem
        self._said_down = not self._durable  # a journal not opened was reported by opening
        self._retry_at = 0.0

    def _failed_count(self) -> int:
        return sum(b.count for b in self._failed)

    # -- on any thread (lock held) ------------------------------------------------------------

    @property
    def journal_problem(self) -> str | None:
        """Why memories are held in memory only (None while the journal is written)."""
        with self._cond:
            if self._journal is None or self._durable or self._journal_problem is None:
                return None
            return self._journal_problem.reason

    def _journal_op(self, op: JournalOp) -> None:
        """Queue a change for the worker to write (lock held)."""
        if self._journal is not None:
            self._journal_ops.append(op)

    def _journal_due(self) -> bool:
        if self._journal is None:
            return False
        if self._durable:  # an idle kernel beats too: a stale owner's rows are taken over
            return bool(self._journal_ops) or self._journal.until_beat() == 0.0
        return self._clock() >= self._retry_at

    def _journal_deadlines(self) -> list[float]:
        if self._journal is None:
            return []
        if not self._durable:
            return [self._retry_at]
        wait = self._journal.until_beat()
        return [self._clock() + wait] if wait != float("inf") else []

    def _journal_down(self, error: JournalError) -> None:
        """The journal failed: hold memories in memory, say so once, retry later."""
        quiet = error.kind in QUIET_KINDS
        with self._cond:
            self._durable = False
            self._journal_problem = error
            self._retry_at = self._clock() + (QUICK_RETRY_S if quiet else RETRY_S)
            say = not quiet and not self._said_down
            self._said_down = self._said_down or say
            self._cond.notify_all()
        log.info("Hindsight journal: %s", error)
        if say and self._journal is not None:
            self._on_notice(
                f"The journal {self._journal.path} cannot be written ({error.reason}): queued "
                "memories are kept in memory only until it can; retrying by itself."
            )

    # -- on the worker (lock not held) --------------------------------------------------------

    def _drain_journal_ops(self) -> None:
        """Write the queued changes, in order (while the journal is down they wait)."""
        journal = self._journal
        while journal is not None:
            with self._cond:
                if not self._durable or not self._journal_ops:
                    return
                ops, self._journal_ops = self._journal_ops, []
            try:
                for op in ops:
                    op.apply(journal)
            except JournalError as error:
                self._journal_down(error)  # the rewrite on restore covers what was not written
                return

    def _beat_if_due(self) -> None:
        """The heartbeat between two sends: against a slow server one pump can last minutes."""
        journal = self._journal
        with self._cond:
            durable = self._durable
        if journal is None or not durable:
            return
        try:
            journal.heartbeat()
        except JournalError as error:
            self._journal_down(error)

    def _refill(self, journal: Journal) -> None:
        """Load spilled rows while memory has room (oldest first)."""
        with self._cond:
            room = self._memory_cap - len(self._pending) - self._failed_count()
            want = min(room, self._spilled)
        if want <= 0:
            return
        try:
            rows = journal.load_spilled(want)
            with self._cond:
                if not rows:  # the count drifted (another process touched our rows)
                    self._spilled = journal.count("spilled")
                self._spilled = max(0, self._spilled - len(rows))
                self._pending.extend((Route(row.bank_id, row.tags), row.item) for row in rows)
                if self._pending and self._first_pending_at is None:
                    self._first_pending_at = self._clock()
        except JournalError as error:
            self._journal_down(error)

    def _adopt_orphans(self) -> int:
        """Take over what dead kernels left (once per kernel); returns the memory count."""
        journal = self._journal
        assert journal is not None
        journal.claim_orphans()
        batched, failed = journal.rows("batched"), journal.rows("failed")
        spilled = journal.count("spilled")
        with self._cond:
            self._adopted = True
            found = spilled
            for rows, target in ((batched, self._outbox), (failed, self._failed)):
                for batch in batches_from_rows(rows):
                    target.append(batch)
                    found += batch.count
            self._spilled = spilled
            self._cond.notify_all()
        return found

    # -- what memory holds (lock held) --------------------------------------------------------

    def _held_batches(self) -> list[tuple[Batch, str]]:
        batches = [(b, "failed") for b in self._failed] + [(b, "batched") for b in self._outbox]
        if self._in_flight is not None:
            batches.append((self._in_flight, "batched"))
        return batches

    def _journaled_prefix(self) -> int:
        """How many pending entries, from the first, are in the journal (all while it is
        down): a batch carries only those, so its operation id can be written for it."""
        if not self._durable:
            return len(self._pending)
        for n, (_, item) in enumerate(self._pending):
            if not item.journal_ids:
                return n
        return len(self._pending)

    def _held_items(self) -> list[MemoryItem]:
        items = [item for batch, _ in self._held_batches() for item in batch.items]
        return items + [item for _, item in self._pending]

    def _kept(self) -> tuple[list[Kept], list[MemoryItem]]:
        kept = [
            Kept(b.route.bank_id, b.route.tags, item, state, b.operation_id, b.error)
            for b, state in self._held_batches()
            for item in b.items
        ]
        kept += [Kept(r.bank_id, r.tags, item) for r, item in self._pending]
        return kept, [entry.item for entry in kept]
