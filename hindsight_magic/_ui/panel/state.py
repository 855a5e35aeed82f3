"""What a ``%hindsight panel`` shows: one immutable ``Snapshot`` of the session, or its text form.

A snapshot is cheap (no network: the session's ``SessionStatus`` without a server check, whose
server state is the one last read, with the memory browser's views), so the hub can take one
every push interval and compare it with what each panel shows. Where no
widget can show, ``text_snapshot`` is the same report as text, with a live server check, the
Recent list, the session document, the forgotten memories, the models' previews, and the
timeline and the map as tables, each read once (no search box: ``%recall``; no buttons:
``%hindsight forget`` and the others). The panel's tabs are a way to look at these sections,
not a different content: a terminal user loses the pictures, never a section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..._delivery.recent import RecentItem
from ..._errors import HindsightError
from ..._memory.mental_models import MentalModel
from ..._session.status import LLM_ELSEWHERE, AutoState
from ..._text import local_clock, one_line
from ..._version import __version__
from ..display import Report
from .browser import CurationView, DocumentView, ForgottenView, MemoryBrowser, SearchView
from .figures import FigureView, PanelFigures
from .live import LiveSession

if TYPE_CHECKING:
    from ..._session import HindsightSession
    from ..._session.status import SessionStatus

__all__ = ["LLM_ELSEWHERE", "AutoState", "Snapshot", "take_snapshot", "text_snapshot"]


TITLE = f"Hindsight memory (hindsight_magic {__version__})"
NO_FRONTEND = (
    "Text snapshot: no widget front end here (the live panel needs a Jupyter kernel with "
    "ipywidgets). Run %hindsight panel again to refresh."
)


SEARCH_HINT = "%recall QUERY (the live panel has a search box)"
NOTHING_RECENT = "(nothing queued in this kernel yet)"
TEXT_DOC_LINES = 20
PREVIEW_CHARS = 100
TEXT_MAP_TOP = 10  # entities in the text snapshot's Map section
NOT_REACHABLE = "server not reachable"


@dataclass(frozen=True)
class Snapshot:
    """Everything a panel shows; equal snapshots mean nothing to send. The health line, the
    tables and the buttons read the typed ``status`` (its fields and named rows); ``report``,
    its text form, is made from the same ``SessionStatus``, never read back."""

    status: SessionStatus  # made without a server check: the server as last read
    notice: str = ""
    closed: bool = False
    search: SearchView = field(default_factory=SearchView)
    document: DocumentView = field(default_factory=DocumentView)
    curation: CurationView = field(default_factory=CurationView)
    timeline: FigureView = field(default_factory=FigureView)
    memory_map: FigureView = field(default_factory=FigureView)

    @property
    def report(self) -> Report:
        """The status sections as the text report shows them (the panel's text form)."""
        return _report(self.status)

    @property
    def models(self) -> tuple[MentalModel, ...]:
        """The mental models shown, with content (none while turned off)."""
        return self.status.models

    @property
    def auto(self) -> AutoState:
        """Auto-retain on, paused or off."""
        return self.status.auto

    @property
    def failed(self) -> int:
        """Memories the server refused (``%hindsight retry`` resends them)."""
        return self.status.queue.failed

    @property
    def pending(self) -> int:
        """Memories waiting to be sent."""
        return self.status.queue.pending

    @property
    def health(self) -> str:
        """The server's state as last read (``checking…`` before)."""
        return self.status.health

    @property
    def server_ok(self) -> bool | None:
        """Whether the server answered when last asked; None when it was not asked yet."""
        server = self.status.server
        return server.ok if server is not None else None

    @property
    def bank(self) -> str:
        """The bank memories go to."""
        return self.status.scope.bank_id

    @property
    def recent(self) -> tuple[RecentItem, ...]:
        """This kernel's last memories, newest first."""
        return self.status.recent


def _report(status: SessionStatus) -> Report:
    return Report(TITLE, status.sections(panel=True))


def take_snapshot(
    status: SessionStatus,
    notice: str = "",
    browser: MemoryBrowser | None = None,
    figures: PanelFigures | None = None,
) -> Snapshot:
    """A snapshot of the session (no network: a status made without a check)."""
    return Snapshot(
        status=status,
        notice=notice,
        search=browser.search_view if browser else SearchView(),
        document=browser.document_view if browser else DocumentView(),
        curation=browser.curation_view if browser else CurationView(),
        timeline=figures.timeline_view if figures else FigureView(),
        memory_map=figures.map_view if figures else FigureView(),
    )


def recent_rows(items: tuple[RecentItem, ...]) -> list[tuple[str, str]]:
    """The Recent list as report rows: ``HH:MM:SS state`` → text (— why it failed)."""
    rows = []
    for item in items:
        why = f" — {item.error}" if item.error else ""
        rows.append((f"{local_clock(item.queued_at)} {item.state}", item.text + why))
    return rows or [("", NOTHING_RECENT)]


def document_rows(view: DocumentView) -> list[tuple[str, str]]:
    """The last retained cells as report rows: their ids, state, then the first lines."""
    lines = view.shown.splitlines()
    more = len(lines) > TEXT_DOC_LINES or view.truncated
    rows = [("id", view.document_id), ("state", view.message)]
    rows += [("", line) for line in lines[:TEXT_DOC_LINES]]
    return rows + ([("", "… (the live panel shows all)")] if more else [])


def forgotten_rows(view: ForgottenView) -> list[tuple[str, str]]:
    """The Forgotten list as report rows: what the server said, then one line per memory."""
    return [("", view.message), *(("", line) for _, line in view.rows)]


def picture_rows(
    session: HindsightSession, read: Callable[[HindsightSession], str]
) -> list[tuple[str, str]]:
    """A picture's text table as report rows (read once); a server error is one line."""
    try:
        text = read(session)
    except HindsightError as error:
        return [("", f"not available: {session.explain(error)}")]
    return [("", line) for line in text.splitlines()]


def _timeline_text(session: HindsightSession) -> str:
    from ..pictures import Timeline

    return Timeline(session.timeline(None, None)).text()


def _map_text(session: HindsightSession) -> str:
    from ..pictures import MemoryMap

    return MemoryMap(session.entity_map(None, TEXT_MAP_TOP)).text()


def text_snapshot(session: HindsightSession) -> Report:
    """``%hindsight panel`` where widgets cannot show: the status report (checked now) with
    the LLM mode and the models' previews, then the browser's sections."""
    status = session.status(check_server=True)
    previews = [
        (m.id, ("memories: " if m.listing else "") + one_line(m.content or "", PREVIEW_CHARS))
        for m in status.models  # none while they are turned off
    ]
    report = _report(replace(status, model_rows=(*status.model_rows, *previews)))
    report.footer = NO_FRONTEND
    browser = MemoryBrowser(LiveSession(session), lambda _text: None)
    server_ok = status.server_ok
    if server_ok:  # like the server check: a few bounded requests, on demand
        browser.check_operations()  # which sent memories are indexed by now
    report.add("Search", [("how", SEARCH_HINT)])
    report.add("Recent", recent_rows(status.recent))
    if server_ok:
        browser.fetch_document()
    else:
        browser.document_view = DocumentView(browser.document_id(), message=NOT_REACHABLE)
    report.add("Last retained cells", document_rows(browser.document_view))
    if server_ok:
        browser.fetch_forgotten()
        report.add("Forgotten", forgotten_rows(browser.curation_view.forgotten))
    for heading, read in (("Timeline", _timeline_text), (f"Map (top {TEXT_MAP_TOP})", _map_text)):
        report.add(heading, picture_rows(session, read) if server_ok else [("", NOT_REACHABLE)])
    return report
