"""What a ``%hindsight panel`` shows: one immutable ``Snapshot`` of the session, or its text form.

A snapshot is cheap (no network: it reuses ``status_report`` without its server check, adds
the health and LLM mode the hub last probed, the memory browser's views and the Recent feed), so
the hub can take one every push interval and compare it with what each panel shows. Where no
widget can show, ``text_snapshot`` is the same report as text, with a live server check, the
Recent list, the session document, the forgotten memories, the models' previews, and the
timeline and the map as tables, each read once (no search box: ``%recall``; no buttons:
``%hindsight forget`` and the others). The panel's tabs are a way to look at these sections,
not a different content: a terminal user loses the pictures, never a section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..._delivery.recent import RecentItem
from ..._enums import StrEnum
from ..._errors import HindsightError
from ..._machine import running_server
from ..._memory.mental_models import MentalModel
from ..._text import local_clock, one_line
from ..._version import __version__
from ..display import Report
from ..status import status_report
from .browser import CurationView, DocumentView, ForgottenView, MemoryBrowser, SearchView
from .figures import FigureView, PanelFigures

if TYPE_CHECKING:
    from ..._session.view import SessionView


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


class AutoState(StrEnum):
    """Auto-retain as the panel shows it: on, paused by its button, or off (the setting)."""

    ON = "on"
    PAUSED = "paused"
    OFF = "off"


@dataclass(frozen=True)
class Snapshot:
    """Everything a panel shows; equal snapshots mean nothing to send."""

    report: Report  # the status sections (server, scope, queue, auto-retain, models, session)
    models: tuple[MentalModel, ...]
    auto: AutoState
    failed: int
    notice: str = ""
    closed: bool = False
    search: SearchView = field(default_factory=SearchView)
    document: DocumentView = field(default_factory=DocumentView)
    recent: tuple[RecentItem, ...] = ()
    curation: CurationView = field(default_factory=CurationView)
    timeline: FigureView = field(default_factory=FigureView)
    memory_map: FigureView = field(default_factory=FigureView)


LLM_ELSEWHERE = "not known here (%hindsight doctor asks the server)"


def llm_mode(view: SessionView) -> str:
    """The local server's LLM provider when the session talks to it; a server elsewhere says
    it only to a real call, which ``%hindsight doctor`` makes (``LLM_ELSEWHERE``)."""
    info = running_server()  # None when no local server runs (or its state file is broken)
    url = getattr(info, "url", None)
    if isinstance(url, str) and url.rstrip("/") == view.server_url.rstrip("/"):
        return str(getattr(info, "llm_provider", None) or "unknown")
    return LLM_ELSEWHERE


def _with_server_rows(report: Report, health: str | None, llm: str) -> Report:
    """Add (or set) the health and LLM rows of the report's Server section."""
    rows = next((rows for heading, rows in report.sections if heading == "Server"), None)
    if rows is None:
        rows = []
        report.sections.insert(0, ("Server", rows))
    if health is not None and not any(label == "state" for label, _ in rows):
        rows.insert(min(1, len(rows)), ("state", health))
    rows.append(("llm", llm))
    return report


def take_snapshot(
    view: SessionView,
    health: str,
    llm: str,
    notice: str = "",
    browser: MemoryBrowser | None = None,
    figures: PanelFigures | None = None,
) -> Snapshot:
    """A snapshot of the session (no network: reuses ``status_report`` without its check)."""
    report = _with_server_rows(status_report(view, check_server=False), health, llm)
    report.title = TITLE
    auto = view.autoretain_status(process=False)
    state = AutoState.ON if auto.enabled else AutoState.OFF
    if not auto.enabled and view.auto_retain_setting:
        state = AutoState.PAUSED
    return Snapshot(
        report=report,
        models=view.models,
        auto=state,
        failed=view.queue_stats().failed,
        notice=notice,
        search=browser.search_view if browser else SearchView(),
        document=browser.document_view if browser else DocumentView(),
        recent=view.recent(),
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


def picture_rows(view: SessionView, read: Callable[[SessionView], str]) -> list[tuple[str, str]]:
    """A picture's text table as report rows (read once); a server error is one line."""
    try:
        text = read(view)
    except HindsightError as error:
        return [("", f"not available: {view.explain(error)}")]
    return [("", line) for line in text.splitlines()]


def _timeline_text(view: SessionView) -> str:
    from ..pictures import Timeline

    return Timeline(view.timeline()).text()


def _map_text(view: SessionView) -> str:
    from ..pictures import MemoryMap

    return MemoryMap(view.entity_map(top=TEXT_MAP_TOP)).text()


def text_snapshot(view: SessionView) -> Report:
    """``%hindsight panel`` where widgets cannot show: the status report plus the LLM mode."""
    report = _with_server_rows(status_report(view, check_server=True), None, llm_mode(view))
    report.title = TITLE
    report.footer = NO_FRONTEND
    sections = dict(report.sections)
    models = sections.get("Mental models")
    if models is not None:  # no models listed while they are turned off
        models += [
            (m.id, ("memories: " if m.listing else "") + one_line(m.content or "", PREVIEW_CHARS))
            for m in view.models
        ]
    browser = MemoryBrowser(view, lambda _text: None)
    server_ok = dict(sections.get("Server", [])).get("state", "").startswith("ok")
    if server_ok:  # like the server check: a few bounded requests, on demand
        browser.check_operations()  # which sent memories are indexed by now
    report.add("Search", [("how", SEARCH_HINT)])
    report.add("Recent", recent_rows(view.recent()))
    if server_ok:
        browser.fetch_document()
    else:
        browser.document_view = DocumentView(browser.document_id(), message=NOT_REACHABLE)
    report.add("Last retained cells", document_rows(browser.document_view))
    if server_ok:
        browser.fetch_forgotten()
        report.add("Forgotten", forgotten_rows(browser.curation_view.forgotten))
    for heading, read in (("Timeline", _timeline_text), (f"Map (top {TEXT_MAP_TOP})", _map_text)):
        report.add(heading, picture_rows(view, read) if server_ok else [("", NOT_REACHABLE)])
    return report
