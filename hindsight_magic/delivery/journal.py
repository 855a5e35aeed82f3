"""The durable retain queue: every memory from enqueue until the server accepted its batch.

SQLite in WAL mode (an insert + commit costs a few µs and survives the process being killed).
Rows are ``pending`` (queued), ``batched`` (part of a batch with a client ``operation_id``, so a
re-send after a crash or a lost reply is the same operation to the server) or ``failed`` (refused
by the server; re-sendable). Each kernel is an *owner*; a new kernel claims the rows of owners
that died (their process is gone, or their heartbeat is stale) inside one ``BEGIN IMMEDIATE``
transaction, so two kernels sharing a journal never take the same rows.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..paths import pid_exists
from .items import MemoryItem

HEARTBEAT_S = 20.0
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


class JournalError(RuntimeError):
    """The journal file cannot be used (permissions, corruption, disk full)."""


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
        journal_ids=[row_id],
    )


class Journal:
    """A SQLite journal shared by the kernels of one user (thread-safe within a process)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lock = threading.RLock()
        self._last_beat = 0.0
        self._closed = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=2.0
            )
            self._db.execute("pragma journal_mode=wal")
            self._db.execute("pragma synchronous=normal")
            self._db.executescript(SCHEMA)
            os.chmod(path, 0o600)
            self.heartbeat(force=True)
        except (sqlite3.Error, OSError) as error:
            raise JournalError(f"cannot use the journal {path}: {error}") from None

    # -- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("begin immediate")
            try:
                yield self._db
            except BaseException:
                self._db.execute("rollback")
                raise
            self._db.execute("commit")

    def heartbeat(self, force: bool = False) -> None:
        """Tell other kernels this owner is alive (at most every ``HEARTBEAT_S``)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        now = time.time()
        if not force and now - self._last_beat < HEARTBEAT_S:
            return
        with self._lock:
            self._db.execute(
                "insert or replace into owners(owner, host, pid, heartbeat) values (?, ?, ?, ?)",
                (self.owner, socket.gethostname(), os.getpid(), now),
            )
        self._last_beat = now

    # -- writes -----------------------------------------------------------------------------

    def add(self, bank_id: str, tags: tuple[str, ...] | None, item: MemoryItem) -> int:
        """Store one pending memory; returns its row id."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return 0
        body = json.dumps(item.to_json())
        with self._lock:
            cursor = self._db.execute(
                "insert into items(owner, bank, tags, body) values (?, ?, ?, ?)",
                (self.owner, bank_id, json.dumps(tags) if tags else None, body),
            )
        return int(cursor.lastrowid or 0)

    def mark_batched(self, operation_id: str, ids: Iterable[int]) -> None:
        """Rows now travel in the batch ``operation_id``."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            db.executemany(
                "update items set state = 'batched', operation_id = ?, error = null where id = ?",
                [(operation_id, row_id) for row_id in ids],
            )

    def mark_failed(self, ids: Iterable[int], error: str) -> None:
        """The server refused these rows; keep them for ``%hindsight retry``."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            db.executemany(
                "update items set state = 'failed', error = ? where id = ?",
                [(error, row_id) for row_id in ids],
            )

    def delete(self, ids: Iterable[int]) -> None:
        """Forget rows (the server accepted them, or the user dropped them)."""
        if self._closed:  # unloading: the next kernel adopts what is left
            return
        with self._transaction() as db:
            db.executemany("delete from items where id = ?", [(row_id,) for row_id in ids])

    # -- reads ------------------------------------------------------------------------------

    def pending_after(self, after_id: int, limit: int) -> list[JournalRow]:
        """This owner's pending rows with ids above ``after_id``, oldest first."""
        return self._select("state = 'pending' and id > ?", (after_id,), limit)

    def rows(self, state: str) -> list[JournalRow]:
        """All of this owner's rows in ``state``, oldest first."""
        return self._select("state = ?", (state,), -1)

    def _select(self, where: str, args: tuple[Any, ...], limit: int) -> list[JournalRow]:
        if self._closed:
            return []
        with self._lock:
            cursor = self._db.execute(
                "select id, bank, tags, body, state, operation_id, error from items "
                f"where owner = ? and {where} order by id limit ?",
                (self.owner, *args, limit),
            )
            found = cursor.fetchall()
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
        if self._closed:
            return 0
        with self._lock:
            row = self._db.execute(
                "select count(*) from items where owner = ? and state = ?", (self.owner, state)
            ).fetchone()
        return int(row[0])

    # -- recovery ---------------------------------------------------------------------------

    def claim_orphans(self) -> int:
        """Take over the rows of owners that died; returns how many rows were claimed."""
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
                    "update items set owner = ? where owner = ?", (self.owner, owner)
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
                self._db.execute("delete from owners where owner = ?", (self.owner,))
            finally:
                self._db.close()
