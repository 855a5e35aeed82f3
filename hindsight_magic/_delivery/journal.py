"""The durable retain queue: every memory from enqueue until the server accepted its batch.

SQLite in WAL mode (survives the process being killed), shared by a user's kernels. Each
kernel's ``%retain`` appends to its own spool file (``spool.py``); its worker thread moves
spooled memories into the journal (``ingest``) and writes what happens to them. Rows are
``pending`` (its kernel holds it in memory too), ``spilled`` (on disk only: its kernel's memory
was full; loaded when there is room, oldest first), ``batched`` (part of a batch with a client
``operation_id``, so a re-send after a crash or a lost reply is the same operation to the
server) or ``failed`` (refused by the server; re-sendable). Row ids follow queue order. Each
kernel is an *owner*; a new kernel claims the rows and spools of owners that died
(``orphans.py``) inside one ``BEGIN IMMEDIATE`` transaction, so two kernels never take the
same rows.

Every failure is a ``JournalError`` whose ``kind`` says why (``sqlite_file``). A damaged file
is moved aside when (re)opened and a fresh one created; ``moved_to`` then names the old file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import orphans
from .journal_file import JournalFile
from .spool import spool_path
from .sqlite_file import JournalError
from .stored import JournalRow, Kept, by_ids, insert_rows, row_from

__all__ = ["Journal", "JournalError", "JournalRow", "Kept"]

SCHEMA = """
create table if not exists items (
    id integer primary key autoincrement,
    owner text not null,
    bank text not null,
    tags text,
    body text not null,
    state text not null default 'pending',
    operation_id text,
    error text
);
create index if not exists items_owner_state on items(owner, state, id);
create table if not exists owners (
    owner text primary key,
    host text not null,
    pid integer not null,
    heartbeat real not null
);
create table if not exists spools (
    name text primary key,
    owner text not null,
    offset integer not null default 0
);
"""


class Journal(JournalFile):
    """A SQLite journal shared by the kernels of one user (thread-safe within a process)."""

    schema = SCHEMA

    # -- writes -----------------------------------------------------------------------------

    def ingest(
        self, kept: Sequence[Kept], offsets: Mapping[str, int], retire: Iterable[str] = ()
    ) -> list[int]:
        """Store spooled memories and how far each spool (by name) is now taken, forgetting
        the spools in ``retire`` (taken entirely); the new row ids."""
        with self._transaction() as db:
            ids = self._insert(db, kept)
            db.executemany(
                "update spools set offset = ? where name = ? and owner = ?",
                [(end, name, self.owner) for name, end in offsets.items()],
            )
            db.executemany("delete from spools where name = ?", [(name,) for name in retire])
        return ids

    def _insert(self, db: sqlite3.Connection, kept: Sequence[Kept]) -> list[int]:
        return insert_rows(db, [entry.values(self.owner) for entry in kept])

    def register_spool(self, name: str) -> None:
        """Record a spool file of this owner (before it is created)."""
        with self._transaction() as db:
            db.execute(
                "insert or replace into spools(name, owner, offset) values (?, ?, 0)",
                (name, self.owner),
            )

    def retire_spools(self, names: Iterable[str]) -> None:
        """Forget spools taken in entirely (their files are deleted next)."""
        with self._transaction() as db:
            db.executemany("delete from spools where name = ?", [(name,) for name in names])

    def mark_batched(self, operation_id: str, ids: Iterable[int]) -> None:
        """Rows now travel in the batch ``operation_id``."""
        self._update("state = 'batched', operation_id = ?, error = null", operation_id, ids)

    def mark_failed(self, ids: Iterable[int], error: str) -> None:
        """The server refused these rows; keep them for ``%hindsight retry``."""
        self._update("state = 'failed', error = ?", error, ids)

    def _update(self, assignment: str, value: str, ids: Iterable[int]) -> None:
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            by_ids(db, f"update items set {assignment} where id in", ids, value)

    def delete(self, ids: Iterable[int]) -> None:
        """Forget rows (the server accepted them, or the user dropped them)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            by_ids(db, "delete from items where id in", ids)

    def reconcile(
        self, kept: Sequence[Kept], spilled: Sequence[Kept], spool: str
    ) -> tuple[list[int], list[str]]:
        """Make this owner's rows match what it holds, after a while without the journal.

        Its rows become ``kept`` (in order), then its spilled rows, then ``spilled`` (memories
        spooled while memory was full, not taken in yet); its spools are replaced by ``spool``.
        Returns the new row ids of ``kept`` and the names of the spool files to delete.
        """
        with self._transaction() as db:
            old = db.execute(
                "select bank, tags, body from items where owner = ? and state = 'spilled' "
                "order by id",
                (self.owner,),
            ).fetchall()
            db.execute("delete from items where owner = ?", (self.owner,))
            ids = insert_rows(db, [entry.values(self.owner) for entry in kept])
            insert_rows(db, [(self.owner, *row, "spilled", None, None) for row in old])
            insert_rows(db, [entry.values(self.owner) for entry in spilled])
            spools = db.execute("select name from spools where owner = ?", (self.owner,))
            names = [name for (name,) in spools.fetchall() if name != spool]
            db.execute("delete from spools where owner = ?", (self.owner,))
            db.execute("insert into spools(name, owner) values (?, ?)", (spool, self.owner))
            self._beat(time.time())
        return ids, names

    # -- reads ------------------------------------------------------------------------------

    def load_spilled(self, limit: int) -> list[JournalRow]:
        """Up to ``limit`` of this owner's spilled rows, oldest first, now ``pending``."""
        with self._transaction() as db:
            rows = self._select(db, "state = 'spilled'", limit)
            by_ids(db, "update items set state = 'pending' where id in", [r.id for r in rows])
        return rows

    def rows(self, state: str) -> list[JournalRow]:
        """All of this owner's rows in ``state``, oldest first."""
        with self._using() as db:
            return self._select(db, "state = ?", -1, state)

    def _select(
        self, db: sqlite3.Connection, where: str, limit: int, *args: Any
    ) -> list[JournalRow]:
        found = db.execute(
            "select id, bank, tags, body, state, operation_id, error from items "
            f"where owner = ? and {where} order by id limit ?",
            (self.owner, *args, limit),
        ).fetchall()
        return [row_from(row) for row in found]

    def count(self, state: str) -> int:
        """How many of this owner's rows are in ``state``."""
        with self._using() as db:
            row = db.execute(
                "select count(*) from items where owner = ? and state = ?", (self.owner, state)
            ).fetchone()
        return int(row[0])

    # -- recovery ---------------------------------------------------------------------------

    def claim_orphans(self) -> int:
        """Take over the rows and spools of owners that died; returns the memory count.

        Their ``pending`` rows and spooled memories become ``spilled``: this kernel loads them
        when it has room.
        """
        if self._closed:  # unloading: the next kernel adopts what is left
            return 0
        files = orphans.spool_files(self.path)  # listed before: see ``orphans.claim``
        with self._transaction() as db:
            claimed, leftovers = orphans.claim(db, self.owner, self.path, files)
        for path in leftovers:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return claimed

    def spool_path(self, generation: int) -> Path:
        """Where this owner's spool ``generation`` lives."""
        return spool_path(self.path, self.owner, generation)

    def close(self) -> None:
        """Release ownership (rows left behind are claimed by the next kernel) and close."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._db is not None:
                    self._db.execute("delete from owners where owner = ?", (self.owner,))
            except sqlite3.Error:
                pass  # a stale heartbeat tells the next kernel the same
            finally:
                self._disconnect()
