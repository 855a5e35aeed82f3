"""The timeline and the entity map against the real server, through the magics a user types.

Memories are planted with explicit timestamps (the retain item's ``timestamp``) on several
days and with notebook provenance, straight through the REST API, as a teammate's kernel would
have sent them. The timeline's numbers are checked against the server's own per-day counts
(``GET …/stats/memories-timeseries``); the pictures are checked to be real PNG and SVG, drawn
without touching the user's matplotlib state. With the mock LLM the server extracts the
capitalised words of a fact as entities ("Hubble", "Berkeley"), which is what the map test
relies on.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from conftest import Notebook
from helpers import Relay, RunningServer, wait_for

from hindsight_magic._api.client import Connection, Timeouts
from hindsight_magic._capture.entities import entities_of
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DAYS_BACK = (1, 4, 9)  # the planted memories' days: three different UTC days
FACT = "Priya Raman calibrated the Hubble photometer at Berkeley Lab on day {day}."


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local time = UTC for the test, so local days are the server's (UTC) day buckets."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def book(notebook: Notebook, hindsight_server: RunningServer, bank_id: str, utc: None) -> Notebook:
    notebook.connect(hindsight_server.url, bank_id)
    return notebook


def rest(server: RunningServer, bank: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.url}/v1/default/banks/{bank}/", timeout=60)


def plant(server: RunningServer, bank: str) -> dict[str, int]:
    """Facts on three days from two notebooks; the number of items per notebook."""
    now = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    items, per_notebook = [], Counter[str]()
    for day in DAYS_BACK:
        for notebook in ("field/survey.ipynb", "lab/calibration.ipynb"):
            items.append(
                {
                    "content": FACT.format(day=day),
                    "timestamp": (now - timedelta(days=day)).isoformat(),
                    "document_id": f"{notebook}-{day}",
                    "metadata": {"notebook": notebook, "source": "%retain"},
                    # what the extension sends with a %retain text: the terms it capitalises
                    "entities": [{"text": name} for name in entities_of([FACT])],
                }
            )
            per_notebook[notebook.rsplit("/", 1)[-1]] += 1
    with rest(server, bank) as http:
        # consolidation on for this bank (the local server without an LLM has it off): the
        # timeline counts the server's observations too
        bank_url = f"{server.url}/v1/default/banks/{bank}"
        http.put(bank_url, json={"enable_observations": True}).raise_for_status()
        http.post("memories", json={"items": items, "async": False}).raise_for_status()
    return dict(per_notebook)


def server_counts(server: RunningServer, bank: str) -> dict[str, Counter[str]]:
    """The server's own count of memories per UTC day and fact type (non-zero ones)."""
    with rest(server, bank) as http:
        reply = http.get(
            "stats/memories-timeseries", params={"period": "30d", "time_field": "mentioned_at"}
        )
    reply.raise_for_status()
    counts: dict[str, Counter[str]] = {}
    for bucket in reply.json()["buckets"]:
        found = Counter({t: bucket.get(t, 0) for t in ("world", "experience", "observation")})
        if sum(found.values()):
            counts[bucket["time"][:10]] = +found
    return counts


def timeline_counts(book: Notebook, line: str = "--by day --since 20d") -> Any:
    cell = book.run(f"_t = %hindsight timeline {line}")
    assert cell.error is None, cell.text
    return book.ip.user_ns["_t"]


def per_day(timeline: Any) -> dict[str, Counter[str]]:
    table = timeline.counts.per_type()
    return {f"{day:%Y-%m-%d}": +counts for day, counts in table.items() if sum(counts.values())}


@pytest.fixture
def elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server as if on another machine: nothing here records that it has no LLM, so its
    observations count as a real LLM's consolidations."""
    from hindsight_magic._memory import llm

    monkeypatch.setattr(llm, "local_server", lambda url: None)


def test_the_timeline_counts_what_the_server_counts(
    book: Notebook, hindsight_server: RunningServer, bank_id: str, elsewhere: None
) -> None:
    per_notebook = plant(hindsight_server, bank_id)

    def settled() -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]] | None:
        ours, theirs = per_day(timeline_counts(book)), server_counts(hindsight_server, bank_id)
        observed = sum(c["observation"] for c in theirs.values())
        return (ours, theirs) if ours == theirs and observed else None

    ours, theirs = wait_for(settled, 120, "the timeline to match the server's counts")
    planted_days = {f"{datetime.now(timezone.utc) - timedelta(days=d):%Y-%m-%d}" for d in DAYS_BACK}
    assert set(ours) == planted_days, ours

    timeline = timeline_counts(book)
    by_notebook = dict(timeline.counts.notebooks())
    facts = sum(c["world"] + c["experience"] for c in theirs.values())
    assert by_notebook.pop("(consolidated)") == sum(c["observation"] for c in theirs.values())
    assert set(by_notebook) == set(per_notebook), by_notebook
    assert sum(by_notebook.values()) == facts
    assert timeline.counts.total == sum(sum(c.values()) for c in theirs.values())
    rows = timeline.rows
    assert sum(row.memories for row in rows) == timeline.counts.total
    frame = timeline.dataframe()
    assert list(frame.columns) == ["period", "fact_type", "notebook", "memories"]
    assert int(frame["memories"].sum()) == timeline.counts.total

    text = repr(timeline)
    assert text.startswith(f"{timeline.counts.total} memories in bank {bank_id}, per day")
    assert "survey.ipynb" in text
    assert "calibration.ipynb" in text

    # a window leaves the older days out, and says so
    recent = timeline_counts(book, "--by day --since 6d")
    assert set(per_day(recent)) == planted_days - {
        f"{datetime.now(timezone.utc) - timedelta(days=9):%Y-%m-%d}"
    }
    assert ", since " in repr(recent).splitlines()[0]


def test_without_an_llm_the_timeline_counts_no_mock_observation(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    """The local server runs the mock LLM, whose observations are copies of each fact (its
    first line, dated): a bank that has them (consolidation on, as the launcher had it before)
    shows the facts alone."""
    per_notebook = plant(hindsight_server, bank_id)

    def consolidated() -> dict[str, Counter[str]] | None:
        theirs = server_counts(hindsight_server, bank_id)
        return theirs if sum(c["observation"] for c in theirs.values()) else None

    theirs = wait_for(consolidated, 120, "the mock's observations")
    timeline = timeline_counts(book)
    facts = {day: +Counter({t: c[t] for t in ("world", "experience")}) for day, c in theirs.items()}
    assert per_day(timeline) == facts
    assert "(consolidated)" not in dict(timeline.counts.notebooks())
    assert dict(timeline.counts.notebooks()) == per_notebook


def test_pictures_are_real_and_leave_the_users_matplotlib_alone(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    import matplotlib
    import matplotlib.pyplot as plt

    plant(hindsight_server, bank_id)
    wait_for(lambda: timeline_counts(book).counts.total, 60, "memories to be listed")
    mine = plt.figure(num=4321)
    backend, figures = matplotlib.get_backend(), plt.get_fignums()
    try:
        for line in ("timeline --by week", "map", "map hubble"):
            cell = book.run(f"_p = %hindsight {line}")
            assert cell.error is None, cell.text
            bundle, _ = book.ip.display_formatter.format(book.ip.user_ns["_p"])
            assert bundle["image/png"].startswith(PNG_MAGIC), line
            root = ET.fromstring(bundle["image/svg+xml"])
            assert root.tag.endswith("svg"), line
            assert bundle["text/plain"], line
        assert matplotlib.get_backend() == backend
        assert plt.get_fignums() == figures
        assert plt.gcf() is mine
    finally:
        plt.close(mine)


def test_the_map_shows_the_memories_entities(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    plant(hindsight_server, bank_id)

    def mapped() -> str:
        cell = book.run("%hindsight map --top 30")
        return repr(cell.result) if cell.error is None else str(cell.error)

    text = wait_for(mapped, 60, "entities", until=lambda t: "Hubble" in t and "Berkeley" in t)
    hubble = next(line for line in text.splitlines() if line.startswith("Hubble"))
    assert "Berkeley" in hubble  # the entities it occurs with most

    cell = book.run("_m = %hindsight map hubble --top 5")
    assert cell.error is None, cell.text
    focus = book.ip.user_ns["_m"]
    text = repr(focus)
    assert text.startswith("Hubble: "), text
    assert "occurs with: " in text
    assert "Berkeley" in text.split("occurs with: ")[1].splitlines()[0]
    memories = focus.memories
    assert memories, text
    assert all("Hubble" in m.text for m in memories if m.type == "world" and "Priya" in m.text)
    assert {m.provenance.notebook_name for m in memories if "Priya" in m.text} == {
        "survey.ipynb",
        "calibration.ipynb",
    }
    assert "survey.ipynb · " in text  # each memory with where it came from


def test_a_long_map_read_shows_one_progress_line_and_counts_every_page(
    book: Notebook,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The map reads every fact of the scope (which entities occur together is in each
    memory only): in pages (here of 2, six facts), each counted once; past ``LONG_READ``
    memories one progress line shows in the map's own cell and none in the next."""
    from hindsight_magic._memory import overview
    from hindsight_magic._ui import progress

    plant(hindsight_server, bank_id)
    monkeypatch.setattr(overview, "READ_PAGE", 2)
    monkeypatch.setattr(progress, "LONG_READ", 3)

    def mapped() -> Any:
        cell = book.run("_m = %hindsight map --top 30")
        assert cell.error is None, cell.text
        return cell

    cell = wait_for(
        mapped,
        60,
        "entities",
        until=lambda c: "Hubble" in repr(book.ip.user_ns["_m"]),
    )
    assert cell.text.count("reading the bank's memories for the map") == 1, cell.text
    nodes = {node.name: node.mentions for node in book.ip.user_ns["_m"].map.nodes}
    assert nodes["Hubble"] == 2 * len(DAYS_BACK), nodes  # every page, each fact once
    assert "reading" not in book.run("print('next')").text


def test_an_empty_bank_is_a_sentence_and_unknown_entities_are_one_line(book: Notebook) -> None:
    cell = book.run("_t = %hindsight timeline")
    assert cell.error is None, cell.text
    empty = book.ip.user_ns["_t"]
    assert "No memories in bank" in repr(empty)
    bundle, _ = book.ip.display_formatter.format(empty)
    assert bundle["image/png"].startswith(PNG_MAGIC)

    cell = book.run("_m = %hindsight map")
    assert cell.error is None, cell.text
    assert "No entities yet" in repr(book.ip.user_ns["_m"])

    cell = book.run("%hindsight map Atlantis")
    assert cell.error is not None
    assert str(cell.error).count("\n") == 0
    assert "no entities yet" in str(cell.error).lower() or "No entity named" in str(cell.error)


def test_an_entity_mentioned_once_counts_once_in_a_tagged_scope(
    notebook: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    """A cell naming PM2.5 once, auto-retained in the default (tagged) scope, and the server's
    consolidation making its observation of it: the map says 1 mention (the fact), where the
    server's tag-filtered counts said 2; the cell's throwaway variables are no entities."""
    with rest(hindsight_server, bank_id) as http:
        http.put(
            f"{hindsight_server.url}/v1/default/banks/{bank_id}", json={"enable_observations": True}
        ).raise_for_status()
    notebook.connect(
        hindsight_server.url,
        bank_id,
        scoping="per-project-tagged",
        auto_retain="true",
        retain_every_n_cells="1",
    )
    cell = notebook.run(
        "import random\n"
        "rng = random.Random(0)\n"
        "# PM2.5 at Harbour Square: weekly means over the WHO limit\n"
        "weekly = [rng.uniform(5, 30) for _ in range(52)]\n"
        "exceed = [value > 15 for value in weekly]\n"
    )
    assert cell.error is None, cell.text

    def consolidated() -> bool:
        with rest(hindsight_server, bank_id) as http:
            listed = http.get("memories/list", params={"type": "observation"}).json()
        return bool(listed["items"])  # the mock's: the cell's first line

    wait_for(consolidated, 120, "the server's observation of the cell")
    cell = notebook.run("_m = %hindsight map")
    assert cell.error is None, cell.text
    shown = notebook.ip.user_ns["_m"]
    mentions = {node.name: node.mentions for node in shown.map.nodes}
    assert mentions["PM2.5"] == 1, mentions
    assert not {"PM2", "rng", "exceed", "weekly"} & set(mentions), mentions
    row = next(line for line in repr(shown).splitlines() if line.startswith("PM2.5 "))
    assert row.split()[1] == "1", row
    assert "Harbour Square (1)" in row  # each pair counted once too

    cell = notebook.run("_f = %hindsight map PM2.5")
    assert cell.error is None, cell.text
    focus = notebook.ip.user_ns["_f"]
    assert repr(focus).startswith("PM2.5: 1 mention, "), repr(focus)
    assert [m.type for m in focus.memories] == ["world"]  # the fact, not its observation


def plant_runs(server: RunningServer, bank: str, each: int, start: int = 0) -> None:
    """``each`` facts per notebook on each of ``DAYS_BACK`` (numbered from ``start``, so a
    second planting adds to the same days), without consolidation."""
    now = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    items = [
        {
            "content": f"Run {n} of the photometer on day {day} was logged in {notebook}.",
            "timestamp": (now - timedelta(days=day, minutes=n)).isoformat(),
            "document_id": f"{notebook}-{day}-{n}",
            "metadata": {"notebook": notebook, "source": "%retain"},
        }
        for day in DAYS_BACK
        for notebook in ("field/survey.ipynb", "lab/calibration.ipynb")
        for n in range(start, start + each)
    ]
    with rest(server, bank) as http:
        http.post("memories", json={"items": items, "async": False}, timeout=300).raise_for_status()


def supersede_a_cell_version(server: RunningServer, bank: str) -> None:
    """A cell's earlier version, superseded now as the extension supersedes one."""
    document = "hm-cell-0123456789-abcdefabcd-0123456789ab.1"
    item = {"content": "cutoff = 2  # months", "document_id": document}
    with rest(server, bank) as http:
        http.post("memories", json={"items": [item], "async": False}).raise_for_status()
        listed = http.get("memories/list", params={"document_id": document}).json()["items"]
        reason = "superseded by cell 3 of survey.ipynb, 2026-12-04 09:12"
        for memory in listed:
            http.patch(
                f"memories/{memory['id']}", json={"state": "invalidated", "reason": reason}
            ).raise_for_status()


def test_a_large_timeline_takes_as_many_requests_whatever_the_bank_holds(
    book: Notebook, hindsight_server: RunningServer, bank_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``READ_WHOLE`` memories the server counts them per period and type; only the
    newest are read, for their notebooks (small seams here: pages of 4, 8 read). The same
    number of requests for 12 memories as for 36, the counts the server's own, every
    notebook row adding up to them, the older ones said to be unread, the revised cell kept."""
    from hindsight_magic._memory import overview

    monkeypatch.setattr(overview, "READ_PAGE", 4, raising=False)
    monkeypatch.setattr(overview, "READ_WHOLE", 8, raising=False)
    relay = Relay()  # the session's requests, passed on to the server and counted
    Driver(book.magics.session).use_transport(relay)
    supersede_a_cell_version(hindsight_server, bank_id)

    def requests(line: str = "--by day --since 20d") -> tuple[int, Any]:
        relay.requests.clear()
        timeline = timeline_counts(book, line)
        return len(relay.requests), timeline

    plant_runs(hindsight_server, bank_id, each=2)
    few, small = requests()
    assert small.counts.total == 12
    plant_runs(hindsight_server, bank_id, each=4, start=2)
    many, large = requests()
    assert large.counts.total == 36
    assert few == many, (few, many)

    assert per_day(large) == server_counts(hindsight_server, bank_id)
    by_notebook = dict(large.counts.notebooks())
    assert by_notebook.pop("(older, not read)") == 36 - large.counts.notebooks_read
    assert set(by_notebook) == {"survey.ipynb", "calibration.ipynb"}
    read = large.counts.notebooks_read
    assert 0 < read <= 8  # what pages of 4 reach (a page's oldest moment is read again)
    for period, counts in large.counts.per_notebook().items():
        assert sum(counts.values()) == sum(large.counts.per_type()[period].values())
    text = repr(large)
    assert f"By notebook: only the newest {read} of the 36 memories were read" in text
    assert sum(large.counts.revisions().values()) == 1  # the superseded version, counted
    assert "cells revised" in text

    # a window holding no more than READ_WHOLE: every memory read, each count exact
    monkeypatch.setattr(overview, "READ_WHOLE", 12)
    whole = timeline_counts(book, "--by day --since 2d")
    assert whole.counts.total == 12
    assert whole.counts.notebooks_read == 0
    assert dict(whole.counts.notebooks()) == {"survey.ipynb": 6, "calibration.ipynb": 6}
    assert "By notebook" not in repr(whole)


def test_memories_sharing_one_moment_are_each_read_once_across_pages(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    """A page of memories all recorded at one moment (a batch) is read inside that moment by
    offset; the pages go on below it: nothing twice, nothing missed."""
    from hindsight_magic._memory.paging import ScopeReader
    from hindsight_magic._memory.scope import compute_scope

    moment = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)
    items = [
        {
            "content": f"Batch row {n} of the calibration export.",
            "timestamp": (moment - timedelta(minutes=0 if n < 7 else n)).isoformat(),
            "document_id": f"batch-{n}",
        }
        for n in range(10)
    ]
    with rest(hindsight_server, bank_id) as http:
        http.post("memories", json={"items": items, "async": False}).raise_for_status()
    reader = ScopeReader(
        Connection(hindsight_server.url, None, Timeouts()),
        compute_scope("global", bank_id, "", "x"),
    )
    assert reader.count() == 10
    progress: list[tuple[int, int]] = []
    pages = list(reader.pages(page=3, read=lambda done, total: progress.append((done, total))))
    ids = [item.id for page in pages for item in page]
    assert len(ids) == len(set(ids)) == 10
    assert progress[-1] == (10, 10)
