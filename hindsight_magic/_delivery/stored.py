"""How the journal stores a memory: its row, and what a kernel hands over to be written."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .items import MemoryItem

INSERT_INTO = "insert into items(owner, bank, tags, body, state, operation_id, error) values"
ROW = "(?, ?, ?, ?, ?, ?, ?)"
# One statement per many rows: the sqlite3 module releases the GIL around every step, and a
# worker that must win the GIL back after each one (the kernel thread busy with a cell) moved
# a batch's rows one every few milliseconds. SQLite before 3.32 allows 999 parameters.
ROWS_PER_INSERT = 128  # x 7 parameters
IDS_PER_STATEMENT = 900


def insert_rows(db: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> list[int]:
    """Insert rows (``Kept.values`` tuples) a chunk per statement; their new ids, in order.

    Inside one write transaction an ``autoincrement`` key gives a statement's rows consecutive
    ids ending at ``lastrowid``.
    """
    ids: list[int] = []
    for start in range(0, len(rows), ROWS_PER_INSERT):
        chunk = rows[start : start + ROWS_PER_INSERT]
        flat = [value for row in chunk for value in row]
        last = db.execute(f"{INSERT_INTO} {', '.join([ROW] * len(chunk))}", flat).lastrowid or 0
        ids.extend(range(last - len(chunk) + 1, last + 1))
    return ids


def by_ids(db: sqlite3.Connection, statement: str, ids: Iterable[int], *first: Any) -> None:
    """Run ``statement`` (ending in ``where id in``) for ``ids``, a chunk per statement;
    ``first`` are the parameters before the ids."""
    rows = list(ids)
    for start in range(0, len(rows), IDS_PER_STATEMENT):
        chunk = rows[start : start + IDS_PER_STATEMENT]
        db.execute(f"{statement} ({', '.join('?' * len(chunk))})", (*first, *chunk))


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
    """One memory a kernel holds, as ``ingest`` and ``reconcile`` write it."""

    bank_id: str
    tags: tuple[str, ...] | None
    item: MemoryItem
    state: str = "pending"
    operation_id: str | None = None
    error: str | None = None

    def values(self, owner: str) -> tuple[Any, ...]:
        """The row's values for ``insert_rows``."""
        tags = json.dumps(self.tags) if self.tags else None
        body = body_of(self.item)
        return (owner, self.bank_id, tags, body, self.state, self.operation_id, self.error)


def body_of(item: MemoryItem) -> str:
    """The stored form of an item (``parts`` > 1: appends merged into it)."""
    data = item.to_json()
    if item.parts > 1:
        data["parts"] = item.parts
    return json.dumps(data)


def item_from(body: str, row_id: int) -> MemoryItem:
    """The item a row stores."""
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
        journal_ids=(row_id,),
    )


def row_from(found: tuple[Any, ...]) -> JournalRow:
    """A ``JournalRow`` from ``select id, bank, tags, body, state, operation_id, error``."""
    row_id, bank, tags, body, state, operation_id, error = found
    parsed = tuple(json.loads(tags)) if tags else None
    return JournalRow(row_id, bank, parsed, item_from(body, row_id), state, operation_id, error)
