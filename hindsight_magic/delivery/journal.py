"""The durable retain queue: every memory from enqueue until the server accepted its batch.

SQLite in WAL mode (survives the process being killed). Rows are ``pending`` (its kernel holds
it in memory too), ``spilled`` (on disk only: its kernel's memory was full; loaded when there is
room, oldest first), ``batched`` (part of a batch with a client ``operation_id``, so a re-send
after a crash or a lost reply is the same operation to the server) or ``failed`` (refused by the
server; re-sendable). Row ids follow queue order. Each kernel is an *owner*; a new kernel claims
the rows of owners that died (their process is gone, or their heartbeat is stale) inside one
``BEGIN IMMEDIATE`` transaction, so two kernels sharing a journal never take the same rows.

Every failure is a ``JournalError`` whose ``kind`` says why (``sqlite_file``). A damaged file
is moved aside when (re)opened and a fresh one created; ``moved_to`` then names the old file.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..paths import pid_exists
from .items import MemoryItem
from .sqlite_file import JournalError, JournalFile

__all__ = ["Journal", "JournalError", "JournalRow", "Kept"]

STALE_AFTER_S = 120.0
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
"""
_INSERT = (
    "insert into items(owner, bank, tags, body, state, operation_id, error) "
    "values (?, ?, ?, ?, ?, ?, ?)"
)


@dataclass
class JournalRow:
    """One stored memory."""

    id: int
    bank_id: str
    tags: tuple[str, ...] | None
    item: MemoryItem
    state: str
    operation_id: str | None
    error: str | None


@dataclass(frozen=True)
class Kept:
    """One memory a kernel holds, as ``reconcile`` writes it."""

    bank_id: str
    tags: tuple[str, ...] | None
    item: MemoryItem
    state: str = "pending"
    operation_id: str | None = None
    error: str | None = None


def body_of(item: MemoryItem) -> str:
    """The stored form of an item (``parts`` > 1: appends merged into it)."""
    data = item.to_json()
    if item.parts > 1:
        data["parts"] = item.parts
    return json.dumps(data)


def _item_from(body: str, row_id: int) -> MemoryItem:
    data: dict[str, Any] = json.loads(body)
    tags = data.get("tags")
    return MemoryItem(
        content=data["content"],
        timestamp=data["timestamp"],
        context=data.get("context"),
        metadata=dict(data.get("metadata") or {}),
        tags=tuple(tags) if tags else None,
        document_id=data.get("document_id"),
        update_mode=data.get("update_mode"),
        parts=int(data.get("parts") or 1),
        journal_ids=[row_id],
    )


class Journal(JournalFile):
    """A SQLite journal shared by the kernels of one user (thread-safe within a process)."""

    schema = SCHEMA

    # -- writes -----------------------------------------------------------------------------

    def add(
        self, bank_id: str, tags: tuple[str, ...] | None, item: MemoryItem, spilled: bool = False
    ) -> int:
        """Store one memory (``pending``, or ``spilled`` if memory is full); its row id."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return 0
        state = "spilled" if spilled else "pending"
        values = (bank_id, json.dumps(tags) if tags else None, body_of(item), state)
        with self._using() as db:
            cursor = db.execute(_INSERT, (self.owner, *values, None, None))
        return int(cursor.lastrowid or 0)

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
            db.executemany(
                f"update items set {assignment} where id = ?", [(value, row) for row in ids]
            )

    def delete(self, ids: Iterable[int]) -> None:
        """Forget rows (the server accepted them, or the user dropped them)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            db.executemany("delete from items where id = ?", [(row_id,) for row_id in ids])

    def reconcile(self, kept: Sequence[Kept]) -> list[int]:
        """Make this owner's rows match what it holds: ``kept`` in order, then its spilled rows.

        For a journal that could not be written for a while: rows of memories delivered
        meanwhile go, memories held only in memory are written. Returns the new row ids.
        """
        with self._transaction() as db:
            spilled = db.execute(
                "select bank, tags, body from items where owner = ? and state = 'spilled' "
                "order by id",
                (self.owner,),
            ).fetchall()
            db.execute("delete from items where owner = ?", (self.owner,))
            ids = []
            for entry in kept:
                tags = json.dumps(entry.tags) if entry.tags else None
                values = (entry.bank_id, tags, body_of(entry.item), entry.state)
                cursor = db.execute(_INSERT, (self.owner, *values, entry.operation_id, entry.error))
                ids.append(int(cursor.lastrowid or 0))
            db.executemany(_INSERT, [(self.owner, *row, "spilled", None, None) for row in spilled])
            self._beat(time.time())
        return ids

    # -- reads ------------------------------------------------------------------------------

    def load_spilled(self, limit: int) -> list[JournalRow]:
        """Up to ``limit`` of this owner's spilled rows, oldest first, now ``pending``."""
        with self._transaction() as db:
            rows = self._select(db, "state = 'spilled'", limit)
            db.executemany(
                "update items set state = 'pending' where id = ?", [(r.id,) for r in rows]
            )
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
        return [
            JournalRow(
                row_id,
                bank,
                tuple(json.loads(tags)) if tags else None,
                _item_from(body, row_id),
                state,
                operation_id,
                error,
            )
            for row_id, bank, tags, body, state, operation_id, error in found
        ]

    def count(self, state: str) -> int:
        """How many of this owner's rows are in ``state``."""
        with self._using() as db:
            row = db.execute(
                "select count(*) from items where owner = ? and state = ?", (self.owner, state)
            ).fetchone()
        return int(row[0])

    # -- recovery ---------------------------------------------------------------------------

    def claim_orphans(self) -> int:
        """Take over the rows of owners that died; returns how many rows were claimed.

        Their ``pending`` rows become ``spilled``: this kernel loads them when it has room.
        """
        if self._closed:  # unloading: the next kernel adopts what is left
            return 0
        host, now = socket.gethostname(), time.time()
        with self._transaction() as db:
            owners = db.execute("select owner, host, pid, heartbeat from owners").fetchall()
            known = {owner for owner, *_ in owners}
            dead = [
                owner
                for owner, owner_host, pid, beat in owners
                if owner != self.owner
                and (now - beat > STALE_AFTER_S or (owner_host == host and not pid_exists(pid)))
            ]
            orphaned = db.execute(
                "select distinct owner from items where owner != ?", (self.owner,)
            ).fetchall()
            dead += [owner for (owner,) in orphaned if owner not in known]
            claimed = 0
            for owner in dict.fromkeys(dead):
                cursor = db.execute(
                    "update items set owner = ?, state = case state when 'pending' then "
                    "'spilled' else state end where owner = ?",
                    (self.owner, owner),
                )
                claimed += cursor.rowcount
                db.execute("delete from owners where owner = ?", (owner,))
        return claimed

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
