"""Memory that stays current, on the real server: a notebook run again adds nothing, a changed
cell supersedes its earlier version (kept, with a reason), recall shows one memory per cell and
says what replaced what, an as-of recall reads memory as it was, a cell's history lists its
versions and restoring one makes it current again; a bank filled before versions were kept is
shown collapsed and ``%hindsight dedupe`` tidies it.

The cells run in a real IPython shell with the ids JupyterLab sends (``info.cell_id``).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import httpx
import pytest
from conftest import Notebook
from helpers import Relay, RunningServer, settled, wait_for

from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

SETUP = "import math\nrows = list(range(10))"
DEFINITION = "# we define churn as no purchase in 90 days\nCHURN_DAYS = 90\nCHURN_DAYS"
CUTOFF = "# tenure cut-off: customers under {} months are new\nTENURE_CUTOFF_MONTHS = {}"
QUESTION = "what tenure cut-off do we use for new customers?"


class Bank:
    """The test's bank on the server, read as a user's own tools would."""

    def __init__(self, url: str, bank_id: str) -> None:
        self.http = httpx.Client(base_url=f"{url}/v1/default/banks/{bank_id}", timeout=30)

    def documents(self) -> dict[str, int]:
        """Every document id with how many valid memories it holds."""
        items = self.http.get("/documents", params={"limit": 500}).json()["items"]
        return {d["id"]: int(d["memory_unit_count"]) for d in items}

    def memories(self, document_id: str, state: str = "invalidated") -> list[dict[str, Any]]:
        params = {"document_id": document_id, "state": state, "limit": 50}
        return list(self.http.get("/memories/list", params=params).json()["items"])

    def settled(self) -> None:
        settled(self.http, 120)


@pytest.fixture
def bank(hindsight_server: RunningServer, bank_id: str) -> Bank:
    return Bank(hindsight_server.url, bank_id)


@pytest.fixture
def book(
    notebook: Notebook, hindsight_server: RunningServer, bank_id: str, tmp_path: Any
) -> Notebook:
    """The extension loaded with auto-retain on (every 3 cells), as a notebook churn.ipynb."""
    notebook.monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "churn.ipynb"))
    notebook.connect(hindsight_server.url, bank_id, auto_retain="true")
    return notebook


def run_all(book: Notebook, months: int = 2) -> None:
    """Run the notebook's three cells top to bottom and send what they left."""
    for cell_id, source in (
        ("setup", SETUP),
        ("definition", DEFINITION),
        ("cutoff", CUTOFF.format(months, months)),
    ):
        cell = book.run(source, cell_id=cell_id)
        assert cell.error is None, cell.text
    book.run("%hindsight autoretain now")
    assert "Traceback" not in book.run("%hindsight flush").text


def cutoff_documents(bank: Bank) -> dict[str, int]:
    documents = bank.documents()
    return {d: n for d, n in documents.items() if d.startswith("hm-cell-")}


def test_a_rerun_sends_nothing_and_a_changed_cell_supersedes_its_earlier_version(
    book: Notebook, bank: Bank
) -> None:
    for _ in range(3):
        run_all(book)
    bank.settled()
    first = cutoff_documents(bank)
    assert len(first) == 3, first  # three cells, three documents: the re-runs added none
    assert set(first.values()) == {1}
    status = book.run("%hindsight status").text
    assert "unchanged" in status  # the re-runs are counted as such

    before_edit = datetime.now().astimezone()
    time.sleep(1.5)
    run_all(book, months=3)
    bank.settled()
    documents = wait_for(
        lambda: cutoff_documents(bank),
        60,
        "the earlier version superseded",
        until=lambda docs: len(docs) == 4 and sorted(docs.values()) == [0, 1, 1, 1],
    )
    (old,) = [d for d, n in documents.items() if n == 0]
    (superseded,) = bank.memories(old)
    assert "2 months" in superseded["text"]
    assert superseded["invalidation_reason"].startswith("superseded by cell ")
    assert "churn.ipynb" in superseded["invalidation_reason"]

    # recall: the revision first, saying it replaced an earlier version; the old one nowhere
    result = book.run(f"r = %recall {QUESTION}\nr").result
    assert "3 months" in result[0].text
    assert "replaces the version of" in repr(result).split("\n\n")[1]
    assert all("2 months" not in memory.text for memory in result)
    assert len({m.document_id.rsplit("-", 1)[0] for m in result}) == len(result)  # a cell once
    assert "replaces the version of" in result._repr_html_()
    assert "replaces the version of" in result._repr_markdown_()
    assert "replaces the version of" in result.as_context()

    # as of a moment before the edit: the earlier decision, and not the revision
    was = book.run(f"r = %recall --as-of '{before_edit.isoformat()}' {QUESTION}\nr").result
    texts = " ".join(m.text for m in was)
    assert "2 months" in texts
    assert "3 months" not in texts
    assert "superseded on" in repr(was)
    assert "memory as it was" in repr(was).splitlines()[0]

    # its history lists both versions, with what changed
    history = book.run("h = %hindsight history #1\nh").result
    shown = repr(history)
    assert "2 versions" in shown
    assert "current" in shown
    assert "superseded" in shown
    current = history.items[0]
    assert "current" in current
    removed, added = current.split("changed: ")[1].split(" → ")
    assert "TENURE_CUTOFF_MONTHS = 2" in removed
    assert "TENURE_CUTOFF_MONTHS = 3" in added

    # the timeline marks where the cell was revised
    timeline = book.run("t = %hindsight timeline\nt").result
    assert sum(timeline.counts.revisions().values()) == 1
    assert "cells revised" in timeline.text()

    # restoring the earlier version makes it the current one again
    restored = book.run(f"%hindsight restore {old}").text
    assert "current version" in restored, restored
    after = wait_for(lambda: cutoff_documents(bank), 30, until=lambda d: d[old] == 1)
    assert sorted(after.values()) == [0, 1, 1, 1]  # the revision is superseded in turn
    again = book.run(f"r = %recall {QUESTION}\nr").result
    assert "2 months" in again[0].text


def test_an_undone_edit_brings_its_version_back_without_sending_it(
    book: Notebook, bank: Bank
) -> None:
    run_all(book, months=2)
    bank.settled()
    first = set(cutoff_documents(bank))
    run_all(book, months=3)
    bank.settled()
    (edited,) = wait_for(lambda: set(cutoff_documents(bank)) - first, 60, "the edit stored")
    (original,) = [d for d in first if d.split("-")[3] == edited.split("-")[3]]
    wait_for(lambda: cutoff_documents(bank)[original], 60, until=lambda n: n == 0)
    run_all(book, months=2)  # the edit undone
    bank.settled()
    documents = wait_for(
        lambda: cutoff_documents(bank),
        60,
        "the first version valid again, the edit superseded",
        until=lambda d: d[original] == 1 and d[edited] == 0,
    )
    assert len(documents) == 4  # nothing new was stored
    result = book.run(f"r = %recall {QUESTION}\nr").result
    assert "2 months" in result[0].text
    assert all("3 months" not in memory.text for memory in result)


def test_a_cell_run_again_after_a_recall_showed_its_memory_sends_nothing(
    book: Notebook, bank: Bank
) -> None:
    """A recall that shows a cell's memory (its value among them) must not make the same
    cell, run again unchanged, a new version: its value is the cell's own output, not a text
    the recall showed, and cutting it would store the cell without its value."""
    summary = (
        "# the churn summary for the board\n"
        "summary = 'churned customers order less often, complain more and leave within weeks'\n"
        "summary"
    )
    for cell_id, source in (("setup", SETUP), ("summary", summary), ("definition", DEFINITION)):
        assert book.run(source, cell_id=cell_id).error is None
    book.run("%hindsight autoretain now")
    book.run("%hindsight flush")
    bank.settled()
    before = cutoff_documents(bank)
    recalled = book.run("r = %recall why do customers churn?\nr").result
    assert any("complain more" in memory.text for memory in recalled)  # the value shown
    for cell_id, source in (("setup", SETUP), ("summary", summary), ("definition", DEFINITION)):
        assert book.run(source, cell_id=cell_id).error is None
    book.run("%hindsight autoretain now")
    assert "Traceback" not in book.run("%hindsight flush").text
    bank.settled()
    assert cutoff_documents(bank) == before  # no new version, the stored one still valid
    assert "cells unchanged  3" in book.run("%hindsight status").text


def test_a_cell_first_run_after_a_recall_showed_its_value_is_unchanged_in_the_next_kernel(
    book: Notebook, bank: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell whose value a recall showed before its first run (another cell's memory with the
    same value) is sent without it; the next kernel, which showed nothing, runs it again with
    its value: the same cell, unchanged, not a new version."""
    from hindsight_magic._capture import transcript

    value = "'churned customers order less often, complain more and leave within weeks'"
    first, again = (f"# {what}\nsummary = {value}\nsummary" for what in ("draft", "final"))
    assert book.run(first, cell_id="draft").error is None
    book.run("%hindsight autoretain now")
    book.run("%hindsight flush")
    bank.settled()
    recalled = book.run("r = %recall why do customers churn?\nr").result
    assert any("complain more" in memory.text for memory in recalled)  # the value shown
    assert book.run(again, cell_id="final").error is None
    book.run("%hindsight autoretain now")
    book.run("%hindsight flush")
    bank.settled()
    before = cutoff_documents(bank)
    assert len(before) == 2, before

    monkeypatch.setattr(transcript, "SHOWN", transcript.ShownTexts())  # a new kernel's
    book.run("%reload_ext hindsight_magic")
    assert book.run(again, cell_id="final").error is None
    book.run("%hindsight autoretain now")
    assert "Traceback" not in book.run("%hindsight flush").text
    bank.settled()
    assert cutoff_documents(bank) == before
    assert "cells unchanged  1" in book.run("%hindsight status").text


def test_a_corrected_cell_memory_shows_its_new_text_as_current_in_its_history(
    book: Notebook, bank: Bank
) -> None:
    """``%hindsight correct`` changes what a cell's memory says; its history must show the
    correction as what is current, and the text as retained as what came before it."""
    run_all(book, months=2)
    bank.settled()
    found = book.run(f"r = %recall {QUESTION}\nr").result
    assert "2 months" in found[0].text
    new = "Tenure cut-off: customers under 4 months are new (corrected)"
    assert "Corrected #1" in book.run(f"%hindsight correct #1 {new}").text

    history = book.run("h = %hindsight history #1\nh").result
    assert "1 version, 1 corrected since" in history.headline, history.headline
    corrected, retained = history.items
    assert " · current · " in corrected
    assert f"corrected to: {new}" in corrected
    assert "first version: # tenure cut-off: customers under 2 months" in retained
    assert "current" not in retained
    assert "as retained" in retained
    assert f"corrected to: {new}" in history._repr_html_()


def test_a_cell_the_user_forgot_stays_forgotten_when_it_runs_again(
    book: Notebook, bank: Bank
) -> None:
    run_all(book)
    bank.settled()
    found = book.run(f"r = %recall {QUESTION}\nr").result
    assert "2 months" in found[0].text
    assert "Forgot" in book.run('%hindsight forget #1 --reason "not a decision after all"').text
    run_all(book)
    bank.settled()
    time.sleep(3)  # a revival would have happened by now
    result = book.run(f"r = %recall {QUESTION}\nr").result
    assert all("2 months" not in memory.text for memory in result)


def test_forgotten_shows_each_reason_and_counts_superseded_versions_apart(
    book: Notebook, bank: Bank
) -> None:
    """The text form keeps a forgotten memory's reason (a long text is cut, not the reason),
    and a cell's earlier version is counted as superseded: the user forgot one memory."""
    run_all(book, months=2)
    bank.settled()
    run_all(book, months=3)
    bank.settled()
    wait_for(lambda: cutoff_documents(bank), 60, until=lambda d: sorted(d.values())[0] == 0)
    long = "The pricing experiment ran in three regions " + "with a staggered start " * 8
    book.run(f"%retain {long}")
    book.run("%hindsight flush")
    bank.settled()
    found = book.run("r = %recall pricing experiment regions staggered\nr").result
    handle = next(n for n, m in enumerate(found, 1) if "pricing experiment" in m.text)
    said = book.run(f"%hindsight forget #{handle} --reason the regions were wrong").text
    assert "Forgot" in said, said

    listing = book.run("f = %hindsight forgotten\nf").result
    text = repr(listing)
    headline = text.splitlines()[0]
    assert headline.startswith("1 forgotten memory and 1 earlier version of cells superseded")
    (forgot,) = [line for line in text.splitlines() if "pricing experiment" in line]
    assert "· forgotten " in forgot, forgot
    assert "reason: the regions were wrong" in forgot
    (earlier,) = [line for line in text.splitlines() if "months" in line]
    assert "superseded by cell" in earlier
    assert "forgotten" not in earlier
    assert "reason: the regions were wrong" in listing._repr_html_()


def plant_copies(bank: Bank) -> None:
    """What the earlier extension left: every run of a cell its own document (five copies of
    one cell), and one ``%retain`` line run twice (two documents); seven memories."""
    text = "# the refunds table double-counts Q3; dedupe on order_id\nrefunds = load()"
    items = [
        {
            "content": f"[cell {n}]\n{text}",
            "document_id": f"hm-{'0' * 31}{n}-{n}",
            "timestamp": f"2026-11-0{n}T10:00:00+00:00",
            "metadata": {"source": "autoretain", "cells": str(n), "notebook": "churn.ipynb"},
        }
        for n in range(1, 6)
    ]
    items += [  # one %retain line run twice: two documents then, one now
        {
            "content": "The refunds table is reloaded every Monday.",
            "document_id": f"hm-{'1' * 31}{n}-1",
            "timestamp": f"2026-11-0{n}T11:00:00+00:00",
            "metadata": {"source": "%retain", "cells": str(n), "notebook": "churn.ipynb"},
        }
        for n in (6, 7)
    ]
    reply = bank.http.post("/memories", json={"items": items, "async": False}, timeout=120)
    assert reply.status_code == 200, reply.text


def test_copies_from_before_versions_show_once_and_dedupe_tidies_them(
    book: Notebook, bank: Bank
) -> None:
    """A bank the earlier extension filled: every run of a cell its own document."""
    plant_copies(bank)
    result = book.run("r = %recall refunds table order_id\nr").result
    refunds = [m for m in result if "double-counts" in m.text]
    assert len(refunds) == 1
    assert refunds[0].copies == 4
    assert "and 4 earlier copies" in repr(result)
    mondays = [m for m in result if "Monday" in m.text]
    assert len(mondays) == 1
    assert mondays[0].copies == 1

    preview = book.run("%hindsight dedupe").text
    assert "Would delete 5 documents" in preview, preview
    assert "(7 memories read)" in preview
    assert "Nothing was changed" in preview
    assert len(bank.documents()) == 7  # a preview changes nothing
    done = book.run("%hindsight dedupe --yes").text
    assert "deleted 5 documents" in done, done
    assert len(bank.documents()) == 2
    after = book.run("r = %recall refunds table order_id\nr").result
    assert [m.copies for m in after if "double-counts" in m.text] == [0]


DECISION = "Churn study: we drop customers with fewer than 2 orders from the cohort."


def by_autoretain(memory: dict[str, Any]) -> bool:
    """Whether a memory (or a retain request's item) is a cell's own, not a text it retained."""
    return bool((memory.get("metadata") or {}).get("source") == "autoretain")


def test_a_rerun_cell_retains_its_texts_once_in_this_kernel_and_the_next(
    book: Notebook, bank: Bank
) -> None:
    """A cell that retains on purpose (``%retain``, ``hm.retain``) run again sends nothing: the
    server holds the same text under the same id; a new kernel knows it from the server."""
    cell = f"%retain {DECISION}\nimport hindsight_magic as hm\nhm.retain('Cohort is 2024 signups.')"

    def retained() -> dict[str, int]:  # the documents of the texts retained on purpose
        items = bank.http.get("/memories/list", params={"limit": 500}).json()["items"]
        own = {m["document_id"] for m in items if not by_autoretain(m)}
        return {d: n for d, n in bank.documents().items() if d in own}

    book.run(cell, cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    first = wait_for(retained, 60, "both texts stored", until=lambda docs: len(docs) == 2)
    assert set(first.values()) == {1}
    relay = Relay()  # the session's requests, passed on to the server and recorded
    Driver(book.magics.session).use_transport(relay)
    for _ in range(3):
        book.run(cell, cell_id="decision")
        book.run("%hindsight flush")
    retains = relay.bodies("POST", "/memories$")
    # the retained texts' documents sent (the cell itself may be): none, the server holds both
    assert [i["document_id"] for b in retains for i in b["items"] if not by_autoretain(i)] == []
    status = book.run("%hindsight status").text
    assert "not resent   6 (retained again by a re-run: already stored)" in status

    book.run("%reload_ext hindsight_magic")  # a new session: it learns what the server holds
    book.run(cell, cell_id="decision")
    book.run("%hindsight flush")
    assert retained() == first
    changed = cell.replace("2024 signups", "2025 signups")  # another text: a memory of its own
    book.run(changed, cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    assert len(wait_for(retained, 60, "the new text stored", until=lambda d: len(d) == 3)) == 3


def test_a_flush_after_an_unchanged_rerun_says_nothing_was_sent(book: Notebook, bank: Bank) -> None:
    """A notebook run again unchanged (papermill's nightly run: a new kernel each time) sends
    none of its ``%retain`` lines: its flush says so, not that the server accepted them."""
    cell = f"%retain {DECISION}\n%retain The cohort is 2024 signups."
    book.run(cell, cell_id="decision")
    first = book.run("%hindsight flush").text
    assert "Flushed: 2 memories accepted by the server." in first, first
    bank.settled()

    book.run("%reload_ext hindsight_magic")  # the next run's kernel
    book.run(cell, cell_id="decision")
    again = book.run("%hindsight flush").text
    assert "Flushed: nothing new to send; 2 already stored." in again, again
    assert "accepted" not in again

    book.run(f"{cell}\n%retain Refunds are excluded.", cell_id="decision")
    mixed = book.run("%hindsight flush").text
    assert "Flushed: 1 memory accepted by the server; 2 already stored" in mixed, mixed


def test_a_changed_retain_line_supersedes_the_decision_it_replaces(
    book: Notebook, bank: Bank
) -> None:
    """A ``%retain`` line is its cell's decision: changed and run again, its new text is the
    current one, the old one superseded (history, as-of); a line added beside it is another
    memory, and the cell's other lines stay as they were."""
    decided = "%retain The churn cut-off is {} months of no purchases"
    other = "%retain Refunds are excluded from churn revenue"
    book.run(f"{decided.format(3)}\n{other}", cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    before_edit = datetime.now().astimezone()
    time.sleep(1.5)
    book.run(f"{decided.format(6)}\n{other}", cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    superseded = wait_for(
        lambda: [d for d, n in bank.documents().items() if n == 0],
        60,
        "the earlier decision superseded",
        until=lambda docs: len(docs) == 1,
    )
    assert "3 months" in bank.memories(superseded[0])[0]["text"]

    query = "what is the churn cut-off in months?"
    now = book.run(f"r = %recall {query}\nr").result
    assert "6 months" in now[0].text
    assert all("3 months" not in memory.text for memory in now)
    history = repr(book.run("h = %hindsight history #1\nh").result)
    assert "2 versions" in history, history
    assert "3 months of no purchases → The churn cut-off is 6 months" in history
    assert "superseded" in history
    assert any("Refunds are excluded" in m.text for m in book.run("%recall refunds churn").result)

    was = book.run(f"r = %recall --as-of '{before_edit.isoformat()}' {query}\nr").result
    assert "3 months" in " ".join(m.text for m in was)
    assert "6 months" not in " ".join(m.text for m in was)

    added = "%retain The churn cohort is 2024 signups"
    book.run(f"{decided.format(6)}\n{other}\n{added}", cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    valid = wait_for(
        lambda: sorted(bank.documents().values()), 60, until=lambda counts: len(counts) == 4
    )
    assert valid == [0, 1, 1, 1]  # the line added beside is a memory of its own


def test_a_retain_line_changed_and_changed_back_at_once_is_its_first_text_again(
    book: Notebook, bank: Bank
) -> None:
    """3 months, then 6, then 3 again, each run and flushed straight away (a user undoing an
    edit): the decision is 3 months, and 6 months is superseded."""
    decided = "%retain The churn cut-off is {} months of no purchases"
    for months in (3, 6, 3):
        book.run(decided.format(months), cell_id="decision")
        book.run("%hindsight flush")
    bank.settled()

    def current() -> str:
        found = book.run("r = %recall what is the churn cut-off in months?\nr").result
        return " ".join(memory.text for memory in found)

    now = wait_for(current, 30, every_s=1, until=lambda t: "6 months" not in t)
    assert "3 months" in now


def test_restoring_a_superseded_decision_by_the_id_forgotten_lists_makes_it_current(
    book: Notebook, bank: Bank
) -> None:
    """``%hindsight forgotten`` lists an earlier version by its memory id and says
    ``%hindsight restore ID`` brings it back: that must say it did, and make it current."""
    decided = "%retain The churn cut-off is {} months of no purchases"
    book.run(decided.format(3), cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    book.run(decided.format(6), cell_id="decision")
    book.run("%hindsight flush")
    bank.settled()
    listing = wait_for(
        lambda: book.run("f = %hindsight forgotten\nf").result,
        60,
        "the earlier decision listed",
        until=lambda f: len(f.memory_ids) == 1,
    )
    assert "3 months" in listing.items[0]

    restored = book.run(f"%hindsight restore {listing.memory_ids[0]}")
    assert restored.error is None, restored.text
    assert "Restored" in restored.text, restored.text
    assert "current version" in restored.text, restored.text
    now = book.run("r = %recall what is the churn cut-off in months?\nr").result
    assert "3 months" in now[0].text
    assert all("6 months" not in memory.text for memory in now)


def test_removed_or_moved_retain_lines_leave_the_other_decisions_as_they_were(
    book: Notebook, bank: Bank
) -> None:
    """A ``%retain`` text the cell retained before is the same decision wherever its line now
    stands: removing a line above it or swapping lines supersedes nothing and sends nothing
    new (the removed line's decision stays: it was not forgotten); a changed text in the
    removed line's place supersedes it."""
    cutoff = "%retain The churn cut-off is 3 months of no purchases"
    refunds = "%retain Refunds are excluded from churn revenue"
    cohort = "%retain The churn cohort is the customers who signed up in 2024"
    book.run(f"{cutoff}\n{refunds}\n{cohort}", cell_id="decisions")
    book.run("%hindsight flush")
    bank.settled()
    first = wait_for(bank.documents, 60, until=lambda d: len(d) == 3 and all(d.values()))

    book.run(f"{cutoff}\n{cohort}", cell_id="decisions")  # the refunds line removed
    book.run("%hindsight flush")
    book.run(f"{cohort}\n{cutoff}", cell_id="decisions")  # and the other two swapped
    book.run("%hindsight flush")
    bank.settled()
    assert bank.documents() == first  # nothing new, nothing superseded
    shown = repr(book.run("r = %recall who is in the churn cohort?\nr").result)
    assert "2024" in shown, shown
    assert "earlier cop" not in shown, shown

    pricing = "%retain Churn revenue counts list prices, not discounted ones"
    book.run(f"{cutoff}\n{pricing}\n{cohort}", cell_id="decisions")
    book.run("%hindsight flush")
    bank.settled()
    superseded = wait_for(
        lambda: [d for d, n in bank.documents().items() if n == 0],
        60,
        "the removed line's decision superseded by the text in its place",
        until=lambda docs: len(docs) == 1,
    )
    assert "Refunds" in bank.memories(superseded[0])[0]["text"]
    assert sorted(n > 0 for n in bank.documents().values()) == [False, True, True, True]


def test_a_long_dedupe_read_shows_one_progress_line_in_its_own_cell(
    notebook: Notebook,
    bank: Bank,
    hindsight_server: RunningServer,
    bank_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dedupe reads every fact of the scope (whether a text is a copy depends on all the
    newer ones): past ``LONG_READ`` memories a bar shows while it reads, here one line (no
    widgets), not one per page, and none in the next cell; a short read shows none."""
    from hindsight_magic._memory import curation
    from hindsight_magic._ui import progress

    notebook.connect(hindsight_server.url, bank_id)  # no auto-retain: the bank holds seven
    book = notebook
    plant_copies(bank)
    monkeypatch.setattr(curation, "DEDUPE_PAGE", 2)  # seven memories: four pages
    monkeypatch.setattr(progress, "LONG_READ", 5, raising=False)
    cell = book.run("%hindsight dedupe")
    assert cell.error is None, cell.text
    assert cell.text.count("reading the bank's memories to find copies") == 1, cell.text
    assert "Would delete 5 documents" in cell.text
    assert "(7 memories read)" in cell.text
    assert "reading" not in book.run("print('next')").text

    monkeypatch.setattr(progress, "LONG_READ", 7)
    quiet = book.run("import hindsight_magic as hm\nprint(hm.dedupe())").text
    assert "reading the bank" not in quiet, quiet
    assert "(7 memories read)" in quiet
