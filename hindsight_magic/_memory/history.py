"""A memory's history as the server keeps it, told in lines (``Curator.history`` heads them).

A fact: what it says now (and why it was forgotten), its document's edits, forgets and
restores, and the text it was retained as. An observation: its earlier texts. A notebook cell:
its versions (``versions.read_history``), newest first, each with when it was stored, whether
it is current or when it was superseded, and what it changed, so a value's past shows. Every
text here came from the server; the outcome that shows the lines escapes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._api.vocabulary import DocumentEventKind, FactType, MemoryState
from .._capture.identity import CELL_DOCUMENT, CellDocument
from .._text import one_line, plural, utc_minute_text
from .provenance import cells_text, provenance_of
from .versions import SUPERSEDED, CellVersion, read_history, what_changed

if TYPE_CHECKING:
    from .._api.client import HindsightClient
    from .._api.replies import DocumentEvent, DocumentItem, MemoryUnit


def memory_lines(
    client: HindsightClient, bank: str, memory: MemoryUnit, memory_id: str
) -> list[str]:
    """A memory's history, newest first: what it says now, then an observation's earlier
    texts, or a fact's document's edits, forgets and restores and what it was retained as."""
    state = memory.state or MemoryState.VALID
    now = f"now ({state}): {one_line(memory.text, 200)}"
    if state == MemoryState.INVALIDATED and memory.invalidation_reason:
        now += f" — reason: {one_line(memory.invalidation_reason, 120)}"
    lines = [now]
    if memory.kind == FactType.OBSERVATION:
        for entry in client.observation_history(bank, memory_id):
            when = utc_minute_text(entry.changed_at, " UTC")
            lines.append(f"{when}: said {one_line(entry.previous_text or '', 200)}")
    elif memory.document_id:
        document_id = memory.document_id
        events = [
            e
            for e in client.document_history(bank, document_id)
            if e.fact_id in (None, memory_id)
            and e.kind not in (DocumentEventKind.CONSOLIDATION, DocumentEventKind.RETAIN)
        ]
        lines += [_event_line(e) for e in events]
        document = client.document(bank, document_id)
        if document is not None:
            lines.append(_retained_line(document))
    return lines


def document_lines(
    client: HindsightClient, bank: str, document_id: str, document: DocumentItem
) -> list[str]:
    """A document's history, newest change first, down to what it was retained as."""
    events = client.document_history(bank, document_id)
    lines = [_event_line(e) for e in events if e.kind != DocumentEventKind.RETAIN]
    lines.append(_retained_line(document))
    return lines


@dataclass(frozen=True)
class CellHistory:
    """A cell's versions, told: ``count`` (``3 versions, 1 corrected since``), a version's
    lines newest first, and every document they were stored in."""

    count: str
    lines: list[str]
    document_ids: tuple[str, ...]


def cell_history(client: HindsightClient, bank: str, cell: CellDocument) -> CellHistory | None:
    """The versions of a notebook cell in ``bank``; None when it has none there yet."""
    versions = read_history(client, bank, f"{CELL_DOCUMENT}{cell.key}-")
    if not versions:
        return None
    lines = []
    for n, version in enumerate(versions):
        before: CellVersion | None = versions[n + 1] if n + 1 < len(versions) else None
        lines += _version_lines(version, before, first=n + 1 == len(versions))
    count = plural(len(versions), "version", "versions")
    corrected = sum(1 for v in versions if v.corrections)
    if corrected:
        count += f", {corrected} corrected since"
    return CellHistory(count, lines, tuple(d for v in versions for d in v.documents))


def cell_label(memory: MemoryUnit) -> str:
    """``cell 4 of churn.ipynb`` (what the memory's provenance says), or ''."""
    from .._api.replies import Memory

    provenance = provenance_of(Memory(metadata=memory.metadata, document_id=memory.document_id))
    cell = cells_text(provenance)
    name = provenance.notebook_name
    return f"{cell} of {name}" if cell and name else cell or name or ""


def _version_lines(version: CellVersion, before: CellVersion | None, first: bool) -> list[str]:
    """A version of a cell, newest entry first: ``2026-12-04 09:12 UTC · current · changed: a →
    b · hm-cell-….1``; one its memories were corrected in since: first the correction (what it
    says now, and the version's state), then the version as it was retained."""
    parts = [utc_minute_text(version.stored_at, " UTC")]
    state = _version_state(version)
    if before is not None:
        said = f"changed: {what_changed(before.text, version.text)}"
    elif first:
        said = f"first version: {one_line(version.text, 120)}"
    else:
        said = ""
    document = version.documents[0]
    if not version.corrections:
        return [" · ".join(p for p in (*parts, state, said, document) if p)]
    times = f" ({version.corrections} times)" if version.corrections > 1 else ""
    corrected = [
        utc_minute_text(version.corrected_at, " UTC"),
        state,
        f"corrected{times} to: {one_line(version.says, 120)}",
        document,
    ]
    retained = [*parts, "as retained", said, document]
    return [" · ".join(p for p in corrected if p), " · ".join(p for p in retained if p)]


def _version_state(version: CellVersion) -> str:
    """``current`` (``current, restored 2026-12-04 09:30 UTC``), ``superseded 2026-12-04 09:12
    UTC`` or ``forgotten 2026-12-04 09:12 UTC, reason: …``."""
    if version.valid:
        restored = utc_minute_text(version.restored_at, " UTC")
        return f"current, restored {restored}" if version.restored_at else "current"
    when = utc_minute_text(version.superseded_at, " UTC")
    if (version.reason or "").startswith(SUPERSEDED):
        return f"superseded {when}".strip()
    why = f", reason: {one_line(version.reason, 80)}" if version.reason else ""
    return f"{f'forgotten {when}'.strip()}{why}"


def _retained_line(document: DocumentItem) -> str:
    """``2026-12-02 11:03 UTC: retained as: …``: the document's retain, with what it said
    (its ``retain`` event is this line, not another one)."""
    when = utc_minute_text(document.created_at, " UTC")
    said = f"retained as: {one_line(document.original_text or '', 200)}"
    return f"{when}: {said}" if when else said


def _event_line(event: DocumentEvent) -> str:
    """One document event as a line: ``2026-12-02 11:03 UTC: fact edited``."""
    when = utc_minute_text(event.created_at, " UTC")
    kind = (event.kind or "changed").replace("_", " ")
    return f"{when}: {kind}"
