"""Where a memory came from, from what the extension wrote in its ``metadata``.

Minimal version for the panel's memory browser; the provenance work (issue 12 item 1) owns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePath
from typing import TYPE_CHECKING

from ..times import parse_iso

if TYPE_CHECKING:
    from ..api.responses import Memory


@dataclass(frozen=True)
class Provenance:
    """A memory's origin as far as it is known (every field may be missing)."""

    notebook: str | None = None
    cells: str | None = None
    kernel_session: str | None = None
    retain_cell: str | None = None
    source: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None


def provenance_of(memory: Memory) -> Provenance:
    """The provenance fields of ``memory`` (its metadata, mention time and document)."""
    meta = memory.metadata or {}

    def text(key: str) -> str | None:
        value = meta.get(key)
        return str(value) if value not in (None, "") else None

    return Provenance(
        notebook=text("notebook"),
        cells=text("cells"),
        kernel_session=text("kernel_session"),
        retain_cell=text("retain_cell"),
        source=text("source"),
        mentioned_at=memory.mentioned_at,
        document_id=memory.document_id,
    )


def _age(stamp: str | None, now: datetime) -> str:
    moment = parse_iso(stamp)
    if moment is None:
        return ""
    seconds = max(0, int((now - moment).total_seconds()))
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "just now"


def provenance_line(memory: Memory, now: datetime | None = None) -> str:
    """``fieldwork.ipynb · cell 14 · 3 days ago``; '' if nothing is known."""
    found = provenance_of(memory)
    parts = []
    if found.notebook:
        parts.append(PurePath(found.notebook).name)
    if found.retain_cell:
        parts.append(f"cell {found.retain_cell}")
    elif found.cells:
        parts.append(f"cell{'s' if any(c in found.cells for c in ',-') else ''} {found.cells}")
    if not parts and found.source:
        parts.append(found.source)
    age = _age(found.mentioned_at, now or datetime.now(timezone.utc))
    if age:
        parts.append(age)
    return " · ".join(parts)
