"""How the journal stores a memory: its row, and what a kernel hands over to be written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .items import MemoryItem

INSERT = (
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
    """One memory a kernel holds, as ``ingest`` and ``reconcile`` write it."""

    bank_id: str
    tags: tuple[str, ...] | None
    item: MemoryItem
    state: str = "pending"
    operation_id: str | None = None
    error: str | None = None

    def values(self, owner: str) -> tuple[Any, ...]:
        """The ``INSERT`` parameters."""
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
