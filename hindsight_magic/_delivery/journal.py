"""The retain queue's journal: every memory on disk from ``%retain`` until the server took it.

Three places, one owner (this kernel):

- **the spool** (``spool.py``): ``%retain`` appends each memory to this kernel's spool file
  before it returns, so it survives a SIGKILL; the kernel thread never touches SQLite;
- **the journal file** (``journal_file.py``): SQLite, shared by a user's kernels. The worker
  takes spooled memories in (``ingest``: rows inserted and the spool's offset recorded in one
  transaction, so nothing is taken twice) when it next has work — a batch due, a flush, a
  heartbeat — not for each memory: a worker woken by every ``%retain`` of a burst kept the
  kernel thread waiting for the GIL. It replaces a spool taken in entirely once it is large;
- **pending writes**: what happens to batches (operation ids, refusals, acceptance) is noted
  under the queue's lock and written by the worker outside it, before the batch is sent.

When the file cannot be written (disk full, read-only, permissions, a damaged file), memories
are kept in memory and delivered as before; one line says so, the worker retries every
``RETRY_S``, reopens the file (a damaged one is moved aside), rewrites this kernel's rows from
what the queue holds, starts a fresh spool, and one line says the memories are on disk again.
Nothing is lost or sent twice by the switch; only a kernel killed while the journal is down
loses what it held in memory (the user was told), and rows of memories delivered meanwhile may
be sent again.

A ``Journal`` without a file is the journal turned off: it keeps nothing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from .._text import one_line, plural
from .items import Batch, MemoryItem, Route, form_batches
from .journal_file import (
    HeldRow,
    JournalError,
    JournalFile,
    JournalKind,
    JournalRow,
    journal_error,
    journal_path,
)
from .spool import CAPACITY, Spool, encode

log = logging.getLogger("hindsight_magic")

RETRY_S = 5.0
QUICK_RETRY_S = 0.2
# retried at once, no line: transient, or (corrupt) the reopen moves the file aside and says so
QUIET_KINDS: frozenset[JournalKind] = frozenset({"locked", "replaced", "corrupt"})
ROTATE_BYTES = CAPACITY // 2  # past this, new memories go to a fresh spool

Notify = Callable[[str], None]


@dataclass(frozen=True)
class JournalOp:
    """One change to write: ``batched`` (with ``operation_id``), ``failed`` or ``delete``.

    Row ids are read from the items when written (a rewrite may have renumbered them).
    """

    kind: Literal["batched", "failed", "delete"]
    items: list[MemoryItem]
    operation_id: str | None = None
    error: str | None = None

    def apply(self, file: JournalFile) -> None:
        ids = [row for item in self.items for row in item.journal_ids]
        if self.kind == "batched":
            file.mark_batched(self.operation_id or "", ids)
        elif self.kind == "failed":
            file.mark_failed(ids, self.error or "")
        else:
            file.delete(ids)


@dataclass(frozen=True)
class Recovered:
    """What dead kernels left (and this owner's own rows): batches to re-send under their
    operation ids, refused ones, and how many memories wait on disk only."""

    batched: list[Batch]
    failed: list[Batch]
    spilled: int

    @property
    def count(self) -> int:
        """How many memories in all."""
        return self.spilled + sum(b.count for b in (*self.batched, *self.failed))


def batches_from_rows(rows: Iterable[JournalRow]) -> list[Batch]:
    """Journal rows regrouped into their batches, each under its stored ``operation_id``.

    Appends to one document are merged again (as when the batch was first formed), and a
    refused batch keeps the server's reason.
    """
    groups: dict[str, list[tuple[Route, MemoryItem]]] = {}
    reasons: dict[str, str | None] = {}
    for row in rows:
        key = row.operation_id or f"row-{row.id}"
        groups.setdefault(key, []).append((Route(row.bank_id, row.tags), row.item))
        reasons.setdefault(key, row.error)
    batches = []
    for operation_id, entries in groups.items():
        for batch in form_batches(entries, len(entries)):
            batch.operation_id = operation_id
            batch.error = reasons[operation_id] or "left by an earlier kernel"
            batches.append(batch)
    return batches


class Journal:
    """This kernel's part of the journal: its spool, its rows, and the memory-only mode.

    ``lock`` is the queue's lock (``RetainQueue.lock``), and it guards this object's state
    too: ``enqueue`` appends a memory's spool line and queues the memory under that one lock,
    so the spool's order is the queue's, and the worker's snapshot of what is spooled and how
    far each spool reaches (``ingest``) is never torn by a ``%retain``. Methods marked *lock
    held* are called by the queue inside it; the others run on the worker (or while unloading)
    and take it only around their bookkeeping, never around I/O.
    """

    def __init__(
        self,
        file: JournalFile | None,
        lock: threading.Condition,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_notice: Notify | None = None,  # a line for the user (journal down / back)
    ) -> None:
        self.file = file
        self.off = file is None  # the setting turned it off: nothing is ever written
        self._lock = lock
        self._clock = clock
        self._on_notice: Notify = on_notice or (lambda line: None)
        self._ops: list[JournalOp] = []
        self._writable = file is not None and file.available
        self._problem = None if file is None else file.problem
        self._said_down = not self._writable  # a file not opened was reported by opening
        self._retry_at = 0.0
        self._adopted = False
        self._spool: Spool | None = None
        self._generation = 0
        self._retired: list[Spool] = []  # replaced; deleted once taken in entirely
        # spooled, not in the file yet: memories the queue holds, and ones it does not (its
        # memory was full: ``spilled``); ``ingest`` takes both in
        self._fresh: list[tuple[Route, MemoryItem]] = []
        self._spilled: list[tuple[Route, MemoryItem]] = []
        # one ingest at a time: unloading takes in what is spooled while a worker stuck in a
        # send may wake and do the same; both would insert the same memories
        self._ingesting = threading.Lock()
        if file is not None and self._writable:
            try:
                self._spool = self._new_spool(file, register=True)
            except JournalError as error:
                self.down(error)

    @property
    def path(self) -> str | None:
        """The file's path (None: the journal is off)."""
        return None if self.file is None else str(self.file.path)

    # -- the queue's side (lock held) ---------------------------------------------------------

    def line(self, route: Route, item: MemoryItem) -> bytes:
        """The spool line for a memory (made before the lock is taken; empty when off)."""
        return b"" if self.off else encode(route, item)

    def spool(self, route: Route, item: MemoryItem, line: bytes, spilled: bool) -> bool:
        """Append a memory's line to the spool (kernel thread, lock held); False: the journal
        is off or down, and the memory is held in memory only."""
        spool = self._spool
        if spool is None or not self._writable:
            return False
        try:
            spool.append(line)
        except OSError as error:
            self.down(journal_error(spool.path, error))
            return False
        (self._spilled if spilled else self._fresh).append((route, item))
        return True

    @property
    def writable(self) -> bool:
        """Whether memories are written to disk now (lock held)."""
        return self._writable

    @property
    def problem(self) -> str | None:
        """Why memories are held in memory only (None while the journal is written, or off)."""
        with self._lock:
            if self.off or self._writable or self._problem is None:
                return None
            return self._problem.reason

    def mark_batched(self, items: list[MemoryItem], operation_id: str) -> None:
        """These memories now travel in the batch ``operation_id`` (lock held)."""
        self._note(JournalOp("batched", items, operation_id))

    def mark_failed(self, items: list[MemoryItem], error: str) -> None:
        """The server refused these memories for good (lock held)."""
        self._note(JournalOp("failed", items, error=error))

    def forget(self, items: list[MemoryItem]) -> None:
        """These memories are done with: accepted, or dropped by the user (lock held)."""
        self._note(JournalOp("delete", items))

    def _note(self, op: JournalOp) -> None:
        if not self.off:
            self._ops.append(op)

    def due(self) -> bool:
        """Whether the worker has journal work now (lock held)."""
        if self.file is None:
            return False
        if self._writable:  # an idle kernel beats too: a stale owner's rows are taken over
            # memories past the memory cap live only in the spool: take them in
            return bool(self._ops) or self.file.until_beat() == 0.0 or bool(self._spilled)
        return self._clock() >= self._retry_at

    def idle_delay(self) -> float | None:
        """Seconds until the journal has work (the heartbeat, a retry); None: never (lock held)."""
        if self.file is None:
            return None
        if not self._writable:
            return max(0.0, self._retry_at - self._clock())
        wait = self.file.until_beat()
        return wait if wait != float("inf") else None

    def down(self, error: JournalError) -> None:
        """The file failed: hold memories in memory, say so once, retry later."""
        quiet = error.kind in QUIET_KINDS
        with self._lock:
            self._writable = False
            self._problem = error
            self._retry_at = self._clock() + (QUICK_RETRY_S if quiet else RETRY_S)
            say = not quiet and not self._said_down
            self._said_down = self._said_down or say
            self._lock.notify_all()
        log.info("Hindsight journal: %s", error)
        if say and self.file is not None:
            self._on_notice(
                f"The journal {self.file.path} cannot be written ({error.reason}): queued "
                "memories are kept in memory only until it can; retrying by itself."
            )

    def unspool(self, document_ids: set[str]) -> None:
        """Cancelled memories not taken into the file yet (it is down) are never taken in
        (lock held)."""
        self._fresh = [e for e in self._fresh if e[1].document_id not in document_ids]
        self._spilled = [e for e in self._spilled if e[1].document_id not in document_ids]

    # -- the worker's side (lock not held) ------------------------------------------------------

    def upkeep(self) -> bool:
        """Heartbeat, take the spool in, replace a large spool; False while not written."""
        file = self.file
        if file is None:
            return False
        with self._lock:
            if not self._writable:
                return False
        try:
            if file.replaced():  # another kernel moved a damaged file aside
                raise JournalError(f"the journal {file.path} was replaced", "replaced")
            file.heartbeat()
        except JournalError as error:
            self.down(error)
            return False
        self.ingest()
        self._rotate_spool(file)
        with self._lock:
            return self._writable

    def beat_if_due(self) -> None:
        """The heartbeat between two sends: against a slow server one pump can last minutes."""
        file = self.file
        with self._lock:
            writable = self._writable
        if file is None or not writable:
            return
        try:
            file.heartbeat()
        except JournalError as error:
            self.down(error)

    def write_pending(self) -> None:
        """Write the noted changes, in order (while the journal is down they wait)."""
        file = self.file
        while file is not None:
            with self._lock:
                if not self._writable or not self._ops:
                    return
                ops, self._ops = self._ops, []
            try:
                for op in ops:
                    op.apply(file)
            except JournalError as error:
                self.down(error)  # the rewrite on restore covers what was not written
                return

    def erase(self, items: list[MemoryItem], document_ids: set[str]) -> list[str]:
        """Delete cancelled memories from the file now, not with the next batch of writes: a
        kernel killed right after a cancel must not bring them back. Their rows, and spilled
        rows of those documents (whose document ids are returned). Nothing while the file is
        down."""
        file = self.file
        with self._lock:
            if file is None or not self._writable:
                return []
        try:
            file.delete([row for item in items for row in item.journal_ids])
            return file.delete_spilled(document_ids)
        except JournalError as error:
            self.down(error)
            return []

    def ingest(self) -> None:
        """Move the spooled memories into the file, and record how far each spool is taken
        (one transaction); spools replaced meanwhile are then forgotten and deleted."""
        with self._ingesting:
            self._ingest()

    def _ingest(self) -> None:
        file = self.file
        with self._lock:
            if file is None or not self._writable:
                return
            fresh, spilled, retired = list(self._fresh), list(self._spilled), list(self._retired)
            if not (fresh or spilled or retired):
                return
            spools = [*retired, *([self._spool] if self._spool is not None else [])]
            offsets = {spool.path.name: spool.size for spool in spools}  # all lines so far
        kept = [HeldRow(r.bank_id, r.tags, item) for r, item in fresh]
        kept += [HeldRow(r.bank_id, r.tags, item, "spilled") for r, item in spilled]
        try:
            ids = file.ingest(kept, offsets, retire=[spool.path.name for spool in retired])
        except JournalError as error:
            self.down(error)
            return
        with self._lock:
            for (_, item), row in zip(fresh, ids, strict=False):
                item.journal_ids = (row,)
            del self._fresh[: len(fresh)]  # the kernel thread only appends
            del self._spilled[: len(spilled)]
            self._retired = [spool for spool in self._retired if spool not in retired]
            self._lock.notify_all()
        for spool in retired:
            spool.close(remove=True)

    def ingest_if_behind(self) -> None:
        """Take spooled memories in now if any wait there: batches form only from memories in
        the file, so a flush right after a ``%retain`` would otherwise send that memory in a
        batch of its own."""
        with self._lock:
            behind = self._writable and self._spooled_only()
        if behind:
            self.ingest()

    def _spooled_only(self) -> bool:
        return bool(self._spilled) or bool(self._fresh)

    def warm_up(self) -> None:
        """Touch the spool where its next line goes (the worker's warm-up), so the first
        ``%retain`` of a kernel writes into a page the file system already prepared."""
        with self._lock:
            if self._spool is not None and self._writable:
                self._spool.touch()

    def _rotate_spool(self, file: JournalFile) -> None:
        """Past ``ROTATE_BYTES``, new memories go to a fresh spool; the old one is deleted once
        everything in it is in the file (the next ``ingest``)."""
        spool = self._spool
        if spool is None or spool.size < ROTATE_BYTES:
            return
        try:
            fresh = self._new_spool(file, register=True)
        except JournalError as error:
            self.down(error)
            return
        fresh.touch()  # before a %retain writes to it
        with self._lock:
            self._spool = fresh
            self._retired.append(spool)
        self.ingest()

    def _new_spool(self, file: JournalFile, register: bool) -> Spool:
        """The next spool file, registered in the file first (unless the caller does)."""
        self._generation += 1
        path = file.spool_path(self._generation)
        if register:
            file.register_spool(path.name)
        try:
            return Spool.create(path)
        except OSError as error:
            raise journal_error(path, error) from None

    def load_spilled(self, limit: int) -> list[tuple[Route, MemoryItem]]:
        """Up to ``limit`` memories waiting on disk only, oldest first, now held in memory;
        raises ``JournalError``."""
        assert self.file is not None
        return [(Route(row.bank_id, row.tags), row.item) for row in self.file.load_spilled(limit)]

    def count_spilled(self) -> int:
        """How many memories wait on disk only (not counting spooled ones); raises
        ``JournalError``."""
        assert self.file is not None
        return self.file.count("spilled")

    # -- recovery -------------------------------------------------------------------------------

    def recover(self) -> Recovered | None:
        """Take over what dead kernels left, and read back this owner's batches (once per
        kernel); None while the file is not written (``restore`` recovers once it opens).
        Raises ``JournalError``.

        Batches keep their ``operation_id``: re-sending one the server already accepted is the
        same operation to it, so nothing is stored twice.
        """
        file = self.file
        if file is None or not self._writable:
            return None
        return self._recover(file)

    def _recover(self, file: JournalFile) -> Recovered:
        _, damaged = file.claim_orphans()
        for line in damaged:
            self._on_notice(line)
        batched, failed = file.rows("batched"), file.rows("failed")
        spilled = file.count("spilled")
        with self._lock:
            self._adopted = True
        return Recovered(batches_from_rows(batched), batches_from_rows(failed), spilled)

    def restore_due(self) -> bool:
        """Whether the file is down and the time to try it again has come."""
        with self._lock:
            return self.file is not None and not self._writable and self._clock() >= self._retry_at

    def restore(self, held: Callable[[], list[HeldRow]], adopt: Callable[[Recovered], int]) -> None:
        """Reopen the file and write what memory holds into it; then it is used again.

        ``held`` lists what the queue holds (called with the lock held); ``adopt`` hands the
        queue what dead kernels left, the first time the file opens (``recover``).
        """
        file = self.file
        assert file is not None
        with self._lock:
            problem, said = self._problem, self._said_down
        try:
            file.open(check=problem is not None and problem.kind == "corrupt")
            if file.moved_to is not None:
                self._on_notice(moved_aside_line(file))
            if not self._adopted:
                found = adopt(self._recover(file))
                if found:
                    count = plural(found, "memory", "memories")
                    self._on_notice(f"Recovered {count} left by an earlier kernel; sending now.")
            kept = self._rewrite(file, held)
        except JournalError as error:
            self.down(error)
            return
        if kept is None:  # memories kept coming: the next try finishes
            with self._lock:
                self._retry_at = self._clock() + QUICK_RETRY_S
            return
        log.info("Hindsight journal: %s is written again", file.path)
        if said:
            count = plural(kept, "queued memory is", "queued memories are")
            self._on_notice(f"The journal {file.path} can be written again: {count} on disk.")

    def _rewrite(self, file: JournalFile, held: Callable[[], list[HeldRow]]) -> int | None:
        """This owner's rows from what memory holds, and a fresh spool; the memory count."""
        for _ in range(3):
            with self._lock:
                kept = held()
                taken = len(self._spilled)
                spilled = [HeldRow(r.bank_id, r.tags, item, "spilled") for r, item in self._spilled]
                self._ops.clear()  # what they would write is in ``kept``
                self._fresh.clear()  # ``kept`` holds them too
            fresh_path = file.spool_path(self._generation + 1)
            ids, old = file.reconcile(kept, spilled, fresh_path.name)
            fresh = self._new_spool(file, register=False)
            fresh.touch()
            with self._lock:
                for entry, row in zip(kept, ids, strict=True):
                    entry.item.journal_ids = (row,)
                del self._spilled[:taken]
                if self._spilled or not all(entry.item.journal_ids for entry in held()):
                    fresh.close(remove=True)
                    continue
                stale = [s for s in (self._spool, *self._retired) if s is not None]
                self._spool, self._retired = fresh, []
                self._writable, self._problem, self._said_down = True, None, False
                self._lock.notify_all()
            for spool in stale:
                spool.close()
            for name in old:
                with contextlib.suppress(OSError):
                    file.path.with_name(name).unlink()
            return len(kept) + len(spilled)
        return None

    # -- unloading (kernel thread, worker stopped) ----------------------------------------------

    def close(self) -> None:
        """Take in what is spooled, write what is pending, release the spools and the file."""
        file = self.file
        if file is None:
            return
        self.ingest()
        self.write_pending()
        spools = [s for s in (self._spool, *self._retired) if s is not None]
        with self._lock:
            clean = self._writable and not self._spooled_only()
        if clean:
            with contextlib.suppress(JournalError):
                file.retire_spools(s.path.name for s in spools)
        for spool in spools:
            spool.close(remove=clean)
        self._spool, self._retired = None, []
        file.close()


# -- opening it for a session --------------------------------------------------------------------


def moved_aside_line(file: JournalFile) -> str:
    """The line saying a damaged journal was replaced (``file.moved_to`` is set)."""
    # SQLite's message may quote the damaged schema, line breaks and all: one line, bounded
    return (
        f"The journal {file.path} was damaged ({one_line(file.damage, 200)}): moved aside to "
        f"{file.moved_to}; a fresh journal is in use."
    )


def memory_only_line(file: JournalFile, error: JournalError) -> str:
    """The line saying the journal cannot be used for now (said once)."""
    return (
        f"The journal {file.path} cannot be written ({error.reason}): queued memories are "
        "kept in memory only, and go back to the journal by themselves once it can be written."
    )


def open_journal(setting: str, project: str | None = None) -> tuple[JournalFile | None, str | None]:
    """The journal file the ``journal_path`` setting asks for (for the project at folder
    ``project``), and one line for the user if something happened.

    A damaged file is moved aside and a fresh one used; a file that cannot be opened now
    (read-only, disk full, permissions) gives a file that is not open yet: the queue keeps
    memories in memory and its worker opens the file as soon as it can.
    """
    target = journal_path(setting, project)
    if target is None:
        return None, None
    file = JournalFile(target, open_now=False)
    try:
        file.open(check=True)
    except JournalError as error:
        return file, memory_only_line(file, error)
    return file, moved_aside_line(file) if file.moved_to else None
