"""What the panel's memory browser shows: immutable views, swapped whole by the worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..api.errors import HindsightError, explain, one_line
from ..memory.provenance import provenance_line

if TYPE_CHECKING:
    from ..memory.results import RecallResult

MAX_RESULTS = 50
DOC_PREVIEW_CHARS = 1500


def failure_line(error: Exception, url: str) -> str:
    """One line for ``error``: what failed and, for server errors, what it means."""
    text = explain(error, url) if isinstance(error, HindsightError) else None
    return one_line(text or f"{type(error).__name__}: {error}")


@dataclass(frozen=True)
class ResultRow:
    """One recalled memory as the results table shows it."""

    text: str
    type: str
    provenance: str
    tags: str
    score: str


@dataclass(frozen=True)
class SearchView:
    """The search box's outcome: a message line and the result rows."""

    query: str = ""
    busy: bool = False
    message: str = ""
    rows: tuple[ResultRow, ...] = ()


@dataclass(frozen=True)
class DocumentView:
    """This kernel's session document as the server stored it."""

    document_id: str = ""
    text: str = ""
    message: str = "Loading…"
    full: bool = False  # "show all" instead of the first DOC_PREVIEW_CHARS

    @property
    def shown(self) -> str:
        """The text to show: all of it, or its beginning with ``…``."""
        if self.full or len(self.text) <= DOC_PREVIEW_CHARS:
            return self.text
        return self.text[:DOC_PREVIEW_CHARS].rstrip() + " …"

    @property
    def truncated(self) -> bool:
        """Whether there is more than the preview."""
        return len(self.text) > DOC_PREVIEW_CHARS


def result_rows(result: RecallResult) -> tuple[ResultRow, ...]:
    """The table rows of a recall (best first, at most ``MAX_RESULTS``)."""
    rows = []
    for memory in list(result)[:MAX_RESULTS]:
        score = memory.scores.final if memory.scores else None
        rows.append(
            ResultRow(
                text=memory.text,
                type=memory.type or "",
                provenance=provenance_line(memory),
                tags=", ".join(memory.tags or []),
                score="" if score is None else f"{score:.3f}",
            )
        )
    return tuple(rows)
