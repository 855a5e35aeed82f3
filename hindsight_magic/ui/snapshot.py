"""What a ``%hindsight panel`` shows: one immutable ``Snapshot`` of the session, or its text form.

A snapshot is cheap (no network: it reuses ``status_report`` without its server check and adds
the health and LLM mode the hub last probed), so the hub can take one every push interval and
compare it with what each panel shows. Where no widget can show, ``text_snapshot`` is the same
report as text, with a live server check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._version import __version__
from ..discovery import running_server
from ..memory.mental_models import MentalModel
from .display import Report
from .status import status_report

if TYPE_CHECKING:
    from ..session import HindsightSession

TITLE = f"Hindsight memory (hindsight_magic {__version__})"
NO_FRONTEND = (
    "Text snapshot: no widget front end here (the live panel needs a Jupyter kernel with "
    "ipywidgets). Run %hindsight panel again to refresh."
)


@dataclass(frozen=True)
class Snapshot:
    """Everything a panel shows; equal snapshots mean nothing to send."""

    report: Report  # the status sections (server, scope, queue, auto-retain, models, session)
    models: tuple[MentalModel, ...]
    auto: str  # "on", "paused" or "off" (the setting)
    failed: int
    notice: str = ""
    closed: bool = False


def llm_mode(session: HindsightSession) -> str:
    """The local server's LLM provider when the session talks to it, else ``unknown``."""
    info = running_server()  # None when no local server runs (or its state file is broken)
    url = getattr(info, "url", None)
    if isinstance(url, str) and url.rstrip("/") == session.api_url.rstrip("/"):
        return str(getattr(info, "llm_provider", None) or "unknown")
    return "unknown"


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


def take_snapshot(session: HindsightSession, health: str, llm: str, notice: str = "") -> Snapshot:
    """A snapshot of the session (no network: reuses ``status_report`` without its check)."""
    report = _with_server_rows(status_report(session, check_server=False), health, llm)
    report.title = TITLE
    cache = session.mental_models
    auto = session.autoretain.status(process=False)
    state = "on" if auto.enabled else ("paused" if session.settings.auto_retain else "off")
    return Snapshot(
        report=report,
        models=cache.models if cache.enabled else (),
        auto=state,
        failed=session.queue.stats().failed,
        notice=notice,
    )


def text_snapshot(session: HindsightSession) -> Report:
    """``%hindsight panel`` where widgets cannot show: the status report plus the LLM mode."""
    report = _with_server_rows(status_report(session, check_server=True), None, llm_mode(session))
    report.title = TITLE
    report.footer = NO_FRONTEND
    return report
