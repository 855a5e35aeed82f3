"""The ``SessionView``: the one thing the UI knows of a session.

What it reads comes from the session's parts; its requests never touch the network on the
calling thread; it keeps the panel hub for the session's lifetime without keeping an unloaded
session alive; and the UI's modules import nothing else of the session.
"""

from __future__ import annotations

import ast
import functools
import gc
import weakref
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import FakeHindsight

import hindsight_magic as hm
from hindsight_magic._operations import RecallRequest
from hindsight_magic._session import HindsightSession, ui_view
from hindsight_magic._session.view import SessionView
from hindsight_magic._settings import HindsightSettings
from hindsight_magic.testing import Driver

PACKAGE = Path(__file__).resolve().parents[2] / "hindsight_magic"


@pytest.fixture
def make_session(make_session: Any) -> Any:
    """The shared ``make_session``, under a session id of its own."""
    return functools.partial(make_session, session_id="view-test")


def test_one_view_per_session_reading_its_parts(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session()
    view = ui_view(session)
    assert view is ui_view(session)
    session.retain("The churn table double-counts Q3 refunds.")
    assert view.queue_stats().pending == 1
    assert [item.text for item in view.recent()] == ["The churn table double-counts Q3 refunds."]
    assert (view.server_url, view.has_key, view.session_id) == (fake.url, False, "view-test")
    assert view.scope.bank_id == "nb"
    assert not hasattr(view, "client")  # the UI asks the view, never holds the HTTP client
    assert view.server_state() == "ok (Hindsight 1.1.0)"
    assert view.transcript_cells("nb") == 0
    assert not view.auto_retain_setting
    assert view.models == ()  # mental models are off
    assert view.model_rows() == [("state", "disabled (mental_models = false)")]
    assert view.autoretain_status().counted == 0
    assert not view.closed


def test_requests_only_schedule_work(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session(auto_retain=True)
    driver = Driver(session)
    view = ui_view(session)
    session.retain("queued, not sent")
    view.request_flush()
    view.reload_models()
    view.pause_autoretain(True)
    assert not view.autoretain_status().enabled
    assert view.auto_retain_setting  # the setting stays on while paused
    view.pause_autoretain(False)
    assert view.autoretain_status().enabled
    ran: list[str] = []

    def job() -> None:
        ran.append("job")

    assert view.schedule(job)
    assert view.is_scheduled(job)
    assert fake.requests == []  # nothing went to the server from this thread
    assert ran == []  # the worker runs it
    driver.pump()
    assert ran == ["job"]
    assert not view.is_scheduled(job)


def test_recall_now_does_not_send_the_queue_first(fake: FakeHindsight, make_session: Any) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memories/recall"):
            return httpx.Response(200, json={"results": []})
        return fake.handle(request)

    session = make_session(handler)
    session.retain("still queued")
    result = ui_view(session).recall_now(RecallRequest("churn"))
    assert len(result) == 0
    assert not fake.calls("POST", r"/memories$")  # a %recall would have sent it first
    assert ui_view(session).queue_stats().pending == 1


def test_the_panel_hub_slot_is_made_once(make_session: Any) -> None:
    view = ui_view(make_session())
    made: list[SessionView] = []

    def make(owner: SessionView) -> object:
        made.append(owner)
        return object()

    first = view.panel_hub(make)
    assert view.panel_hub(make) is first
    assert made == [view]


def test_a_view_does_not_keep_its_session_alive(fake: FakeHindsight) -> None:
    settings = HindsightSettings(api_url=fake.url, journal_path="off", mental_models=False)
    session = HindsightSession(settings, transport=fake.transport, start_worker=False)
    view = ui_view(session)
    session.close(0.1)
    assert view.closed
    gone = weakref.ref(session)
    del session
    gc.collect()
    assert gone() is None
    assert view.closed
    assert not view.schedule(lambda: None)  # no worker left to run it
    assert not view.is_scheduled(lambda: None)
    with pytest.raises(hm.Error, match="session is gone"):
        view.queue_stats()


def imported_names(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from … import …`` in ``path`` (``TYPE_CHECKING`` included),
    with the module as written, relative dots and all."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        ("." * node.level + (node.module or ""), alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


def test_the_ui_knows_only_the_view_and_the_session_no_ui() -> None:
    for path in sorted((PACKAGE / "_ui").rglob("*.py")):
        for module, name in imported_names(path):
            if module.lstrip(".") in ("_session", "_session.view"):
                assert name == "SessionView", f"{path.name} imports {name} from {module}"
        assert "HindsightSession" not in path.read_text(encoding="utf-8"), path
    for path in sorted((PACKAGE / "_session").glob("*.py")):
        session_imports = imported_names(path)
        assert not [m for m, _ in session_imports if m.lstrip(".").startswith("_ui")], path


def test_the_panels_bank_reads_do_not_send_the_queue_first(make_session: Any) -> None:
    from test_panel import PicturedHindsight

    fake = PicturedHindsight()
    session = make_session(fake.handle)
    session.retain("still queued")
    view = ui_view(session)
    counts = view.timeline()  # the Timeline tab's reading, on the worker: no flush, no wait
    assert counts.total == 0
    assert not fake.calls("POST", r"/memories$")  # `%hindsight timeline` would have sent it
    assert view.queue_stats().pending == 1
    fake.listed.append(
        {"id": "m1", "text": "dedupe on order_id", "fact_type": "world", "entities": "order_id"}
    )
    mapped = view.entity_map(top=1)  # the Map tab's: the bank as it is
    assert [node.name for node in mapped.nodes] == ["order_id"]
