"""Result objects: what a user sees as text, HTML and Markdown."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from helpers import render_markdown, visible_text

from hindsight_magic._api.replies import Memory, Scores
from hindsight_magic._memory.parsed_replies import RecalledMemory
from hindsight_magic._memory.results import (
    NO_MEMORIES,
    NO_REFLECTION,
    RECALL_PREAMBLE,
    RecallResult,
    ReflectResult,
)
from hindsight_magic._text import (
    local_clock,
    local_second,
    local_timestamp,
    parse_iso,
    plural,
    utc_minute,
    utc_minute_text,
)
from hindsight_magic._ui.display import Message, Report, RetainResult

AS_OF = datetime(2024, 3, 5, 14, 7, 59, tzinfo=timezone.utc)
EVIL = "<script>alert('x')</script>"


def memories() -> list[Memory]:
    return [
        Memory(text="Revenue fell 3% in Q3", type="world", mentioned_at="2024-03-01T09:30:00Z"),
        Memory(text="User prefers polars", type="experience"),
        Memory(text="Plain fact"),
    ]


def recall(items: list[Memory] | None = None, matched: int = 14) -> RecallResult:
    """A recall showing ``items`` (``memories()``) of the ``matched`` that match its query."""
    shown = memories() if items is None else items
    return RecallResult("revenue", shown, "jupyter", AS_OF, matched=matched)


# -- RecallResult text ----------------------------------------------------------------------------


def test_empty_recall_says_nothing_found() -> None:
    result = recall([])
    assert repr(result) == "No relevant memories found."
    assert str(result) == NO_MEMORIES
    assert result.headline() == NO_MEMORIES
    assert result.as_context() == ""
    assert len(result) == 0
    assert result.texts == []
    assert not result


def test_recall_text_headline_and_bullets() -> None:
    text = repr(recall())
    assert text == (
        "3 memories shown; 14 match the query (as of 2024-03-05 14:07 UTC):\n\n"
        "#1 Revenue fell 3% in Q3 [world] — 4 days ago\n\n"
        "#2 User prefers polars [experience]\n\n"
        "#3 Plain fact"
    )
    assert str(recall()) == text


def test_single_memory_headline_is_singular() -> None:
    result = recall([Memory(text="only one")], matched=1)
    assert result.headline() == "1 memory shown; 1 matches the query (as of 2024-03-05 14:07 UTC):"
    assert repr(result) == f"{result.headline()}\n\n#1 only one"


def test_the_headline_says_when_fewer_than_shown_or_none_match() -> None:
    # a small bank: every memory comes back, and only some have to do with the query
    assert recall(matched=2).headline().startswith("3 memories shown; 2 match the query (as of")
    assert recall(matched=0).headline().startswith("3 memories shown; none matches the query")
    newest = RecallResult("(the newest memories)", memories(), "jupyter", AS_OF)
    assert newest.headline() == "3 memories shown (as of 2024-03-05 14:07 UTC):"  # no query


def test_headline_time_is_utc() -> None:
    plus_two = datetime(2024, 3, 5, 16, 7, tzinfo=timezone(timedelta(hours=2)))
    result = RecallResult("q", [Memory(text="t")], "b", plus_two)
    assert "(as of 2024-03-05 14:07 UTC)" in result.headline()


def test_default_as_of_is_now() -> None:
    before = utc_minute()
    result = RecallResult("q", [Memory(text="t")], "b")
    after = utc_minute()
    assert result.as_of.tzinfo is not None
    assert any(f"(as of {stamp} UTC)" in result.headline() for stamp in (before, after))


def test_as_context_block() -> None:
    context = recall().as_context()
    assert context == (
        "<memories>\n"
        f"{RECALL_PREAMBLE}\n"
        "Current time: 2024-03-05 14:07 UTC\n\n"
        "- Revenue fell 3% in Q3 [world] (2024-03-01T09:30:00Z)\n\n"
        "- User prefers polars [experience]\n\n"
        "- Plain fact\n"
        "</memories>"
    )
    assert RECALL_PREAMBLE.startswith("Relevant memories from past conversations")
    assert RECALL_PREAMBLE.endswith("ignore the rest:")


# -- RecallResult as a sequence -------------------------------------------------------------------


def test_recall_is_a_sequence_of_memories() -> None:
    result = recall()
    assert len(result) == 3
    assert result[0].text == "Revenue fell 3% in Q3"
    assert result[-1].text == "Plain fact"
    assert [m.text for m in result[1:]] == ["User prefers polars", "Plain fact"]
    assert [m.text for m in result] == result.texts
    assert result.texts == ["Revenue fell 3% in Q3", "User prefers polars", "Plain fact"]
    assert result[1] in result
    assert next(reversed(result)).text == "Plain fact"
    assert result.index(result[2]) == 2
    with pytest.raises(IndexError):
        result[3]
    assert result.query == "revenue"
    assert result.bank_id == "jupyter"


def test_recall_copies_the_input_list() -> None:
    items = memories()
    result = recall(items)
    items.clear()
    assert len(result) == 3


# -- RecallResult HTML ----------------------------------------------------------------------------


def test_html_empty() -> None:
    assert recall([])._repr_html_() == "<p>No relevant memories found.</p>"


def test_html_table_contents() -> None:
    result = recall(
        [
            RecalledMemory(
                text="Revenue fell",
                type="world",
                mentioned_at="2024-03-01T11:30:00+02:00",
                tags=["project:a", "x"],
                scores=Scores(final=0.87654),
                relevance=0.61234,
            )
        ]
    )
    page = result._repr_html_()
    assert page.startswith(
        "<p>1 memory shown; 14 match the query (as of 2024-03-05 14:07 UTC):</p>"
    )
    assert "<td style='text-align:left'>Revenue fell</td>" in page
    assert "<td>world</td>" in page
    assert "title='2024-03-01 09:30 UTC'>4 days ago</td>" in page  # converted to UTC
    assert "<td>project:a, x</td>" in page
    assert "<td>0.61</td>" in page  # the relevance the rows are ordered by, not the server's
    assert page.count("<tr>") == 2  # header + one row


def test_html_unparsable_time_is_shown_as_is() -> None:
    page = recall([Memory(text="t", mentioned_at="last Tuesday")])._repr_html_()
    assert ">last Tuesday</td>" in page


def test_html_escapes_text_tags_and_type() -> None:
    result = recall([Memory(text=EVIL, type="<b>w</b>", tags=[EVIL], mentioned_at="<i>")])
    page = result._repr_html_()
    assert "<script>" not in page
    assert "<b>w</b>" not in page
    assert "<i>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;b&gt;w&lt;/b&gt;" in page
    assert page.count("&lt;script&gt;") == 2  # the text and the tag


def test_text_repr_is_not_escaped() -> None:
    # Plain text is shown as-is: escaping belongs only to the HTML form.
    assert "#1 <script>alert('x')</script>" in repr(recall([Memory(text=EVIL)]))


# -- ReflectResult --------------------------------------------------------------------------------


@pytest.mark.parametrize("blank", ["", "   ", "\n\t "])
def test_blank_reflection(blank: str) -> None:
    result = ReflectResult(blank, query="why?")
    assert result == "No relevant information found to reflect on."
    assert result == NO_REFLECTION
    assert repr(result) == NO_REFLECTION


def test_reflect_result_is_a_str() -> None:
    result = ReflectResult("  The answer is 42.\n", query="q")
    assert isinstance(result, str)
    assert result == "The answer is 42."
    assert repr(result) == "The answer is 42."
    assert result.upper() == "THE ANSWER IS 42."
    assert "42" in result
    assert result.query == "q"
    assert result.based_on is None  # sources not asked for


def test_reflect_markdown_escapes_html() -> None:
    result = ReflectResult("Use <b>bold</b> & **markdown** <script>x</script>")
    page = render_markdown(result._repr_markdown_())
    assert "<b>" not in page
    assert "<script" not in page
    assert "<strong>markdown</strong>" in page  # Markdown itself still renders
    assert "Use <b>bold</b> & markdown <script>x</script>" in visible_text(page)
    assert str(result) == "Use <b>bold</b> & **markdown** <script>x</script>"


# -- Report ---------------------------------------------------------------------------------------


def test_report_text() -> None:
    report = Report("hindsight_magic status")
    report.add("Server", [("url", "http://localhost:8899"), ("api key", "(not set)")])
    report.add("", [("bank", "jupyter")])
    report.footer = "Run %hindsight help for commands."
    assert repr(report) == (
        "hindsight_magic status\n"
        "Server:\n"
        "  url      http://localhost:8899\n"
        "  api key  (not set)\n"
        "  bank  jupyter\n"
        "Run %hindsight help for commands."
    )
    assert str(report) == repr(report)


def test_report_empty_section_and_no_footer() -> None:
    report = Report("Title", [("Empty", [])])
    assert repr(report) == "Title\nEmpty:"


def test_report_html_escapes_everything() -> None:
    report = Report(EVIL, footer="<i>foot</i>")
    report.add("<h1>head</h1>", [("<b>label</b>", EVIL)])
    page = report._repr_html_()
    assert "<script>" not in page
    assert "<b>label</b>" not in page
    assert "<h1>" not in page
    assert "<i>foot</i>" not in page
    assert "&lt;b&gt;label&lt;/b&gt;" in page
    assert "&lt;h1&gt;head&lt;/h1&gt;" in page
    assert "&lt;i&gt;foot&lt;/i&gt;" in page
    assert page.count("&lt;script&gt;") == 2
    assert page.startswith("<p><b>")


def test_report_html_structure() -> None:
    report = Report("T")
    report.add("S", [("a", "1")])
    report.add("", [("b", "2")])
    page = report._repr_html_()
    assert page.count("<table>") == 2
    assert page.count("<caption") == 1
    assert "<td style='text-align:left'>a</td><td style='text-align:left'>1</td>" in page


# -- Message --------------------------------------------------------------------------------------


def test_message_equals_its_text() -> None:
    message = Message("Bank set to notes.")
    assert message == "Bank set to notes."
    assert message == Message("Bank set to notes.")
    assert message != "something else"
    assert message != Message("other")
    assert message != 3
    assert repr(message) == "Bank set to notes."
    assert str(message) == "Bank set to notes."


def test_message_is_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(Message("x"))


def test_retain_result_counts() -> None:
    assert RetainResult(1) == "1 memory queued."
    assert RetainResult(3) == "3 memories queued."
    assert RetainResult(0) == "0 memories queued."
    assert RetainResult(2).count == 2


def test_plural_and_utc_minute() -> None:
    assert plural(1, "cell", "cells") == "1 cell"
    assert plural(2, "cell", "cells") == "2 cells"
    assert utc_minute(AS_OF) == "2024-03-05 14:07"


def test_server_times_show_in_utc_to_the_minute() -> None:
    assert utc_minute_text("2024-03-05T16:07:59+02:00") == "2024-03-05 14:07"
    assert utc_minute_text("2024-03-05T14:07:00Z", " UTC") == "2024-03-05 14:07 UTC"
    assert utc_minute_text("2024-03-05T14:07:00") == "2024-03-05 14:07"  # no offset: UTC
    assert utc_minute_text("last tuesday", " UTC") == "last tuesday"  # shown as given
    assert utc_minute_text(None) == utc_minute_text("") == ""
    assert parse_iso("nope") is None
    assert parse_iso("2024-03-05T14:07:59Z") == AS_OF


def test_kernel_times_show_in_local_time() -> None:
    epoch = AS_OF.timestamp()
    assert local_second(epoch) == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    assert local_clock(epoch) == time.strftime("%H:%M:%S", time.localtime(epoch))
    stamp = local_timestamp(epoch)  # seconds since the epoch, or a datetime
    assert stamp == local_timestamp(AS_OF)
    assert "." not in stamp
    assert datetime.fromisoformat(stamp) == AS_OF  # carries its UTC offset
    assert local_timestamp(AS_OF + timedelta(milliseconds=250)).count(".250") == 1


def test_a_memory_timestamp_follows_the_local_offset_across_a_dst_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        change = datetime(2024, 3, 31, 1, 0, tzinfo=timezone.utc).timestamp()  # 02:00 → 03:00
        for epoch in (change - 1, change, change + 1, change + 3600, change - 7 * 86400):
            expected = datetime.fromtimestamp(epoch).astimezone().isoformat(timespec="seconds")
            assert local_timestamp(epoch) == expected
        assert local_timestamp(change - 1).endswith("01:59:59+01:00")
        assert local_timestamp(change).endswith("03:00:00+02:00")
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_read_says_how_many_auto_retained_cells_it_could_not_search_yet() -> None:
    memory = Memory(text="The pump runs at 40 Hz.")
    one = RecallResult("pump", [memory], "bank", still_indexing=1)
    assert one.headline().endswith("; the last cell is still being indexed):")
    none = RecallResult("pump", [], "bank", still_indexing=3)
    assert repr(none) == "No relevant memories found (the last 3 cells are still being indexed)."
    assert "the last 3 cells are still being indexed" in none._repr_html_()
    assert RecallResult("pump", [], "bank").headline() == "No relevant memories found."
    answer = ReflectResult("It runs at 40 Hz.", "how fast?", still_indexing=2)
    note = "(The last 2 cells are still being indexed: the answer could not use them.)"
    assert repr(answer).endswith(note)
    assert "still being indexed" in visible_text(render_markdown(answer._repr_markdown_()))
    assert str(answer) == "It runs at 40 Hz."  # the answer itself stays the answer
