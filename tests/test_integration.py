"""End to end against real Hindsight servers started by the project's own launcher.

What the extension wrote is checked by reading the server directly (its REST API), not through
the extension. With the mock LLM the server also stores prompt noise as facts, so assertions are
"contains", never exact counts or order.
"""

from __future__ import annotations

import http.server
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import PLANTED_KEY, RunningServer, free_port, wait_for
from kernels import Kernel

from bench.common import settled
from hindsight_magic._localserver import launcher as server

pytestmark = pytest.mark.integration


def server_memories(url: str, bank: str, key: str | None = None) -> list[dict[str, Any]]:
    """Every memory the server holds in ``bank`` (read directly, not through the extension)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    reply = httpx.get(
        f"{url}/v1/default/banks/{bank}/memories/list",
        params={"limit": 500},
        headers=headers,
        timeout=10,
    )
    if reply.status_code == 404:
        return []
    reply.raise_for_status()
    return reply.json()["items"]


def holding(url: str, bank: str, text: str, key: str | None = None) -> list[dict[str, Any]]:
    """The server's memories in ``bank`` whose text contains ``text`` (waits for processing)."""
    return wait_for(
        lambda: [m for m in server_memories(url, bank, key) if text in m["text"]],
        30,
        f"{text!r} in bank {bank}",
        every_s=0.25,
    )


FACTS = [
    ("The churn table double-counts Q3 refunds; dedupe on order_id.", "churn refunds"),
    ("Revenue is reported in euros, converted at month-end rates.", "currency of revenue"),
    ("The A/B test on onboarding emails ran for six weeks.", "onboarding email experiment"),
    ("Outliers above three standard deviations are clipped, not dropped.", "outlier handling"),
    ("Customer ids are hashed with SHA-256 before export.", "customer id hashing"),
    ("The weather dataset has hourly readings from 40 stations.", "weather stations"),
    ("Model training uses five-fold cross-validation grouped by store.", "cross-validation"),
    ("Dates in the legacy CSV files are day-first.", "legacy csv date format"),
    ("The marketing team prefers charts with a white background.", "chart style"),
    ("Inventory snapshots are taken every Sunday at midnight.", "inventory snapshot"),
    ("The fraud model's threshold is 0.82 after the March review.", "fraud threshold"),
    ("Survey responses under 30 seconds are treated as spam.", "survey spam"),
    ("The warehouse moved from Leeds to Manchester in 2024.", "warehouse location"),
    ("Shipping costs are missing for orders before 2019.", "shipping cost gaps"),
    ("The pricing elasticity estimate is minus 1.4 for snacks.", "price elasticity snacks"),
    ("Our GPU budget allows two training runs per week.", "gpu budget"),
    ("Sensor 17 reports temperatures in Fahrenheit by mistake.", "sensor 17 units"),
    ("The board wants the dashboard refreshed before 9am.", "dashboard refresh time"),
    ("Loyalty members get free delivery above 20 pounds.", "loyalty delivery"),
    ("The translation corpus excludes tweets shorter than five words.", "translation corpus"),
]


def test_twenty_retains_are_each_recalled(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    for fact, _ in FACTS:
        assert str(notebook.run(f"%retain {fact}").result) == "1 memory queued."
    first = notebook.run(f"%recall {FACTS[0][1]}")  # sends the queue, waits for indexing
    assert first.error is None, first.text
    for fact, query in FACTS:
        wait_for(
            lambda q=query, f=fact: _recalled(notebook, q, f),
            15,
            f"{fact!r} recalled by {query!r}",
            every_s=0.25,
        )
    stats = notebook.magics.session.queue_stats()
    assert (stats.accepted, stats.failed, stats.pending) == (20, 0, 0)
    assert stats.requests <= 3  # 20 memories went in a handful of batches, not 20 requests


def _recalled(notebook: Any, query: str, fact: str) -> bool:
    cell = notebook.run(f"%recall --budget high {query}")
    assert cell.error is None, cell.text
    return any(fact in text for text in cell.result.texts)


def test_recall_renders_a_table_and_a_context_block(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    notebook.run("%retain Use <b>bold</b> headers & ampersands in the weekly report.")
    cell = notebook.run("%recall --var hits weekly report headers")
    result = cell.result
    assert re.match(
        r"\d+ memor(?:y|ies) shown; \d+ match(?:es)? the query \(as of ", result.headline()
    )
    assert "&lt;b&gt;bold&lt;/b&gt;" in result._repr_html_()
    assert "<b>bold</b>" not in result._repr_html_()
    assert result.as_context().startswith("<memories>")
    assert notebook.ip.user_ns["hits"] is result


def test_a_new_bank_recalls_nothing_without_error(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    cell = notebook.run("%recall anything at all")
    assert cell.error is None
    assert str(cell.result) == "No relevant memories found."


@pytest.mark.parametrize(
    ("mode", "bank_suffix", "tags"),
    [
        ("global", "", []),
        ("per-project", "-churnstudy", []),
        ("per-project-tagged", "", ["project:churnstudy"]),
    ],
)
def test_each_scope_writes_to_its_bank_and_tags(
    notebook: Any,
    hindsight_server: RunningServer,
    bank_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    bank_suffix: str,
    tags: list[str],
) -> None:
    project = tmp_path / "ChurnStudy"
    project.mkdir()
    monkeypatch.chdir(project)
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id, scoping=mode)
    fact = f"In {mode} mode the refunds column is called refund_amt."
    notebook.run(f"%retain {fact}")
    notebook.run("%hindsight flush")
    found = holding(hindsight_server.url, bank_id + bank_suffix, fact)
    assert found, f"{fact!r} not in bank {bank_id + bank_suffix}"
    assert all(m["tags"] == tags for m in found if m["fact_type"] != "observation")
    other = f"{bank_id}-churnstudy" if not bank_suffix else bank_id
    assert not [m for m in server_memories(hindsight_server.url, other) if fact in m["text"]]


def test_tagged_scope_recalls_its_project_and_untagged_memories_only(
    notebook: Any,
    hindsight_server: RunningServer,
    bank_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / "alpha")
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    notebook.run("%retain Alpha project stores invoices in the ledger_alpha table.")
    notebook.run("%hindsight scope global")
    notebook.run("%retain Everyone stores invoices as PDF archives in the vault.")
    monkeypatch.chdir(tmp_path / "beta")
    notebook.run("%hindsight scope per-project-tagged")
    notebook.run("%retain Beta project stores invoices in the ledger_beta table.")
    texts = notebook.run("%recall --budget high where are invoices stored").result.texts
    joined = "\n".join(texts)
    assert "ledger_beta" in joined
    assert "PDF archives" in joined  # untagged memories show up with tags_match "any"
    assert "ledger_alpha" not in joined


def test_reflect_without_an_llm_shows_the_memories_instead_of_a_placeholder(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    fact = "We decided to report churn monthly, not weekly."
    notebook.run(f"%retain {fact}")
    cell = notebook.run(
        "%%reflect --var answer --context 'for the report'\nHow do we report churn?"
    )
    assert cell.error is None, cell.text
    answer = cell.result  # the local server runs Hindsight's mock LLM: its text is not shown
    assert str(answer).startswith("No answer was written: the local Hindsight server runs")
    assert answer._repr_markdown_().startswith("_No answer was written")
    assert "- **#1** We decided to report churn monthly" in answer._repr_markdown_()
    assert notebook.ip.user_ns["answer"] is answer
    line = notebook.run("%reflect What is our churn cadence?")
    assert not line.result.answered
    assert fact in line.result.recalled.texts
    assert "mock response" not in repr(line.result)


def test_bank_mission_is_put_once_before_the_first_write(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        bank_mission="Remember data decisions for the churn study.",
    )
    notebook.run("%retain The churn window is 90 days.")
    notebook.run("%hindsight flush")
    banks = httpx.get(f"{hindsight_server.url}/v1/default/banks", timeout=10).json()["banks"]
    mine = [b for b in banks if b["bank_id"] == bank_id]
    assert mine, "the bank was not created"
    assert "Remember data decisions" in str(mine[0])


# -- a server with auth on ------------------------------------------------------------------


def test_wrong_key_gives_the_key_hint_and_keeps_memories(
    notebook: Any, keyed_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=keyed_server.url, bank_id=bank_id, api_key="not-the-key")
    notebook.run("%retain Kept despite the wrong key.")
    cell = notebook.run("%recall anything")
    lines = [line for line in cell.text.splitlines() if line.strip()]
    assert len(lines) == 1, cell.text
    assert "check HINDSIGHT_API_KEY" in lines[0]
    assert "not-the-key" not in cell.text
    assert notebook.magics.session.queue_stats().failed == 1  # refused: kept, not dropped
    status = notebook.run("%hindsight status")
    assert "Memory retention failed for 1 memory" in status.text
    assert "refuses the API key" in repr(status.result)


def test_right_key_round_trip(notebook: Any, keyed_server: RunningServer, bank_id: str) -> None:
    notebook.load(api_url=keyed_server.url, bank_id=bank_id, api_key=PLANTED_KEY)
    notebook.run("%retain The auth server keeps the staging metrics.")
    texts = notebook.run("%recall staging metrics").result.texts
    assert any("staging metrics" in t for t in texts)
    assert holding(keyed_server.url, bank_id, "staging metrics", key=PLANTED_KEY)


# -- something that is not Hindsight --------------------------------------------------------


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def plain_http_server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def test_a_url_that_is_not_hindsight_is_reported_and_nothing_lost(
    notebook: Any, plain_http_server: str
) -> None:
    notebook.load(api_url=plain_http_server)
    notebook.run("%retain Not lost to a web server.")
    cell = notebook.run("%recall anything")
    lines = [line for line in cell.text.splitlines() if line.strip()]
    assert len(lines) == 1, cell.text
    assert f"{plain_http_server} answered but is not a Hindsight server" in lines[0]
    stats = notebook.magics.session.queue_stats()
    assert stats.failed == 1
    assert stats.accepted == 0
    status = repr(notebook.run("%hindsight status").result)
    assert "is not a Hindsight server" in status


# -- outage ---------------------------------------------------------------------------------


def test_dead_server_keeps_items_pending_and_delivers_when_it_is_back(
    notebook: Any, tmp_path: Path, bank_id: str
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    notebook.load(api_url=url, bank_id=bank_id)
    for n in range(5):
        notebook.run(f"%retain Outage fact number {n} about the cold-storage bucket.")
    flushed = notebook.run("%hindsight flush")
    assert "waiting to retry" in str(flushed.result)
    started = time.monotonic()
    assert notebook.run("total = sum(range(1000))").error is None
    assert time.monotonic() - started < 2.0  # the kernel stays responsive
    assert notebook.magics.session.queue_stats().retrying == 5

    data_dir = tmp_path / "late-server"
    server.start(port=port, data_dir=data_dir)  # removed with its data by the finally below
    try:
        notebook.run("%hindsight flush")
        stats = notebook.magics.session.queue_stats()
        assert (stats.accepted, stats.retrying, stats.failed) == (5, 0, 0)
        for n in range(5):
            assert holding(url, bank_id, f"Outage fact number {n}")
        # it answers again: the line no longer says it is not answering
        assert str(notebook.run("%retain The bucket is back.").result) == "1 memory queued."
    finally:
        server.discard(data_dir)


def test_retain_says_once_that_the_server_is_not_answering_until_it_is_back(
    notebook: Any, dead_url: str, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.connect(dead_url, bank_id)
    session = notebook.magics.session
    settled(session)  # the worker's warm-up asked the server who it is, as a next cell finds it
    first = notebook.run("%retain Outage note one: the cold-storage bucket moved.")
    assert str(first.result) == (
        f"1 memory queued. The Hindsight server at {dead_url} is not answering: it waits in "
        "the journal and is sent when the server is back (%hindsight status)."
    )
    assert session.queue_stats().requests == 0  # said before any memory was sent
    notebook.run("%hindsight flush")  # tried and retrying now
    second = notebook.run("%retain Outage note two: the bucket is in eu-west-2.")
    assert str(second.result) == (
        "1 memory queued. The server is still not answering: 2 memories wait in the journal."
    )

    notebook.run(f"%config HindsightMagics.api_url = {hindsight_server.url!r}")
    back = notebook.run("%retain Outage note three: the bucket has versioning on.")
    assert str(back.result) == "1 memory queued."
    assert "3 memories accepted" in str(notebook.run("%hindsight flush").result)
    for n in ("one", "two", "three"):
        assert holding(hindsight_server.url, bank_id, f"Outage note {n}")
    assert str(notebook.run("%retain Outage note four.").result) == "1 memory queued."


# -- a real kernel where the user's notebook called nest_asyncio.apply() --------------------


def test_works_in_a_kernel_patched_by_nest_asyncio(
    hindsight_server: RunningServer, bank_id: str, tmp_path: Path
) -> None:
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.db"),
    }
    kernel = Kernel(env, tmp_path)
    try:
        outputs = kernel.run(
            textwrap.dedent(
                """
                import asyncio, nest_asyncio
                nest_asyncio.apply()
                asyncio.get_event_loop().run_until_complete(asyncio.sleep(0))
                %load_ext hindsight_magic
                """
            )
        )
        outputs += kernel.run(
            textwrap.dedent(
                """
                %retain The nested-loop notebook uses parquet files for features.
                hits = %recall parquet feature files
                answer = %reflect What file format do features use?
                print([t for t in hits.texts if "parquet" in t][:1], answer)
                """
            )
        )
        assert "The nested-loop notebook uses parquet files for features." in outputs
        assert "No answer was written" in outputs  # the mock's text is never the answer
        assert "Error" not in outputs
    finally:
        kernel.close()


def test_config_shows_the_discovered_local_server_and_where_each_value_came_from(
    notebook: Any,
    hindsight_server: RunningServer,
    bank_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hindsight_magic._machine import ServerInfo, server_home

    # a local server recorded as the launcher records it (its process: anything "hindsight")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "hindsight"])
    try:
        home = server_home(tmp_path)
        home.mkdir(parents=True)
        info = ServerInfo(hindsight_server.url, process.pid, 1, 2, str(tmp_path), "", "mock", "")
        (home / "state.json").write_text(info.to_json())
        monkeypatch.setenv("HINDSIGHT_MAGIC_DATA_DIR", str(tmp_path))
        notebook.load(bank_id=bank_id)  # no api_url: the running local server is used
        notebook.run("%config HindsightMagics.recall_budget = 'high'")
        listing = repr(notebook.run("%hindsight config").result)
        rows = dict(line.split(maxsplit=1) for line in listing.splitlines()[1:-1])
        assert rows["api_url"] == f"{hindsight_server.url}   [local server]"
        assert rows["bank_id"] == f"{bank_id}   [env HINDSIGHT_BANK_ID]"
        assert rows["recall_budget"] == "high   [%config]"
        assert rows["api_key"] == "(not set)   [default]"
        assert rows["retain_mode"] == "full-session   [default]"
        status = repr(notebook.run("%hindsight status").result)
        assert f"url      {hindsight_server.url}" in status
        assert "state    ok (Hindsight " in status
    finally:
        process.kill()
        process.wait()


# -- a mistyped bank ---------------------------------------------------------------------------


def test_a_mistyped_bank_is_told_new_and_only_a_retain_creates_it(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    url = hindsight_server.url
    existing, typo = f"{bank_id}-churn-team", f"{bank_id}-churn-tem"
    httpx.put(f"{url}/v1/default/banks/{existing}", json={}, timeout=30).raise_for_status()

    def on_server(bank: str) -> bool:
        return httpx.get(f"{url}/v1/default/banks/{bank}/stats", timeout=30).status_code != 404

    notebook.load(api_url=url, bank_id=existing, scoping="global", auto_retain="false")
    said = str(notebook.run(f"%hindsight bank {typo}").result)
    assert said.startswith(
        f"Scope: bank {typo} (global). Bank {typo} is new: the server has no bank of that name,"
        " so it is empty until the first retain creates it. Existing banks with a close name: "
        f"{existing}"
    ), said
    assert "No relevant memories found" in notebook.run("%recall churn cut-off").text
    # what a scope change starts on the worker (the mental models' load) is over, and then
    notebook.magics.session.reload_models()
    assert not on_server(typo)  # looking at a bank does not make one
    assert "is new" not in str(notebook.run(f"%hindsight bank {existing}").result)

    notebook.run(f"%hindsight bank {typo}")
    notebook.run("%retain The churn cut-off is 6 months.")
    assert "1 memory accepted" in str(notebook.run("%hindsight flush").result)
    assert on_server(typo)  # the first retain created it, and its mental models are seeded

    def seeds() -> list[Any]:
        reply = httpx.get(f"{url}/v1/default/banks/{typo}/mental-models", timeout=30)
        return list(reply.json().get("items", []))

    assert wait_for(seeds, 60, "the seeded mental models", until=bool)
