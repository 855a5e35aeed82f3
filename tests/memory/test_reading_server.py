"""Recall and reflect against the real server: where each memory came from, and what an answer
is based on.

Provenance is checked in a real Jupyter kernel started with the notebook path Jupyter gives it
(``JPY_SESSION_NAME``), through what a front end receives (text/plain and text/html). With the
mock LLM the server also stores prompt noise as facts, so assertions are "contains".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import RunningServer, wait_for
from kernels import Kernel

pytestmark = pytest.mark.integration

NOTEBOOK = "field/fieldwork.ipynb"
AGE = r"(just now|\d+ minutes? ago)"  # a busy server may take a minute to index
SKIP = "# hindsight: skip\n"  # the test's own cells are not part of the notebook's transcript
BUNDLE = (
    SKIP + "import json\n"
    "_r = get_ipython().run_line_magic('recall', {query!r})\n"
    "_b = get_ipython().display_formatter.format(_r)[0]\n"
    "print(json.dumps({{'text': _b['text/plain'], 'html': _b['text/html']}}))"
)


@pytest.fixture
def kernel(tmp_path: Path, hindsight_server: RunningServer, bank_id: str) -> Iterator[Kernel]:
    env = {
        "HINDSIGHT_API_URL": hindsight_server.url,
        "HINDSIGHT_BANK_ID": bank_id,
        "HINDSIGHT_JOURNAL_PATH": str(tmp_path / "journal.db"),
        "HINDSIGHT_MENTAL_MODELS": "false",  # not needed here: less work for a busy server
        "JPY_SESSION_NAME": str(tmp_path / NOTEBOOK),  # as Jupyter Server starts a kernel
    }
    started = Kernel(env, tmp_path)
    try:
        yield started
    finally:
        started.close()


def cell_number(kernel: Kernel) -> int:
    """The number the next cell will get (In [N]): this one's, plus one."""
    return int(
        kernel.run(SKIP + "print(len(get_ipython().history_manager.input_hist_raw))").strip()
    )


def recall_bundle(kernel: Kernel, query: str) -> dict[str, str]:
    """What a front end receives for ``%recall query``: its text/plain and text/html."""
    bundle: dict[str, str] = json.loads(kernel.run(BUNDLE.format(query=query)))
    return bundle


def found(kernel: Kernel, query: str, text: str) -> dict[str, str] | None:
    bundle = recall_bundle(kernel, query)
    return bundle if text in bundle["text"] else None


def line_of(bundle: dict[str, str], text: str) -> str:
    return next(line for line in bundle["text"].splitlines() if text in line)


def test_retained_and_auto_retained_memories_say_where_they_came_from(
    kernel: Kernel, tmp_path: Path
) -> None:
    assert "Error" not in kernel.run("%load_ext hindsight_magic")
    retain_cell = cell_number(kernel)
    fact = "The field station freezer holds ice cores at minus eighty degrees."
    assert kernel.run(f"%retain --tags lab,cold {fact}") == "1 memory queued."
    first = cell_number(kernel)
    kernel.run("# The penguin colony on the east ridge counted 340 nests this season.\nnests = 340")
    kernel.run("ridge = 'east'")
    kernel.run("season = 2025")  # the third counted cell: the three are queued, a memory each

    bundle = wait_for(lambda: found(kernel, "freezer ice cores", fact), 120, "the %retain fact")
    line = line_of(bundle, fact)
    assert re.fullmatch(
        rf"#\d+ {re.escape(fact)} \[world\] — fieldwork\.ipynb · cell {retain_cell} · {AGE}"
        r" · tags: .*\blab\b.* · relevance \d\.\d\d",
        line,
    ), line
    row = next(r for r in bundle["html"].split("<tr>") if fact in r)
    assert re.search(rf"fieldwork\.ipynb · cell {retain_cell} · {AGE}</td>", row), row
    assert f"{Path(NOTEBOOK).name}'" in row  # the notebook, in the cell's tooltip
    assert "cold" in row
    assert re.search(r"<td>\d\.\d\d</td></tr>", row)  # the relevance

    penguins = "penguin colony on the east ridge"
    bundle = wait_for(lambda: found(kernel, "penguin colony nests", penguins), 120, "the cells")
    line = line_of(bundle, penguins)
    assert re.search(rf"— fieldwork\.ipynb · cell {first} · {AGE} · tags: ", line), line
    row = next(r for r in bundle["html"].split("<tr>") if penguins in r)
    assert re.search(rf"fieldwork\.ipynb · cell {first} · {AGE}</td>", row), row

    fields = kernel.run(
        f"{SKIP}r = %recall penguin colony nests\n"
        f"p = next(m for m in r if {penguins!r} in m.text).provenance\n"
        "print(p.notebook, p.cells, p.source, p.kernel_session == get_ipython()"
        ".magics_manager.registry['HindsightMagics'].session.session_id)"
    )
    # the notebook by its name (no git repository around it): never the absolute path
    assert fields.strip() == f"{Path(NOTEBOOK).name} ({first},) autoretain True"
    assert str(tmp_path) not in fields


def test_reflect_shows_what_its_answer_is_based_on(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    notebook.run("%retain The ice cores are stored at minus eighty degrees in freezer B.")
    notebook.run("%retain We log freezer temperatures every Monday morning.")
    notebook.run("%hindsight flush")
    refreshed = notebook.run("%hindsight models refresh")  # the seeds draw on the memories
    assert refreshed.error is None, refreshed.text

    cell = notebook.run("%%reflect --var answer\nHow are the ice cores stored?")
    assert cell.error is None, cell.text
    answer = cell.result
    assert str(answer) == "mock response"  # the answer itself is the str
    based_on = answer.based_on
    assert len(based_on.memories) + len(based_on.mental_models) >= 1
    text = repr(answer)
    assert text.startswith("mock response\n\nBased on (")
    if based_on.memories:
        assert "  Memories:\n    - " in text
        assert any(m.provenance.source == "%retain" for m in based_on.memories)
    markdown = answer._repr_markdown_()
    assert markdown.startswith("mock response\n\n<details><summary><b>Based on</b>")
    assert notebook.ip.user_ns["answer"] is answer

    hidden = notebook.run("%%reflect --no-sources\nHow are the ice cores stored?")
    assert hidden.error is None, hidden.text
    assert hidden.result.based_on is None
    assert repr(hidden.result) == "mock response"
    assert "Based on" not in hidden.result._repr_markdown_()


def test_the_python_api_reflects_with_and_without_sources(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    import hindsight_magic as hm

    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    fact = "Freezer B is serviced by the facilities team every March."
    hm.retain(fact)
    wait_for(lambda: fact in hm.recall("freezer B serviced").texts, 120, "the fact indexed")
    answer = hm.reflect("When is freezer B serviced?")
    assert answer.based_on is not None
    assert len(answer.based_on) >= 1  # the memory (or a model drawn from it)
    assert "\n\nBased on (" in repr(answer)
    assert hm.reflect("When is freezer B serviced?", sources=False).based_on is None


def test_a_memory_shows_one_provenance_whatever_path_recalled_it(kernel: Kernel) -> None:
    """The same stored memory said ``try.ipynb · run … · cell 5`` in one ``%recall`` and
    ``document hm-79b4…-4`` in another (a ``--since`` recall, a script's ``hm.recall``)."""
    kernel.run("%load_ext hindsight_magic")
    kernel.run("%retain The walrus census moved to drones in March.")
    kernel.run("# the narwhal tusk survey happens on Thursdays now\nsurvey_day = 'Thursday'")
    kernel.run("tusks = 12")
    kernel.run("pods = 3")  # the third counted cell: the cells above go, a memory each
    ways = {
        "%recall": "r = %recall {q}",
        "%recall --since": "r = %recall --since 1d {q}",
        "hm.recall": "import hindsight_magic as hm; r = hm.recall({q!r})",
        "hm.recall(since=)": "import hindsight_magic as hm; r = hm.recall({q!r}, since='1d')",
        "hm.latest": "import hindsight_magic as hm; r = hm.latest(20)",
    }
    for query, word in (("walrus census drones", "walrus"), ("narwhal tusk survey", "narwhal")):
        seen = {}
        for way, source in ways.items():
            code = (
                f"{SKIP}{source.format(q=query)}\n"
                f"print(next(m.provenance_line() for m in r if {word!r} in m.text))"
            )
            seen[way] = wait_for(
                lambda code=code: kernel.run(code).strip().splitlines()[-1],
                120,
                way,
                until=lambda line: "fieldwork.ipynb" in line,
            )
        lines = {re.sub(AGE, "AGE", line) for line in seen.values()}
        assert len(lines) == 1, seen
        assert re.fullmatch(r"fieldwork\.ipynb · cell \d+ · AGE", lines.pop()), seen
