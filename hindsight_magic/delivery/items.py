"""What the queue carries: one memory to retain (its time: ``times.local_timestamp``).

The pydantic models of the server's replies live in ``responses.py``, imported on first use so
that ``%load_ext`` stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class MemoryItem:
    """One memory to retain; cheap to build on the kernel thread (no validation here)."""

    content: str
    timestamp: str
    context: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] | None = None
    document_id: str | None = None
    update_mode: str | None = None
    parts: int = 1  # how many queued memories this item carries (appends get merged)
    journal_ids: list[int] = field(default_factory=list)  # its rows in the journal

    def merge_append(self, other: MemoryItem) -> bool:
        """Fold a later append to the same document into this item; False if not possible."""
        if self.update_mode != "append" or other.update_mode != "append":
            return False
        self.content = f"{self.content}\n\n{other.content}"
        self.parts += other.parts
        self.journal_ids = [*self.journal_ids, *other.journal_ids]
        return True

    def to_json(self) -> dict[str, Any]:
        """The wire form: only the fields that are set."""
        body: dict[str, Any] = {"content": self.content, "timestamp": self.timestamp}
        if self.context:
            body["context"] = self.context
        if self.metadata:
            body["metadata"] = dict(self.metadata)
        if self.tags:
            body["tags"] = list(self.tags)
        if self.document_id:
            body["document_id"] = self.document_id
        if self.update_mode:
            body["update_mode"] = self.update_mode
        return body
