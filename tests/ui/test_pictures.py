"""The timeline and map pictures and tables, from counts made here (the server tests are in
tests/memory/test_overview_server.py): periods, hostile names, and life without matplotlib."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from datetime import date

import pytest

from hindsight_magic._memory.overview import (
    EntityMap,
    MapEdge,
    MapNode,
    OverviewError,
    Period,
    TimelineCounts,
    check_period,
    choose_period,
    counted_by_day,
    next_period,
    period_start,
)
from hindsight_magic._ui import pictures
from hindsight_magic._ui.pictures import HINT, MemoryMap, Timeline

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE = "$\\frac{1}{$ <script>alert(1)</script>\x1b[31m"


def counts(per_day: dict[tuple[date, str, str], int], by: str | None = None) -> TimelineCounts:
    return counted_by_day("bank-x", Counter(per_day), by, None)


def test_periods_start_on_mondays_and_firsts() -> None:
    wednesday = date(2026, 11, 4)
    assert period_start(wednesday, "week") == date(2026, 11, 2)
    assert period_start(wednesday, "month") == date(2026, 11, 1)
    assert next_period(date(2026, 12, 1), "month") == date(2027, 1, 1)
    assert next_period(date(2026, 1, 31), "day") == date(2026, 2, 1)
    assert choose_period(date(2026, 1, 1), date(2026, 2, 15)) == "day"
    assert choose_period(date(2026, 1, 1), date(2026, 9, 1)) == "week"
    assert choose_period(date(2024, 1, 1), date(2026, 9, 1)) == "month"


def test_a_period_is_a_member_of_its_vocabulary_and_a_wrong_one_is_one_line() -> None:
    assert check_period("week") is Period.WEEK
    assert check_period(None) is None
    assert choose_period(date(2026, 1, 1), date(2026, 2, 15)) is Period.DAY
    assert counts({(date(2026, 11, 2), "world", "a.ipynb"): 2}).by is Period.DAY
    with pytest.raises(OverviewError, match=r"^Unknown period 'year': use day, week or month\.$"):
        check_period("year")


def test_the_title_says_which_of_the_bank_s_memories_were_counted() -> None:
    """A project's timeline counts its memories (and the untagged), not the whole bank's."""
    from dataclasses import replace

    from hindsight_magic._memory.overview import scope_phrase
    from hindsight_magic._memory.scope import compute_scope

    made = counts({(date(2026, 11, 2), "world", "a.ipynb"): 2}, by="week")
    assert made.describe().startswith("2 memories in bank bank-x, per week")  # global: all
    tagged = compute_scope("per-project-tagged", "bank-x", "", "churn")
    assert scope_phrase(tagged) == "tagged project:churn, or untagged"
    assert scope_phrase(compute_scope("global", "bank-x", "", "churn")) == ""
    titled = replace(made, counted=scope_phrase(tagged))
    assert titled.describe().startswith(
        "2 memories in bank bank-x (tagged project:churn, or untagged), per week"
    )


def test_counts_roll_up_into_weeks_with_every_week_present() -> None:
    made = counts(
        {
            (date(2026, 11, 2), "world", "a.ipynb"): 2,
            (date(2026, 11, 4), "world", "a.ipynb"): 3,
            (date(2026, 11, 20), "observation", "(consolidated)"): 1,
        },
        by="week",
    )
    assert made.periods[:3] == (date(2026, 11, 2), date(2026, 11, 9), date(2026, 11, 16))
    table = made.per_type()
    assert table[date(2026, 11, 2)]["world"] == 5
    assert not table[date(2026, 11, 9)]
    assert made.total == 6
    assert made.notebooks() == [("a.ipynb", 5), ("(consolidated)", 1)]


def test_hostile_names_are_drawn_as_written_and_stay_text() -> None:
    timeline = Timeline(counts({(date(2026, 11, 2), "world", HOSTILE): 4}))
    bundle = timeline._repr_mimebundle_()
    assert bundle["image/png"].startswith(PNG_MAGIC)
    svg = bundle["image/svg+xml"]
    assert ET.fromstring(svg).tag.endswith("svg")
    assert "<script" not in svg
    assert "\x1b" not in bundle["text/plain"]
    assert "<script>alert(1)</script>" in bundle["text/plain"]  # plain text shows it as written

    nodes = (MapNode("e1", HOSTILE, 5), MapNode("e2", "Berkeley", 3))
    memory_map = MemoryMap(EntityMap("bank-x", nodes, (MapEdge("e1", "e2", 2),), 2))
    bundle = memory_map._repr_mimebundle_()
    assert bundle["image/png"].startswith(PNG_MAGIC)
    assert "<script" not in bundle["image/svg+xml"]
    assert "Berkeley (2)" in bundle["text/plain"]


def test_without_matplotlib_the_table_shows_with_one_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pictures, "missing", lambda *modules: modules[-1])
    timeline = Timeline(counts({(date(2026, 11, 2), "world", "a.ipynb"): 4}))
    bundle = timeline._repr_mimebundle_()
    assert list(bundle) == ["text/plain"]
    assert bundle["text/plain"].endswith(f"({HINT}.)")
    assert bundle["text/plain"].count(HINT) == 1
    assert "a.ipynb" in repr(timeline)


def test_an_empty_timeline_is_a_sentence_in_a_figure() -> None:
    empty = Timeline(counts({}))
    assert "No memories in bank bank-x" in empty.text()
    assert empty.png().startswith(PNG_MAGIC)
    assert empty.rows == []


@pytest.mark.parametrize("bank", ["$^$", "a$\\frac{1}{$b", HOSTILE])
def test_an_empty_bank_with_a_formula_in_its_name_still_draws(bank: str) -> None:
    """Mathtext is off on the empty path too: a bank named ``$^$`` is a name, not a formula."""
    empty = counted_by_day(bank, Counter(), None, None)
    for picture in (Timeline(empty), MemoryMap(EntityMap(bank, (), (), 0))):
        assert picture.png().startswith(PNG_MAGIC)
        ET.fromstring(picture.svg())


def test_did_you_mean_shows_no_control_or_bidi_characters() -> None:
    from hindsight_magic._memory.overview import BankOverview, OverviewError

    spoof = "Berkeley\u202eLab\x1b[31m"
    nodes = [MapNode("e1", spoof, 3), MapNode("e2", "Mill Pond", 2)]
    with pytest.raises(OverviewError) as refused:
        BankOverview.find_entity("Berkeley Lab", nodes, 2)
    message = str(refused.value)
    assert "did you mean" in message
    assert "\u202e" not in message
    assert "\x1b" not in message


def test_a_listed_memory_s_fact_type_is_a_member_and_an_unknown_one_counts_as_world() -> None:
    from hindsight_magic._api.replies import MemoryUnit
    from hindsight_magic._api.vocabulary import FactType
    from hindsight_magic._memory.overview import CONSOLIDATED, _fact_type, _notebook

    def listed(**fields: str) -> MemoryUnit:
        return MemoryUnit.model_validate({"id": "m1", **fields})

    assert _fact_type(listed(fact_type="observation")) is FactType.OBSERVATION
    assert _fact_type(listed(type="experience")) is FactType.EXPERIENCE
    assert _fact_type(listed(type="opinion")) is FactType.WORLD
    assert _notebook(listed(type="observation")) == CONSOLIDATED


def test_changed_data_marks_show_a_hostile_path_as_text_in_every_form() -> None:
    """The paths under the mark come from the server's metadata: the table shows them as
    written, without control characters; the figure never names them; the panel escapes
    them."""
    from dataclasses import replace

    from hindsight_magic._ui.panel.figures import FigureView
    from hindsight_magic._ui.panel.html import figure_caption_html, figure_text_html

    day = date(2026, 11, 2)
    made = counts({(day, "world", "a.ipynb"): 4}, by="day")
    files = (f"data/{HOSTILE}.csv", "data/b.csv", "data/c.csv", "data/d.csv")
    timeline = Timeline(replace(made, data_changed=((day, 2),), changed_files=files))
    bundle = timeline._repr_mimebundle_()
    text = bundle["text/plain"]
    assert "\x1b" not in text
    assert "2 memories rest on data that changed since the cell read it (data/$" in text
    assert "<script>alert(1)</script>" in text  # plain text shows it as written
    assert "data/c.csv and 1 more file): %hindsight verify lists them" in text
    assert "<script" not in bundle["image/svg+xml"]
    assert bundle["image/png"].startswith(PNG_MAGIC)
    view = FigureView(text=timeline.text(), caption=timeline.counts.describe())
    shown = figure_text_html(view) + figure_caption_html(view)
    assert "<script" not in shown
    assert "&lt;script&gt;" in shown
    assert "per day; 2 with changed data" in shown
