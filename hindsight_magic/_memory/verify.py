"""``%hindsight verify``: the memories whose data changed since their cell read it, by file.

Every valid memory of the scope is read (``paging.ScopeReader``: by time windows) and those that
record evidence (``_capture/evidence.py``) are checked here, on this machine, as a recall
checks what it shows: stat first, fingerprint only what changed. A cell's memories come from
one document, so each cell is listed once under each file it read that changed; with what the
user can do: re-run the cell (its new version replaces the old), forget the memory, or keep it.
The judgement of one memory (``DataCheck``) is the timeline's too: it marks the periods holding
such memories from the memories it reads anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._capture.evidence import Checked, State, check, parse_evidence
from .._capture.identity import cell_document
from .._text import one_line, plural
from .curation import Outcome, short
from .paging import ScopeReader
from .provenance import SEPARATOR, cells_text, provenance_of, utc_date
from .reading import listed_memories
from .results import indexing_note

if TYPE_CHECKING:
    from .._api.client import Connection
    from .._api.replies import MemoryUnit
    from .scope import BankScope

WHAT_TO_DO = (
    "What you can do: re-run the cell on the new data (its new version replaces the old one), "
    "%hindsight forget ID, or keep it as it is (it stays flagged)."
)
STATE_WORDS = {
    State.CHANGED: "re-written",
    State.GONE: "no longer here",
    State.ELSEWHERE: "not checkable here",
}


def verify(
    connection: Connection,
    scope: BankScope,
    read: Callable[[int, int], object] = lambda done, total: None,
    waiting: tuple[int, bool] = (0, False),
) -> Outcome:
    """The memories of ``scope`` whose data files changed (or are gone, or cannot be checked
    here), grouped by file, one line per cell; memory ids in ``.memory_ids``. ``waiting``:
    (the cells the server cannot find yet, whether memories the user retained are still being
    indexed), said in the footer: those are not checked yet."""
    note = indexing_note(*waiting)
    later = f"Not checked yet: {note}; run it again in a moment." if note else ""
    by_file: dict[tuple[str, str], list[str]] = {}
    ids: list[str] = []
    seen: set[tuple[str, str]] = set()
    data = DataCheck()
    for page in ScopeReader(connection, scope).pages(read=read):  # newest first
        for memory in page:
            cell = memory.document_id or memory.id
            for found in data.changed(memory):
                if (found.evidence.path, cell) in seen:
                    continue
                seen.add((found.evidence.path, cell))
                when = f" {utc_date(found.mtime)}" if found.mtime is not None else ""
                heading = f"{found.evidence.path} ({STATE_WORDS[found.state]}{when})"
                by_file.setdefault((found.evidence.path, heading), []).append(_line(memory))
                ids.append(memory.id)
    if not by_file:
        checked = plural(data.recording, "memory records its data", "memories record their data")
        return Outcome(
            f"No memory rests on data that changed ({checked}, all as read).", footer=later
        )
    items = [
        f"{heading}: {line}" for (_, heading), lines in sorted(by_file.items()) for line in lines
    ]
    count = plural(len(by_file), "file", "files")
    return Outcome(
        f"{plural(len(set(ids)), 'memory rests', 'memories rest')} on data that changed "
        f"since the cell read it ({count}):",
        items,
        tuple(dict.fromkeys(ids)),
        footer=" ".join(part for part in (WHAT_TO_DO, later) if part),
    )


class DataCheck:
    """Whether the data a memory rests on changed, judged of a scope's memories read newest
    first (verify's list, the timeline's marks): the files its metadata records, checked here
    (``evidence.check``: stat first, fingerprint only what changed; no request), except for a
    memory of a cell version older than one already judged (``_older_version``)."""

    def __init__(self) -> None:
        self._newest: dict[str, str] = {}  # a cell's key → its newest version judged
        self.recording = 0  # the memories judged that record their data

    def changed(self, memory: MemoryUnit) -> list[Checked]:
        """The files of ``memory`` that are not as its cell read them (none: all as read, or
        it records none, or a newer version of its cell was judged)."""
        files, root = parse_evidence(memory.metadata or {})
        if not files or _older_version(memory, self._newest):
            return []
        self.recording += 1
        return [found for found in check(files, root) if found.state != State.SAME]


def _older_version(memory: MemoryUnit, newest: dict[str, str]) -> bool:
    """Whether ``memory`` is of a cell version older than one listed before it: a cell run
    again on the new data is current at once, while the server supersedes the old version
    only once it has indexed the new one."""
    document = cell_document(memory.document_id)
    if document is None:
        return False
    return newest.setdefault(document.key, document.version) != document.version


def _line(memory: MemoryUnit) -> str:
    """``sales.ipynb · cell 3 · id 1a2b3c4d: “[cell 3] import pandas…”``: which cell first
    (what to re-run), then the start of what it said."""
    where = provenance_of(listed_memories([memory], None)[0])
    parts = [where.notebook_name or "", cells_text(where), f"id {short(memory.id)}"]
    where_text = SEPARATOR.join(part for part in parts if part)
    return f"{where_text}: “{one_line(memory.text, 100)}”"
