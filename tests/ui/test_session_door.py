"""One door: the panel and the agents reach a session through its public methods, with the
same parts (one reader, one curation) as ``hm.*``, and read one typed ``SessionStatus``.

What a status shows comes from typed fields, never from a report's words; a read that runs
in a background job does not wait for delivery, which the worker does between jobs; the panel
holds its session weakly; the UI and the agents import nothing private of the session.
"""

from __future__ import annotations

import ast
import functools
import gc
import re
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import FakeHindsight

import hindsight_magic as hm
import hindsight_magic._delivery.indexing as indexing
from hindsight_magic._session import HindsightSession
from hindsight_magic._session.status import AutoState, ServerState
from hindsight_magic._settings import HindsightSettings
from hindsight_magic._ui.panel.browser import MemoryBrowser
from hindsight_magic._ui.panel.hub import panel_hub
from hindsight_magic._ui.panel.live import LiveSession
from hindsight_magic._ui.panel.state import take_snapshot
from hindsight_magic.testing import Driver

PACKAGE = Path(__file__).resolve().parents[2] / "hindsight_magic"


@pytest.fixture
def make_session(make_session: Any) -> Any:
    """The shared ``make_session``, under a session id of its own."""
    return functools.partial(make_session, session_id="door-test")


def test_one_typed_status_that_the_report_renders(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session()
    session.retain("The churn table double-counts Q3 refunds.")
    status = session.status(check_server=False)
    assert (status.url, status.has_key, status.session_id) == (fake.url, False, "door-test")
    assert status.server is None  # never asked: no request made for it
    assert fake.requests == []
    assert status.queue.pending == 1
    assert [item.text for item in status.recent] == ["The churn table double-counts Q3 refunds."]
    assert status.scope.bank_id == "nb"
    assert status.auto == AutoState.OFF
    assert status.models == ()  # mental models are off
    assert status.model_rows == (("state", "disabled (mental_models = false)"),)
    checked = session.status()
    assert checked.server == ServerState(fake.url, True, "ok (Hindsight 1.1.0)", None)
    assert session.status(check_server=False).server == checked.server  # the last one read
    text = str(hm.status(session=session))
    assert "state    ok (Hindsight 1.1.0)" in text
    assert re.search(r"pending +1\n", text)
    assert "Auto-retain:" in text
    agent = [heading for heading, _ in checked.sections(kernel=False)]
    assert agent == ["Server", "Scope", "Queue", "Mental models"]  # no kernel counters


def test_a_server_that_is_not_hindsight_is_not_ok(make_session: Any) -> None:
    session = make_session(lambda request: httpx.Response(404, text="nothing here"))
    assert not session.check_server()
    status = session.status(check_server=False)
    assert status.server is not None
    assert "is not a Hindsight server" in status.server.line
    assert not status.server_ok


def test_the_panel_decides_from_fields_not_words(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session()
    status = session.status(check_server=False)
    assert take_snapshot(status).server_ok is None  # "checking…": not asked yet
    wording = ServerState(fake.url, False, "ok, says the proxy in front of it")
    snapshot = take_snapshot(replace(status, server=wording))
    assert snapshot.server_ok is False  # what it says is shown, never read back
    assert snapshot.health == "ok, says the proxy in front of it"
    assert ("state", "ok, says the proxy in front of it") in dict(snapshot.report.sections)[
        "Server"
    ]


def test_requests_only_schedule_work(fake: FakeHindsight, make_session: Any) -> None:
    session = make_session(auto_retain=True)
    driver = Driver(session)
    session.retain("queued, not sent")
    session.send_now()
    session.reload_models(wait=False)
    session.pause_autoretain(True)
    assert session.status(check_server=False).auto == AutoState.PAUSED  # the setting stays on
    session.pause_autoretain(False)
    assert session.status(check_server=False).auto == AutoState.ON
    ran: list[str] = []

    def job() -> None:
        ran.append("job")

    assert session.in_background(job)
    assert job in driver.scheduled()
    assert fake.requests == []  # nothing went to the server from this thread
    assert ran == []  # the worker runs it
    driver.pump()
    assert ran == ["job"]
    assert job not in driver.scheduled()


def test_a_read_in_a_background_job_does_not_wait_for_delivery(
    fake: FakeHindsight, make_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker sends the queue between its jobs: a read that waited for it inside a job
    (the panel's search, which waits step by step itself) would only hold the worker."""
    monkeypatch.setattr(indexing, "READ_WAIT_S", 3.0)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memories/recall"):
            return httpx.Response(200, json={"results": []})
        return fake.handle(request)

    session = make_session(handler, run_worker=True)
    took: list[float] = []

    def search() -> None:
        session.retain("queued while the worker runs this job")
        started = time.monotonic()
        session.recall("churn")
        took.append(time.monotonic() - started)

    assert session.in_background(search)
    deadline = time.monotonic() + 10
    while not took and time.monotonic() < deadline:
        time.sleep(0.05)
    assert took, "the job did not end"
    assert took[0] < 1.5, took
    assert session.recall("churn").query == "churn"  # a read on this thread still sends first
    assert fake.calls("POST", r"/memories$")


def test_the_panel_s_forget_is_hm_forget(
    fake: FakeHindsight, make_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make_session()
    called: list[str] = []
    forget = HindsightSession.forget

    def recorded(self: HindsightSession, memory: str, reason: str = "") -> Any:
        called.append(memory)
        return forget(self, memory, reason)

    monkeypatch.setattr(HindsightSession, "forget", recorded)
    retain_id = session.retain("a queued memory the panel forgets")
    assert retain_id is not None
    browser = MemoryBrowser(LiveSession(session), lambda _text: None)
    browser.forget(retain_id)
    Driver(session).pump()
    assert called == [retain_id]
    assert browser.curation_view.mark(retain_id) == "cancelled"  # it was still queued


def test_the_panel_s_search_is_hm_recall(
    fake: FakeHindsight, make_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One reader: the panel's search is the session's recall (the one ``hm.recall`` calls),
    so it is also the recall ``#1`` names."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/memories/recall"):
            found = {"id": "m1", "text": "Churn is counted monthly.", "type": "world"}
            return httpx.Response(200, json={"results": [found]})
        return fake.handle(request)

    session = make_session(handler)
    asked: list[str] = []
    recall = HindsightSession.recall

    def recorded(self: HindsightSession, request: Any) -> Any:
        asked.append(request if isinstance(request, str) else request.query)
        return recall(self, request)

    monkeypatch.setattr(HindsightSession, "recall", recorded)
    browser = MemoryBrowser(LiveSession(session), lambda _text: None)
    browser.search({"query": "churn"})
    Driver(session).pump()
    assert asked == ["churn"]
    assert [row.text for row in browser.search_view.rows] == ["Churn is counted monthly."]
    assert "Churn is counted monthly." in hm.context(session=session)  # the last recall


def test_the_panel_hub_is_one_per_session_and_holds_it_weakly(fake: FakeHindsight) -> None:
    settings = HindsightSettings(api_url=fake.url, journal_path="off", mental_models=False)
    session = HindsightSession(settings, transport=fake.transport, start_worker=False)
    hub = panel_hub(session)
    assert panel_hub(session) is hub
    live = LiveSession(session)
    session.close(0.1)
    assert live.closed
    gone = weakref.ref(session)
    del session
    gc.collect()
    assert gone() is None  # the hub (kept while a panel is open) does not keep it alive
    assert live.closed
    assert not live.in_background(lambda: None)  # no worker left to run it
    with pytest.raises(hm.Error, match="session is gone"):
        live()


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


def test_the_ui_knows_the_session_and_its_status_only() -> None:
    allowed = {
        "_session": {"HindsightSession"},
        "_session.status": {"AutoState", "LLM_ELSEWHERE", "SessionStatus"},
    }
    for path in sorted((PACKAGE / "_ui").rglob("*.py")):
        for module, name in imported_names(path):
            where = module.lstrip(".")
            if where.startswith("_session"):
                assert name in allowed.get(where, set()), (
                    f"{path.name} imports {name} from {module}"
                )
        text = path.read_text(encoding="utf-8")
        assert "_parts" not in text, path  # no part, only the session's methods
        assert "PARTS" not in text, path
    for path in sorted((PACKAGE / "_session").glob("*.py")):
        session_imports = imported_names(path)
        assert not [m for m, _ in session_imports if m.lstrip(".").startswith("_ui")], path


def test_the_panels_bank_reads_do_not_wait_for_the_queue(make_session: Any) -> None:
    from test_panel import PicturedHindsight

    fake = PicturedHindsight()
    session = make_session(fake.handle)
    session.retain("still queued")
    read: list[Any] = []

    def tab() -> None:  # the Timeline and Map tabs' readings, on the worker
        read.append(session.timeline(None, None))
        fake.listed.append(
            {"id": "m1", "text": "dedupe on order_id", "fact_type": "world", "entities": "order_id"}
        )
        read.append(session.entity_map(None, 1))

    session.in_background(tab)
    driver = Driver(session)
    driver.run_due_jobs()  # the job alone: delivery comes after it
    assert read[0].total == 0
    assert not fake.calls("POST", r"/memories$")  # the reading did not wait for the send
    assert [node.name for node in read[1].nodes] == ["order_id"]
    assert session.status(check_server=False).queue.pending == 1
