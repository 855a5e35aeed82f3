"""``%hindsight status``: what the session knows about the server, scope, queue and models.

Rendered from the session's ``SessionStatus`` (``HindsightSession.status``), the same snapshot
the panel and an agent's ``status`` read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._version import __version__
from .display import Report

if TYPE_CHECKING:
    from .._session.status import SessionStatus


def status_report(status: SessionStatus) -> Report:
    """Server, scope, queue, auto-retain, layers, mental models and session, as a report."""
    return Report(f"hindsight_magic {__version__}", status.sections())
