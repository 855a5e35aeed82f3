"""The queue's spool: ``%retain`` appends to it, the worker moves it into the journal.

The kernel thread writes each memory to this kernel's spool file (``spool.py``) before
``enqueue`` returns, and never touches SQLite. The worker takes spooled memories into the
journal (``_ingest``: rows inserted and the spool's offset recorded in one transaction, so
nothing is taken twice) when it next has work — a batch due, a flush, a heartbeat — not for
each memory: the spool already survives a SIGKILL, and a worker woken by every ``%retain`` of a
burst kept the kernel thread waiting for the GIL. It replaces a spool taken in entirely once it
is large, keeps the heartbeat, and — while the journal is down — retries, then rewrites this
kernel's rows from what memory holds and starts a fresh spool (``_restore_journal``).
"""

from __future__ import annotations

import contextlib
import logging
import threading

from .._text import plural
from .batches import Route
from .items import MemoryItem
from .journal import Journal
from .keeping import QUICK_RETRY_S, JournalKeeping, Notify
from .opening import moved_aside_line
from .spool import ROTATE_BYTES, Spool
from .sqlite_file import JournalError, journal_error
from .stored import Kept

log = logging.getLogger("hindsight_magic")


class Spooling(JournalKeeping):
    """The spool side of the queue (``QueuePump`` holds the rest)."""

    def _init_keeping(self, journal: Journal | None, on_notice: Notify | None) -> None:
        super()._init_keeping(journal, on_notice)
        self._spool: Spool | None = None
        self._generation = 0
        self._retired: list[Spool] = []  # replaced; deleted once taken in entirely
        self._spilled_new: list[tuple[Route, MemoryItem]] = []  # spooled, not in memory
        # one ingest at a time: unloading takes in what is spooled while a worker stuck in a
        # send may wake and do the same; both would insert the same memories
        self._ingesting = threading.Lock()
        if journal is not None and self._durable:
            try:
                self._spool = self._new_spool(journal, register=True)
            except JournalError as error:
                self._journal_down(error)

    def _new_spool(self, journal: Journal, register: bool) -> Spool:
        """The next spool file, registered in the journal first (unless the caller does)."""
        self._generation += 1
        path = journal.spool_path(self._generation)
        if register:
            journal.register_spool(path.name)
        try:
            return Spool.create(path)
        except OSError as error:
            raise journal_error(path, error) from None

    def _journal_due(self) -> bool:
        # memories past the memory cap live only in the spool and the journal: take them in
        return super()._journal_due() or (self._durable and bool(self._spilled_new))

    def _spooled_only(self) -> bool:
        """Whether a memory is in the spool but not yet in the journal (lock held)."""
        return bool(self._spilled_new) or bool(
            self._pending and not self._pending[-1][1].journal_ids
        )

    def _fresh(self) -> list[tuple[Route, MemoryItem]]:
        """The held memories not yet in the journal: the last ones queued (lock held)."""
        fresh = []
        for entry in reversed(self._pending):
            if entry[1].journal_ids:
                break
            fresh.append(entry)
        fresh.reverse()
        return fresh

    # -- kernel thread (lock held) ------------------------------------------------------------

    def _spool_add(self, route: Route, item: MemoryItem, line: bytes, spilled: bool) -> bool:
        """Write a memory to the spool; False: the journal is down, it is held in memory."""
        spool = self._spool
        if spool is None or not self._durable:
            return False
        try:
            spool.append(line)
        except OSError as error:
            self._journal_down(journal_error(spool.path, error))
            return False
        if spilled:
            self._spilled_new.append((route, item))
        return True

    # -- worker (lock not held) ---------------------------------------------------------------

    def _keep_journal(self) -> None:
        """Heartbeat, spool into the journal, refill, pending writes; or restore the journal."""
        journal = self._journal
        if journal is None:
            return
        with self._cond:
            durable, due = self._durable, self._clock() >= self._retry_at
        if not durable:
            if due:
                self._restore_journal(journal)
            return
        try:
            if journal.replaced():  # another kernel moved a damaged file aside
                raise JournalError(f"the journal {journal.path} was replaced", "replaced")
            journal.heartbeat()
        except JournalError as error:
            self._journal_down(error)
            return
        self._ingest()
        self._rotate_spool(journal)
        with self._cond:
            if not self._durable:
                return
        self._refill(journal)
        self._drain_journal_ops()

    def _ingest(self) -> None:
        """Move the spooled memories into the journal, and record how far each spool is taken
        (one transaction); spools replaced meanwhile are then forgotten and deleted."""
        with self._ingesting:
            self._ingest_now()

    def _ingest_now(self) -> None:
        journal = self._journal
        with self._cond:
            if journal is None or not self._durable:
                return
            fresh, spilled, retired = self._fresh(), list(self._spilled_new), list(self._retired)
            if not (fresh or spilled or retired):
                return
            spools = [*retired, *([self._spool] if self._spool is not None else [])]
            offsets = {spool.path.name: spool.size for spool in spools}  # all lines so far
        kept = [Kept(r.bank_id, r.tags, item) for r, item in fresh]
        kept += [Kept(r.bank_id, r.tags, item, "spilled") for r, item in spilled]
        try:
            ids = journal.ingest(kept, offsets, retire=[spool.path.name for spool in retired])
        except JournalError as error:
            self._journal_down(error)
            return
        with self._cond:
            for (_, item), row in zip(fresh, ids, strict=False):
                item.journal_ids = (row,)
            del self._spilled_new[: len(spilled)]  # the kernel thread only appends
            self._retired = [spool for spool in self._retired if spool not in retired]
            self._cond.notify_all()
        for spool in retired:
            spool.close(remove=True)

    def _ingest_if_behind(self) -> None:
        """Take spooled memories into the journal now if any wait there: batches form only
        from memories in the journal, so a flush right after a ``%retain`` would otherwise
        send that memory in a batch of its own."""
        with self._cond:
            behind = self._durable and self._spooled_only()
        if behind:
            self._ingest()

    def _rotate_spool(self, journal: Journal) -> None:
        """Past ``ROTATE_BYTES``, new memories go to a fresh spool; the old one is deleted once
        everything in it is in the journal (the next ``_ingest``)."""
        spool = self._spool
        if spool is None or spool.size < ROTATE_BYTES:
            return
        try:
            fresh = self._new_spool(journal, register=True)
        except JournalError as error:
            self._journal_down(error)
            return
        with self._cond:
            self._spool = fresh
            self._retired.append(spool)
        self._ingest()

    def _restore_journal(self, journal: Journal) -> None:
        """Reopen the journal and write what memory holds into it; then it is used again."""
        with self._cond:
            problem, said = self._journal_problem, self._said_down
        try:
            journal.open(check=problem is not None and problem.kind == "corrupt")
            if journal.moved_to is not None:
                self._on_notice(moved_aside_line(journal))
            if not self._adopted:
                found = self._adopt_orphans()
                if found:
                    count = plural(found, "memory", "memories")
                    self._on_notice(f"Recovered {count} left by an earlier kernel; sending now.")
            kept = self._rewrite(journal)
        except JournalError as error:
            self._journal_down(error)
            return
        if kept is None:  # memories kept coming: the next try finishes
            with self._cond:
                self._retry_at = self._clock() + QUICK_RETRY_S
            return
        log.info("Hindsight journal: %s is written again", journal.path)
        if said:
            count = plural(kept, "queued memory is", "queued memories are")
            self._on_notice(f"The journal {journal.path} can be written again: {count} on disk.")

    def _rewrite(self, journal: Journal) -> int | None:
        """This kernel's rows from what memory holds, and a fresh spool; the memory count."""
        for _ in range(3):
            with self._cond:
                kept, items = self._kept()
                taken = len(self._spilled_new)
                spilled = [
                    Kept(r.bank_id, r.tags, item, "spilled") for r, item in self._spilled_new
                ]
                self._journal_ops.clear()  # what they would write is in ``kept``
            fresh_path = journal.spool_path(self._generation + 1)
            ids, old = journal.reconcile(kept, spilled, fresh_path.name)
            fresh = self._new_spool(journal, register=False)
            with self._cond:
                for item, row in zip(items, ids, strict=True):
                    item.journal_ids = (row,)
                del self._spilled_new[:taken]
                if self._spilled_new or not all(i.journal_ids for i in self._held_items()):
                    fresh.close(remove=True)
                    continue
                stale = [s for s in (self._spool, *self._retired) if s is not None]
                self._spool, self._retired = fresh, []
                self._durable, self._journal_problem, self._said_down = True, None, False
                self._cond.notify_all()
            for spool in stale:
                spool.close()
            for name in old:
                with contextlib.suppress(OSError):
                    journal.path.with_name(name).unlink()
            return len(kept) + len(spilled)
        return None

    # -- unloading (kernel thread, worker stopped) -------------------------------------------

    def _close_journal(self) -> None:
        """Take in what is spooled, write what is pending, release the spools and the file."""
        journal = self._journal
        if journal is None:
            return
        self._ingest()
        self._drain_journal_ops()
        spools = [s for s in (self._spool, *self._retired) if s is not None]
        with self._cond:
            clean = self._durable and not self._spooled_only()
        if clean:
            with contextlib.suppress(JournalError):
                journal.retire_spools(s.path.name for s in spools)
        for spool in spools:
            spool.close(remove=clean)
        self._spool, self._retired = None, []
        journal.close()
