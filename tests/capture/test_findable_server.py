"""Memory that can be found, on the real server: auto-retain stores each cell (cut to what the
embedding model reads, every part with its cell number), never a prompt or metadata line, with
the entities the cell names; and a plain question in other words finds it in the next kernel.

One notebook session of the recall-quality benchmark (``bench/notebooks/``: a data
scientist's bike-share analysis, 43 cells with facts left in comments, notes, named values,
results, errors and ``%retain``) runs once in a real kernel with the extension's defaults.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import RunningServer, settled, wait_for
from kernels import Kernel

from bench.recall_quality import found, is_scaffolding
from bench.recall_sessions import Fact, Session, planted_sessions
from hindsight_magic._api.client import HindsightClient
from hindsight_magic.testing import Driver

pytestmark = pytest.mark.integration

PROMPT_WORDS = {"context", "extract", "date", "event", "monday", "tuesday", "wednesday"}
PROMPT_WORDS |= {"thursday", "friday", "saturday", "sunday"}
PART = re.compile(r"^\[cell (\d+), part (\d+) of (\d+)\]\n")


class Analysis:
    """The bike-share session as it ran, and the bank it went to."""

    def __init__(self, session: Session, bank_id: str, env: dict[str, str], cwd: Path) -> None:
        self.session, self.bank_id, self.env, self.cwd = session, bank_id, env, cwd

    def memories(self, url: str) -> list[dict[str, Any]]:
        """Every memory of the bank, as the server lists it (any state, any type)."""
        with httpx.Client(base_url=f"{url}/v1/default/banks/{self.bank_id}", timeout=30) as http:
            return list(http.get("/memories/list", params={"limit": 1000}).json()["items"])


@pytest.fixture(scope="module")
def analysis(hindsight_server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    """The session run cell by cell in a kernel with the extension's defaults, which then exits
    (auto-retain's last cells go then)."""
    session = planted_sessions()[0]
    folder = tmp_path_factory.mktemp("bikes")
    bank_id = f"test-found-{uuid.uuid4().hex[:8]}"
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_JOURNAL_PATH": str(folder / "journal.sqlite3"),
        "HINDSIGHT_MENTAL_MODELS": "false",
        "JPY_SESSION_NAME": str(folder / session.notebook),
    }
    kernel = Kernel(env, folder)
    try:
        assert "Error" not in kernel.run("%load_ext hindsight_magic")
        for cell in session.cells:
            kernel.run(cell.source)
    finally:
        kernel.shutdown()  # a polite exit: what is left is sent then
    ran = Analysis(session, bank_id, env, folder)
    bank_url = f"{hindsight_server.url}/v1/default/banks/{bank_id}"
    with httpx.Client(base_url=bank_url, timeout=30) as bank:
        settled(bank, 120)  # every cell indexed (a busy server takes its time)
    return ran


def middle_facts(session: Session) -> list[Fact]:
    """The facts planted in the middle third of the session (never its first or last cells)."""
    third = len(session.cells) // 3
    return [cell.fact for cell in session.cells[third : 2 * third] if cell.fact]


def test_a_fact_in_the_middle_of_the_session_is_found_by_a_plain_question(
    analysis: Analysis, tmp_path: Path
) -> None:
    """Next week's kernel asks in other words; the memory holding the answer is in the top 5,
    and what the recall shows of it is the cell's best lines, with its cell number."""
    facts = middle_facts(analysis.session)
    assert len(facts) >= 5
    kernel = Kernel(analysis.env, analysis.cwd)
    try:
        kernel.run("import hindsight_magic as hm")
        hits = 0
        for fact in facts:
            texts = kernel.run(f"print(repr([m.text for m in hm.recall({fact.question!r})]))")
            hits += any(found(fact, text) for text in eval(texts)[:5])
        assert hits >= len(facts) - 1, f"{hits} of {len(facts)} found"
        shown = kernel.run("print(repr(hm.recall('which dock double-counted the returns?')))")
    finally:
        kernel.shutdown()
    assert re.search(r"^#1 .* — .*\bcell \d+", shown, re.MULTILINE), shown  # its cell number
    assert "[cell " not in shown.split("\n", 2)[2]  # the bookkeeping lines are not shown


def test_no_memory_is_a_prompt_or_metadata_line(analysis: Analysis, hindsight_server: Any):
    # the facts (the mock's consolidation also makes observations, which recall leaves out)
    memories = [m for m in analysis.memories(hindsight_server.url) if m["fact_type"] == "world"]
    assert len(memories) >= len(analysis.session.cells) - 5  # about one a cell
    scaffolding = [m["text"] for m in memories if is_scaffolding(m["text"])]
    assert scaffolding == []
    for memory in memories:  # each is a cell (or a %retain text), as written
        text = memory["text"]
        assert text.startswith("[cell ") or memory["metadata"].get("source") == "%retain", text
        assert "Extract facts" not in text


def test_a_cell_cut_in_parts_keeps_its_number_on_every_part(
    analysis: Analysis, hindsight_server: Any
) -> None:
    parts: dict[int, list[tuple[int, int]]] = {}
    for memory in analysis.memories(hindsight_server.url):
        match = PART.match(memory["text"])
        if match:
            cell, part, total = (int(group) for group in match.groups())
            assert memory["metadata"]["cells"] == str(cell)  # its provenance names the cell
            assert len(memory["text"]) <= 600
            parts.setdefault(cell, []).append((part, total))
    assert parts, "the session's long cell was not cut"
    for found_parts in parts.values():
        total = found_parts[0][1]
        assert sorted(found_parts) == [(n, total) for n in range(1, total + 1)]


def test_the_map_shows_the_session_s_subjects_and_none_of_the_prompt_s_words(
    analysis: Analysis, hindsight_server: Any
) -> None:
    with httpx.Client(base_url=hindsight_server.url, timeout=30) as http:
        listed = http.get(f"/v1/default/banks/{analysis.bank_id}/entities", params={"limit": 500})
    names = {entity["canonical_name"] for entity in listed.json()["items"]}
    assert {"Harbour Square", "Eastfield", "trips_2024_04.csv"} & names, names
    assert not {name for name in names if name.lower() in PROMPT_WORDS}, names


def test_auto_retained_cells_are_delivered_once_across_a_sigkill(
    tmp_path: Path, hindsight_server: RunningServer, bank_id: str, dead_url: str
) -> None:
    """Twelve cells retained while the server is away, the kernel killed; the next kernel
    sends them, and the server holds each cell once."""
    journal = str(tmp_path / "journal.sqlite3")
    env = {"HINDSIGHT_BANK_ID": bank_id, "HINDSIGHT_JOURNAL_PATH": journal}
    env["HINDSIGHT_MENTAL_MODELS"] = "false"
    first = Kernel({**env, "HINDSIGHT_API_URL": dead_url}, tmp_path)
    try:
        assert "Error" not in first.run("%load_ext hindsight_magic")
        for n in range(12):
            first.run(f"plate_{n}_reading = {n} * 0.125  # plate {n} of the stability run")
        first.run("%hindsight flush --timeout 1")  # the cells are queued, the server away
        first.kill()
    finally:
        first.close()
    second = Kernel({**env, "HINDSIGHT_API_URL": hindsight_server.url}, tmp_path)
    try:
        assert "Error" not in second.run("%load_ext hindsight_magic")

        def cells() -> Counter[str]:
            with httpx.Client(base_url=hindsight_server.url, timeout=30) as http:
                reply = http.get(
                    f"/v1/default/banks/{bank_id}/memories/list", params={"limit": 100}
                )
            items = reply.json()["items"] if reply.status_code == 200 else []
            return Counter(m["text"].split("\n")[1] for m in items if "plate_" in m["text"])

        held = wait_for(cells, 120, "the killed kernel's cells", until=lambda c: len(c) == 12)
        second.run("%hindsight flush --timeout 10")
        assert cells() == held
        assert set(held.values()) == {1}, held  # each cell once
    finally:
        second.shutdown()


def test_the_extraction_setting_sets_the_bank_s_mode(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """A bank in ``concise`` mode on a server with a placeholder LLM stores prompt lines;
    ``retain_extraction=chunks`` sets the bank to store what is retained as written."""
    base = f"{hindsight_server.url}/v1/default/banks/{bank_id}"
    httpx.put(base, json={"retain_extraction_mode": "concise"}, timeout=30)
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id, retain_extraction="chunks")
    text = f"The centrifuge in room 3 needs a rotor check every 200 runs {uuid.uuid4().hex[:6]}."
    assert notebook.run(f"%retain {text}").error is None
    notebook.run("hindsight_magic_flushed = __import__('hindsight_magic').flush(30)")
    config = httpx.get(f"{base}/config", timeout=30).json()["config"]
    assert config["retain_extraction_mode"] == "chunks"
    texts = wait_for(
        lambda: [m["text"] for m in httpx.get(f"{base}/memories/list", timeout=30).json()["items"]],
        60,
        "the memory",
    )
    assert texts == [text]  # as written: no prompt line beside it


def test_the_readme_s_map_example_works_on_the_default_server(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """``%hindsight map "Berkeley Lab"``: the entity comes from the memory's own words."""
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id, mental_models="false")
    fact = "Samples from the Berkeley Lab arrive on dry ice every Tuesday."
    assert notebook.run(f"%retain {fact}").error is None
    assert notebook.run("_ = %recall dry ice").error is None  # sent and indexed
    cell = notebook.run('_map = %hindsight map "Berkeley Lab"')
    assert cell.error is None, cell.text
    shown = notebook.ip.user_ns["_map"]
    assert [m.text for m in shown.memories] == [fact]


def test_a_question_asked_in_a_cell_of_code_does_not_outrank_its_answer(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """A cell asking ``%recall`` among its code is retained as its code: asked again, the
    question finds the decision first, not the cell that asked it."""
    notebook.load(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        scoping="global",
        retain_every_n_cells="1",
        mental_models="false",
    )
    question = "which tenure cut-off do we use for churn?"
    cells = [
        "tenure_cutoff_months = 3  # churn: customers under 3 months of tenure are trials, dropped",
        "regions = ['north', 'south', 'east', 'west']  # the four sales regions",
        f"%recall {question}\nmonthly_orders = {{region: 0 for region in regions}}",
    ]
    for source in cells:
        cell = notebook.run(source)
        assert cell.error is None, cell.text
    session = notebook.magics.session
    Driver(session).retain_cells(force=True)
    session.flush(60)

    client = HindsightClient(session.api_url)  # the test's own, to ask the server

    def stored() -> str:  # the cells as the server stores them (a document a cell)
        listed = client.list_memories(bank_id, limit=500).items
        ids = {m.document_id for m in listed if m.document_id}
        texts = [str(d and d.original_text) for d in (client.document(bank_id, i) for i in ids)]
        text = "\n".join(texts)
        return text if "monthly_orders" in text else ""

    text = wait_for(stored, timeout_s=60, what="the question's cell on the server")
    assert question not in text, text
    answer = notebook.run(f"found = __import__('hindsight_magic').recall({question!r})")
    assert answer.error is None, answer.text
    found = notebook.ip.user_ns["found"]
    assert "tenure_cutoff_months = 3" in found[0].text, [m.text for m in found]
