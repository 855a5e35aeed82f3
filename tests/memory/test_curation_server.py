"""Tending memory against the real server: forget, restore, correct, history, forgotten, delete,
purge-matching — through the magics a user types, checked by what recall, reflect and the
server's REST API say afterwards.

With the mock LLM the server also stores prompt noise as facts, so assertions are "contains";
each test uses its own bank, and each planted fact carries a token no other memory has.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Notebook
from helpers import RunningServer, settled, wait_for
from kernels import Kernel

import hindsight_magic as hm

pytestmark = pytest.mark.integration


@pytest.fixture
def book(notebook: Notebook, hindsight_server: RunningServer, bank_id: str) -> Notebook:
    notebook.connect(hindsight_server.url, bank_id)
    return notebook


def token() -> str:
    return uuid.uuid4().hex[:10]


def recalled(book: Notebook, query: str) -> list[Any]:
    """The memories ``%recall`` returns (the last result, which ``#N`` refers to)."""
    cell = book.run(f"_r = %recall {query}")
    assert cell.error is None, cell.text
    return list(book.ip.user_ns["_r"])


def texts(memories: list[Any]) -> str:
    return "\n".join(m.text for m in memories)


def line(book: Notebook, source: str) -> str:
    """What a cell shows: its value's text form, or its one error line."""
    cell = book.run(source)
    return repr(cell.result) if cell.error is None else str(cell.error)


def retained(book: Notebook, fact: str) -> str:
    """Retain ``fact`` and wait until recall finds it; its memory id."""
    assert book.run(f"%retain {fact}").error is None
    word = fact.split()[-1]

    def found() -> str | None:
        return next((m.id for m in recalled(book, word) if fact in m.text), None)

    return wait_for(found, 60, f"recall of {fact!r}")


def rest(server: RunningServer, bank: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.url}/v1/default/banks/{bank}", timeout=30)


def test_forget_leaves_recall_and_reflect_restore_brings_it_back(book: Notebook) -> None:
    mark = token()
    fact = f"The ice cores from Vostok sit in freezer {mark}"
    retained(book, fact)
    memories = recalled(book, mark)
    handle = next(n for n, m in enumerate(memories, 1) if fact in m.text)
    answer = hm.reflect(f"Where are the ice cores {mark}?")
    assert fact in texts(answer.based_on.memories)  # the answer used it before

    said = line(book, f"%hindsight forget #{handle} --reason wrong freezer")
    assert said.startswith(f"Forgot #{handle}: “{fact}”"), said
    assert fact not in texts(recalled(book, mark))
    answer = hm.reflect(f"Where are the ice cores {mark}?")
    assert fact not in texts(answer.based_on.memories)
    listing = line(book, "%hindsight forgotten")
    assert fact in listing
    assert "reason: wrong freezer" in listing

    memory_id = memories[handle - 1].id
    assert "is back in recall" in line(book, f"%hindsight restore {memory_id}")
    assert fact in texts(recalled(book, mark))
    assert fact not in line(book, "%hindsight forgotten")
    assert "1 forgotten, 1 restored" in line(book, "%hindsight status")


def test_correct_is_recalled_with_the_new_text_and_history_has_both(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    mark = token()
    old = f"The staging warehouse is called Larkspur {mark}"
    new = f"The staging warehouse is called Foxglove {mark}"
    assert book.run(f"%retain {old}").error is None
    book.run("%hindsight flush")  # sent in the background, as a notebook's memories are
    settled(rest(hindsight_server, bank_id))
    memory = next(m for m in recalled(book, mark) if old in m.text)
    first = line(book, f"%hindsight history {memory.id}")
    assert first.count("retain") == 1, first  # its retain is the "retained as" line, once
    assert f"retained as: {old}" in first
    said = repr(memory.correct(new))  # the method on a recalled memory
    assert f"it now says “{new}”" in said
    found = texts(recalled(book, mark))
    assert new in found
    assert old not in found
    history = line(book, f"%hindsight history {memory.id}")
    assert f"now (valid): {new}" in history
    assert f"retained as: {old}" in history
    assert "fact edited" in history


def test_delete_lists_first_then_removes_the_document(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    mark = token()
    fact = f"Churn is computed per calendar month {mark}"
    retained(book, fact)
    memory = next(m for m in recalled(book, mark) if fact in m.text)
    client = rest(hindsight_server, bank_id)

    handle = next(n for n, m in enumerate(recalled(book, mark), 1) if m.id == memory.id)
    preview = line(book, f"%hindsight delete #{handle}")
    assert "Would delete 1 document" in preview, preview
    assert "Nothing was deleted" in preview
    assert client.get(f"/documents/{memory.document_id}").status_code == 200

    done = line(book, f"%hindsight delete {memory.document_id} --yes")
    assert done.startswith("Deleted 1 document"), done
    assert client.get(f"/documents/{memory.document_id}").status_code == 404
    assert fact not in texts(recalled(book, mark))


def test_purge_matching_removes_every_memory_holding_the_string_and_nothing_else(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    leak = f"zqleak{token()}"  # a key of a shape the redactor does not know
    keep = f"The quarterly report goes out on Fridays {token()}"
    for n in range(3):
        hm.retain(f"Staging run {n} used the key {leak} by mistake.")
    hm.retain(keep)
    hm.flush(30)
    client = rest(hindsight_server, bank_id)

    def listed(q: str) -> int:
        return int(client.get("/memories/list", params={"q": q}).json()["total"])

    wait_for(lambda: listed(leak) >= 3 and listed(keep) >= 1, 60, "the planted memories")
    preview = line(book, f"%hindsight purge-matching {leak}")
    assert "from 3 documents" in preview, preview
    assert listed(leak) >= 3  # nothing deleted yet
    assert line(book, f"%hindsight purge-matching {leak} --yes").startswith("Deleted 3 documents")
    assert listed(leak) == 0
    assert (
        client.get("/memories/list", params={"q": leak, "state": "invalidated"}).json()["total"]
        == 0
    )
    assert listed(keep) >= 1  # nothing else went


def test_purge_matching_deletes_only_documents_whose_memories_say_the_text(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    """The server matches ``q`` with ILIKE over text and context, ``%``/``_`` as wildcards:
    ``%`` would match every memory, ``upyt`` the ``jupyter`` context of each."""
    mark = token()
    client = rest(hindsight_server, bank_id)
    client.patch("/config", json={"updates": {"retain_extraction_mode": "chunks"}})
    texts_by_document = {
        f"doc-plain-{mark}": f"The churn table double-counts refunds {mark}",
        f"doc-cents-{mark}": f"Revenue figures are in cents {mark}",
        f"doc-percent-{mark}": f"A 50% discount ran in March {mark}",
        f"doc-underscore-{mark}": f"Dedupe on order_id before joins {mark}",
    }
    items = [
        {"content": text, "context": "jupyter", "document_id": document}
        for document, text in texts_by_document.items()
    ]
    client.post("/memories", json={"items": items, "async": False}).raise_for_status()

    def documents() -> set[str]:
        listed = client.get("/documents", params={"limit": 100}).json()["items"]
        return {d["id"] for d in listed}

    assert documents() == set(texts_by_document)
    assert line(book, "%hindsight purge-matching upyt --yes").startswith("No memory")
    preview = line(book, "%hindsight purge-matching %")
    assert "1 memory matching “%”, from 1 document" in preview, preview
    assert "50% discount" in preview
    assert line(book, "%hindsight purge-matching % --yes").startswith("Deleted 1 document")
    assert line(book, "%hindsight purge-matching _ --yes").startswith("Deleted 1 document")
    assert line(book, "%hindsight purge-matching \\ --yes").startswith("No memory")
    assert documents() == {f"doc-plain-{mark}", f"doc-cents-{mark}"}


def state_of(client: httpx.Client) -> list[tuple[str, str, str]]:
    """(id, state, text) of every memory of a bank, forgotten ones too."""
    found = []
    for state in ("valid", "invalidated"):
        items = client.get("/memories/list", params={"state": state, "limit": 500}).json()["items"]
        found += [(m["id"], m["state"], m["text"]) for m in items]
    return sorted(found)


def test_bad_input_is_one_line_and_changes_nothing(
    book: Notebook, hindsight_server: RunningServer, bank_id: str
) -> None:
    mark = token()
    retained(book, f"Outliers above p99.9 are test orders {mark}")
    client = rest(hindsight_server, bank_id)
    foreign = rest(hindsight_server, f"{bank_id}-other")
    foreign.put("", json={})
    foreign.post("/memories", json={"items": [{"content": f"Elsewhere {mark}"}], "async": False})
    [elsewhere] = [m for m in state_of(foreign) if mark in m[2]]
    settled(client), settled(foreign)
    observations = client.get("/memories/list", params={"type": "observation"}).json()["items"]
    before, before_foreign = state_of(client), state_of(foreign)
    book.run("_none = %recall nothing-matches-this-query-at-all-zzz")
    cases = {
        "%hindsight forget #7": "out of range",
        "%hindsight forget 00000000-0000-0000-0000-000000000000": "No memory",
        f"%hindsight forget {elsewhere[0]}": "No memory",  # a memory of another bank
        "%hindsight correct #1": "Nothing to correct to",
        "%hindsight delete no-such-document --yes": "No document",
        "%hindsight purge-matching": "Usage: %hindsight purge-matching",
        "%hindsight forget": "Usage: %hindsight forget",
    }
    if observations:  # consolidation made one: the server curates facts only
        cases[f"%hindsight forget {observations[0]['id']}"] = "is an observation"
    for source, expected in cases.items():
        cell = book.run(source)
        assert cell.error is not None, source
        shown = str(cell.error)
        assert expected in shown, (source, shown)
        assert "\n" not in shown
        assert "Traceback" not in cell.text
    assert state_of(client) == before
    assert state_of(foreign) == before_foreign


def test_a_memory_forgotten_while_queued_never_reaches_the_server_even_if_killed(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str
) -> None:
    mark = token()
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_SCOPING": "global",
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.sqlite3"),
        "HINDSIGHT_MENTAL_MODELS": "false",
        "HINDSIGHT_AUTO_RETAIN": "false",
    }
    first = Kernel(env, tmp_path)
    try:
        assert "Error" not in first.run("%load_ext hindsight_magic")
        first.pid  # noqa: B018  # asked now: a dead kernel cannot answer
        # one cell: queue two, forget one by its retain id, die before anything is sent
        first.client.execute(
            "# hindsight: skip\n"
            "import os, signal, hindsight_magic as hm\n"
            f"kept = hm.retain('Kept fact {mark} about the cohort table.')\n"
            f"gone = hm.retain('Cancelled fact {mark} about the refund table.')\n"
            "hm.forget(gone.ids[0])\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n"
        )
        wait_for(lambda: not first.manager.is_alive() or None, 60, "the kernel to die")
    finally:
        first.close()
    second = Kernel(env, tmp_path)
    try:
        assert "Error" not in second.run("%load_ext hindsight_magic")
        assert "accepted" in second.run("%hindsight flush --timeout 30")
        shown = second.run(f"%recall {mark} table")
        assert f"Kept fact {mark}" in shown, shown
        assert f"Cancelled fact {mark}" not in shown
    finally:
        second.close()
    client = rest(hindsight_server, bank_id)
    assert client.get("/memories/list", params={"q": f"Kept fact {mark}"}).json()["total"] >= 1
    assert client.get("/memories/list", params={"q": f"Cancelled fact {mark}"}).json()["total"] == 0
    documents = client.get("/documents").json()
    assert f"Cancelled fact {mark}" not in str(documents)
