"""What the queue carries: one memory to retain (its time: ``times.local_timestamp``).

The pydantic models of the server's replies live in ``responses.py``, imported on first use so
that ``%load_ext`` stays cheap.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._capture.redact import redact

# Lone surrogates (e.g. "\ud800" from a JSON front end) cannot be encoded as UTF-8: httpx would
# refuse the whole batch, so they become U+FFFD when a memory is queued.
_SURROGATES = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with lone surrogates replaced, so it can be sent as UTF-8."""
    if text.isascii():  # a flag CPython keeps on every string: no scan
        return text
    return _SURROGATES.sub("\ufffd", text)


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
    journal_ids: tuple[int, ...] = ()  # its rows in the journal (a tuple: not tracked by the GC)

    def merge_append(self, other: MemoryItem) -> bool:
        """Fold a later append to the same document into this item; False if not possible."""
        if self.update_mode != "append" or other.update_mode != "append":
            return False
        self.content = f"{self.content}\n\n{other.content}"
        self.metadata = {**self.metadata, **other.metadata}  # the later cells cover the earlier
        self.parts += other.parts
        self.journal_ids = (*self.journal_ids, *other.journal_ids)
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


@functools.lru_cache(maxsize=256)
def _safe_value(value: str, secrets: tuple[str, ...]) -> str:
    """A metadata value redacted and encodable; cached, because the same few values (the
    notebook, the kernel session, the source) come with every memory of a kernel."""
    return redact(encodable(value), secrets)


def new_item(
    content: str,
    *,
    timestamp: str,
    context: str,
    metadata: dict[str, str],
    tags: Sequence[str],
    secrets: Sequence[str],
    document_id: str | None = None,
    update_mode: str | None = None,
) -> MemoryItem:
    """A memory ready to queue: secrets redacted (its metadata's too), every text safe to send
    as UTF-8."""
    hidden = tuple(secrets)
    return MemoryItem(
        content=redact(encodable(content), hidden),
        timestamp=timestamp,
        context=encodable(context),
        metadata={key: _safe_value(value, hidden) for key, value in metadata.items()},
        tags=tuple(encodable(tag) for tag in tags) or None,
        document_id=document_id,
        update_mode=update_mode,
    )
