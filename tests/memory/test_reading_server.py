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

import httpx
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


def test_without_an_llm_reflect_says_so_and_shows_the_memories_that_answer(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """The local server runs Hindsight's mock LLM, whose answer to everything is ``mock
    response``: never shown. One line says no answer was written and how to get one; the
    memories that bear on the question follow, best first, each with the lines that answer
    it and where it came from, and ``#N`` names them."""
    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    fact = "The ice cores are stored at minus eighty degrees in freezer B."
    notebook.run(f"%retain {fact}")
    notebook.run("%retain We log freezer temperatures every Monday morning.")

    cell = notebook.run("%%reflect --var answer\nHow are the ice cores stored?")
    assert cell.error is None, cell.text
    answer = cell.result
    assert notebook.ip.user_ns["answer"] is answer
    assert not answer.answered
    line = str(answer)
    assert "\n" not in line
    assert line.startswith(
        "No answer was written: the local Hindsight server runs without an LLM (mock). Below, "
        "the memories that bear on the question, best first; "
    ), line
    assert line.endswith(
        "hindsight-magic server start --llm openai (or anthropic, gemini, groq, ollama, lmstudio)."
    )
    text, markdown = repr(answer), answer._repr_markdown_()
    for shown in (text, markdown):
        assert "mock response" not in shown
    assert text.startswith(f"{line}\n\n")
    first = text.split("\n#1 ", 1)[1].split("\n", 1)[0]
    assert re.fullmatch(
        rf"{re.escape(fact)} \[world\] — cell \d+ · {AGE} · tags: .* · relevance \d\.\d\d", first
    ), first
    assert markdown.startswith("_No answer was written")
    assert "- **#1** The ice cores are stored" in markdown
    assert answer.based_on.memories[0].text == fact
    assert answer.based_on.memories[0].provenance.source == "%retain"

    forgotten = notebook.run("%hindsight forget #1")  # #1 is the memory shown first
    assert forgotten.error is None, forgotten.text
    again = notebook.run("%%reflect --no-sources\nHow are the ice cores stored?").result
    assert not again.answered
    assert fact not in repr(again)


def test_the_python_api_reflects_with_and_without_sources(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    import hindsight_magic as hm

    notebook.load(api_url=hindsight_server.url, bank_id=bank_id)
    fact = "Freezer B is serviced by the facilities team every March."
    hm.retain(fact)
    wait_for(lambda: fact in hm.recall("freezer B serviced").texts, 120, "the fact indexed")
    answer = hm.reflect("When is freezer B serviced?")
    assert not answer.answered  # the local server has no LLM
    assert answer.based_on is not None
    assert answer.based_on.memories[0].text == fact
    assert answer.recalled is not None
    assert answer.recalled.texts[0] == fact
    assert hm.reflect("When is freezer B serviced?", sources=False).based_on is not None


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


class FailingReflect(httpx.BaseTransport):
    """The real server, except that a reflect answers ``status`` with ``detail``: what a
    server whose provider is ``none``, or whose provider failed, answers."""

    def __init__(self, status: int, detail: str) -> None:
        self._status, self._detail = status, detail
        self._real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/reflect"):
            return httpx.Response(self._status, json={"detail": self._detail})
        return self._real.handle_request(request)

    def close(self) -> None:
        self._real.close()


NONE_DETAIL = (  # Hindsight 1.1.0's words when its provider is ``none``
    "LLM provider is set to 'none'. This operation requires an LLM. Set "
    "HINDSIGHT_API_LLM_PROVIDER to a real provider (e.g., openai, anthropic, gemini)."
)
REFUSED_DETAIL = (  # a provider that refused the server's key, quoting it as OpenAI does
    "Connection verification failed for openai/gpt-4o-mini: Error code: 401 - {'error': "
    "{'message': 'Incorrect API key provided: sk-proj-h7plantedkey1234.'}}"
)


@pytest.mark.parametrize(
    ("transport", "why", "how"),
    [
        (
            None,  # the real server: its reply is the mock's text
            "the Hindsight server runs without an LLM (mock)",
            "for written answers, the server needs an LLM (HINDSIGHT_API_LLM_PROVIDER)",
        ),
        (
            FailingReflect(400, NONE_DETAIL),
            "the Hindsight server runs without an LLM (none)",
            "for written answers, the server needs an LLM (HINDSIGHT_API_LLM_PROVIDER)",
        ),
        (
            FailingReflect(500, REFUSED_DETAIL),
            "the server's LLM failed (HTTP 500)",
            "hindsight-magic doctor says what it lacks",
        ),
    ],
    ids=["mock-text", "provider-none", "provider-failed"],
)
def test_a_server_elsewhere_that_cannot_answer_shows_the_memories(
    monkeypatch: pytest.MonkeyPatch,
    hindsight_server: RunningServer,
    bank_id: str,
    transport: httpx.BaseTransport | None,
    why: str,
    how: str,
) -> None:
    """A server on another machine: nothing here records its LLM, so its reply tells."""
    import hindsight_magic as hm
    from hindsight_magic._memory import llm
    from hindsight_magic._session import HindsightSession
    from hindsight_magic._settings import HindsightSettings

    monkeypatch.setattr(llm, "local_server", lambda url: None)  # not on this machine
    settings = HindsightSettings(
        api_url=hindsight_server.url,
        bank_id=bank_id,
        scoping="global",
        journal_path="off",
        mental_models=False,
    )
    session = HindsightSession(settings, transport=transport)
    fact = "The drill log is kept in the blue binder on shelf three."
    try:
        hm.retain(fact, wait=120, session=session)
        answer = hm.reflect("Where is the drill log kept?", session=session)
    finally:
        session.close()
    assert not answer.answered
    assert str(answer) == (
        f"No answer was written: {why}. Below, the memories that bear on the question, best "
        f"first; {how}."
    )
    shown = repr(answer)
    assert "mock response" not in shown
    assert "sk-proj" not in shown  # the provider's words may quote the key: never shown
    assert answer.based_on is not None
    assert answer.based_on.memories[0].text == fact
    assert f"#1 {fact} [world]" in shown


TURNS = (  # a conversation retained turn by turn; the answer names none of the question's words
    "Melanie: How was the pottery class on Saturday?",
    "Caroline: Messy but fun, I made a lopsided bowl.",
    "Melanie: Did you finish the painting for your mum?",
    "Caroline: Almost, the sky still needs a second coat.",
    "Melanie: I never asked you: where did you grow up, before you came to Boston?",
    "Caroline: Sweden, a small town near Gothenburg. We left when I was ten.",
    "Melanie: Nice. The kids want to go camping again next month.",
    "Caroline: Take them to the lake, the one with the big rocks.",
    "Melanie: Good idea, the campsite there has showers now.",
    "Caroline: My running club meets on Thursdays now.",
)


def test_a_turn_is_found_by_the_question_it_answers(
    hindsight_server: RunningServer, bank_id: str, tmp_path: Path
) -> None:
    """A transcript retained turn by turn: "Sweden, near Gothenburg" answers "where did
    Caroline grow up?" only with the turn before it. Each memory carries the end of the one
    retained before it, and recall's keyword score reads both, so the answer comes first, not
    the question that shares its words."""
    import hindsight_magic as hm

    journal = str(tmp_path / "journal.sqlite3")
    settings = hm.Settings(api_url=hindsight_server.url, bank_id=bank_id, journal_path=journal)
    with hm.Session(settings) as session:
        for turn in TURNS:
            hm.retain(turn, session=session)
        hm.flush(120, session=session)
        answer = TURNS[5]

        def first() -> str | None:
            shown = hm.recall("Where did Caroline grow up?", limit=1, session=session)
            return shown[0].text if len(shown) and shown[0].text == answer else None

        assert wait_for(first, timeout_s=60) == answer
        shown = str(hm.recall("Where did Caroline grow up?", limit=1, session=session))
        assert answer in shown
        assert TURNS[4] not in shown  # what it carries is not shown
        everything = hm.recall("pottery class bowl painting", limit=20, session=session)
        carried = {m.text: (m.metadata or {}).get("before") for m in everything}
        assert carried[TURNS[0]] is None  # the first had nothing before it
        assert carried[TURNS[1]] == TURNS[0]


def test_only_memories_retained_in_a_row_carry_the_one_before(
    notebook: Any, hindsight_server: RunningServer, bank_id: str
) -> None:
    """Two notes retained in one cell are read together; decisions retained in different
    cells are separate thoughts and carry nothing of each other (lent a neighbour's words,
    they pushed memories found by meaning alone out of the top 5)."""
    import hindsight_magic as hm

    notebook.connect(hindsight_server.url, bank_id)
    first, second, apart = (f"{word} note about the freezer log" for word in ("1st", "2nd", "3rd"))
    both = f"hm.retain({first!r})\nhm.retain({second!r})"
    cell = notebook.run(f"import hindsight_magic as hm\n{both}")
    assert cell.error is None, cell.text
    assert notebook.run(f"%retain {apart}").error is None
    notebook.run("hm.flush(60)")

    def carried() -> dict[str, str | None] | None:
        shown = hm.recall("freezer log note", limit=10)
        found = {m.text: (m.metadata or {}).get("before") for m in shown}
        return found if len(found) == 3 else None

    found = wait_for(carried, timeout_s=60)
    assert found == {first: None, second: first, apart: None}
