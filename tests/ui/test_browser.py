"""The live panel in a real browser: JupyterLab + Debian's headless Chromium + Playwright.

JupyterLab runs on 127.0.0.1 with a token and a temporary root holding a generated notebook; its
kernels talk to the real Hindsight server of the ``hindsight_server`` fixture, in a bank that
already holds memories from other notebooks over the past days (so the Timeline has a history).
The test runs the notebook (load the extension, show the panel, retain memories) and checks the
panel's tabs (Memory open first, the health line over them, the panel at most ~650 px tall);
on the Status tab it clicks "Flush now" and waits until the panel shows pending 0 and the
memories accepted; on the Memory tab it types a query in the search box, clicks Search and
waits for the memory in the results table, with the notebook as its provenance, and for the
Recent list to show it indexed; on the Models tab it refreshes a model; on the Timeline tab it
waits for the picture (an ``<img>``) counting the new memories. Screenshots go to
``artifacts/`` (gitignored); ``UPDATE_DOCS_SCREENSHOT=1`` also refreshes the README's pictures
``docs/panel-memory.png`` and ``docs/panel-timeline.png`` (opt-in, so a test run leaves the
work tree clean).

Needs ``chromium`` on PATH (``apt-get install chromium``; ``.ci/run`` installs it) and the Python
``playwright`` and ``jupyterlab`` packages (the ``test`` extra). Browser downloads
(``playwright install``) do not work here, so Playwright drives Debian's binary.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
RETAINED = 5
PANEL_MAX_PX = 650  # "at most about 600 px tall", with room for the browser's rounding
TABS = ["Memory", "Timeline", "Map", "Models", "Status"]
HISTORY = [  # (days ago, notebook, memory): what other notebooks left in the bank before
    (9, "cleaning.ipynb", "Raw churn export has 14 columns; customer_id is a string."),
    (9, "cleaning.ipynb", "Null signup dates come from the 2019 CRM migration."),
    (8, "cleaning.ipynb", "Refunds are recorded twice in Q3: once as orders, once as refunds."),
    (6, "features.ipynb", "Tenure in months predicts churn better than tenure in days."),
    (6, "features.ipynb", "Support tickets per month is skewed; use log1p."),
    (5, "features.ipynb", "The promo flag leaks the label; drop it before training."),
    (5, "features.ipynb", "Region is missing for 3% of customers; impute as 'unknown'."),
    (3, "report.ipynb", "Monthly churn is 4.1% after removing the duplicated refunds."),
    (2, "report.ipynb", "The board wants churn by plan and region, not by country."),
    (1, "cleaning.ipynb", "order_id is unique once test accounts are removed."),
]
SEARCH_DONE = re.compile(r"\d+ memor(?:y|ies) shown|No relevant memories found|Search failed")
QUIET_LAB = {  # no news or update toasts over the panel
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
}


def _require(what: str, found: bool) -> None:
    """Missing tools fail in CI (the browser test must run there) and skip elsewhere."""
    if not found:
        message = f"browser test needs {what}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@dataclass
class Lab:
    """A running JupyterLab."""

    url: str
    token: str
    root: Path


def _notebook(path: Path) -> None:
    import nbformat

    retains = "\n".join(
        f"%retain Browser test fact {n}: the churn table is deduplicated on order_id."
        for n in range(1, RETAINED + 1)
    )
    book = nbformat.v4.new_notebook()
    book.cells = [
        nbformat.v4.new_code_cell("%load_ext hindsight_magic"),
        nbformat.v4.new_code_cell("%hindsight panel"),
        nbformat.v4.new_code_cell(retains),
        nbformat.v4.new_code_cell("churn_rows = 1200  # after dropping duplicate order_id rows"),
        nbformat.v4.new_code_cell("churn_rows / 12"),
    ]
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(book, str(path))


CUTOFF = "# tenure cut-off: customers under {n} months are new\nTENURE_CUTOFF_MONTHS = {n}"
RERUN_CELLS = [
    "%load_ext hindsight_magic",
    "import math\nsegments = ['new', 'settled', 'loyal']",
    CUTOFF.format(n=2),
    "churn_days = 90  # churn: no purchase in the last 90 days",
    "%hindsight autoretain now\n%hindsight flush --timeout 60",
    "%recall what tenure cut-off do we use for new customers?",
]


def _reruns_notebook(path: Path) -> None:
    """``reruns.ipynb``: a few cells of an analysis, one of them a decision, then a recall."""
    import nbformat

    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in RERUN_CELLS]
    book.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(book, str(path))


def _history(url: str, bank_id: str) -> None:
    """The bank's past: memories other notebooks retained over the last days (with their
    timestamps and provenance), so the Timeline tab has bars per day and per notebook."""
    from hindsight_magic._api.client import HindsightClient, Timeouts

    client = HindsightClient(url, None, Timeouts(30, 300, 30, 120))
    client.create_bank(bank_id)
    now = datetime.now().astimezone()
    items = [
        {
            "content": text,
            "timestamp": (now - timedelta(days=days)).isoformat(),
            "metadata": {"notebook": f"churn-analysis/{notebook}"},
            "tags": ["project:churn-analysis"],
            "document_id": f"history-{index}",
        }
        for index, (days, notebook, text) in enumerate(HISTORY)
    ]
    client.retain_batch(bank_id, items, async_=False)


@pytest.fixture
def lab(hindsight_server: Any, bank_id: str, tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1 whose kernels use the test server and a bank with a history."""
    _require("jupyterlab (pip install jupyterlab)", find_spec("jupyterlab") is not None)
    _history(hindsight_server.url, bank_id)
    root, home = tmp_path / "churn-analysis", tmp_path / "home"  # the project label
    root.mkdir()
    _notebook(root / "panel.ipynb")
    _reruns_notebook(root / "reruns.ipynb")
    settings = home / "lab-settings"
    for name, values in QUIET_LAB.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        HINDSIGHT_API_URL=hindsight_server.url,
        HINDSIGHT_BANK_ID=bank_id,
        HINDSIGHT_JOURNAL_PATH=str(tmp_path / "journal.sqlite3"),
        HINDSIGHT_RETAIN_EVERY_N_CELLS="2",  # the two code cells: the session document
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"),
    )
    if hindsight_server.data_dir is not None:  # the panel can then tell the LLM mode
        env["HINDSIGHT_MAGIC_DATA_DIR"] = str(hindsight_server.data_dir)
    port, token = free_port(), secrets.token_hex(16)
    log = (tmp_path / "jupyterlab.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={home / 'workspaces'}",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                reply = httpx.get(f"{url}/api/status", params={"token": token}, timeout=2)
                if reply.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (tmp_path / "jupyterlab.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"JupyterLab did not start:\n{tail}")
            time.sleep(0.3)
        yield Lab(url, token, root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(tmp_path / "jupyterlab.log", ARTIFACTS / "browser-jupyterlab.log")


def _number(text: str) -> int:
    return int(text.strip()) if text.strip().isdigit() else -1


def _counted(caption: str) -> int:
    """How many memories the Timeline's caption counts (-1 before it is drawn)."""
    found = re.match(r"(\d+) memor(?:y|ies) in bank", caption.strip())
    return int(found.group(1)) if found else -1


def _open(panel: Any, title: str) -> None:
    """Click the tab ``title`` and wait until it is the one shown."""
    tab = panel.locator(".hm-tabs").get_by_role("tab", name=title, exact=True)
    tab.click()
    from playwright.sync_api import expect

    expect(tab).to_have_attribute("aria-selected", "true")


def _fits(panel: Any) -> None:
    """The panel is at most about 600 px tall, whatever its tab shows."""
    box = panel.bounding_box()
    assert box is not None
    assert box["height"] <= PANEL_MAX_PX, box


def _shoot(panel: Any, name: str, docs: bool = True) -> None:
    """A screenshot of the panel into ``artifacts/`` (and ``docs/`` when asked)."""
    _fits(panel)
    panel.screenshot(path=str(ARTIFACTS / f"browser-{name}"))
    if docs and os.environ.get("UPDATE_DOCS_SCREENSHOT"):  # (HINDSIGHT_* is wiped by conftest)
        (ROOT / "docs").mkdir(exist_ok=True)
        panel.screenshot(path=str(ROOT / "docs" / name))


@contextlib.contextmanager
def _opened(lab: Lab, notebook: str) -> Iterator[tuple[Any, Any]]:
    """``notebook`` open in JupyterLab in Debian's headless chromium, its kernel idle: (the
    page, the status bar's "Idle" locator). A screenshot of the page goes to ``artifacts/``."""
    chromium = shutil.which("chromium")
    _require("Debian's chromium (apt-get install chromium)", chromium is not None)
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        _require("the playwright package (pip install playwright)", False)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{lab.url}/lab/tree/{notebook}?token={lab.token}")
            idle = page.locator(".jp-StatusBar-Widget").get_by_text(re.compile(r"\| Idle$"))
            expect(idle).to_be_visible(timeout=120_000)  # the kernel started and connected
            choose = page.get_by_role("button", name="Select", exact=True)
            if choose.is_visible():  # a kernel-choice dialog, if this JupyterLab asks
                choose.click()
            yield page, idle
        finally:
            page.screenshot(
                path=str(ARTIFACTS / f"browser-{Path(notebook).stem}-page.png"), full_page=True
            )
            browser.close()


def test_panel_flushes_and_searches_in_jupyterlab(lab: Lab) -> None:
    started = time.monotonic()
    with _opened(lab, "panel.ipynb") as (page, idle):
        from playwright.sync_api import expect

        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

        panel = page.locator(".hm-panel")
        expect(panel).to_be_visible(timeout=120_000)
        tabs = panel.locator(".hm-tabs").get_by_role("tab")
        expect(tabs).to_have_text(TABS)
        expect(tabs.first).to_have_attribute("aria-selected", "true")  # opens on Memory
        expect(panel.locator(".hm-tab-memory .hm-search-box input")).to_be_visible()
        expect(panel.locator(".hm-health")).to_contain_text("ok", timeout=90_000)
        expect(panel.locator(".hm-health-auto")).to_have_text("auto-retain on")
        _fits(panel)

        _open(panel, "Status")
        pending = panel.locator(".hm-queue-pending")
        accepted = panel.locator(".hm-queue-accepted")
        # the retains reached the panel (still pending, or already sent by the 5 s window)
        deadline, seen = time.monotonic() + 60, []
        while time.monotonic() < deadline:
            seen.append((_number(pending.inner_text()), _number(accepted.inner_text())))
            if seen[-1][0] > 0 or seen[-1][1] >= RETAINED:
                break
            time.sleep(0.1)
        assert seen[-1][0] > 0 or seen[-1][1] >= RETAINED, seen
        expect(idle).to_be_visible(timeout=60_000)

        panel.locator("button.hm-flush").click()
        expect(panel.locator(".hm-notice")).to_contain_text("Flush requested.")
        expect(pending).to_have_text("0", timeout=60_000)
        expect(panel.locator(".hm-health-pending")).to_have_text("0 pending")
        deadline = time.monotonic() + 60
        while _number(accepted.inner_text()) < RETAINED and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _number(accepted.inner_text()) >= RETAINED, accepted.inner_text()
        assert panel.locator(".hm-queue-last-flush").inner_text() != "never"
        _fits(panel)

        _open(panel, "Memory")
        done = panel.locator(".hm-search-message:not(.hm-search-busy)")
        deadline = time.monotonic() + 150
        for attempt in itertools.count():  # a loaded server can index for longer than a
            query = "Is the churn table deduplicated" + "?" * (attempt + 1)  # search waits
            panel.locator(".hm-search-box input").fill(query)
            panel.locator("button.hm-search").click()
            expect(done).to_contain_text(f"“{query}”: ", timeout=90_000)  # its answer
            expect(done).to_contain_text(SEARCH_DONE)
            if "still being indexed" not in done.inner_text():
                break
            assert time.monotonic() < deadline, done.inner_text()
        result = panel.locator(".hm-results .hm-result").filter(has_text="Browser test fact")
        expect(result.first.locator(".hm-result-text")).to_contain_text("order_id", timeout=90_000)
        expect(result.first.locator(".hm-result-provenance")).to_contain_text("panel.ipynb")
        expect(panel.locator(".hm-search-message")).to_contain_text("shown; ")
        recent = panel.locator(".hm-recent .hm-recent-item")
        expect(recent.first.locator(".hm-recent-state")).to_have_text("indexed")
        expect(recent.filter(has_text="Browser test fact 5")).to_have_count(1)
        _fits(panel)

        _open(panel, "Status")
        document = panel.locator(".hm-document-text")
        expect(document).to_contain_text("churn_rows = 1200", timeout=60_000)

        # without an LLM the seeds list the memories they find: re-list, open one
        _open(panel, "Models")
        models = panel.locator(".hm-models .hm-model")
        deadline = time.monotonic() + 90
        while models.count() == 0 and time.monotonic() < deadline:
            panel.locator("button.hm-refresh").click()
            time.sleep(2)
        panel.locator(".hm-models").get_by_text("Project Conventions").first.click()
        model = models.filter(has_text="no LLM on the server summarizes them").first
        expect(model.locator(".hm-model-content")).to_be_visible()
        model.locator("button.hm-model-refresh").click()
        expect(panel.locator(".hm-notice")).to_contain_text("refreshed.", timeout=60_000)
        _fits(panel)

        _open(panel, "Memory")
        panel.locator(".hm-tab-memory").evaluate("box => { box.scrollTop = 0; }")
        _shoot(panel, "panel-memory.png")

        _open(panel, "Timeline")  # drawn on the worker; redrawn as the memories arrived
        picture = panel.locator(".hm-tab-timeline img")
        expect(picture).to_be_visible(timeout=60_000)
        expected = len(HISTORY) + RETAINED
        caption = panel.locator(".hm-timeline-caption")
        deadline = time.monotonic() + 90
        while _counted(caption.inner_text()) < expected and time.monotonic() < deadline:
            time.sleep(0.5)  # accepted, then indexed: the tab follows (throttled)
        assert _counted(caption.inner_text()) >= expected, caption.inner_text()
        box = picture.bounding_box()
        assert box is not None
        assert box["width"] > 300, box
        assert box["height"] > 150, box
        _shoot(panel, "panel-timeline.png")

        _open(panel, "Map")
        expect(panel.locator(".hm-map-caption")).to_contain_text(
            re.compile(r"drawn at|No entities|Could not"), timeout=60_000
        )
        expect(panel.locator(".hm-tab-map img")).to_be_visible()
        _shoot(panel, "panel-map.png", docs=False)
    print(f"\nbrowser test: {time.monotonic() - started:.1f} s in the browser")


def test_run_all_twice_then_an_edit_leaves_one_memory_per_cell(lab: Lab) -> None:
    """Run All twice, edit the decision cell, Run All again: ``%recall`` shows each cell once,
    the edited decision as the current one, saying it replaced an earlier version."""
    with _opened(lab, "reruns.ipynb") as (page, idle):
        from playwright.sync_api import expect

        cells = page.locator(".jp-Notebook .jp-Cell")
        expect(cells).to_have_count(len(RERUN_CELLS))
        recall_output = cells.nth(len(RERUN_CELLS) - 1).locator(".jp-OutputArea-output")

        def run_all() -> None:
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            expect(recall_output).to_contain_text(SEARCH_DONE, timeout=120_000)
            expect(idle).to_be_visible(timeout=120_000)

        run_all()
        run_all()
        editor = cells.nth(2).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.type(CUTOFF.format(n=3))
        expect(editor).to_contain_text("TENURE_CUTOFF_MONTHS = 3")
        run_all()

        def cutoff_rows() -> Any:
            return recall_output.locator("tbody tr").filter(has_text="TENURE_CUTOFF_MONTHS")

        deadline = time.monotonic() + 120
        while True:  # the edit is indexed, and the earlier version superseded, in seconds
            rows = cutoff_rows()
            texts = [rows.nth(n).inner_text() for n in range(rows.count())]
            if (len(texts) == 1 and "= 3" in texts[0]) or time.monotonic() > deadline:
                break
            cells.nth(len(RERUN_CELLS) - 1).click()
            page.keyboard.press("Control+Enter")  # ask again
            expect(idle).to_be_visible(timeout=120_000)
            time.sleep(1)
        assert len(texts) == 1, texts  # one memory for the cell: its current version
        assert "TENURE_CUTOFF_MONTHS = 3" in texts[0]
        assert "replaces the version of" in texts[0]
        segments = recall_output.locator("tbody tr").filter(has_text="segments")
        assert segments.count() <= 1  # run three times, still one memory
