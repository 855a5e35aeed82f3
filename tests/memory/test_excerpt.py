"""What a recall shows of a memory: a one-line memory whole, a notebook cell by the lines that
answer the query, with the whole cell one click (or ``.text``) away."""

from __future__ import annotations

from hindsight_magic import RecalledMemory, RecallResult
from hindsight_magic._memory.excerpt import EXCERPT_CHARS, carries_nothing, excerpt

CELL = """[cell 14]
import statistics
from datetime import date
# drop sessions under 5 s: they are the uptime bot
MIN_SESSION_S = 5  # bot pings are shorter
visits = [v for v in visits if v['duration_s'] >= MIN_SESSION_S]
print(len(visits), 'visits kept')
[result]
412"""


def test_the_line_sharing_the_query_s_words_is_shown_with_its_neighbours() -> None:
    shown = excerpt(CELL, "what did we decide about very short sessions?")
    assert shown.lines == (  # "sessions" and "short" in the best line, with the lines around
        "# drop sessions under 5 s: they are the uptime bot",
        "MIN_SESSION_S = 5  # bot pings are shorter",
        "visits = [v for v in visits if v['duration_s'] >= MIN_SESSION_S]",
    )
    assert shown.cut
    assert shown.one_line().endswith(" …")


def test_a_paraphrase_with_no_shared_word_shows_the_cell_s_beginning() -> None:
    shown = excerpt(CELL, "bananas")
    assert shown.lines[0] == "import statistics"  # the bookkeeping line is never shown
    assert all(not line.startswith("[cell") for line in shown.lines)


def test_a_one_line_memory_is_shown_whole() -> None:
    text = "The churn table double-counts Q3 refunds; dedupe on order_id before joins."
    assert excerpt(text, "refunds").lines == (text,)
    assert not excerpt(text, "refunds").cut


def test_a_very_long_line_is_cut_to_the_excerpt_s_length() -> None:
    shown = excerpt("x" * 5000, "x")
    assert len(shown.lines[0]) == EXCERPT_CHARS
    assert shown.cut


def test_every_form_shows_the_best_lines_and_the_notebook_form_keeps_all() -> None:
    metadata = {"cells": "14", "notebook": "visits.ipynb"}
    result = RecallResult(
        "short sessions",
        [RecalledMemory.model_validate({"id": "m1", "text": CELL, "metadata": metadata})],
        "bank",
    )
    text, markdown, page = repr(result), result._repr_markdown_(), result._repr_html_()
    for form in (text, markdown, page):
        assert "drop sessions under 5 s" in form
    assert "visits.ipynb · cell 14" in text
    assert "import statistics" not in text  # the rest of the cell is not shown …
    assert "<details><summary>" in page  # … but in a notebook it is one click away
    assert "import statistics" in page
    assert result[0].text == CELL


def test_imports_alone_and_bare_values_carry_nothing() -> None:
    for text in (
        "[cell 2]\nimport numpy as np\nimport pandas as pd",
        "%matplotlib inline\nfrom sklearn.model_selection import (\n    KFold,\n    shuffle,\n)",
        "[cell 7, part 2 of 2]\nr-03    11.532819\nr-07    10.983925\nr-01    10.411102",
        "[cell 9]\nx\n[result]\narray([0.12, 0.53, 0.98], dtype=float32)",
    ):
        assert carries_nothing(text), text


def test_a_word_of_its_own_carries_something() -> None:
    for text in (
        CELL,
        "import numpy as np  # numpy, not polars: the cluster has no Arrow",  # a comment says why
        "[cell 3]\nscores.tail()\n[result]\nr-03    11.532819",  # what the values are
        "north    3564.37\nsouth    5099.42",  # values by name
        "[cell 1]\nimport os\n[cell 2]\nCHURN_DAYS = 90",  # two cells in one memory
    ):
        assert not carries_nothing(text), text
