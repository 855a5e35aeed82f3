"""The panel's curation buttons, headless: Forget / Restore on search results and Recent rows,
the Forgotten section, and Delete… with its confirmation.

Clicks run on the kernel thread and only mark the row and schedule a worker job, so each
click here is timed; the row then shows what the server did, and a ``%recall`` agrees. The
session talks to an in-memory Hindsight that keeps memories (``CuratedHindsight``: retain,
recall, list, get, patch, document get and delete), except in the integration test at the end,
which runs against the real server.
"""

from __future__ import annotations

import html
import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest
from helpers import FakeHindsight, wait_for
from test_panel import (
    as_kernel,
    black_hole_url,
    load_fake,
    record_comms,
    search_until_found,
    show,
)

from hindsight_magic._delivery.recent import RecentItem
from hindsight_magic._ui.display import Report
from hindsight_magic._ui.panel.browser import (
    FORGETTING,
    CurationView,
    DeleteView,
    ForgottenView,
    ResultRow,
    recent_curable,
)
from hindsight_magic._ui.panel.html import (
    delete_preview_html,
    forgotten_row_html,
    recent_row_html,
    result_row_html,
)
from hindsight_magic._ui.panel.hub import panel_hub
from hindsight_magic._ui.panel.widgets import recent_spec

MEMORY_PATH = re.compile(r"/v1/default/banks/([^/]+)/(memories|documents)(?:/([^/]+))?")


class CuratedHindsight(FakeHindsight):
    """``FakeHindsight`` whose retains become memories that can be recalled (a word of the
    query in the text), listed, forgotten (``state: invalidated``), restored and deleted
    with their document, behind the real endpoint paths."""

    def __init__(self) -> None:
        super().__init__()
        self.memories: dict[str, dict[str, Any]] = {}

    def memory(self, text: str, document_id: str | None = None, **fields: Any) -> str:
        """Store a memory as the server would have made it; its id."""
        memory_id = str(uuid.uuid4())
        self.memories[memory_id] = {
            "id": memory_id,
            "text": text,
            "type": "world",
            "document_id": document_id,
            "state": "valid",
            "tags": [],
            **fields,
        }
        return memory_id

    def ids_of(self, text: str) -> list[str]:
        return [m["id"] for m in self.memories.values() if m["text"] == text]

    def handle(self, request: httpx.Request) -> httpx.Response:
        match = MEMORY_PATH.fullmatch(request.url.path)
        if not match or any(
            request.method == key.partition(" ")[0]
            and re.search(key.partition(" ")[2], request.url.path)
            for key in self.fail
        ):
            return super().handle(request)
        _, collection, item = match.groups()
        body: Any = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, dict(request.url.params), body))
        if collection == "documents":
            return self._document(request.method, item or "")
        if item is None and request.method == "POST":
            if self.refuse:
                return httpx.Response(422, json={"detail": "bad field"})
            for entry in body["items"]:
                self.memory(entry["content"], entry.get("document_id"))
            self.retained += len(body["items"])
            return httpx.Response(200, json={"success": True, "operation_id": "op"})
        if item == "recall":
            words = set(re.findall(r"\w+", body["query"].lower()))
            found = [
                dict(m)
                for m in self.memories.values()
                if m["state"] == "valid" and words & set(re.findall(r"\w+", m["text"].lower()))
            ]
            return httpx.Response(200, json={"results": found})
        if item == "list":
            params = request.url.params
            state = params.get("state") or "valid"
            found = [
                dict(m)
                for m in reversed(self.memories.values())
                if m["state"] == state and params.get("document_id") in (None, m["document_id"])
            ]
            return httpx.Response(200, json={"items": found, "total": len(found)})
        memory = self.memories.get(item or "")
        if memory is None:
            return httpx.Response(404, json={"detail": "Memory not found"})
        if request.method == "PATCH":
            if memory["type"] == "observation":
                return httpx.Response(400, json={"detail": "observation cannot be edited"})
            memory.update(body)
            if body.get("state") == "invalidated":
                memory["invalidated_at"] = datetime.now(timezone.utc).isoformat()
                memory["invalidation_reason"] = body.get("reason")
        return httpx.Response(200, json=dict(memory))

    def _document(self, method: str, document_id: str) -> httpx.Response:
        mine = [m for m in self.memories.values() if m["document_id"] == document_id]
        if not mine:
            return httpx.Response(404, json={"detail": "Document not found"})
        if method == "DELETE":
            for memory in mine:
                del self.memories[memory["id"]]
            return httpx.Response(200, json={"memory_units_deleted": len(mine)})
        text = "\n".join(m["text"] for m in mine)
        return httpx.Response(200, json={"id": document_id, "original_text": text})


@pytest.fixture
def fake() -> CuratedHindsight:
    return CuratedHindsight()


@pytest.fixture
def kernel_nb(notebook: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The notebook fixture as a Jupyter kernel, its widgets on recording comms (as in
    ``test_panel``)."""
    record_comms(monkeypatch)
    return as_kernel(notebook, monkeypatch)


# -- reading the panel -------------------------------------------------------------------------


def text_of(value: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", " ", value))


def result_row(panel: Any, text: str) -> Any:
    """The results row showing ``text`` (None while there is none)."""
    rows = [row for row in panel.browser.result_rows.shown if text in text_of(row.cell.value)]
    return rows[0] if rows else None


def recent_row(panel: Any, text: str) -> Any:
    rows = [row for row in panel.browser.recent_rows.shown if text in text_of(row.cell.value)]
    return rows[0] if rows else None


def mark_of(row: Any, css: str = "hm-result-state") -> str:
    found = re.search(rf"class='{css}'[^>]*>(.*?)</", row.cell.value)
    assert found, row.cell.value
    return html.unescape(found.group(1))


def click(widget: Any) -> None:
    """Click, and check the click itself did not wait (the worker does the work)."""
    assert not widget.disabled, widget.description
    started = time.perf_counter()
    widget.click()
    assert time.perf_counter() - started < 0.2, widget.description


def search(panel: Any, query: str) -> None:
    panel.browser.w_search_box.value = query
    click(panel.browser.w_search)
    wait_for(
        lambda: html.unescape(panel.browser.w_search_state.value),
        what=f"search {query}",
        until=lambda text: f"“{query}”: " in text and "Searching" not in text,
    )


def recalled(nb: Any, query: str) -> list[str]:
    """The memory ids a ``%recall`` of ``query`` returns."""
    result = nb.run(f"%recall {query}")
    assert result.error is None, result.text
    return [memory.id for memory in result.result]


def forgotten_ids(panel: Any) -> list[str]:
    return [row.clicks[0].target for row in panel.browser.forgotten_rows.shown if row.clicks]


# -- forget and restore ------------------------------------------------------------------------


def test_forget_on_a_search_result_shows_on_the_row_and_recall_agrees(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    fact = "The heron count on the east marsh was 212."
    kernel_nb.run(f"%retain {fact}")
    session.flush(5)
    (memory_id,) = fake.ids_of(fact)
    panel = show(kernel_nb)
    search(panel, "heron marsh")
    row = result_row(panel, fact)
    forget, delete = row.buttons
    assert (forget.description, delete.description) == ("Forget", "Delete…")
    assert mark_of(row) == ""
    click(forget)
    wait_for(lambda: mark_of(row) == "forgotten", what="row marked forgotten")
    assert forget.description == "Restore"
    assert "Forgot" in panel.w_notice.value
    assert memory_id not in recalled(kernel_nb, "heron marsh")  # recall agrees
    patched = fake.calls("PATCH", f"/memories/{memory_id}")
    assert [call[3]["state"] for call in patched] == ["invalidated"]
    # the Forgotten section lists it, with a Restore button of its own
    wait_for(lambda: forgotten_ids(panel) == [memory_id], what="listed as forgotten")
    assert panel.w_models is not panel.browser.w_forgotten
    assert "Forgotten memories (1)" in panel.browser.w_forgotten.get_title(0)
    click(forget)  # Restore, on the same row
    wait_for(lambda: mark_of(row) == "restored", what="row marked restored")
    assert forget.description == "Forget"
    assert memory_id in recalled(kernel_nb, "heron marsh")
    wait_for(lambda: forgotten_ids(panel) == [], what="Forgotten list empty")
    assert "No forgotten memories" in panel.browser.w_forgotten_message.value


def test_restore_from_the_forgotten_section(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    memory_id = fake.memory("Egrets nest in the north reeds.", "hm-egrets")
    fake.memories[memory_id].update(state="invalidated", invalidation_reason="wrong reeds")
    panel = show(kernel_nb)  # opening the panel lists the forgotten memories
    wait_for(lambda: forgotten_ids(panel) == [memory_id], what="listed")
    (row,) = panel.browser.forgotten_rows.shown
    assert "reason: wrong reeds" in text_of(row.cell.value)
    listed = len(fake.calls("GET", "/memories/list"))
    panel.browser.w_forgotten.selected_index = 0  # the user opens the section: listed again
    wait_for(lambda: len(fake.calls("GET", "/memories/list")) > listed, what="listed again")
    click(row.buttons[0])
    assert row.buttons[0].description in ("Restoring…", "Restore")  # busy, or done already
    wait_for(lambda: panel.browser.forgotten_rows.shown == [], what="gone from the list")
    assert fake.memories[memory_id]["state"] == "valid"
    assert memory_id in recalled(kernel_nb, "egrets")
    assert session.status(check_server=False).curated == "1 restored"


def test_forget_on_a_recent_row_cancels_a_memory_still_queued(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    kernel_nb.run("%retain A typo'd fact nobody should see.")
    row = wait_for(lambda: recent_row(panel, "typo'd fact"), what="Recent row")
    assert mark_of(row, "hm-recent-state") == "queued"
    (forget,) = row.buttons
    assert forget.description == "Forget"
    assert "cancel" in forget.tooltip
    click(forget)
    wait_for(lambda: mark_of(row, "hm-recent-state") == "cancelled", what="cancelled")
    assert row.buttons[0].layout.visibility == "hidden"  # nothing left to forget
    kernel_nb.magics.session.flush(5)
    assert fake.retained == 0  # never sent
    assert "Cancelled" in panel.w_notice.value


def test_forget_on_a_sent_recent_row_forgets_its_memories_on_the_server(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    fact = "The boardwalk closes at dusk."
    kernel_nb.run(f"%retain {fact}")
    session.flush(5)
    (memory_id,) = fake.ids_of(fact)
    panel = show(kernel_nb)
    row = wait_for(lambda: recent_row(panel, "boardwalk"), what="Recent row")
    wait_for(lambda: mark_of(row, "hm-recent-state") == "indexed", what="indexed")
    click(row.buttons[0])
    wait_for(lambda: mark_of(row, "hm-recent-state") == "forgotten", what="forgotten")
    assert fake.memories[memory_id]["state"] == "invalidated"
    assert row.buttons[0].description == "Restore"
    assert memory_id not in recalled(kernel_nb, "boardwalk dusk")
    click(row.buttons[0])
    wait_for(lambda: mark_of(row, "hm-recent-state") == "restored", what="restored")
    assert memory_id in recalled(kernel_nb, "boardwalk dusk")


def test_a_failed_forget_is_one_line_and_puts_the_row_back(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    kernel_nb.run("%retain Otters were seen twice.")
    assert session.flush(30).settled  # sent before the search, however busy the machine
    panel = show(kernel_nb)
    search(panel, "otters")
    row = result_row(panel, "Otters were seen twice.")
    fake.fail["PATCH /memories/"] = (500, {"detail": "database\nis down"})
    click(row.buttons[0])
    wait_for(lambda: "Forget failed" in panel.w_notice.value, what="failure note")
    assert "\n" not in panel.w_notice.value
    wait_for(lambda: row.buttons[0].description == "Forget", what="row put back")
    assert not row.buttons[0].disabled
    assert mark_of(row) == ""


def test_an_observation_cannot_be_forgotten_from_its_row(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    load_fake(kernel_nb, fake, dead_url)
    fake.memory("Kingfishers prefer the slow bend.", None, type="observation")
    panel = show(kernel_nb)
    search(panel, "kingfishers")
    forget, delete = result_row(panel, "Kingfishers").buttons
    assert forget.disabled
    assert "observation" in forget.tooltip
    assert delete.layout.visibility == "hidden"  # no source document of its own


def test_a_search_after_a_restore_elsewhere_shows_the_memory_as_it_is(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    load_fake(kernel_nb, fake, dead_url)
    memory_id = fake.memory("Plovers arrive in April.", "hm-plovers")
    panel = show(kernel_nb)
    search(panel, "plovers")
    row = result_row(panel, "Plovers")
    click(row.buttons[0])
    wait_for(lambda: mark_of(row) == "forgotten", what="forgotten")
    assert kernel_nb.run(f"%hindsight restore {memory_id}").error is None  # not the panel
    search(panel, "plovers april")
    row = result_row(panel, "Plovers")
    assert mark_of(row) == ""  # the server just found it: the panel's old mark is dropped
    assert row.buttons[0].description == "Forget"


# -- delete, with a confirmation ---------------------------------------------------------------


def test_delete_lists_what_would_go_and_deletes_only_on_confirm(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    fact = "Survey plot 7 was flooded <b>all</b> week."
    kernel_nb.run(f"%retain {fact}")
    session.flush(5)
    (memory_id,) = fake.ids_of(fact)
    document_id = fake.memories[memory_id]["document_id"]
    panel = show(kernel_nb)
    browser = panel.browser
    search(panel, "survey plot flooded")
    row = result_row(panel, "Survey plot 7")
    assert browser.w_delete_box.layout.display == "none"
    click(row.buttons[1])  # Delete…
    wait_for(lambda: not browser.w_delete_confirm.disabled, what="the preview")
    preview = browser.w_delete.value
    assert browser.w_delete_box.layout.display == ""
    assert "Would delete 1 document" in text_of(preview)
    assert "&lt;b&gt;all&lt;/b&gt;" in preview  # the memory, escaped
    assert "Nothing is deleted until you click Confirm delete." in preview
    assert row.buttons[1].disabled  # this row's delete is the one pending
    click(browser.w_delete_cancel)
    wait_for(lambda: browser.w_delete_box.layout.display == "none", what="preview gone")
    assert not fake.calls("DELETE")
    assert memory_id in fake.memories
    click(row.buttons[1])
    wait_for(lambda: not browser.w_delete_confirm.disabled, what="the preview again")
    click(browser.w_delete_confirm)
    wait_for(lambda: mark_of(row) == "deleted", what="row marked deleted")
    assert [call[1] for call in fake.calls("DELETE")] == [
        f"/v1/default/banks/panel/documents/{document_id}"
    ]
    assert memory_id not in fake.memories
    assert row.buttons[0].layout.visibility == row.buttons[1].layout.visibility == "hidden"
    assert browser.w_delete_box.layout.display == "none"
    assert "Deleted 1 document" in panel.w_notice.value
    recent = wait_for(lambda: recent_row(panel, "Survey plot 7"), what="Recent row")
    wait_for(lambda: mark_of(recent, "hm-recent-state") == "deleted", what="Recent agrees")
    assert memory_id not in recalled(kernel_nb, "survey plot flooded")


def test_the_search_line_says_found_only_once_its_results_are_shown(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    """The search line and the results change on the worker's thread; whoever looks when the
    line says "1 memory shown" (a user, a test) sees that result, not the rows before it."""
    load_fake(kernel_nb, fake, dead_url)
    fake.memory("Transect A is 400 m.", "hm-transect-a")
    panel = show(kernel_nb)
    seen: list[tuple[str, list[str]]] = []

    def look(change: dict[str, Any]) -> None:  # runs as the line changes, on that thread
        rows = [text_of(row.cell.value) for row in panel.browser.result_rows.shown]
        seen.append((text_of(change["new"]), rows))

    panel.browser.w_search_state.observe(look, names="value")
    search(panel, "transect")
    found = [rows for line, rows in seen if "shown" in line]
    assert found, seen
    assert all(any("Transect A" in row for row in rows) for rows in found), seen


def test_confirm_deletes_only_the_document_its_preview_names(
    kernel_nb: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    load_fake(kernel_nb, fake, dead_url)
    fake.memory("Transect A is 400 m.", "hm-transect-a")
    panel = show(kernel_nb)
    hub = panel_hub(kernel_nb.magics.session)
    hub.act("confirm_delete", "hm-transect-a")  # no preview shown: nothing happens
    search(panel, "transect")
    click(result_row(panel, "Transect A").buttons[1])
    wait_for(lambda: not panel.browser.w_delete_confirm.disabled, what="the preview")
    hub.act("confirm_delete", "hm-some-other-document")  # not the one shown
    time.sleep(0.3)
    assert not fake.calls("DELETE")


# -- never the network on the kernel thread ----------------------------------------------------


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    with black_hole_url() as url:
        yield url


def test_curation_clicks_never_wait_on_the_network(kernel_nb: Any, black_hole: str) -> None:
    kernel_nb.load(
        api_url=black_hole, request_timeout_ms="1500", retain_timeout_ms="1500", bank_id="panel"
    )
    kernel_nb.run("%retain a fact stuck in the queue")
    panel = show(kernel_nb)  # its first snapshot, taken here, has the Recent row
    hub = panel_hub(kernel_nb.magics.session)
    click(recent_row(panel, "stuck in the queue").buttons[0])
    memory = str(uuid.uuid4())
    for action, *args in [
        ("forget", memory),
        ("restore", memory),
        ("ask_delete", "hm-document"),
        ("cancel_delete",),
        ("load_forgotten",),
    ]:
        started = time.perf_counter()
        hub.act(action, *args)
        assert time.perf_counter() - started < 0.2, action
    assert hub.browser.curation_view.mark(memory) == FORGETTING  # a click on a busy row: ignored
    started = time.perf_counter()
    panel.browser.w_forgotten.selected_index = 0
    assert time.perf_counter() - started < 0.2


# -- the HTML and the text form ----------------------------------------------------------------


def test_curation_rows_escape_what_the_server_sent() -> None:
    hostile = "<img src=x onerror=alert(1)> & <script>"
    row = ResultRow(hostile, "world", hostile, hostile, "0.5", "id", "doc")
    for page in (
        result_row_html(row, "forgotten"),
        recent_row_html(RecentItem(hostile, 0.0, "failed", hostile), "forgotten"),
        forgotten_row_html(hostile, "restoring…"),
        delete_preview_html(DeleteView("doc", hostile, (hostile,), ready=True)),
    ):
        assert "<img" not in page
        assert "<script" not in page
        assert "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;script&gt;" in page


def test_marks_of_a_search_result_and_a_recent_row() -> None:
    view = CurationView((("m1", "forgotten"), ("doc", "deleted"), ("hm-r", "restored")))
    assert view.result_mark(ResultRow("t", "world", "", "", "", "m1", "other")) == "forgotten"
    assert view.result_mark(ResultRow("t", "world", "", "", "", "m1", "doc")) == "deleted"
    assert view.recent_state(RecentItem("t", 0.0, "indexed", document_id="hm-r")) == "restored"
    # the queue's own word on a cancel wins over a mark
    assert view.recent_state(RecentItem("t", 0.0, "cancelled", document_id="hm-r")) == "cancelled"
    assert ForgottenView().loaded is False


def test_only_memories_the_user_retained_get_a_forget_button_in_recent() -> None:
    own = RecentItem("a %retain", 0.0, "indexed", document_id=f"hm-{'0' * 32}-7")
    transcript = RecentItem("[cell 3] x = 1", 0.0, "indexed", document_id="kernel-1234")
    assert recent_curable(own)
    assert not recent_curable(transcript)  # one row of the whole session's document
    assert recent_spec(transcript, CurationView()).clicks[0].label == ""  # hidden
    assert recent_spec(own, CurationView()).clicks[0].action == "forget"


def test_text_snapshot_lists_the_forgotten_memories(
    notebook: Any, fake: CuratedHindsight, dead_url: str
) -> None:
    load_fake(notebook, fake, dead_url)
    memory_id = fake.memory("The old gauge read 3 cm low.", "hm-gauge")
    fake.memories[memory_id].update(state="invalidated", invalidation_reason="recalibrated")
    result = notebook.run("%hindsight panel")
    assert isinstance(result.result, Report)
    text = repr(result.result)
    forgotten = text.split("Forgotten:\n", 1)[1]
    assert "1 forgotten memory in bank 'panel'" in forgotten
    assert f"The old gauge read 3 cm low. — {memory_id} · reason: recalibrated" in forgotten


# -- against the real server -------------------------------------------------------------------


@pytest.mark.integration
def test_forget_and_restore_in_the_panel_against_the_real_server(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id, mental_model_auto_seed="false")
    token = uuid.uuid4().hex[:8]
    fact = f"The lichen survey {token} found 37 species on the granite wall."
    query = f"lichen survey {token} species"
    kernel_nb.run(f"%retain {fact}")
    assert kernel_nb.magics.session.flush(30).settled
    panel = show(kernel_nb)
    assert fact in search_until_found(panel, query, 120, expect=fact)
    row = result_row(panel, fact)
    memory_id = next(r.memory_id for r in panel.snapshot.search.rows if r.text == fact)
    assert memory_id in recalled(kernel_nb, query)
    forget = row.buttons[0]
    assert forget.description == "Forget"
    click(forget)
    wait_for(lambda: mark_of(row) == "forgotten", 60, "the row shows it forgotten")
    assert forget.description == "Restore"
    assert memory_id not in recalled(kernel_nb, query)  # recall agrees
    wait_for(lambda: memory_id in forgotten_ids(panel), 60, "in the Forgotten section")
    click(forget)  # Restore
    wait_for(lambda: mark_of(row) == "restored", 60, "the row shows it restored")
    assert forget.description == "Forget"
    wait_for(lambda: memory_id in recalled(kernel_nb, query), 60, "recalled again")
    wait_for(lambda: memory_id not in forgotten_ids(panel), 60, "out of the Forgotten section")
