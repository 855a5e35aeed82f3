"""What a recall ranks first and the number shown beside each memory, against the real server.

The bank holds ten short memories of one analysis: decisions, an import cell and a dump of
values, as a newcomer's first notebook leaves them.

- A recall is ordered by the extension's ranking (``reading.ranked``), not by the server's;
  when the number shown was the server's ``scores.final``, #2 could show more than #1. The
  question is one whose order the two rankings disagree on (checked first, so the test keeps
  testing that).
- The import cell and the dump carry nothing a question could be about, and on a bank this
  small they were as close in meaning to a question as the decisions, so they took places in
  the top 5.
- The server returns every memory of so small a bank (a recall sets no similarity bar), and
  the headline called them all relevant: ``Found 10 relevant memories``. It says how many are
  shown and how many match the query, and every form lists as many as it says.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import RunningServer, render_markdown, visible_text

import hindsight_magic as hm
from hindsight_magic._agents.memory import ProjectMemory
from hindsight_magic._api.client import HindsightClient
from hindsight_magic._api.transfers import BankTransfers
from hindsight_magic._operations import AGENT_RECALL
from hindsight_magic._ui.panel.browser import result_rows
from hindsight_magic._ui.panel.html import result_row_html

pytestmark = pytest.mark.integration

MEMORIES = (
    "Churn is defined as no purchase in the last 90 days, agreed with finance.",
    "We drop customers with tenure under 2 months: trial accounts skew the churn rate.",
    "PM2.5 readings above 35 count as exceed days, following the WHO 24-hour guideline.",
    "The dashboard uses a weekly resample; daily is too noisy.",
    "Refunds in Q3 are double-counted in the raw table: dedupe on order_id before joins.",
    "The south region is excluded from the pricing test because of the store closures.",
    "import numpy as np\nimport pandas as pd",
    "r-03 11.532819\nr-07 10.983925\nr-01 10.411102\nr-05 9.870113",
    "The random seed for every simulation is 7.",
    "Spend is modelled with a gamma distribution, shape 2 and scale 40.",
)
QUERY = "what threshold do we use for PM2.5?"
EMPTY = (MEMORIES[6], MEMORIES[7])  # the imports, the dump
QUESTIONS = (  # one about each decision
    QUERY,
    "how is churn defined?",
    "which customers did we drop?",
    "what key do we dedupe on?",
    "why is south excluded?",
)
# the number each form shows beside a memory, whatever the form calls it
SHOWN_NUMBER = re.compile(r"· (?:relevance|score) (\d+\.\d+)")


@pytest.fixture(scope="module")
def bank(hindsight_server: RunningServer) -> Iterator[str]:
    """A bank holding ``MEMORIES`` (retained synchronously: indexed on return)."""
    name = f"test-relevance-{uuid.uuid4().hex[:10]}"
    client = HindsightClient(hindsight_server.url)
    items = [{"content": text, "document_id": f"m{n}"} for n, text in enumerate(MEMORIES)]
    client.retain_batch(name, items, async_=False)
    try:
        yield name
    finally:
        BankTransfers(client).delete_bank(name)
        client.close()


@pytest.fixture
def shell(notebook: Any, hindsight_server: RunningServer, bank: str) -> Any:
    notebook.connect(hindsight_server.url, bank, journal_path="off")
    return notebook


def recall(shell: Any, query: str) -> Any:
    """``%recall query`` in a real shell: the result the user sees."""
    cell = shell.run(f"%recall {query}")
    assert cell.error is None, cell.text
    return cell.result


@pytest.fixture
def result(shell: Any) -> Any:
    return recall(shell, QUERY)


def numbers(lines: list[str]) -> list[float]:
    """The number shown on each line (every line must show one)."""
    found = [SHOWN_NUMBER.search(line) for line in lines]
    assert all(found), lines
    return [float(match.group(1)) for match in found if match]


def cells(row: str) -> list[str]:
    """What a reader sees in each cell of an HTML table row."""
    return [visible_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)]


def assert_falling(shown: list[float], form: str) -> None:
    assert len(shown) >= 3, form
    assert shown == sorted(shown, reverse=True), f"{form}: {shown}"


def test_the_number_shown_beside_each_memory_falls_down_the_list_in_every_form(
    result: Any,
    hindsight_server: RunningServer,
    bank: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    finals = [memory.scores.final for memory in result]
    assert finals != sorted(finals, reverse=True)  # the server's order is not the one shown

    text = [line for line in repr(result).splitlines() if line.startswith("#")]
    assert_falling(numbers(text), "text")

    rendered = render_markdown(result._repr_markdown_())
    items = [visible_text(item) for item in rendered.split("<li>")[1:]]
    assert_falling(numbers(items), "Markdown")

    rows = result._repr_html_().split("<tr>")[2:]  # after the header's
    assert_falling([float(cells(row)[-1]) for row in rows], "HTML")  # the last column

    panel = [result_row_html(row) for row in result_rows(result)]
    assert_falling([float(cells(row)[4]) for row in panel], "panel")  # after memory … tags

    answer = agent_answer(QUERY, hindsight_server, bank, tmp_path, monkeypatch)
    lines = [line for line in answer.splitlines() if re.match(r"#\d+ ", line)]
    assert_falling(numbers(lines), "the agents' recall")


def agent_answer(
    query: str,
    server: RunningServer,
    bank: str,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    **arguments: Any,
) -> str:
    """The text of the agents' ``recall`` tool for ``query``, in a project on ``bank``."""
    for name, value in {
        "API_URL": server.url,
        "BANK_ID": bank,
        "SCOPING": "global",
        "JOURNAL_PATH": "off",
        "MENTAL_MODELS": "false",
        "AUTO_RETAIN": "false",
    }.items():
        monkeypatch.setenv(f"HINDSIGHT_{name}", value)
    agent = ProjectMemory(str(project), open_session=hm.project_session)
    try:
        return agent.recall(agent.request(AGENT_RECALL, {"query": query, **arguments})).text
    finally:
        agent.close()


def test_imports_and_a_dump_of_values_stay_out_of_every_top_5(shell: Any) -> None:
    for question in QUESTIONS:
        top = [memory.text for memory in recall(shell, question)[:5]]
        assert not set(EMPTY) & set(top), (question, top)


def test_the_headline_says_how_many_are_shown_and_how_many_match(
    shell: Any,
    hindsight_server: RunningServer,
    bank: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    question = "how is churn defined?"  # two memories say "churn"; none of the rest is close
    result = recall(shell, question)
    text = repr(result)
    assert text.startswith("5 memories shown; 2 match the query (as of "), text
    assert len(result) == 5
    assert [line.split()[0] for line in text.splitlines() if line.startswith("#")] == [
        f"#{n}" for n in range(1, 6)
    ]
    assert result._repr_html_().count("<tr>") == 1 + 5  # the header's, and one per memory
    assert render_markdown(result._repr_markdown_()).count("<li>") == 5
    assert len(result_rows(result)) == 5
    assert visible_text(result._repr_html_()).startswith("5 memories shown; 2 match the query")

    answer = agent_answer(question, hindsight_server, bank, tmp_path, monkeypatch, max_results=3)
    assert f"For {question!r} in project " in answer
    assert ": 3 memories shown; 2 match the query (as of " in answer
    assert len([line for line in answer.splitlines() if re.match(r"#\d+ ", line)]) == 3
