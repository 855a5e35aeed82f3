"""``%hindsight status``: what the session knows about the server, scope, queue and models.

Built from the session's ``SessionView`` only (``status_report(ui_view(session), …)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._text import local_second
from .._version import __version__
from .display import Report

if TYPE_CHECKING:
    from .._session.view import SessionView


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "never"
    return local_second(stamp)


def status_report(view: SessionView, check_server: bool = True) -> Report:
    """Server, scope, queue, auto-retain, mental models and session, as a report.

    ``check_server`` (a user-run ``%hindsight status``) asks the server (≤ 5 s), processes the
    recorded cells and waits (≤ 1.5 s) for the first model list; without it (the panel's
    snapshot) the report is built from what the session knows, without I/O."""
    stats = view.queue_stats()
    report = Report(f"hindsight_magic {__version__}")
    server = [("url", view.server_url)]
    if check_server:
        server.append(("state", view.server_state()))
    server.append(("api key", "set" if view.has_key else "not set"))
    report.add("Server", server)
    scope = view.scope
    report.add(
        "Scope",
        [
            ("mode", scope.mode),
            ("bank", scope.bank_id),
            ("project", scope.label),
            ("tags", ", ".join(scope.retain_tags or ()) or "(none)"),
        ],
    )
    report.add(
        "Queue",
        [
            ("pending", str(stats.pending)),
            ("in flight", str(stats.in_flight)),
            ("accepted", str(stats.accepted)),
            ("not resent", f"{view.already_stored} (retained again by a re-run: already stored)"),
            ("retrying", str(stats.retrying)),
            ("retrying at", _when(stats.retry_at) if stats.retry_at else "-"),
            ("failed", str(stats.failed) + (" (%hindsight retry)" if stats.failed else "")),
            ("last flush", _when(stats.last_flush)),
            ("last error", stats.last_error or "-"),
            (
                "journal",
                f"memory only ({stats.journal_problem}) — retrying"
                if stats.journal_problem
                else stats.journal or "off (memory only)",
            ),
        ],
    )
    auto = view.autoretain_status(process=check_server)
    report.add(
        "Auto-retain",
        [
            ("state", "on" if auto.enabled else "off"),
            ("mode", f"{auto.mode}, every {auto.every} cells"),
            ("cells counted", str(auto.counted)),
            ("next retain in", f"{auto.until_next} cells"),
            ("cells retained", str(auto.retained)),
            ("cells unchanged", f"{auto.unchanged} (run again as they were: nothing sent)"),
        ],
    )
    if check_server:  # mental models: a status check waits (≤ 1.5 s) for the first load
        view.wait_first_model_load()
    layers = view.layer_rows(check_server)
    if layers:
        report.add("Layers", layers)  # read beside the own bank ('mine'), never written
    report.add("Mental models", view.model_rows())
    report.add(
        "Session",
        [
            ("id", view.session_id),
            ("notebook", view.notebook or "-"),
            ("curated", view.curated() or "nothing yet"),
        ],
    )
    return report
