"""``%hindsight panel`` headless: widgets built without a front end, driven through the session.

Widgets get a recording comm (conventions §4.2), so the tests can count the update messages
that would reach a browser. The session talks to a fake Hindsight (``httpx.MockTransport``)
except in the one integration test; a "black hole" server (accepts, never answers) proves that
clicks do not wait on the network.
"""

from __future__ import annotations

import gc
import html
import io
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import httpx
import pytest
from helpers import FakeHindsight, now_iso, poll, wait_for
from IPython.display import display
from IPython.utils.capture import capture_output

from hindsight_magic._api.client import HindsightClient
from hindsight_magic._text import parse_iso
from hindsight_magic._ui import pictures
from hindsight_magic._ui.display import Report
from hindsight_magic._ui.panel import figures
from hindsight_magic._ui.panel.browser import STILL_INDEXING
from hindsight_magic._ui.panel.html import health_html, markdown_to_html
from hindsight_magic._ui.panel.hub import PUSH_INTERVAL_S, panel_hub
from hindsight_magic._ui.panel.state import LLM_ELSEWHERE, NO_FRONTEND
from hindsight_magic.testing import Driver


class RecordingComm:
    """Stands in for a kernel comm: remembers every message a widget sends."""

    kernel = "recording"

    def __init__(self, **kwargs: Any) -> None:
        self.comm_id = uuid.uuid4().hex
        self.messages: list[dict[str, Any]] = []
        self.closed = False

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        pass

    def send(self, data: Any = None, buffers: Any = None, **kwargs: Any) -> None:
        self.messages.append(data)

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True


def dom_classes(widget: Any) -> list[str]:
    """The CSS classes ipywidgets sends for ``widget`` (its state, the public read of them)."""
    return list(widget.get_state("_dom_classes")["_dom_classes"])


def cell(html_text: str, name: str) -> str:
    """The value cell ``hm-<name>`` of a panel section's HTML."""
    found = re.search(rf"class='hm-{name}'[^>]*>(.*?)</td>", html_text)
    assert found, f"hm-{name} not in {html_text[:200]}"
    return found.group(1)


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    """Every comm a widget opens during the test."""
    return record_comms(monkeypatch)


def record_comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    """Make every widget opened from now on (until ``monkeypatch`` undoes it) talk to a
    ``RecordingComm``; the list of them (a function, so other test modules can share it)."""
    import ipywidgets

    made: list[RecordingComm] = []
    if int(ipywidgets.__version__.split(".")[0]) < 8:
        # ipywidgets 7 makes ipykernel's Comm itself and type-checks it: record in a subclass
        import ipywidgets.widgets.widget as widget_module
        from ipykernel.comm import Comm as KernelComm

        class RecordingKernelComm(RecordingComm, KernelComm):  # type: ignore[misc]
            pass

        def create_v7(**kwargs: Any) -> RecordingComm:
            made.append(RecordingKernelComm(**kwargs))
            return made[-1]

        monkeypatch.setattr(widget_module, "Comm", create_v7)
        return made

    import comm
    import ipykernel.ipkernel  # noqa: F401  (importing it installs its own create_comm)

    def create(**kwargs: Any) -> RecordingComm:
        made.append(RecordingComm(**kwargs))
        return made[-1]

    monkeypatch.setattr(comm, "create_comm", create)
    return made


class PicturedHindsight(FakeHindsight):
    """``FakeHindsight`` whose retains become memories it lists (``memories/list``, each
    mentioned now, from the notebook its metadata names, naming the entities it was sent with),
    so the panel's Timeline and Map have something to draw. ``list_times`` are the monotonic
    times of each timeline reading (its first page of valid memories by time: not a count, not
    the Forgotten section's), ``map_times`` those of each map reading (the valid facts, a
    fact type at a time)."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: list[dict[str, Any]] = []
        self.list_times: list[float] = []
        self.map_times: list[float] = []

    def _forced(self, request: httpx.Request) -> bool:
        return any(
            request.method == key.partition(" ")[0]
            and re.search(key.partition(" ")[2], request.url.path)
            for key in self.fail
        )

    def handle(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path.endswith("/memories/list") and request.url.params.get("offset") in (None, "0"):
            params = request.url.params
            reading = params.get("state") == "valid" and params.get("limit") != "0"
            if reading and params.get("type") == "world":
                self.map_times.append(time.monotonic())  # the map reads facts by type
            elif reading:
                self.list_times.append(time.monotonic())  # the first page, not a count
        if path.endswith("/memories/list") and not self._forced(request):
            self.requests.append((method, path, dict(request.url.params), None))
            kind = request.url.params.get("type")
            listed = [m for m in self.listed if kind in (None, m["fact_type"])]
            return httpx.Response(200, json={"items": listed, "total": len(listed)})
        reply = super().handle(request)
        if path.endswith("/memories") and method == "POST" and reply.status_code == 200:
            for item in json.loads(request.content)["items"]:
                self.listed.append(
                    {
                        "id": uuid.uuid4().hex,
                        "text": item["content"],
                        "fact_type": "world",
                        "mentioned_at": item.get("timestamp") or now_iso(),
                        "metadata": item.get("metadata") or {},
                        "entities": ", ".join(e["text"] for e in item.get("entities") or ()),
                    }
                )
        return reply


@pytest.fixture
def fake() -> FakeHindsight:
    return PicturedHindsight()


@pytest.fixture
def kernel_nb(notebook: Any, comms: list[RecordingComm], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The notebook fixture, looking like a Jupyter kernel (widgets can show)."""
    return as_kernel(notebook, monkeypatch)


def as_kernel(notebook: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``notebook``, looking like a Jupyter kernel (widgets can show) until ``monkeypatch``
    undoes it."""
    monkeypatch.setattr(notebook.ip, "kernel", object(), raising=False)
    # a kernel runs _ipython_display_ (ipywidgets 7 shows through it); a terminal shell does not
    formatter = notebook.ip.display_formatter.ipython_display_formatter
    monkeypatch.setattr(formatter, "enabled", True)
    return notebook


def load_fake(nb: Any, fake: FakeHindsight, dead_url: str) -> Any:
    nb.load(api_url=dead_url, mental_model_auto_seed="false", bank_id="panel")
    session = nb.magics.session
    Driver(session).use_transport(httpx.MockTransport(fake), timeout_s=2)
    session.reload_models()
    return session


def show(nb: Any) -> Any:
    result = nb.run("%hindsight panel")
    assert result.error is None, result.text
    assert type(result.result).__name__ == "HindsightPanel"
    return result.result


# -- the panel follows the session ------------------------------------------------------------


def test_enqueue_and_flush_change_the_queue_widgets(kernel_nb: Any, fake: FakeHindsight, dead_url):
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    assert cell(panel.w_queue.value, "queue-pending") == "0"
    wait_for(lambda: "ok (Hindsight 1.1.0)" in panel.w_header.value, what="health ok")
    assert cell(panel.w_header.value, "server-llm") == LLM_ELSEWHERE
    kernel_nb.run("%retain one\n%retain two\n%retain three")
    wait_for(lambda: cell(panel.w_queue.value, "queue-pending") == "3", what="pending 3")
    assert cell(panel.w_queue.value, "queue-accepted") == "0"
    session.flush(5)
    wait_for(lambda: cell(panel.w_queue.value, "queue-accepted") == "3", what="accepted 3")
    assert cell(panel.w_queue.value, "queue-pending") == "0"
    assert cell(panel.w_queue.value, "queue-last-flush") != "never"
    assert fake.retained == 3


def test_a_refused_batch_shows_and_retry_resends_it(kernel_nb: Any, fake: FakeHindsight, dead_url):
    session = load_fake(kernel_nb, fake, dead_url)
    fake.refuse = True
    panel = show(kernel_nb)
    assert panel.w_retry.disabled
    kernel_nb.run("%retain refused fact")
    session.flush(5)
    wait_for(lambda: cell(panel.w_queue.value, "queue-failed").startswith("1"), what="failed 1")
    assert "bad field" in cell(panel.w_queue.value, "queue-last-error")
    wait_for(lambda: not panel.w_retry.disabled, what="retry enabled")
    fake.refuse = False
    panel.w_retry.click()
    wait_for(lambda: cell(panel.w_queue.value, "queue-accepted") == "1", what="accepted 1")
    wait_for(lambda: panel.w_retry.disabled, what="retry disabled again")
    assert cell(panel.w_queue.value, "queue-failed") == "0"
    assert "Re-sending 1 failed memory." in panel.w_notice.value


def test_mental_models_render_as_escaped_markdown(kernel_nb: Any, fake: FakeHindsight, dead_url):
    fake.models = [
        {
            "id": "conventions",
            "name": "Project conventions",
            "content": "# Data\n- **dedupe** on `order_id`\n<script>alert(1)</script>",
            "last_refreshed_at": "2026-01-02T03:04:05Z",
        }
    ]
    load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    models = panel.w_models
    titles = tuple(models.get_title(i) for i in range(len(models.children)))
    assert titles == ("Project conventions — refreshed 2026-01-02 03:04 UTC",)
    content = panel.w_models.children[0].children[0].value
    assert "<strong>dedupe</strong>" in content
    assert "<code>order_id</code>" in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content
    assert "<script>" not in content
    fake.models = [dict(fake.models[0], content="Use **UTC** everywhere.")]
    panel.w_refresh.click()  # the cache's reload, on the worker
    wait_for(
        lambda: "<strong>UTC</strong>" in panel.w_models.children[0].children[0].value,
        what="reload",
    )


def test_pause_button_toggles_auto_retain(kernel_nb: Any, fake: FakeHindsight, dead_url) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    assert panel.w_pause.description == "Pause auto-retain"
    panel.w_pause.click()
    assert not session.autoretain_status().enabled
    wait_for(lambda: panel.w_pause.description == "Resume auto-retain", what="resume label")
    assert cell(panel.w_auto.value, "autoretain-state") == "off"
    panel.w_pause.click()
    assert session.autoretain_status().enabled
    wait_for(lambda: panel.w_pause.description == "Pause auto-retain", what="pause label")
    sent = panel.w_pause.comm.messages
    before = len(sent)
    kernel_nb.run("%hindsight autoretain off")  # the setting: the button can't resume it
    wait_for(lambda: panel.w_pause.description == "Auto-retain off", what="off label")
    wait_for(lambda: panel.w_pause.disabled, what="pause disabled")
    time.sleep(2 * PUSH_INTERVAL_S)
    updates = [m for m in sent[before:] if m.get("method") == "update"]
    assert len(updates) == 1, updates  # hold_sync: three traits, one message
    assert {"description", "tooltip", "disabled"} <= set(updates[0]["state"])


# -- throttling, batching, consistency ---------------------------------------------------------


def test_throttle_holds_under_1000_rapid_enqueues(
    kernel_nb: Any, fake: FakeHindsight, dead_url: str, comms: list[RecordingComm]
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    hub = panel_hub(session)
    wait_for(lambda: hub.pushes >= 1, what="first push")  # the health check
    time.sleep(PUSH_INTERVAL_S)
    before = hub.pushes
    started = time.monotonic()
    for index in range(1000):  # ~3 s of enqueues, so most ticks see a change
        session.retain(f"rapid fact {index}")
        panel.w_flush.click()  # each click also asks for an update at once
        if index >= 800:
            hub.push()  # and a hostile caller asks for a push after every enqueue
        time.sleep(0.003)
    Driver(session).request_flush()
    wait_for(lambda: cell(panel.w_queue.value, "queue-accepted") == "1000", what="all accepted")
    elapsed = time.monotonic() - started
    times = [t for t in hub.push_times if t >= started]
    pushes = hub.pushes - before
    print(f"\n{pushes} pushes in {elapsed:.2f} s ({pushes / elapsed:.1f}/s) for 1000 enqueues")
    assert pushes >= 5  # it kept updating while the queue filled and drained
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= PUSH_INTERVAL_S - 1e-6, gaps
    for t in times:  # no second holds more than 4 pushes
        assert sum(t <= u < t + 1.0 - 1e-6 for u in times) <= 4
    # hold_sync: each widget sends at most one update per push (+1 for the panel's first show)
    updates = [
        sum(1 for m in c.messages if m and m.get("method") == "update") for c in comms
    ]  # fmt: skip
    assert max(updates) <= hub.pushes + 1, (max(updates), hub.pushes)


def test_several_panels_show_the_same_snapshot(kernel_nb: Any, fake: FakeHindsight, dead_url):
    session = load_fake(kernel_nb, fake, dead_url)
    first, second = show(kernel_nb), show(kernel_nb)
    for index in range(5):
        session.retain(f"shared fact {index}")
    session.flush(5)
    third = show(kernel_nb)
    wait_for(lambda: cell(first.w_queue.value, "queue-accepted") == "5", what="accepted 5")
    wait_for(lambda: first.snapshot == second.snapshot == third.snapshot, what="same snapshot")
    for name in ("w_header", "w_queue", "w_auto", "w_models_state", "w_notice"):
        values = {getattr(panel, name).value for panel in (first, second, third)}
        assert len(values) == 1, name
    first.w_flush.click()
    wait_for(lambda: "Flush requested." in third.w_notice.value, what="notice everywhere")
    assert second.w_notice.value == third.w_notice.value


def test_closing_a_panel_stops_its_updates(kernel_nb: Any, fake: FakeHindsight, dead_url):
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    hub = panel_hub(session)
    wait_for(lambda: hub.pushes >= 1, what="first push")
    panel.close()
    assert not panel.is_open
    assert hub.views == []
    frozen, pushes = panel.w_queue.value, hub.pushes
    session.retain("after close")
    time.sleep(4 * PUSH_INTERVAL_S)
    assert panel.w_queue.value == frozen
    assert hub.pushes == pushes
    assert not hub.scheduled  # nothing re-submits itself


def test_unload_stops_updates(kernel_nb: Any, fake: FakeHindsight, dead_url: str) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    hub = panel_hub(session)
    wait_for(lambda: hub.pushes >= 1, what="first push")
    kernel_nb.run("%unload_ext hindsight_magic")
    assert not Driver(session).worker_running  # the worker (and with it the panel job) is gone
    pushes = hub.pushes
    panel.w_flush.click()  # a click after unload only marks the panel closed
    assert panel.w_flush.disabled
    assert "Extension unloaded." in panel.w_notice.value
    assert hub.views == []
    time.sleep(4 * PUSH_INTERVAL_S)
    assert hub.pushes == pushes
    gone = weakref.ref(session)
    del session
    gc.collect()
    assert gone() is None  # an open panel does not keep the unloaded session alive


# -- clicks and fallbacks ----------------------------------------------------------------------


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    with black_hole_url() as url:
        yield url


@contextmanager
def black_hole_url() -> Iterator[str]:
    """The URL of a server that accepts connections and never answers, while in the block."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_clicks_never_wait_on_the_network(kernel_nb: Any, black_hole: str) -> None:
    kernel_nb.load(
        api_url=black_hole, request_timeout_ms="1500", retain_timeout_ms="1500", bank_id="panel"
    )
    panel = show(kernel_nb)
    kernel_nb.run("%retain stuck fact")
    panel.browser.w_search_box.value = "stuck"
    buttons = [panel.w_flush, panel.w_retry, panel.w_refresh, panel.w_pause, panel.w_pause]
    buttons += [panel.browser.w_search, panel.browser.w_doc_reload, panel.browser.w_doc_toggle]
    for button in buttons:
        started = time.perf_counter()
        button.click()
        assert time.perf_counter() - started < 0.2, button.description


def test_terminal_ipython_gets_a_text_snapshot(notebook: Any, dead_url: str) -> None:
    notebook.load(api_url=dead_url, bank_id="panel")
    notebook.run("%retain a fact for the snapshot")
    result = notebook.run("%hindsight panel")
    assert isinstance(result.result, Report)
    text = repr(result.result)
    assert NO_FRONTEND in text
    assert re.search(r"pending\s+1\b", text)
    assert "unreachable" in text
    assert re.search(rf"llm\s+{re.escape(LLM_ELSEWHERE)}", text)  # no local server at this URL
    assert re.search(r"Recent:\n  \d\d:\d\d:\d\d queued\s+a fact for the snapshot\n", text)
    assert re.search(r"Last retained cells:\n  id\s+\S*\n  state\s+server not reachable", text)
    assert "%recall QUERY" in text
    assert "Traceback" not in result.text


def test_llm_mode_is_the_recorded_local_servers(notebook: Any, dead_url: str, monkeypatch) -> None:
    from types import SimpleNamespace

    import hindsight_magic._session.status as session_status

    record = SimpleNamespace(url=dead_url + "/", llm_provider="mock")  # the state file's record
    monkeypatch.setattr(session_status, "running_server", lambda: record)
    notebook.load(api_url=dead_url, bank_id="panel")
    assert re.search(r"llm\s+mock\b", repr(notebook.run("%hindsight panel").result))
    record.url = "http://127.0.0.1:1"  # a local server, but not the one this session uses
    shown = repr(notebook.run("%hindsight panel").result)
    assert re.search(rf"llm\s+{re.escape(LLM_ELSEWHERE)}", shown)


def test_missing_ipywidgets_falls_back_to_text(kernel_nb: Any, monkeypatch, dead_url) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import raises ImportError
    kernel_nb.load(api_url=dead_url, bank_id="panel")
    result = kernel_nb.run("%hindsight panel")
    assert isinstance(result.result, Report)


def test_panel_text_repr_is_the_whole_snapshot(kernel_nb: Any, fake: FakeHindsight, dead_url):
    load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    with capture_output() as shown:  # what a front end receives, on ipywidgets 7 and 8
        display(panel)
    bundle = shown.outputs[-1].data
    assert "application/vnd.jupyter.widget-view+json" in bundle
    text = bundle["text/plain"]
    assert text == repr(panel)
    assert text.startswith("Hindsight memory")
    for heading in ("Server:", "Queue:", "Auto-retain:", "Mental models:"):
        assert heading in text


def test_panel_takes_no_arguments(kernel_nb: Any, dead_url: str) -> None:
    kernel_nb.load(api_url=dead_url, bank_id="panel")
    assert "Usage: %hindsight panel" in kernel_nb.run("%hindsight panel now").text


def test_load_ext_imports_neither_ipywidgets_nor_markdown_it(dead_url: str, tmp_path) -> None:
    code = (
        "import sys\n"
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "ip.run_line_magic('load_ext', 'hindsight_magic')\n"
        "ip.run_line_magic('hindsight', 'panel')\n"
        "imported = any(name in sys.modules for name in ('ipywidgets', 'markdown_it'))\n"
        "print(f'\\nimported={imported}')\n"
    )
    env = dict(os.environ, HINDSIGHT_API_URL=dead_url, HINDSIGHT_JOURNAL_PATH="off")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    # IPython 7 writes a terminal-title escape before the line: read the marker only
    assert done.stdout.rsplit("imported=", 1)[-1].strip() == "False", done.stdout + done.stderr


def test_model_markdown_renders_without_html_links_or_images() -> None:
    out = markdown_to_html(
        "## Title <b>x</b>\n\n1. *one*\n2. [ok](https://example.org/a?b=1&c=2)\n\n"
        "[bad](javascript:alert(1)) <img src=x onerror=alert(1)> [rel](notes.html) "
        "[tab](JAVA&#09;SCRIPT:alert(1)) ![pixel](https://tracker.example/p.png)\n"
        "```\n<i>raw</i>\n```\n> quoted"
    )
    assert "<h2>Title &lt;b&gt;x&lt;/b&gt;</h2>" in out
    assert "<ol>\n<li><em>one</em></li>" in out
    assert "<a " not in out  # no link comes from a memory: not even an http(s) one
    assert "ok (https:\u200b//example.org/a?b=1&amp;c=2)" in out  # text, its URL broken
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "<img" not in out  # no raw HTML and no images (nothing is fetched)
    assert "<pre><code>&lt;i&gt;raw&lt;/i&gt;\n</code></pre>" in out
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in out


# -- tabs, the health line, the pictures --------------------------------------------------------


PNG = b"\x89PNG\r\n\x1a\n"


def tab(panel: Any, title: str) -> Any:
    """Show the tab ``title``, as a click on it in the front end does."""
    panel.w_tabs.selected_index = panel.tab_titles.index(title)
    return panel.w_tabs.children[panel.w_tabs.selected_index]


def seen(widget: Any) -> str:
    """An HTML widget's text as a reader sees it."""
    return html.unescape(re.sub(r"<[^>]*>", "", widget.value))


def health(panel: Any) -> str:
    """The health line as a reader sees it."""
    return seen(panel.w_health)


def test_the_panel_is_tabs_that_open_on_the_search_box(
    kernel_nb: Any, fake: PicturedHindsight, dead_url: str
) -> None:
    load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    assert panel.tab_titles == ("Memory", "Timeline", "Map", "Models", "Status")
    assert panel.w_tabs.selected_index == 0
    memory = panel.w_tabs.children[0]
    assert "hm-tab-memory" in dom_classes(memory)
    first_input = next(w for w in walk(memory) if type(w).__name__ == "Text")
    assert first_input is panel.browser.w_search_box
    assert "hm-tabs" in dom_classes(panel.w_tabs)
    for content in panel.w_tabs.children:  # each tab scrolls inside the panel's height
        assert content.layout.max_height == figures_tab_height()
        assert content.layout.overflow == "auto"
    status = panel.w_tabs.children[panel.tab_titles.index("Status")]
    assert {panel.w_flush, panel.w_retry, panel.w_pause, panel.browser.w_document} <= set(
        walk(status)
    )
    models = panel.w_tabs.children[panel.tab_titles.index("Models")]
    assert {panel.w_refresh, panel.w_models} <= set(walk(models))
    assert panel.children[0] is panel.w_health  # the health line over the tabs
    time.sleep(4 * PUSH_INTERVAL_S)
    assert fake.list_times == fake.map_times == []  # no picture shown: no reading of the bank


def walk(widget: Any) -> Iterator[Any]:
    """``widget`` and every widget inside it."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def figures_tab_height() -> str:
    from hindsight_magic._ui.panel.widgets import TAB_HEIGHT

    assert int(TAB_HEIGHT.removesuffix("px")) <= 520  # the panel stays about 600 px tall
    return TAB_HEIGHT


def test_the_health_line_says_server_queue_and_auto_retain(
    kernel_nb: Any, fake: PicturedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    line = wait_for(lambda: health(panel), what="health ok", until=lambda t: "ok (Hind" in t)
    assert line.startswith("Hindsight memory ● ok (Hindsight 1.1.0) · bank panel")
    assert "0 pending · 0 failed · auto-retain on" in line
    fake.refuse = True
    kernel_nb.run("%retain one\n%retain two")
    wait_for(lambda: health(panel), what="2 pending", until=lambda t: "2 pending" in t)
    session.flush(5)
    wait_for(lambda: health(panel), what="2 failed", until=lambda t: "0 pending · 2 failed" in t)
    kernel_nb.run("%hindsight autoretain off")
    wait_for(lambda: health(panel), what="auto off", until=lambda t: "auto-retain off" in t)


def test_the_health_line_escapes_and_stays_one_line() -> None:
    health = "unreachable: <b>no</b> server\nat 'x' — start one"
    line = health_html(health, False, "<script>alert(1)</script>", 3, 1, "paused")
    assert "<script>" not in line
    assert "<b>" not in line
    assert "&lt;script&gt;" in line
    assert "\n" not in line
    assert "white-space:nowrap" in line  # a long reason is cut, never wraps the tabs down
    text = html.unescape(re.sub(r"<[^>]*>", "", line))
    assert "bank <script>alert(1)</script> · 3 pending · 1 failed · auto-retain paused" in text


def test_timeline_tab_redraws_when_memories_arrive_at_most_every_few_seconds(
    kernel_nb: Any, fake: PicturedHindsight, dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figures, "TIMELINE_EVERY_S", 1.0)  # the test's few seconds
    session = load_fake(kernel_nb, fake, dead_url)
    kernel_nb.run("%retain The churn table is deduplicated on order_id.")
    session.flush(5)
    panel = show(kernel_nb)
    time.sleep(4 * PUSH_INTERVAL_S)
    assert fake.list_times == []  # not before its tab is shown
    started = time.perf_counter()
    tab(panel, "Timeline")
    assert time.perf_counter() - started < 0.2  # drawn on the worker
    image = panel.timeline.w_image
    wait_for(lambda: bytes(image.value).startswith(PNG), 30, "the first drawing")
    assert image.layout.display == ""
    assert "1 memory in bank panel" in seen(panel.timeline.w_caption)
    assert len(fake.list_times) == 1
    time.sleep(1.5)  # nothing arrived: no new reading
    assert len(fake.list_times) == 1
    burst = time.monotonic()
    for index in range(12):  # memories arrive for 3 s
        session.retain(f"Fact {index} of the burst.")
        Driver(session).request_flush()
        time.sleep(0.25)
    wait_for(
        lambda: seen(panel.timeline.w_caption),
        15,
        "all 13 counted",
        until=lambda text: "13 memories in bank panel" in text,
    )
    readings = [t for t in fake.list_times if t >= burst]
    assert 2 <= len(readings) < 12, readings  # it followed, but not once per memory
    gaps = [b - a for a, b in itertools.pairwise(fake.list_times)]
    assert min(gaps) >= 1.0 - 0.2, gaps  # unthrottled, they would be a push (0.25 s) apart
    panel.close()
    closed_at = len(fake.list_times)
    session.retain("after the panel closed")
    session.flush(5)
    time.sleep(1.5)
    assert len(fake.list_times) == closed_at  # no panel open: no reading


def test_map_tab_draws_when_first_shown_and_on_refresh(
    kernel_nb: Any, fake: PicturedHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    kernel_nb.run("%retain The Berkeley Lab churn table is deduplicated on order_id.")
    session.flush(5)
    panel = show(kernel_nb)
    tab(panel, "Map")
    image = panel.memory_map.w_image
    wait_for(lambda: bytes(image.value).startswith(PNG), 30, "the map")
    assert "2 entities" in seen(panel.memory_map.w_caption)
    assert len(fake.map_times) == 1
    tab(panel, "Memory")
    tab(panel, "Map")  # shown again: the picture stays, no new reading
    time.sleep(4 * PUSH_INTERVAL_S)
    assert len(fake.map_times) == 1
    started = time.perf_counter()
    panel.w_map_refresh.click()
    assert time.perf_counter() - started < 0.2
    wait_for(lambda: len(fake.map_times) == 2, what="read again")
    fake.fail["GET /memories/list"] = (500, {"detail": "boom"})
    panel.w_map_refresh.click()
    caption = wait_for(
        lambda: seen(panel.memory_map.w_caption),
        what="one line",
        until=lambda text: text.startswith("Could not draw the map"),
    )
    assert "\n" not in caption
    assert bytes(image.value).startswith(PNG)  # the last picture stays


def test_figure_tabs_show_the_table_where_matplotlib_is_missing(
    kernel_nb: Any, fake: PicturedHindsight, dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pictures, "missing", lambda *modules: modules[0])
    session = load_fake(kernel_nb, fake, dead_url)
    kernel_nb.run("%retain A fact for the table.")
    session.flush(5)
    panel = show(kernel_nb)
    tab(panel, "Timeline")
    text = wait_for(
        lambda: seen(panel.timeline.w_text),
        what="the table",
        until=lambda text: "1 memory in bank panel" in text,
    )
    assert "<pre class='hm-figure-text'" in panel.timeline.w_text.value
    assert pictures.HINT in text
    assert panel.timeline.w_image.layout.display == "none"
    assert bytes(panel.timeline.w_image.value) == b""


def test_text_snapshot_has_timeline_and_map_tables(
    notebook: Any, fake: PicturedHindsight, dead_url: str
) -> None:
    session = load_fake(notebook, fake, dead_url)
    notebook.run("%retain The Berkeley Lab churn table is deduplicated on order_id.")
    session.flush(5)
    text = repr(notebook.run("%hindsight panel").result)
    timeline = text.split("\nTimeline:\n", 1)[1]
    counted = r"    1 memory in bank panel \(tagged project:\S+, or untagged\), per day"
    assert re.match(counted, timeline), timeline
    assert re.search(r"    period .* total", timeline)
    mapped = text.split("\nMap (top 10):\n", 1)[1]
    assert re.match(r"    2 entities", mapped), mapped
    assert re.search(r"    Berkeley Lab\s+1\s+order_id \(1\)", mapped), mapped
    fake.fail["GET /memories/list"] = (500, {"detail": "list broke"})
    text = repr(notebook.run("%hindsight panel").result)
    (line,) = re.findall(r"Timeline:\n(.*)\n(?=Map)", text)
    assert line.startswith("    not available: "), line
    assert "Traceback" not in text


@pytest.mark.integration
def test_timeline_tab_draws_a_png_after_a_retain_on_the_real_server(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id, mental_model_auto_seed="false")
    panel = show(kernel_nb)
    tab(panel, "Timeline")
    wait_for(lambda: bytes(panel.timeline.w_image.value).startswith(PNG), 60, "the first drawing")
    kernel_nb.run("%retain The heron census counted 41 nests on the east bank.")
    panel.w_flush.click()
    caption = wait_for(  # redrawn when the memory is accepted, then indexed
        lambda: seen(panel.timeline.w_caption),
        180,
        "the memory counted",
        until=lambda text: re.search(rf"[1-9]\d* memor(y|ies) in bank {bank_id}", text),
    )
    png = bytes(panel.timeline.w_image.value)
    assert png.startswith(PNG), caption
    image = pytest.importorskip("PIL.Image")  # Pillow comes with matplotlib
    with image.open(io.BytesIO(png)) as picture:
        picture.verify()  # a whole, valid PNG
        assert picture.size[0] > 300


# -- against the real server -------------------------------------------------------------------


@pytest.mark.integration
def test_panel_against_the_real_server(kernel_nb: Any, hindsight_server: Any, bank_id: str):
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id)
    panel = show(kernel_nb)
    # a shared server can be slow to create the bank and seed models (on the same worker)
    wait_for(lambda: "ok (Hindsight" in panel.w_header.value, 90, "health ok")
    kernel_nb.run("%retain The panel test retains this.\n%retain And this.")
    panel.w_flush.click()
    wait_for(lambda: cell(panel.w_queue.value, "queue-accepted") == "2", 90, "accepted 2")
    assert cell(panel.w_queue.value, "queue-pending") == "0"


@pytest.mark.integration
def test_the_panels_saved_text_says_what_was_known_when_it_was_shown(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    # what nbconvert and papermill save of a panel is its text/plain, taken when it is shown
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id, mental_model_auto_seed="false")
    status = str(kernel_nb.run("%hindsight status").result)
    (state,) = re.findall(r"state\s+(ok \(Hindsight [^)]*\))", status)
    saved = show(kernel_nb)._repr_mimebundle_()["text/plain"]
    assert re.search(rf"state\s+{re.escape(state)}", saved), saved
    assert "checking" not in saved
    assert "unknown" not in saved
    assert re.search(rf"llm\s+{re.escape(LLM_ELSEWHERE)}", saved)  # not a local server's URL
    # the first panel of a kernel that read no status checks once, before it is shown
    kernel_nb.run("%unload_ext hindsight_magic")
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id, mental_model_auto_seed="false")
    saved = show(kernel_nb)._repr_mimebundle_()["text/plain"]
    assert re.search(r"state\s+ok \(Hindsight", saved), saved
    assert "checking" not in saved


# -- the memory browser: search, Recent, session document, model refresh ----------------------


def recent_states(panel: Any) -> list[tuple[str, str, str]]:
    """(state, text, error) of each row of the panel's Recent list, newest first."""
    rows = []
    for row in panel.browser.recent_rows.shown:
        value = row.cell.value
        state = re.search(r"class='hm-recent-state'[^>]*>(.*?)</td>", value)
        text = re.search(r"class='hm-recent-text'[^>]*>(.*?)</div>", value)
        error = re.search(r"class='hm-recent-error'[^>]*>(.*?)</div>", value)
        assert state, value
        assert text, value
        found = (state.group(1), text.group(1), error.group(1) if error else "")
        rows.append(tuple(html.unescape(part) for part in found))
    return rows


def state_of(panel: Any, index: int = 0) -> str:
    """The delivery state of the Recent list's row ``index`` ('' while there is none)."""
    states = recent_states(panel)
    return states[index][0] if len(states) > index else ""


def results(panel: Any) -> list[tuple[str, str]]:
    """(memory text, provenance) of each row of the panel's results table."""
    value = panel.browser.result_rows.html()
    return [
        (html.unescape(text), html.unescape(origin))
        for text, origin in re.findall(
            r"class='hm-result-text'[^>]*>(.*?)</td>.*?class='hm-result-provenance'[^>]*>(.*?)</td>",
            value,
            re.DOTALL,  # a notebook cell's text runs over several lines
        )
    ]


def search(panel: Any, query: str) -> float:
    """Type ``query`` in the search box and click Search; how long the click took."""
    panel.browser.w_search_box.value = query
    started = time.perf_counter()
    panel.browser.w_search.click()
    return time.perf_counter() - started


DONE = re.compile(r"\d+ memor(?:y|ies) shown|No relevant memories found|Search failed")


def search_until_found(
    panel: Any, query: str, timeout_s: float, expect: str | None = None
) -> dict[str, str]:
    """Search until the results are final (a loaded server may index for longer than a
    search waits: the panel then says so, and the user searches again) and, with ``expect``,
    until that memory is among them (a server under load may answer a search with nothing
    for a while after it said the memory was indexed); memory → provenance."""
    deadline = time.monotonic() + timeout_s
    for attempt in itertools.count():
        asked = f"{query} {'?' * attempt}".strip()  # each answer names its own question
        assert search(panel, asked) < 0.2  # the worker does the work
        state = wait_for(
            lambda: html.unescape(panel.browser.w_search_state.value),
            timeout_s,
            "search done",
            until=lambda text, asked=asked: f"“{asked}”: " in text and DONE.search(text),
        )
        found = dict(results(panel))
        settled = STILL_INDEXING not in state and (expect is None or expect in found)
        if settled or time.monotonic() > deadline:
            return found
    raise AssertionError("unreachable")


@pytest.mark.integration
def test_search_finds_a_retained_fact_with_its_provenance(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.monkeypatch.setenv("JPY_SESSION_NAME", "studies/fieldwork.ipynb")
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id, mental_model_auto_seed="false")
    token = uuid.uuid4().hex[:8]
    fact = f"The zebra survey {token} counted 4312 stripes on the north transect."
    kernel_nb.run(f"%retain {fact}")
    session = kernel_nb.magics.session
    assert session.flush(30).settled
    panel = show(kernel_nb)
    assert recent_states(panel)[0][:2] == ("sent", fact)  # accepted, not yet seen indexed
    found = search_until_found(panel, f"zebra survey {token} stripes", 120, expect=fact)
    assert fact in found, found
    assert "fieldwork.ipynb" in found[fact]  # its provenance: the notebook it was retained in
    assert "1 memory shown; 1 matches the query" in panel.browser.w_search_state.value
    assert "<td class='hm-result-type'" in panel.browser.result_rows.html()
    assert recent_states(panel)[0] == ("indexed", fact, "")  # the search waited for indexing


@pytest.mark.integration
def test_tags_narrow_the_panels_search_percent_recall_and_hm_recall_alike(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id, mental_model_auto_seed="false")
    token = uuid.uuid4().hex[:8]
    cold = f"The freezer {token} holds the ice cores at minus eighty degrees."
    warm = f"The freezer {token} door was left open at noon on Friday."
    kernel_nb.run(f"%retain --tags lab,cold {cold}")
    kernel_nb.run(f"%retain --tags lab {warm}")
    assert kernel_nb.magics.session.flush(30).settled
    found = poll(
        lambda: kernel_nb.run(f"%recall --tags cold freezer {token}").result.texts,
        60,
        until=lambda texts: cold in texts,
    )
    assert warm not in found  # it carries lab, not cold
    assert kernel_nb.run(f"%recall --tags lab freezer {token}").result.texts.count(warm) == 1
    python = kernel_nb.run(f"__import__('hindsight_magic').recall('{token}', tags=['lab', 'cold'])")
    assert python.result.texts == [cold]
    panel = show(kernel_nb)
    search(panel, f"tags:cold freezer {token}")
    line = wait_for(
        lambda: html.unescape(panel.browser.w_search_state.value),
        60,
        "the tagged search done",
        until=lambda text: f"“freezer {token}”: " in text and DONE.search(text),
    )
    assert "1 memory shown" in line, line
    assert list(dict(results(panel))) == [cold]


@pytest.mark.integration
def test_the_panels_search_reads_memory_as_it_was_before_a_cell_changed(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.monkeypatch.setenv("JPY_SESSION_NAME", "studies/churn.ipynb")
    kernel_nb.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        mental_models="false",
        auto_retain="true",
        scoping="global",
    )
    token = uuid.uuid4().hex[:8]
    cell = "# the {t} cut-off: tenure under {n} months is new\ncutoff_{t} = {n}"
    kernel_nb.run(cell.format(t=token, n=2), cell_id="cutoff")
    kernel_nb.run("%hindsight autoretain now")
    assert kernel_nb.magics.session.flush(30).settled
    time.sleep(1.5)
    before = datetime.now().astimezone().isoformat(timespec="seconds")
    time.sleep(1.5)
    kernel_nb.run(cell.format(t=token, n=3), cell_id="cutoff")
    kernel_nb.run("%hindsight autoretain now")
    assert kernel_nb.magics.session.flush(30).settled
    panel = show(kernel_nb)
    query = f"{token} cut-off tenure"
    new, old = f"cutoff_{token} = 3", f"cutoff_{token} = 2"

    def origin_of(found: dict[str, str], code: str) -> str | None:
        return next((where for text, where in found.items() if code in text), None)

    now = poll(lambda: search_until_found(panel, query, 60), 120, until=lambda f: origin_of(f, new))
    assert "replaces the version of" in str(origin_of(now, new))
    assert origin_of(now, old) is None
    panel.browser.w_as_of_box.value = before
    was = poll(lambda: search_until_found(panel, query, 60), 120, until=lambda f: origin_of(f, old))
    assert origin_of(was, new) is None
    assert "superseded on" in str(origin_of(was, old))
    panel.browser.w_as_of_box.value = "the day before"
    search(panel, query)
    wait_for(
        lambda: html.unescape(panel.browser.w_search_state.value),
        10,
        "the refusal shown in the search's line",
        until=lambda line: "Cannot read 'the day before' as a time for --as-of" in line,
    )


@pytest.mark.integration
def test_the_panel_shows_the_layers_and_labels_each_result_with_its_layer(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    token = uuid.uuid4().hex[:8]
    course_bank, course_fact = f"course-{token}", f"Course rule {token}: weigh the zebras twice."
    with httpx.Client(base_url=f"{hindsight_server.url}/v1/default/banks/{course_bank}") as http:
        http.post("/memories", json={"items": [{"content": course_fact}]}, timeout=60)
    kernel_nb.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        mental_model_auto_seed="false",
        layers=f"course={course_bank}",
    )
    panel = show(kernel_nb)
    header = html.unescape(panel.w_header.value)
    assert "Layers (only 'mine' is written)" in header
    assert f"bank {course_bank}" in header
    found = search_until_found(panel, f"{token} zebras weigh", 120, expect=course_fact)
    assert found[course_fact].startswith("layer: course · "), found
    row = next(
        r for r in panel.browser.result_rows.shown if course_fact in html.unescape(r.cell.value)
    )
    forget, delete = row.buttons
    assert forget.disabled  # a layer is only read here
    assert forget.tooltip == "From the layer 'course': read only here"
    assert delete.layout.visibility == "hidden"


@pytest.mark.integration
def test_session_document_shows_what_auto_retain_sent(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        mental_model_auto_seed="false",
        retain_every_n_cells="2",
    )
    token = uuid.uuid4().hex[:8]
    kernel_nb.run(f"rainfall_{token} = [12, 40, 7]")
    kernel_nb.run('notes = """\n' + "a long field note line\n" * 100 + 'end of notes"""')
    session = kernel_nb.magics.session
    session.flush(30)
    recent = session.status(check_server=False).recent
    cells = [item for item in recent if item.transcript and item.document_id]
    panel = show(kernel_nb)

    def complete() -> bool:  # every part stored: the server stores a batch's in any order
        shown = panel.browser.w_document.value
        return f"rainfall_{token}" in shown and f"in {len(cells)} documents" in shown

    wait_for(complete, 120, f"the {len(cells)} documents")
    document = panel.browser.w_document.value
    # the last request's cells, a document each (the long cell cut in parts), with their ids
    # each a version of its cell (``_capture/identity.py``)
    assert re.search(
        r"hm-cell-[0-9a-f]{10}-[0-9a-f]{10}-[0-9a-f]{12}\.\d+ … \(\d+ documents\)", document
    )
    assert re.search(r"characters in \d+ documents", document), document
    assert "end of notes" not in document, document  # the beginning only…
    toggle = panel.browser.w_doc_toggle
    assert toggle.layout.display == ""
    assert toggle.description == "Show all"
    toggle.click()  # …until "Show all"
    wait_for(lambda: "end of notes" in panel.browser.w_document.value, what="all of it")
    assert toggle.description == "Show less"
    wait_for(lambda: state_of(panel) == "indexed", 120, "transcript indexed")


def test_recent_shows_a_refused_memory_failing_and_why(
    kernel_nb: Any, fake: FakeHindsight, dead_url: str
) -> None:
    session = load_fake(kernel_nb, fake, dead_url)
    kernel_nb.run("%retain fine fact")
    session.flush(5)
    assert not fake.calls("GET", "/operations/")  # no panel open, no read: nobody polls
    fake.refuse = True
    panel = show(kernel_nb)
    kernel_nb.run("%retain refused fact")
    wait_for(lambda: state_of(panel) == "queued", what="queued")
    session.flush(5)
    wait_for(lambda: state_of(panel) == "failed", what="failed")
    _, text, error = recent_states(panel)[0]
    assert text == "refused fact"
    assert error == "retainBatch failed: bad field"
    wait_for(lambda: state_of(panel, 1) == "indexed", what="first one polled")
    fake.refuse = False
    panel.w_retry.click()
    wait_for(lambda: state_of(panel) == "indexed", what="re-sent and indexed")


def test_recent_shows_retrying_while_the_server_is_away(kernel_nb: Any, dead_url: str) -> None:
    kernel_nb.load(api_url=dead_url, bank_id="panel", request_timeout_ms="500")
    panel = show(kernel_nb)
    kernel_nb.run("%retain a fact for later")
    Driver(kernel_nb.magics.session).request_flush()
    wait_for(lambda: state_of(panel) == "retrying", what="retrying")
    assert "connect" in recent_states(panel)[0][2].lower(), recent_states(panel)


def test_search_failure_is_one_line_in_the_panel(kernel_nb: Any, dead_url: str) -> None:
    kernel_nb.load(api_url=dead_url, bank_id="panel", request_timeout_ms="500")
    panel = show(kernel_nb)
    assert search(panel, "anything") < 0.2
    state = wait_for(
        lambda: html.unescape(panel.browser.w_search_state.value),
        what="search failed",
        until=lambda text: "Search failed" in text,
    )
    assert f"no Hindsight server at {dead_url}" in state
    assert "\n" not in state
    assert "Traceback" not in state
    assert panel.browser.result_rows.shown == []
    assert panel.browser.w_results.layout.display == "none"
    assert search(panel, "   ") < 0.2
    wait_for(lambda: "Type what to search for, then Search." in panel.browser.w_search_state.value)


def test_document_section_says_when_nothing_was_auto_retained(
    kernel_nb: Any, fake: FakeHindsight, dead_url: str
) -> None:
    load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    wait_for(lambda: "Nothing auto-retained" in panel.browser.w_document.value, what="no doc")
    assert not fake.calls("GET", "/documents/")  # no cell retained: nothing to ask about


def test_each_model_has_a_preview_and_its_own_refresh(
    kernel_nb: Any, fake: FakeHindsight, dead_url: str
) -> None:
    fake.add("panel", "notes", "Field notes", "# Notes\n" + "A long line of notes.\n" * 80)
    fake.add("panel", "sites", "Sites", "Only **two** sites.")
    load_fake(kernel_nb, fake, dead_url)
    panel = show(kernel_nb)
    notes, _ = panel.w_models.children
    preview = notes.children[0].value
    assert "<h1>Notes</h1>" in preview
    assert preview.count("A long line") < 40
    assert "…" in preview
    click = notes.children[1]
    started = time.perf_counter()
    click.click()
    assert time.perf_counter() - started < 0.2
    wait_for(lambda: "What Field notes sums up." in panel.w_models.children[0].children[0].value)
    assert "Only <strong>two</strong> sites." in panel.w_models.children[1].children[0].value
    refreshed = [c[1] for c in fake.calls("POST", "/refresh")]
    assert refreshed == ["/v1/default/banks/panel/mental-models/notes/refresh"]
    wait_for(lambda: "Mental model notes refreshed." in panel.w_notice.value, what="notice")


@pytest.mark.integration
def test_text_snapshot_has_the_browser_sections(
    notebook: Any, hindsight_server: Any, bank_id: str
) -> None:
    notebook.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        mental_model_auto_seed="false",
        retain_every_n_cells="2",
    )
    token = uuid.uuid4().hex[:8]
    notebook.run(f"transect_{token} = 'north'")
    notebook.run(f"len(transect_{token})")
    notebook.run("%recall transect")  # flushes and waits (≤ 10 s) until it is indexed

    def both_cells(text: str) -> bool:  # each cell a document, maybe sent one by one
        return bool(re.search(r"state\s+\d+ characters in 2 documents", text))

    text = wait_for(  # a loaded server can take longer: run the command again, as a user would
        lambda: repr(notebook.run("%hindsight panel").result),
        120,
        "the cells indexed",
        every_s=1.0,
        until=lambda text: (
            re.search(r"Recent:\n  \d\d:\d\d:\d\d indexed\s+\S", text) and both_cells(text)
        ),
    )
    document = text.split("Last retained cells:\n", 1)[1]
    assert f"transect_{token} = 'north'" in document
    timeline = text.split("\nTimeline:\n", 1)[1]  # the Timeline tab, as a table
    counted = (
        rf"    [1-9]\d* memor(y|ies) in bank {bank_id} \(tagged project:\S+, or untagged\), per "
    )
    assert re.match(counted, timeline), timeline
    assert "\nMap (top 10):\n    " in text


@pytest.mark.integration
def test_a_models_refresh_button_refreshes_it_on_the_server(
    kernel_nb: Any, hindsight_server: Any, bank_id: str
) -> None:
    kernel_nb.load(api_url=hindsight_server.url, bank_id=bank_id)
    kernel_nb.run("%retain The churn table is deduplicated on order_id.")
    kernel_nb.run("%recall churn")  # indexed: without an LLM, the seeds list what they find
    panel = show(kernel_nb)

    def models() -> int:
        panel.w_refresh.click()  # re-list (the seeds are made in the background)
        return len(panel.w_models.children)

    wait_for(models, 180, "models with content", every_s=1.0)
    model_id = panel.model_ids[0]
    client = HindsightClient(kernel_nb.magics.session.api_url)  # the test's own, to ask the server
    before = client.get_mental_model(bank_id, model_id).last_refreshed_at
    panel.w_models.children[0].children[1].click()
    wait_for(lambda: f"Mental model {model_id} refreshed." in panel.w_notice.value, 120, "done")
    shown = panel.w_models.children[0].children[0].value
    assert "The churn table is deduplicated on order_id." in shown  # the memory, listed
    assert "no LLM on the server summarizes them" in shown
    assert "mock response" not in shown
    after = client.get_mental_model(bank_id, model_id).last_refreshed_at
    assert parse_iso(after) > parse_iso(before), (before, after)  # the server refreshed it
